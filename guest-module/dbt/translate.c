// SPDX-License-Identifier: GPL-2.0
/*
 * Block translator: identity translation of one native basic block into the
 * code cache (thesis 3.2-3.5).
 *
 *  - ordinary instructions are copied; RIP-relative operands get their
 *    displacement recomputed for the new address;
 *  - direct jmp/jcc end the block with rel32 branches to per-exit stubs
 *    (push $target; call chain_miss) that the dispatcher later patches to
 *    jump straight to the translated target (block chaining);
 *  - superblocks (sb=1, identity mode): after a jcc the block goes on with
 *    its fall-through path, so the hot path is laid out as in native code.
 *    Under TCG this matters most: a jcc exit to a block elsewhere in the
 *    cache costs a TB of its own and, across a page, a TB lookup;
 *  - call pushes the *native* return address and jumps to the callee's
 *    translation: stack contents stay native, so unwinders, exception
 *    tables, __builtin_return_address and the kernel's own return-address
 *    tricks keep working (3.5);
 *  - ret and indirect jmp/call go through ind_stub (jumptable lookup);
 *  - instructions that must run at their native address (int3 from kprobes
 *    and text_poke_bp, ud2 of BUG/WARN, loop/jrcxz, far transfers, ...)
 *    end the block with a jump to native code.
 *
 * Every block starts with a 5-byte nop: invalidating a block (text_poke)
 * turns it into a jump back to the dispatcher with one atomic store.
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/vmalloc.h>
#include <linux/spinlock.h>
#include <linux/hash.h>
#include <asm/pgtable_64_types.h>
#include "rv.h"
#include "emit.h"
#include "instrument.h"
#include "crew/crewinstr.h"
#include "rvg_abi.h"
#include "pokebatch.h"

#define HASH_BITS 16
static struct rv_block **hash;
static struct rv_block *blocks;
static unsigned long nblocks;
/*
 * The translator lock: a test-and-set lock inline in this module, irqs
 * saved.  Everything the dispatcher does then shows up in this module's
 * text (the time-share sampling tells "dispatcher" apart from "native
 * kernel"), and byte mode never runs the kernel's qspinlock slow path
 * natively (it would write the kernel's per-CPU qnodes outside CREW).
 */
static int rv_lock;

static __always_inline void rv_spin_lock(void)
{
	while (READ_ONCE(rv_lock) || cmpxchg(&rv_lock, 0, 1))
		cpu_relax();
}

static __always_inline void rv_spin_unlock(void)
{
	smp_store_release(&rv_lock, 0);
}
#define rv_lock_irqsave(f)	do { local_irq_save(f); rv_spin_lock(); } while (0)
#define rv_unlock_irqrestore(f)	do { rv_spin_unlock(); local_irq_restore(f); } while (0)
DEFINE_PER_CPU(struct rv_stats, rv_pcpu_stats);
bool rv_active;
bool rv_callret = true;
bool rv_superblock = true;
atomic64_t rv_fixups, rv_fixup_miss;

unsigned long rv_nblocks(void)
{
	return READ_ONCE(nblocks);
}

static inline unsigned int hfn(unsigned long a)
{
	return hash_long(a, HASH_BITS);
}

static bool in_text(unsigned long pc, const struct module_layout *l)
{
	return pc >= (unsigned long)l->base &&
	       pc < (unsigned long)l->base + l->text_size;
}

bool rv_translatable(unsigned long pc)
{
	struct module *mod;
	bool ok = false;

	/*
	 * ftrace's trampolines find the traced function from their return
	 * address: native only where calls push cache addresses (callret).
	 * Byte mode pushes native ones, and must not run kernel text natively
	 * (the kretprobes of coherence.c are ftrace-based).
	 */
	if (!rv_byte && pc >= rv_k.ftrace_lo && pc < rv_k.ftrace_hi)
		return false;
	if (pc >= rv_k.stext && pc < rv_k.etext)
		return true;
	if (rv_byte && rv_k.is_ftrace_trampoline && pc >= MODULES_VADDR && pc < MODULES_END) {
		if (rv_tramp_known(pc))
			return true;
		if (rv_k.is_ftrace_trampoline(pc)) {
			rv_tramp_note(pc);
			return true;
		}
	}
	preempt_disable();
	mod = rv_k.module_text_address(pc);
	/*
	 * Its exit function runs while the module is GOING, and its init
	 * from init text while it is COMING; run natively, they would skip
	 * byte CREW's checks and det points.  mod_event() drops the
	 * translations of init text when the module goes LIVE, and of all
	 * its text at the GOING notification, after the exit function and
	 * before the kernel frees the module.
	 */
	if (mod && mod != THIS_MODULE && mod->state != MODULE_STATE_UNFORMED &&
	    in_text(pc, &mod->core_layout))
		ok = true;
	if (mod && mod != THIS_MODULE && mod->state == MODULE_STATE_COMING &&
	    in_text(pc, &mod->init_layout))
		ok = true;
	preempt_enable();
	return ok;
}

static struct rv_block *lookup(unsigned long pc)
{
	struct rv_block *b;

	for (b = smp_load_acquire(&hash[hfn(pc)]); b; b = READ_ONCE(b->next))
		if (b->native == pc && !READ_ONCE(b->dead))
			return b;
	return NULL;
}

struct exit {
	u8 *field;		/* rel32 to patch */
	unsigned long target;
};

static bool uses_rsp(struct insn *insn)
{
	u8 modrm = insn->modrm.bytes[0];
	u8 rex = insn->rex_prefix.nbytes ? insn->rex_prefix.bytes[0] : 0;

	if (X86_MODRM_MOD(modrm) == 3)
		return X86_MODRM_RM(modrm) == 4 && !X86_REX_B(rex);
	if (X86_MODRM_RM(modrm) == 4)	/* SIB */
		return X86_SIB_BASE(insn->sib.bytes[0]) == 4 && !X86_REX_B(rex);
	return false;
}

static bool rip_relative(struct insn *insn)
{
	u8 modrm = insn->modrm.bytes[0];

	return insn->modrm.nbytes && X86_MODRM_MOD(modrm) == 0 &&
	       X86_MODRM_RM(modrm) == 5;
}

/* the reg field of the emitted modrm byte at @modrm := @reg */
static void rv_set_reg(u8 *modrm, int reg)
{
	u8 *w = rv_w(modrm, 1);

	*w = (*w & ~0x38) | (reg << 3);
}

