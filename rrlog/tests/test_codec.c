/*
 * The fast codec (src/codec.c) must be wire-identical to protobuf-c:
 * encode == rr__event__pack byte for byte, and fast decode followed by a
 * protobuf-c repack gives the input back.  Non-canonical records must take
 * the fallback path rather than decode differently.
 */
#include <protobuf-c/protobuf-c.h>

#include "codec.h"
#include "testlib.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A value of random bit width, so every varint length shows up. */
static uint64_t rnd_width(void)
{
	int w = rnd() % 65;
	return w == 0 ? 0 : w == 64 ? rnd() : rnd() & ((1ull << w) - 1);
}

static ProtobufCAllocator sys_alloc;  /* malloc; leaks in the test: fine */

static void *sys_a(void *d, size_t n) { (void)d; return malloc(n ? n : 1); }
static void sys_f(void *d, void *p) { (void)d; (void)p; }

static void check_event(const Rr__Event *ev, const char *what)
{
	size_t ref_len = rr__event__get_packed_size(ev);
	uint8_t *ref = malloc(ref_len + 1), *mine, *again;
	rr__event__pack(ev, ref);

	mine = malloc(rr_event_encode_bound(ev) + 1);
	size_t len = rr_event_encode(ev, mine);
	if (len == 0) {
		/* Encoder declined; only allowed for empty events. */
		CHECK(ref_len == 0, "%s: encoder declined a %zu-byte event",
		      what, ref_len);
		free(ref);
		free(mine);
		return;
	}
	CHECK(len == ref_len, "%s: size %zu, protobuf-c %zu", what, len,
	      ref_len);
	CHECK(!memcmp(mine, ref, len), "%s: bytes differ from protobuf-c", what);

	Rr__Event *dec = NULL;
	CHECK(rr_event_decode_fast(mine, len, &sys_alloc, &dec) == RR_DEC_OK,
	      "%s: fast decode refused canonical bytes", what);
	CHECK(rr__event__get_packed_size(dec) == len, "%s: repack size", what);
	again = malloc(len + 1);
	rr__event__pack(dec, again);
	CHECK(!memcmp(again, ref, len), "%s: decode+repack differs", what);
	free(ref);
	free(mine);
	free(again);
}

static void synth_streams(void)
{
	for (uint32_t vcpus = 1; vcpus <= 64; vcpus *= 4) {
		rr_synth s;
		rr_synth_init(&s, vcpus, vcpus);
		s.checkpoint_every = 997;
		s.dma_permille = 50;
		for (int i = 0; i < 50000; i++)
			check_event(rr_synth_next(&s), "synth");
		check_event(rr_synth_end(&s, 5), "synth end");
	}
}

/* Every body kind with random-width values, zeros, NULLs and extremes. */
static void random_events(void)
{
	Rr__Position ps[8];
	Rr__VcpuPos vp[8], *vpp[8];
	Rr__VcpuHash vh[8], *vhp[8];
	uint8_t data[300];

	for (int i = 0; i < 8; i++)
		vpp[i] = &vp[i], vhp[i] = &vh[i];
	for (int iter = 0; iter < 200000; iter++) {
		rr_event_buf b;
		rr_pos p = { rnd_width(), rnd_width(), rnd_width(), rnd_width(),
			     rnd_width() };
		const rr_pos *pp = rnd() % 5 ? &p : NULL;
		uint32_t vcpu = rnd() % 4 ? (uint32_t)rnd_width() : RR_VCPU_NONE;
		size_t n = rnd() % 8, dlen = rnd() % 4 ? rnd() % 300 : 0;
		for (size_t i = 0; i < n; i++) {
			rr_pos q = { rnd_width(), rnd_width(), 0, rnd_width(), 0 };
			rr_vcpu_pos_init(&vp[i], &ps[i], (uint32_t)rnd_width(),
					 rnd() % 4 ? &q : NULL);
			rr__vcpu_hash__init(&vh[i]);
			vh[i].vcpu = (uint32_t)rnd_width();
			vh[i].pos = vp[i].pos;
			vh[i].regs_hash = rnd_width();
		}
		for (size_t i = 0; i < dlen; i++)
			data[i] = (uint8_t)rnd();
		/* Enums: in range, out of range, negative. */
		int32_t e = rnd() % 8 ? (int32_t)(rnd() % 5) : (int32_t)rnd();
		char reason[40];
		snprintf(reason, sizeof(reason), "r%llu",
			 (unsigned long long)rnd_width());
		const Rr__Event *ev;
		switch (iter % 8) {
		case 0: ev = rr_ev_io_read(&b, vcpu, pp, e, rnd_width(),
					   (uint32_t)rnd_width(), rnd_width());
			break;
		case 1: ev = rr_ev_time_read(&b, vcpu, pp, e, rnd_width(),
					     rnd_width());
			break;
		case 2: ev = rr_ev_interrupt(&b, vcpu, pp, e,
					     (uint32_t)rnd_width());
			break;
		case 3: ev = rr_ev_dma_write(&b, vcpu, pp, rnd_width(), data,
					     dlen, n, vpp);
			break;
		case 4: ev = rr_ev_net_packet(&b, vcpu, pp, e, data, dlen);
			break;
		case 5: ev = rr_ev_crew_transfer(&b, vcpu, pp, e, rnd_width(),
						 rnd_width(), rnd() & 1, n, vpp);
			break;
		case 6: ev = rr_ev_checkpoint(&b, vcpu, pp, rnd_width(), n, vhp,
					      data, dlen % 33, rnd_width());
			break;
		default:
			ev = rr_ev_end(&b, vcpu, pp, rnd() & 1,
				       rnd() % 3 ? reason : (rnd() & 1 ? "" : NULL),
				       rnd_width(), rnd_width());
			break;
		}
		check_event(ev, "random");
	}
	/* No body at all, and a completely empty event. */
	Rr__Event ev = RR__EVENT__INIT;
	check_event(&ev, "empty");
	ev.vcpu = 3;
	check_event(&ev, "no body");
}

