// SPDX-License-Identifier: GPL-2.0
/*
 * Instrumentation hooks (see instrument.h): memory-operand description,
 * deterministic points, and a demonstration instrumentation ("count") that
 * counts executed memory accesses by direction and deterministic points by
 * kind with inline code (pushfq; lock incq; popfq).
 */
#include <linux/kernel.h>
#include "rv.h"
#include "instrument.h"
#include "crew/crewinstr.h"

const struct rv_instrumentation *rv_instr;
u64 rv_instr_mem_count[4], rv_instr_dp_count[RV_DP_NR];
static unsigned long entry_lo, entry_hi, noinstr_lo, noinstr_hi;

/*
 * Entry code (it may run on the user's gs) is never instrumented.  noinstr
 * text is left alone too, except in byte-CREW mode: it runs on the
 * kernel's gs, and it touches shared state (context tracking, RCU's
 * dynticks counters) whose order a replay must reproduce.
 */
bool rv_instr_allowed(unsigned long pc)
{
	if (pc >= entry_lo && pc < entry_hi)
		return false;
	return ((rv_byte || rv_train) && !(rv_bdebug & 16)) || !(pc >= noinstr_lo && pc < noinstr_hi);
}

/* read/write direction of the r/m operand for the common opcode classes */
static int mem_dir(struct insn *insn, bool *none)
{
	u8 op0 = insn->opcode.bytes[0];
	u8 op1 = insn->opcode.nbytes > 1 ? insn->opcode.bytes[1] : 0;
	u8 reg = X86_MODRM_REG(insn->modrm.bytes[0]);

	*none = false;
	if (op0 == 0x8d) {				/* lea: no access */
		*none = true;
		return 0;
	}
	if (op0 < 0x40 && (op0 & 7) < 4) {		/* ALU r/m,r and r,r/m */
		if ((op0 & 0x38) == 0x38 || (op0 & 2))	/* cmp, or r/m is the source */
			return RV_MEM_READ;
		return RV_MEM_READ | RV_MEM_WRITE;
	}
	switch (op0) {
	case 0x84: case 0x85: case 0x8a: case 0x8b: case 0x63:
	case 0x69: case 0x6b:
		return RV_MEM_READ;
	case 0x86: case 0x87:				/* xchg */
		return RV_MEM_READ | RV_MEM_WRITE;
	case 0x88: case 0x89: case 0x8c: case 0xc6: case 0xc7: case 0x8f:
		return RV_MEM_WRITE;
	case 0x80: case 0x81: case 0x83:
		return reg == 7 ? RV_MEM_READ : RV_MEM_READ | RV_MEM_WRITE;
	case 0xc0: case 0xc1: case 0xd0: case 0xd1: case 0xd2: case 0xd3:
		return RV_MEM_READ | RV_MEM_WRITE;
	case 0xf6: case 0xf7:
		return reg <= 1 || reg >= 4 ? RV_MEM_READ : RV_MEM_READ | RV_MEM_WRITE;
	case 0xfe: case 0xff:
		return reg <= 1 ? RV_MEM_READ | RV_MEM_WRITE : RV_MEM_READ;
	case 0x0f:
		if (op1 == 0x18 || op1 == 0x1f || (op1 >= 0x19 && op1 <= 0x1e) || op1 == 0x0d) {
			*none = true;			/* prefetch / hint nops */
			return 0;
		}
		if (op1 == 0xb6 || op1 == 0xb7 || op1 == 0xbe || op1 == 0xbf ||
		    (op1 >= 0x40 && op1 <= 0x4f) || op1 == 0xa3 || op1 == 0xaf)
			return RV_MEM_READ;
		if (op1 >= 0x90 && op1 <= 0x9f)		/* setcc */
			return RV_MEM_WRITE;
		if (op1 == 0xb0 || op1 == 0xb1 || op1 == 0xc0 || op1 == 0xc1 ||
		    op1 == 0xab || op1 == 0xb3 || op1 == 0xbb || op1 == 0xc7)
			return RV_MEM_READ | RV_MEM_WRITE;
		break;
	}
	return RV_MEM_READ | RV_MEM_WRITE;		/* unknown: both */
}