/* copy @insn from @pc to e->p, fixing a RIP-relative displacement */
static bool copy_insn(struct rv_emit *e, struct insn *insn, unsigned long pc)
{
	u8 *out = e->p, *w = rv_w(out, insn->length);

	memcpy(w, (void *)pc, insn->length);
	if (rip_relative(insn)) {
		int off = insn_offset_displacement(insn);
		unsigned long tgt = pc + insn->length + insn->displacement.value;
		long disp = (long)tgt - (long)((unsigned long)out + insn->length);
		s32 d = (s32)disp;

		if (!rv_fits32(disp))
			return false;
		memcpy(w + off, &d, 4);
	}
	e->p += insn->length;
	return true;
}

static void native_exit(struct rv_emit *e, unsigned long pc)
{
	if (rv_byte) {
		/* counted: native code is neither instrumented nor has det points */
		e_u8(e, 0x9c);
		e_lock_inc(e, &rv_byte_native_exits);
		e_u8(e, 0x9d);
	}
	e_push_imm(e, pc);
	e_u8(e, 0xc3);
}

/* jmp rel32 with its field 4-byte aligned, recorded as an exit */
static void jmp_exit(struct rv_emit *e, struct exit *x, int *nx, unsigned long tgt)
{
	e_align_field(e, 1);
	x[*nx].field = e_jmp(e, 0);
	x[(*nx)++].target = tgt;
}

static void jcc_exit(struct rv_emit *e, struct exit *x, int *nx, int cc, unsigned long tgt)
{
	e_align_field(e, 2);
	e_u8(e, 0x0f);
	e_u8(e, 0x80 | cc);
	x[*nx].field = e->p;
	e_u32(e, 0);
	x[(*nx)++].target = tgt;
}

/*
 * callret=0: a call pushes the native return address and jumps to the
 * callee's translation; a call into native code goes through rv_ind_call,
 * which brings the return back to the cache.
 */
static void call_exit(struct rv_emit *e, struct exit *x, int *nx, unsigned long tgt,
		      unsigned long next)
{
	e_push_imm(e, next);
	if (rv_byte && !rv_translatable(tgt) &&
	    !(tgt >= rv_k.ftrace_lo && tgt < rv_k.ftrace_hi)) {
		e_push_imm(e, tgt);
		e_jmp(e, rv_ind_call);
		return;
	}
	jmp_exit(e, x, nx, tgt);
}

/* a site's jump to @tgt: a back edge's det point first if it goes back */
static void branch_exit(struct rv_emit *e, struct exit *x, int *nx, struct insn *insn,
			unsigned long pc, unsigned long tgt)
{
	if (tgt <= pc && rv_instr->detpoint)
		rv_instr->detpoint(e, insn, pc, RV_DP_BACKEDGE);
	jmp_exit(e, x, nx, tgt);
}

/*
 * A jcc's exits: the taken one, then, unless superblocks go on with the
 * fall-through path, a jmp to it that ends the block (returns true).
 */
static bool jcc_exits(struct rv_emit *e, struct exit *x, int *nx, int cc,
		      unsigned long tgt, unsigned long next)
{
	jcc_exit(e, x, nx, cc, tgt);
	if (rv_superblock)
		return false;
	jmp_exit(e, x, nx, next);
	return true;
}

/*
 * Byte mode: exits of entry code may run before its swapgs, on the user's
 * gs, where chain_miss (which uses this CPU's slots) cannot run.  They are
 * linked right after the block is translated (get_block), translating their
 * targets in entry text at once.
 */
#define MAX_EAGER 64
static struct eager_exit {
	struct exit x;
	u64 *slot;		/* where the exit's stub jumps through */
} eager[MAX_EAGER];
static int n_eager;
static unsigned long entry_lo, entry_hi;

static bool in_entry_text(unsigned long a)
{
	return a >= entry_lo && a < entry_hi;
}

/* rel32 target for an exit: existing translation, the native code, or a stub */
static void link_exit(struct rv_emit *e, struct exit *x, unsigned long pc0)
{
	struct rv_block *t = lookup(x->target);
	unsigned long dst;
	u8 *stub;

	if (t) {
		dst = t->cache;
	} else if (!rv_translatable(x->target)) {
		dst = x->target;
	} else if (rv_byte && in_entry_text(pc0) && in_entry_text(x->target) &&
		   n_eager < MAX_EAGER) {
		/*
		 * Until get_block links it, the exit goes to a stub that
		 * jumps through its slot, which points back at the stub: the
		 * block is in the hash table before the link, so another CPU
		 * may already run it, and the native target would run entry
		 * code untranslated (seen: a replay that returned from an
		 * interrupt through native restore_regs_and_return_to_kernel,
		 * about one in three under load).  No stack, no gs; the spin
		 * reads the slot as data, so it ends even where the patched
		 * rel32 is not seen at once as code.
		 */
		e_align_cc(e, 16);
		stub = e->p;
		e_u8(e, 0xff); e_u8(e, 0x25); e_u32(e, 2);	/* jmp *slot(%rip) */
		e_u8(e, 0xcc); e_u8(e, 0xcc);
		eager[n_eager].slot = (u64 *)e->p;
		e_u64(e, (u64)(unsigned long)stub);		/* slot */
		eager[n_eager++].x = *x;
		dst = (unsigned long)stub;
	} else if (rv_byte) {
		/* no stack: the target and the field to patch in this CPU's slots */
		e_align_cc(e, 16);
		stub = e->p;
		e_gs_movq_imm(e, RV_GS(x_target), (u32)x->target);
		e_gs_movq_imm(e, RV_GS(x_field), (u32)(unsigned long)x->field);
		e_jmp(e, rv_cache->chain_miss);
		dst = (unsigned long)stub;
	} else {
		e_align_cc(e, 16);
		stub = e->p;
		e_push_imm(e, x->target);
		e_call(e, rv_cache->chain_miss);
		e_bytes(e, "\xcc\xcc\xcc\xcc\xcc\xcc", 6);
		e_u64(e, (u64)(unsigned long)x->field);
		dst = (unsigned long)stub;
	}
	e_fill32(x->field, dst);
}

/*
 * Byte mode: a translated iretq to kernel mode resumes through kret_tramp
 * (a fixed address) with the native rip in this CPU's kret_native slot:
 * the frame left behind on the stack holds nothing cache-dependent.
 */
