// SPDX-License-Identifier: GPL-2.0
/*
 * Byte-CREW instrumentation emitted by the translator (thesis 4.2.3-4.2.7).
 *
 * Every memory access of translated kernel code, except those through
 * %rsp (the thread's own stack) and through fs, is bracketed:
 *
 *   [push %rax]; push %rcx; push %rdx; lea EA,%rdx (program registers)
 *   [seto %al; lahf]                   (flags, if live: only then is %rax
 *                                       used, and pushed)
 *   [add %gs:this_cpu_off,%rdx]
 *   phys = EA - PAGE_OFFSET        (< span: direct map)
 *   else phys = EA - __START_KERNEL_map + phys_base  (kernel image)
 *   else -> "other" (cold): user memory is skipped (share-nothing); a
 *           page this CPU's vtlb (rv.h) holds gives phys (vmalloc'd
 *           stacks, vmemmap, modules); else slow_common classifies it
 *           through the page tables (MMIO is a deterministic point) and
 *           fills the vtlb
 *   record: shadow = shadow_va + phys; (~shadow & me) == 0 (read) or
 *           shadow == me (write), over the access size, else slow_common
 *           takes ownership (crew_acquire_slow, logs the transfer)
 *   replay: seq == rp_next -> slow_common waits for the logged owners
 *   [add $0x7f,%al; sahf]; pop %rdx; pop %rcx; [pop %rax]
 *   <the instruction>
 *   incq %gs:seq (flags dead after it), else push %rax; mov %gs:seq,%rax;
 *   lea 1(%rax),%rax; mov %rax,%gs:seq; pop %rax; then, recording, mfence
 *   (release_xchg=1: xchg for the mov, no mfence; host_fence=1: neither)
 *
 * Record and replay push the same program registers, so kernel stacks hold
 * the same bytes in both.  String instructions always go to slow_common,
 * which works out their ranges from rsi/rdi/rcx and the direction flag.
 *
 * TLB flushes (invlpg, invpcid, mov to cr0/cr4; not cr3: the vtlb holds
 * global pages only) empty this CPU's vtlb first: movq $next,%gs:x_dest;
 * jmp vtlb_flush_common.
 *
 * Deterministic points (port I/O, rdtsc/rdtscp, pause, hlt, backward
 * branches): push %rax; seto %al; lahf; movq $pc,%gs:dp_pc;
 * decq %gs:dp_remain; jz doorbell; add $0x7f,%al; sahf; pop %rax, where the
 * doorbell (cold code) is "out %al,$RVG_PORT_DB" (rvg_abi.h: the host may
 * inject an interrupt there, rewinding this frame).
 */
#include <linux/kernel.h>
#include <linux/moduleparam.h>
#include <asm/insn.h>
#include "rv.h"
#include "dbt/emit.h"
#include "dbt/instrument.h"
#include "crewinstr.h"
#include "crew.h"
#include "rvg_abi.h"

struct rv_crew_consts rv_cc;
/*
 * debugging: 1 no memory instrumentation, 2 no det points, 4 flags always
 * saved, 16 noinstr text left alone, 32, 64 and 128 a hostile guest (byte.c),
 * 256 no vtlb lookups (every access outside the direct map and the kernel
 * image goes to slow_common, as before the vtlb), 512 the same, and
 * slow_common checks every entry such an access would have used against
 * the page tables (byte_vtlb_checked, byte_vtlb_stale), 1024 no vtlb
 * flushes at TLB-flushing instructions (wrong: to see that 512 catches it),
 * 4096 releases without the fence (wrong: what the fence costs), 16384
 * CR3 writes empty the vtlb as before it held global pages only
 */
unsigned int rv_bdebug;
module_param_named(bdebug, rv_bdebug, uint, 0444);
/*
 * Accesses through %rsp are to the thread's own stack, but not only its
 * owner uses a stack: wait-queue entries and completions live there and
 * other CPUs write them through pointers, while the owner may read them
 * %rsp-relative.  So they are instrumented too unless crew_stack=0.
 */
static bool crew_stack = true;
module_param(crew_stack, bool, 0444);

/* ---- flags liveness ----------------------------------------------------- */

