/* SPDX-License-Identifier: GPL-2.0 */
/* Byte-CREW instrumentation (crewinstr.c) and its slow paths (crewslow.c). */
#ifndef RV_CREWINSTR_H
#define RV_CREWINSTR_H
#include "emit.h"
#include "instrument.h"

/* what an instrumentation site is; lives in the cold part of the cache */
struct rv_site {
	unsigned long pc;	/* native address of the instruction */
	u8 size;		/* bytes (string: element size) */
	u8 dir;			/* RV_MEM_READ | RV_MEM_WRITE */
	u8 string;		/* movs/stos/lods/cmps/scas */
};

/* why slow_common was entered (x_kind); x_addr holds what the name says */
enum rv_slow_kind {
	RV_SLOW_SHADOW = 1,	/* record: fast check failed, x_addr = shadow byte */
	RV_SLOW_PHYS,		/* record: odd size, x_addr = physical address */
	RV_SLOW_OTHER,		/* neither direct map nor image: x_addr = address */
	RV_SLOW_REPLAY,		/* replay: seq == rp_next */
	RV_SLOW_STRING,		/* string instruction: ranges from registers */
};

/* constants the emitted code uses, fixed at load */
struct rv_crew_consts {
	unsigned long page_offset;	/* direct map base */
	unsigned long span;		/* RAM bytes the shadow covers */
	unsigned long kimg_start;	/* __START_KERNEL_map */
	unsigned long kimg_size;	/* _end - __START_KERNEL_map */
	unsigned long phys_base;
	unsigned long shadow_va;	/* shadow(phys) = shadow_va + phys */
	/* translation-time counts */
	unsigned long instrumented, uninstrumented, skipped_stack;
};
extern struct rv_crew_consts rv_cc;
extern unsigned int rv_bdebug;

void *rv_cold_alloc(unsigned long size, unsigned long align);
int rv_flags_dead(unsigned long pc);
void e_gs(struct rv_emit *e, u8 rex, u8 op, int reg, u32 disp);
void e_gs_movq_imm(struct rv_emit *e, u32 disp, u32 imm);
const struct rv_instrumentation *rv_crew_instrumentation(void);
int rv_stubs_build_byte(void);
unsigned long rv_emit_gate_stub_byte(int vector, bool exception, bool errcode, u64 *slot);
#endif
