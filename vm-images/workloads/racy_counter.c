/* racy_counter: user-level data races.  -t threads increment a shared
 * unsynchronized counter (volatile read-modify-write, no atomics) and
 * append into a shared array through an unsynchronized index.  The
 * final values depend on the interleaving: lost updates are the point.
 * -m increments with one instruction that reads and writes memory (an add
 * without lock): its load and store can be split by another CPU's store.
 * -f PAGES: then every thread writes its own word into each page of a
 * fresh mapping, in the same order, so that threads fault on the same
 * unmapped page while another fills in its page-table entry. */
#include "common.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile long counter;
static volatile long append_idx;
static volatile uint64_t *array;
static volatile uint64_t *fresh;
static long iters, appends, cap, fresh_pages;
static int one_insn;
static pthread_barrier_t start;

static void append(long tid, long seq)
{
	long k = append_idx;	/* unsynchronized: concurrent appends collide */

	array[k % cap] = ((uint64_t)(tid + 1) << 32) | (uint64_t)seq;
	append_idx = k + 1;
}

static void *racer(void *arg)
{
	long tid = (long)arg, i, done = 0;
	long stride = appends ? (iters / appends > 0 ? iters / appends : 1) : 0;

	pthread_barrier_wait(&start);
	/* appends are spread over the increment loop so threads overlap */
	for (i = 0; i < iters; i++) {
		if (one_insn)
			__asm__ volatile("addq $1, %0" : "+m"(counter));
		else
			counter++;	/* load, add, store: not atomic */
		if (stride && i % stride == 0 && done < appends)
			append(tid, done++);
	}
	while (done < appends)
		append(tid, done++);
	for (i = 0; i < fresh_pages; i++)
		fresh[i * 512 + tid % 512] = (uint64_t)tid << 32 | (uint64_t)i;
	return NULL;
}

int main(int argc, char **argv)
{
	long nthreads = 4, t;
	pthread_t *th;
	uint64_t h = HASH_INIT;
	long long expected;
	double t0, dt;
	int opt;

	iters = 200000000;
	appends = 100000;
	wl_init("racy_counter", "[-t THREADS (4)] [-n INCREMENTS_PER_THREAD (200M)] "
		"[-a APPENDS_PER_THREAD (100000)] [-m] [-f FRESH_PAGES (0)]");
	while ((opt = getopt(argc, argv, "t:n:a:mf:")) != -1) {
		switch (opt) {
		case 't': nthreads = arg_long(optarg, opt, 1, 4096); break;
		case 'n': iters = arg_long(optarg, opt, 0, LONG_MAX / 4096); break;
		case 'a': appends = arg_long(optarg, opt, 0, 1L << 24); break;
		case 'm': one_insn = 1; break;
		case 'f': fresh_pages = arg_long(optarg, opt, 0, 1L << 22); break;
		default: wl_usage();
		}
	}
	if (optind != argc)
		wl_usage();

	cap = nthreads * appends + 1;
	array = calloc(cap, sizeof(*array));
	th = calloc(nthreads, sizeof(*th));
	if (!array || !th)
		die("out of memory");
	if (fresh_pages) {
		fresh = mmap(NULL, fresh_pages * 4096, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (fresh == MAP_FAILED)
			die("mmap of %ld fresh pages:", fresh_pages);
	}
	if (pthread_barrier_init(&start, NULL, nthreads + 1))
		die("pthread_barrier_init failed");
	progress("%ld threads x %ld unsynchronized increments, %ld racy appends each",
		 nthreads, iters, appends);
	for (t = 0; t < nthreads; t++)
		if ((errno = pthread_create(&th[t], NULL, racer, (void *)t)))
			die("pthread_create:");
	t0 = now_sec();
	pthread_barrier_wait(&start);
	for (t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	dt = now_sec() - t0;

	for (t = 0; t < cap; t++)
		h = hash_u64(h, array[t]);
	for (t = 0; t < fresh_pages * 512; t++)
		h = hash_u64(h, fresh[t]);
	expected = (long long)nthreads * iters;
	progress("%.3f s; counter %ld of %lld (%lld lost updates), %ld of %lld appends kept",
		 dt, counter, expected, expected - counter, append_idx,
		 (long long)nthreads * appends);
	result("counter=%ld expected=%lld lost=%lld appended=%ld expected_appends=%lld array_hash=%016llx",
	       counter, expected, expected - counter, append_idx,
	       (long long)nthreads * appends, (unsigned long long)h);
	return 0;
}