/*
 * 1: reads a flag, 2: writes all six arithmetic flags, 4: ends the scan,
 * 8 (with 2): only dead by the calling convention (call, ret)
 */
static int flag_use(struct insn *insn)
{
	u8 op0 = insn->opcode.bytes[0];
	u8 op1 = insn->opcode.nbytes > 1 ? insn->opcode.bytes[1] : 0;
	u8 reg = insn->modrm.nbytes ? X86_MODRM_REG(insn->modrm.bytes[0]) : 0;

	if ((op0 >= 0x70 && op0 <= 0x7f) || op0 == 0x9c || op0 == 0x9f ||
	    (op0 >= 0xe0 && op0 <= 0xe2) || op0 == 0xce || op0 == 0xf5)
		return 1;
	if (op0 == 0x0f) {
		if ((op1 >= 0x80 && op1 <= 0x8f) || (op1 >= 0x90 && op1 <= 0x9f) ||
		    (op1 >= 0x40 && op1 <= 0x4f))
			return 1;
		if (op1 == 0xb0 || op1 == 0xb1 || op1 == 0xc0 || op1 == 0xc1)
			return 2;			/* cmpxchg, xadd */
		if (op1 == 0x38 || op1 == 0x3a)
			return 1;			/* adcx/adox and friends: assume a read */
		return 0;
	}
	if (op0 < 0x40 && (op0 & 7) < 6) {		/* ALU ops and their imm forms */
		u8 grp = op0 >> 3;

		if (grp == 2 || grp == 3)		/* adc, sbb */
			return 1;
		return 2;
	}
	switch (op0) {
	case 0x80: case 0x81: case 0x83:
		return (reg == 2 || reg == 3) ? 1 : 2;
	case 0x84: case 0x85: case 0xa8: case 0xa9:	/* test */
		return 2;
	case 0xf6: case 0xf7:
		return (reg == 0 || reg == 1 || reg == 3) ? 2 : 0;
	case 0xd0: case 0xd1: case 0xd2: case 0xd3: case 0xc0: case 0xc1:
		return (reg == 2 || reg == 3) ? 1 : 0;	/* rcl/rcr read CF */
	case 0xc3: case 0xc2: case 0xe8:		/* ret, call: dead by ABI */
		return 2 | 8;
	case 0xe9: case 0xeb: case 0xff: case 0xcf: case 0xcc: case 0xcd:
		return 4;
	}
	return 0;
}

/*
 * Are the arithmetic flags dead before the instruction at @pc?  0: live,
 * 1: the code overwrites them, 2: dead only by the calling convention (a
 * callee or caller may still push them: pushf, local_irq_save)
 */
int rv_flags_dead(unsigned long pc)
{
	struct insn insn;
	int i, u;

	for (i = 0; i < 8; i++) {
		struct rv_jl_site jl;

		/* translated from its key: it may jump whatever its bytes say */
		if (rv_jl_find(pc, &jl) || rv_decode(&insn, pc))
			return 0;
		u = flag_use(&insn);
		if (u & 1)
			return 0;
		if (u & 2)
			return (u & 8) ? 2 : 1;
		if (u & 4)
			return 0;
		pc += insn.length;
	}
	return 0;
}

/* ---- cold code: sites and their slow stubs ------------------------------ */

static void fill(u8 *field, u8 *target);

/* x_site, x_kind, x_dest = @back; jmp slow_common (x_addr set before) */
static void e_to_slow(struct rv_emit *c, struct rv_site *site, int kind, u8 *back)
{
	e_gs_movq_imm(c, RV_GS(x_site), (u32)(unsigned long)site);
	e_gs_movq_imm(c, RV_GS(x_kind), kind);
	e_gs_movq_imm(c, RV_GS(x_dest), (u32)(unsigned long)back);
	e_jmp(c, rv_slow_common);
}

/* cold: x_addr = @reg, then to slow_common */
static u8 *cold_slow_stub(struct rv_site *site, int kind, int reg, u8 *back)
{
	struct rv_emit c;
	u8 *stub = rv_cold_alloc(64, 16);

	if (!stub)
		return NULL;
	c.p = stub;
	e_gs(&c, 0x48, 0x89, reg, RV_GS(x_addr));	/* mov %reg,%gs:x_addr */
	e_to_slow(&c, site, kind, back);
	return stub;
}

