/*
 * Crash safety: take a real log, cut it at every chunk boundary, at random
 * offsets inside chunks, inside the index and footer, and check that
 * exactly the complete chunks read back, followed by a clean end with the
 * truncation warning at the right offset.
 */
#include "testlib.h"

#define N 20000

static uint8_t *full;
static size_t full_len;
static const char *cut_path;

/* Events expected when cut at `len`, and where the warning must point. */
static void check_cut(size_t len, uint64_t want_events, int64_t want_trunc,
		      int from_mem)
{
	rr_error err = { 0 };
	rr_reader *r;

	if (from_mem) {
		r = rr_reader_open_mem(full, len, &err);
	} else {
		write_file(cut_path, full, len);
		r = rr_reader_open(cut_path, &err);
	}
	CHECK(r, "cut at %zu: %s", len, err.msg);

	rr_synth s;
	rr_synth_init(&s, 5, 4);
	s.checkpoint_every = 1000;
	const Rr__Event *ev;
	uint64_t n = 0;
	int st;
	while ((st = rr_reader_next_ref(r, &ev, &err)) == 1) {
		CHECK(ev_equal(ev, rr_synth_next(&s)), "cut %zu: event %" PRIu64,
		      len, n);
		n++;
	}
	CHECK(st == 0, "cut at %zu: read error %s", len, err.msg);
	CHECK(n == want_events, "cut at %zu: %" PRIu64 " events, want %" PRIu64,
	      len, n, want_events);
	CHECK(rr_reader_truncated(r) == want_trunc, "cut at %zu: truncated "
	      "%" PRId64 ", want %" PRId64, len, rr_reader_truncated(r),
	      want_trunc);
	if (want_trunc >= 0) {
		char want[64];
		snprintf(want, sizeof(want), "truncated at byte %" PRId64,
			 want_trunc);
		CHECK(rr_reader_warning(r) && strstr(rr_reader_warning(r), want),
		      "warning: %s", rr_reader_warning(r));
	}
	/* verify agrees: a truncated log is intact up to the cut. */
	CHECK_OK(rr_reader_verify(r, &err), err);
	rr_reader_close(r);
}

int main(void)
{
	const char *path = tmp_path("trunc");
	rr_error err = { 0 };
	char cut_buf[300];

	snprintf(cut_buf, sizeof(cut_buf), "%.200s.cut", path);
	cut_path = cut_buf;
	write_synth(path, N, 5, 16384, 1);
	full = read_file(path, &full_len);

	rr_reader *r = rr_reader_open(path, &err);
	CHECK(r, "%s", err.msg);
	const rr_chunk_info *ch;
	int64_t nc = rr_reader_chunks(r, &ch, &err);
	CHECK(nc > 20, "chunks %" PRId64, nc);
	rr_chunk_info *chunks = malloc(nc * sizeof(*chunks));
	memcpy(chunks, ch, nc * sizeof(*chunks));
	uint64_t data_off = rr_reader_data_offset(r);
	rr_reader_close(r);
	uint64_t index_off = chunks[nc - 1].offset + 40 + chunks[nc - 1].comp_len;

	/* Complete file: everything, no warning. */
	check_cut(full_len, N, -1, 0);
	/* Exactly at every chunk boundary (incl. just the header). */
	check_cut(data_off, 0, data_off, 1);
	for (int64_t c = 0; c < nc; c++) {
		uint64_t end = chunks[c].offset + 40 + chunks[c].comp_len;
		check_cut(end, chunks[c].first_index + chunks[c].count, end,
			  c % 8 == 0 ? 0 : 1);
	}
	/* Random cuts inside chunks, header and payload alike. */
	uint64_t x = 99;
	for (int i = 0; i < 300; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		int64_t c = (x >> 33) % nc;
		uint64_t span = 40 + chunks[c].comp_len;
		uint64_t cut = chunks[c].offset + 1 + (x >> 13) % (span - 1);
		check_cut(cut, chunks[c].first_index, chunks[c].offset,
			  i % 10 == 0 ? 0 : 1);
	}
	/* Inside the index chunk and the footer: all events survive. */
	for (uint64_t cut = index_off + 1; cut < full_len; cut += 7) {
		int64_t want = cut - index_off >= 40 + (uint64_t)nc * 24 ?
			       (int64_t)index_off : (int64_t)index_off;
		check_cut(cut, N, want, 1);
	}
	/* A crash can also leave a zero-filled tail. */
	{
		uint8_t *z = calloc(1, chunks[3].offset + 5000);
		memcpy(z, full, chunks[3].offset);
		rr_reader *zr = rr_reader_open_mem(z, chunks[3].offset + 5000,
						   &err);
		CHECK(zr, "%s", err.msg);
		CHECK(rr_reader_count(zr, &err) ==
		      (int64_t)chunks[3].first_index, "zero tail count");
		CHECK(rr_reader_truncated(zr) == (int64_t)chunks[3].offset,
		      "zero tail offset");
		rr_reader_close(zr);
		free(z);
	}
	/* A crashed tail that happens to start like a footer: truncation. */
	{
		size_t at = chunks[5].offset + 40 + 10;
		uint8_t *z = malloc(at + 32);
		memcpy(z, full, at);
		memcpy(z + at, "RRFT", 4);     /* footer magic, CRC wrong */
		memset(z + at + 4, 0x77, 28);
		rr_reader *zr = rr_reader_open_mem(z, at + 32, &err);
		CHECK(zr, "%s", err.msg);
		CHECK(rr_reader_count(zr, &err) ==
		      (int64_t)chunks[5].first_index, "fake footer count");
		CHECK(rr_reader_truncated(zr) == (int64_t)chunks[5].offset,
		      "fake footer offset");
		rr_reader_close(zr);
		free(z);
	}
	/* Cut inside the file header: open fails, naming the problem. */
	CHECK(!rr_reader_open_mem(full, 10, &err), "tiny file");
	CHECK(!rr_reader_open_mem(full, data_off - 1, &err) &&
	      strstr(err.msg, "header"), "%s", err.msg);

	unlink(path);
	unlink(cut_path);
	free(chunks);
	free(full);
	printf("test_truncate: ok\n");
	return 0;
}
