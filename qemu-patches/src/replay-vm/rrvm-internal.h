/*
 * replay-vm: state shared by the record and replay halves.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef RRVM_INTERNAL_H
#define RRVM_INTERNAL_H

#include "rrlog.h"
#include "hw/boards.h"

#define RRVM_MAX_CPUS 64

/* a replayed event that several vCPUs meet (DMA, whole-VM checkpoint) */
typedef struct RRVMItem {
    Rr__Event *ev;
    uint64_t index;          /* event number in the log */
    int pending;             /* vCPUs that have not arrived yet */
    int refs;
    bool done;
} RRVMItem;

typedef struct RRVMRmap RRVMRmap;   /* crew-rmap.c */

/*
 * Byte CREW with user=page: a page taken by kernel code (a user copy) is
 * not at a det point.  Its position is the det point's, with rcx this
 * plus the number of takes the vCPU logged since that det point (kernel
 * code between two det points runs no loop but a rep string).
 */
#define RRVM_TAKE_RCX 0x1000
/*
 * Between a take it logged (number rcx - this) and the access: a vCPU is
 * held there when a stopper gets it before it takes its exec lock back.
 */
#define RRVM_TAKE_POST 0x1800

typedef struct RRVMCpu {
    CPUState *cpu;
    /* record */
    QemuMutex exec_lock;
    bool exec_held;          /* by this vCPU's own thread */
    int stop_req;            /* a stopper wants this vCPU held */
    RRVMPos park_pos;        /* valid while exec_lock is not held by us */
    bool park_safe;          /* parked between instructions (not in I/O) */
    RRVMPos io_pos;          /* position of the I/O access in progress */
    bool io_in_insn;         /* io_pos is inside an instruction */
    bool park_in_exc;        /* byte CREW: parked in an exception entry */
    bool fault_noted;        /* page CREW: the pending fault can be undone */
    uint64_t fault_undo[2];  /* by the target with these (x86: cr2 and */
                             /* the double-fault tracking it replaces) */
    uint64_t next_ckpt;
    uint64_t fill_ram;       /* page-CREW: RAM page of the last TLB fill */
    bool fill_mark;          /* ... a walk's, of a page not yet a table */
    bool fill_table;         /* ... the kernel's, of a user page table */
    uintptr_t fill_ra;       /* page-CREW: host address of the access */
    RRVMRmap *rmap;          /* page-CREW: TLB fills by RAM page */
    uint64_t take_dp;        /* byte CREW, user=page: kernel-mode takes */
    uint64_t take_k;         /* logged since det point take_dp */
    bool take_at_head;       /* replay: meet the queue's head at the loop */
    RRVMPos take_post;       /* replay: after its take, before the access */
    bool in_take_post;
    /* KVM: position = deterministic exits taken, rip, rcx (see kvm.c) */
    uint64_t det_exits;
    RRVMPos kvm_pos;
    bool kvm_started;
    uint64_t last_ckpt;
    uint64_t crew_gpa;       /* KVM page CREW replay: the access at the */
    bool crew_write;         /* last CREW exit, settled after the log's */
    bool crew_pending;       /* events there (crew-kvm.c) */
    uint64_t force_for;      /* KVM record: stop after exit #n-1 (kvm.c) */
    uint64_t force_seen;     /* KVM record: det_exits at the last check */
    int64_t force_since;     /* KVM record: ms since it has not moved */
    RRVMPos seek;            /* KVM replay: the forced stop to find */
    bool seeking;            /* KVM replay: its breakpoint is set */
    /* replay (under RRVMState.lock) */
    GQueue sync_q;           /* RRVMItem: port/MMIO reads, rdtsc, rdrand */
    GQueue async_q;          /* RRVMItem: interrupts, DMA, checkpoints */
    RRVMItem *wait_item;     /* barrier arrived at, not yet done */
    /* byte CREW (crew-byte.c) */
    uint8_t *bpage;          /* the guest's struct rvg_vcpu page */
    uint8_t *bring;          /* its transfer ring */
    QemuMutex bring_lock;    /* record: one consumer at a time */
    uint64_t btail;          /* record: records consumed */
    uint64_t bmark;          /* record: seq of the last mark logged */
    uint64_t bhead;          /* replay: records produced */
    uint64_t *bidx;          /* replay: log index of each ring slot's record */
    bool bend_sent;          /* replay: END given to the guest */
    uint64_t bseq_last;      /* replay: seq of the last record given */
    bool buntil_mark;        /* replay: the until point's mark given */
    GQueue byte_q;           /* replay: RRVMItem, this vCPU's transfers */
    uint64_t dp_base;        /* det points = dp_base - guest's dp_remain */
    int point;               /* exact kernel point: 1 doorbell, 2 halt */
    bool delivering;         /* an interrupt goes in at deliver_pos */
    RRVMPos deliver_pos;
    int last_cpl;
    bool held_outside;       /* exec lock kept outside cpu_exec */
    bool parked_blocked;     /* record: blocked because held by the host */
    uint64_t held;           /* record: times another thread held it */
    const char *waiting;     /* record: what its thread waits for, if */
    int waiting_on;          /* anything, and on which vCPU (or -1); */
    bool in_guest;           /* KVM: inside KVM_RUN (record-stall.c) */
} RRVMCpu;