static void emit_iret_byte(struct rv_emit *e, struct insn *insn, unsigned long pc)
{
	static const u8 test[] = { 0xf6, 0x44, 0x24, 0x08, 0x03, 0x75, 0 };	/* testb $3,8(%rsp); jnz 1f */
	static const u8 ld[] = { 0x50, 0x48, 0x8b, 0x44, 0x24, 0x08 };	/* push %rax; mov 8(%rsp),%rax */
	static const u8 st[] = { 0x48, 0xc7, 0x44, 0x24, 0x08 };	/* movq $imm,8(%rsp) */
	u8 *j;

	e_bytes(e, test, sizeof(test));
	j = e->p - 1;
	e_bytes(e, ld, sizeof(ld));
	e_gs(e, 0x48, 0x89, 0, RV_GS(kret_native));	/* mov %rax,%gs:kret_native */
	e_bytes(e, st, sizeof(st));
	e_u32(e, (u32)rv_cache->kret_fix);
	e_u8(e, 0x58);					/* pop %rax */
	e_fill8(j, e->p);
	copy_insn(e, insn, pc);				/* 1: iretq */
}

/* byte mode, callret=0: ret $n -> the target moved up n bytes, jumptable */
static void emit_ret_imm_byte(struct rv_emit *e, u16 n)
{
	static const u8 ld[] = { 0x50, 0x48, 0x8b, 0x44, 0x24, 0x08 };	/* push %rax; mov 8(%rsp),%rax */

	e_bytes(e, ld, sizeof(ld));
	e_u8(e, 0x48); e_u8(e, 0x89); e_u8(e, 0x84); e_u8(e, 0x24);	/* mov %rax,8+n(%rsp) */
	e_u32(e, 8 + n);
	e_u8(e, 0x58);						/* pop %rax */
	e_u8(e, 0x48); e_u8(e, 0x8d); e_u8(e, 0xa4); e_u8(e, 0x24);	/* lea n(%rsp),%rsp */
	e_u32(e, n);
	e_jmp(e, rv_cache->ind_stub);
}

/*
 * push %rcx; movabs $key,%rcx; [check] @ld (a load from (%rcx) into
 * %rcx, counted as @pc's access); [release]; jrcxz 1f.  Returns the
 * jrcxz's rel8 for the caller to fill with its label 1.
 */
static u8 *emit_key_read(struct rv_emit *e, unsigned long key, const u8 *ld, int n,
			 unsigned long pc, struct insn *insn)
{
	bool instr;
	u8 *jz;

	rv_k.insn_decode(insn, ld, n, INSN_MODE_64);
	e_u8(e, 0x51);					/* push %rcx */
	e_u8(e, 0x48); e_u8(e, 0xb9); e_u64(e, key);	/* movabs $key,%rcx */
	instr = rv_instrument_read(e, insn, pc);
	e_bytes(e, ld, n);
	if (instr)
		rv_instrument_read_post(e, insn, pc);
	e_u8(e, 0xe3); jz = e->p; e_u8(e, 0);		/* jrcxz 1f */
	return jz;
}

/*
 * Byte and training mode: a jump-label site (jumplabel.c) becomes a read
 * of its key, ordered by CREW like any other access, and a jump when
 * (key->enabled != 0) ^ branch; never its bytes, which another vCPU may
 * be rewriting.  An arm that goes backwards is a back edge's det point.
 *
 *	push %rcx; movabs $key,%rcx; [check] mov (%rcx),%ecx; [release]
 *	jrcxz 1f; pop %rcx; jmp <enabled arm>; 1: pop %rcx; jmp <disabled arm>
 */
static void emit_jump_label(struct rv_emit *e, struct exit *x, int *nx,
			    const struct rv_jl_site *s)
{
	static const u8 ld[] = { 0x8b, 0x09 };		/* mov (%rcx),%ecx */
	unsigned long next = s->pc + s->len, arm[2];
	struct insn insn;
	u8 *jz;
	int k;

	arm[1] = s->branch ? next : s->target;		/* enabled */
	arm[0] = s->branch ? s->target : next;		/* disabled */
	jz = emit_key_read(e, s->key, ld, sizeof(ld), s->pc, &insn);
	for (k = 1; k >= 0; k--) {
		if (!k)
			e_fill8(jz, e->p);
		e_u8(e, 0x59);				/* pop %rcx */
		branch_exit(e, x, nx, &insn, s->pc, arm[k]);
	}
	rv_stat_inc(jl_sites);
}

/*
 * Byte mode (callret=0): a static-call site (staticcall.c) becomes a
 * CREW-ordered read of key->func and what the kernel would have patched
 * there for that value.  The target the key held when the block was
 * translated is called directly, as a call rel32 would be (cond_resched
 * is a static call, met in every loop that may sleep); any other goes
 * through the dispatcher.  Either way the same function runs, so which
 * path a vCPU takes (it depends on when its block was translated) is not
 * part of what a replay must repeat.
 *
 *	push %rcx; movabs $key,%rcx; [check] mov (%rcx),%rcx; [release]
 *	jrcxz 1f; cmp $then,%rcx; jne 2f; pop %rcx
 *	call: push $next; jmp <then>		tail: jmp <then>
 *	2: push %rcx; mov 8(%rsp),%rcx
 *	call: movq $next,8(%rsp); jmp ind_call	tail: pop (%rsp); jmp ind_stub
 *	1: pop %rcx; call: jmp <next> (nop)	tail: jmp ind_stub (ret)
 */
static void emit_static_call(struct rv_emit *e, struct exit *x, int *nx,
			     const struct rv_sc_site *s)
{
	static const u8 ld[] = { 0x48, 0x8b, 0x09 };	/* mov (%rcx),%rcx */
	static const u8 restore[] = { 0x51, 0x48, 0x8b, 0x4c, 0x24, 0x08 };
	static const u8 ret_at[] = { 0x48, 0xc7, 0x44, 0x24, 0x08 };	/* movq $imm,8(%rsp) */
	static const u8 pop_top[] = { 0x8f, 0x04, 0x24 };	/* pop (%rsp) */
	static const u8 cmp_rcx[] = { 0x48, 0x81, 0xf9 };	/* cmp $imm32,%rcx */
	unsigned long next = s->pc + 5;
	/* struct static_call_key: func comes first */
	unsigned long then = READ_ONCE(*(const unsigned long *)s->key);
	struct insn insn;
	u8 *jz, *jne;

	jz = emit_key_read(e, s->key, ld, sizeof(ld), s->pc, &insn);
	if (then && rv_fits32(then) && rv_translatable(then)) {
		e_bytes(e, cmp_rcx, sizeof(cmp_rcx));
		e_u32(e, (u32)then);
		e_u8(e, 0x75); jne = e->p; e_u8(e, 0);	/* jne 2f */
		e_u8(e, 0x59);				/* pop %rcx */
		if (!s->tail)
			e_push_imm(e, next);
		jmp_exit(e, x, nx, then);
		e_fill8(jne, e->p);
		rv_stat_inc(sc_direct);
	}
	e_bytes(e, restore, sizeof(restore));		/* push %rcx; mov 8(%rsp),%rcx */
	if (s->tail) {
		e_bytes(e, pop_top, sizeof(pop_top));
		e_jmp(e, rv_cache->ind_stub);
	} else {
		e_bytes(e, ret_at, sizeof(ret_at));
		e_u32(e, (u32)next);
		e_jmp(e, rv_ind_call);
	}
	e_fill8(jz, e->p);
	e_u8(e, 0x59);					/* 1: pop %rcx */
	if (s->tail)
		e_jmp(e, rv_cache->ind_stub);
	else
		jmp_exit(e, x, nx, next);
	rv_stat_inc(sc_sites);
}

