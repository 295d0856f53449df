/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One text_poke_bp_batch() in flight, as byte mode orders it (pokebatch.c,
 * translate.c's emit_poke_site).  No rv.h: it builds in userspace too
 * (test/test_pokebatch.c).
 */
#ifndef RV_POKEBATCH_H
#define RV_POKEBATCH_H

#include <linux/types.h>

/* the 6.1 struct text_poke_loc: s32 rel_addr (from _stext), s32 disp,
 * u8 len, u8 opcode, u8 text[5], u8 old */
#define RV_TPL_SIZE	16
#define RV_TPL_LEN	8
#define RV_TPL_TEXT	10

/* at most the kernel's TP_VEC_MAX (a page of 16-byte text_poke_loc) */
#define RV_PB_MAX	256
/* low bits of a CPU's poke_seen: syncs it ran since the batch began */
#define RV_PB_GEN_SHIFT	16

enum rv_pb_kind { RV_PB_NOP, RV_PB_CALL, RV_PB_JMP, RV_PB_RET };

/* what an instruction text_poke_bp may write or replace does */
struct rv_pb_insn {
	u8 kind;
	unsigned long target;	/* CALL, JMP */
};

struct rv_pb_site {
	unsigned long pc;	/* first: sorted by it */
	unsigned int len;
	struct rv_pb_insn old, new;
};

struct rv_pokebatch {
	u64 thr;		/* poke_seen from which a CPU runs the new code */
	unsigned int n;		/* 0: no batch is ordered now */
	unsigned long refused_pc;	/* the site that refused the batch */
	struct rv_pb_site s[RV_PB_MAX];
};

/* why a batch is left to the old way (drop its blocks when it is done) */
enum rv_pb_refusal {
	RV_PB_OK, RV_PB_TOO_MANY, RV_PB_LEN, RV_PB_WHERE, RV_PB_ORDER,
	RV_PB_OLD_INSN, RV_PB_NEW_INSN,
	RV_PB_KPROBE,		/* a kprobe's int3 at a site: optimizing it */
};

bool rv_pb_decode(const u8 *b, unsigned int len, unsigned long pc, struct rv_pb_insn *out);
unsigned int rv_pb_nsync(const u8 *tp, unsigned int n);
enum rv_pb_refusal rv_pb_fill(struct rv_pokebatch *pb, const u8 *tp, unsigned int n,
			      unsigned long stext, u64 gen);

/*
 * Provided by the user of pokebatch.c (coherence.c, the test): direct
 * calls, as an indirect one would go through the kernel's retpoline thunk.
 */
bool rv_pb_in_text(unsigned long pc);			/* where pokes may land */
bool rv_pb_keyed(unsigned long pc, unsigned int len);	/* translated from a key */
const u8 *rv_pb_bytes(unsigned long pc);		/* the site's current bytes */
const struct rv_pb_site *rv_pb_find(const struct rv_pokebatch *pb, unsigned long pc);

#endif
