// SPDX-License-Identifier: GPL-2.0
/*
 * rrvm_exits: checks the patched KVM's RDTSC/RDTSCP/PAUSE exits
 * (kvm-patches/0001-*.patch, ABI in kvm-patches/rrvm-kvm.h) with a bare
 * real-mode vCPU, no QEMU.
 *
 *   rrvm_exits [-f]
 *
 * Phase 1, on a VM without the capability: the guest code below runs with
 * rdtsc, pause and rdtscp native (only its port writes and hlt exit).
 * Then KVM_CHECK_EXTENSION(KVM_CAP_RRVM_EXITS): if absent (a stock KVM),
 * prints "cap absent" and exits 2, unless -f, which runs phase 2 anyway
 * (and fails).  Phase 2, on a VM with the capability enabled: each
 * rdtsc/rdtscp/pause exits with KVM_EXIT_RRVM at the right rip; the
 * values this program supplies reach the guest registers and rip moves
 * past the instruction (checked with KVM_RUN + immediate_exit, which
 * completes the instruction without entering the guest), and the guest
 * writes the same values out.  One line per check, then a summary.
 * Exit status: 0 all passed, 1 a check failed, 2 cap absent, 3 setup error.
 *
 * Build: cc -std=c11 -static -O2 -Wall -I kvm-patches -o rrvm_exits rrvm_exits.c
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
#include <unistd.h>
#include <linux/kvm.h>

#include "rrvm-kvm.h"
#include "check.h"

#define MEM_SIZE	0x10000
#define CODE		0x1000
#define FAULT		0x0f00
#define OUT_PORT	0x10
#define FAULT_PORT	0x99
#define MSR_TSC_AUX	0xc0000103
#define GUEST_AUX	0x5a5aU
#define MARKER		0x11223344U

/* 16-bit real mode; addresses are CODE + offset */
static const uint8_t guest_code[] = {
	0x0f, 0x31,			/* 1000 rdtsc                */
	0x66, 0xe7, OUT_PORT,		/* 1002 out OUT_PORT, eax    */
	0x66, 0x89, 0xd0,		/* 1005 mov eax, edx         */
	0x66, 0xe7, OUT_PORT,		/* 1008 out OUT_PORT, eax    */
	0xb9, 0x03, 0x00,		/* 100b mov cx, 3            */
	0xf3, 0x90,			/* 100e pause                */
	0xe2, 0xfc,			/* 1010 loop 100e            */
	0x66, 0xb8, 0x44, 0x33, 0x22, 0x11, /* 1012 mov eax, MARKER */
	0x66, 0xe7, OUT_PORT,		/* 1018 out OUT_PORT, eax    */
	0x0f, 0x01, 0xf9,		/* 101b rdtscp               */
	0x66, 0xe7, OUT_PORT,		/* 101e out OUT_PORT, eax    */
	0x66, 0x89, 0xd0,		/* 1021 mov eax, edx         */
	0x66, 0xe7, OUT_PORT,		/* 1024 out OUT_PORT, eax    */
	0x66, 0x89, 0xc8,		/* 1027 mov eax, ecx         */
	0x66, 0xe7, OUT_PORT,		/* 102a out OUT_PORT, eax    */
	0xf4,				/* 102d hlt                  */
};
#define AT_RDTSC	0x1000
#define AT_PAUSE	0x100e
#define AT_RDTSCP	0x101b

/* every interrupt vector: out FAULT_PORT, al; hlt */
static const uint8_t fault_code[] = { 0xe6, FAULT_PORT, 0xf4 };

static const uint64_t SUPPLY_TSC = 0x1122334455667788ULL;
static const uint64_t SUPPLY_TSCP = 0x0badcafe0f00d000ULL;
static const uint32_t SUPPLY_AUX = 0xc0ffeeU;

static void die(const char *what)
{
	printf("ERROR: %s: %s\n", what, strerror(errno));
	printf("%d passed, %d failed (setup error)\n", passed, failed);
	exit(3);
}

struct vm {
	int fd, vcpu;
	struct kvm_run *run;
	uint8_t *mem;
};

