/*
 * Corruption: flip bytes in every structure of a closed log and check the
 * reader reports an error (never a crash, never silently different data)
 * whose offset points at the damaged structure.
 */
#include "testlib.h"

#define N 5000

static uint8_t *full;
static size_t full_len;

/*
 * Read everything from buf.  Returns 0 if it read cleanly and identically,
 * -1 with err if the reader reported an error.  Any silent difference
 * fails the test.
 */
static int read_all(const uint8_t *buf, size_t len, rr_error *err)
{
	rr_reader *r = rr_reader_open_mem(buf, len, err);
	if (!r)
		return -1;
	rr_synth s;
	rr_synth_init(&s, 3, 4);
	s.checkpoint_every = 1000;
	const Rr__Event *ev;
	uint64_t n = 0;
	int st;
	while ((st = rr_reader_next_ref(r, &ev, err)) == 1) {
		CHECK(ev_equal(ev, rr_synth_next(&s)), "silent change at %"
		      PRIu64, n);
		n++;
	}
	int64_t tr = rr_reader_truncated(r);
	rr_reader_close(r);
	if (st < 0)
		return -1;
	CHECK(n == N && tr == -1, "silently lost events: %" PRIu64, n);
	return 0;
}

/* Flip byte `off`; the error must name an offset in [lo, hi]. */
static void flip(size_t off, uint64_t lo, uint64_t hi, const char *what)
{
	rr_error err = { 0 };
	uint8_t *b = malloc(full_len);
	memcpy(b, full, full_len);
	b[off] ^= 0x5a;
	int ret = read_all(b, full_len, &err);
	CHECK(ret == -1, "%s: flip at %zu not detected", what, off);
	CHECK(err.offset >= lo && err.offset <= hi,
	      "%s: flip at %zu reported at %" PRIu64 " (%s), want [%" PRIu64
	      ", %" PRIu64 "]", what, off, err.offset, err.msg, lo, hi);
	char want[48];
	snprintf(want, sizeof(want), "at byte %" PRIu64, err.offset);
	CHECK(strstr(err.msg, want), "message names offset: %s", err.msg);
	free(b);
}

int main(void)
{
	const char *path = tmp_path("corrupt");
	rr_error err = { 0 };

	write_synth(path, N, 3, 8192, 1);
	full = read_file(path, &full_len);
	CHECK(read_all(full, full_len, &err) == 0, "%s", err.msg);

	rr_reader *r = rr_reader_open_mem(full, full_len, &err);
	const rr_chunk_info *ch;
	int64_t nc = rr_reader_chunks(r, &ch, &err);
	rr_chunk_info *c = malloc(nc * sizeof(*c));
	memcpy(c, ch, nc * sizeof(*c));
	uint64_t data_off = rr_reader_data_offset(r);
	rr_reader_close(r);
	uint64_t index_off = c[nc - 1].offset + 40 + c[nc - 1].comp_len;

	/* File header fields and the header record. */
	for (size_t off = 0; off < data_off; off++)
		if (off < 20 || off >= 24)  /* 20..23 reserved */
			flip(off, 0, data_off, "file header");
	/* Every byte of a few chunks (header + payload), sampled others. */
	for (int64_t i = 0; i < nc; i++) {
		uint64_t end = c[i].offset + 40 + c[i].comp_len;
		size_t step = i < 3 ? 1 : 97;
		for (uint64_t off = c[i].offset; off < end; off += step) {
			if (off >= c[i].offset + 36 && off < c[i].offset + 40)
				continue;  /* reserved word */
			flip(off, c[i].offset, end, "chunk");
		}
	}
	/* Index chunk and footer. */
	for (uint64_t off = index_off; off < full_len; off++) {
		if ((off >= index_off + 36 && off < index_off + 40))
			continue;
		flip(off, index_off, full_len, "index/footer");
	}

	/* Version from the future is refused by name. */
	uint8_t *b = malloc(full_len);
	memcpy(b, full, full_len);
	b[8] = 2;
	CHECK(!rr_reader_open_mem(b, full_len, &err) &&
	      strstr(err.msg, "version") && err.offset == 8, "%s", err.msg);
	free(b);

	unlink(path);
	free(c);
	free(full);
	printf("test_corrupt: ok\n");
	return 0;
}
