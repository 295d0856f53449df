/*
 * A QEMU that crashes while replaying prints the signal, its binary's load
 * address and a backtrace on stderr (QEMU patch 0041).  The frames in the
 * QEMU binary are resolved here with addr2line into function, file and
 * line, so a rare crash says where it happened without a core dump.
 */
#ifndef QEMU_CRASH_H
#define QEMU_CRASH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define QEMU_CRASH_FRAMES 64

struct qemu_crash {
	uint64_t base;		/* the binary's load address, from the crash line */
	int seen, in_trace;
	size_t n;
	uint64_t off[QEMU_CRASH_FRAMES];	/* call sites, as offsets into the binary */
};

/* one line of QEMU's stderr; @qemu: the binary that was run */
void qemu_crash_line(struct qemu_crash *c, const char *line, const char *qemu);
/*
 * After a crash: the frames resolved by "addr2line -e @qemu" on @out.
 * Returns the number of frames resolved; 0 with a note on @out when there
 * is nothing to resolve or addr2line cannot run.
 */
size_t qemu_crash_resolve(const struct qemu_crash *c, const char *qemu, FILE *out);

#endif
