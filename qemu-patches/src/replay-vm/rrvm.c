/*
 * replay-vm: record and replay of a whole VM at its boundary.
 *
 * Recording appends every input to run.rr through librrlog (thread-safe,
 * so the file's event order is a total order consistent with each vCPU's
 * own order and with causality: a DMA write is logged before the interrupt
 * that announces it).  Replay streams the log and hands each event to the
 * vCPU it belongs to; events without a vCPU (DMA, whole-VM checkpoints) are
 * barriers that every vCPU meets at its own logged position.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "qemu/thread.h"
#include "qemu/error-report.h"
#include "qemu/option.h"
#include "qemu/config-file.h"
#include "qemu/cutils.h"
#include "qapi/error.h"
#include "hw/core/cpu.h"
#include "hw/boards.h"
#include "sysemu/cpus.h"
#include "sysemu/runstate.h"
#include "sysemu/kvm.h"
#include "sysemu/rrvm.h"
#include "exec/cputlb.h"
#include "rrvm-internal.h"

int rrvm_mode;
__thread int rrvm_dev_depth;
bool rrvm_debug, rrvm_debug_regs;

RRVMState rrvm;

static const char *rrvm_log_path;
static uint64_t ckpt_interval = 200 * 1000 * 1000;   /* branches */
static bool ckpt_given;
/* byte CREW records checkpoints by time (RRVM_CKPT_MS, default 2 s) */
static uint64_t byte_ckpt_ns = 2000000000ULL;
static const char *crew_opt;
static uint64_t until_opt = UINT64_MAX;
static bool pause_opt, progress_opt;
static uint64_t timescale_opt = 1;

#define RR_USAGE "use -rr record|replay,log=FILE[,checkpoint=N]" \
                 "[,crew=page|byte[,user=page]][,timescale=N]" \
                 "[,until=N[,pause=on]][,progress=on]"

static bool parse_bool(const char *opt, const char *v)
{
    if (!strcmp(v, "on")) {
        return true;
    }
    if (strcmp(v, "off")) {
        error_report("-rr: %s takes on or off, not '%s'", opt, v);
        exit(1);
    }
    return false;
}

void rrvm_parse_opts(const char *optarg)
{
    g_auto(GStrv) parts = g_strsplit(optarg, ",", -1);

    for (int i = 0; parts[i]; i++) {
        const char *p = parts[i];

        if (i == 0 && !strcmp(p, "record")) {
            rrvm_mode = RRVM_RECORD;
        } else if (i == 0 && !strcmp(p, "replay")) {
            rrvm_mode = RRVM_REPLAY;
        } else if (g_str_has_prefix(p, "log=")) {
            rrvm_log_path = g_strdup(p + 4);
        } else if (g_str_has_prefix(p, "checkpoint=")) {
            ckpt_given = true;
            if (qemu_strtou64(p + 11, NULL, 0, &ckpt_interval) < 0) {
                error_report("-rr: bad checkpoint interval '%s'", p + 11);
                exit(1);
            }
        } else if (g_str_has_prefix(p, "crew=")) {
            crew_opt = g_strdup(p + 5);
        } else if (!strcmp(p, "user=page")) {
            rrvm_user_page_crew = true;
        } else if (g_str_has_prefix(p, "until=")) {
            if (qemu_strtou64(p + 6, NULL, 0, &until_opt) < 0) {
                error_report("-rr: bad event number in '%s'", p);
                exit(1);
            }
        } else if (g_str_has_prefix(p, "pause=")) {
            pause_opt = parse_bool("pause", p + 6);
        } else if (g_str_has_prefix(p, "timescale=")) {
            if (qemu_strtou64(p + 10, NULL, 0, &timescale_opt) < 0 ||
                timescale_opt < 1 || timescale_opt > 1000) {
                error_report("-rr: timescale wants 1 to 1000, not '%s'",
                             p + 10);
                exit(1);
            }
        } else if (g_str_has_prefix(p, "progress=")) {
            progress_opt = parse_bool("progress", p + 9);
        } else {
            error_report("-rr: unknown option '%s' (" RR_USAGE ")", p);
            exit(1);
        }
    }
    rrvm_debug = g_getenv("RRVM_DEBUG") != NULL;
    rrvm_debug_regs = g_getenv("RRVM_DEBUG_REGS") != NULL;
    if (g_getenv("RRVM_CKPT_MS")) {
        uint64_t ms;

        if (qemu_strtou64(g_getenv("RRVM_CKPT_MS"), NULL, 0, &ms) < 0 ||
            ms == 0 || ms > 3600000) {
            error_report("RRVM_CKPT_MS: want milliseconds, 1 to 3600000");
            exit(1);
        }
        byte_ckpt_ns = ms * 1000000ULL;
    }
    if (rrvm_mode == RRVM_OFF || !rrvm_log_path) {
        error_report("-rr: give a mode and a log: -rr record,log=run.rr");
        exit(1);
    }
    if (crew_opt && !strcmp(crew_opt, "byte")) {
        /* page CREW until the guest module switches (crew-byte.c) */
        rrvm_byte_crew = true;
    } else if (rrvm_user_page_crew) {
        error_report("-rr: user=page goes with crew=byte (page CREW "
                     "orders user memory already)");
        exit(1);
    } else if (crew_opt && strcmp(crew_opt, "page")) {
        error_report("-rr: unknown crew mode '%s' (page or byte)", crew_opt);
        exit(1);
    }
    if (rrvm_mode == RRVM_RECORD && (until_opt != UINT64_MAX || pause_opt ||
                                     progress_opt)) {
        error_report("-rr: until, pause and progress are replay options");
        exit(1);
    }
    if (rrvm_mode == RRVM_REPLAY && timescale_opt != 1) {
        /* a replay's time comes from the log */
        error_report("-rr: timescale is a record option");
        exit(1);
    }
}