typedef struct RRVMState {
    rr_writer *writer;
    rr_reader *reader;
    int n_cpus;
    RRVMCpu cpus[RRVM_MAX_CPUS];
    QemuMutex lock;
    QemuMutex world_lock;    /* one thread at a time holds other vCPUs */
    QemuCond cond;
    uint64_t start_ns;
    uint64_t n_ckpt;
    /* replay */
    uint64_t next_index;     /* event number of the next event read */
    uint64_t live_items;     /* read from the log and not yet done with */
    bool log_ended;          /* End event or end of a truncated log seen */
    bool end_clean;
    uint64_t kick_mask;      /* vCPUs to wake once rrvm.lock is released */
    uint64_t n_verified;
    const char *end_reason;  /* from the log's End event */
    /* run control (replay): stop before event #until */
    uint64_t until;          /* UINT64_MAX: run to the end */
    bool until_pause;        /* pause for a debugger instead of exiting */
    int n_parked;            /* vCPUs holding still at the until point */
    bool progress;           /* "progress" lines on stderr */
    int64_t progress_last_us;
    uint64_t next_ckpt_ns;   /* byte CREW record: checkpoints by time */
    bool end_logged;         /* byte CREW record: End written at settle */
    /* record */
    const char *stop_reason; /* first reason the recorded run ended */
    uint64_t exc_positions;  /* byte CREW: vCPUs held in an exception entry */
    QemuThread flusher;
    bool flusher_on;
    int world_owner;         /* vCPU index, -2 another thread, -1 none */
} RRVMState;

extern RRVMState rrvm;

uint64_t rrvm_now_ns(void);
void rrvm_append(const Rr__Event *ev);
void rrvm_pos_of(CPUState *cpu, uintptr_t ra, RRVMPos *pos);
rr_pos rrvm_to_rr_pos(const RRVMPos *p);
RRVMPos rrvm_from_rr_pos(const Rr__Position *p);
bool rrvm_pos_equal(const RRVMPos *a, const RRVMPos *b);

/*
 * Whether the instruction at @pos already did I/O, which must not happen
 * twice if the instruction is run again.  I/O at the same position but
 * between instructions (the BQL taken for an interrupt at a TB's start)
 * is not part of it.
 */
static inline bool rrvm_insn_did_io(const RRVMCpu *rc, const RRVMPos *pos)
{
    return rc->io_in_insn && rrvm_pos_equal(&rc->io_pos, pos);
}

void rrvm_stop_world(void);
void rrvm_resume_world(void);
bool rrvm_world_enter(const RRVMPos *self_pos);
void rrvm_world_exit(void);
void rrvm_stop_mask(uint64_t mask);
void rrvm_resume_mask(uint64_t mask);
void rrvm_crew_page_init(void);
void rrvm_crew_replay_transfer(CPUState *cpu, const RRVMItem *it);
void rrvm_crew_log_transfer(CPUState *cpu, const RRVMPos *me, uint64_t gpa,
                            int size, bool write, uint64_t prev);
