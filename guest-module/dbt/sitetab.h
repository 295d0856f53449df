/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A table of vmlinux code sites sorted by address (jump labels, static
 * calls).  Each entry starts with its site's address; the rest belongs to
 * the table's user.
 */
#ifndef RV_SITETAB_H
#define RV_SITETAB_H

#include <linux/types.h>

struct rv_sitetab {
	void *ents;
	unsigned long n, max, bytes;
	size_t size;
};

int rv_sitetab_alloc(struct rv_sitetab *t, unsigned long max, size_t size);
void *rv_sitetab_add(struct rv_sitetab *t, unsigned long pc);
void rv_sitetab_sort(struct rv_sitetab *t);
void *rv_sitetab_find(const struct rv_sitetab *t, unsigned long pc);
void rv_sitetab_free(struct rv_sitetab *t);

#endif
