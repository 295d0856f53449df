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
#include "crewinstr.h"

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

void *rv_cold_alloc(unsigned long size, unsigned long align)
{
	struct rv_cache *c = rv_cache;
	unsigned long off = ALIGN(cold_used, align);

	if (off + size > c->size)
		return NULL;
	cold_used = off + size;
	return c->base + off;
}

void rv_text_write(void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
}
