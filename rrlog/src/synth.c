/* Synthetic event streams: see rrlog_synth.h. */
#include <string.h>

#include "rrlog_synth.h"

static uint64_t rnd(rr_synth *s)
{
	/* xorshift64*: fast, good enough, and identical everywhere. */
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * 0x2545f4914f6cdd1dull;
}

static uint32_t below(rr_synth *s, uint32_t n)
{
	return (uint32_t)((rnd(s) >> 32) * n >> 32);
}

void rr_synth_init(rr_synth *s, uint64_t seed, uint32_t n_vcpus)
{
	memset(s, 0, sizeof(*s));
	s->rng = seed * 0x9e3779b97f4a7c15ull + 0x1234567;
	if (!s->rng)
		s->rng = 1;
	if (n_vcpus == 0)
		n_vcpus = 1;
	if (n_vcpus > RR_SYNTH_MAX_VCPUS)
		n_vcpus = RR_SYNTH_MAX_VCPUS;
	s->n_vcpus = n_vcpus;
	s->checkpoint_every = 100000;
	s->dma_permille = 10;
	s->tsc = 1000000000ull;
	for (uint32_t i = 0; i < RR_SYNTH_MAX_VCPUS; i++)
		s->vpp[i] = &s->vp[i], s->vhp[i] = &s->vh[i];
}

/* Advance vCPU v to a plausible next instruction. */
static rr_pos *step(rr_synth *s, uint32_t v)
{
	rr_pos *p = &s->pos[v];
	p->branches += 1 + below(s, 5000);
	p->rip = 0xffffffff81000000ull + below(s, 1u << 24);
	p->rcx = below(s, 10) == 0 ? below(s, 4096) : 0;
	if (below(s, 8) == 0)
		p->detpoints++;
	return p;
}

/* Previous owners / other vCPUs as VcpuPos, excluding `self`. */
static size_t others(rr_synth *s, uint32_t self, size_t max)
{
	size_t n = 0;
	for (uint32_t v = 0; v < s->n_vcpus && n < max; v++) {
		if (v == self)
			continue;
		rr_vcpu_pos_init(&s->vp[n], &s->vpos[n], v, &s->pos[v]);
		n++;
	}
	return n;
}

static void fill_data(rr_synth *s, size_t len)
{
	/* Disk-like: structured bytes with some noise, compresses ~3x. */
	uint64_t r = rnd(s);
	for (size_t i = 0; i < len; i++) {
		if ((i & 7) == 0)
			r = rnd(s);
		s->data[i] = (i & 3) ? (uint8_t)(i >> 4) : (uint8_t)(r >> (i & 56));
	}
}