/*
 * cold: the "other" path of an access of @size bytes (0: no vtlb lookup)
 * whose address (%rdx) is in neither the direct map nor the kernel image;
 * %rcx is free and the flags are saved.  User memory continues at @back,
 * a page the vtlb holds at @hit with %rcx = the physical address (an
 * access that crosses into the next page does not look), the rest goes to
 * slow_common, which classifies the address and fills the vtlb.
 */
static u8 *cold_other_stub(struct rv_site *site, int kind, int size, u8 *hit, u8 *back)
{
	struct rv_emit c;
	u8 *stub = rv_cold_alloc(144, 16), *user, *miss[2];
	int n = 0;

	if (!stub)
		return NULL;
	c.p = stub;
	e_u8(&c, 0x48); e_u8(&c, 0x85); e_u8(&c, 0xd2);	/* test %rdx,%rdx */
	user = e_jcc32(&c, 0x9);				/* jns back */
	e_gs(&c, 0x48, 0x89, 2, RV_GS(x_addr));			/* mov %rdx,%gs:x_addr */
	if (size) {
		if (size > 1) {
			e_u8(&c, 0x89); e_u8(&c, 0xd1);		/* mov %edx,%ecx */
			e_u8(&c, 0x81); e_u8(&c, 0xe1); e_u32(&c, PAGE_SIZE - 1); /* and */
			e_u8(&c, 0x81); e_u8(&c, 0xf9); e_u32(&c, PAGE_SIZE - size); /* cmp */
			miss[n++] = e_jcc32(&c, 0x7);		/* ja miss */
		}
		e_u8(&c, 0x48); e_u8(&c, 0xc1); e_u8(&c, 0xea); e_u8(&c, PAGE_SHIFT); /* shr */
		e_u8(&c, 0x89); e_u8(&c, 0xd1);			/* mov %edx,%ecx */
		e_u8(&c, 0x83); e_u8(&c, 0xe1); e_u8(&c, RV_VTLB_SIZE - 1);	/* and $N-1,%ecx */
		e_u8(&c, 0xc1); e_u8(&c, 0xe1); e_u8(&c, 4);	/* shl $4,%ecx */
		/* cmp %gs:e[0].vpn(%rcx),%rdx */
		e_u8(&c, 0x65); e_u8(&c, 0x48); e_u8(&c, 0x3b); e_u8(&c, 0x91);
		e_u32(&c, RV_VTLB(e[0].vpn));
		miss[n++] = e_jcc32(&c, 0x5);			/* jne miss */
		/* mov %gs:e[0].delta(%rcx),%rcx */
		e_u8(&c, 0x65); e_u8(&c, 0x48); e_u8(&c, 0x8b); e_u8(&c, 0x89);
		e_u32(&c, RV_VTLB(e[0].delta));
		e_gs(&c, 0x48, 0x8b, 2, RV_GS(x_addr));		/* mov %gs:x_addr,%rdx */
		e_u8(&c, 0x48); e_u8(&c, 0x01); e_u8(&c, 0xd1);	/* add %rdx,%rcx */
		e_jmp(&c, (unsigned long)hit);
	}
	while (n)
		fill(miss[--n], c.p);
	e_to_slow(&c, site, kind, back);
	fill(user, back);
	BUG_ON(c.p > stub + 144);
	return stub;
}

/* jcc rel32 with a field to fill in later */
u8 *e_jcc32(struct rv_emit *e, u8 cc)
{
	u8 *f;

	e_u8(e, 0x0f);
	e_u8(e, 0x80 | cc);
	f = e->p;
	e_u32(e, 0);
	return f;
}

static void e_movabs(struct rv_emit *e, int reg, u64 imm)
{
	e_u8(e, 0x48 | (reg >= 8 ? 1 : 0));
	e_u8(e, 0xb8 | (reg & 7));
	e_u64(e, imm);
}

/*
 * lea of @op's effective address into %rdx (rip-relative: the absolute
 * target).  false: not an operand this emitter handles.
 */