static RRVMCpu *rc_of(CPUState *cpu)
{
    return &rrvm.cpus[cpu->cpu_index];
}

void rrvm_vcpu_init(CPUState *cpu)
{
    RRVMCpu *rc;

    if (!rrvm_enabled()) {
        return;
    }
    g_assert(cpu->cpu_index < RRVM_MAX_CPUS);
    rc = rc_of(cpu);
    rc->cpu = cpu;
    qemu_mutex_init(&rc->exec_lock);
    g_queue_init(&rc->sync_q);
    g_queue_init(&rc->async_q);
    rc->next_ckpt = ckpt_interval;
}

uint64_t rrvm_now_ns(void)
{
    return g_get_real_time() * 1000 - rrvm.start_ns;
}

/*
 * For the vCPU loop, which runs at every TB that is not chained: a few ns
 * instead of a gettimeofday (2.6 % of a byte-CREW recording's time).
 * Millisecond resolution is plenty for a checkpoint period.
 */
static uint64_t rrvm_coarse_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * Log an input, fatal on I/O errors: a recording that silently lost events
 * would replay wrongly, so stopping is the only safe answer.
 */
/*
 * Chunks also end on a timer, so that a recording killed without warning
 * (SIGKILL after a 'virsh destroy' that timed out) loses at most this much.
 */
#define FLUSH_MS 200

static void *flusher(void *opaque)
{
    rr_error err;

    while (qatomic_read(&rrvm.flusher_on)) {
        rrvm_byte_drain_all(false);
        if (rr_writer_flush(rrvm.writer, &err) < 0) {
            error_report("replay-vm: writing %s failed: %s", rrvm_log_path,
                         err.msg);
            exit(1);
        }
        rrvm_record_stall_check();
        if (kvm_enabled()) {
            rrvm_kvm_force_check();
        }
        g_usleep(FLUSH_MS * 1000);
    }
    return NULL;
}

static void rrvm_flusher_start(void)
{
    rrvm.flusher_on = true;
    qemu_thread_create(&rrvm.flusher, "rrvm-flush", flusher, NULL,
                       QEMU_THREAD_JOINABLE);
}

void rrvm_flusher_stop(void)
{
    if (rrvm.flusher_on) {
        qatomic_set(&rrvm.flusher_on, false);
        qemu_thread_join(&rrvm.flusher);
    }
}

void rrvm_append(const Rr__Event *ev)
{
    rr_error err;

    if (!rrvm.writer) {
        return;     /* byte CREW: the End is logged, the VM winds down */
    }
    if (rr_writer_append(rrvm.writer, ev, &err) < 0) {
        error_report("replay-vm: writing %s failed: %s", rrvm_log_path,
                     err.msg);
        exit(1);
    }
}

/*
 * A vCPU's park position is set when it leaves guest code; one that has not
 * run yet (an AP waiting for its SIPI, or every vCPU while libvirt holds the
 * VM at -S) is at its reset state, which is exact: take it when the VM
 * first starts, before any vCPU runs.
 */
