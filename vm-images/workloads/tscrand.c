/* tscrand: nondeterministic inputs that a replay must reproduce: rdtsc,
 * rdtscp, rdrand/rdseed (when cpuid reports them), /dev/urandom,
 * getrandom(), gettimeofday(), clock_gettime().  The RESULT hash differs
 * on every run unless the run is a faithful replay. */
#include "common.h"

#include <cpuid.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static uint64_t hash;
static long values;

static void take(const char *what, long round, uint64_t v)
{
	printf("%-14s[%ld] = 0x%016llx (%llu)\n", what, round,
	       (unsigned long long)v, (unsigned long long)v);
	hash = hash_u64(hash, v);
	values++;
}

#if defined(__x86_64__) || defined(__i386__)
static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t rdtscp(uint32_t *aux)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(*aux));
	return ((uint64_t)hi << 32) | lo;
}

/* Returns 1 and the value on success, 0 if the CPU gave no value. */
static int rdrand64(uint64_t *v)
{
	unsigned char ok;
	int tries;

	for (tries = 0; tries < 100; tries++) {
		__asm__ volatile("rdrand %0; setc %1" : "=r"(*v), "=qm"(ok) : : "cc");
		if (ok)
			return 1;
	}
	return 0;
}

static int rdseed64(uint64_t *v)
{
	unsigned char ok;
	int tries;

	for (tries = 0; tries < 1000; tries++) {
		__asm__ volatile("rdseed %0; setc %1" : "=r"(*v), "=qm"(ok) : : "cc");
		if (ok)
			return 1;
		__asm__ volatile("pause");
	}
	return 0;
}
#endif

int main(int argc, char **argv)
{
	long rounds = 3, r;
	int opt, has_rdtscp = 0, has_rdrand = 0, has_rdseed = 0, ufd;
	unsigned a, b, c, d;

	wl_init("tscrand", "[-n ROUNDS (3)]");
	while ((opt = getopt(argc, argv, "n:")) != -1) {
		switch (opt) {
		case 'n': rounds = arg_long(optarg, opt, 1, 1000000); break;
		default: wl_usage();
		}
	}
	if (optind != argc)
		wl_usage();

#if defined(__x86_64__) || defined(__i386__)
	if (__get_cpuid(1, &a, &b, &c, &d))
		has_rdrand = !!(c & bit_RDRND);
	if (__get_cpuid_max(0, NULL) >= 7 && __get_cpuid_count(7, 0, &a, &b, &c, &d))
		has_rdseed = !!(b & bit_RDSEED);
	if (__get_cpuid(0x80000001, &a, &b, &c, &d))
		has_rdtscp = !!(d & (1u << 27));
#else
	(void)a; (void)b; (void)c; (void)d;
#endif
	progress("cpuid: rdtscp=%d rdrand=%d rdseed=%d", has_rdtscp, has_rdrand, has_rdseed);
	ufd = open("/dev/urandom", O_RDONLY);
	if (ufd < 0)
		die("open /dev/urandom:");

	hash = HASH_INIT;
	for (r = 0; r < rounds; r++) {
		struct timeval tv;
		struct timespec ts;
		uint64_t v;

#if defined(__x86_64__) || defined(__i386__)
		take("rdtsc", r, rdtsc());
		if (has_rdtscp) {
			uint32_t aux;

			v = rdtscp(&aux);
			take("rdtscp", r, v);
			take("rdtscp.aux", r, aux);
		}
		if (has_rdrand) {
			if (!rdrand64(&v))
				die("rdrand returned no value (100 tries)");
			take("rdrand", r, v);
		}
		if (has_rdseed) {
			if (!rdseed64(&v))
				die("rdseed returned no value (1000 tries)");
			take("rdseed", r, v);
		}
#endif
		if (read_full(ufd, &v, sizeof(v)) != sizeof(v))
			die("read /dev/urandom:");
		take("urandom", r, v);
		if (getrandom(&v, sizeof(v), 0) != sizeof(v))
			die("getrandom:");
		take("getrandom", r, v);
		gettimeofday(&tv, NULL);
		take("gettimeofday", r, (uint64_t)tv.tv_sec * 1000000 + tv.tv_usec);
		clock_gettime(CLOCK_REALTIME, &ts);
		take("realtime", r, (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		take("monotonic", r, (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
	}
	close(ufd);
	result("values=%ld rdtscp=%d rdrand=%d rdseed=%d hash=%016llx",
	       values, has_rdtscp, has_rdrand, has_rdseed, (unsigned long long)hash);
	return 0;
}
