// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace test of sitetab.c: lookups against a linear scan, for
 * entries of two sizes, present and absent addresses, a full table and
 * an empty one.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include "../dbt/sitetab.h"

struct ent {
	unsigned long pc;
	unsigned long tag;
	unsigned int extra;
};

static unsigned long rnd(void)
{
	return ((unsigned long)random() << 31) ^ random();
}

static void check(size_t size, unsigned long n)
{
	struct rv_sitetab t;
	unsigned long *pcs = calloc(n + 1, sizeof(*pcs)), i, k;

	assert(!rv_sitetab_alloc(&t, n, size));
	for (i = 0; i < n; i++) {
		unsigned long *e;

		/* even addresses, so odd ones are surely absent */
		pcs[i] = (0xffffffff81000000UL + (rnd() % 0x1000000)) & ~1UL;
		e = rv_sitetab_add(&t, pcs[i]);
		assert(e && *e == pcs[i]);
		if (size >= sizeof(struct ent))
			((struct ent *)e)->tag = pcs[i] ^ 0x5a5a;
	}
	assert(!rv_sitetab_add(&t, 1));		/* full */
	rv_sitetab_sort(&t);
	for (i = 1; i < t.n; i++)
		assert(*(unsigned long *)((char *)t.ents + (i - 1) * size) <=
		       *(unsigned long *)((char *)t.ents + i * size));
	for (i = 0; i < n; i++) {
		struct ent *e = rv_sitetab_find(&t, pcs[i]);

		assert(e && e->pc == pcs[i]);
		if (size >= sizeof(struct ent))
			assert(e->tag == (pcs[i] ^ 0x5a5a));
		assert(!rv_sitetab_find(&t, pcs[i] | 1));
	}
	for (k = 0; k < 10000; k++) {
		unsigned long pc = rnd(), found = 0;

		for (i = 0; i < n; i++)
			found |= pcs[i] == pc;
		assert(!!rv_sitetab_find(&t, pc) == !!found);
	}
	assert(!rv_sitetab_find(&t, 0) && !rv_sitetab_find(&t, ~0UL));
	rv_sitetab_free(&t);
	assert(!t.ents && !rv_sitetab_find(&t, pcs[0]));
	free(pcs);
}

int main(void)
{
	struct rv_sitetab t = { 0 };

	srandom(7);
	assert(!rv_sitetab_find(&t, 0x1234));	/* never allocated */
	check(sizeof(unsigned long) * 2, 0);
	check(sizeof(unsigned long) * 2, 1);
	check(sizeof(unsigned long) * 2, 977);
	check(sizeof(struct ent), 4096);
	printf("sitetab: ok\n");
	return 0;
}