static void first_start(void *opaque, bool running, RunState state)
{
    static bool done;
    CPUState *cpu;

    if (!running || done || kvm_enabled()) {
        return;
    }
    done = true;
    CPU_FOREACH(cpu) {
        rrvm_pos_of(cpu, 0, &rc_of(cpu)->park_pos);
    }
}

void rrvm_machine_ready(void)
{
    MachineState *ms = MACHINE(qdev_get_machine());
    CPUState *cpu;

    if (!rrvm_enabled()) {
        return;
    }
    rrvm_crash_report_init();
    rrvm.n_cpus = ms->smp.cpus;
    qemu_mutex_init(&rrvm.lock);
    qemu_mutex_init(&rrvm.world_lock);
    rrvm.world_owner = -1;
    qemu_cond_init(&rrvm.cond);
    if (rrvm.n_cpus > RRVM_MAX_CPUS) {
        error_report("replay-vm: at most %d vCPUs", RRVM_MAX_CPUS);
        exit(1);
    }
    if (!first_cpu) {
        /* e.g. -M none: nothing runs, and a checkpoint has no vCPU to hash */
        error_report("replay-vm: -rr: the machine has no vCPU to record or "
                     "replay");
        exit(1);
    }
    CPU_FOREACH(cpu) {
        rrvm_vcpu_init(cpu);
    }
    if (timescale_opt > 1 && !kvm_enabled()) {
        error_report("replay-vm: -rr timescale is for the KVM backend (under "
                     "TCG the guest's TSC follows the host's cycle counter)");
        exit(1);
    }
    if (kvm_enabled()) {
        rrvm_kvm_init(ckpt_given ? ckpt_interval : 0, timescale_opt);
    }
    if (rrvm.n_cpus > 1 && !kvm_enabled()) {
        rrvm_crew_page_init();      /* replay mirrors it: see crew-page.c */
    }
    if (rrvm_recording()) {
        rrvm_record_start(ms, rrvm_log_path);
        rrvm_flusher_start();
        qemu_add_vm_change_state_handler(first_start, NULL);
    } else {
        rrvm.progress = progress_opt;
        rrvm_replay_start(ms, rrvm_log_path);
        rrvm_replay_set_until(until_opt, pause_opt);
    }
}

bool rrvm_ignore_guest_shutdown(void)
{
    /* on replay the log, not the guest, says when the run ends */
    return rrvm_replaying();
}

/* The first cause wins: a guest poweroff that libvirt follows with SIGTERM */
void rrvm_note_stop(const char *reason)
{
    if (rrvm_recording() && !rrvm.stop_reason) {
        rrvm.stop_reason = reason;
    }
}

void rrvm_finish(const char *reason)
{
    if (rrvm_recording() && rrvm.writer) {
        if (kvm_enabled()) {
            rrvm_kvm_finish();
        }
        rrvm_flusher_stop();
        rrvm_byte_drain_all(true);
        rrvm_record_finish(rrvm.stop_reason ? rrvm.stop_reason : reason);
    }
}

void rrvm_settle(void)
{
    if (rrvm_recording() && rrvm_byte_active) {
        rrvm_record_settle();
    }
}

bool rrvm_in_device(void)
{
    return rrvm_dev_depth > 0 || !current_cpu;
}

void rrvm_pos_of(CPUState *cpu, uintptr_t ra, RRVMPos *pos)
{
    if (kvm_enabled()) {
        rrvm_kvm_pos(cpu, pos);
        return;
    }
    rrvm_target_pos(cpu, ra, pos);
}

rr_pos rrvm_to_rr_pos(const RRVMPos *p)
{
    rr_pos r = { .branches = p->branches, .rip = p->rip, .rcx = p->rcx,
                 .detpoints = p->dp, .crew_seq = p->seq };
    return r;
}

RRVMPos rrvm_from_rr_pos(const Rr__Position *p)
{
    rr_pos r = rr_pos_from(p);      /* NULL: all zero */
    RRVMPos pos = { .branches = r.branches, .rip = r.rip, .rcx = r.rcx,
                    .dp = r.detpoints, .seq = r.crew_seq };

    return pos;
}

bool rrvm_pos_equal(const RRVMPos *a, const RRVMPos *b)
{
    return a->branches == b->branches && a->rip == b->rip &&
           a->rcx == b->rcx && a->dp == b->dp && a->seq == b->seq;
}

/* ---- the record-side exec lock ---------------------------------------- */

