// SPDX-License-Identifier: GPL-2.0
/*
 * The shared stubs in byte-CREW mode (crew=byte; see rv.h).  The host
 * injects kernel-mode interrupts only at deterministic points, so a stub
 * cannot be interrupted and may keep its state in this CPU's struct
 * rv_vcpu (gs-relative slots).  Nothing here writes to a kernel stack
 * except values the native code would have there too (program registers,
 * native addresses); C code runs on a private per-CPU stack.  That keeps
 * guest memory outside the module's registered private ranges identical
 * between a recording and its replay, although the code cache is not.
 *
 *  ind_stub    [rsp] = native target: fast-table lookup, then
 *              "jmp *%gs:x_dest" (the stack slot keeps the native target)
 *  ind_slow    the lookup missed: rv_dispatch_b(target, 0)
 *  chain_miss  x_target/x_field set by an exit stub (or an invalidated
 *              block): rv_dispatch_b translates and chains
 *  slow_common x_addr/x_site/x_kind/x_dest set by an instrumentation
 *              site: rv_byte_slow() (crewslow.c)
 *  ind_call    the same lookup for calls; a target outside translatable
 *              code (this module's callbacks, ...) gets ret_tramp as its
 *              return address, so that it returns into the cache
 *  ret_tramp   pops this CPU's native-call return stack, then ind_stub
 *  kret_tramp  a translated iretq to kernel mode returns here, the native
 *              rip in x: kret_native (push it, look it up)
 *  enter_tramp the switch-on stopper returns here (enter_native)
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include "rv.h"
#include "emit.h"

unsigned long rv_byte_enter_tramp, rv_slow_common, rv_ind_call, rv_ret_tramp;
unsigned long rv_vtlb_flush_common;

/* op with a %gs:disp32 memory operand: 65 [rex] op modrm(reg, rm=100) 25 d32 */
void e_gs(struct rv_emit *e, u8 rex, u8 op, int reg, u32 disp)
{
	e_u8(e, 0x65);
	if (rex)
		e_u8(e, rex);
	e_u8(e, op);
	e_u8(e, ((reg & 7) << 3) | 4);
	e_u8(e, 0x25);
	e_u32(e, disp);
}

/* movq $imm32 (sign-extended), %gs:disp32 */
void e_gs_movq_imm(struct rv_emit *e, u32 disp, u32 imm)
{
	e_gs(e, 0x48, 0xc7, 0, disp);
	e_u32(e, imm);
}

/* onto this CPU's private stack, flags and caller-saved registers saved */
static void e_priv_enter(struct rv_emit *e)
{
	e_gs(e, 0x48, 0x89, 4, RV_GS(priv_rsp));	/* mov %rsp,%gs:priv_rsp */
	e_gs(e, 0x48, 0x8b, 4, RV_GS(priv_top));	/* mov %gs:priv_top,%rsp */
	e_u8(e, 0x9c);					/* pushfq */
	e_u8(e, 0x50);					/* push %rax */
	e_push_scratch(e);
}

static void e_priv_leave(struct rv_emit *e)
{
	e_pop_scratch(e);
	e_u8(e, 0x58);					/* pop %rax */
	e_u8(e, 0x9d);					/* popfq */
	e_gs(e, 0x48, 0x8b, 4, RV_GS(priv_rsp));	/* mov %gs:priv_rsp,%rsp */
}

static void e_jmp_xdest(struct rv_emit *e)
{
	e_gs(e, 0, 0xff, 4, RV_GS(x_dest));		/* jmp *%gs:x_dest */
}

/* a stub that calls @fn on the private stack, then jumps to x_dest */
static unsigned long e_c_stub(struct rv_emit *e, void (*fn)(void))
{
	unsigned long stub;

	e->p = PTR_ALIGN(e->p, 16);
	stub = (unsigned long)e->p;
	e_priv_enter(e);
	e_call(e, (unsigned long)fn);
	e_priv_leave(e);
	e_jmp_xdest(e);
	return stub;
}

/*
 * The fast-table lookup of stubs.c ([rsp] = native target), ending in
 * "jmp *%gs:x_dest" on a hit; returns the rel32 field of its miss jump.
 */
