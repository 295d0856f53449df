// SPDX-License-Identifier: GPL-2.0
/*
 * Training mode: memory the allocators free starts with no owner (issue 7:
 * "memory reuse by allocators does not create false sharing verdicts").
 *
 * Without this, a slab object or page that vCPU 0 used, freed, and vCPU 1
 * got back from the allocator looks shared to training: the first store by
 * vCPU 1 finds bytes owned by vCPU 0 and marks its pc, though the two uses
 * are ordered by the allocator (whose own accesses are instrumented and do
 * get marked).  So the entries of the free functions get a call that
 * resets the shadow of what is freed to 0 (nobody), and the next user's
 * first access is an ordinary unowned take.
 *
 * The hook is emitted in front of the function's first instruction,
 * wherever a translation meets it (block start, or a followed tail jump).
 * SLAB_TYPESAFE_BY_RCU caches are left alone: their objects may be read by
 * RCU readers after the free, and those reads race with the next user.
 * A free of something still in use (a bug, or a refcount the hook guessed
 * wrong) only loses sharing verdicts; training is never recorded.
 */
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/io.h>
#include "rv.h"
#include "dbt/emit.h"
#include "dbt/instrument.h"
#include "crewinstr.h"

enum free_kind { F_KFREE, F_CACHE, F_BULK, F_PAGE, F_PAGE_LIST, F_PAGES_OK, F_NR };

static const char *const free_syms[F_NR] = {
	[F_KFREE] = "kfree",			/* (obj) */
	[F_CACHE] = "kmem_cache_free",		/* (cache, obj) */
	[F_BULK] = "kmem_cache_free_bulk",	/* (cache or NULL, n, objs) */
	[F_PAGE] = "free_unref_page",		/* (page, order): refcount 0 */
	[F_PAGE_LIST] = "free_unref_page_list",	/* (list of order-0 pages) */
	[F_PAGES_OK] = "__free_pages_ok",	/* (page, order, fpi) */
};
static unsigned long free_addr[F_NR];

static bool train_free_reset = true;
module_param(train_free_reset, bool, 0444);
MODULE_PARM_DESC(train_free_reset, "crew=train: freed slab objects and pages lose their owners, so reuse by another vCPU is not counted as sharing (default 1)");

u64 rv_train_frees, rv_train_freed_bytes;

static void reset_phys(unsigned long phys, unsigned long len)
{
	if (phys >= rv_cc.span || len > rv_cc.span - phys)
		return;
	memset((void *)(rv_cc.shadow_va + phys), 0, len);
	rv_train_frees++;			/* racy: a statistic */
	rv_train_freed_bytes += len;
}

/*
 * The head of SLUB's struct kmem_cache (include/linux/slub_def.h, 6.1),
 * which a module cannot include; object_size is checked against
 * kmem_cache_size() before flags is believed.
 */
struct slub_head {
	void __percpu *cpu_slab;
	slab_flags_t flags;
	unsigned long min_partial;
	unsigned int size, object_size;
};

static void reset_obj(struct kmem_cache *s, const void *x)
{
	const struct slub_head *h = (const void *)s;
	size_t len;

	if (ZERO_OR_NULL_PTR(x) || !virt_addr_valid(x))
		return;
	if (s) {
		len = kmem_cache_size(s);
		if (h->object_size != len || (h->flags & SLAB_TYPESAFE_BY_RCU))
			return;
	} else {
		len = ksize(x);
	}
	reset_phys(__pa(x), len);
}

static void reset_pages(struct page *page, unsigned int order)
{
	if (order <= MAX_ORDER)
		reset_phys(page_to_phys(page), PAGE_SIZE << order);
}

/* called at a free function's entry with its first three arguments */
notrace void rv_train_free(unsigned long a0, unsigned long a1, unsigned long kind,
			   unsigned long a2)
{
	struct page *page;
	void **objs;
	unsigned long i;

	switch (kind) {
	case F_KFREE:
		reset_obj(NULL, (const void *)a0);
		break;
	case F_CACHE:
		reset_obj((struct kmem_cache *)a0, (const void *)a1);
		break;
	case F_BULK:
		objs = (void **)a2;
		for (i = 0; i < a1; i++)
			reset_obj((struct kmem_cache *)a0, objs[i]);
		break;
	case F_PAGE:
	case F_PAGES_OK:
		reset_pages((struct page *)a0, a1);
		break;
	case F_PAGE_LIST:
		list_for_each_entry(page, (struct list_head *)a0, lru)
			reset_pages(page, 0);
		break;
	}
}

/*
 * pushfq; push rax..r11; rcx = rdx; edx = kind; call rv_train_free; pops;
 * the function's own arguments are untouched.
 */
void rv_train_at(struct rv_emit *e, struct insn *insn, unsigned long pc)
{
	int k;

	if (!train_free_reset)
		return;
	for (k = 0; k < F_NR && free_addr[k] != pc; k++)
		;
	if (k == F_NR)
		return;
	e_u8(e, 0x9c);					/* pushfq */
	e_u8(e, 0x50);					/* push %rax */
	e_push_scratch(e);
	e_u8(e, 0x48); e_u8(e, 0x89); e_u8(e, 0xd1);	/* mov %rdx,%rcx */
	e_u8(e, 0xba); e_u32(e, k);			/* mov $k,%edx */
	e_call_scrub(e, (unsigned long)rv_train_free);
	e_pop_scratch(e);
	e_u8(e, 0x58);					/* pop %rax */
	e_u8(e, 0x9d);					/* popfq */
}

/* at load, before anything is translated: find the free functions */
void rv_train_free_init(void)
{
	int k;

	for (k = 0; k < F_NR; k++) {
		free_addr[k] = rv_ksym(free_syms[k]);
		if (!free_addr[k] && train_free_reset)
			pr_warn(RV_PR "crew=train: no %s; its frees keep their owners\n",
				free_syms[k]);
	}
}