bool e_lea_rdx(struct rv_emit *e, struct insn *insn, const struct rv_memop *op, int pushed)
{
	u8 rex = insn->rex_prefix.nbytes ? insn->rex_prefix.bytes[0] : 0;
	u8 modrm = insn->modrm.bytes[0];
	int i;

	for (i = 0; i < insn->prefixes.nbytes; i++)
		if (insn->prefixes.bytes[i] == 0x67)
			return false;		/* 32-bit addressing */
	if (op->riprel) {
		e_movabs(e, 2, op->rip_target);
		return true;
	}
	if (op->base == 4) {
		/* %rsp-based: lower now by what e_push put there */
		e_u8(e, 0x48 | (rex & 3));
		e_u8(e, 0x8d);
		e_u8(e, 0x80 | (2 << 3) | 4);		/* mod 10: disp32, SIB */
		e_u8(e, insn->sib.bytes[0]);
		e_u32(e, (u32)(insn->displacement.value + pushed));
		return true;
	}
	/* 48|X|B 8d modrm(mod, reg=rdx, rm) [sib] [disp] */
	e_u8(e, 0x48 | (rex & 3));
	e_u8(e, 0x8d);
	e_u8(e, (modrm & 0xc7) | (2 << 3));
	if (insn->sib.nbytes)
		e_u8(e, insn->sib.bytes[0]);
	if (insn->displacement.nbytes == 1)
		e_u8(e, (u8)insn->displacement.value);
	else if (insn->displacement.nbytes == 4)
		e_u32(e, (u32)insn->displacement.value);
	return true;
}

/*
 * bt/bts/btr/btc with a register bit offset: the word touched is
 * EA + (offset >> 6) * 8 (>> 5, * 4 for 32 bits).  The offset register's
 * program value: rcx, rdx (and rax, if @rax) from where e_push put them.
 */
void e_bitreg(struct rv_emit *e, int reg, int size, bool rax)
{
	static const u8 stack_off[3] = { 16, 8, 0 };	/* rax, rcx, rdx */
	u8 sh = size == 8 ? 6 : size == 4 ? 5 : 4;
	u8 sib = 0x0a | (1 << 3) | ((size == 8 ? 3 : size == 4 ? 2 : 1) << 6);

	if (reg == 1 || reg == 2 || (reg == 0 && rax)) {
		if (size == 8) {			/* mov off(%rsp),%rcx */
			e_u8(e, 0x48); e_u8(e, 0x8b);
		} else if (size == 4) {			/* movslq off(%rsp),%rcx */
			e_u8(e, 0x48); e_u8(e, 0x63);
		} else {				/* movswq off(%rsp),%rcx */
			e_u8(e, 0x48); e_u8(e, 0x0f); e_u8(e, 0xbf);
		}
		e_u8(e, 0x4c); e_u8(e, 0x24); e_u8(e, stack_off[reg]);
	} else if (size == 8) {				/* mov %reg,%rcx */
		e_u8(e, 0x48 | (reg >= 8 ? 4 : 0)); e_u8(e, 0x89);
		e_u8(e, 0xc0 | ((reg & 7) << 3) | 1);
	} else if (size == 4) {				/* movslq %reg32,%rcx */
		e_u8(e, 0x48 | (reg >= 8 ? 1 : 0)); e_u8(e, 0x63);
		e_u8(e, 0xc0 | (1 << 3) | (reg & 7));
	} else {					/* movswq %reg16,%rcx */
		e_u8(e, 0x48 | (reg >= 8 ? 1 : 0)); e_u8(e, 0x0f); e_u8(e, 0xbf);
		e_u8(e, 0xc0 | (1 << 3) | (reg & 7));
	}
	e_u8(e, 0x48); e_u8(e, 0xc1); e_u8(e, 0xf9); e_u8(e, sh);	/* sar $sh,%rcx */
	e_u8(e, 0x48); e_u8(e, 0x8d); e_u8(e, 0x14); e_u8(e, sib);	/* lea (%rdx,%rcx,s),%rdx */
}

/*
 * The registers a check uses: rcx, rdx, and rax (lahf, seto) if @rax.
 * rdx ends up on top either way, rcx under it: slow paths read them
 * there.  Returns the bytes pushed.
 */
