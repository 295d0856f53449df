/*
 * rrlog throughput benchmark (one thread, one core).
 *
 *   bench_rrlog [--events N] [--levels 1,3,5] [--reps R] [--dir D]
 *               [--dma PERMILLE] [--no-owned]
 *   bench_rrlog --big GB      memory check: write GB of logical (raw)
 *                             events, then read them back in a child
 *                             process and report its peak RSS
 *
 * Events come from rrlog_synth (the realistic mix: ~38% IoRead, 30%
 * TimeRead, 13% Interrupt, 17% CrewTransfer, 1% DMA, 0.5% net).  A pool
 * of pre-generated events is cycled so generation is not measured.
 * Levels are interleaved across repetitions so drift (page cache, CPU
 * frequency, neighbours) hits all of them alike; medians are reported.
 * Write = pack + append + compress + write(2) to the page cache; read =
 * pread + CRC + decompress + decode, with rr_reader_next_ref (arena) and
 * rr_reader_next (malloc per event).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"
#include "codec.h"
#include "format.h"
#include "rrlog.h"
#include "rrlog_synth.h"

/*
 * 65536 events: more than a chunk holds, so zstd never sees the pool
 * repeat inside one chunk (a small pool would flatter the ratio and speed).
 * They are unpacked contiguously (pool_alloc) so cycling through them is a
 * sequential walk, not pointer chasing across the heap.
 */
#define POOL 65536

static Rr__Event *pool[POOL];

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, const rr_error *err)
{
	fprintf(stderr, "bench: %s: %s\n", what, err ? err->msg : "");
	exit(1);
}

static uint32_t dma_permille = 10;

static uint8_t *pool_mem;
static size_t pool_used, pool_cap = 256u << 20;

static void *pool_alloc(void *d, size_t n)
{
	(void)d;
	n = (n + 15) & ~(size_t)15;
	if (pool_used + n > pool_cap)
		return NULL;
	pool_used += n;
	return pool_mem + pool_used - n;
}

static void pool_free(void *d, void *p)
{
	(void)d;
	(void)p;
}

static void make_pool(void)
{
	rr_synth s;
	ProtobufCAllocator a = { pool_alloc, pool_free, NULL };
	pool_mem = malloc(pool_cap);
	rr_synth_init(&s, 42, 4);
	s.dma_permille = dma_permille;
	for (int i = 0; i < POOL; i++) {
		const Rr__Event *e = rr_synth_next(&s);
		size_t len = rr__event__get_packed_size(e);
		uint8_t *buf = malloc(len + 1);
		rr__event__pack(e, buf);
		pool[i] = rr__event__unpack(&a, len, buf);
		if (!pool[i])
			die("pool", NULL);
		free(buf);
	}
}

static double write_log(const char *path, uint64_t n, int level,
			uint64_t *fsize)
{
	rr_error err;
	Rr__Header h;
	struct stat st;

	rr_synth_header(&h, 4);
	double t0 = now();
	rr_writer *w = rr_writer_open(path, &h, level, &err);
	if (!w)
		die("open", &err);
	for (uint64_t i = 0; i < n; i++)
		if (rr_writer_append(w, pool[i & (POOL - 1)], &err))
			die("append", &err);
	if (rr_writer_close(w, &err))
		die("close", &err);
	double t = now() - t0;
	stat(path, &st);
	*fsize = st.st_size;
	return t;
}

static double read_log(const char *path, uint64_t n, int owned,
		       uint64_t *raw)
{
	rr_error err;
	uint64_t got = 0;
	int s;
	double t0 = now();
	rr_reader *r = rr_reader_open(path, &err);
	if (!r)
		die("open", &err);
	if (owned) {
		Rr__Event *ev;
		while ((s = rr_reader_next(r, &ev, &err)) == 1) {
			got += ev->vcpu != 12345;
			rr_event_free(ev);
		}
	} else {
		const Rr__Event *ev;
		while ((s = rr_reader_next_ref(r, &ev, &err)) == 1)
			got += ev->vcpu != 12345;
	}
	double t = now() - t0;
	if (s < 0)
		die("read", &err);
	if (got != n) {
		fprintf(stderr, "bench: read %" PRIu64 " of %" PRIu64 "\n", got, n);
		exit(1);
	}
	const rr_chunk_info *ch;
	int64_t nc = rr_reader_chunks(r, &ch, &err);
	*raw = 0;
	for (int64_t i = 0; i < nc; i++)
		*raw += ch[i].raw_len;
	rr_reader_close(r);
	return t;
}

