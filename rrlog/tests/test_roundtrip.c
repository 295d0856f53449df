/*
 * Round trip: every event kind, with every field set to something
 * non-default, written and read back identically (both read APIs), plus
 * the header, a synthetic stream of 50k events, an empty log and a log
 * with an event larger than the chunk size.
 */
#include "testlib.h"

static const uint8_t blob[] = { 0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3 };

/* Builds event kind k (0..8) into b; storage is static. */
static const Rr__Event *make_kind(rr_event_buf *b, int k)
{
	static Rr__Position ps[4];
	static Rr__VcpuPos vp[4];
	static Rr__VcpuPos *vpp[4] = { &vp[0], &vp[1], &vp[2], &vp[3] };
	static Rr__VcpuHash vh[2];
	static Rr__VcpuHash *vhp[2] = { &vh[0], &vh[1] };
	static uint8_t big[300000];
	rr_pos p = { .branches = 123456789012ull, .rip = 0xffffffff81234567ull,
		     .rcx = 17, .detpoints = 99, .crew_seq = 4242 };

	for (int i = 0; i < 4; i++) {
		rr_pos q = p;
		q.branches += i;
		rr_vcpu_pos_init(&vp[i], &ps[i], i, &q);
	}
	for (int i = 0; i < 2; i++) {
		rr__vcpu_hash__init(&vh[i]);
		vh[i].vcpu = i;
		vh[i].pos = &ps[i];
		vh[i].regs_hash = 0x1122334455667788ull + i;
	}
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7 + (i >> 9));

	switch (k) {
	case 0: return rr_ev_io_read(b, 3, &p, RR__IO_READ__SPACE__MMIO,
				     0xfee000b0, 4, 0xffffffffffffffffull);
	case 1: return rr_ev_time_read(b, 1, &p, RR__TIME_READ__KIND__RDTSCP,
				       0x123456789abcull, 7);
	case 2: return rr_ev_interrupt(b, 2, &p, RR__INTERRUPT__KIND__NMI, 2);
	case 3: return rr_ev_dma_write(b, RR_VCPU_NONE, NULL, 0x7ffff000,
				       blob, sizeof(blob), 4, vpp);
	case 4: return rr_ev_net_packet(b, RR_VCPU_NONE, NULL,
					RR__NET_PACKET__DIRECTION__OUT, blob,
					sizeof(blob));
	case 5: return rr_ev_crew_transfer(b, 0, &p,
					   RR__CREW_TRANSFER__GRANULARITY__BYTE,
					   0x1003, 5, 1, 3, vpp);
	case 6: return rr_ev_checkpoint(b, RR_VCPU_NONE, NULL, 12, 2, vhp,
					blob, sizeof(blob), 5000000000ull);
	case 7: /* one event bigger than a chunk: gets a chunk of its own */
		return rr_ev_dma_write(b, RR_VCPU_NONE, NULL, 0x100000, big,
				       sizeof(big), 1, vpp);
	default: return rr_ev_end(b, RR_VCPU_NONE, NULL, 0, "guest panic",
				  8, 6000000000ull);
	}
}

static void check_header(const Rr__Header *g)
{
	CHECK(g->format_version == RR_FORMAT_VERSION, "version");
	CHECK(g->n_vcpus == 4 && g->ram_mb == 4096, "vcpus/ram");
	CHECK(!strcmp(g->accel, "tcg"), "accel %s", g->accel);
	CHECK(g->crew_mode == RR__HEADER__CREW_MODE__BYTE, "crew");
	CHECK(g->n_images == 2 && !strcmp(g->images[1]->role, "initrd") &&
	      g->images[1]->size == 1234 && g->images[1]->sha256.len == 32,
	      "images");
	CHECK(g->n_cmdline == 2 && !strcmp(g->cmdline[1], "-smp"), "cmdline");
	CHECK(g->start_time_ns == 42 && g->checkpoint_interval == 1000 &&
	      g->guest_module_hash.len == 8 && g->training_list_hash.len == 8 &&
	      g->patch_series_hash.len == 8, "misc");
}