int e_push(struct rv_emit *e, bool rax)
{
	if (rax)
		e_u8(e, 0x50);				/* push %rax */
	e_u8(e, 0x51); e_u8(e, 0x52);			/* push %rcx; push %rdx */
	return rax ? 24 : 16;
}

void e_save_flags(struct rv_emit *e, bool flags)
{
	if (flags) {
		e_u8(e, 0x0f); e_u8(e, 0x90); e_u8(e, 0xc0);	/* seto %al */
		e_u8(e, 0x9f);					/* lahf */
	}
}

void e_restore(struct rv_emit *e, bool flags)
{
	if (flags) {
		e_u8(e, 0x04); e_u8(e, 0x7f);			/* add $0x7f,%al */
		e_u8(e, 0x9e);					/* sahf */
	}
	e_u8(e, 0x5a); e_u8(e, 0x59);			/* pop %rdx; pop %rcx */
	if (flags)
		e_u8(e, 0x58);				/* pop %rax */
}

/*
 * %rdx = address -> %rcx = physical address, or jump to @other (a field
 * the caller fills; %rdx still holds the address): direct map, then the
 * kernel image.
 */
u8 *e_to_phys(struct rv_emit *e)
{
	u8 *other, *j;

	e_movabs(e, 1, -rv_cc.page_offset);
	e_u8(e, 0x48); e_u8(e, 0x01); e_u8(e, 0xd1);		/* add %rdx,%rcx */
	e_u8(e, 0x48); e_u8(e, 0x81); e_u8(e, 0xf9); e_u32(e, rv_cc.span); /* cmp $span,%rcx */
	e_u8(e, 0x72); j = e->p; e_u8(e, 0);			/* jb ram */
	e_movabs(e, 1, -rv_cc.kimg_start);
	e_u8(e, 0x48); e_u8(e, 0x01); e_u8(e, 0xd1);		/* add %rdx,%rcx */
	e_u8(e, 0x48); e_u8(e, 0x81); e_u8(e, 0xf9); e_u32(e, rv_cc.kimg_size);
	other = e_jcc32(e, 0x3);				/* jae other */
	if (rv_cc.phys_base) {
		e_u8(e, 0x48); e_u8(e, 0x81); e_u8(e, 0xc1);	/* add $phys_base,%rcx */
		e_u32(e, (u32)rv_cc.phys_base);
	}
	e_fill8(j, e->p);
	return other;
}

/*
 * shadow check of %rcx (phys) for @size bytes; jne field returned (%rdx =
 * shadow).  A read needs this vCPU's bit in every byte: ~shadow & rep == 0
 * (one load of rep, where "shadow & rep == rep" took two).
 */
u8 *e_shadow_check(struct rv_emit *e, int size, bool write)
{
	u32 rep = RV_GS(crew) + offsetof(struct crew_cpu, rep);
	static const u8 sz_rex[9] = { [1] = 0, [2] = 0, [4] = 0, [8] = 0x48 };
	u8 opmov = size == 1 ? 0x8a : 0x8b, opand = size == 1 ? 0x22 : 0x23,
	   opcmp = size == 1 ? 0x3a : 0x3b, opnot = size == 1 ? 0xf6 : 0xf7;

	e_movabs(e, 2, rv_cc.shadow_va);
	e_u8(e, 0x48); e_u8(e, 0x01); e_u8(e, 0xca);		/* add %rcx,%rdx */
	/* mov (%rdx),%cl/%cx/%ecx/%rcx */
	if (size == 2)
		e_u8(e, 0x66);
	if (sz_rex[size])
		e_u8(e, sz_rex[size]);
	e_u8(e, opmov); e_u8(e, 0x0a);
	if (size == 2)
		e_u8(e, 0x66);
	if (write) {
		e_gs(e, sz_rex[size], opcmp, 1, rep);		/* cmp %gs:rep,%cx */
	} else {
		if (sz_rex[size])
			e_u8(e, sz_rex[size]);
		e_u8(e, opnot); e_u8(e, 0xd1);			/* not %cx */
		if (size == 2)
			e_u8(e, 0x66);
		e_gs(e, sz_rex[size], opand, 1, rep);		/* and %gs:rep,%cx */
	}
	return e_jcc32(e, 0x5);					/* jne slow */
}

