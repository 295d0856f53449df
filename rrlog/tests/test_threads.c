/*
 * Thread-safe append: 4 threads append concurrently, each tagging its
 * events with (vcpu = thread, pos.branches = sequence).  Reading back must
 * give every event exactly once and each thread's events in its order.
 * Small chunks force many flushes under contention, and a fifth thread
 * calls rr_writer_flush in a loop, as a recorder's timer would.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "testlib.h"

#define THREADS 4
#define PER_THREAD 50000

static rr_writer *w;
static atomic_int done;

static void *flusher(void *arg)
{
	rr_error err = { 0 };
	(void)arg;
	while (!atomic_load(&done)) {
		CHECK_OK(rr_writer_flush(w, &err), err);
		usleep(200);
	}
	return NULL;
}

static void *worker(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;
	rr_error err = { 0 };
	static const uint8_t data[700];

	for (uint64_t i = 0; i < PER_THREAD; i++) {
		rr_event_buf b;
		rr_pos p = { .branches = i, .rip = t };
		const Rr__Event *ev;
		/* Vary sizes so records straddle chunk limits. */
		if (i % 97 == 0)
			ev = rr_ev_dma_write(&b, t, &p, i, data, i % 700, 0,
					     NULL);
		else
			ev = rr_ev_time_read(&b, t, &p,
					     RR__TIME_READ__KIND__RDTSC, i, 0);
		CHECK_OK(rr_writer_append(w, ev, &err), err);
	}
	return NULL;
}

int main(void)
{
	const char *path = tmp_path("threads");
	rr_error err = { 0 };
	pthread_t th[THREADS], fl;
	rr_writer_opts o = { .chunk_raw_bytes = 4096 };

	w = rr_writer_open_opts(path, NULL, &o, &err);
	CHECK(w, "%s", err.msg);
	pthread_create(&fl, NULL, flusher, NULL);
	for (uintptr_t t = 0; t < THREADS; t++)
		pthread_create(&th[t], NULL, worker, (void *)t);
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	atomic_store(&done, 1);
	pthread_join(fl, NULL);
	CHECK(rr_writer_count(w) == THREADS * PER_THREAD, "count");
	CHECK_OK(rr_writer_close(w, &err), err);

	rr_reader *r = rr_reader_open(path, &err);
	CHECK(r, "%s", err.msg);
	uint64_t next[THREADS] = { 0 }, total = 0;
	const Rr__Event *ev;
	int s;
	while ((s = rr_reader_next_ref(r, &ev, &err)) == 1) {
		CHECK(ev->vcpu < THREADS && ev->pos, "tag");
		CHECK(ev->pos->branches == next[ev->vcpu],
		      "thread %u: got seq %" PRIu64 ", want %" PRIu64, ev->vcpu,
		      ev->pos->branches, next[ev->vcpu]);
		next[ev->vcpu]++;
		total++;
	}
	CHECK(s == 0, "%s", err.msg);
	CHECK(total == THREADS * PER_THREAD, "total %" PRIu64, total);
	CHECK_OK(rr_reader_verify(r, &err), err);
	rr_reader_close(r);
	unlink(path);
	printf("test_threads: ok\n");
	return 0;
}
