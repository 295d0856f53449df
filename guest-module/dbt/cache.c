// SPDX-License-Identifier: GPL-2.0
/*
 * The code cache.  It must sit within +-2 GB of the kernel text so that
 * RIP-relative operands and rel32 branches of translated code still reach
 * their targets: it is allocated from the module area with the kernel's
 * module_alloc() and made executable.  The fast lookup table lives next to
 * it (addressed with absolute 32-bit displacements by the lookup stub).
 */
#include <linux/kernel.h>
#include <linux/vmalloc.h>
#include <linux/slab.h>
#include "rv.h"
#include "emit.h"
#include "crew/crewinstr.h"

struct rv_cache *rv_cache;
/*
 * In the module's own data, not kmalloc'd: byte CREW leaves module memory
 * out of the host's RAM hashes, and the bump pointers here change
 * differently in a recording and its replay.
 */
static struct rv_cache rv_cache_mem;
static int (*set_memory_nx_p)(unsigned long addr, int numpages);

/*
 * Byte mode: instrumented blocks are several times larger, and the
 * instrumentation's out-of-line code (slow-path stubs, doorbells) goes to
 * a cold arena at the end of the cache.
 */
#define RV_CACHE_BYTE_HOT	(48UL << 20)
#define RV_CACHE_BYTE_COLD	(16UL << 20)
#define RV_CACHE_TRAIN_COLD	(32UL << 20)	/* training: 3 stubs per site */
static unsigned long hot_size, cold_used;

int rv_cache_create(void)
{
	unsigned long ft = RV_FT_SIZE * sizeof(u64);
	unsigned long csize = rv_byte ? RV_CACHE_BYTE_HOT + RV_CACHE_BYTE_COLD :
			      rv_train ? RV_CACHE_BYTE_HOT + RV_CACHE_TRAIN_COLD : RV_CACHE_SIZE;
	unsigned long size = csize + ft;
	struct rv_cache *c;
	u8 *mem;

	c = &rv_cache_mem;
	memset(c, 0, sizeof(*c));
	mem = rv_k.module_alloc(size);
	if (!mem)
		return -ENOMEM;
	memset(mem, 0xcc, csize);
	memset(mem + csize, 0, ft);
	rv_k.set_memory_x((unsigned long)mem, csize >> PAGE_SHIFT);
	set_memory_nx_p = (void *)rv_ksym("set_memory_nx");

	c->alloc_base = mem;
	c->alloc_size = size;
	c->base = mem;
	c->size = csize;
	c->ft_vals = (u64 *)(mem + csize);
	hot_size = (rv_byte || rv_train) ? RV_CACHE_BYTE_HOT : csize;
	cold_used = hot_size;
	rv_cache = c;

	pr_info(RV_PR "code cache %px..%px (%lu KiB), text %px..%px, max distance %ld MiB\n",
		mem, mem + size, size >> 10, (void *)rv_k.stext, (void *)rv_k.etext,
		(long)((unsigned long)mem + size - rv_k.stext) >> 20);
	if (!rv_fits32((long)(unsigned long)mem + size - (long)rv_k.stext) ||
	    !rv_fits32((long)(unsigned long)mem) || !rv_fits32((long)(unsigned long)mem + size)) {
		pr_err(RV_PR "code cache out of rel32 reach of the kernel text\n");
		rv_cache_destroy(false);
		return -ERANGE;
	}
	return 0;
}

void rv_cache_destroy(bool leak)
{
	struct rv_cache *c = rv_cache;

	if (!c)
		return;
	rv_cache = NULL;
	if (leak) {
		pr_err(RV_PR "code cache %px still in use: left allocated\n", c->base);
		return;
	}
	if (set_memory_nx_p)
		set_memory_nx_p((unsigned long)c->alloc_base, c->size >> PAGE_SHIFT);
	vfree(c->alloc_base);
}

/* arena allocation; caller holds rv_lock (or is single-threaded setup) */
void *rv_cache_alloc(unsigned long size, unsigned long align)
{
	struct rv_cache *c = rv_cache;
	unsigned long off = ALIGN(c->used, align);

	if (off + size > hot_size)
		return NULL;
	c->used = off + size;
	return c->base + off;
}