const Rr__Event *rr_synth_next(rr_synth *s)
{
	uint32_t v = below(s, s->n_vcpus);
	uint32_t roll = below(s, 1000);
	rr_event_buf *b = &s->buf;
	const Rr__Event *ev;

	s->n++;
	s->tsc += 100 + below(s, 3000);
	if (s->checkpoint_every && s->n % s->checkpoint_every == 0) {
		for (uint32_t i = 0; i < s->n_vcpus; i++) {
			rr__vcpu_hash__init(&s->vh[i]);
			s->vh[i].vcpu = i;
			rr_position_set(&s->vpos[i], &s->pos[i]);
			s->vh[i].pos = &s->vpos[i];
			s->vh[i].regs_hash = rnd(s);
		}
		for (int i = 0; i < 32; i += 8) {
			uint64_t h = rnd(s);
			memcpy(s->ram_hash + i, &h, 8);
		}
		return rr_ev_checkpoint(b, RR_VCPU_NONE, NULL,
					s->n / s->checkpoint_every, s->n_vcpus,
					s->vhp, s->ram_hash, 32, s->n * 200);
	}

	uint32_t dma = s->dma_permille, net = 5;
	if (roll < dma) {
		size_t len = 512u << below(s, 4);   /* 512..4096 */
		fill_data(s, len);
		size_t n = others(s, RR_SYNTH_MAX_VCPUS, s->n_vcpus);
		ev = rr_ev_dma_write(b, RR_VCPU_NONE, NULL,
				     (uint64_t)below(s, 1u << 20) << 12, s->data,
				     len, n, s->vpp);
	} else if (roll < dma + net) {
		size_t len = 60 + below(s, 1400);
		fill_data(s, len);
		ev = rr_ev_net_packet(b, RR_VCPU_NONE, NULL, below(s, 2),
				      s->data, len);
	} else if (roll < 400) {
		static const uint16_t ports[] = { 0x3f8, 0x3fd, 0x60, 0x64,
						  0x70, 0x71, 0xcf8, 0xcfc };
		int mmio = below(s, 3) == 0;
		uint64_t addr = mmio ? 0xfee00000ull + (below(s, 64) << 4)
				     : ports[below(s, 8)];
		ev = rr_ev_io_read(b, v, step(s, v), mmio, addr,
				   mmio ? 4 : 1, below(s, 256));
	} else if (roll < 700) {
		uint32_t k = below(s, 20);
		Rr__TimeRead__Kind kind = k < 15 ? RR__TIME_READ__KIND__RDTSC :
			k < 17 ? RR__TIME_READ__KIND__RDTSCP :
			k < 18 ? RR__TIME_READ__KIND__RDRAND :
				 RR__TIME_READ__KIND__RDMSR;
		uint64_t val = kind == RR__TIME_READ__KIND__RDRAND ? rnd(s) : s->tsc;
		uint64_t aux = kind == RR__TIME_READ__KIND__RDTSCP ? v :
			kind == RR__TIME_READ__KIND__RDMSR ? 0x10 : 0;
		ev = rr_ev_time_read(b, v, step(s, v), kind, val, aux);
	} else if (roll < 830) {
		uint32_t k = below(s, 100);
		Rr__Interrupt__Kind kind = k < 97 ? RR__INTERRUPT__KIND__HARD :
			k < 99 ? RR__INTERRUPT__KIND__NMI :
				 RR__INTERRUPT__KIND__SIPI;
		ev = rr_ev_interrupt(b, v, step(s, v), kind,
				     k < 97 ? 0x20 + below(s, 40) : 2);
	} else {
		rr_pos *p = step(s, v);
		p->crew_seq++;
		/* Usually one previous owner, sometimes all readers. */
		size_t n = below(s, 4) ? 1 : s->n_vcpus - 1;
		n = others(s, v, n);
		for (size_t i = 0; i < n; i++)
			s->vpos[i].crew_seq = ++s->pos[s->vp[i].vcpu].crew_seq;
		ev = rr_ev_crew_transfer(b, v, p,
					 RR__CREW_TRANSFER__GRANULARITY__PAGE,
					 (uint64_t)below(s, 1u << 20) << 12,
					 4096, below(s, 2), n, s->vpp);
	}
	return ev;
}

const Rr__Event *rr_synth_end(rr_synth *s, uint64_t host_ns)
{
	return rr_ev_end(&s->buf, RR_VCPU_NONE, NULL, 1, "synthetic run done",
			 s->n, host_ns);
}

void rr_synth_header(Rr__Header *h, uint32_t n_vcpus)
{
	/* protobuf-c string fields are char *; these are never written. */
	static char *cmdline[] = {
		(char *)"qemu-system-x86_64", (char *)"-smp", (char *)"4",
		(char *)"-m", (char *)"2048", (char *)"-accel", (char *)"kvm",
	};
	rr__header__init(h);
	h->n_vcpus = n_vcpus;
	h->ram_mb = 2048;
	h->accel = (char *)"kvm";
	h->crew_mode = RR__HEADER__CREW_MODE__PAGE;
	h->qemu_version = (char *)"7.2.0 (synthetic)";
	h->n_cmdline = sizeof(cmdline) / sizeof(cmdline[0]);
	h->cmdline = cmdline;
	h->start_time_ns = 1700000000000000000ull;
	h->checkpoint_interval = 100000;
	h->tsc_khz = 2000000;
}
