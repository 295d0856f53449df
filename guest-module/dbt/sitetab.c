// SPDX-License-Identifier: GPL-2.0
/*
 * Sorted site tables (sitetab.h).
 *
 * rv_sitetab_find() runs from coherence.c's kretprobe handlers too, on the
 * kernel's stack, where the module must not call kernel text: that would
 * run it natively, unordered and without det points (the kernel's
 * bsearch() did, and a recording said so).  So the search is written out
 * here, and only loading and unloading call into the kernel.
 */
#include <linux/kernel.h>
#include <linux/overflow.h>
#include <linux/sort.h>
#include <linux/vmalloc.h>
#include "sitetab.h"

static unsigned long pc_at(const struct rv_sitetab *t, unsigned long i)
{
	return *(const unsigned long *)((const char *)t->ents + i * t->size);
}

static int cmp_pc(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

int rv_sitetab_alloc(struct rv_sitetab *t, unsigned long max, size_t size)
{
	t->n = 0;
	t->max = max;
	t->size = size;
	t->bytes = array_size(max, size);
	t->ents = vmalloc(t->bytes);
	return t->ents ? 0 : -ENOMEM;
}

/* the next entry, its address filled in; the caller fills the rest */
void *rv_sitetab_add(struct rv_sitetab *t, unsigned long pc)
{
	unsigned long *e;

	if (t->n >= t->max)
		return NULL;
	e = (unsigned long *)((char *)t->ents + t->n++ * t->size);
	*e = pc;
	return e;
}

void rv_sitetab_sort(struct rv_sitetab *t)
{
	sort(t->ents, t->n, t->size, cmp_pc, NULL);
}

void *rv_sitetab_find(const struct rv_sitetab *t, unsigned long pc)
{
	unsigned long lo = 0, hi = t->n;

	if (!t->ents)
		return NULL;
	while (lo < hi) {
		unsigned long mid = lo + (hi - lo) / 2, at = pc_at(t, mid);

		if (at == pc)
			return (char *)t->ents + mid * t->size;
		if (at < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void rv_sitetab_free(struct rv_sitetab *t)
{
	vfree(t->ents);
	memset(t, 0, sizeof(*t));
}