static void fill(u8 *field, u8 *target)
{
	if (field)
		e_fill32(field, (unsigned long)target);
}

/* a cold stub for @field (rel32) returning to @back; false if out of space */
static bool link_cold(u8 *field, struct rv_site *site, int kind, int reg, u8 *back)
{
	u8 *stub;

	if (!field)
		return true;
	stub = cold_slow_stub(site, kind, reg, back);
	if (!stub)
		return false;
	fill(field, stub);
	return true;
}

/* the "other" stub (cold_other_stub) for @field */
static bool link_other(u8 *field, struct rv_site *site, int kind, int size, u8 *hit, u8 *back)
{
	u8 *stub;

	if (!field)
		return true;
	if ((size != 1 && size != 2 && size != 4 && size != 8) || (rv_bdebug & (256 | 512)))
		size = 0;
	stub = cold_other_stub(site, kind, size, hit, back);
	if (!stub)
		return false;
	fill(field, stub);
	return true;
}

/*
 * With the address in %rdx (and the flags saved): a string instruction
 * jumps to its stub, which knows the ranges; anything else is translated
 * to its physical address and, if @check, its shadow compared with this
 * vCPU's bit (an odd size, fxsave or 16 bytes, always takes the slow
 * path).  The jumps to fill are left in @j.
 */
void e_own_check(struct rv_emit *e, const struct rv_memop *op, bool check,
		 struct rv_own_jumps *j)
{
	int size = op->size;

	j->other = j->slow = j->str = j->phys = NULL;
	j->slow_kind = RV_SLOW_SHADOW;
	j->slow_reg = 2;
	if (op->string) {
		e_u8(e, 0xe9);
		j->str = e->p;
		e_u32(e, 0);
		return;
	}
	if (op->seg == 0x65)
		e_gs(e, 0x48, 0x03, 2, RV_GS(this_off));	/* add %gs:this_off,%rdx */
	j->other = e_to_phys(e);
	j->phys = e->p;
	if (!check)
		return;
	if (size == 1 || size == 2 || size == 4 || size == 8) {
		j->slow = e_shadow_check(e, size, op->dir & RV_MEM_WRITE);
	} else {
		e_u8(e, 0xe9);
		j->slow = e->p;
		e_u32(e, 0);
		j->slow_kind = RV_SLOW_PHYS;
		j->slow_reg = 1;
	}
}

/* the cold descriptor of an instrumented access */
static struct rv_site *new_site(const struct rv_memop *op)
{
	struct rv_site *site = rv_cold_alloc(sizeof(*site), 8), *w;

	if (site) {
		/* through rv_w: the descriptor is staged with the cold code */
		w = rv_w(site, sizeof(*site));
		memset(w, 0, sizeof(*w));
		w->pc = op->pc;
		w->size = op->size;
		w->dir = op->dir;
		w->string = op->string;
	}
	return site;
}

/* accesses byte CREW (and training) never checks: own stack, user TLS */
bool rv_crew_skip(struct insn *insn, const struct rv_memop *op)
{
	if ((op->base == 4 && (!crew_stack || insn->opcode.bytes[0] == 0x8f)) ||
	    op->seg == 0x64) {
		rv_cc.skipped_stack++;		/* own stack, or user TLS */
		return true;
	}
	return false;
}

/*
 * What the translator calls before a memory instruction (byte mode).
 *
 * An untrained site of a recording with a trained list (train.c) emits
 * the same check, and a miss goes to the same transfer: RV_SLOW_SENTINEL
 * (@untrained) only has it counted when another vCPU owned a byte, an
 * untrained access to shared memory reported at the end of the
 * recording, so the log orders it like any other.  Its release
 * (crew_post) is fenced too unless untrained_fence=0, whose plain store
 * reopens crew.h's hole 1 (TSO store->load) for the check that follows it
 * on this vCPU.  A replay instruments every site alike: its seq counts
 * the same accesses.
 */