/* what one KVM_RUN ended with */
enum ev_kind { EV_OUT, EV_RRVM, EV_HLT, EV_OTHER };
struct ev {
	enum ev_kind kind;
	uint32_t value;		/* EV_OUT: the value; EV_OTHER: exit_reason */
	uint16_t port;
	struct kvm_rrvm_exit rr;	/* EV_RRVM: as KVM reported it */
	uint64_t regs_rip;	/* EV_RRVM: rip from KVM_GET_REGS at the exit */
	/* EV_RRVM: after completion without entering the guest */
	int completed;
	uint64_t rip, rax, rdx, rcx;
};

static void set_cpuid(int kvm, int vcpu)
{
	int n = 100;
	struct kvm_cpuid2 *c;

	for (;;) {
		c = calloc(1, sizeof(*c) + n * sizeof(c->entries[0]));
		if (!c)
			die("calloc");
		c->nent = n;
		if (ioctl(kvm, KVM_GET_SUPPORTED_CPUID, c) == 0)
			break;
		if (errno != E2BIG)
			die("KVM_GET_SUPPORTED_CPUID");
		free(c);
		n *= 2;
	}
	if (ioctl(vcpu, KVM_SET_CPUID2, c) < 0)
		die("KVM_SET_CPUID2");
	free(c);
}

static int host_has_rdtscp(int kvm)
{
	struct {
		struct kvm_cpuid2 c;
		struct kvm_cpuid_entry2 e[256];
	} s = { .c.nent = 256 };

	if (ioctl(kvm, KVM_GET_SUPPORTED_CPUID, &s) < 0)
		return 0;
	for (unsigned int i = 0; i < s.c.nent; i++)
		if (s.e[i].function == 0x80000001)
			return !!(s.e[i].edx & (1U << 27));
	return 0;
}

/* A VM with one real-mode vCPU at CODE; caps = 0 leaves it stock. */
static struct vm vm_create(int kvm, uint32_t caps)
{
	struct vm vm;
	struct kvm_userspace_memory_region region;
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	int run_size;

