/* SPDX-License-Identifier: GPL-2.0 */
/*
 * crew_port.h - the only place where crew.c meets its environment: the Linux
 * kernel (__KERNEL__) or a userspace process (the litmus tests).
 *
 * Atomics are GCC __atomic builtins in both worlds (x86-64 TSO: acquire loads
 * and release stores are plain movs, seq_cst RMWs are locked instructions).
 */
#ifndef CREW_PORT_H
#define CREW_PORT_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/compiler.h>
#include <linux/irqflags.h>
#include <asm/byteorder.h>

#define crew_likely(x)		likely(x)
#define crew_unlikely(x)	unlikely(x)
#define crew_inline		__always_inline
#define crew_aligned(n)		__aligned(n)
#define crew_irq_save(f)	local_irq_save(f)
#define crew_irq_restore(f)	local_irq_restore(f)
#define crew_cpu_to_le16(x)	((u16)cpu_to_le16(x))
#define crew_cpu_to_le64(x)	((u64)cpu_to_le64(x))
#define crew_le16_to_cpu(x)	le16_to_cpu((__force __le16)(x))
#define crew_le64_to_cpu(x)	le64_to_cpu((__force __le64)(x))

/*
 * A vCPU is a physical CPU of the guest, but vCPU threads may outnumber the
 * host's cores: a long wait asks the host to sleep until vCPU @id's seq moves
 * from @old, or (@active) it stops being ACTIVE; @id < 0: a lock's holder,
 * unknown.  byte.c.
 */
void crew_port_host_wait(int id, u64 old, bool active, unsigned long spins);
#define crew_port_spin_wait(id, old, active, spins) \
	crew_port_host_wait(id, old, active, spins)

#else /* userspace */
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include <sched.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/membarrier.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;

#define crew_likely(x)		__builtin_expect(!!(x), 1)
#define crew_unlikely(x)	__builtin_expect(!!(x), 0)
#define crew_inline		inline __attribute__((always_inline))
#define crew_aligned(n)		__attribute__((aligned(n)))
#define crew_irq_save(f)	((void)(f))
#define crew_irq_restore(f)	((void)(f))
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define crew_cpu_to_le16(x)	((u16)(x))
#define crew_cpu_to_le64(x)	((u64)(x))
#else
#define crew_cpu_to_le16(x)	__builtin_bswap16(x)
#define crew_cpu_to_le64(x)	__builtin_bswap64(x)
#endif
#define crew_le16_to_cpu(x)	crew_cpu_to_le16(x)
#define crew_le64_to_cpu(x)	crew_cpu_to_le64(x)

/* threads may outnumber cores: give the core away during long waits */
static inline void crew_port_spin_wait(int id, u64 old, bool active,
				       unsigned long spins)
{
	(void)id;
	(void)old;
	(void)active;
	if ((spins & 255) == 255)
		sched_yield();
}

/*
 * Asymmetric fence: every other running thread of this process executes a
 * full barrier at an instruction boundary before this returns (an IPI; a
 * descheduled thread went through the scheduler's barrier).
 */
static inline int crew_port_membarrier_register(void)
{
	return syscall(__NR_membarrier,
		       MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) ? -1 : 0;
}

static inline int crew_port_membarrier(void)
{
	return syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0)
		? -1 : 0;
}
#endif /* __KERNEL__ */

/* READ_ONCE/WRITE_ONCE-like accesses and ordering */
#define crew_barrier()		__asm__ __volatile__("" ::: "memory")
#define crew_load(p)		__atomic_load_n((p), __ATOMIC_RELAXED)
#define crew_load_acquire(p)	__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define crew_store(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define crew_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define crew_xchg(p, v)		__atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)

static crew_inline void crew_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__("pause" ::: "memory");
#else
	crew_barrier();
#endif
}

/* full fence (store->load ordering): a locked no-op is cheaper than mfence */
static crew_inline void crew_fence(void)
{
#if defined(__x86_64__)
	__asm__ __volatile__("lock; orl $0, -4(%%rsp)" ::: "memory", "cc");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* unaligned, may_alias loads of 1, 2, 4, 8 shadow bytes (one instruction) */
typedef u16 __attribute__((may_alias, aligned(1))) crew_u16u;
typedef u32 __attribute__((may_alias, aligned(1))) crew_u32u;
typedef u64 __attribute__((may_alias, aligned(1))) crew_u64u;

#define crew_ld_u8(s)	(*(const volatile u8 *)(s))
#define crew_ld_u16(s)	(*(const volatile crew_u16u *)(s))
#define crew_ld_u32(s)	(*(const volatile crew_u32u *)(s))
#define crew_ld_u64(s)	(*(const volatile crew_u64u *)(s))
#define crew_st_u64(s, v) (*(volatile crew_u64u *)(s) = (v))

#endif /* CREW_PORT_H */
