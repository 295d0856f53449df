// SPDX-License-Identifier: GPL-2.0
/*
 * rrvm_crew: checks the patched KVM's per-vCPU page rights
 * (kvm-patches/0002-*.patch, KVM_CAP_RRVM_CREW in kvm-patches/rrvm-kvm.h)
 * with two bare real-mode vCPUs, no QEMU.
 *
 *   rrvm_crew
 *
 * Page 8 (gpa 0x8000) is the shared datum; vCPU 0 runs code in page 1,
 * vCPU 1 in page 2.  The program moves page 8's owner word between the
 * vCPUs and checks that each access the word does not allow leaves
 * KVM_RUN with KVM_EXIT_RRVM / KVM_RRVM_CREW (right gpa, access and rip,
 * the instruction not executed), that allowed ones run without an exit
 * and see the other vCPU's writes, and that a vCPU without rights exits
 * even while the other holds a writable mapping (one TDP root each).
 * One line per check, then a summary.
 * Exit status: 0 all passed, 1 a check failed, 2 cap absent, 3 setup error.
 *
 * Build: cc -std=c11 -static -O2 -Wall -I kvm-patches -o rrvm_crew rrvm_crew.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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
#define GFNS		(MEM_SIZE >> 12)
#define DATA		0x8000
#define OUT_PORT	0x10
#define V0		(1ULL << 0)
#define V1		(1ULL << 1)
#define EXCL		KVM_RRVM_CREW_EXCL

/* 16-bit real mode, ds = 0 */
#define LOAD_AL		0xa0, 0x00, 0x80		/* mov al, [0x8000] */
#define STORE(v)	0xc6, 0x06, 0x00, 0x80, (v)	/* mov byte [0x8000], v */
#define OUT_AL		0xe6, OUT_PORT			/* out 0x10, al */
static const uint8_t code0[] = {	/* at 0x1000 */
	STORE(0x11),	/* 1000 */
	LOAD_AL,	/* 1005 */
	OUT_AL,		/* 1008 */
	LOAD_AL,	/* 100a */
	OUT_AL,		/* 100d */
	STORE(0x33),	/* 100f */
	LOAD_AL,	/* 1014 */
	OUT_AL,		/* 1017 */
	0xf4,		/* 1019 hlt */
};
static const uint8_t code1[] = {	/* at 0x2000 */
	LOAD_AL,	/* 2000 */
	OUT_AL,		/* 2003 */
	STORE(0x22),	/* 2005 */
	LOAD_AL,	/* 200a */
	OUT_AL,		/* 200d */
	0xf4,		/* 200f hlt */
};

static int vm;		/* the VM's fd */

static void die(const char *what)
{
	fprintf(stderr, "setup: %s: %s\n", what, strerror(errno));
	exit(3);
}

struct vcpu {
	int fd;
	struct kvm_run *run;
};

static struct vcpu make_vcpu(int kvm, int id, uint16_t ip)
{
	struct kvm_sregs s;
	struct kvm_regs r = { .rip = ip, .rflags = 2 };
	struct vcpu v;
	int sz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);

	v.fd = ioctl(vm, KVM_CREATE_VCPU, id);
	if (v.fd < 0 || sz <= 0)
		die("KVM_CREATE_VCPU");
	v.run = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, v.fd, 0);
	if (v.run == MAP_FAILED)
		die("mmap kvm_run");
	if (ioctl(v.fd, KVM_GET_SREGS, &s) < 0)
		die("KVM_GET_SREGS");
	s.cs.base = 0;
	s.cs.selector = 0;
	s.ds.base = 0;
	s.ds.selector = 0;
	if (ioctl(v.fd, KVM_SET_SREGS, &s) < 0 ||
	    ioctl(v.fd, KVM_SET_REGS, &r) < 0)
		die("KVM_SET_SREGS/REGS");
	return v;
}

static uint64_t rip_of(struct vcpu *v)
{
	struct kvm_regs r;

	if (ioctl(v->fd, KVM_GET_REGS, &r) < 0)
		die("KVM_GET_REGS");
	return r.rip;
}

static void run(struct vcpu *v)
{
	if (ioctl(v->fd, KVM_RUN, 0) < 0)
		die("KVM_RUN");
}

/* the next exit is a port write of @val */
static void expect_out(struct vcpu *v, int n, uint8_t val, const char *why)
{
	struct kvm_run *r = v->run;
	uint8_t got;

	run(v);
	got = r->exit_reason == KVM_EXIT_IO ?
	      *((uint8_t *)r + r->io.data_offset) : 0;
	check(r->exit_reason == KVM_EXIT_IO && r->io.port == OUT_PORT &&
	      got == val, "vCPU %d: %s: out 0x%02x (exit %u, value 0x%02x)",
	      n, why, val, r->exit_reason, got);
}

/* the next exit is a CREW fault on @gpa at @rip */
static void expect_crew(struct vcpu *v, int n, uint64_t gpa, uint32_t acc,
			uint64_t rip, const char *why)
{
	struct kvm_rrvm_exit *e = kvm_run_rrvm(v->run);
	int is = 0;

	run(v);
	if (v->run->exit_reason == KVM_EXIT_RRVM && e->insn == KVM_RRVM_CREW)
		is = 1;
	check(is && e->gpa == gpa &&
	      (e->access & KVM_RRVM_CREW_WRITE) == (acc & KVM_RRVM_CREW_WRITE) &&
	      e->rip == rip && rip_of(v) == rip,
	      "vCPU %d: %s: CREW exit, gpa 0x%llx %s at rip 0x%llx (exit %u insn %u "
	      "gpa 0x%llx access %u rip 0x%llx, regs rip 0x%llx)", n, why,
	      (unsigned long long)gpa, acc & KVM_RRVM_CREW_WRITE ? "write" : "read",
	      (unsigned long long)rip, v->run->exit_reason, is ? e->insn : 0,
	      (unsigned long long)e->gpa, e->access, (unsigned long long)e->rip,
	      (unsigned long long)rip_of(v));
}

