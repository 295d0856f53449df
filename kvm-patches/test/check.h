/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The PASS/FAIL lines of the kvm-patches test tools (rrvm_exits.c,
 * rrvm_crew.c): one line per check, counted for the summary line that
 * tests/test_kvm_patch.py parses.
 */
#ifndef RRVM_TEST_CHECK_H
#define RRVM_TEST_CHECK_H

#include <stdarg.h>
#include <stdio.h>

static int passed, failed;

static void check(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", ok ? "PASS" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (ok)
		passed++;
	else
		failed++;
}

#endif /* RRVM_TEST_CHECK_H */