/*
 * Byte mode, at do_sync_core (text_poke_bp's IPI, run on every CPU): count
 * the sync in this CPU's poke_seen, from zero for a new batch (rv_pb_tag
 * holds the batch in its high bits).  A function's entry: flags are dead.
 *
 *	push %rax; push %rcx; movabs rv_pb_tag,%rax; mov %gs:poke_seen,%rcx
 *	cmp %rax,%rcx; cmovb %rax,%rcx; lea 1(%rcx),%rcx
 *	mov %rcx,%gs:poke_seen; pop %rcx; pop %rax
 */
static void emit_sync_count(struct rv_emit *e)
{
	static const u8 cnt[] = { 0x48, 0x39, 0xc1, 0x48, 0x0f, 0x42, 0xc8, 0x48, 0x8d, 0x49, 0x01 };

	e_u8(e, 0x50);
	e_u8(e, 0x51);
	e_u8(e, 0x48); e_u8(e, 0xa1); e_u64(e, (u64)(unsigned long)&rv_pb_tag);
	e_gs(e, 0x48, 0x8b, 1, RV_GS(poke_seen));
	e_bytes(e, cnt, sizeof(cnt));
	e_gs(e, 0x48, 0x89, 1, RV_GS(poke_seen));
	e_u8(e, 0x59);
	e_u8(e, 0x58);
	rv_stat_inc(pb_sync_sites);
}

/* one arm of a poked site: what the instruction @in at @s does */
static void poke_arm(struct rv_emit *e, struct exit *x, int *nx, const struct rv_pb_site *s,
		     const struct rv_pb_insn *in)
{
	unsigned long next = s->pc + s->len;
	struct insn none = {};

	switch (in->kind) {
	case RV_PB_CALL:
		call_exit(e, x, nx, in->target, next);
		break;
	case RV_PB_JMP:
		branch_exit(e, x, nx, &none, s->pc, in->target);
		break;
	case RV_PB_RET:
		e_jmp(e, rv_cache->ind_stub);
		break;
	default:
		jmp_exit(e, x, nx, next);
	}
}

/*
 * Byte mode: a site of the text-poke batch in flight (pokebatch.c), never
 * from its bytes: the new instruction once this CPU has run the batch's
 * last sync, the old one before.  Flags kept (an optprobe's jmp may be
 * anywhere).
 *
 *	pushf; push %rcx; movabs $thr,%rcx; cmp %rcx,%gs:poke_seen; pop %rcx
 *	jb 1f; popf; <new>; 1: popf; <old>
 */
static void emit_poke_site(struct rv_emit *e, struct exit *x, int *nx,
			   const struct rv_pb_site *s, u64 thr)
{
	u8 *jb;

	e_u8(e, 0x9c);
	e_u8(e, 0x51);
	e_u8(e, 0x48); e_u8(e, 0xb9); e_u64(e, thr);
	e_gs(e, 0x48, 0x39, 1, RV_GS(poke_seen));
	e_u8(e, 0x59);
	jb = e_jcc32(e, 0x2);
	e_u8(e, 0x9d);
	poke_arm(e, x, nx, s, &s->new);
	e_fill32(jb, (unsigned long)e->p);
	e_u8(e, 0x9d);
	poke_arm(e, x, nx, s, &s->old);
	rv_stat_inc(pb_sites);
}

#define MAX_EXITS (RV_MAX_INSNS + 4)
/* byte CREW: up to ~150 bytes of instrumentation per instruction */
#define BLOCK_MAX_BYTES (RV_MAX_INSNS * 224 + MAX_EXITS * 40 + 64)

/* translate the block at @pc; rv_lock held */
static struct rv_block *translate(unsigned long pc0)
{
	struct rv_block *b;
	struct exit x[MAX_EXITS];
	struct rv_emit e;
	struct insn insn;
	unsigned long pc = pc0;
	u8 *start;
	int nx = 0, i, follows = 0;
	unsigned long nlo = pc0, nhi = pc0 + 1;
	struct rv_jl_site jl;
	struct rv_sc_site sc;
	const struct rv_pokebatch *pb = rv_byte ? rv_pokes_live() : NULL;
	const struct rv_pb_site *ps;
	bool done = false;

	if (nblocks >= RV_MAX_BLOCKS)
		return NULL;
	start = rv_cache_alloc(BLOCK_MAX_BYTES + 8, 8);
	if (!start)
		return NULL;
	rv_stage_begin(start, BLOCK_MAX_BYTES + 8);
	memcpy(rv_w(start, 8), &pc0, 8);	/* header: native address (fast-table key) */
	start += 8;
	b = &blocks[nblocks];
	memset(b, 0, sizeof(*b));
	e.p = start;
	e_nop5(&e);