/* Records protobuf-c accepts but that are not canonical: fallback. */
static void fallbacks(void)
{
	static const struct {
		const char *what;
		uint8_t bytes[16];
		size_t len;
	} cases[] = {
		{ "duplicate vcpu", { 0x08, 0x01, 0x08, 0x02 }, 4 },
		{ "unknown field 3", { 0x18, 0x05 }, 2 },
		{ "two oneof members", { 0x52, 0x00, 0x5a, 0x00 }, 4 },
		{ "unknown fixed64 field", { 0x19, 1, 2, 3, 4, 5, 6, 7, 8 }, 9 },
		{ "vcpu as length-delimited", { 0x0a, 0x00 }, 2 },
		{ "duplicate position (merge)", { 0x12, 0x02, 0x08, 0x01,
						  0x12, 0x02, 0x10, 0x02 }, 8 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		Rr__Event *ev = NULL;
		CHECK(rr_event_decode_fast(cases[i].bytes, cases[i].len,
					   &sys_alloc, &ev) == RR_DEC_FALLBACK,
		      "%s: expected fallback", cases[i].what);
		/* Wrong wire types are errors for protobuf-c; rest is legal. */
		Rr__Event *ref = rr__event__unpack(NULL, cases[i].len,
						   cases[i].bytes);
		CHECK(!ref == !!strstr(cases[i].what, "as length"),
		      "%s: protobuf-c verdict", cases[i].what);
		if (ref)
			rr__event__free_unpacked(ref, NULL);
	}
}

/*
 * An End with a summary (once per log) is protobuf-c's: the fast encoder
 * declines it, the fast decoder falls back on it.  Returns what
 * protobuf-c reads back (free it), or NULL after a failed check.
 */
static Rr__Event *end_round_trip(const Rr__Event *ev, const char *what)
{
	uint8_t buf[256], out[256];
	Rr__Event *dec = NULL;
	size_t len;

	CHECK(rr_event_encode(ev, out) == 0, "%s: fast encoder took it", what);
	len = rr__event__get_packed_size(ev);
	CHECK(len < sizeof(buf), "%s: %zu bytes", what, len);
	if (len >= sizeof(buf))
		return NULL;
	rr__event__pack(ev, buf);
	CHECK(rr_event_decode_fast(buf, len, &sys_alloc, &dec) == RR_DEC_FALLBACK,
	      "%s: fast decoder did not fall back", what);
	dec = rr__event__unpack(NULL, len, buf);
	CHECK(dec && dec->end && dec->end->n_events == 7,
	      "%s: protobuf-c did not read it back", what);
	return dec && dec->end ? dec : NULL;
}

/* the untrained-access summary (QEMU 0021) */
static void end_untrained(void)
{
	uint64_t pcs[3] = { 0xffffffff81234567ull, 0xffffffff81000000ull, 1 };
	rr_event_buf b;
	Rr__Event *ev = rr_ev_end(&b, RR_VCPU_NONE, NULL, 1, "the VM shut down", 7, 9);
	Rr__Event *dec;

	ev->end->untrained_shared = 4812;
	ev->end->n_untrained_pcs = 3;
	ev->end->untrained_pcs = pcs;
	dec = end_round_trip(ev, "end+untrained");
	if (!dec)
		return;
	CHECK(dec->end->untrained_shared == 4812 &&
	      dec->end->n_untrained_pcs == 3 && dec->end->untrained_pcs[0] == pcs[0] &&
	      dec->end->untrained_pcs[2] == 1, "end+untrained: summary differs");
	rr__event__free_unpacked(dec, NULL);
}

/* threads of one process in user mode at once (QEMU 0058) */
static void end_user_parallel(void)
{
	rr_event_buf b;
	Rr__Event *ev = rr_ev_end(&b, RR_VCPU_NONE, NULL, 1, "the VM shut down", 7, 9);
	Rr__Event *dec;

	ev->end->user_parallel = 31;
	ev->end->user_parallel_as = 0x12345000;
	ev->end->user_parallel_vcpus = 0x5;
	ev->end->user_parallel_pc = 0x401000;
	dec = end_round_trip(ev, "end+user");
	if (!dec)
		return;
	CHECK(dec->end->user_parallel == 31 &&
	      dec->end->user_parallel_as == 0x12345000 &&
	      dec->end->user_parallel_vcpus == 0x5 &&
	      dec->end->user_parallel_pc == 0x401000, "end+user: summary differs");
	rr__event__free_unpacked(dec, NULL);
}

int main(void)
{
	sys_alloc.alloc = sys_a;
	sys_alloc.free = sys_f;
	synth_streams();
	end_user_parallel();
	random_events();
	fallbacks();
	end_untrained();
	printf("test_codec: ok\n");
	return 0;
}
