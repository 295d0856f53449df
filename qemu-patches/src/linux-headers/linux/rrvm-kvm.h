/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * replay-vm's private KVM ABI: deterministic RDTSC, RDTSCP and PAUSE exits
 * (kvm-patches/0001-*.patch) and per-vCPU page rights for page-granular
 * CREW (0002).  Included by the patched KVM (build.sh copies this file next
 * to arch/x86/kvm/x86.c) and by userspace.
 *
 *   KVM_CHECK_EXTENSION(KVM_CAP_RRVM_EXITS): 0 on a stock KVM; on a patched
 *     one, the mask of KVM_RRVM_EXIT_* it supports.
 *   KVM_ENABLE_CAP on the VM fd, cap KVM_CAP_RRVM_EXITS, args[0] = mask of
 *     KVM_RRVM_EXIT_*: before the first vCPU is created (EINVAL after), once.
 *
 * With KVM_RRVM_EXIT_TSC every guest RDTSC, and RDTSCP where the guest's
 * CPUID has it, and with KVM_RRVM_EXIT_PAUSE every PAUSE (no pause-filter
 * threshold) leaves KVM_RUN with exit_reason KVM_EXIT_RRVM and
 * *kvm_run_rrvm(run) filled in; rip still points at the instruction.  The
 * next KVM_RUN completes it: RDTSC loads edx:eax from tsc, RDTSCP also ecx
 * from tsc_aux (both as userspace left them), and rip moves past it; it
 * does so even with immediate_exit set (then KVM_RUN returns EINTR without
 * entering the guest).  KVM_GET_REGS before that shows the registers as
 * they were before the instruction.
 * Faults that the CPU checks before the intercept (#GP for CR4.TSD at
 * CPL > 0, #UD) are delivered in the guest as usual and do not exit.
 *
 * Page CREW (concurrent read, exclusive write), KVM_CAP_RRVM_CREW:
 *   KVM_CHECK_EXTENSION: 0 without it (or without the TDP MMU), else the
 *     number of vCPUs it can serve (vcpu_id < that).
 *   KVM_ENABLE_CAP on the VM fd, args[0] = number of gfns tracked (gfn 0 up
 *     to it), args[1] = every gfn's first owner word: before the first vCPU
 *     is created, once.
 *   An owner word is a bitmap of vcpu_ids, plus KVM_RRVM_CREW_EXCL.  A vCPU
 *   in the set may read and execute the page; write too if EXCL is set.
 *   Any other guest access to a tracked gfn that has a memslot leaves
 *   KVM_RUN with KVM_EXIT_RRVM, insn KVM_RRVM_CREW, gpa and access filled
 *   in, the instruction not executed: the next KVM_RUN executes it again.
 *   KVM_RRVM_CREW_SET (VM ioctl) replaces one gfn's owner word and drops
 *   every vCPU's mapping of it.  Each vCPU has its own TDP root, always
 *   maps 4K pages and never more than its rights.  Not covered: KVM's own
 *   accesses to guest memory (the instruction emulator, e.g. for MMIO).
 */
#ifndef RRVM_KVM_H
#define RRVM_KVM_H

#include <linux/types.h>
#include <linux/kvm.h>

/* Private numbers, far from upstream's (caps < 300, exit reasons < 64). */
#define KVM_CAP_RRVM_EXITS	0x52520001
#define KVM_EXIT_RRVM		0x52520001
#define KVM_CAP_RRVM_CREW	0x52520002

#define KVM_RRVM_EXIT_TSC	(1u << 0)	/* RDTSC and RDTSCP */
#define KVM_RRVM_EXIT_PAUSE	(1u << 1)
#define KVM_RRVM_EXIT_ALL	(KVM_RRVM_EXIT_TSC | KVM_RRVM_EXIT_PAUSE)

/* kvm_rrvm_exit.insn */
#define KVM_RRVM_RDTSC		1
#define KVM_RRVM_RDTSCP		2
#define KVM_RRVM_PAUSE		3
#define KVM_RRVM_CREW		4	/* a page access CREW keeps out */

/* kvm_rrvm_exit.access (KVM_RRVM_CREW) */
#define KVM_RRVM_CREW_WRITE	(1u << 0)
#define KVM_RRVM_CREW_FETCH	(1u << 1)

#define KVM_RRVM_CREW_EXCL	(1ULL << 63)
#define KVM_RRVM_CREW_MAX_VCPUS	31	/* TDP root roles keep vcpu_id + 1 */
#define KVM_RRVM_CREW_MAX_GFNS	(1ULL << 28)	/* 1 TiB of guest space */

struct kvm_rrvm_crew_set {
	__u64 gfn;
	__u64 owners;	/* bitmap of vcpu_ids | KVM_RRVM_CREW_EXCL */
	__u64 flags;	/* 0 */
};

/* A private VM ioctl number, well above upstream's (0xd5 and below). */
#define KVM_RRVM_CREW_SET	_IOW(KVMIO, 0xf1, struct kvm_rrvm_crew_set)

/* Lives in the padding of kvm_run's exit union (256 bytes). */
struct kvm_rrvm_exit {
	__u32 insn;	/* out: KVM_RRVM_RDTSC, _RDTSCP, _PAUSE or _CREW */
	__u32 tsc_aux;	/* out: guest TSC_AUX (RDTSCP); in: value for ecx */
	__u64 tsc;	/* out: the guest TSC now (RDTSC/P); in: edx:eax */
	__u64 rip;	/* out: address of the instruction (informational) */
	__u64 gpa;	/* out (CREW): the guest physical address accessed */
	__u32 access;	/* out (CREW): KVM_RRVM_CREW_WRITE, _FETCH */
	__u32 reserved;
};

static inline struct kvm_rrvm_exit *kvm_run_rrvm(struct kvm_run *run)
{
	return (struct kvm_rrvm_exit *)(void *)run->padding;
}

#endif /* RRVM_KVM_H */