	for (i = 0; i < RV_MAX_INSNS && !done; i++) {
		u8 op0, op1, reg;
		unsigned long next, tgt;
		bool instr_mem;

		b->map[i].coff = e.p - start;
		b->map[i].noff = pc - pc0;
		nlo = min(nlo, pc);
		nhi = max(nhi, pc + MAX_INSN_SIZE);
		b->ninsn = i + 1;
		if (pc == rv_k.do_sync_core && rv_byte)
			emit_sync_count(&e);
		if (rv_jl_find(pc, &jl)) {
			emit_jump_label(&e, x, &nx, &jl);
			done = true;
			continue;
		}
		if (rv_sc_find(pc, &sc)) {
			emit_static_call(&e, x, &nx, &sc);
			done = true;
			continue;
		}
		if (pb && (ps = rv_pb_find(pb, pc))) {
			emit_poke_site(&e, x, &nx, ps, pb->thr);
			done = true;
			continue;
		}
		if (rv_decode(&insn, pc)) {
			native_exit(&e, pc);
			rv_stat_inc(fallbacks);
			break;
		}
		next = pc + insn.length;
		op0 = insn.opcode.bytes[0];
		op1 = insn.opcode.nbytes > 1 ? insn.opcode.bytes[1] : 0;
		reg = insn.modrm.nbytes ? X86_MODRM_REG(insn.modrm.bytes[0]) : 0;
		tgt = next + insn.immediate.value;
		instr_mem = rv_instrument(&e, &insn, pc, next);

		switch (op0) {
		case 0xe8:				/* call rel32 */
			if (rv_callret && rv_translatable(tgt)) {
				/* identity: pushes the code-cache return address,
				 * the block goes on after it (thesis 3.3).  Calls
				 * into native code (ftrace/BPF trampolines, which
				 * find their caller from the return address) push
				 * the native one below. */
				e_align_field(&e, 1);
				e_u8(&e, 0xe8);
				x[nx].field = e.p;
				x[nx++].target = tgt;
				e_u32(&e, 0);
				break;
			}
			call_exit(&e, x, &nx, tgt, next);
			done = true;
			break;
		case 0xe9: case 0xeb:			/* jmp rel */
			/* follow it (also keeps the syscall entry's first block,
			 * which runs on the user stack, free of exit stubs) */
			if (follows < 4 && rv_translatable(tgt) &&
			    tgt - pc0 + 0x7fff0000UL < 0xfffe0000UL) {
				follows++;
				pc = tgt;
				continue;
			}
			jmp_exit(&e, x, &nx, tgt);
			done = true;
			break;
		case 0x70 ... 0x7f:			/* jcc rel8 */
			done = jcc_exits(&e, x, &nx, op0 & 0xf, tgt, next);
			break;
		case 0xc3:				/* ret */
			if (rv_callret)
				copy_insn(&e, &insn, pc);
			else
				e_jmp(&e, rv_cache->ind_stub);
			done = true;
			break;
		case 0xc2:				/* ret imm16 */
			if (!rv_callret && rv_byte) {
				emit_ret_imm_byte(&e, (u16)insn.immediate.value);
				done = true;
				break;
			}
			if (!rv_callret)
				goto fallback;
			copy_insn(&e, &insn, pc);
			done = true;
			break;
		case 0xcf:				/* iret */
			if (rv_byte) {
				emit_iret_byte(&e, &insn, pc);
				done = true;
				break;
			}
			/* to kernel mode: let kret_fix move the frame's rip into
			 * the cache (the iretq itself stays mapped to the native
			 * one: error_entry recognises a faulting iret by rip) */
			e_u8(&e, 0xf6); e_u8(&e, 0x44); e_u8(&e, 0x24); e_u8(&e, 0x08); e_u8(&e, 0x03);
			e_u8(&e, 0x75); e_u8(&e, 0x0e);	/* testb $3,8(%rsp); jnz 1f */
			/* scrubbed: a stale return address into the cache left
			 * on the stack looks to switch-off like a task in flight */
			e_call_scrub(&e, rv_cache->kret_fix);
			copy_insn(&e, &insn, pc);	/* 1: iretq */
			done = true;
			break;
		case 0xff:
			if (reg == 2 || reg == 4) {	/* call/jmp *r/m */
				u8 *modrm;

				if (uses_rsp(&insn) && !(rv_byte && !rv_callret)) {
					native_exit(&e, pc);
					rv_stat_inc(fallbacks);
					done = true;
					break;
				}
				if (rv_byte && !rv_callret) {
					/* push r/m first (its address may use %rsp) */
					modrm = e.p + (insn.prefixes.nbytes + insn.rex_prefix.nbytes +
						       insn.opcode.nbytes);
					if (!copy_insn(&e, &insn, pc))
						goto bad;
					rv_set_reg(modrm, 6);
					if (instr_mem)
						rv_instrument_post(&e, &insn, pc);
					if (reg == 2) {
						/* push (%rsp); movq $next,8(%rsp) */
						static const u8 dup[] = { 0xff, 0x34, 0x24 };
						static const u8 mov[] = { 0x48, 0xc7, 0x44, 0x24, 0x08 };

						e_bytes(&e, dup, sizeof(dup));
						e_bytes(&e, mov, sizeof(mov));
						e_u32(&e, (u32)next);
					}
					e_jmp(&e, reg == 2 ? rv_ind_call : rv_cache->ind_stub);
					done = true;
					break;
				}
				if (reg == 2 && rv_callret) {
					/* lea -8(%rsp),%rsp; push r/m;
					 * movq $cont,8(%rsp); jmp ind_stub; cont: */
					static const u8 lea[] = { 0x48, 0x8d, 0x64, 0x24, 0xf8 };
					static const u8 mov[] = { 0x48, 0xc7, 0x44, 0x24, 0x08 };
					u8 *imm;

					e_bytes(&e, lea, sizeof(lea));
					modrm = e.p + (insn.prefixes.nbytes + insn.rex_prefix.nbytes +
						       insn.opcode.nbytes);
					if (!copy_insn(&e, &insn, pc))
						goto bad;
					rv_set_reg(modrm, 6);
					e_bytes(&e, mov, sizeof(mov));
					imm = e.p;
					e_u32(&e, 0);
					e_jmp(&e, rv_cache->ind_stub);
					*(u32 *)rv_w(imm, 4) = (u32)(unsigned long)e.p;
					break;		/* the block goes on at cont */
				}
				if (reg == 2)
					e_push_imm(&e, next);
				modrm = e.p + (insn.prefixes.nbytes + insn.rex_prefix.nbytes +
					       insn.opcode.nbytes);
				if (!copy_insn(&e, &insn, pc))
					goto bad;
				rv_set_reg(modrm, 6);	/* -> push r/m */
				e_jmp(&e, rv_cache->ind_stub);
				done = true;
				break;
			}
			if (reg == 3 || reg == 5)
				goto fallback;
			goto copy;
		case 0xe0 ... 0xe3:			/* loop, jrcxz */
			if (rv_byte && !insn.prefixes.nbytes) {
				/* loop/jrcxz L1; jmp L2; L1: jmp exit(target); L2: jmp exit(next) */
				u8 *k;

				e_u8(&e, op0); e_u8(&e, 0x02);
				e_u8(&e, 0xeb); k = e.p; e_u8(&e, 0);
				jmp_exit(&e, x, &nx, tgt);
				e_fill8(k, e.p);
				jmp_exit(&e, x, &nx, next);
				done = true;
				break;
			}
			goto fallback;
		case 0xcc:				/* int3 */
			/*
			 * Byte mode: not a batch's (those sites are
			 * translated from pokebatch.c's table), so a kprobe
			 * inside a function, armed by text_poke alone: its
			 * handler resumes natively and the kernel would never
			 * come back to the cache.  The recording or replay
			 * stops, saying where.
			 */
			if (rv_byte && READ_ONCE(rv_active))
				rv_byte_error(RVG_ERR_INT3, pc);
			goto fallback;
		case 0xca: case 0xcb:			/* far ret */
		case 0xcd: case 0xce: case 0xf1:	/* int, into, int1 */
		case 0xea: case 0x9a:
			goto fallback;
		case 0xc7:
			if (insn.modrm.bytes[0] == 0xf8)	/* xbegin */
				goto fallback;
			goto copy;
		case 0x0f:
			if (op1 >= 0x80 && op1 <= 0x8f) {	/* jcc rel32 */
				done = jcc_exits(&e, x, &nx, op1 & 0xf, tgt, next);
				break;
			}
			if (op1 == 0x0b || op1 == 0xb9 || op1 == 0xff ||	/* ud2/ud1/ud0 */
			    op1 == 0x05 || op1 == 0x34 || op1 == 0x35)		/* syscall/sysenter/sysexit */
				goto fallback;
			if (op1 == 0x07) {			/* sysret */
				copy_insn(&e, &insn, pc);
				done = true;
				break;
			}
			goto copy;
		default:
copy:
			if (!copy_insn(&e, &insn, pc))
				goto bad;
			if (instr_mem)
				rv_instrument_post(&e, &insn, pc);
			break;
		}
		pc = next;
		continue;
bad:
		e.p = start + b->map[i].coff;
fallback:
		native_exit(&e, pc);
		rv_stat_inc(fallbacks);
		done = true;
	}
	if (!done) {
		/* may be a return site (after a call): map it */
		b->map[b->ninsn].coff = e.p - start;
		b->map[b->ninsn].noff = pc - pc0;
		b->ninsn++;
		jmp_exit(&e, x, &nx, pc);
	}

