/*
 * replay-vm: deterministic record and replay at the VM boundary.
 *
 * Every nondeterministic input a vCPU sees is logged at its exact position
 * in that vCPU's execution and fed back from the log on replay.  A position
 * is (retired-branch count, rip, rcx): the branch count comes from the
 * accelerator (a counter generated into TCG code here, the PMU under KVM),
 * rcx tells apart the iterations of a rep-prefixed string instruction.
 *
 * Synchronous inputs (port/MMIO read values, rdtsc, rdrand) are consumed in
 * order by the vCPU that reads them.  Asynchronous ones (interrupts, DMA into
 * guest RAM, checkpoints) are delivered when the vCPU reaches the logged
 * position.  Device models keep running on replay, but nothing they do
 * reaches the guest: their reads are answered from the log, their writes to
 * guest RAM and their interrupts are dropped.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef SYSEMU_RRVM_H
#define SYSEMU_RRVM_H

#include "exec/hwaddr.h"
#include "exec/cpu-common.h"
#include "sysemu/rrvm-mode.h"

/*
 * With byte-granular CREW (after the switch) branches counts user-mode
 * branches and kernel entries only, dp the kernel's deterministic points,
 * seq the guest module's CREW sequence; a kernel-mode position's rip is
 * the native pc of its det point and its rcx says where exactly: 1 at the
 * det point's doorbell, 2 halted after it, 3 at an MMIO det point, 0 in
 * between.
 */
typedef struct RRVMPos {
    uint64_t branches;
    uint64_t rip;
    uint64_t rcx;
    uint64_t dp;
    uint64_t seq;
} RRVMPos;

enum RRVMSpace { RRVM_PIO = 0, RRVM_MMIO = 1 };
enum RRVMTime { RRVM_RDTSC = 0, RRVM_RDTSCP = 1, RRVM_RDRAND = 2,
                RRVM_RDSEED = 3, RRVM_RDMSR = 4 };
enum RRVMIntr { RRVM_INT_HARD = 0, RRVM_INT_NMI = 1, RRVM_INT_INIT = 2,
                RRVM_INT_SIPI = 3, RRVM_INT_SMI = 4 };

/* exit status of a replay that diverged from its recording */
#define RRVM_EXIT_DIVERGED 3

/* command line and lifetime */
void rrvm_parse_opts(const char *optarg);
void rrvm_machine_ready(void);           /* after machine init, before run */
void rrvm_finish(const char *reason);    /* at QEMU exit */
void rrvm_settle(void);                  /* before the vCPUs are paused */
/* why the recorded run is ending (first call wins; signal-safe) */
void rrvm_note_stop(const char *reason);
bool rrvm_ignore_guest_shutdown(void);

/* per-vCPU thread: record keeps an exec lock while guest code runs */
void rrvm_vcpu_init(CPUState *cpu);
void rrvm_vcpu_exec_begin(CPUState *cpu);
void rrvm_vcpu_exec_end(CPUState *cpu);
void rrvm_lock_iothread(CPUState *cpu, uintptr_t ra);
/* to deliver an exception; true: it was dropped, run the insn again */
bool rrvm_lock_iothread_exception(CPUState *cpu);
void rrvm_note_fill_fault(CPUState *cpu, uint64_t undo0, uint64_t undo1);
/* around a wait with the BQL released inside an I/O access (run_on_cpu) */
bool rrvm_io_wait_begin(void);
void rrvm_io_wait_end(bool parked);
typedef enum RRVMLoop {
    RRVM_LOOP_RUN,          /* go on executing */
    RRVM_LOOP_INTERRUPT,    /* an interrupt was delivered */
    RRVM_LOOP_WAIT,         /* waiting at a barrier: leave cpu_exec, idle */
} RRVMLoop;
RRVMLoop rrvm_cpu_loop_hook(CPUState *cpu);  /* top of the cpu_exec loop */
bool rrvm_cpu_waiting(CPUState *cpu);

bool rrvm_replay_halted(CPUState *cpu);  /* true: stay halted */
bool rrvm_replay_pre_exception(CPUState *cpu);  /* true: wait */

/* device context: code that emulates devices, whose RAM writes are DMA */
extern __thread int rrvm_dev_depth;
static inline void rrvm_dev_enter(void) { rrvm_dev_depth++; }
static inline void rrvm_dev_leave(void) { rrvm_dev_depth--; }
bool rrvm_in_device(void);

/* synchronous inputs: record logs @value and returns it; replay returns
 * the logged one (or reports a divergence) */
uint64_t rrvm_io_read(CPUState *cpu, uintptr_t ra, int space, hwaddr addr,
                      unsigned size, uint64_t value);
uint64_t rrvm_time_read(CPUState *cpu, uintptr_t ra, int kind, uint64_t value,
                        uint64_t aux);

/* interrupts, recorded when taken at an instruction boundary */
void rrvm_record_interrupt(CPUState *cpu, int kind, int vector);

