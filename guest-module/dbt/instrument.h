/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Instrumentation interface of the translator (what byte-CREW builds on).
 *
 * For every instruction with an explicit memory operand the translator
 * describes the access (struct rv_memop: segment, base, index, scale,
 * displacement or RIP-relative target, size, read/write) and lets the
 * active instrumentation emit code in front of the (identity-translated)
 * instruction: an inline fast path, which may call an out-of-line slow path
 * it emits elsewhere in the code cache.  Instructions that are
 * deterministic points for replay (port I/O, rdtsc/rdtscp, pause, backward
 * branches) are reported the same way.  Emitted code must preserve all
 * registers and the flags.  Entry code and noinstr text are never
 * instrumented (the kernel forbids it there as well: user stack, user gs).
 */
#ifndef RV_INSTRUMENT_H
#define RV_INSTRUMENT_H
#include <asm/insn.h>
#include "emit.h"

#define RV_MEM_READ	1
#define RV_MEM_WRITE	2

struct rv_memop {
	unsigned long pc;	/* native address of the instruction */
	u8 size;		/* bytes accessed (0: unknown, e.g. fxsave) */
	u8 dir;			/* RV_MEM_READ | RV_MEM_WRITE */
	u8 seg;			/* 0, or the fs/gs override prefix (0x64/0x65) */
	bool riprel;		/* address = rip_target */
	unsigned long rip_target;
	s8 base, index;		/* register numbers 0..15, -1 if none */
	u8 scale;		/* 1, 2, 4, 8 */
	s32 disp;
	bool string;		/* movs/stos/lods/cmps/scas: rsi/rdi based */
	s8 bitreg;		/* bt/bts/btr/btc: the bit-offset register, or -1 */
	bool keep_flags;	/* a read the translator adds: the flags are live
				 * whatever the native code after @pc does */
};

enum rv_detpoint { RV_DP_IO, RV_DP_RDTSC, RV_DP_PAUSE, RV_DP_BACKEDGE, RV_DP_HLT,
		   RV_DP_NR };

struct rv_instrumentation {
	const char *name;
	/* before anything else emitted for the instruction at @pc */
	void (*at)(struct rv_emit *e, struct insn *insn, unsigned long pc);
	/* before the access; true: it was instrumented (post follows) */
	bool (*mem)(struct rv_emit *e, struct insn *insn, const struct rv_memop *op);
	/* after the access (when mem said true), e.g. a release */
	void (*post)(struct rv_emit *e, struct insn *insn, const struct rv_memop *op);
	void (*detpoint)(struct rv_emit *e, struct insn *insn, unsigned long pc,
			 enum rv_detpoint kind);
};

extern const struct rv_instrumentation *rv_instr;
int rv_instr_select(const char *name);
bool rv_instr_allowed(unsigned long pc);
/* before @insn; returns whether its memory access was instrumented */
bool rv_instrument(struct rv_emit *e, struct insn *insn, unsigned long pc, unsigned long next);
/* after @insn's translation (only when rv_instrument said true) */
void rv_instrument_post(struct rv_emit *e, struct insn *insn, unsigned long pc);
/* a read the translator adds for @pc (jump-label keys); flags kept */
bool rv_instrument_read(struct rv_emit *e, struct insn *insn, unsigned long pc);
void rv_instrument_read_post(struct rv_emit *e, struct insn *insn, unsigned long pc);
extern u64 rv_instr_mem_count[4], rv_instr_dp_count[RV_DP_NR];
#endif