	b->native = pc0;
	/* conservative: also covers an instruction left to run natively */
	b->nlo = nlo;
	b->nhi = max(nhi, pc + MAX_INSN_SIZE);
	b->native_len = b->nhi - pc0;
	b->cache = (unsigned long)start;
	for (i = 0; i < nx; i++)
		link_exit(&e, &x[i], pc0);
	b->cache_len = e.p - start;
	BUG_ON(b->cache_len > BLOCK_MAX_BYTES);
	rv_stage_commit(e.p);
	/* give back the unused tail of the reservation */
	rv_cache->used = (unsigned long)e.p - (unsigned long)rv_cache->base;

	b->next = hash[hfn(pc0)];
	smp_store_release(&nblocks, nblocks + 1);
	smp_store_release(&hash[hfn(pc0)], b);
	rv_stat_inc(blocks);
	return b;
}

static struct rv_block *get_block(unsigned long pc)
{
	struct rv_block *b = lookup(pc);
	unsigned long flags;

	if (b)
		return b;
	rv_lock_irqsave(flags);
	b = lookup(pc);
	if (!b) {
		b = translate(pc);
		if (!b) {
			rv_stat_inc(cache_full);
			/* run natively, the kernel would skip CREW and det
			 * points: a recording or replay stops, saying why */
			if (rv_byte && READ_ONCE(rv_active))
				rv_byte_error(RVG_ERR_CACHE_FULL, pc);
		}
	}
	/* byte mode: entry code's exits to entry code, linked now */
	while (n_eager) {
		struct eager_exit ex = eager[--n_eager];
		struct rv_block *t = lookup(ex.x.target);
		unsigned long dst;

		if (!t)
			t = translate(ex.x.target);
		/* cache full: native (counted), not a spin forever */
		dst = t ? t->cache : ex.x.target;
		WRITE_ONCE(*ex.slot, dst);
		*(s32 *)ex.x.field = rv_rel32(ex.x.field, dst);
	}
	rv_unlock_irqrestore(flags);
	return b;
}

unsigned long rv_lookup_or_translate(unsigned long target)
{
	struct rv_block *b;

	if (rv_in_cache(target))
		return target;
	if (!rv_translatable(target)) {
		rv_stat_inc(native_exits);
		return target;
	}
	b = get_block(target);
	return b ? b->cache : target;
}

/* the block for @target, translated on first use, in the fast table */
static unsigned long dispatch_lookup(unsigned long target)
{
	unsigned long dest = rv_lookup_or_translate(target);

	rv_stat_inc(dispatch);
	if (dest != target && !rv_in_cache(target))
		WRITE_ONCE(rv_cache->ft_vals[rv_ft_index(target)], dest);
	return dest;
}

/* chain the branch whose rel32 is at @field to @dest, when in reach */
static void chain_to(s32 *field, unsigned long dest)
{
	if (rv_fits32((long)dest - (long)((unsigned long)field + 4))) {
		WRITE_ONCE(*field, rv_rel32((u8 *)field, dest));
		rv_stat_inc(chains);
	}
}

/*
 * The dispatcher (called from ind_slow and chain_miss): translate on first
 * use, fill the fast table, chain the direct branch that got us here.
 */
unsigned long rv_dispatch(unsigned long target, unsigned long stub_ret)
{
	unsigned long dest = dispatch_lookup(target);

	if (stub_ret)
		chain_to((s32 *)*(u64 *)(stub_ret + 6), dest);
	return dest;
}

/*
 * Byte mode: called from chain_miss (x_target, x_field: chain that exit)
 * and ind_slow (field 0), on the private stack.
 */
unsigned long rv_dispatch_b(unsigned long target, unsigned long field)
{
	unsigned long dest = dispatch_lookup(target);

	if (field && rv_in_cache(field))
		chain_to((s32 *)field, dest);
	return dest;
}

unsigned long rv_dispatch_ind(unsigned long target, unsigned long *ksp)
{
	return rv_dispatch_b(target, 0);
}

