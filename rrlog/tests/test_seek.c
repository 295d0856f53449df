/*
 * Seek: to every chunk boundary, random indices, the end, past the end,
 * backwards, on a closed log (index) and on a crashed one (header scan).
 */
#include "testlib.h"

#define N 30000

static Rr__Event *expect[N];  /* packed-equal copies of what was written */

static void make_expected(void)
{
	rr_synth s;
	rr_synth_init(&s, 11, 4);
	s.checkpoint_every = 1000;
	for (int i = 0; i < N; i++) {
		const Rr__Event *e = rr_synth_next(&s);
		size_t len = rr__event__get_packed_size(e);
		uint8_t *buf = malloc(len + 1);
		rr__event__pack(e, buf);
		expect[i] = rr__event__unpack(NULL, len, buf);
		free(buf);
	}
}

static void check_at(rr_reader *r, uint64_t idx)
{
	rr_error err = { 0 };
	const Rr__Event *ev;
	CHECK_OK(rr_reader_seek(r, idx, &err), err);
	CHECK(rr_reader_index(r) == idx, "index after seek");
	if (idx == N) {
		CHECK(rr_reader_next_ref(r, &ev, &err) == 0, "at end");
		return;
	}
	CHECK(rr_reader_next_ref(r, &ev, &err) == 1, "%s", err.msg);
	CHECK(ev_equal(ev, expect[idx]), "event %" PRIu64 " after seek", idx);
	if (idx + 1 < N) {
		CHECK(rr_reader_next_ref(r, &ev, &err) == 1, "%s", err.msg);
		CHECK(ev_equal(ev, expect[idx + 1]), "event after %" PRIu64, idx);
	}
}

static void run(int close_it)
{
	const char *path = tmp_path("seek");
	rr_error err = { 0 };
	const rr_chunk_info *ch;

	write_synth(path, N, 11, 8192, close_it);
	rr_reader *r = rr_reader_open(path, &err);
	CHECK(r, "%s", err.msg);
	CHECK(rr_reader_has_footer(r) == close_it, "footer");

	/* Random seeks before the chunk list is known (lazy scan). */
	check_at(r, N / 2);
	check_at(r, 3);

	int64_t nc = rr_reader_chunks(r, &ch, &err);
	CHECK(nc > 10, "want many chunks, got %" PRId64, nc);
	for (int64_t c = nc - 1; c >= 0; c--) {
		check_at(r, ch[c].first_index);
		if (ch[c].first_index)
			check_at(r, ch[c].first_index - 1);
	}
	uint64_t x = 12345;
	for (int i = 0; i < 500; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		check_at(r, (x >> 33) % N);
	}
	check_at(r, N);
	CHECK(rr_reader_seek(r, N + 1, &err) == -1, "past end");
	CHECK(strstr(err.msg, "past the end"), "msg: %s", err.msg);
	check_at(r, 0);
	CHECK(rr_reader_count(r, &err) == N, "count");
	if (!close_it)
		CHECK(rr_reader_truncated(r) > 0, "crashed log reports truncation");
	rr_reader_close(r);
	unlink(path);
}

int main(void)
{
	make_expected();
	run(1);
	run(0);
	for (int i = 0; i < N; i++)
		rr_event_free(expect[i]);
	printf("test_seek: ok\n");
	return 0;
}