	vm.fd = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm.fd < 0)
		die("KVM_CREATE_VM");
	if (caps) {
		struct kvm_enable_cap cap = {
			.cap = KVM_CAP_RRVM_EXITS, .args[0] = caps,
		};
		int r = ioctl(vm.fd, KVM_ENABLE_CAP, &cap);

		check(r == 0, "KVM_ENABLE_CAP(KVM_CAP_RRVM_EXITS, %#x) before vCPU creation: %s",
		      caps, r == 0 ? "ok" : strerror(errno));
	}
	vm.mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (vm.mem == MAP_FAILED)
		die("mmap");
	for (int v = 0; v < 256; v++) {		/* IVT: all to FAULT */
		vm.mem[v * 4] = FAULT & 0xff;
		vm.mem[v * 4 + 1] = FAULT >> 8;
	}
	memcpy(vm.mem + FAULT, fault_code, sizeof(fault_code));
	memcpy(vm.mem + CODE, guest_code, sizeof(guest_code));
	region = (struct kvm_userspace_memory_region) {
		.slot = 0, .guest_phys_addr = 0, .memory_size = MEM_SIZE,
		.userspace_addr = (uintptr_t)vm.mem,
	};
	if (ioctl(vm.fd, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		die("KVM_SET_USER_MEMORY_REGION");

	vm.vcpu = ioctl(vm.fd, KVM_CREATE_VCPU, 0);
	if (vm.vcpu < 0)
		die("KVM_CREATE_VCPU");
	run_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (run_size < (int)sizeof(struct kvm_run))
		die("KVM_GET_VCPU_MMAP_SIZE");
	vm.run = mmap(NULL, run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vm.vcpu, 0);
	if (vm.run == MAP_FAILED)
		die("mmap kvm_run");
	set_cpuid(kvm, vm.vcpu);

	struct {
		struct kvm_msrs m;
		struct kvm_msr_entry e;
	} msrs = { .m.nmsrs = 1, .e = { .index = MSR_TSC_AUX, .data = GUEST_AUX } };
	if (ioctl(vm.vcpu, KVM_SET_MSRS, &msrs) != 1)
		die("KVM_SET_MSRS(TSC_AUX)");

	if (ioctl(vm.vcpu, KVM_GET_SREGS, &sregs) < 0)
		die("KVM_GET_SREGS");
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	sregs.ds.base = sregs.es.base = sregs.ss.base = 0;
	sregs.ds.selector = sregs.es.selector = sregs.ss.selector = 0;
	if (ioctl(vm.vcpu, KVM_SET_SREGS, &sregs) < 0)
		die("KVM_SET_SREGS");
	memset(&regs, 0, sizeof(regs));
	regs.rip = CODE;
	regs.rsp = 0x8000;
	regs.rflags = 0x2;
	if (ioctl(vm.vcpu, KVM_SET_REGS, &regs) < 0)
		die("KVM_SET_REGS");
	return vm;
}

static void vm_destroy(struct vm *vm)
{
	close(vm->vcpu);
	close(vm->fd);
	munmap(vm->mem, MEM_SIZE);
}

/*
 * Runs the guest to hlt (at most max exits), answering each rrvm exit:
 * rdtsc gets SUPPLY_TSC, rdtscp SUPPLY_TSCP and SUPPLY_AUX.
 */
static int run_guest(struct vm *vm, struct ev *evs, int max)
{
	int n = 0;

	while (n < max) {
		struct ev *e = &evs[n++];
		struct kvm_regs regs;

		memset(e, 0, sizeof(*e));
		if (ioctl(vm->vcpu, KVM_RUN, 0) < 0) {
			e->kind = EV_OTHER;
			e->value = (uint32_t)-errno;
			return n;
		}
		switch (vm->run->exit_reason) {
		case KVM_EXIT_IO:
			e->kind = EV_OUT;
			e->port = vm->run->io.port;
			memcpy(&e->value, (uint8_t *)vm->run + vm->run->io.data_offset,
			       vm->run->io.size < 4 ? vm->run->io.size : 4);
			if (vm->run->io.direction != KVM_EXIT_IO_OUT || e->port == FAULT_PORT) {
				e->kind = EV_OTHER;
				e->value = 1000 + e->port;
				return n;
			}
			break;
		case KVM_EXIT_HLT:
			e->kind = EV_HLT;
			return n;
		case KVM_EXIT_RRVM: {
			struct kvm_rrvm_exit *x = kvm_run_rrvm(vm->run);

			e->kind = EV_RRVM;
			e->rr = *x;
			if (ioctl(vm->vcpu, KVM_GET_REGS, &regs) == 0)
				e->regs_rip = regs.rip;
			if (x->insn == KVM_RRVM_RDTSC) {
				x->tsc = SUPPLY_TSC;
			} else if (x->insn == KVM_RRVM_RDTSCP) {
				x->tsc = SUPPLY_TSCP;
				x->tsc_aux = SUPPLY_AUX;
			}
			/* complete the instruction, stay out of the guest */
			vm->run->immediate_exit = 1;
			if (ioctl(vm->vcpu, KVM_RUN, 0) < 0 && errno == EINTR &&
			    ioctl(vm->vcpu, KVM_GET_REGS, &regs) == 0) {
				e->completed = 1;
				e->rip = regs.rip;
				e->rax = regs.rax;
				e->rdx = regs.rdx;
				e->rcx = regs.rcx;
			}
			vm->run->immediate_exit = 0;
			break;
		}
		default:
			e->kind = EV_OTHER;
			e->value = vm->run->exit_reason;
			return n;
		}
	}
	return n;
}

static const char *ev_str(const struct ev *e)
{
	static char buf[128];

	switch (e->kind) {
	case EV_OUT:
		snprintf(buf, sizeof(buf), "out %#x <- %#" PRIx32, e->port, e->value);
		break;
	case EV_HLT:
		return "hlt";
	case EV_RRVM:
		snprintf(buf, sizeof(buf), "rrvm exit insn %u at %#" PRIx64,
			 e->rr.insn, (uint64_t)e->rr.rip);
		break;
	default:
		if ((int32_t)e->value < 0)
			snprintf(buf, sizeof(buf), "KVM_RUN error %s", strerror(-(int32_t)e->value));
		else if (e->value >= 1000)
			snprintf(buf, sizeof(buf), "port %#x (guest fault or in)", e->value - 1000);
		else
			snprintf(buf, sizeof(buf), "exit reason %u", e->value);
	}
	return buf;
}

/* the next event must be an out to OUT_PORT; returns its value */
static int next_out(const struct ev *evs, int n, int *i, uint32_t *v, const char *what)
{
	if (*i >= n || evs[*i].kind != EV_OUT || evs[*i].port != OUT_PORT) {
		check(0, "%s: expected the guest's out, got %s", what,
		      *i < n ? ev_str(&evs[*i]) : "nothing");
		return 0;
	}
	*v = evs[(*i)++].value;
	return 1;
}

static void phase_native(int kvm)
{
	struct ev evs[32];
	struct vm vm = vm_create(kvm, 0);
	int n = run_guest(&vm, evs, 32), i = 0, rr = 0;
	uint32_t lo, hi, mark, lo2, hi2, aux;

	for (int j = 0; j < n; j++)
		rr += evs[j].kind == EV_RRVM;
	check(rr == 0, "without the cap: no rrvm exits (%d)", rr);
	if (next_out(evs, n, &i, &lo, "native rdtsc") &&
	    next_out(evs, n, &i, &hi, "native rdtsc") &&
	    next_out(evs, n, &i, &mark, "native pause") &&
	    next_out(evs, n, &i, &lo2, "native rdtscp") &&
	    next_out(evs, n, &i, &hi2, "native rdtscp") &&
	    next_out(evs, n, &i, &aux, "native rdtscp")) {
		uint64_t t1 = (uint64_t)hi << 32 | lo, t2 = (uint64_t)hi2 << 32 | lo2;

		check(t1 != 0 && t1 != SUPPLY_TSC, "without the cap: rdtsc native (%#" PRIx64 ")", t1);
		check(mark == MARKER, "without the cap: 3 pauses native, guest went on (%#x)", mark);
		check(t2 > t1 && t2 != SUPPLY_TSCP, "without the cap: rdtscp native (%#" PRIx64 ", later than rdtsc)", t2);
		check(aux == GUEST_AUX, "without the cap: rdtscp ecx = guest TSC_AUX (%#x)", aux);
	}
	check(i < n && evs[i].kind == EV_HLT, "without the cap: guest reaches hlt (%s)",
	      i < n ? ev_str(&evs[i]) : "nothing");
	vm_destroy(&vm);
}

/* the next event must be an rrvm exit for insn at rip; checks its completion */
static const struct ev *next_rrvm(const struct ev *evs, int n, int *i, uint32_t insn,
				   uint64_t rip, unsigned int len, const char *name)
{
	const struct ev *e;

	if (*i >= n || evs[*i].kind != EV_RRVM || evs[*i].rr.insn != insn) {
		check(0, "%s exits with KVM_EXIT_RRVM: got %s", name,
		      *i < n ? ev_str(&evs[*i]) : "nothing");
		return NULL;
	}
	e = &evs[(*i)++];
	check(e->rr.rip == rip && e->regs_rip == rip,
	      "%s exits with KVM_EXIT_RRVM at its rip (%#" PRIx64 ", regs %#" PRIx64 ", want %#" PRIx64 ")",
	      name, (uint64_t)e->rr.rip, e->regs_rip, rip);
	check(e->completed && e->rip == rip + len,
	      "%s completed by the next KVM_RUN: rip advanced by %u (%#" PRIx64 ")",
	      name, len, e->rip);
	return e;
}

static void phase_rrvm(int kvm)
{
	struct ev evs[32];
	const struct ev *e;
	struct vm vm = vm_create(kvm, KVM_RRVM_EXIT_ALL);
	struct kvm_enable_cap cap = { .cap = KVM_CAP_RRVM_EXITS, .args[0] = KVM_RRVM_EXIT_ALL };
	int r, n, i = 0;
	uint32_t lo, hi, mark, aux;

	r = ioctl(vm.fd, KVM_ENABLE_CAP, &cap);
	check(r < 0 && errno == EINVAL, "KVM_ENABLE_CAP after vCPU creation refused (EINVAL)");

	n = run_guest(&vm, evs, 32);

	e = next_rrvm(evs, n, &i, KVM_RRVM_RDTSC, AT_RDTSC, 2, "rdtsc");
	if (e) {
		check(e->rr.tsc != 0, "rdtsc exit reports the guest TSC (%#" PRIx64 ")",
		      (uint64_t)e->rr.tsc);
		check(e->rax == (uint32_t)SUPPLY_TSC && e->rdx == SUPPLY_TSC >> 32,
		      "rdtsc: supplied value in edx:eax (%#" PRIx64 ":%#" PRIx64 ")", e->rdx, e->rax);
	}
	if (next_out(evs, n, &i, &lo, "rdtsc") && next_out(evs, n, &i, &hi, "rdtsc"))
		check(((uint64_t)hi << 32 | lo) == SUPPLY_TSC,
		      "rdtsc: guest wrote the supplied value (%#x:%#x)", hi, lo);

	for (int k = 0; k < 3; k++) {
		char name[32];

		snprintf(name, sizeof(name), "pause %d/3", k + 1);
		if (!next_rrvm(evs, n, &i, KVM_RRVM_PAUSE, AT_PAUSE, 2, name))
			break;
	}
	if (next_out(evs, n, &i, &mark, "after the pauses"))
		check(mark == MARKER, "pause: guest went on after 3 pause exits (%#x)", mark);

	e = next_rrvm(evs, n, &i, KVM_RRVM_RDTSCP, AT_RDTSCP, 3, "rdtscp");
	if (e) {
		check(e->rr.tsc != 0 && e->rr.tsc_aux == GUEST_AUX,
		      "rdtscp exit reports the guest TSC and TSC_AUX (%#" PRIx64 ", %#x)",
		      (uint64_t)e->rr.tsc, e->rr.tsc_aux);
		check(e->rax == (uint32_t)SUPPLY_TSCP && e->rdx == SUPPLY_TSCP >> 32 &&
		      e->rcx == SUPPLY_AUX,
		      "rdtscp: supplied values in edx:eax, ecx (%#" PRIx64 ":%#" PRIx64 ", %#" PRIx64 ")",
		      e->rdx, e->rax, e->rcx);
	}
	if (next_out(evs, n, &i, &lo, "rdtscp") && next_out(evs, n, &i, &hi, "rdtscp") &&
	    next_out(evs, n, &i, &aux, "rdtscp"))
		check(((uint64_t)hi << 32 | lo) == SUPPLY_TSCP && aux == SUPPLY_AUX,
		      "rdtscp: guest wrote the supplied values (%#x:%#x, %#x)", hi, lo, aux);

	check(i < n && evs[i].kind == EV_HLT, "with the cap: guest reaches hlt, nothing else exits (%s)",
	      i < n ? ev_str(&evs[i]) : "nothing");
	vm_destroy(&vm);
}

int main(int argc, char **argv)
{
	int force = argc > 1 && !strcmp(argv[1], "-f");
	int kvm, caps;

	setvbuf(stdout, NULL, _IOLBF, 0);
	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		die("open /dev/kvm");
	if (ioctl(kvm, KVM_GET_API_VERSION, 0) != KVM_API_VERSION)
		die("KVM_GET_API_VERSION");
	if (!host_has_rdtscp(kvm)) {
		errno = ENOTSUP;
		die("KVM reports no RDTSCP for guests");
	}

	phase_native(kvm);

	caps = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_RRVM_EXITS);
	if (caps <= 0 && !force) {
		printf("cap absent: KVM_CHECK_EXTENSION(KVM_CAP_RRVM_EXITS) = %d (stock KVM)\n", caps);
		printf("%d passed, %d failed, cap absent\n", passed, failed);
		return failed ? 1 : 2;
	}
	check(caps == KVM_RRVM_EXIT_ALL, "KVM_CHECK_EXTENSION(KVM_CAP_RRVM_EXITS) = %#x", caps);

	phase_rrvm(kvm);

	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