static u8 *e_lookup(struct rv_emit *e, u64 *ft_vals)
{
	u8 *jrcxz_field, *hit, *miss;

	e_nop5(e);
	{
		static const u8 op[] = {
			0x52, 0x51, 0x50,			/* push rdx, rcx, rax */
			0x48, 0x8b, 0x44, 0x24, 0x18,		/* mov 0x18(%rsp),%rax */
			0x0f, 0xb7, 0x54, 0x24, 0x19,		/* movzwl 0x19(%rsp),%edx */
			0x48, 0x8d, 0x14, 0xd0,			/* lea (%rax,%rdx,8),%rdx */
			0x0f, 0xb7, 0xd2,			/* movzwl %dx,%edx */
			0x48, 0x8b, 0x14, 0xd5,			/* mov VALS(,%rdx,8),%rdx */
		};
		e_bytes(e, op, sizeof(op));
		e_u32(e, (u32)(unsigned long)ft_vals);
	}
	{
		static const u8 op[] = {
			0x48, 0x8b, 0x4a, 0xf8,			/* mov -8(%rdx),%rcx */
			0x48, 0xf7, 0xd0,			/* not %rax */
			0x48, 0x8d, 0x4c, 0x01, 0x01,		/* lea 1(%rcx,%rax),%rcx */
			0xe3,					/* jrcxz hit */
		};
		e_bytes(e, op, sizeof(op));
		jrcxz_field = e->p;
		e_u8(e, 0);
	}
	{
		static const u8 op[] = { 0x58, 0x59, 0x5a };	/* pop rax, rcx, rdx */
		e_bytes(e, op, sizeof(op));
		miss = e_jmp(e, 0);
	}
	hit = e->p;
	*jrcxz_field = (u8)(hit - (jrcxz_field + 1));
	e_gs(e, 0x48, 0x89, 2, RV_GS(x_dest));	/* mov %rdx,%gs:x_dest */
	{
		static const u8 op[] = {
			0x58, 0x59, 0x5a,			/* pop rax, rcx, rdx */
			0x48, 0x8d, 0x64, 0x24, 0x08,		/* lea 8(%rsp),%rsp */
		};
		e_bytes(e, op, sizeof(op));
	}
	e_jmp_xdest(e);
	return miss;
}

/* [rsp] = native target: rv_dispatch_b or rv_dispatch_call, then there */
static unsigned long e_ind_slow(struct rv_emit *e, void *fn)
{
	unsigned long at = (unsigned long)PTR_ALIGN(e->p, 16);

	e->p = (u8 *)at;
	e_nop5(e);
	e_priv_enter(e);
	e_gs(e, 0x48, 0x8b, 0, RV_GS(priv_rsp));	/* mov %gs:priv_rsp,%rax */
	{
		static const u8 op[] = {
			0x48, 0x8b, 0x38,			/* mov (%rax),%rdi */
			0x48, 0x89, 0xc6,			/* mov %rax,%rsi */
		};
		e_bytes(e, op, sizeof(op));
	}
	e_call(e, (unsigned long)fn);
	e_gs(e, 0x48, 0x89, 0, RV_GS(x_dest));	/* mov %rax,%gs:x_dest */
	e_priv_leave(e);
	{
		static const u8 op[] = { 0x48, 0x8d, 0x64, 0x24, 0x08 };	/* lea 8(%rsp),%rsp */
		e_bytes(e, op, sizeof(op));
	}
	e_jmp_xdest(e);
	return at;
}

int rv_stubs_build_byte(void)
{
	struct rv_cache *c = rv_cache;
	struct rv_emit e;
	u8 *slow_jmp, *call_jmp;
	unsigned long i;
	u8 *start = rv_cache_alloc(1024, 64);

	if (!start)
		return -ENOMEM;
	e.p = start;

	/* off tails (switch-off is refused in byte mode; kept for symmetry) */
	c->ind_off = (unsigned long)e.p;
	e_u8(&e, 0xc3);
	e.p = PTR_ALIGN(e.p, 16);
	c->chain_off = (unsigned long)e.p;
	e_jmp_xdest(&e);

	e.p = PTR_ALIGN(e.p, 16);
	e_u64(&e, 0);
	c->ft_empty = (unsigned long)e.p;
	e_u8(&e, 0xcc);
	for (i = 0; i < RV_FT_SIZE; i++)
		c->ft_vals[i] = c->ft_empty;

	c->ind_stub = (unsigned long)PTR_ALIGN(e.p, 64);
	e.p = (u8 *)c->ind_stub;
	slow_jmp = e_lookup(&e, c->ft_vals);
	e.p = PTR_ALIGN(e.p, 64);
	rv_ind_call = (unsigned long)e.p;
	call_jmp = e_lookup(&e, c->ft_vals);

	/* ind_slow / ind_slow_call: [rsp] = native target */
	c->ind_slow = e_ind_slow(&e, rv_dispatch_ind);
	*(s32 *)slow_jmp = rv_rel32(slow_jmp, c->ind_slow);
	*(s32 *)call_jmp = rv_rel32(call_jmp, e_ind_slow(&e, rv_dispatch_call));

	/*
	 * ret_tramp: a native callee returned here; the native return
	 * address comes off this CPU's return stack (rv_dispatch_call).
	 */
	e.p = PTR_ALIGN(e.p, 16);
	rv_ret_tramp = (unsigned long)e.p;
	{
		static const u8 op[] = {
			0x48, 0x8d, 0x64, 0x24, 0xf8,		/* lea -8(%rsp),%rsp */
			0x50, 0x51, 0x52, 0x56, 0x57,		/* push rax, rcx, rdx, rsi, rdi */
			0x41, 0x50, 0x41, 0x51, 0x41, 0x52, 0x41, 0x53,	/* push r8-r11 */
			0x48, 0x89, 0xe7,			/* mov %rsp,%rdi */
		};
		e_bytes(&e, op, sizeof(op));
	}
	/* the C call runs on the kernel stack: it writes what native code
	 * returning from this callee would not, but the same in record and
	 * replay (calls into native code are fixed by their target) */
	e_call(&e, (unsigned long)rv_native_return);
	{
		static const u8 op[] = {
			0x41, 0x5b, 0x41, 0x5a, 0x41, 0x59, 0x41, 0x58, /* pop r11-r8 */
			0x5f, 0x5e, 0x5a, 0x59, 0x58,		/* pop rdi, rsi, rdx, rcx, rax */
		};
		e_bytes(&e, op, sizeof(op));
	}
	e_jmp(&e, c->ind_stub);

	/* chain_miss: x_target, x_field */
	e.p = PTR_ALIGN(e.p, 16);
	c->chain_miss = (unsigned long)e.p;
	e_nop5(&e);
	e_priv_enter(&e);
	e_gs(&e, 0x48, 0x8b, 7, RV_GS(x_target));	/* mov %gs:x_target,%rdi */
	e_gs(&e, 0x48, 0x8b, 6, RV_GS(x_field));	/* mov %gs:x_field,%rsi */
	e_call(&e, (unsigned long)rv_dispatch_b);
	e_gs(&e, 0x48, 0x89, 0, RV_GS(x_dest));
	e_priv_leave(&e);
	e_jmp_xdest(&e);

	/* slow_common: instrumentation sites (crewinstr.c) */
	rv_slow_common = e_c_stub(&e, rv_byte_slow);
	/* vtlb_flush_common: before a TLB-flushing instruction (crewinstr.c) */
	rv_vtlb_flush_common = e_c_stub(&e, rv_vtlb_flush);

	/* kret_fix is not used in byte mode (translate.c emits it inline) */
	e.p = PTR_ALIGN(e.p, 16);
	c->kret_fix = (unsigned long)e.p;
	e_gs(&e, 0, 0xff, 6, RV_GS(kret_native));	/* push %gs:kret_native */
	e_jmp(&e, c->ind_stub);

	e.p = PTR_ALIGN(e.p, 16);
	rv_byte_enter_tramp = (unsigned long)e.p;
	e_gs(&e, 0, 0xff, 6, RV_GS(enter_native));	/* push %gs:enter_native */
	e_jmp(&e, c->ind_stub);
	BUG_ON(e.p > start + 1024);
	return 0;
}