/* device writes into guest RAM */
bool rrvm_ram_write(ram_addr_t addr, void *host, const void *buf, hwaddr len);
void rrvm_ram_written(ram_addr_t addr, const void *host, hwaddr len);
void *rrvm_map_bounce(hwaddr len);
bool rrvm_unmap_bounce(void *buf);
void *rrvm_record_bounce(MemoryRegion *mr, hwaddr xlat, void *host,
                         hwaddr len);
bool rrvm_record_unbounce(void *buf, hwaddr access_len);

/* provided by the target */
void rrvm_target_pos(CPUState *cpu, uintptr_t ra, RRVMPos *pos);
uint64_t rrvm_target_regs_hash(CPUState *cpu, const RRVMPos *pos);
void rrvm_target_deliver(CPUState *cpu, int kind, int vector);
void rrvm_target_step_one(CPUState *cpu);
G_NORETURN void rrvm_target_restart_insn(CPUState *cpu, uintptr_t ra);
void rrvm_target_insn_runs_again(CPUState *cpu, uintptr_t ra);
void rrvm_target_fill_fault(CPUState *cpu, uintptr_t ra, int access_type);
void rrvm_target_undo_fault(CPUState *cpu, const uint64_t *undo);
void rrvm_target_kick(CPUState *cpu);     /* leave the TB chain soon */
int rrvm_target_sipi_vector(CPUState *cpu);

/* page-granular CREW in the softmmu TLB (record, several vCPUs) */
extern bool rrvm_page_crew;
int rrvm_crew_prot(CPUState *cpu, uint64_t ram_addr, int mmu_idx);
/* byte CREW with user=page: page CREW covers user addresses only */
extern bool rrvm_user_page_crew;
bool rrvm_crew_covers(uint64_t vaddr, int mmu_idx);
int rrvm_crew_table_prot(CPUState *cpu, uint64_t ram_addr, int mmu_idx);
bool rrvm_target_user_access(uint64_t vaddr, int mmu_idx);
/* a walk's table reads; @for_user: a walk for a user address */
bool rrvm_target_walk_idx(int mmu_idx, bool *for_user);
uintptr_t rrvm_crew_fill_enter(CPUState *cpu, uintptr_t ra);
void rrvm_crew_fill_leave(CPUState *cpu, uintptr_t prev);
void rrvm_crew_unwound(CPUState *cpu);
void rrvm_crew_fill_begin(CPUState *cpu);
bool rrvm_crew_fill_end(CPUState *cpu, int access_type, uint64_t addr,
                        int size, uintptr_t ra);
void rrvm_tlb_revoke(CPUState *cpu, uint64_t ram_page);
void rrvm_tlb_drop_user(CPUState *cpu);
/* under the vCPU's TLB lock: its fills of RAM, for rrvm_tlb_revoke */
void rrvm_rmap_note(CPUState *cpu, uintptr_t host, uint64_t vaddr_page,
                    int mmu_idx);
void rrvm_rmap_clear(CPUState *cpu);      /* its TLB is empty */
int rrvm_rmap_find(CPUState *cpu, uintptr_t host, uint64_t *va, int max);
void rrvm_tb_invalidate_page(uint64_t ram_page);  /* next TB: one insn, unchecked */

/* byte-granular CREW with the guest module (replay-vm/crew-byte.c) */
/*
 * Debugging (environment, read once): RRVM_DEBUG prints the byte-CREW
 * replay's decisions, RRVM_DEBUG_REGS the registers behind every register
 * hash; RRVM_RAMDUMP (softmmu/physmem.c) dumps RAM at every RAM hash.
 */
extern bool rrvm_debug, rrvm_debug_regs;

/* TB cflags bit (CF_RRVM_BYTE in exec-all.h): user branches only */
#define RRVM_CF_BYTE 0x00001000
extern bool rrvm_byte_crew;         /* -rr ...,crew=byte */
extern bool rrvm_byte_active;       /* after the guest module's switch */
void rrvm_byte_doorbell(CPUState *cpu, uintptr_t ra, int kind);
void rrvm_byte_command(CPUState *cpu, uint32_t cmd, uint64_t a0, uint64_t a1,
                       uint64_t a2, uintptr_t ra);
