// SPDX-License-Identifier: GPL-2.0
/*
 * Byte-CREW slow paths, called by slow_common (stubs_byte.c) on this CPU's
 * private stack with interrupts as the translated code had them (the host
 * injects none here: this is not a deterministic point).
 *
 * The site's inline code has pushed rcx, rdx (rdx on top; rax under them
 * where the flags were live) on the kernel stack and left the reason in
 * x_kind, the address (or shadow pointer) in x_addr.
 * Addresses outside the direct map and the kernel image are classified
 * here: user memory is left alone (user space is share-nothing, and a
 * user page the kernel touches through the direct map is ordered there),
 * vmalloc and module memory is translated to its physical address through
 * the page tables, anything else (ioremap) is MMIO: a deterministic point,
 * so that the host can stop the vCPU in an MMIO access at an exact place.
 */
#include <linux/kernel.h>
#include <linux/mm.h>
#include <asm/pgtable.h>
#include "rv.h"
#include "crewinstr.h"
#include "crew.h"
#include "rvg_abi.h"

/* what slow_common pushed on the private stack, and the kernel stack */
struct rv_priv_frame {
	u64 r11, r10, r9, r8, rdi, rsi, rdx, rcx, rax, flags;
};

static void report(struct crew_cpu *c, int err, u64 detail)
{
	asm volatile("outl %%eax, %w1" : : "a" (RVG_CMD_ERROR), "Nd" (RVG_PORT_CMD),
		     "D" ((u64)-err), "S" (detail) : "memory");
}

/* an MMIO access of translated code: a deterministic point, from C */
static void mmio_detpoint(struct rv_vcpu *v, unsigned long pc)
{
	v->stats[RV_BS_MMIO]++;
	WRITE_ONCE(v->dp_pc, pc);
	if (--v->dp_remain == 0)
		asm volatile("outb %%al, %w0" : : "Nd" (RVG_PORT_DB_MMIO), "a" (0) : "memory");
}

enum { CL_SKIP, CL_RAM, CL_MMIO };

/*
 * kernel address -> physical (RAM the shadow covers) or why not;
 * *global: the mapping is the same in every address space (a global
 * page), so a CR3 write does not change it
 */
static int rv_classify(unsigned long a, unsigned long *phys, bool *global)
{
	unsigned int level;
	unsigned long pfn, off;
	pte_t *pte;

	*global = true;
	if (a - rv_cc.page_offset < rv_cc.span) {
		*phys = a - rv_cc.page_offset;
		return CL_RAM;
	}
	if (a - rv_cc.kimg_start < rv_cc.kimg_size) {
		*phys = a - rv_cc.kimg_start + rv_cc.phys_base;
		return CL_RAM;
	}
	if (a < TASK_SIZE_MAX)
		return CL_SKIP;
	pte = lookup_address(a, &level);
	if (!pte || !pte_present(*pte))
		return CL_SKIP;			/* it will fault; nothing to own */
	*global = pte_flags(*pte) & _PAGE_GLOBAL;	/* the same bit in a 2M/1G entry */
	pfn = pte_pfn(*pte);
	switch (level) {
	case PG_LEVEL_2M:
		off = a & ~PMD_MASK;
		break;
	case PG_LEVEL_1G:
		off = a & ~PUD_MASK;
		break;
	default:
		off = a & ~PAGE_MASK;
	}
	*phys = (pfn << PAGE_SHIFT) + off;
	if (*phys >= rv_cc.span || !pfn_valid(*phys >> PAGE_SHIFT))
		return CL_MMIO;
	return CL_RAM;
}

DEFINE_PER_CPU(struct rv_vtlb, rv_vtlb);

/*
 * After a miss of the inline lookup (crewinstr.c): remember where @a's
 * page is, if it is RAM the shadow covers, mapped by a global page.  Only
 * global pages: a CR3 write (a task switch) then changes no entry, and
 * only invlpg, invpcid and CR0/CR4 writes empty the vtlb (crewinstr.c).
 * Runs on this CPU with no interrupt possible (none is delivered outside
 * deterministic points), like the inline lookup that reads the entry.
 */
