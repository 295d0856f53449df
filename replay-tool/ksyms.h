/*
 * Kernel text symbols (build/image/kallsyms.txt: "ADDR NAME" lines), so that
 * a divergence report can say which kernel function a logged rip is in.
 */
#ifndef KSYMS_H
#define KSYMS_H

#include <stddef.h>
#include <stdint.h>

struct ksyms {
	struct ksym { uint64_t addr; char *name; } *v;
	size_t n;
};

/* 0, or -1 (no such file, or nothing usable in it): an empty table */
int ksyms_load(struct ksyms *ks, const char *path);
/* "name+0xoff" into buf, or "" when addr is below the first symbol */
const char *ksyms_format(const struct ksyms *ks, uint64_t addr, char *buf, size_t len);
void ksyms_free(struct ksyms *ks);

/*
 * Kernel addresses (>= 0xffffffff80000000) written as 0x... in text, each
 * once, into out[max]; returns how many.
 */
size_t ksyms_scan(const char *text, uint64_t *out, size_t n, size_t max);

#endif
