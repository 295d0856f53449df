// SPDX-License-Identifier: GPL-2.0
/*
 * Generated stubs that live in the code cache:
 *
 *  ind_stub   indirect branches and returns.  The translated code leaves the
 *             native target on the stack and jumps here; a flag-preserving
 *             lookup (mov/lea/not/jrcxz only) in the direct-mapped fast table
 *             of translated entries, each preceded by its native address, so
 *             one 8-byte store replaces an entry atomically; a hit replaces
 *             the stack slot with the translated address and "ret"s to it,
 *             else ind_slow.
 *  ind_slow   calls rv_dispatch(target, 0) with all caller-saved registers
 *             and the flags saved: translates on first use.
 *  chain_miss reached from a direct-branch exit stub ("push $target; call
 *             chain_miss"): rv_dispatch(target, exit) translates the target
 *             and patches the branch so the next time it goes straight there.
 *  entry stubs: the shadow-IDT gates and the syscall MSR point here; they
 *             count the entry and jump to the translated native handler.
 *
 * Each of the three shared stubs begins with a 5-byte nop.  Switching off
 * turns it into a jump to an "off" tail that simply returns to the native
 * target: code still running in the cache then leaves it at its next
 * indirect branch, return or unchained exit, and nothing in the cache ever
 * calls back into the module (so the cache may outlive it).
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <asm/sync_core.h>
#include "rv.h"
#include "emit.h"

struct rv_entry_counts rv_entries;
unsigned long rv_native_ring[RV_RING];
atomic_t rv_native_ring_idx;

unsigned long rv_trans_ring[RV_RING];
atomic_t rv_trans_ring_idx;

/* an interrupt hit translated code: keep the native rip it stands for */
void rv_sample_trans(unsigned long ip)
{
	rv_trans_ring[(unsigned int)atomic_inc_return(&rv_trans_ring_idx) % RV_RING] =
		rv_cache_to_native(ip);
}

/* an interrupt hit native kernel code: keep its rip for /proc/replayvm */
void rv_sample_native(unsigned long ip)
{
	unsigned long mlo = (unsigned long)THIS_MODULE->core_layout.base;

	if (ip - mlo < THIS_MODULE->core_layout.text_size) {
		/* in the dispatcher/translator itself */
		atomic64_inc((atomic64_t *)&rv_entries.samp_dispatch);
		atomic64_dec((atomic64_t *)&rv_entries.samp_native);
		return;
	}
	rv_native_ring[(unsigned int)atomic_inc_return(&rv_native_ring_idx) % RV_RING] = ip;
}

static const u8 pushf_rax[] = { 0x9c, 0x50 };
static const u8 pop_rax_popf[] = { 0x58, 0x9d };

/* 80 bytes below the caller's return/target slot: flags, rax, 8 scratch */
static void e_save_all(struct rv_emit *e)
{
	e_bytes(e, pushf_rax, 2);
	e_push_scratch(e);
}

static void e_restore_all(struct rv_emit *e)
{
	e_pop_scratch(e);
	e_bytes(e, pop_rax_popf, 2);
}

/*
 * The dispatcher can be reached from entry code that has not done swapgs
 * yet (e.g. the first "call error_entry" of an exception from user mode):
 * like the kernel's paranoid entry, look at MSR_GS_BASE and swapgs around
 * the C call when it holds the user's value.  Pushes one word (the flag).
 */
static void e_gs_enter(struct rv_emit *e)
{
	static const u8 op[] = {
		0xb9, 0x01, 0x01, 0x00, 0xc0,		/* mov $MSR_GS_BASE,%ecx */
		0x0f, 0x32,				/* rdmsr */
		0x31, 0xc9,				/* xor %ecx,%ecx */
		0x85, 0xd2,				/* test %edx,%edx */
		0x78, 0x05,				/* js 1f (kernel gs) */
		0x0f, 0x01, 0xf8,			/* swapgs */
		0xff, 0xc1,				/* inc %ecx */
		0x51,					/* 1: push %rcx */
	};
	e_bytes(e, op, sizeof(op));
}

static void e_gs_leave(struct rv_emit *e)
{
	static const u8 op[] = {
		0x59,					/* pop %rcx */
		0xe3, 0x03,				/* jrcxz 1f */
		0x0f, 0x01, 0xf8,			/* swapgs */
	};						/* 1: */
	e_bytes(e, op, sizeof(op));
}