static int vtlb_fill(unsigned long a, unsigned long *phys)
{
	struct rv_vtlb *t = this_cpu_ptr(&rv_vtlb);
	unsigned long i = (a >> PAGE_SHIFT) & (RV_VTLB_SIZE - 1);
	bool global;
	int cl = rv_classify(a, phys, &global);	/* never user memory */
	bool ram = cl == CL_RAM && global;

	if ((rv_bdebug & 512) && t->e[i].vpn == a >> PAGE_SHIFT) {
		/* an access the lookup would have let through: was it right? */
		t->checked++;
		if (!ram || t->e[i].delta != (s64)(*phys - a)) {
			if (t->stale++ < 4)
				pr_err(RV_PR "vtlb: stale entry for %lx: phys %llx, page tables %s%lx\n",
				       a, a + t->e[i].delta, ram ? "" : "(not global RAM) ", *phys);
			t->e[i].vpn = 0;
		}
	}
	if (!ram)
		return cl;
	t->e[i].vpn = a >> PAGE_SHIFT;
	t->e[i].delta = *phys - a;
	t->fills++;
	return cl;
}

/*
 * rv_classify through the vtlb (byte mode: training never empties it):
 * the page walk of an address outside the direct map and the kernel
 * image (vmalloc'd stacks, modules) once per page, not per slow path
 */
static int classify(unsigned long a, unsigned long *phys)
{
	struct rv_vtlb *t = this_cpu_ptr(&rv_vtlb);
	unsigned long i = (a >> PAGE_SHIFT) & (RV_VTLB_SIZE - 1);
	bool global;

	if (rv_train)
		return rv_classify(a, phys, &global);
	/* bdebug=512: every use checks the entry against the page tables */
	if (!(rv_bdebug & 512) && t->e[i].vpn == a >> PAGE_SHIFT && a >= TASK_SIZE_MAX) {
		*phys = a + t->e[i].delta;
		return CL_RAM;
	}
	return vtlb_fill(a, phys);
}

/* a TLB-flushing instruction is next (stubs_byte.c: vtlb_flush_common) */
void rv_vtlb_flush(void)
{
	struct rv_vtlb *t = this_cpu_ptr(&rv_vtlb);

	memset(t->e, 0, sizeof(t->e));
	t->flushes++;
}

/*
 * Whether this vCPU owns [phys, phys + len) (all of it, for a write); a
 * page it found its own before and that no transfer touched since is
 * answered without a pass over its shadow (crew_owns_span).
 */
static bool owns(struct crew_cpu *c, unsigned long phys, unsigned long len, bool write)
{
	return crew_owns_span(c, (const void *)phys, len, write);
}

/* record: take [phys, phys + len), in pieces the core accepts */
static int take(struct crew_cpu *c, unsigned long phys, unsigned long len, bool write)
{
	int ret = 0;

	while (len && !ret) {
		unsigned long n = min(len, CREW_RANGE_MAX - (phys & (CREW_RANGE_MAX - 1)));

		if (!owns(c, phys, n, write))
			ret = crew_acquire_slow(c, (void *)phys, n, write);
		phys += n;
		len -= n;
	}
	return ret;
}

#define MAX_PIECES RV_MAX_PIECES
/*
 * The pieces of a string instruction or a replayed access: per CPU, not
 * on the private stack, which the kernel's automatic zeroing of stack
 * variables (INIT_STACK_ALL_ZERO) would clear on every call (1.5 KiB).
 * Slow paths run one at a time per CPU, with no interrupt.
 */
static DEFINE_PER_CPU(struct rv_piece [RV_MAX_PIECES], rv_pieces);
#define piece rv_piece
#define add_piece_range rv_add_piece_range

/* split [a, a + len) by page, classified; false if too many pieces */
bool rv_add_piece_range(struct piece *p, int *np, unsigned long a, unsigned long len,
			bool write, bool *mmio)
{
	while (len) {
		unsigned long n = min(len, PAGE_SIZE - (a & ~PAGE_MASK)), phys;

		switch (classify(a, &phys)) {
		case CL_RAM:
			if (*np && p[*np - 1].phys + p[*np - 1].len == phys &&
			    p[*np - 1].write == write) {
				p[*np - 1].len += n;
			} else {
				if (*np == MAX_PIECES)
					return false;
				p[*np].phys = phys;
				p[*np].len = n;
				p[*np].write = write;
				(*np)++;
			}
			break;
		case CL_MMIO:
			*mmio = true;
			break;
		}
		a += n;
		len -= n;
	}
	return true;
}

