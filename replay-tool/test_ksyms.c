/* unit test of ksyms.c (make check-ksyms) */
#include "ksyms.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fails;

#define CHECK(c, ...) do { if (!(c)) { fails++; printf("FAIL %s:%d: ", __FILE__, __LINE__); \
	printf(__VA_ARGS__); printf("\n"); } } while (0)

int main(void)
{
	char path[] = "/tmp/ksymsXXXXXX", buf[128];
	struct ksyms ks;
	uint64_t a[8];
	size_t n;
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");

	/* out of order, a junk line, two names at one address */
	fputs("ffffffff810b7320 get_signal\n"
	      "garbage\n"
	      "ffffffff81000000 _stext\n"
	      "ffffffff810b7c00 do_signal_stop\n", f);
	fclose(f);
	CHECK(ksyms_load(&ks, path) == 0 && ks.n == 3, "load: %zu symbols", ks.n);
	CHECK(!strcmp(ksyms_format(&ks, 0xffffffff810b769bull, buf, sizeof(buf)),
		      "get_signal+0x37b"), "lookup: %s", buf);
	CHECK(!strcmp(ksyms_format(&ks, 0xffffffff810b7c00ull, buf, sizeof(buf)),
		      "do_signal_stop+0x0"), "exact: %s", buf);
	CHECK(!strcmp(ksyms_format(&ks, 0xffffffff80ffffffull, buf, sizeof(buf)), ""),
	      "below the first: %s", buf);
	ksyms_free(&ks);
	unlink(path);
	CHECK(ksyms_load(&ks, path) == -1 && ks.n == 0, "missing file");

	n = ksyms_scan("at (rip=0xffffffff810b769b rcx=0x0) pc 0xffffffff810b769b, "
		       "0xffffffff8103d4d6 addr=0x1df19a44 0x7ffde274c6b8 0xffffffff8103d4d6",
		       a, 0, 8);
	CHECK(n == 2 && a[0] == 0xffffffff810b769bull && a[1] == 0xffffffff8103d4d6ull,
	      "scan: %zu", n);
	CHECK(ksyms_scan("0xffffffff81000000 0xffffffff81000001", a, 0, 1) == 1, "max");
	if (fails)
		return 1;
	printf("ksyms: ok\n");
	return 0;
}
