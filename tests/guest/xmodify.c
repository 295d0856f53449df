/*
 * Cross-modifying code, the way the kernel's text_poke_bp() does it: one
 * thread rewrites an instruction that another thread runs and then tells
 * it so; the other, once told, executes a serializing instruction (cpuid)
 * and from then on must run the new instruction (Intel SDM vol. 3 8.1.3).
 *
 * The code is "mov $k, %eax; ret" in a page of its own.  Round k: the
 * writer stores k and publishes it; the runner sees it, acknowledges, runs
 * cpuid and calls the code, which must return k or more (the writer may
 * already be storing k + 1).  A smaller value is a translation of the old
 * instruction that outlived the store: a stale translated block.
 *
 * usage: xmodify ROUNDS [SECONDS]
 * prints "RESULT xmodify rounds=N stale=S", N the rounds done: the writer
 * stops early after SECONDS.  Both threads spin, so on a host with fewer
 * free cores than vCPUs a round can cost a host time slice (a busy host
 * once made 300000 rounds take over 1000 s): the time bound keeps such a
 * run to a known length, and the caller judges whether N was enough.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static unsigned char *code;
static _Atomic unsigned long published, acked;
/* the last round: lowered by the writer when its time is up */
static _Atomic unsigned long last;

static int run_code(void)
{
	return ((int (*)(void))code)();
}

static void *runner(void *arg)
{
	unsigned long k, stale = 0;
	unsigned int a, b, c, d;

	for (k = 1; k <= atomic_load(&last); k++) {
		int v;

		while (atomic_load(&published) < k)
			if (atomic_load(&last) < k)
				return (void *)stale;
		atomic_store(&acked, k);
		__cpuid(0, a, b, c, d);
		v = run_code();
		if (v < (int)k && ++stale <= 5)
			printf("stale: round %lu ran the code of round %d\n", k, v);
	}
	return (void *)stale;
}

int main(int argc, char **argv)
{
	pthread_t t;
	void *stale;
	unsigned long k, rounds;
	struct timespec t0, now;
	double seconds;

	rounds = argc > 1 ? strtoul(argv[1], NULL, 0) : 100000;
	seconds = argc > 2 ? strtod(argv[2], NULL) : 1e9;
	atomic_store(&last, rounds);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memcpy(code, "\xb8\0\0\0\0\xc3", 6);	/* mov $0, %eax; ret */
	run_code();
	if (pthread_create(&t, NULL, runner, NULL))
		return 1;
	for (k = 1; k <= rounds; k++) {
		/* the store a concurrent translation must not miss */
		__atomic_store_n((unsigned int *)(code + 1), (unsigned int)k,
				 __ATOMIC_RELEASE);
		atomic_store(&published, k);
		while (atomic_load(&acked) < k)
			;
		if (k % 1024)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec + (now.tv_nsec - t0.tv_nsec) * 1e-9 > seconds) {
			rounds = k;
			atomic_store(&last, k);
			break;
		}
	}
	pthread_join(t, &stale);
	printf("RESULT xmodify rounds=%lu stale=%lu\n", rounds,
	       (unsigned long)stale);
	return 0;
}