/*
 * Record: own every piece at once.  A transfer of one piece makes this
 * vCPU BLOCKED for a while, during which another may take a piece it
 * already holds: check them all again until none was lost.
 *
 * One piece needs no check: once take() returns this vCPU is ACTIVE, and
 * a vCPU that takes the bytes from it now waits for its access to finish
 * (hole 1), as after the single take() of an RV_SLOW_PHYS site.  Checking
 * anyway could livelock: a vCPU that writes those bytes again and again
 * ends our wait for it each time it blocks to take them back (a vCPU that
 * is not ACTIVE is not waited for), so the check found them gone, round
 * after round; a 2-vCPU racy_kernel recording stopped that way on a
 * folio refcount read in __filemap_get_folio (1 in 10 recordings).
 */
static int take_all(struct crew_cpu *c, struct piece *p, int np)
{
	int i, ret, rounds;

	if (np == 1)
		return take(c, p[0].phys, p[0].len, p[0].write);
	for (rounds = 0; rounds < 1000; rounds++) {
		for (i = 0; i < np; i++) {
			ret = take(c, p[i].phys, p[i].len, p[i].write);
			if (ret)
				return ret;
		}
		for (i = 0; i < np; i++)
			if (!owns(c, p[i].phys, p[i].len, p[i].write))
				break;
		if (i == np)
			return 0;
	}
	return -CREW_ELIVELOCK;
}

/*
 * movs/stos/lods/cmps/scas at @pc (element @size): the ranges it will
 * touch (rep: rcx times), classified into @p
 */
int rv_string_pieces(unsigned long pc, int size, u64 rsi, u64 rdi, u64 rcx, bool down,
		     struct piece *p, int *np, bool *mmio)
{
	u64 count = 1, bytes;
	u8 op = *(u8 *)pc;
	bool rep = false;

	/* prefixes: rep/repne (and a possible 0x66/REX before the opcode) */
	while (op == 0xf3 || op == 0xf2 || op == 0x66 || (op & 0xf0) == 0x40) {
		if (op == 0xf3 || op == 0xf2)
			rep = true;
		op = *(u8 *)++pc;
	}
	if (rep)
		count = rcx;
	if (!count)
		return 0;
	bytes = count * size;
	if (bytes > (1UL << 24))
		bytes = 1UL << 24;		/* a huge rep: the first 16 MiB */
#define RANGE(reg, w) rv_add_piece_range(p, np, down ? (reg) + size - bytes : (reg), bytes, w, mmio)
	switch (op) {
	case 0xa4: case 0xa5:			/* movs: read rsi, write rdi */
		if (!RANGE(rsi, false) || !RANGE(rdi, true))
			return -CREW_EINVAL;
		break;
	case 0xaa: case 0xab:			/* stos: write rdi */
		if (!RANGE(rdi, true))
			return -CREW_EINVAL;
		break;
	case 0xac: case 0xad:			/* lods: read rsi */
		if (!RANGE(rsi, false))
			return -CREW_EINVAL;
		break;
	case 0xa6: case 0xa7:			/* cmps: read both */
		if (!RANGE(rsi, false) || !RANGE(rdi, false))
			return -CREW_EINVAL;
		break;
	case 0xae: case 0xaf:			/* scas: read rdi */
		if (!RANGE(rdi, false))
			return -CREW_EINVAL;
		break;
	}
#undef RANGE
	return 0;
}

/*
 * An untrained site (RV_SLOW_SENTINEL, record only) takes like a trained
 * one; a byte another vCPU owned is counted first: an untrained access to
 * shared memory (train.c; the list missed this pc).
 */
static void note_untrained(struct crew_cpu *c, unsigned long pc, unsigned long phys,
			   unsigned long len, bool write)
{
	const u8 *s = (const u8 *)(rv_cc.shadow_va + phys);
	u8 others = 0;
	unsigned long i;

	if (phys >= rv_cc.span || len > rv_cc.span - phys)
		return;
	for (i = 0; i < len; i++)
		others |= READ_ONCE(s[i]);
	if (others & ~c->mask)
		rv_untrained_event(pc, c->id, write, phys);
}

/* movs/stos/lods/cmps/scas: the ranges it will touch (rep: rcx times) */
static int string_op(struct rv_vcpu *v, struct crew_cpu *c, struct rv_site *site,
		     struct rv_priv_frame *f, bool replay, bool sentinel)
{
	u64 *ks = (u64 *)v->priv_rsp;		/* rdx, rcx the site pushed */
	struct piece *p = *this_cpu_ptr(&rv_pieces);
	bool mmio = false, down = f->flags & X86_EFLAGS_DF;
	int np = 0, ret, i;