/*
 * While a vCPU runs guest code it holds its exec lock.  It lets go only at
 * points where its position is exact: between TBs (its safepoint), while
 * it waits for the BQL inside an I/O access (position unwound from the
 * host return address), while it waits to stop others, and outside
 * cpu_exec.  Whoever must order an access against some vCPUs (a device
 * writing guest RAM, a page changing owner, a checkpoint) takes the world
 * lock and then those vCPUs' exec locks: they stay put at known positions
 * until it lets go.
 */
void rrvm_vcpu_exec_begin(CPUState *cpu)
{
    if (rrvm_recording()) {
        RRVMCpu *rc = rc_of(cpu);

        if (rc->held_outside) {
            rc->held_outside = false;
            return;
        }
        qemu_mutex_lock(&rc->exec_lock);
        rc->exec_held = true;
        if (rrvm_byte_active && !cpu->halted) {
            rrvm_byte_set_blocked(cpu, rrvm_target_cpl(cpu) == 3);
        }
    }
}

/*
 * Outside cpu_exec a vCPU is held where it stopped.  With byte CREW a
 * kernel-mode vCPU may have stopped between det points (an exit request):
 * it keeps its exec lock until it gets to one.
 */
void rrvm_vcpu_exec_end(CPUState *cpu)
{
    if (rrvm_recording()) {
        RRVMCpu *rc = rc_of(cpu);
        bool user = rrvm_byte_active && rrvm_target_cpl(cpu) == 3;

        if (!rrvm_byte_exact(cpu, user)) {
            rc->held_outside = true;
            return;
        }
        rrvm_pos_of(cpu, 0, &rc->park_pos);
        rc->park_safe = true;
        rc->exec_held = false;
        if (rrvm_byte_active) {
            rrvm_byte_set_blocked(cpu, true);
        }
        qemu_mutex_unlock(&rc->exec_lock);
    }
}

void rrvm_lock_iothread(CPUState *cpu, uintptr_t ra)
{
    RRVMCpu *rc;

    if (!rrvm_recording() || !cpu || !rc_of(cpu)->exec_held) {
        qemu_mutex_lock_iothread();
        return;
    }
    rc = rc_of(cpu);
    rrvm_pos_of(cpu, ra, &rc->park_pos);
    rc->io_pos = rc->park_pos;
    rc->io_in_insn = ra != 0;
    rc->park_safe = ra == 0;
    /* (replay meets it there: rrvm_replay_pre_exception) */
    rc->park_in_exc = ra == 0 &&
                      !rrvm_byte_exact(cpu, rrvm_target_cpl(cpu) == 3);
    rc->exec_held = false;
    /* no instrumented access in flight in an I/O access (byte CREW) */
    rrvm_byte_set_blocked(cpu, true);
    tlb_code_store_park(cpu, true);     /* nor a store into code */
    qemu_mutex_unlock(&rc->exec_lock);
    qemu_mutex_lock_iothread();
    qemu_mutex_lock(&rc->exec_lock);
    tlb_code_store_park(cpu, false);
    rc->exec_held = true;
    rc->park_in_exc = false;
    rrvm_byte_set_blocked(cpu, rrvm_target_cpl(cpu) == 3 || cpu->halted);
}

/*
 * Page CREW, record: a TLB fill whose page walk found no mapping raises a
 * fault; @undo0 and @undo1 are what the target needs to take it back.
 * Not for a branch, whose count already includes it: replay meets those
 * in the fault's entry, where the count tells it from the instruction's
 * start (rrvm_replay_pre_exception).
 */
void rrvm_note_fill_fault(CPUState *cpu, uint64_t undo0, uint64_t undo1)
{
    RRVMCpu *rc = rc_of(cpu);

    rc->fault_noted = true;
    rc->fault_undo[0] = undo0;
    rc->fault_undo[1] = undo1;
}

/*
 * The BQL to deliver an exception.  A vCPU waiting for it is held at the
 * position of the faulting instruction's start, the same as before it ran.
 * If others held it there, one may have changed what its walk read: the
 * page-table entry another vCPU was filling in as this one faulted on the
 * same fresh page.  Replay, which stops vCPUs between instructions, runs
 * the whole instruction after them and finds the entry there.  So a fault
 * noted by rrvm_note_fill_fault is dropped and the instruction run again,
 * as rrvm_crew_fill_end does for a hold in the middle of an access.
 */
