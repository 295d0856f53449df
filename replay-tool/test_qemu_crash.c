/* unit test of qemu_crash.c (make check-qemu-crash) */
#include "qemu_crash.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fails;

#define CHECK(c, ...) do { if (!(c)) { fails++; printf("FAIL %s:%d: ", __FILE__, __LINE__); \
	printf(__VA_ARGS__); printf("\n"); } } while (0)

static __attribute__((noinline)) void *where_called(void)
{
	return __builtin_return_address(0);
}

static void parse(void)
{
	struct qemu_crash c = { 0 };
	const char *q = "/cache/bin/qemu-system-x86_64";

	qemu_crash_line(&c, "/cache/bin/qemu-system-x86_64(+0x10)[0x1011]\n", q);
	CHECK(!c.seen && c.n == 0, "a frame before the crash line counts");
	qemu_crash_line(&c, "replay-vm: QEMU crashed: signal 11, code 1, address 0x8, "
			"vCPU 2, binary at 0x1000\n", q);
	CHECK(c.seen && c.base == 0x1000, "base %#lx", (unsigned long)c.base);
	qemu_crash_line(&c, "./qemu-system-x86_64(+0x4f2c6d)[0x4f3c6d]\n", q);
	qemu_crash_line(&c, "/lib/x86_64-linux-gnu/libc.so.6(ppoll+0xa6)[0x7fb43668a366]\n", q);
	qemu_crash_line(&c, "/cache/bin/qemu-system-x86_64-other(+0x1)[0x1002]\n", q);
	qemu_crash_line(&c, "/cache/bin/qemu-system-x86_64(main+0x12)[0x2001]\n", q);
	qemu_crash_line(&c, "/cache/bin/qemu-system-x86_64(+0x1)[junk]\n", q);
	qemu_crash_line(&c, "/cache/bin/qemu-system-x86_64(+0x1)[0x800]\n", q);	/* below base */
	qemu_crash_line(&c, "garbage without parens\n", q);
	qemu_crash_line(&c, "replay-vm: end of backtrace\n", q);
	qemu_crash_line(&c, "/cache/bin/qemu-system-x86_64(+0x20)[0x1021]\n", q);
	CHECK(c.n == 2 && c.off[0] == 0x4f2c6c && c.off[1] == 0x1000,
	      "frames: %zu (%#lx %#lx)", c.n, (unsigned long)c.off[0], (unsigned long)c.off[1]);
}

/* a frame of this very binary, resolved by the real addr2line */
static void resolve_self(void)
{
	struct qemu_crash c = { 0 };
	char exe[512], line[700], *text = NULL;
	size_t len = 0, got;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	void *ra = where_called();
	Dl_info info;
	FILE *out;

	CHECK(n > 0 && dladdr((void *)where_called, &info), "no exe path or base");
	if (n <= 0)
		return;
	exe[n] = 0;
	snprintf(line, sizeof(line), "replay-vm: QEMU crashed: signal 11, code 1, address 0x0, "
		 "vCPU 0, binary at %p\n", info.dli_fbase);
	qemu_crash_line(&c, line, exe);
	snprintf(line, sizeof(line), "%s(+0x0)[%p]\n", exe, ra);
	qemu_crash_line(&c, line, exe);
	qemu_crash_line(&c, "replay-vm: end of backtrace\n", exe);
	CHECK(c.n == 1, "frames: %zu", c.n);
	out = open_memstream(&text, &len);
	got = qemu_crash_resolve(&c, exe, out);
	fclose(out);
	CHECK(got == 1 && strstr(text, "resolve_self at ") && strstr(text, "test_qemu_crash.c:"),
	      "resolved %zu: %s", got, text);
	free(text);

	/* a binary addr2line cannot read: the offsets are printed to do it by hand */
	text = NULL;
	out = open_memstream(&text, &len);
	got = qemu_crash_resolve(&c, "/nonexistent/qemu", out);
	fclose(out);
	CHECK(got == 0 && strstr(text, "addr2line -f -i -e /nonexistent/qemu 0x"), "%s", text);
	free(text);
}

int main(void)
{
	parse();
	resolve_self();
	if (!fails)
		printf("qemu_crash: all checks passed\n");
	return fails != 0;
}
