/* kernel text symbols for divergence reports (see ksyms.h) */
#include "ksyms.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KERNEL_LO 0xffffffff80000000ull

static int by_addr(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int ksyms_load(struct ksyms *ks, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[512], name[256];
	size_t cap = 0;
	uint64_t a;

	ks->v = NULL;
	ks->n = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNx64 " %255s", &a, name) != 2)
			continue;	/* not ours to judge: skip what does not parse */
		if (ks->n == cap) {
			struct ksym *v = realloc(ks->v, (cap = cap ? 2 * cap : 4096) * sizeof(*v));

			if (!v)
				break;
			ks->v = v;
		}
		ks->v[ks->n].addr = a;
		if (!(ks->v[ks->n].name = strdup(name)))
			break;
		ks->n++;
	}
	fclose(f);
	/* the file is sorted today; a lookup must not depend on that */
	qsort(ks->v, ks->n, sizeof(*ks->v), by_addr);
	return ks->n ? 0 : -1;
}

const char *ksyms_format(const struct ksyms *ks, uint64_t addr, char *buf, size_t len)
{
	size_t lo = 0, hi = ks->n;

	/* last symbol at or below addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || !len) {
		if (len)
			buf[0] = 0;
		return buf;
	}
	snprintf(buf, len, "%s+0x%" PRIx64, ks->v[lo - 1].name, addr - ks->v[lo - 1].addr);
	return buf;
}

void ksyms_free(struct ksyms *ks)
{
	for (size_t i = 0; i < ks->n; i++)
		free(ks->v[i].name);
	free(ks->v);
	ks->v = NULL;
	ks->n = 0;
}

size_t ksyms_scan(const char *text, uint64_t *out, size_t n, size_t max)
{
	const char *p = text;

	while (n < max && (p = strstr(p, "0x"))) {
		char *end;
		uint64_t a = strtoull(p + 2, &end, 16);
		size_t i;

		if (end - p == 18 && a >= KERNEL_LO) {
			for (i = 0; i < n && out[i] != a; i++)
				;
			if (i == n)
				out[n++] = a;
		}
		p = end > p + 2 ? end : p + 2;
	}
	return n;
}