static bool describe(struct insn *insn, unsigned long pc, struct rv_memop *m)
{
	u8 modrm = insn->modrm.bytes[0], rex = insn->rex_prefix.nbytes ? insn->rex_prefix.bytes[0] : 0;
	u8 op0 = insn->opcode.bytes[0];
	bool none;
	int i;

	memset(m, 0, sizeof(*m));
	m->pc = pc;
	m->base = m->index = -1;
	m->scale = 1;
	for (i = 0; i < insn->prefixes.nbytes; i++)
		if (insn->prefixes.bytes[i] == 0x64 || insn->prefixes.bytes[i] == 0x65)
			m->seg = insn->prefixes.bytes[i];
	if ((op0 >= 0xa4 && op0 <= 0xa7) || (op0 >= 0xaa && op0 <= 0xaf)) {
		m->string = true;
		m->bitreg = -1;
		m->size = (op0 & 1) ? insn->opnd_bytes : 1;
		m->dir = (op0 == 0xaa || op0 == 0xab) ? RV_MEM_WRITE :
			 (op0 == 0xa4 || op0 == 0xa5) ? RV_MEM_READ | RV_MEM_WRITE : RV_MEM_READ;
		return true;
	}
	if (!insn->modrm.nbytes || X86_MODRM_MOD(modrm) == 3)
		return false;
	m->dir = mem_dir(insn, &none);
	if (none)
		return false;
	m->size = insn->opnd_bytes;
	m->bitreg = -1;
	if (op0 < 0x40 ? !(op0 & 1) : (op0 == 0x88 || op0 == 0x8a || op0 == 0x80 || op0 == 0xc6 ||
				       op0 == 0xf6 || op0 == 0xfe || op0 == 0x84 || op0 == 0x86 ||
				       op0 == 0xc0 || op0 == 0xd0 || op0 == 0xd2))
		m->size = 1;
	if (op0 == 0x63)				/* movsxd */
		m->size = 4;
	if (op0 == 0x0f) {
		u8 op1 = insn->opcode.bytes[1];

		if (op1 == 0xb6 || op1 == 0xbe || (op1 >= 0x90 && op1 <= 0x9f) ||
		    op1 == 0xb0 || op1 == 0xc0)
			m->size = 1;			/* movzx/movsx byte, setcc, cmpxchg/xadd byte */
		else if (op1 == 0xb7 || op1 == 0xbf)
			m->size = 2;
		else if (op1 == 0xc7 && X86_MODRM_REG(modrm) == 1)
			m->size = insn->opnd_bytes == 8 ? 16 : 8;	/* cmpxchg16b/8b */
		else if (op1 == 0xa3 || op1 == 0xab || op1 == 0xb3 || op1 == 0xbb) {
			/* bt/bts/btr/btc with a register bit offset: the word is
			 * EA + (offset >> 6) * 8 (or >> 5, * 4) */
			m->bitreg = X86_MODRM_REG(modrm) | (X86_REX_R(rex) ? 8 : 0);
		}
	}
	m->disp = insn->displacement.value;
	if (X86_MODRM_MOD(modrm) == 0 && X86_MODRM_RM(modrm) == 5) {
		m->riprel = true;
		m->rip_target = pc + insn->length + insn->displacement.value;
		return true;
	}
	if (X86_MODRM_RM(modrm) == 4) {
		u8 sib = insn->sib.bytes[0];

		m->scale = 1 << X86_SIB_SCALE(sib);
		if (X86_SIB_INDEX(sib) != 4 || X86_REX_X(rex))
			m->index = X86_SIB_INDEX(sib) | (X86_REX_X(rex) ? 8 : 0);
		if (!(X86_SIB_BASE(sib) == 5 && X86_MODRM_MOD(modrm) == 0))
			m->base = X86_SIB_BASE(sib) | (X86_REX_B(rex) ? 8 : 0);
	} else {
		m->base = X86_MODRM_RM(modrm) | (X86_REX_B(rex) ? 8 : 0);
	}
	return true;
}

static int detpoint_kind(struct insn *insn, unsigned long pc, unsigned long next)
{
	u8 op0 = insn->opcode.bytes[0];
	u8 op1 = insn->opcode.nbytes > 1 ? insn->opcode.bytes[1] : 0;
	long rel = insn->immediate.value;

	if ((op0 >= 0xe4 && op0 <= 0xe7) || (op0 >= 0xec && op0 <= 0xef) ||
	    (op0 >= 0x6c && op0 <= 0x6f))
		return RV_DP_IO;
	if (op0 == 0x0f && op1 == 0x31)
		return RV_DP_RDTSC;
	if (op0 == 0x0f && op1 == 0x01 && insn->modrm.bytes[0] == 0xf9)
		return RV_DP_RDTSC;
	if (op0 == 0x90 && insn->prefixes.nbytes && insn->prefixes.bytes[0] == 0xf3)
		return RV_DP_PAUSE;
	if (op0 == 0xf4)
		return RV_DP_HLT;
	if (((op0 >= 0xe0 && op0 <= 0xe3) || (op0 >= 0x70 && op0 <= 0x7f) ||
	     op0 == 0xeb || op0 == 0xe9 ||
	     (op0 == 0x0f && op1 >= 0x80 && op1 <= 0x8f)) && next + rel <= pc)
		return RV_DP_BACKEDGE;
	return -1;
}

