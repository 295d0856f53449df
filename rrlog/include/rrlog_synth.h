/*
 * Deterministic synthetic event streams, for tests, benchmarks and
 * `replay-vm synth`.  The mix imitates a multiprocessor recording:
 * mostly port/MMIO reads, TSC reads, interrupts and CREW transfers, with
 * occasional DMA, network packets and checkpoints.  The same seed always
 * gives the same sequence, so a test can regenerate what it wrote.
 */
#ifndef RRLOG_SYNTH_H
#define RRLOG_SYNTH_H

#include "rrlog.h"

#define RR_SYNTH_MAX_VCPUS 64
#define RR_SYNTH_MAX_DATA  4096

typedef struct rr_synth {
	uint64_t rng;
	uint32_t n_vcpus;
	uint64_t n;                      /* events generated so far */
	uint64_t checkpoint_every;       /* 0: no checkpoints */
	uint32_t dma_permille;           /* share of DmaWrite, default 10 */
	uint64_t tsc;
	rr_pos pos[RR_SYNTH_MAX_VCPUS];  /* current position per vCPU */

	/* storage the returned event points into */
	rr_event_buf buf;
	Rr__Position vpos[RR_SYNTH_MAX_VCPUS];
	Rr__VcpuPos vp[RR_SYNTH_MAX_VCPUS];
	Rr__VcpuPos *vpp[RR_SYNTH_MAX_VCPUS];
	Rr__VcpuHash vh[RR_SYNTH_MAX_VCPUS];
	Rr__VcpuHash *vhp[RR_SYNTH_MAX_VCPUS];
	uint8_t data[RR_SYNTH_MAX_DATA];
	uint8_t ram_hash[32];
} rr_synth;

void rr_synth_init(rr_synth *s, uint64_t seed, uint32_t n_vcpus);

/* Next event; valid until the next call on s. */
const Rr__Event *rr_synth_next(rr_synth *s);

/* The End event for a stream of s->n events. */
const Rr__Event *rr_synth_end(rr_synth *s, uint64_t host_ns);

/* Fill a header for a synthetic run (strings are static). */
void rr_synth_header(Rr__Header *h, uint32_t n_vcpus);

#endif