/*
 * A page-CREW owner word (crew-page.c, crew-kvm.c): the bitmap of owning
 * vCPUs, plus RRVM_CREW_EXCL when the owners (then one) may write.
 */
#define RRVM_CREW_EXCL (1ULL << 63)

static inline bool rrvm_crew_allows(uint64_t st, uint64_t bit, bool write)
{
    return (st & bit) && (!write || (st & RRVM_CREW_EXCL));
}

/* the owner word after vCPU @bit takes the page for @write */
static inline uint64_t rrvm_crew_taken(uint64_t st, uint64_t bit, bool write)
{
    return write ? (bit | RRVM_CREW_EXCL) : ((st & ~RRVM_CREW_EXCL) | bit);
}

/* page CREW under KVM (crew-kvm.c) */
extern bool rrvm_kvm_crew;
void rrvm_kvm_crew_replay_transfer(CPUState *cpu, const RRVMItem *it);
void rrvm_kvm_crew_settle(CPUState *cpu);
void rrvm_kvm_crew_finish(void);
void rrvm_kvm_force_check(void);
void rrvm_kvm_seek(CPUState *cpu, const RRVMPos *want);
void rrvm_kvm_report_seeks(void);
uint64_t rrvm_kvm_seek_hits(void);
extern uint64_t rrvm_crew_transfers;
extern uint64_t rrvm_crew_restarts;
extern uint64_t rrvm_fault_restarts;
void rrvm_stopped_pos(CPUState *cpu, RRVMPos *pos);

void rrvm_header_images(Rr__Header *h, MachineState *ms);
void rrvm_replay_set_until(uint64_t until, bool pause);
bool rrvm_replay_until_hold_locked(CPUState *cpu);
void rrvm_header_free(Rr__Header *h);

void rrvm_record_start(MachineState *ms, const char *path);
void rrvm_record_finish(const char *reason);
bool rrvm_record_checkpoint(CPUState *cpu);

void rrvm_replay_start(MachineState *ms, const char *path);
RRVMLoop rrvm_replay_loop(CPUState *cpu);
bool rrvm_replay_more_here(CPUState *cpu);
RRVMItem *rrvm_next_sync(CPUState *cpu);
void rrvm_item_done(RRVMItem *it);
G_NORETURN void rrvm_diverged(CPUState *cpu, uint64_t index, const char *what,
                              const RRVMPos *want, const RRVMPos *found);
G_NORETURN void rrvm_replay_complete(const char *how);
G_NORETURN void rrvm_bad_log(const char *what, uint64_t index);
void rrvm_replay_unlock(void);
void rrvm_item_release_locked(RRVMItem *it);

/* byte CREW (crew-byte.c) */
bool rrvm_record_switch(CPUState *self, const RRVMPos *self_pos);
void rrvm_byte_flip_held(void);
void rrvm_byte_queue(RRVMItem *it);
RRVMItem *rrvm_byte_next_locked(RRVMCpu *rc);
void rrvm_byte_drain_all(bool final);
void rrvm_byte_untrained_summary(Rr__End *end);
void rrvm_byte_user_summary(Rr__End *end);
void rrvm_crew_take_pos(CPUState *cpu, uintptr_t ra, bool in_insn,
                        RRVMPos *pos);
bool rrvm_crew_took(CPUState *cpu, const RRVMPos *pos, RRVMPos *post);
bool rrvm_replay_take_here(CPUState *cpu, uint64_t page);
void rrvm_record_settle(void);
void rrvm_record_abort(const char *reason);
void rrvm_flusher_stop(void);

/* record-stall.c: a recording that logs nothing says where vCPUs wait */
void rrvm_note_wait(const char *what, int on);
void rrvm_record_stall_check(void);
int64_t rrvm_stall_seconds(void);

/* crash.c: a fatal signal prints where it hit before QEMU dies of it */
void rrvm_crash_report_init(void);

#endif