bool rrvm_lock_iothread_exception(CPUState *cpu)
{
    RRVMCpu *rc;
    RRVMPos me;
    uint64_t held;
    bool noted;

    if (!rrvm_recording() || !cpu || !rc_of(cpu)->exec_held) {
        qemu_mutex_lock_iothread();
        return false;
    }
    rc = rc_of(cpu);
    noted = rc->fault_noted;
    if (noted) {
        rrvm_pos_of(cpu, 0, &me);
        noted = !rrvm_insn_did_io(rc, &me);
    }
    rc->fault_noted = false;
    held = rc->held;
    rrvm_lock_iothread(cpu, 0);
    if (!noted || rc->held == held) {
        return false;
    }
    qemu_mutex_unlock_iothread();
    rrvm_target_undo_fault(cpu, rc->fault_undo);
    rrvm_fault_restarts++;
    return true;
}

/*
 * A vCPU inside an I/O access that waits for another thread with the BQL
 * released (run_on_cpu: the vapic ROM's port write asks every vCPU to
 * report TPR accesses) lets go of its exec lock too, held at its I/O
 * position.  Else a thread that takes the BQL and then holds vCPUs (the
 * main loop writing a virtqueue into guest RAM) waits for it forever, it
 * waits for the BQL, and the vCPU that should run the work waits for the
 * BQL as well: a recording that hangs in the BIOS.  TCG only: under KVM
 * an I/O exit has no io_pos.
 */
bool rrvm_io_wait_begin(void)
{
    RRVMCpu *rc;

    if (!rrvm_recording() || !current_cpu || kvm_enabled() ||
        !qemu_mutex_iothread_locked()) {
        return false;
    }
    rc = rc_of(current_cpu);
    if (!rc->exec_held) {
        return false;
    }
    rc->park_pos = rc->io_pos;
    rc->park_safe = false;
    rc->exec_held = false;
    rrvm_byte_set_blocked(current_cpu, true);
    tlb_code_store_park(current_cpu, true);
    qemu_mutex_unlock(&rc->exec_lock);
    return true;
}

void rrvm_io_wait_end(bool parked)
{
    RRVMCpu *rc;

    if (!parked) {
        return;
    }
    rc = rc_of(current_cpu);
    qemu_mutex_lock(&rc->exec_lock);
    tlb_code_store_park(current_cpu, false);
    rc->exec_held = true;
    rrvm_byte_set_blocked(current_cpu, rrvm_target_cpl(current_cpu) == 3 ||
                                       current_cpu->halted);
}

static void rrvm_safepoint(CPUState *cpu)
{
    RRVMCpu *rc = rc_of(cpu);
    bool user = rrvm_byte_active && rrvm_target_cpl(cpu) == 3;

    if (!rrvm_byte_exact(cpu, user)) {
        /* byte CREW, kernel mode: hold still at the next det point */
        rrvm_byte_arm(cpu, 1);
        return;
    }
    rrvm_pos_of(cpu, 0, &rc->park_pos);
    rc->park_safe = true;
    rc->exec_held = false;
    rrvm_byte_set_blocked(cpu, true);
    tlb_code_store_park(cpu, true);
    qemu_mutex_unlock(&rc->exec_lock);
    qemu_mutex_lock(&rrvm.lock);
    while (qatomic_read(&rc->stop_req)) {
        qemu_cond_wait(&rrvm.cond, &rrvm.lock);
    }
    qemu_mutex_unlock(&rrvm.lock);
    qemu_mutex_lock(&rc->exec_lock);
    tlb_code_store_park(cpu, false);
    rc->exec_held = true;
    rrvm_byte_set_blocked(cpu, user);
}

static __thread int world_depth;
static __thread bool self_released;

/*
 * Become the one thread that may hold other vCPUs.  A vCPU caller parks
 * itself first (at @self_pos, or its I/O position), so that two vCPUs
 * wanting each other never deadlock.  Nests.  True when the caller let go
 * of its own exec lock to wait, so that others could hold it at @self_pos
 * meanwhile.
 */
bool rrvm_world_enter(const RRVMPos *self_pos)
{
    RRVMCpu *me = current_cpu ? rc_of(current_cpu) : NULL;
    bool released = false;

    if (world_depth++) {
        return false;
    }
    if (me && me->exec_held) {
        me->park_pos = self_pos ? *self_pos : me->io_pos;
        me->park_safe = false;
        me->exec_held = false;
        /* byte CREW: the others' slow paths must not wait for us */
        rrvm_byte_set_blocked(current_cpu, true);
        qemu_mutex_unlock(&me->exec_lock);
        self_released = true;
        released = true;
    }
    rrvm_note_wait("for the world lock", -1);
    qemu_mutex_lock(&rrvm.world_lock);
    rrvm_note_wait(NULL, -1);
    qatomic_set(&rrvm.world_owner, me ? current_cpu->cpu_index : -2);
    return released;
}