/*
 * Leave through an exit stub's frame ([rsp] = exit stub's return address,
 * [rsp+8] = where to go): clear the return address (see e_call_scrub),
 * drop it, return.
 */
static const u8 exit_ret[] = {
	0x48, 0xc7, 0x04, 0x24, 0, 0, 0, 0,	/* movq $0,(%rsp) */
	0x48, 0x8d, 0x64, 0x24, 0x08,		/* lea 8(%rsp),%rsp */
	0xc3,					/* ret */
};

int rv_stubs_build(void)
{
	struct rv_cache *c = rv_cache;
	struct rv_emit e;
	u8 *jrcxz_field, *hit, *slow_jmp;
	unsigned long i;
	u8 *start = rv_cache_alloc(768, 64);

	if (!start)
		return -ENOMEM;
	e.p = start;

	/* off tails */
	c->ind_off = (unsigned long)e.p;
	e_u8(&e, 0xc3);					/* ret */
	e.p = PTR_ALIGN(e.p, 16);
	c->chain_off = (unsigned long)e.p;
	e_bytes(&e, exit_ret, sizeof(exit_ret));

	/* an always-missing fast-table entry: native address 0 before it */
	e.p = PTR_ALIGN(e.p, 16);
	e_u64(&e, 0);
	c->ft_empty = (unsigned long)e.p;
	e_u8(&e, 0xcc);
	for (i = 0; i < RV_FT_SIZE; i++)
		c->ft_vals[i] = c->ft_empty;

	/* ind_stub */
	e.p = PTR_ALIGN(e.p, 64);
	c->ind_stub = (unsigned long)e.p;
	e_nop5(&e);
	{
		static const u8 op[] = {
			0x52, 0x51, 0x50,			/* push rdx, rcx, rax */
			0x48, 0x8b, 0x44, 0x24, 0x18,		/* mov 0x18(%rsp),%rax      T */
			0x0f, 0xb7, 0x54, 0x24, 0x19,		/* movzwl 0x19(%rsp),%edx   T>>8 */
			0x48, 0x8d, 0x14, 0xd0,			/* lea (%rax,%rdx,8),%rdx */
			0x0f, 0xb7, 0xd2,			/* movzwl %dx,%edx          index */
			0x48, 0x8b, 0x14, 0xd5,			/* mov VALS(,%rdx,8),%rdx   entry */
		};
		e_bytes(&e, op, sizeof(op));
		e_u32(&e, (u32)(unsigned long)c->ft_vals);
	}
	{
		static const u8 op[] = {
			0x48, 0x8b, 0x4a, 0xf8,			/* mov -8(%rdx),%rcx        its native */
			0x48, 0xf7, 0xd0,			/* not %rax */
			0x48, 0x8d, 0x4c, 0x01, 0x01,		/* lea 1(%rcx,%rax),%rcx */
			0xe3,					/* jrcxz hit */
		};
		e_bytes(&e, op, sizeof(op));
		jrcxz_field = e.p;
		e_u8(&e, 0);
	}
	{
		static const u8 op[] = { 0x58, 0x59, 0x5a };	/* pop rax, rcx, rdx */
		e_bytes(&e, op, sizeof(op));
		slow_jmp = e_jmp(&e, 0);
	}
	hit = e.p;
	*jrcxz_field = (u8)(hit - (jrcxz_field + 1));
	{
		static const u8 op[] = {
			0x48, 0x89, 0x54, 0x24, 0x18,		/* mov %rdx,0x18(%rsp) */
			0x58, 0x59, 0x5a, 0xc3,			/* pop rax, rcx, rdx; ret */
		};
		e_bytes(&e, op, sizeof(op));
	}

	/* ind_slow: [rsp] = native target */
	e.p = PTR_ALIGN(e.p, 16);
	c->ind_slow = (unsigned long)e.p;
	*(s32 *)slow_jmp = rv_rel32(slow_jmp, c->ind_slow);
	e_nop5(&e);
	e_save_all(&e);
	e_gs_enter(&e);
	{
		static const u8 op[] = {
			0x48, 0x8b, 0x7c, 0x24, 0x58,		/* mov 0x58(%rsp),%rdi */
			0x31, 0xf6,				/* xor %esi,%esi */
		};
		e_bytes(&e, op, sizeof(op));
		e_call_scrub(&e, (unsigned long)rv_dispatch);
	}
	e_gs_leave(&e);
	{
		static const u8 op[] = { 0x48, 0x89, 0x44, 0x24, 0x50 };	/* mov %rax,0x50(%rsp) */
		e_bytes(&e, op, sizeof(op));
	}
	e_restore_all(&e);
	e_u8(&e, 0xc3);

	/* chain_miss: [rsp] = exit stub + 10, [rsp+8] = native target */
	e.p = PTR_ALIGN(e.p, 16);
	c->chain_miss = (unsigned long)e.p;
	e_nop5(&e);
	e_save_all(&e);
	e_gs_enter(&e);
	{
		static const u8 op[] = {
			0x48, 0x8b, 0x7c, 0x24, 0x60,		/* mov 0x60(%rsp),%rdi */
			0x48, 0x8b, 0x74, 0x24, 0x58,		/* mov 0x58(%rsp),%rsi */
		};
		e_bytes(&e, op, sizeof(op));
		e_call_scrub(&e, (unsigned long)rv_dispatch);
	}
	e_gs_leave(&e);
	{
		static const u8 op[] = { 0x48, 0x89, 0x44, 0x24, 0x58 };	/* mov %rax,0x58(%rsp) */
		e_bytes(&e, op, sizeof(op));
	}
	e_restore_all(&e);
	e_bytes(&e, exit_ret, sizeof(exit_ret));

	/*
	 * kret_fix: called by a translated iretq that returns to kernel mode
	 * ([rsp+8] = the frame's rip): an exception handled with its rip
	 * mapped back to native, or an interrupt of native kernel code (an
	 * idle loop, a task resumed by a native context switch), resumes in
	 * the code cache.
	 */
	e.p = PTR_ALIGN(e.p, 16);
	c->kret_fix = (unsigned long)e.p;
	e_nop5(&e);
	e_save_all(&e);
	e_gs_enter(&e);
	{
		static const u8 op[] = { 0x48, 0x8b, 0x7c, 0x24, 0x60 };	/* mov 0x60(%rsp),%rdi */
		e_bytes(&e, op, sizeof(op));
		e_call_scrub(&e, (unsigned long)rv_kret);
	}
	e_gs_leave(&e);
	{
		static const u8 op[] = { 0x48, 0x89, 0x44, 0x24, 0x58 };	/* mov %rax,0x58(%rsp) */
		e_bytes(&e, op, sizeof(op));
	}
	e_restore_all(&e);
	e_u8(&e, 0xc3);
	BUG_ON(e.p > start + 768);
	return 0;
}

