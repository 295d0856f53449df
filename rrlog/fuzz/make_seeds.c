/*
 * Writes the seed inputs for fuzz_reader into a directory: small synthetic
 * logs (closed, crashed, tiny chunks, every event kind) in "file" mode and
 * a few raw chunk payloads in "chunk" mode.  See fuzz_reader.c for the
 * one-byte mode prefix.  Usage: make_seeds DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format.h"
#include "rrlog.h"
#include "rrlog_synth.h"

static void emit(const char *dir, const char *name, uint8_t mode,
		 const uint8_t *p, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/seed-%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f) {
		perror(path);
		exit(1);
	}
	fputc(mode, f);
	fwrite(p, 1, len, f);
	fclose(f);
}

static void log_seed(const char *dir, const char *name, int n, int chunk,
		     int close_it, int vcpus)
{
	char tmp[] = "/tmp/rrseedXXXXXX";
	int fd = mkstemp(tmp);
	rr_error err;
	Rr__Header h;
	rr_synth s;
	rr_writer_opts o = { .chunk_raw_bytes = chunk };

	close(fd);
	rr_synth_header(&h, vcpus);
	rr_synth_init(&s, n, vcpus);
	s.checkpoint_every = 7;
	s.dma_permille = 30;
	rr_writer *w = rr_writer_open_opts(tmp, &h, &o, &err);
	if (!w) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	for (int i = 0; i < n; i++)
		rr_writer_append(w, rr_synth_next(&s), &err);
	if (close_it) {
		rr_writer_append(w, rr_synth_end(&s, 1000), &err);
		rr_writer_close(w, &err);
	} else {
		rr_writer_flush(w, &err);
	}
	FILE *f = fopen(tmp, "rb");
	uint8_t buf[1 << 16];
	size_t len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	unlink(tmp);
	emit(dir, name, 0, buf, len);
}

/* Raw chunk payload: varint-delimited records of the synthetic stream. */
static void chunk_seed(const char *dir, const char *name, int n, int vcpus)
{
	static uint8_t buf[1 << 16];
	size_t len = 0;
	rr_synth s;

	rr_synth_init(&s, 100 + n, vcpus);
	s.checkpoint_every = 5;
	s.dma_permille = 0;
	for (int i = 0; i < n; i++) {
		const Rr__Event *e = rr_synth_next(&s);
		size_t l = rr__event__get_packed_size(e);
		if (len + l + 10 > sizeof(buf))
			break;
		len += rr_varint_encode(buf + len, l);
		rr__event__pack(e, buf + len);
		len += l;
	}
	emit(dir, name, 1, buf, len);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	log_seed(argv[1], "closed-20", 20, 0, 1, 4);
	log_seed(argv[1], "closed-tiny-chunks", 40, 100, 1, 2);
	log_seed(argv[1], "crashed", 40, 120, 0, 4);
	log_seed(argv[1], "one-vcpu", 5, 0, 1, 1);
	log_seed(argv[1], "empty", 0, 0, 1, 1);
	chunk_seed(argv[1], "chunk-10", 10, 4);
	chunk_seed(argv[1], "chunk-60", 60, 8);
	return 0;
}