static void kinds(void)
{
	const char *path = tmp_path("kinds");
	rr_error err = { 0 };
	Rr__Header h = RR__HEADER__INIT;
	Rr__Header__Image im[2] = { RR__HEADER__IMAGE__INIT,
				    RR__HEADER__IMAGE__INIT };
	Rr__Header__Image *imp[2] = { &im[0], &im[1] };
	uint8_t sha[32] = { 1, 2, 3 };
	char *cmd[] = { "qemu", "-smp" };

	im[0].role = "kernel"; im[0].path = "/boot/vmlinuz"; im[0].size = 99;
	im[1].role = "initrd"; im[1].path = "/boot/initrd"; im[1].size = 1234;
	im[1].sha256 = (ProtobufCBinaryData){ 32, sha };
	h.n_vcpus = 4; h.ram_mb = 4096; h.accel = "tcg";
	h.crew_mode = RR__HEADER__CREW_MODE__BYTE;
	h.n_images = 2; h.images = imp;
	h.qemu_version = "7.2.0";
	h.patch_series_hash = (ProtobufCBinaryData){ 8, (uint8_t *)blob };
	h.guest_module_hash = h.patch_series_hash;
	h.training_list_hash = h.patch_series_hash;
	h.n_cmdline = 2; h.cmdline = cmd;
	h.start_time_ns = 42; h.checkpoint_interval = 1000;

	rr_writer_opts o = { .chunk_raw_bytes = 64 };  /* several chunks */
	rr_writer *w = rr_writer_open_opts(path, &h, &o, &err);
	CHECK(w, "%s", err.msg);
	for (int k = 0; k < 9; k++) {
		rr_event_buf b;
		uint64_t idx;
		CHECK_OK(rr_writer_append_idx(w, make_kind(&b, k), &idx, &err),
			 err);
		CHECK(idx == (uint64_t)k, "index %" PRIu64, idx);
	}
	CHECK(rr_writer_count(w) == 9, "count");
	CHECK_OK(rr_writer_close(w, &err), err);

	for (int api = 0; api < 2; api++) {
		rr_reader *r = rr_reader_open(path, &err);
		CHECK(r, "%s", err.msg);
		check_header(rr_reader_header(r));
		CHECK(rr_reader_has_footer(r), "footer");
		for (int k = 0; k < 9; k++) {
			rr_event_buf b;
			const Rr__Event *want = make_kind(&b, k);
			if (api == 0) {
				Rr__Event *ev;
				CHECK(rr_reader_next(r, &ev, &err) == 1, "%s",
				      err.msg);
				CHECK(ev_equal(ev, want), "kind %d differs", k);
				rr_event_free(ev);
			} else {
				const Rr__Event *ev;
				CHECK(rr_reader_next_ref(r, &ev, &err) == 1,
				      "%s", err.msg);
				CHECK(ev_equal(ev, want), "kind %d differs", k);
			}
		}
		Rr__Event *ev;
		CHECK(rr_reader_next(r, &ev, &err) == 0 && !ev, "end");
		CHECK(rr_reader_truncated(r) == -1, "not truncated");
		CHECK_OK(rr_reader_verify(r, &err), err);
		rr_reader_close(r);
	}
	unlink(path);
}

static void synth_stream(uint64_t n, int from_mem)
{
	const char *path = tmp_path("synth");
	rr_error err = { 0 };
	rr_synth s;

	write_synth(path, n, 7, 0, 1);
	size_t len = 0;
	uint8_t *mem = NULL;
	rr_reader *r;
	if (from_mem) {
		mem = read_file(path, &len);
		r = rr_reader_open_mem(mem, len, &err);
	} else {
		r = rr_reader_open(path, &err);
	}
	CHECK(r, "%s", err.msg);
	CHECK(rr_reader_count(r, &err) == (int64_t)n, "count");
	rr_synth_init(&s, 7, 4);
	s.checkpoint_every = 1000;
	const Rr__Event *ev;
	uint64_t i = 0;
	int st;
	while ((st = rr_reader_next_ref(r, &ev, &err)) == 1) {
		CHECK(ev_equal(ev, rr_synth_next(&s)), "event %" PRIu64, i);
		i++;
	}
	CHECK(st == 0, "%s", err.msg);
	CHECK(i == n, "read %" PRIu64 " of %" PRIu64, i, n);
	CHECK(rr_reader_truncated(r) == -1, "complete");
	rr_reader_close(r);
	free(mem);
	unlink(path);
}

static void empty_log(void)
{
	const char *path = tmp_path("empty");
	rr_error err = { 0 };
	rr_writer *w = rr_writer_open(path, NULL, 0, &err);
	CHECK(w, "%s", err.msg);
	CHECK_OK(rr_writer_close(w, &err), err);
	rr_reader *r = rr_reader_open(path, &err);
	CHECK(r, "%s", err.msg);
	Rr__Event *ev;
	CHECK(rr_reader_next(r, &ev, &err) == 0, "no events");
	CHECK(rr_reader_has_footer(r) && rr_reader_truncated(r) == -1, "clean");
	CHECK_OK(rr_reader_seek(r, 0, &err), err);
	CHECK(rr_reader_seek(r, 1, &err) == -1, "seek past end must fail");
	CHECK_OK(rr_reader_verify(r, &err), err);
	rr_reader_close(r);
	unlink(path);
}

/* A chunk older than flush_ms is written at the next clock check. */
static void time_flush(void)
{
	const char *path = tmp_path("timeflush");
	rr_error err = { 0 };
	rr_writer_opts o = { .flush_ms = 1 };
	rr_writer *w = rr_writer_open_opts(path, NULL, &o, &err);
	CHECK(w, "%s", err.msg);
	for (int i = 0; i < 512; i++) {
		rr_event_buf b;
		CHECK_OK(rr_writer_append(w, rr_ev_interrupt(&b, 0, NULL,
				RR__INTERRUPT__KIND__HARD, i), &err), err);
		if (i % 64 == 32)
			usleep(3000);
	}
	CHECK_OK(rr_writer_close(w, &err), err);
	rr_reader *r = rr_reader_open(path, &err);
	CHECK(r, "%s", err.msg);
	const rr_chunk_info *ch;
	int64_t nc = rr_reader_chunks(r, &ch, &err);
	CHECK(nc >= 4, "time-based flush: only %" PRId64 " chunks", nc);
	rr_reader_close(r);
	unlink(path);
}

int main(void)
{
	kinds();
	time_flush();
	synth_stream(50000, 0);
	synth_stream(20000, 1);
	empty_log();
	printf("test_roundtrip: ok\n");
	return 0;
}
