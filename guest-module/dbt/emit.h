/* SPDX-License-Identifier: GPL-2.0 */
/* A few x86-64 encodings the translator and the stub generator emit. */
#ifndef RV_EMIT_H
#define RV_EMIT_H
#include <linux/string.h>

struct rv_emit {
	u8 *p;		/* where the next byte will run (see rv_w) */
};

/*
 * Staging.  Under TCG every guest store into a page QEMU has translated
 * code from takes its self-modifying-code slow path (it locks the page and
 * every page its blocks reach, and walks the blocks), and a block emitted
 * a byte at a time next to blocks that already ran cost hundreds of them:
 * ~20 % of a byte-CREW recording's host time went there.  So translate()
 * emits a block, and the cold code and data it allocates, into scratch
 * windows and copies each into the cache with 8-byte stores at the end
 * (rv_stage_commit, cache.c).  e->p and every pointer into emitted code
 * stay the addresses the code runs at; whatever writes or reads emitted
 * bytes goes through rv_w(), which maps an address inside a window to its
 * scratch copy and is the identity elsewhere (and when nothing is staged).
 */
struct rv_stage {
	u8 *lo, *hi;	/* the cache addresses staged */
	u8 *buf;	/* their scratch copy */
};
#define RV_NSTAGE 2	/* the block, the cold arena */
extern struct rv_stage rv_stage[RV_NSTAGE];
void *rv_stage_overrun(u8 *p, unsigned int n);

static inline void *rv_w(void *at, unsigned int n)
{
	u8 *p = at;
	int i;

	for (i = 0; i < RV_NSTAGE; i++)
		if (p >= rv_stage[i].lo && p < rv_stage[i].hi) {
			if (unlikely(p + n > rv_stage[i].hi))
				return rv_stage_overrun(p, n);
			return rv_stage[i].buf + (p - rv_stage[i].lo);
		}
	return p;
}

static inline void e_u8(struct rv_emit *e, u8 b) { *(u8 *)rv_w(e->p, 1) = b; e->p++; }
static inline void e_u32(struct rv_emit *e, u32 v) { memcpy(rv_w(e->p, 4), &v, 4); e->p += 4; }
static inline void e_u64(struct rv_emit *e, u64 v) { memcpy(rv_w(e->p, 8), &v, 8); e->p += 8; }
static inline void e_bytes(struct rv_emit *e, const void *b, int n) { memcpy(rv_w(e->p, n), b, n); e->p += n; }

/* int3 up to an @a-byte boundary (never executed: padding before a stub) */
static inline void e_align_cc(struct rv_emit *e, unsigned int a)
{
	while ((unsigned long)e->p & (a - 1))
		e_u8(e, 0xcc);
}

/* store a rel32 at @field (emitted code) reaching @target */
static inline void e_fill32(u8 *field, unsigned long target)
{
	s32 v = (s32)(target - ((unsigned long)field + 4));

	memcpy(rv_w(field, 4), &v, 4);
}

/* store a rel8 at @field (emitted code) reaching @target (a short forward jump) */
static inline void e_fill8(u8 *field, const u8 *target)
{
	*(u8 *)rv_w(field, 1) = (u8)(target - (field + 1));
}

static inline bool rv_fits32(long v) { return v == (long)(s32)v; }

/* rel32 from the end of a 4-byte field at @field to @target */
static inline s32 rv_rel32(const u8 *field, unsigned long target)
{
	return (s32)(target - ((unsigned long)field + 4));
}

static inline void e_nop5(struct rv_emit *e)
{
	static const u8 nop5[] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	e_bytes(e, nop5, 5);
}

/*
 * Make the rel32 at (p + off) patchable with one store, which x86 makes
 * atomic for a 4-byte access that does not cross a cache line (aligned or
 * not).  Padding sits in the executed path, so it is needed only where the
 * field would cross a line (3 places in 64), and is one nop of the needed
 * length.  Translated read retired 1.29x native's kernel instructions with
 * 4-byte alignment and one-byte nops, 1.19x with one nop, 1.11x with this
 * (bench_dbt.py --insns).  This rule was taken out once, after two oopses
 * at unload under a reload stress at nice 19; their cause was switch-off
 * resuming tasks in the middle of a translation (entry.c), which any
 * padding rule had (bench/results/2026-11-28-switch-off).
 */
static inline void e_align_field(struct rv_emit *e, int off)
{
	static const u8 nops[4][3] = {
		{ 0 }, { 0x90 }, { 0x66, 0x90 }, { 0x0f, 0x1f, 0x00 },
	};
	unsigned int at = ((unsigned long)e->p + off) & 63;
	int n = at > 60 ? 64 - at : 0;

	e_bytes(e, nops[n], n);
}

/* jmp rel32; returns the address of the rel32 field */
static inline u8 *e_jmp(struct rv_emit *e, unsigned long target)
{
	u8 *f;

	e_u8(e, 0xe9);
	f = e->p;
	e_u32(e, rv_rel32(f, target));
	return f;
}

static inline u8 *e_call(struct rv_emit *e, unsigned long target)
{
	u8 *f;

	e_u8(e, 0xe8);
	f = e->p;
	e_u32(e, rv_rel32(f, target));
	return f;
}

/*
 * call from a stub, then clear the return-address slot the call left below
 * %rsp: a stale stub address there could later sit inside a deeper frame's
 * uninitialised slot, and switch-off (which scans whole stacks) would have
 * to keep the code cache for it.  Flags are not touched; no red zone.
 */
static inline void e_call_scrub(struct rv_emit *e, unsigned long target)
{
	static const u8 clr[] = { 0x48, 0xc7, 0x44, 0x24, 0xf8, 0, 0, 0, 0 };	/* movq $0,-8(%rsp) */

	e_call(e, target);
	e_bytes(e, clr, sizeof(clr));
}

/* push $imm32 (sign-extended: kernel text and module addresses fit) */
static inline void e_push_imm(struct rv_emit *e, unsigned long v)
{
	e_u8(e, 0x68);
	e_u32(e, (u32)v);
}

/* lock incq abs32 */
static inline void e_lock_inc(struct rv_emit *e, u64 *ctr)
{
	static const u8 op[] = { 0xf0, 0x48, 0xff, 0x04, 0x25 };
	e_bytes(e, op, 5);
	e_u32(e, (u32)(unsigned long)ctr);
}

/* push/pop of the caller-saved registers (C ABI) minus rax */
static inline void e_push_scratch(struct rv_emit *e)
{
	static const u8 op[] = { 0x51, 0x52, 0x56, 0x57, 0x41, 0x50, 0x41, 0x51,
				 0x41, 0x52, 0x41, 0x53 };
	e_bytes(e, op, sizeof(op));
}

static inline void e_pop_scratch(struct rv_emit *e)
{
	static const u8 op[] = { 0x41, 0x5b, 0x41, 0x5a, 0x41, 0x59, 0x41, 0x58,
				 0x5f, 0x5e, 0x5a, 0x59 };
	e_bytes(e, op, sizeof(op));
}

/* op with a %gs:disp32 memory operand; movq $imm32 to one (stubs_byte.c) */
void e_gs(struct rv_emit *e, u8 rex, u8 op, int reg, u32 disp);
void e_gs_movq_imm(struct rv_emit *e, u32 disp, u32 imm);
#endif
