#ifndef REPLAY_CMDLINE_H
#define REPLAY_CMDLINE_H

#include "rrlog.h"

/*
 * argv for QEMU replaying @log (NULL-terminated), from @h's recorded command
 * line; @qemu replaces the binary when not NULL; @rr_extra is appended to the
 * -rr replay option (",until=N", or ""). NULL with the reason in @why.
 */
char **replay_argv(const Rr__Header *h, const char *log, const char *qemu,
		   const char *rr_extra, char *why, size_t whylen);

#endif