void rrvm_byte_report_waits(void);
bool rrvm_byte_fence_offered(void);
void rrvm_byte_set_blocked(CPUState *cpu, bool blocked);
bool rrvm_byte_in_cache(uint64_t pc);
uint64_t rrvm_byte_dp(CPUState *cpu);
uint64_t rrvm_byte_dp_pc(CPUState *cpu);
uint64_t rrvm_byte_seq(CPUState *cpu);
bool rrvm_byte_exact(CPUState *cpu, bool user);
bool rrvm_byte_at_doorbell(CPUState *cpu);
int rrvm_byte_point(CPUState *cpu);         /* 0, 1 doorbell, 2 halt, 3 MMIO */
void rrvm_byte_woke(CPUState *cpu);         /* a halted vCPU goes on */
void rrvm_byte_leave_point(CPUState *cpu);  /* about to run guest code */
void rrvm_byte_delivering(CPUState *cpu);
void rrvm_byte_arm(CPUState *cpu, uint64_t n);
void rrvm_byte_cpl_hook(CPUState *cpu, int cpl);
bool rrvm_byte_defer_irq(CPUState *cpu, int cpl);
bool rrvm_byte_hold_exit(CPUState *cpu);
/* target: leave the TB after the current instruction (@len bytes) */
G_NORETURN void rrvm_target_leave_after_insn(CPUState *cpu, uintptr_t ra,
                                             int len);
int rrvm_target_cpl(CPUState *cpu);
uint64_t rrvm_target_pc(CPUState *cpu);
uint64_t rrvm_target_sp(CPUState *cpu);
uint64_t rrvm_target_as(CPUState *cpu);     /* CR3 without PCID */
/* target: a kernel-mode interrupt at a det point or after a halt */
void rrvm_target_byte_rewind(CPUState *cpu);

/* provided by physmem */
bool rrvm_apply_ram(uint64_t addr, const void *buf, size_t len);
void rrvm_ram_hash(uint8_t out[32]);
void rrvm_ram_dump_diverged(void);
typedef struct RRVMRange {
    uint64_t gpa, len;
} RRVMRange;
/* ranges (sorted by gpa) the RAM hash leaves out: module-private memory */
void rrvm_set_ram_hash_exclusions(const RRVMRange *r, size_t n);

/*
 * KVM backend, degraded timing mode (replay-vm/kvm.c): positions count the
 * vCPU's deterministic exits; asynchronous events happen only there.
 */
void rrvm_kvm_init(uint64_t ckpt_exits, uint64_t timescale);
void rrvm_kvm_exited(CPUState *cpu, bool det);
void rrvm_kvm_enter(CPUState *cpu);
RRVMLoop rrvm_kvm_point(CPUState *cpu);
/* back from KVM_RUN: what kvm_cpu_exec_rr does next */
typedef enum {
    RRVM_KVM_EXIT,      /* an exit to handle: a deterministic one */
    RRVM_KVM_AGAIN,     /* nothing for the guest to see: go back in */
    RRVM_KVM_STOP,      /* a forced stop: a position, nothing to handle */
} RRVMKvmRun;
RRVMKvmRun rrvm_kvm_after_run(CPUState *cpu, int run_ret);
void rrvm_kvm_pos(CPUState *cpu, RRVMPos *pos);
/* the patched KVM's RDTSC/RDTSCP/PAUSE exits (linux/rrvm-kvm.h) */
void rrvm_kvm_exits_on(bool on);
uint64_t rrvm_kvm_tsc_exit(CPUState *cpu, bool rdtscp, uint64_t tsc,
                           uint32_t aux);
void rrvm_kvm_pause_exit(CPUState *cpu);
void rrvm_kvm_finish(void);
/* page CREW through the patched KVM's per-vCPU page rights (crew-kvm.c) */
void rrvm_kvm_crew_init(uint64_t gfns, uint64_t init);
void rrvm_kvm_crew_fault(CPUState *cpu, uint64_t gpa, bool write);
/* target/i386/kvm/rrvm-kvm-x86.c */
void rrvm_kvm_arch_regs(CPUState *cpu, uint64_t *rip, uint64_t *rcx);
uint64_t rrvm_kvm_arch_regs_hash(CPUState *cpu);
bool rrvm_kvm_arch_insn_pending(CPUState *cpu);
void rrvm_kvm_arch_deliver(CPUState *cpu, int kind, int vector);
void rrvm_kvm_arch_crew_set(uint64_t gfn, uint64_t owners);
bool rrvm_kvm_arch_ids_are_indexes(void);
enum { RRVM_KVM_RUN_EXIT, RRVM_KVM_RUN_KICKED, RRVM_KVM_RUN_DEBUG };
int rrvm_kvm_arch_run_kind(CPUState *cpu, int run_ret);
bool rrvm_kvm_arch_irq_pending(CPUState *cpu);
/* why a kick is not taken as a forced stop (0: it is) */
enum { RRVM_STOP_OK, RRVM_STOP_USER, RRVM_STOP_NO_IF, RRVM_STOP_EVENT,
       RRVM_STOP_REP, RRVM_STOP_NO_CODE, RRVM_STOP_WHY };
int rrvm_kvm_arch_stop_pos(CPUState *cpu, bool for_irq, RRVMPos *pos);
void rrvm_kvm_arch_breakpoint(CPUState *cpu, uint64_t rip);
bool rrvm_kvm_arch_at_stop(CPUState *cpu, const RRVMPos *want);

#endif
