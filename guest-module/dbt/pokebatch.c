// SPDX-License-Identifier: GPL-2.0
/*
 * Ordering text_poke_bp_batch() in byte mode (ftrace, kprobes' optimized
 * probes, BPF trampolines: every poke but jump labels and static calls,
 * which are translated from their keys).
 *
 * A batch writes int3 on each site, syncs every CPU (an IPI that runs
 * do_sync_core there), writes the tails, syncs, writes the first bytes and
 * syncs again.  A CPU may run the old instruction until its last sync and
 * the new one (emulated by the int3 handler) any time after the first:
 * native execution tells nobody which.  Translations that copy bytes made
 * it worse: another vCPU ran the old code until its block was dropped, at
 * no point any log holds, and a block translated while the int3 was in
 * place left it in native code (function tracing turned on during a
 * recording stalled it in function_trace_call).
 *
 * So while a batch runs, its sites are translated from this table, never
 * from their bytes, as: "has this CPU run the batch's last sync?  the new
 * instruction : the old one".  A CPU counts the syncs it runs in its
 * poke_seen (translate.c's emit_sync_count, at do_sync_core), whose high
 * bits hold the batch it counts for; the IPI reaches it at a deterministic
 * point, so a replay switches at the same instruction.
 *
 * Filled from coherence.c's kretprobe handler, on the kernel's stack:
 * nothing here may call kernel text (test/no_calls.py), and there are no
 * struct copies, which the compiler may turn into memcpy() calls.
 */
#include <linux/types.h>
#include "pokebatch.h"

static s32 rd_s32(const u8 *p)
{
	return (s32)((u32)p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24);
}

static bool all_int3(const u8 *b, unsigned int from, unsigned int len)
{
	for (; from < len; from++)
		if (b[from] != 0xcc)
			return false;
	return true;
}

/*
 * What text_poke_loc_init() accepts and 6.1 pokes through batches: nop2,
 * nop5 (x86_nops), call rel32, jmp rel32, jmp rel8, and ret (padded with
 * int3).  Anything else, jcc included, is not ordered.
 */
bool rv_pb_decode(const u8 *b, unsigned int len, unsigned long pc, struct rv_pb_insn *out)
{
	static const u8 nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	unsigned int i;

	out->target = 0;
	switch (b[0]) {
	case 0xe8:
	case 0xe9:
		if (len != 5)
			return false;
		out->kind = b[0] == 0xe8 ? RV_PB_CALL : RV_PB_JMP;
		out->target = pc + 5 + (long)rd_s32(b + 1);
		return true;
	case 0xeb:
		if (len != 2)
			return false;
		out->kind = RV_PB_JMP;
		out->target = pc + 2 + (long)(s8)b[1];
		return true;
	case 0xc3:
		out->kind = RV_PB_RET;
		return len >= 1 && all_int3(b, 1, len);
	case 0x66:
		out->kind = RV_PB_NOP;
		return len == 2 && b[1] == 0x90;
	case 0x0f:
		if (len != 5)
			return false;
		for (i = 0; i < 5; i++)
			if (b[i] != nop5[i])
				return false;
		out->kind = RV_PB_NOP;
		return true;
	}
	return false;
}

/* how many syncs the batch will run: text_poke_bp_batch()'s three steps */
unsigned int rv_pb_nsync(const u8 *tp, unsigned int n)
{
	bool tails = false, firsts = false;
	unsigned int i;

	for (i = 0; i < n; i++) {
		const u8 *e = tp + RV_TPL_SIZE * i;

		if (e[RV_TPL_LEN] > 1)
			tails = true;
		if (e[RV_TPL_LEN] == 6 || e[RV_TPL_TEXT] != 0xcc)
			firsts = true;
	}
	return 1 + tails + firsts;
}

/*
 * Fill @pb from the batch's @n entries at @tp before any of them is
 * written.  @keyed sites (translated from their keys) are left out; they
 * still count for the syncs.  Anything odd refuses the whole batch, which
 * then drops its blocks when it is done, as before.
 */
enum rv_pb_refusal rv_pb_fill(struct rv_pokebatch *pb, const u8 *tp, unsigned int n,
			      unsigned long stext, u64 gen)
{
	unsigned long last = 0;
	unsigned int i, k = 0;

	pb->n = 0;
	pb->refused_pc = 0;
	if (n > RV_PB_MAX)
		return RV_PB_TOO_MANY;
	for (i = 0; i < n; i++) {
		const u8 *e = tp + RV_TPL_SIZE * i;
		unsigned long pc = stext + (long)rd_s32(e);
		unsigned int len = e[RV_TPL_LEN];
		struct rv_pb_site *s = &pb->s[k];

		pb->refused_pc = pc;
		if (!len || len > 5)
			return RV_PB_LEN;
		if (!rv_pb_in_text(pc))
			return RV_PB_WHERE;
		/* the kernel keeps them sorted (its int3 handler bsearches) */
		if (i && pc < last + 1)
			return RV_PB_ORDER;
		last = pc;
		if (rv_pb_keyed(pc, len))
			continue;
		s->pc = pc;
		s->len = len;
		/*
		 * Batches write their int3 after this: one there already is a
		 * kprobe's (text_poke alone), and a batch over it is the
		 * optimizer's jump to the probe's detour buffer.
		 */
		if (rv_pb_bytes(pc)[0] == 0xcc)
			return RV_PB_KPROBE;
		if (!rv_pb_decode(rv_pb_bytes(pc), len, pc, &s->old))
			return RV_PB_OLD_INSN;
		if (!rv_pb_decode(e + RV_TPL_TEXT, len, pc, &s->new))
			return RV_PB_NEW_INSN;
		k++;
	}
	pb->thr = (gen << RV_PB_GEN_SHIFT) + rv_pb_nsync(tp, n);
	pb->n = k;
	pb->refused_pc = 0;
	return RV_PB_OK;
}

const struct rv_pb_site *rv_pb_find(const struct rv_pokebatch *pb, unsigned long pc)
{
	unsigned int lo = 0, hi = pb->n;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (pb->s[mid].pc == pc)
			return &pb->s[mid];
		if (pb->s[mid].pc < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}
