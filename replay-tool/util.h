/* Helpers shared by replay-vm subcommands. */
#ifndef REPLAY_TOOL_UTIL_H
#define REPLAY_TOOL_UTIL_H

#include <stdint.h>
#include <stdio.h>

#include "rrlog.h"

/* Exit codes shared by all commands. */
#define EXIT_OK        0
#define EXIT_FAIL      1   /* bad log / runtime error */
#define EXIT_USAGE     64  /* bad command line (sysexits EX_USAGE) */

/* True if argv has -h/--help; then prints usage to stdout. */
int want_help(int argc, char **argv, const char *usage);

/* Parse a decimal/0x number; 0 on success, else prints "bad NAME". */
int parse_u64(const char *s, const char *name, uint64_t *out);

/* Open a log, printing "replay-vm: PATH: error" on failure. */
rr_reader *open_log(const char *path);

void print_hex(FILE *f, const uint8_t *p, size_t len, size_t max);
void json_string(FILE *f, const char *s);

/* "1.23 MB" style, static buffer per call slot (0..3). */
const char *human_bytes(uint64_t n, int slot);

#endif
