// SPDX-License-Identifier: GPL-2.0
/*
 * kvm_exit_cost: what one KVM exit costs, by kind, with a bare real-mode
 * vCPU (no QEMU).  It tells whether a replay that finds a forced stop
 * (QEMU 0055: a hardware breakpoint, one KVM_EXIT_DEBUG per pass over the
 * stop's rip, each resumed with RF through KVM_GET_REGS/KVM_SET_REGS)
 * would gain from filtering those hits inside KVM.
 *
 *   kvm_exit_cost [N] [ROUNDS]     (default 20000 exits, 3 rounds)
 *
 * Per round, interleaved, N exits of each kind:
 *   cpuid  handled inside KVM (what a filtered hit would cost; no CPUID
 *          table is set, KVM answers zeros)
 *   out    a port write to userspace and straight back (one KVM_RUN)
 *   bp     a hardware breakpoint hit, resumed as the replay does
 *          (KVM_GET_REGS, KVM_SET_REGS with RF, KVM_RUN)
 * and prints microseconds per exit and the ratios to cpuid.
 *
 * Build: cc -std=c11 -static -O2 -Wall -o kvm_exit_cost kvm_exit_cost.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <linux/kvm.h>

#define MEM_SIZE	0x10000
#define CODE		0x1000
#define PORT		0x10
#define RF		(1ULL << 16)

enum kind { K_CPUID, K_OUT, K_BP, K_N };
static const char *const names[K_N] = { "cpuid", "out", "bp" };

/* 16-bit real mode at CODE; esi counts down, then hlt */
static const uint8_t loops[K_N][16] = {
	/* 1000: xor eax,eax; cpuid; dec esi; jnz 1000; hlt */
	[K_CPUID] = { 0x66, 0x31, 0xc0, 0x0f, 0xa2, 0x66, 0x4e, 0x75, 0xf7,
		      0xf4 },
	/* 1000: out PORT,al; dec esi; jnz 1000; hlt */
	[K_OUT] = { 0xe6, PORT, 0x66, 0x4e, 0x75, 0xfa, 0xf4 },
	/* 1000: nop; dec esi; jnz 1000; hlt (the breakpoint is on the nop) */
	[K_BP] = { 0x90, 0x66, 0x4e, 0x75, 0xfb, 0xf4 },
};

static int kvm, vmfd, vcpu;
static struct kvm_run *run;
static uint8_t *mem;

static void die(const char *what)
{
	fprintf(stderr, "kvm_exit_cost: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void setup(void)
{
	struct kvm_userspace_memory_region region;
	struct kvm_sregs s;
	int size;

	kvm = open("/dev/kvm", O_RDWR);
	if (kvm < 0)
		die("/dev/kvm");
	vmfd = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vmfd < 0)
		die("KVM_CREATE_VM");
	mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		die("mmap");
	region = (struct kvm_userspace_memory_region) {
		.memory_size = MEM_SIZE, .userspace_addr = (uintptr_t)mem,
	};
	if (ioctl(vmfd, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		die("KVM_SET_USER_MEMORY_REGION");
	vcpu = ioctl(vmfd, KVM_CREATE_VCPU, 0);
	if (vcpu < 0)
		die("KVM_CREATE_VCPU");
	size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	run = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED)
		die("mmap kvm_run");
	if (ioctl(vcpu, KVM_GET_SREGS, &s) < 0)
		die("KVM_GET_SREGS");
	s.cs.base = 0;
	s.cs.selector = 0;
	if (ioctl(vcpu, KVM_SET_SREGS, &s) < 0)
		die("KVM_SET_SREGS");
}

static void debug(int on)
{
	struct kvm_guest_debug d = { 0 };

	if (on) {
		d.control = KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_USE_HW_BP;
		d.arch.debugreg[0] = CODE;
		d.arch.debugreg[7] = 0x0600 | 2;	/* G0, execute */
	}
	if (ioctl(vcpu, KVM_SET_GUEST_DEBUG, &d) < 0)
		die("KVM_SET_GUEST_DEBUG");
}

/* run @k's loop @n times; returns the seconds it took */
static double one(enum kind k, uint32_t n)
{
	struct kvm_regs r = { .rip = CODE, .rsi = n, .rflags = 2 };
	struct timespec a, b;
	uint64_t exits = 0;

	memcpy(mem + CODE, loops[k], sizeof(loops[k]));
	if (ioctl(vcpu, KVM_SET_REGS, &r) < 0)
		die("KVM_SET_REGS");
	debug(k == K_BP);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (;;) {
		if (ioctl(vcpu, KVM_RUN, 0) < 0) {
			if (errno == EINTR)
				continue;
			die("KVM_RUN");
		}
		if (run->exit_reason == KVM_EXIT_HLT)
			break;
		exits++;
		if (run->exit_reason == KVM_EXIT_DEBUG) {
			if (ioctl(vcpu, KVM_GET_REGS, &r) < 0)
				die("KVM_GET_REGS");
			r.rflags |= RF;
			if (ioctl(vcpu, KVM_SET_REGS, &r) < 0)
				die("KVM_SET_REGS");
		} else if (run->exit_reason != KVM_EXIT_IO) {
			fprintf(stderr, "kvm_exit_cost: %s: exit %u\n",
				names[k], run->exit_reason);
			exit(1);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (k != K_CPUID && exits != n) {
		fprintf(stderr, "kvm_exit_cost: %s: %" PRIu64 " exits, not %u\n",
			names[k], exits, n);
		exit(1);
	}
	return (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
}

int main(int argc, char **argv)
{
	uint32_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 20000;
	int rounds = argc > 2 ? atoi(argv[2]) : 3;

	setup();
	for (int i = 0; i < rounds; i++) {
		double t[K_N];

		for (int k = 0; k < K_N; k++)
			t[k] = one(k, n);
		printf("round %d:", i + 1);
		for (int k = 0; k < K_N; k++)
			printf(" %s %.2f us", names[k], t[k] * 1e6 / n);
		printf(" | out/cpuid %.2f bp/cpuid %.2f\n", t[K_OUT] / t[K_CPUID],
		       t[K_BP] / t[K_CPUID]);
	}
	return 0;
}