/*
 * Where the time goes: per-event cost of the record codecs alone (no
 * zstd, no I/O), fast codec vs protobuf-c, over the same pool.
 */
static void codec_costs(void)
{
	enum { ROUNDS = 8 };
	/* Encode into a 1 MiB ring, like the writer's reused chunk buffer;
	 * everything pre-faulted so page faults are not measured. */
	size_t cap = 64 << 20, ring = 1 << 20, off = 0, n = 0;
	uint8_t *buf = malloc(cap);
	memset(buf, 0, cap);
	struct rr_arena a;
	double t0, t_enc, t_pack, t_dec, t_unpack;

	t0 = now();
	for (int r = 0; r < ROUNDS; r++)
		for (int i = 0; i < POOL; i++, n++) {
			if (off + 8192 > ring)
				off = 0;
			off += rr_event_encode(pool[i], buf + off);
		}
	t_enc = (now() - t0) / n;
	t0 = now();
	off = 0;
	for (int r = 0; r < ROUNDS; r++)
		for (int i = 0; i < POOL; i++) {
			if (off + 8192 > ring)
				off = 0;
			off += rr__event__pack(pool[i], buf + off);
		}
	t_pack = (now() - t0) / n;

	/* One buffer of varint-delimited records, decoded both ways. */
	off = 0;
	for (int i = 0; i < POOL; i++) {
		size_t l = rr__event__get_packed_size(pool[i]);
		off += rr_varint_encode(buf + off, l);
		off += rr__event__pack(pool[i], buf + off);
	}
	rr_arena_init(&a);
	Rr__Event *ev;
	t0 = now();
	for (int r = 0; r < ROUNDS; r++)
		for (size_t p = 0; p < off;) {
			uint64_t l = 0;
			p += rr_varint_decode(buf + p, buf + off, &l);
			rr_arena_reset(&a);
			if (rr_event_decode_fast(buf + p, l, &a.pbc, &ev) != RR_DEC_OK)
				die("fast decode refused", NULL);
			p += l;
		}
	t_dec = (now() - t0) / n;
	t0 = now();
	for (int r = 0; r < ROUNDS; r++)
		for (size_t p = 0; p < off;) {
			uint64_t l = 0;
			p += rr_varint_decode(buf + p, buf + off, &l);
			rr_arena_reset(&a);
			if (!rr__event__unpack(&a.pbc, l, buf + p))
				die("unpack", NULL);
			p += l;
		}
	t_unpack = (now() - t0) / n;
	rr_arena_destroy(&a);
	free(buf);
	printf("codec ns/event: encode %.0f (protobuf-c pack %.0f), decode %.0f "
	       "(protobuf-c unpack, same arena, %.0f)\n", t_enc * 1e9,
	       t_pack * 1e9, t_dec * 1e9, t_unpack * 1e9);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static long rss_kb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static int big(const char *dir, double gb)
{
	char path[512];
	rr_error err;
	Rr__Header h;
	rr_synth s;

	snprintf(path, sizeof(path), "%s/bench-big.rr", dir);
	rr_synth_header(&h, 4);
	rr_synth_init(&s, 1, 4);
	rr_writer *w = rr_writer_open(path, &h, 0, &err);
	if (!w)
		die("open", &err);
	uint64_t limit = (uint64_t)(gb * 1e9), raw = 0, n = 0;
	double t0 = now();
	while (raw < limit) {
		const Rr__Event *e = rr_synth_next(&s);
		raw += rr__event__get_packed_size(e) + 1;
		n++;
		if (rr_writer_append(w, e, &err))
			die("append", &err);
	}
	if (rr_writer_close(w, &err))
		die("close", &err);
	struct stat st;
	stat(path, &st);
	printf("big: wrote %" PRIu64 " events, %.2f GB raw, %.2f GB file in "
	       "%.1f s (writer peak RSS %ld MB)\n", n, raw / 1e9,
	       st.st_size / 1e9, now() - t0, rss_kb() / 1024);
	fflush(stdout);

	pid_t pid = fork();
	if (pid == 0) {
		/* Fresh process: its peak RSS is the reader's alone. */
		rr_reader *r = rr_reader_open(path, &err);
		const Rr__Event *ev;
		uint64_t got = 0;
		long rss_early = 0;
		double t1 = now();
		int st2;
		if (!r)
			die("open", &err);
		while ((st2 = rr_reader_next_ref(r, &ev, &err)) == 1)
			if (++got == 1000000)
				rss_early = rss_kb();
		if (st2 < 0)
			die("read", &err);
		printf("big: read %" PRIu64 " events in %.1f s; reader peak RSS "
		       "%ld MB after 1M events, %ld MB at the end\n", got,
		       now() - t1, rss_early / 1024, rss_kb() / 1024);
		rr_reader_close(r);
		fflush(stdout);   /* _exit skips stdio flushing */
		_exit(got == n ? 0 : 1);
	}
	int status;
	waitpid(pid, &status, 0);
	unlink(path);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
	uint64_t n = 5000000;
	int levels[8] = { 1, 3, 5 }, nl = 3, reps = 3;
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	double gb = 0;
	int owned = 1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--events") && i + 1 < argc) {
			n = strtoull(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--dir") && i + 1 < argc) {
			dir = argv[++i];
		} else if (!strcmp(argv[i], "--dma") && i + 1 < argc) {
			dma_permille = (uint32_t)atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--no-owned")) {
			owned = 0;
		} else if (!strcmp(argv[i], "--big") && i + 1 < argc) {
			gb = atof(argv[++i]);
		} else if (!strcmp(argv[i], "--levels") && i + 1 < argc) {
			char *p = argv[++i];
			for (nl = 0; nl < 8 && *p; nl++) {
				levels[nl] = (int)strtol(p, &p, 10);
				if (*p == ',')
					p++;
			}
		} else {
			fprintf(stderr, "usage: %s [--events N] [--levels 1,3,5] "
				"[--reps R] [--dir D] [--dma PERMILLE] "
				"[--no-owned] | --big GB\n", argv[0]);
			return 2;
		}
	}
	if (gb > 0)
		return big(dir, gb);
	if (reps < 1 || reps > 50)
		reps = 3;

	make_pool();
	codec_costs();
	char path[512];
	snprintf(path, sizeof(path), "%s/bench-%d.rr", dir, (int)getpid());

	double tw[8][50], tr[8][50], to[8][50];
	uint64_t fsize[8] = { 0 }, raw[8] = { 0 };
	for (int r = 0; r < reps; r++) {
		for (int l = 0; l < nl; l++) {
			tw[l][r] = write_log(path, n, levels[l], &fsize[l]);
			tr[l][r] = read_log(path, n, 0, &raw[l]);
			to[l][r] = owned ? read_log(path, n, 1, &raw[l]) : 1e9;
			fprintf(stderr, ".");
		}
	}
	fprintf(stderr, "\n");
	unlink(path);

	printf("%" PRIu64 " events/run, %d reps, median; raw %.1f B/event\n",
	       n, reps, (double)raw[0] / n);
	printf("level | write Mev/s | write MB/s raw | read_ref Mev/s | "
	       "read_ref MB/s raw | read_owned Mev/s | file MB | ratio\n");
	for (int l = 0; l < nl; l++) {
		double w = median(tw[l], reps), rd = median(tr[l], reps);
		double o = median(to[l], reps);
		printf("%5d | %11.2f | %14.0f | %14.2f | %17.0f | %16.2f | "
		       "%7.1f | %5.2f\n", levels[l], n / w / 1e6,
		       raw[l] / w / 1e6, n / rd / 1e6, raw[l] / rd / 1e6,
		       n / o / 1e6, fsize[l] / 1e6, (double)raw[l] / fsize[l]);
	}
	return 0;
}