/* replace a stub's leading nop5 by "jmp tail" with one aligned 8-byte store */
static void patch_entry_jmp(unsigned long at, unsigned long tail)
{
	u64 q;
	u8 *b = (u8 *)&q;
	s32 rel = (s32)(tail - (at + 5));

	BUG_ON(at & 7);
	q = READ_ONCE(*(u64 *)at);
	b[0] = 0xe9;
	memcpy(b + 1, &rel, 4);
	WRITE_ONCE(*(u64 *)at, q);
}

/* switch-off: every path that could call into the module returns to native */
void rv_stubs_off(void)
{
	struct rv_cache *c = rv_cache;

	patch_entry_jmp(c->ind_stub, c->ind_off);
	patch_entry_jmp(c->ind_slow, c->ind_off);
	patch_entry_jmp(c->chain_miss, c->chain_off);
	patch_entry_jmp(c->kret_fix, c->ind_off);
	sync_core();
}

/*
 * Gate stub for IDT vector @vector.  Exceptions (vectors < 32) that hit
 * translated kernel code get their saved rip mapped back to the native rip
 * first: exception-table fixups, BUG/WARN lookups, the iret/gs-change
 * checks in error_entry and everything else that inspects regs->ip then see
 * the native address (the interrupted code resumes natively; thesis 3.5).
 * Interrupts keep the code-cache rip and resume translated; they also
 * sample where the kernel was (translated or native).
 */