/*
 * Calls into native code in progress, keyed by the stack pointer the
 * callee returns with (unique while the call lasts: one task's stack, one
 * depth).  Not per CPU: a native callee may sleep (a new module's init
 * takes mutexes) and come back on another CPU, or after other tasks made
 * and finished native calls of their own on this one; a per-CPU stack of
 * them stopped every byte-CREW recording that loaded a module.  A slot
 * whose call never returned (its task died inside) is taken over by the
 * next call made at the same stack pointer, which can only be a new one.
 */
#define RV_NCALLS	256
static struct rv_ncall {
	unsigned long rsp;		/* 0: free */
	unsigned long ret;		/* native return address */
	bool own;			/* callee is this module's */
} rv_ncalls[RV_NCALLS];

static struct rv_ncall *ncall_slot(unsigned int i)
{
	return &rv_ncalls[i & (RV_NCALLS - 1)];
}

/* the slot for a call returning with @rsp: the one it had, else a free one */
static struct rv_ncall *ncall_get(unsigned long rsp)
{
	unsigned int h = hash_long(rsp >> 3, 8), i;
	struct rv_ncall *free = NULL;

	for (i = 0; i < RV_NCALLS; i++) {
		struct rv_ncall *n = ncall_slot(h + i);
		unsigned long r = READ_ONCE(n->rsp);

		if (r == rsp) {
			if (free)
				smp_store_release(&free->rsp, 0);
			return n;
		}
		if (!r && !free && !cmpxchg(&n->rsp, 0, rsp))
			free = n;
	}
	return free;
}

static struct rv_ncall *ncall_find(unsigned long rsp)
{
	unsigned int h = hash_long(rsp >> 3, 8), i;

	for (i = 0; i < RV_NCALLS; i++)
		if (READ_ONCE(ncall_slot(h + i)->rsp) == rsp)
			return ncall_slot(h + i);
	return NULL;
}

/*
 * Byte mode, a call (ksp[0] = target, ksp[1] = native return address):
 * a target outside translatable code returns to ret_tramp instead, which
 * finds the native return address in rv_ncalls.
 */
unsigned long rv_dispatch_call(unsigned long target, unsigned long *ksp)
{
	unsigned long dest = rv_dispatch_b(target, 0);
	struct rv_ncall *n;

	if (rv_in_cache(dest) || (target >= rv_k.ftrace_lo && target < rv_k.ftrace_hi))
		return dest;
	n = ncall_get((unsigned long)(ksp + 2));
	if (!n) {
		this_cpu_inc(rv_vcpu.stats[RV_BS_NATIVE_EXIT]);	/* it returns natively */
		return dest;
	}
	n->ret = ksp[1];
	n->own = within_module_core(target, THIS_MODULE);
	if (!n->own) {
		/* kernel code run natively: no checks, no det points */
		atomic64_inc(&rv_byte_foreign_calls);
		WRITE_ONCE(rv_byte_foreign_last, target);
	}
	ksp[1] = rv_ret_tramp;
	return dest;
}

/*
 * ret_tramp: @frame = the registers it pushed (r11, r10, r9, r8, rdi, rsi,
 * rdx, rcx, rax), then the slot for the return address.
 *
 * The callee's leftovers in registers the C ABI leaves dead after a call
 * are cleared, and so are the slots that hold them here.  This module's
 * callbacks (text_poke's kretprobes) leave code-cache addresses and
 * patched block entries in them, which differ between a recording and
 * its replay: kept, they reached a det point's register hash and, through
 * this frame and later pt_regs, kernel stacks and the RAM hash.  rdx is a
 * return register only for 128-bit results, which no callback of ours has.
 *
 * A native callee may have flushed TLBs (or slept through a context
 * switch) where the translator could not see it: the vtlb goes too.
 */
void rv_native_return(unsigned long *frame)
{
	unsigned long rsp = (unsigned long)(frame + 10);
	struct rv_ncall *n = ncall_find(rsp);
	int i;

	rv_vtlb_flush();

	for (i = 0; i < 8; i++)
		if (i != 6 || (n && n->own))
			frame[i] = 0;

	if (!n) {
		/* no call into native code returns here: say so */
		asm volatile("outl %%eax, %w1" : : "a" (RVG_CMD_ERROR), "Nd" (RVG_PORT_CMD),
			     "D" ((u64)RVG_ERR_NATIVE_RETURN), "S" (rsp) : "memory");
		frame[9] = 0;
		return;
	}
	frame[9] = n->ret;
	smp_store_release(&n->rsp, 0);
}

/* frame rip of a translated iretq to kernel mode -> where to resume */
unsigned long rv_kret(unsigned long ip)
{
	unsigned long dest;

	if (!READ_ONCE(rv_active) || rv_in_cache(ip) || !rv_translatable(ip))
		return ip;
	dest = rv_lookup_or_translate(ip);
	if (dest != ip)
		rv_stat_inc(kret_enter);
	return dest;
}

/* the block whose translation holds @ip, NULL outside every block */
static struct rv_block *block_of(unsigned long ip)
{
	unsigned long lo = 0, hi = smp_load_acquire(&nblocks);
	struct rv_block *b;