/* the cold arena (byte mode); caller holds rv_lock */
unsigned long rv_cold_used(void)
{
	return cold_used > hot_size ? cold_used - hot_size : 0;
}

/*
 * Not memset(): rv_cold_alloc() runs from coherence.c's kretprobe handler
 * too, where kernel text would run natively; WRITE_ONCE keeps the compiler
 * from turning the loop into a memset() call.
 */
static void fill_int3(u8 *p, unsigned long n)
{
	while (n--)
		WRITE_ONCE(*p++, 0xcc);
}

void *rv_cold_alloc(unsigned long size, unsigned long align)
{
	struct rv_cache *c = rv_cache;
	struct rv_stage *s = &rv_stage[1];
	unsigned long off = ALIGN(cold_used, max(align, 8UL));
	u8 *p = c->base + off, *gap;

	if (off + size > c->size)
		return NULL;
	/* past the window's end: the window stops before it (direct stores) */
	if (p < s->hi && p + size > s->hi)
		s->hi = p;
	gap = max(c->base + cold_used, s->lo);
	if (p > gap && gap < s->hi)		/* alignment padding, staged */
		fill_int3(rv_w(gap, 1), min(p, s->hi) - gap);
	cold_used = off + size;
	return p;
}

struct rv_stage rv_stage[RV_NSTAGE];
/* a block's bytes (BLOCK_MAX_BYTES, translate.c) and its cold allocations */
#define STAGE_BLOCK	9216
#define STAGE_COLD	32768
static u8 stage_block[STAGE_BLOCK], stage_cold[STAGE_COLD];
static u64 stage_bypassed;

void *rv_stage_overrun(u8 *p, unsigned int n)
{
	WARN_ONCE(1, RV_PR "emitted %u bytes at %px across a staging window\n", n, p);
	return p;
}

/* stage the block at @blk (@len bytes reserved) and the cold arena's rest */
void rv_stage_begin(u8 *blk, unsigned long len)
{
	struct rv_cache *c = rv_cache;
	u8 *cold = c->base + ALIGN(cold_used, 8), *end = c->base + c->size;

	BUG_ON(len > STAGE_BLOCK || ((unsigned long)blk & 7));
	rv_stage[0] = (struct rv_stage){ blk, blk + len, stage_block };
	if (cold < end)
		rv_stage[1] = (struct rv_stage){ cold, min(cold + STAGE_COLD, end), stage_cold };
}

/*
 * Copy a window's first @n bytes into the cache, 8 at a time (the tail
 * padded with int3 like the fresh cache around it).  The cache there must
 * still hold the 0xcc it was filled with: anything else is a store that
 * went around rv_w(), which the copy would undo.
 */
static void stage_copy(struct rv_stage *s, unsigned long n)
{
	unsigned long i, m = ALIGN(n, 8);

	for (i = 0; i < m; i += 8)
		if (*(u64 *)(s->lo + i) != 0xccccccccccccccccULL) {
			stage_bypassed++;
			WARN_ONCE(1, RV_PR "code cache at %px written around its staging\n",
				  s->lo + i);
			break;
		}
	memset(s->buf + n, 0xcc, m - n);
	for (i = 0; i < m; i += 8)
		WRITE_ONCE(*(u64 *)(s->lo + i), *(u64 *)(s->buf + i));
}

/* the block ends at @blk_end: copy both windows into the cache, stage nothing */
void rv_stage_commit(u8 *blk_end)
{
	struct rv_stage *b = &rv_stage[0], *s = &rv_stage[1];
	u8 *cold_end = rv_cache->base + cold_used;

	stage_copy(b, blk_end - b->lo);
	if (s->lo && cold_end > s->lo)
		stage_copy(s, min(cold_end, s->hi) - s->lo);
	memset(rv_stage, 0, sizeof(rv_stage));
}

u64 rv_stage_bypassed(void)
{
	return stage_bypassed;
}

void rv_text_write(void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
}
