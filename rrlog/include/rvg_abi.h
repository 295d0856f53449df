/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * rvg_abi.h - what the replay-vm guest module and QEMU (-rr ...,crew=byte)
 * agree on: I/O ports, commands, and the layout of the memory they share.
 * Included by the guest module (kernel) and by QEMU's replay-vm (host).
 *
 * Memory is guest RAM the module allocates and registers; the host reads
 * and writes it through its own mapping and must treat every byte of it as
 * untrusted (validate, never index with it unchecked).  All of it is
 * module-private state that differs between a recording and its replay
 * (code cache, shadow memory, rings, counters), so the host leaves the
 * registered ranges out of its guest-RAM hashes.
 *
 * Deterministic points (det points).  Translated kernel code counts them:
 * port I/O, rdtsc/rdtscp, pause, hlt, backward branches, and accesses that
 * the instrumentation finds to be MMIO.  At each one it stores the native
 * pc into dp_pc and decrements dp_remain; when that reaches 0 it executes
 * "out %al, $RVG_PORT_DB" (the doorbell).  Only the vCPU's own host thread
 * writes dp_remain, and only while the vCPU is not executing guest code, so
 * the guest's non-atomic decrement never races with it; the host keeps
 * dp_base so that the det-point count is dp_base - dp_remain.  Kernel-mode
 * interrupts are injected only at a doorbell (or into a halted vCPU), so
 * their position is (user branches, det points, native pc), the same in a
 * recording and its replay although the code cache is not.
 *
 * The doorbell frame: the det-point code did "push %rax; seto %al; lahf"
 * before the decrement, so at the doorbell [rsp] holds the program's rax
 * and ah/al the program's SZAPC/OF.  To inject at the det point the host
 * rewinds: rflags from ah/al, rax from [rsp], rsp += 8, rip = dp_pc (the
 * det point then runs again after the interrupt, in record and replay
 * alike).  For hlt the det point stores the pc after the hlt.
 */
#ifndef RVG_ABI_H
#define RVG_ABI_H

#include <linux/types.h>

#define RVG_ABI_VERSION		3	/* 2: transfer records carry their site;
					 * 3: RVG_CMD_WAIT */
#define RVG_ABI_MIN_VERSION	2	/* the oldest a host still accepts */

/* I/O ports (free on QEMU's pc machine) */
#define RVG_PORT_DB		0xe4	/* det-point doorbell (out %al) */
#define RVG_PORT_CMD		0xe5	/* command: out %eax; args rdi, rsi, rdx */
#define RVG_PORT_DB_MMIO	0xe6	/* doorbell at an MMIO det point, from C:
					 * an exact position, no injection there */

/* in %eax, $RVG_PORT_CMD: a logged read, the same in record and replay */
#define RVG_HELLO_MAGIC		0x52564731u	/* "RVG1": host speaks this ABI */
/* "RVG2": the same, and the host takes RVG_CMD_FENCE (a recording's reply) */
#define RVG_HELLO_MAGIC_FENCE	0x52564732u

enum rvg_cmd {
	RVG_CMD_REGISTER = 1,	/* rdi = gpa of struct rvg_desc */
	RVG_CMD_BYTE_ON = 2,	/* every CPU is in the code cache: switch */
	RVG_CMD_DRAIN = 3,	/* record: this vCPU's ring is full */
	RVG_CMD_REFILL = 4,	/* replay: this vCPU's ring is empty */
	RVG_CMD_ERROR = 5,	/* rdi = crew error code, rsi = pc of the access (0) */
	/*
	 * record, after RVG_HELLO_MAGIC_FENCE: every vCPU in mask rdi executes
	 * a full memory barrier before this returns (the CREW core's
	 * membarrier mode: releases need no fence of their own)
	 */
	RVG_CMD_FENCE = 6,
	/*
	 * A CREW wait that spun for a while: the host yields or sleeps until
	 * vCPU rdi's seq differs from rsi, or (rdx & RVG_WAIT_ACTIVE) its state
	 * is not ACTIVE, or a bounded time passed (rdi == RVG_WAIT_ANY: a lock
	 * whose holder is unknown, one short yield).  Not logged, changes nothing in
	 * the guest: the guest looks again either way.
	 */
	RVG_CMD_WAIT = 7,
};

#define RVG_WAIT_ANY		0xffffffffffffffffull
#define RVG_WAIT_ACTIVE		1

enum rvg_host_mode {
	RVG_MODE_NONE = 0,	/* no host (plain run): records are discarded */
	RVG_MODE_RECORD = 1,
	RVG_MODE_REPLAY = 2,
};