static int crew_set(uint64_t gfn, uint64_t owners, uint64_t flags)
{
	struct kvm_rrvm_crew_set s = { .gfn = gfn, .owners = owners,
				       .flags = flags };

	return ioctl(vm, KVM_RRVM_CREW_SET, &s) < 0 ? -errno : 0;
}

static int enable(uint64_t gfns, uint64_t init)
{
	struct kvm_enable_cap cap = { .cap = KVM_CAP_RRVM_CREW,
				      .args = { gfns, init } };

	return ioctl(vm, KVM_ENABLE_CAP, &cap) < 0 ? -errno : 0;
}

int main(void)
{
	struct kvm_userspace_memory_region mr;
	struct vcpu v0, v1;
	uint8_t *mem;
	int kvm, n;

	setvbuf(stdout, NULL, _IONBF, 0);
	kvm = open("/dev/kvm", O_RDWR);
	if (kvm < 0)
		die("/dev/kvm");
	n = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_RRVM_CREW);
	if (n <= 0) {
		printf("cap absent\n");
		return 2;
	}
	check(n == KVM_RRVM_CREW_MAX_VCPUS, "cap present: %d vCPUs", n);
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0)
		die("KVM_CREATE_VM");
	n = ioctl(vm, KVM_CHECK_EXTENSION, KVM_CAP_RRVM_CREW);
	check(n == KVM_RRVM_CREW_MAX_VCPUS, "cap on the VM fd: %d vCPUs (TDP MMU)", n);
	if (n <= 0)
		return 1;
	mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		die("mmap guest memory");
	memcpy(mem + 0x1000, code0, sizeof(code0));
	memcpy(mem + 0x2000, code1, sizeof(code1));
	mr = (struct kvm_userspace_memory_region){ .slot = 0,
		.guest_phys_addr = 0, .memory_size = MEM_SIZE,
		.userspace_addr = (uintptr_t)mem };
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &mr) < 0)
		die("KVM_SET_USER_MEMORY_REGION");

	check(crew_set(8, V0 | EXCL, 0) == -EINVAL, "SET before enable: EINVAL");
	check(enable(0, 0) == -EINVAL, "enable with 0 gfns: EINVAL");
	check(enable(GFNS, V0 | V1) == 0, "enable: %d gfns, all shared", GFNS);
	check(enable(GFNS, V0 | V1) == -EINVAL, "enable twice: EINVAL");
	check(crew_set(GFNS, V0, 0) == -EINVAL, "SET past the table: EINVAL");
	check(crew_set(8, V0, 1) == -EINVAL, "SET with flags: EINVAL");
	check(crew_set(8, V0 | EXCL, 0) == 0, "page 8 exclusive to vCPU 0");

	v0 = make_vcpu(kvm, 0, 0x1000);
	v1 = make_vcpu(kvm, 1, 0x2000);
	check(ioctl(vm, KVM_CREATE_VCPU, KVM_RRVM_CREW_MAX_VCPUS) < 0 &&
	      errno == EINVAL, "vcpu_id %d refused", KVM_RRVM_CREW_MAX_VCPUS);

	expect_out(&v0, 0, 0x11, "exclusive owner writes and reads");
	expect_crew(&v1, 1, DATA, 0, 0x2000, "non-owner read");
	expect_crew(&v1, 1, DATA, 0, 0x2000, "again, rights unchanged");

	check(crew_set(8, V0 | V1, 0) == 0, "page 8 shared by both");
	expect_out(&v1, 1, 0x11, "reader sees vCPU 0's write");
	expect_crew(&v1, 1, DATA, KVM_RRVM_CREW_WRITE, 0x2005, "shared write");
	expect_out(&v0, 0, 0x11, "shared read runs");
	expect_crew(&v0, 0, DATA, KVM_RRVM_CREW_WRITE, 0x100f,
		    "former exclusive owner lost write");

	check(crew_set(8, V1 | EXCL, 0) == 0, "page 8 exclusive to vCPU 1");
	expect_out(&v1, 1, 0x22, "new exclusive owner writes and reads");
	run(&v1);
	check(v1.run->exit_reason == KVM_EXIT_HLT, "vCPU 1: hlt (exit %u)",
	      v1.run->exit_reason);
	expect_crew(&v0, 0, DATA, KVM_RRVM_CREW_WRITE, 0x100f,
		    "no rights while vCPU 1 maps the page writable");

	check(crew_set(1, V1, 0) == 0, "vCPU 0's code page to vCPU 1");
	run(&v0);
	check(v0.run->exit_reason == KVM_EXIT_RRVM &&
	      kvm_run_rrvm(v0.run)->insn == KVM_RRVM_CREW &&
	      kvm_run_rrvm(v0.run)->gpa >> 12 == 1 &&
	      !(kvm_run_rrvm(v0.run)->access & KVM_RRVM_CREW_WRITE),
	      "vCPU 0: fetch from a page it lost exits (gpa 0x%llx, access %u)",
	      (unsigned long long)kvm_run_rrvm(v0.run)->gpa,
	      kvm_run_rrvm(v0.run)->access);

	check(crew_set(1, V0 | V1, 0) == 0 && crew_set(8, V0 | EXCL, 0) == 0,
	      "both pages back to vCPU 0");
	expect_out(&v0, 0, 0x33, "write runs, sees its own value");
	check(mem[DATA] == 0x33, "memory holds 0x33 (0x%02x)", mem[DATA]);

	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