void rrvm_world_exit(void)
{
    RRVMCpu *me = current_cpu ? rc_of(current_cpu) : NULL;

    if (--world_depth) {
        return;
    }
    qatomic_set(&rrvm.world_owner, -1);
    qemu_mutex_unlock(&rrvm.world_lock);
    if (self_released) {
        self_released = false;
        rrvm_note_wait("for its exec lock, held by a stopper", -1);
        qemu_mutex_lock(&me->exec_lock);
        rrvm_note_wait(NULL, -1);
        me->exec_held = true;
        rrvm_byte_set_blocked(current_cpu,
                              rrvm_target_cpl(current_cpu) == 3 ||
                              current_cpu->halted);
    }
}

/* Hold the vCPUs in @mask (the caller excepted); needs the world lock. */
void rrvm_stop_mask(uint64_t mask)
{
    CPUState *cpu;

    CPU_FOREACH(cpu) {
        RRVMCpu *rc = rc_of(cpu);

        if (cpu == current_cpu || !(mask & (1ULL << cpu->cpu_index))) {
            continue;
        }
        qatomic_set(&rc->stop_req, 1);
        smp_mb();
        rrvm_target_kick(cpu);     /* leaves its TB chain for the safepoint */
        rrvm_note_wait("to hold (for a deterministic point of) vcpu",
                       cpu->cpu_index);
        qemu_mutex_lock(&rc->exec_lock);
        rrvm_note_wait(NULL, -1);
        rc->held++;
    }
}

void rrvm_resume_mask(uint64_t mask)
{
    CPUState *cpu;

    qemu_mutex_lock(&rrvm.lock);
    CPU_FOREACH(cpu) {
        RRVMCpu *rc = rc_of(cpu);

        if (cpu == current_cpu || !(mask & (1ULL << cpu->cpu_index))) {
            continue;
        }
        qatomic_set(&rc->stop_req, 0);
        qemu_mutex_unlock(&rc->exec_lock);
    }
    qemu_cond_broadcast(&rrvm.cond);
    qemu_mutex_unlock(&rrvm.lock);
}

static __thread int stop_depth;

/* Stop every vCPU but the caller at an exact position (nests). */
void rrvm_stop_world(void)
{
    if (stop_depth++) {
        return;
    }
    rrvm_world_enter(NULL);
    rrvm_stop_mask(~0ULL);
}

void rrvm_resume_world(void)
{
    if (--stop_depth) {
        return;
    }
    rrvm_resume_mask(~0ULL);
    rrvm_world_exit();
}

/* Where is @cpu while it is held (or it is the caller)? */
void rrvm_stopped_pos(CPUState *cpu, RRVMPos *pos)
{
    RRVMCpu *rc = rc_of(cpu);

    *pos = rc->park_pos;
    if (rc->park_in_exc) {
        qatomic_inc(&rrvm.exc_positions);
    }
}

RRVMLoop rrvm_cpu_loop_hook(CPUState *cpu)
{
    if (rrvm_recording()) {
        RRVMCpu *rc = rc_of(cpu);

        rc->fill_ra = 0;            /* no fill is in progress here */
        if (qatomic_read(&rc->stop_req)) {
            rrvm_safepoint(cpu);
        }
        if (rrvm_byte_active) {
            /* user branches are few in kernel work: checkpoint by time */
            if (cpu->cpu_index == 0 && rrvm_coarse_ns() >= rrvm.next_ckpt_ns &&
                rrvm_byte_exact(cpu, rrvm_target_cpl(cpu) == 3)) {
                rrvm.next_ckpt_ns = rrvm_coarse_ns() +
                    (rrvm_record_checkpoint(cpu) ? byte_ckpt_ns : 1000000);
            }
        } else if (cpu->cpu_index == 0 && cpu->rr_branches >= rc->next_ckpt) {
            /* retried soon when another vCPU could not stop cleanly */
            rc->next_ckpt = cpu->rr_branches +
                (rrvm_record_checkpoint(cpu) ? ckpt_interval : 100000);
        }
        return RRVM_LOOP_RUN;
    }
    return rrvm_replay_loop(cpu);
}