unsigned long rv_emit_gate_stub(int vector, bool exception, bool errcode,
				unsigned long handler_tr)
{
	struct rv_cache *c = rv_cache;
	unsigned long lo = (unsigned long)c->base;
	int ripo = errcode ? 8 : 0, cso = ripo + 8;
	u8 *start = rv_cache_alloc(192, 16), *j1, *j2;
	struct rv_emit e;

	if (!start)
		return 0;
	e.p = start;
	e_lock_inc(&e, exception ? &rv_entries.exceptions : &rv_entries.interrupts);
	/* testb $3, cso(%rsp); jnz user (rel32: the sample paths are long) */
	e_u8(&e, 0xf6); e_u8(&e, 0x44); e_u8(&e, 0x24); e_u8(&e, cso); e_u8(&e, 0x03);
	e_u8(&e, 0x0f); e_u8(&e, 0x85); j1 = e.p; e_u32(&e, 0);	/* jnz rel32 */
	/* push %rax; mov ripo+8(%rsp),%rax; sub $lo,%rax; cmp $size,%rax; pop %rax; jae native */
	e_u8(&e, 0x50);
	e_u8(&e, 0x48); e_u8(&e, 0x8b); e_u8(&e, 0x44); e_u8(&e, 0x24); e_u8(&e, ripo + 8);
	e_u8(&e, 0x48); e_u8(&e, 0x2d); e_u32(&e, (u32)lo);
	e_u8(&e, 0x48); e_u8(&e, 0x3d); e_u32(&e, (u32)c->size);
	e_u8(&e, 0x58);
	e_u8(&e, 0x73); j2 = e.p; e_u8(&e, 0);
	if (exception) {
		/* kernel, in the cache: rv_fix_exc_frame(frame, errcode) */
		e_u8(&e, 0x50);
		e_push_scratch(&e);
		e_u8(&e, 0x48); e_u8(&e, 0x8d); e_u8(&e, 0x7c); e_u8(&e, 0x24); e_u8(&e, 0x48); /* lea 0x48(%rsp),%rdi */
		e_u8(&e, 0xbe); e_u32(&e, errcode ? 1 : 0);	/* mov $errcode,%esi */
		e_call_scrub(&e, (unsigned long)rv_fix_exc_frame);
		e_pop_scratch(&e);
		e_u8(&e, 0x58);
		BUG_ON(e.p - (j2 + 1) > 127);
		*j2 = (u8)(e.p - (j2 + 1));
		*(s32 *)j1 = (s32)(e.p - (j1 + 4));
		e_jmp(&e, handler_tr);
	} else {
		e_lock_inc(&e, &rv_entries.samp_trans);
		/* remember where (rv_sample_trans(rip)) */
		e_u8(&e, 0x50);
		e_push_scratch(&e);
		e_u8(&e, 0x48); e_u8(&e, 0x8b); e_u8(&e, 0x7c); e_u8(&e, 0x24); e_u8(&e, 0x48); /* mov 0x48(%rsp),%rdi */
		e_call_scrub(&e, (unsigned long)rv_sample_trans);
		e_pop_scratch(&e);
		e_u8(&e, 0x58);
		e_jmp(&e, handler_tr);
		BUG_ON(e.p - (j2 + 1) > 127);
		*j2 = (u8)(e.p - (j2 + 1));
		e_lock_inc(&e, &rv_entries.samp_native);
		/* remember where (rv_sample_native(rip)) */
		e_u8(&e, 0x50);
		e_push_scratch(&e);
		e_u8(&e, 0x48); e_u8(&e, 0x8b); e_u8(&e, 0x7c); e_u8(&e, 0x24); e_u8(&e, 0x48); /* mov 0x48(%rsp),%rdi */
		e_call_scrub(&e, (unsigned long)rv_sample_native);
		e_pop_scratch(&e);
		e_u8(&e, 0x58);
		e_jmp(&e, handler_tr);
		*(s32 *)j1 = (s32)(e.p - (j1 + 4));
		e_lock_inc(&e, &rv_entries.samp_user);
		e_jmp(&e, handler_tr);
	}
	BUG_ON(e.p > start + 192);
	return (unsigned long)start;
}

/* MSR_LSTAR target: count, then the translated entry_SYSCALL_64 */
unsigned long rv_emit_syscall_stub(unsigned long entry_tr)
{
	u8 *start = rv_cache_alloc(32, 16);
	struct rv_emit e;

	if (!start)
		return 0;
	e.p = start;
	e_lock_inc(&e, &rv_entries.syscalls);
	e_jmp(&e, entry_tr);
	return (unsigned long)start;
}
