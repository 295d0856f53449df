/* Tiny test harness shared by the rrlog unit tests (header-only). */
#ifndef RRLOG_TESTLIB_H
#define RRLOG_TESTLIB_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rrlog.h"
#include "rrlog_synth.h"

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__,	\
			__LINE__, #cond);				\
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
		exit(1);						\
	}								\
} while (0)

#define CHECK_OK(call, err) CHECK((call) == 0, "%s", (err).msg)

/* A fresh temp path; removed by the caller. */
static inline char *tmp_path(const char *tag)
{
	static char buf[256];
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(buf, sizeof(buf), "%s/rrlog-%s-%d.rr", dir, tag, (int)getpid());
	return buf;
}

/* Two events are equal iff their packed encodings are (deterministic). */
static inline int ev_equal(const Rr__Event *a, const Rr__Event *b)
{
	size_t la = rr__event__get_packed_size(a);
	size_t lb = rr__event__get_packed_size(b);
	if (la != lb)
		return 0;
	uint8_t *pa = malloc(la + 1), *pb = malloc(lb + 1);
	rr__event__pack(a, pa);
	rr__event__pack(b, pb);
	int eq = memcmp(pa, pb, la) == 0;
	free(pa);
	free(pb);
	return eq;
}

/*
 * Write n synthetic events (seed) plus nothing else; chunk size small so
 * tests get many chunks.  close_it = 0 leaves the log as a crash would
 * (all chunks flushed, no index/footer).
 */
static inline uint64_t write_synth(const char *path, uint64_t n, uint64_t seed,
				   uint32_t chunk_bytes, int close_it)
{
	rr_error err = { 0 };
	Rr__Header h;
	rr_synth s;
	rr_writer_opts o = { .chunk_raw_bytes = chunk_bytes };

	rr_synth_header(&h, 4);
	rr_synth_init(&s, seed, 4);
	s.checkpoint_every = 1000;
	rr_writer *w = rr_writer_open_opts(path, &h, &o, &err);
	CHECK(w, "%s", err.msg);
	for (uint64_t i = 0; i < n; i++)
		CHECK_OK(rr_writer_append(w, rr_synth_next(&s), &err), err);
	if (close_it) {
		CHECK_OK(rr_writer_close(w, &err), err);
	} else {
		CHECK_OK(rr_writer_flush(w, &err), err);
		/* Leak the writer on purpose: simulates the process dying. */
	}
	return n;
}

static inline uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	CHECK(f, "open %s", path);
	fseek(f, 0, SEEK_END);
	*len = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *p = malloc(*len + 1);
	CHECK(fread(p, 1, *len, f) == *len, "read %s", path);
	fclose(f);
	return p;
}

static inline void write_file(const char *path, const void *p, size_t len)
{
	FILE *f = fopen(path, "wb");
	CHECK(f, "create %s", path);
	CHECK(fwrite(p, 1, len, f) == len, "write %s", path);
	fclose(f);
}

#endif