static bool crew_mem(struct rv_emit *e, struct insn *insn, const struct rv_memop *op)
{
	bool replay = rv_byte_replaying(), flags;
	u8 *j_seq = NULL, *after_seq, *back, *mark = e->p;
	struct rv_own_jumps j;
	struct rv_site *site;
	int untrained, pushed;

	if (rv_crew_skip(insn, op))
		return false;
	if (rv_bdebug & 1)
		return false;
	untrained = rv_trained && !replay && !rv_trained_has(op->pc) ? RV_SLOW_SENTINEL : 0;
	site = new_site(op);
	if (!site)
		goto bad;
	flags = (rv_bdebug & 4) || op->keep_flags || !rv_flags_dead(op->pc);
	pushed = e_push(e, flags);
	/* the address first: the operand may use rax, rcx or rdx */
	if (!op->string && !e_lea_rdx(e, insn, op, pushed))
		goto bad;
	e_save_flags(e, flags);
	if (op->bitreg >= 0)
		e_bitreg(e, op->bitreg, op->size, flags);
	if (replay) {
		/* mov %gs:seq,%rcx; cmp %gs:rp_next,%rcx; je replay-wait */
		e_gs(e, 0x48, 0x8b, 1, RV_GS(crew) + offsetof(struct crew_cpu, seq));
		e_gs(e, 0x48, 0x3b, 1, RV_GS(crew) + offsetof(struct crew_cpu, rp_next));
		j_seq = e_jcc32(e, 0x4);
	}
	after_seq = e->p;
	e_own_check(e, op, !replay, &j);
	back = e->p;
	e_restore(e, flags);
	if (!flags) {
		/*
		 * Dead flags are still seen: a callee may push them (pushf,
		 * local_irq_save), and a fault in the instruction (a user page
		 * under clear_user) puts them in its exception frame.  Give them
		 * the same value in record and replay, whose checks take
		 * different paths: cmp %rsp,%rsp.
		 */
		e_u8(e, 0x48); e_u8(e, 0x39); e_u8(e, 0xe4);
	}
	if (!link_other(j.other, site, RV_SLOW_OTHER | untrained,
			j.slow_kind == RV_SLOW_SHADOW || replay ? op->size : 0,
			replay ? back : j.phys, back) ||
	    !link_cold(j.slow, site, j.slow_kind | untrained, j.slow_reg, back) ||
	    !link_cold(j_seq, site, RV_SLOW_REPLAY, 2, after_seq) ||	/* rdx: EA */
	    !link_cold(j.str, site, RV_SLOW_STRING | untrained, 1, back))
		goto bad;
	if (untrained)
		rv_untrained_sites++;
	else
		rv_cc.instrumented++;
	return true;
bad:
	e->p = mark;
	rv_cc.uninstrumented++;
	return false;
}

/*
 * The release's fence: xchg, the TSO-safe store of crew.h, or a plain
 * store and mfence (release_xchg=0, the default).  Under MTTCG an xchg is
 * an atomic helper call, an mfence one inline host fence; on hardware
 * both drain the store buffer.  None where the host offers remote fences
 * (byte.c): a transfer then fences the owners instead.
 */
static bool release_xchg;
module_param(release_xchg, bool, 0444);

/*
 * After an instrumented instruction: release (seq++), fenced in record
 * (but at an untrained site with untrained_fence=0).  Where the code after
 * it overwrites the flags before reading them, an incq: its flags come
 * from seq, which counts the same accesses in a replay, so they are the
 * same there (a callee may still push them).
 */
static void crew_post(struct rv_emit *e, struct insn *insn, const struct rv_memop *op)
{
	u32 seq = RV_GS(crew) + offsetof(struct crew_cpu, seq);
	bool fence = !rv_byte_replaying() && !rv_byte_remote_fence && !(rv_bdebug & 4096) &&
		     !(op && rv_trained && !rv_untrained_fence && !rv_trained_has(op->pc));
	bool branch = insn->opcode.bytes[0] == 0xff;	/* call/jmp/push r/m */

	/* not on fences alone: a recording and its replay must agree */
	if (!release_xchg && op && !op->keep_flags && !branch &&
	    rv_flags_dead(op->pc + insn->length)) {
		e_gs(e, 0x48, 0xff, 0, seq);		/* incq %gs:seq */
		rv_cc.release_inc++;
	} else {
		e_u8(e, 0x50);				/* push %rax */
		e_gs(e, 0x48, 0x8b, 0, seq);		/* mov %gs:seq,%rax */
		e_u8(e, 0x48); e_u8(e, 0x8d); e_u8(e, 0x40); e_u8(e, 0x01); /* lea 1(%rax),%rax */
		/* xchg %rax,%gs:seq, or mov %rax,%gs:seq */
		e_gs(e, 0x48, fence && release_xchg ? 0x87 : 0x89, 0, seq);
		e_u8(e, 0x58);				/* pop %rax */
	}
	if (fence && !release_xchg) {
		e_u8(e, 0x0f); e_u8(e, 0xae); e_u8(e, 0xf0);	/* mfence */
	}
}