/*
 * "sti; hlt" must stay together (the interrupt shadow of sti covers the
 * hlt): the hlt's deterministic point goes before the sti.
 */
static bool sti_hlt_pending;

/* called by the translator before it emits the translation of @insn */
bool rv_instrument(struct rv_emit *e, struct insn *insn, unsigned long pc, unsigned long next)
{
	struct rv_memop m;
	struct insn nx;
	int k;

	if (!rv_instr || !rv_instr_allowed(pc))
		return false;
	if (rv_instr->at)
		rv_instr->at(e, insn, pc);
	k = detpoint_kind(insn, pc, next);
	if (insn->opcode.bytes[0] == 0xfb && !rv_decode(&nx, next) &&
	    nx.opcode.bytes[0] == 0xf4 && rv_instr->detpoint) {
		rv_instr->detpoint(e, &nx, next, RV_DP_HLT);
		sti_hlt_pending = true;
		return false;
	}
	if (k == RV_DP_HLT && sti_hlt_pending)
		k = -1;
	sti_hlt_pending = false;
	if (k >= 0 && rv_instr->detpoint)
		rv_instr->detpoint(e, insn, pc, k);
	if (rv_instr->mem && describe(insn, pc, &m))
		return rv_instr->mem(e, insn, &m);
	return false;
}

static void post(struct rv_emit *e, struct insn *insn, unsigned long pc, bool keep_flags)
{
	struct rv_memop m;

	if (rv_instr && rv_instr->post && describe(insn, pc, &m)) {
		m.keep_flags = keep_flags;
		rv_instr->post(e, insn, &m);
	}
}

void rv_instrument_post(struct rv_emit *e, struct insn *insn, unsigned long pc)
{
	post(e, insn, pc, false);
}

/*
 * A read that is not in the native code (translate.c: a jump-label site
 * becomes a read of its key): @insn is the emitted instruction, counted
 * as @pc's access.
 */
bool rv_instrument_read(struct rv_emit *e, struct insn *insn, unsigned long pc)
{
	struct rv_memop m;

	if (!rv_instr || !rv_instr->mem || !rv_instr_allowed(pc) || !describe(insn, pc, &m))
		return false;
	m.keep_flags = true;
	return rv_instr->mem(e, insn, &m);
}

void rv_instrument_read_post(struct rv_emit *e, struct insn *insn, unsigned long pc)
{
	post(e, insn, pc, true);
}

/* ---- "count": inline counters, flags preserved ---- */
static void count_inc(struct rv_emit *e, u64 *ctr)
{
	e_u8(e, 0x9c);				/* pushfq */
	e_lock_inc(e, ctr);
	e_u8(e, 0x9d);				/* popfq */
}

static bool count_mem(struct rv_emit *e, struct insn *insn, const struct rv_memop *op)
{
	count_inc(e, &rv_instr_mem_count[op->dir & 3]);
	return false;
}

static void count_dp(struct rv_emit *e, struct insn *insn, unsigned long pc, enum rv_detpoint kind)
{
	count_inc(e, &rv_instr_dp_count[kind]);
}

static const struct rv_instrumentation count_instr = {
	.name = "count",
	.mem = count_mem,
	.detpoint = count_dp,
};

int rv_instr_select(const char *name)
{
	entry_lo = rv_ksym("__entry_text_start");
	entry_hi = rv_ksym("__entry_text_end");
	noinstr_lo = rv_ksym("__noinstr_text_start");
	noinstr_hi = rv_ksym("__noinstr_text_end");
	if (!name || !*name || !strcmp(name, "none")) {
		rv_instr = NULL;
		return 0;
	}
	if (!strcmp(name, "count")) {
		rv_instr = &count_instr;
		return 0;
	}
	if (!strcmp(name, "train")) {
		rv_instr = rv_train_instrumentation();
		return 0;
	}
	if (!strcmp(name, "crew")) {
		rv_instr = rv_crew_instrumentation();
		return 0;
	}
	return -EINVAL;
}
