/* Shared helpers for the guest workload programs: argument parsing,
 * error handling, checksums, deterministic data and RESULT printing. */
#ifndef WL_COMMON_H
#define WL_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Call first in main(): records the program name (used in messages and
 * the RESULT line) and the usage text, makes stdout line buffered. */
void wl_init(const char *name, const char *usage);
extern const char *wl_name;

/* Print usage to stderr and exit 2. */
__attribute__((noreturn)) void wl_usage(void);

/* Print "<name>: <msg>" to stderr and exit 1.  If the message ends in
 * ':' the current errno text is appended. */
__attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);

/* Parse a numeric option argument (accepts k/K, m/M suffixes = 1000s
 * for counts, and g/G); exits via wl_usage() on malformed or
 * out-of-range input. */
long arg_long(const char *s, int opt, long min, long max);

/* Progress message on stdout, prefixed with the program name. */
__attribute__((format(printf, 1, 2))) void progress(const char *fmt, ...);

/* Print the single final "RESULT <name> <fmt...>" line and flush. */
__attribute__((format(printf, 1, 2))) void result(const char *fmt, ...);

/* 64-bit checksum.  NOT chunking-invariant: always hash the same
 * logical units (a message, a fixed-size block, a whole file). */
#define HASH_INIT 0xcbf29ce484222325ULL
uint64_t hash_bytes(uint64_t h, const void *p, size_t n);
uint64_t hash_u64(uint64_t h, uint64_t v);

/* Fill buf with deterministic pseudo-random bytes derived from seed. */
void fill_pattern(void *buf, size_t n, uint64_t seed);

/* Monotonic time in seconds. */
double now_sec(void);

/* read() until n bytes or EOF; returns bytes read, or -1 on error.
 * write() everything; returns 0, or -1 on error.  Both retry EINTR. */
ssize_t read_full(int fd, void *buf, size_t n);
int write_full(int fd, const void *buf, size_t n);

/* malloc that dies on failure. */
void *xmalloc(size_t n);

#endif