static void crew_detpoint(struct rv_emit *e, struct insn *insn, unsigned long pc,
			  enum rv_detpoint kind)
{
	struct rv_emit c;
	u8 *j, *back, *db;

	if (rv_bdebug & 2)
		return;
	e_u8(e, 0x50);					/* push %rax */
	e_u8(e, 0x0f); e_u8(e, 0x90); e_u8(e, 0xc0);	/* seto %al */
	e_u8(e, 0x9f);					/* lahf */
	e_gs_movq_imm(e, RV_GS(dp_pc), (u32)(kind == RV_DP_HLT ? pc + insn->length : pc));
	e_gs(e, 0x48, 0xff, 1, RV_GS(dp_remain));	/* decq %gs:dp_remain */
	j = e_jcc32(e, 0x4);				/* jz doorbell */
	back = e->p;
	e_u8(e, 0x04); e_u8(e, 0x7f);			/* add $0x7f,%al */
	e_u8(e, 0x9e);					/* sahf */
	e_u8(e, 0x58);					/* pop %rax */
	db = rv_cold_alloc(16, 16);
	if (!db) {
		e->p = j - 2;				/* no doorbell: a plain count */
		e_u8(e, 0x04); e_u8(e, 0x7f); e_u8(e, 0x9e); e_u8(e, 0x58);
		return;
	}
	c.p = db;
	e_u8(&c, 0xe6); e_u8(&c, RVG_PORT_DB);		/* out %al,$port */
	e_jmp(&c, (unsigned long)back);
	fill(j, db);
}

/*
 * invlpg, invpcid, mov to a control register but CR3: the vtlb holds
 * global pages only (crewslow.c), which a CR3 write keeps, as the
 * hardware TLB does; the kernel changes them with invlpg or a global
 * flush (invpcid, CR4.PGE).  bdebug=16384: CR3 writes empty it too.
 */
static bool flushes_tlb(struct insn *insn)
{
	u8 op1 = insn->opcode.bytes[1], modrm = insn->modrm.bytes[0];

	if (insn->opcode.bytes[0] != 0x0f)
		return false;
	if (op1 == 0x01)
		return insn->modrm.nbytes && X86_MODRM_MOD(modrm) != 3 && X86_MODRM_REG(modrm) == 7;
	if (op1 == 0x22)
		return X86_MODRM_REG(modrm) != 3 || (rv_bdebug & 16384);
	return op1 == 0x38 && insn->opcode.bytes[2] == 0x82;
}

/* before every instruction: a TLB flush empties this CPU's vtlb first */
static void crew_at(struct rv_emit *e, struct insn *insn, unsigned long pc)
{
	u8 *imm;

	if (!flushes_tlb(insn) || (rv_bdebug & 1024))
		return;
	e_gs_movq_imm(e, RV_GS(x_dest), 0);		/* movq $next,%gs:x_dest */
	imm = e->p - 4;
	e_jmp(e, rv_vtlb_flush_common);
	*(u32 *)rv_w(imm, 4) = (u32)(unsigned long)e->p;
	rv_cc.tlb_flush_sites++;
}

static const struct rv_instrumentation crew_instr = {
	.name = "crew",
	.at = crew_at,
	.mem = crew_mem,
	.post = crew_post,
	.detpoint = crew_detpoint,
};

const struct rv_instrumentation *rv_crew_instrumentation(void)
{
	return &crew_instr;
}