/*
 * Gate stub for IDT vector @vector in byte mode: jump through @slot (the
 * native handler until the switch, then its translation).  An exception
 * raised in translated code first gets its frame's rip mapped back to the
 * native instruction (on the private stack: the kernel stack gets nothing
 * the native kernel would not have).
 */
unsigned long rv_emit_gate_stub_byte(int vector, bool exception, bool errcode,
				     u64 *slot)
{
	struct rv_cache *c = rv_cache;
	unsigned long lo = (unsigned long)c->base;
	int ripo = errcode ? 8 : 0, cso = ripo + 8;
	u8 *start = rv_cache_alloc(160, 16), *j1, *j2;
	struct rv_emit e;

	if (!start)
		return 0;
	e.p = start;
	if (exception) {
		/* testb $3, cso(%rsp); jnz go */
		e_u8(&e, 0xf6); e_u8(&e, 0x44); e_u8(&e, 0x24); e_u8(&e, cso); e_u8(&e, 0x03);
		e_u8(&e, 0x75); j1 = e.p; e_u8(&e, 0);
		/* push %rax; mov ripo+8(%rsp),%rax; sub $lo,%rax; cmp $size,%rax; pop %rax; jae go */
		e_u8(&e, 0x50);
		e_u8(&e, 0x48); e_u8(&e, 0x8b); e_u8(&e, 0x44); e_u8(&e, 0x24); e_u8(&e, ripo + 8);
		e_u8(&e, 0x48); e_u8(&e, 0x2d); e_u32(&e, (u32)lo);
		e_u8(&e, 0x48); e_u8(&e, 0x3d); e_u32(&e, (u32)c->size);
		e_u8(&e, 0x58);
		e_u8(&e, 0x73); j2 = e.p; e_u8(&e, 0);
		/* rv_fix_exc_frame(kernel rsp, errcode) on the private stack */
		e_priv_enter(&e);
		e_gs(&e, 0x48, 0x8b, 7, RV_GS(priv_rsp));	/* mov %gs:priv_rsp,%rdi */
		e_u8(&e, 0xbe); e_u32(&e, errcode ? 1 : 0);	/* mov $errcode,%esi */
		e_call(&e, (unsigned long)rv_fix_exc_frame);
		e_priv_leave(&e);
		*j1 = (u8)(e.p - (j1 + 1));
		*j2 = (u8)(e.p - (j2 + 1));
	}
	/* jmp *slot (absolute, sign-extended disp32) */
	e_u8(&e, 0xff); e_u8(&e, 0x24); e_u8(&e, 0x25);
	e_u32(&e, (u32)(unsigned long)slot);
	BUG_ON(e.p > start + 160);
	return (unsigned long)start;
}