#define RVG_MAX_CPUS		8	/* one bit per vCPU in a shadow byte */
#define RVG_MAX_EXCL		65536	/* excluded ranges in a descriptor */

/* guest physical range [gpa, gpa + len) */
struct rvg_range {
	__u64 gpa;
	__u64 len;
};

/*
 * The descriptor, one page (or more, for the excluded-range list) the
 * module registers with RVG_CMD_REGISTER.  The host validates every field.
 */
struct rvg_desc {
	__u32 version;		/* RVG_ABI_VERSION */
	__u32 nr_cpus;		/* vCPUs of the guest, <= RVG_MAX_CPUS */
	__u64 host_mode;	/* written by the host: enum rvg_host_mode */
	__u64 host_status;	/* written by the host: 0 ok, else an error */
	__u64 vcpu_gpa[RVG_MAX_CPUS];	/* per-vCPU area, RVG_VCPU_SIZE aligned */
	__u64 ring_gpa[RVG_MAX_CPUS];	/* struct rvg_ring, contiguous */
	__u64 ring_len;		/* bytes of each ring, header included */
	__u64 shadow_gpa;	/* shadow memory: shadow(p) = shadow_gpa + p */
	__u64 shadow_len;	/* bytes of RAM it covers */
	__u64 cache_lo, cache_hi;	/* code cache (guest virtual) */
	__u64 n_excl;		/* ranges the RAM hash leaves out */
	__u64 excl_gpa;		/* -> struct rvg_range[n_excl] */
	__u64 ktext_lo, ktext_hi;	/* kernel text (guest virtual): the host
					 * reports kernel code run natively */
};

/*
 * Per-vCPU area (the module's per-CPU data, aligned to its size, so it
 * never crosses a page).  The first RVG_CREW_CPU_SIZE bytes are the CREW
 * core's struct crew_cpu (seq at offset 0, state at offset 8).
 */
#define RVG_CREW_CPU_SIZE	512
#define RVG_OFF_SEQ		0	/* u64: instrumented accesses so far */
#define RVG_OFF_STATE		8	/* u32: 0 active, 1 blocked, 2 finished */
#define RVG_OFF_DP_REMAIN	512	/* u64: doorbell when it reaches 0 */
#define RVG_OFF_DP_PC		520	/* u64: native pc of the last det point */
#define RVG_OFF_MODE		528	/* u64: enum rvg_host_mode (host writes) */
#define RVG_OFF_PRIV_TOP	544	/* u64: top of the module's private stack */
#define RVG_PRIV_STACK_SIZE	16384	/* (where its runtime runs kernel helpers
					 * natively, by design) */
#define RVG_OFF_UNTRAINED	920	/* u64: record with a trained list:
					 * untrained accesses to bytes another
					 * vCPU owned (read by the host at the
					 * end of a recording) */
#define RVG_OFF_UNTRAINED_PC	928	/* u64[RVG_UNTRAINED_PCS]: the first
					 * distinct pcs of those, 0 = free */
#define RVG_UNTRAINED_PCS	8
#define RVG_OFF_BAD_SITE	992	/* u64[4], replay: with RVG_CMD_ERROR
					 * CREW_ESITE, the record's site pc and
					 * address, then the access's (0 =
					 * unknown); only ever printed */
/*
 * RVG_CMD_ERROR codes: crew.h's CREW_E*, checked at build time by the
 * module, spelled out by QEMU
 */
#define RVG_CREW_ESITE		10
#define RVG_CREW_ELIVELOCK	11
#define RVG_CREW_NERR		11	/* the last one */
/* RVG_CMD_ERROR codes of the module's translator (rsi: an address) */
#define RVG_ERR_NATIVE_RETURN	100	/* a return from native code no call made */
#define RVG_ERR_CACHE_FULL	101	/* a kernel block could not be translated */
#define RVG_ERR_INT3		102	/* a kernel int3 nothing orders (a kprobe) */
#define RVG_VCPU_SIZE		1024

#define RVG_STATE_ACTIVE	0
#define RVG_STATE_BLOCKED	1
#define RVG_STATE_FINISHED	2
#define RVG_STATE_HOST_BLOCKED	3	/* record: the host's (user mode, halted,
					 * waiting outside the guest); the host
					 * moves only ACTIVE <-> HOST_BLOCKED */

/*
 * Rings: struct crew_ring_shared of the CREW core (head, tail, nr, then
 * 64-byte records).  Record: the guest produces, the host consumes.
 * Replay: the host produces the logged records, the guest consumes.
 */
#define RVG_RING_HDR		64
#define RVG_REC_SIZE		64

#endif /* RVG_ABI_H */
