/* Text and JSON renderings of events, shared by dump (and later replay). */
#ifndef REPLAY_TOOL_EVENT_FMT_H
#define REPLAY_TOOL_EVENT_FMT_H

#include <stdio.h>

#include "rrlog.h"

/* One line, no trailing newline; bytes fields show at most 32 bytes. */
void event_print_text(FILE *f, uint64_t index, const Rr__Event *ev);

/* One JSON object, no trailing newline; bytes fields as full hex. */
void event_print_json(FILE *f, uint64_t index, const Rr__Event *ev);

#endif
