#include "common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *wl_name = "workload";
static const char *wl_usage_text = "";

void wl_init(const char *name, const char *usage)
{
	wl_name = name;
	wl_usage_text = usage;
	setvbuf(stdout, NULL, _IOLBF, 0);
}

void wl_usage(void)
{
	fprintf(stderr, "usage: %s %s\n", wl_name, wl_usage_text);
	exit(2);
}

void die(const char *fmt, ...)
{
	int err = errno;
	va_list ap;
	size_t len = strlen(fmt);

	fflush(stdout);
	fprintf(stderr, "%s: ", wl_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (len && fmt[len - 1] == ':')
		fprintf(stderr, " %s", strerror(err));
	fputc('\n', stderr);
	exit(1);
}

long arg_long(const char *s, int opt, long min, long max)
{
	char *end;
	long v, mul = 1;

	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || errno)
		goto bad;
	switch (*end) {
	case 'k': case 'K': mul = 1000L; end++; break;
	case 'm': case 'M': mul = 1000L * 1000; end++; break;
	case 'g': case 'G': mul = 1000L * 1000 * 1000; end++; break;
	}
	if (*end || (v && mul > 1 && (v > max / mul || v < min / mul)))
		goto bad;
	v *= mul;
	if (v < min || v > max)
		goto bad;
	return v;
bad:
	fprintf(stderr, "%s: bad value for -%c: '%s' (range %ld..%ld)\n",
		wl_name, opt, s, min, max);
	wl_usage();
}

void progress(const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", wl_name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

void result(const char *fmt, ...)
{
	va_list ap;

	printf("RESULT %s ", wl_name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static inline uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

uint64_t hash_u64(uint64_t h, uint64_t v)
{
	h ^= v * 0x9e3779b97f4a7c15ULL;
	return rotl64(h, 29) * 0xbf58476d1ce4e5b9ULL;
}

uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;
	uint64_t w;

	for (; n >= 8; n -= 8, c += 8) {
		memcpy(&w, c, 8);
		h = hash_u64(h, w);
	}
	for (; n; n--, c++)
		h = (h ^ *c) * 0x100000001b3ULL;
	return hash_u64(h, 0x5bd1e995);	/* mark the unit boundary */
}

void fill_pattern(void *buf, size_t n, uint64_t seed)
{
	unsigned char *c = buf;
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 0x2545f4914f6cdd1dULL;

	while (n) {
		/* splitmix64 */
		uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
		size_t k = n < 8 ? n : 8;

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		z ^= z >> 31;
		memcpy(c, &z, k);
		c += k;
		n -= k;
	}
}

double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

ssize_t read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		got += r;
	}
	return got;
}

int write_full(int fd, const void *buf, size_t n)
{
	while (n) {
		ssize_t r = write(fd, buf, n);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf = (const char *)buf + r;
		n -= r;
	}
	return 0;
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}
