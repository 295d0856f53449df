#ifndef REPLAY_TOOL_PROGRESS_H
#define REPLAY_TOOL_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

/*
 * Replay progress from QEMU's "progress N" lines: a bar with events/s and
 * ETA redrawn in place on a terminal, a plain line now and then otherwise
 * (logs of CI jobs and scripts stay readable).
 */
struct progress {
	FILE *out;
	int tty;
	uint64_t total;         /* events in the log; 0 if unknown */
	double t0, last_shown;
	int drawn;              /* a bar is on the terminal's last line */
};

void progress_init(struct progress *p, FILE *out, int tty, uint64_t total);
void progress_update(struct progress *p, uint64_t done);
/* Before other output on the same terminal: take the bar away. */
void progress_clear(struct progress *p);

/* "1.5k", "3.2M": short counts for the bar (buf of 24 bytes) */
const char *progress_count(double n, char *buf);
/* "0:42", "1:02:03" (buf of 24 bytes) */
const char *progress_duration(double s, char *buf);

#endif