	v->stats[RV_BS_STRING]++;
	ret = rv_string_pieces(site->pc, site->size, f->rsi, f->rdi, ks[1], down, p, &np, &mmio);
	if (ret)
		return ret;
	if (mmio)
		mmio_detpoint(v, site->pc);
	for (i = 0; sentinel && !replay && i < np; i++)
		note_untrained(c, site->pc, p[i].phys, p[i].len, p[i].write);
	if (replay || !np)
		return 0;
	return take_all(c, p, np);
}

struct pieces {
	struct piece *p;
	int np;
};

static bool pieces_cover(void *priv, u64 addr)
{
	const struct pieces *ps = priv;
	int i;

	for (i = 0; i < ps->np; i++)
		if (addr - ps->p[i].phys < ps->p[i].len)
			return true;
	return false;
}

/*
 * Replay, at a seq the log has transfers for: they must be this access's
 * (same pc, a range inside what it touches), else the replay has left the
 * recording's path since this vCPU's last check, and says so here.
 * @a: the effective address (x_addr; not for string sites).
 */
static noinline_for_stack int replay_at(struct rv_vcpu *v, struct crew_cpu *c,
					struct rv_site *site, struct rv_priv_frame *f,
					unsigned long a, unsigned long len, bool write)
{
	u64 *ks = (u64 *)v->priv_rsp;
	struct piece *p = *this_cpu_ptr(&rv_pieces);
	struct pieces ps = { p, 0 };
	bool mmio = false;
	int err;

	if (site->string)
		err = rv_string_pieces(site->pc, site->size, f->rsi, f->rdi, ks[1],
				       f->flags & X86_EFLAGS_DF, p, &ps.np, &mmio);
	else
		err = !add_piece_range(p, &ps.np, a, len, write, &mmio);
	/* no pieces (user memory, too many): the pc alone is checked */
	return crew_replay_slow_at(c, site->pc, !err && ps.np ? pieces_cover : NULL, &ps,
				   ps.np ? p[0].phys : 0);
}

void rv_byte_slow(void)
{
	struct rv_vcpu *v = this_cpu_ptr(&rv_vcpu);
	struct crew_cpu *c = (struct crew_cpu *)v->crew;
	struct rv_site *site = (struct rv_site *)v->x_site;
	struct rv_priv_frame *f = (struct rv_priv_frame *)(v->priv_top - sizeof(*f));
	bool replay = rv_byte_replaying(), write = site->dir & RV_MEM_WRITE;
	bool sentinel = v->x_kind & RV_SLOW_SENTINEL;
	unsigned long a = v->x_addr, len = site->size ? site->size : 16;
	struct piece p[2];
	bool mmio = false;
	int ret = 0, np = 0, i;

	v->stats[RV_BS_SLOW]++;
	c->site_pc = site->pc;		/* logged with each transfer it makes */
	switch (v->x_kind & ~RV_SLOW_SENTINEL) {
	case RV_SLOW_SHADOW:
		a -= rv_cc.shadow_va;
		fallthrough;
	case RV_SLOW_PHYS:
		if (sentinel)
			note_untrained(c, site->pc, a, len, write);
		ret = take(c, a, len, write);
		break;
	case RV_SLOW_OTHER:
		v->stats[RV_BS_CLASSIFY]++;
		if (!add_piece_range(p, &np, a, len, write, &mmio))	/* fills the vtlb */
			break;
		if (mmio)
			mmio_detpoint(v, site->pc);
		for (i = 0; sentinel && !replay && i < np; i++)
			note_untrained(c, site->pc, p[i].phys, p[i].len, write);
		if (!replay && np)
			ret = take_all(c, p, np);
		break;
	case RV_SLOW_REPLAY:
		v->stats[RV_BS_REPLAY_WAIT]++;
		ret = replay_at(v, c, site, f, a, len, write);
		break;
	case RV_SLOW_STRING:
		ret = string_op(v, c, site, f, replay, sentinel);
		break;
	}
	if (ret == -CREW_ESITE)
		memcpy(v->bad_site, c->bad_site, sizeof(v->bad_site));
	if (ret)
		report(c, ret, site->pc);
}