	while (lo < hi) {
		unsigned long mid = (lo + hi) / 2;

		if (blocks[mid].cache <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	b = &blocks[lo - 1];
	return ip - b->cache < b->cache_len ? b : NULL;
}

static unsigned long map_back(unsigned long ip, bool exact)
{
	struct rv_block *b = block_of(ip);
	unsigned long off;
	int i;

	if (!b)
		return 0;
	off = ip - b->cache;
	/* the later of equal entries: a followed jmp's target */
	for (i = b->ninsn - 1; i >= 0; i--)
		if (b->map[i].coff <= off)
			return !exact || b->map[i].coff == off ? b->native + b->map[i].noff : 0;
	return !exact || !off ? b->native : 0;	/* the entry nop: the block's start */
}

/*
 * code-cache rip -> native rip of the instruction whose translation holds
 * it, 0 if unknown.  For a faulting instruction: its copy runs after the
 * code emitted before it, which leaves no trace.
 */
unsigned long rv_cache_to_native(unsigned long ip)
{
	return map_back(ip, false);
}

/*
 * code-cache rip -> native rip only where the translation of an
 * instruction begins (or the block's entry nop), 0 elsewhere.  Only there
 * is the machine state the state before the native instruction: between
 * the pieces of one instruction's translation ("lea -8(%rsp),%rsp; push
 * r/m" of an indirect call, "push $pc; ret" of a native exit, an exit
 * stub's "push $target") a native resume at the instruction would run it
 * again on a moved stack.  Return addresses are always such points: the
 * translation of the next instruction starts after every translated call.
 */
unsigned long rv_cache_to_native_exact(unsigned long ip)
{
	return map_back(ip, true);
}

void rv_fix_exc_frame(unsigned long *frame, int errcode)
{
	unsigned long *rip = &frame[errcode ? 1 : 0];
	unsigned long n = rv_cache_to_native(*rip);

	/* may run with the user's gs (e.g. a faulting iret): no per-cpu data */
	if (n) {
		*rip = n;
		atomic64_inc(&rv_fixups);
	} else {
		atomic64_inc(&rv_fixup_miss);
	}
}

/*
 * Called on the kernel stack (text_poke's kretprobes, module unload) with
 * locals that hold code-cache addresses, which differ between a recording
 * and its replay: left behind as dead stack bytes, they would make the two
 * runs' RAM differ (byte mode hashes all of it).  So the stack below the
 * caller is cleared afterwards, without calling the kernel (whose text must
 * not run natively in byte mode).
 */
static noinline void scrub_stack(void)
{
	u64 buf[160];
	int i;

	for (i = 0; i < ARRAY_SIZE(buf); i++)
		WRITE_ONCE(buf[i], 0);
	barrier_data(buf);
}

static noinline void invalidate_range(unsigned long start, unsigned long end);

/* text_poke / module unload: drop translations overlapping [start, end) */
void rv_invalidate_range(unsigned long start, unsigned long end)
{
	invalidate_range(start, end);
	scrub_stack();
}

/* its entry nop5 -> jmp to "push $native; jmp ind_slow"; rv_lock held */
static void drop_block(struct rv_block *b)
{
	struct rv_block **pp;
	struct rv_emit e;
	u8 *stub;
	u64 q;

	WRITE_ONCE(b->dead, 1);
	for (pp = &hash[hfn(b->native)]; *pp; pp = &(*pp)->next)
		if (*pp == b) {
			WRITE_ONCE(*pp, b->next);
			break;
		}
	stub = rv_byte ? rv_cold_alloc(32, 16) : rv_cache_alloc(16, 16);
	q = READ_ONCE(*(u64 *)b->cache);
	if (stub && rv_byte) {
		e.p = stub;
		e_gs_movq_imm(&e, RV_GS(x_target), (u32)b->native);
		e_gs_movq_imm(&e, RV_GS(x_field), 0);
		e_jmp(&e, rv_cache->chain_miss);
		((u8 *)&q)[0] = 0xe9;
		*(s32 *)((u8 *)&q + 1) = (s32)((unsigned long)stub - (b->cache + 5));
	} else if (stub) {
		e.p = stub;
		e_push_imm(&e, b->native);
		e_jmp(&e, rv_cache->ind_slow);
		((u8 *)&q)[0] = 0xe9;
		*(s32 *)((u8 *)&q + 1) = (s32)((unsigned long)stub - (b->cache + 5));
	} else {
		((u8 *)&q)[0] = 0xe9;
		*(s32 *)((u8 *)&q + 1) = (s32)(b->native - (b->cache + 5));
	}
	WRITE_ONCE(*(u64 *)b->cache, q);
	rv_stat_inc(inval_blocks);
}

static noinline void invalidate_range(unsigned long start, unsigned long end)
{
	unsigned long flags, i, n;

	if (!rv_cache)
		return;
	rv_lock_irqsave(flags);
	n = nblocks;
	for (i = 0; i < n; i++) {
		struct rv_block *b = &blocks[i];

		if (!b->dead && b->nlo < end && b->nhi > start)
			drop_block(b);
	}
	rv_stat_inc(invalidations);
	rv_unlock_irqrestore(flags);
}

/* does a site of @pb (sorted, at most 5 bytes each) overlap [lo, hi)? */
static bool hits_site(const struct rv_pokebatch *pb, unsigned long lo, unsigned long hi)
{
	unsigned int a = 0, z = pb->n;

	while (a < z) {			/* the first site ending after lo */
		unsigned int m = a + (z - a) / 2;

		if (pb->s[m].pc + pb->s[m].len <= lo)
			a = m + 1;
		else
			z = m;
	}
	return a < pb->n && pb->s[a].pc < hi;
}

static noinline void invalidate_sites(const struct rv_pokebatch *pb)
{
	unsigned long flags, i, n;

	if (!rv_cache || !pb->n)
		return;
	rv_lock_irqsave(flags);
	n = nblocks;
	for (i = 0; i < n; i++) {
		struct rv_block *b = &blocks[i];

		if (!b->dead && hits_site(pb, b->nlo, b->nhi))
			drop_block(b);
	}
	rv_stat_inc(invalidations);
	rv_unlock_irqrestore(flags);
}

/* a text-poke batch's sites: one pass over the blocks, not one a site */
void rv_invalidate_sites(const struct rv_pokebatch *pb)
{
	invalidate_sites(pb);
	scrub_stack();
}

unsigned long rv_xlate_lock(void)
{
	unsigned long flags;

	rv_lock_irqsave(flags);
	return flags;
}

void rv_xlate_unlock(unsigned long flags)
{
	rv_unlock_irqrestore(flags);
}

int rv_translate_init(void)
{
	entry_lo = rv_ksym("__entry_text_start");
	entry_hi = rv_ksym("__entry_text_end");
	hash = vzalloc(sizeof(*hash) << HASH_BITS);
	blocks = vzalloc(sizeof(*blocks) * RV_MAX_BLOCKS);
	if (!hash || !blocks) {
		vfree(hash);
		vfree(blocks);
		return -ENOMEM;
	}
	nblocks = 0;
	if (rv_byte || rv_train) {
		int ret = rv_jl_init() ?: (rv_byte ? rv_sc_init() : 0);

		if (ret) {
			pr_err(RV_PR "jump-label sites: %d (jl_keys=0 copies their bytes)\n", ret);
			rv_translate_exit();
			return ret;
		}
	}
	return 0;
}

/* byte mode: the translator's tables are module-private memory */
void rv_translate_excl(void)
{
	rv_byte_excl_va(hash, sizeof(*hash) << HASH_BITS);
	rv_byte_excl_va(blocks, sizeof(*blocks) * RV_MAX_BLOCKS);
	rv_jl_excl();
	rv_sc_excl();
}

void rv_translate_exit(void)
{
	vfree(hash);
	vfree(blocks);
	hash = NULL;
	blocks = NULL;
	rv_jl_exit();
	rv_sc_exit();
}
