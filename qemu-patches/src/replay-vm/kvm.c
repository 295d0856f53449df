/*
 * replay-vm: the KVM backend, degraded timing mode (no PMU).
 *
 * Without a branch counter there is no way to name a point inside a run of
 * guest code, so a KVM vCPU's position is the number of deterministic exits
 * it has taken -- port and MMIO accesses, HLT, and with the patched KVM
 * RDTSC, RDTSCP and PAUSE; no interrupt windows -- plus rip and rcx at the
 * last one.  Everything asynchronous
 * (interrupt injection, device writes into guest RAM, checkpoints) happens
 * only at such an exit, before the vCPU re-enters the guest.  Other exits
 * (signals, kicks) are invisible to the guest and are not positions: the
 * vCPU goes straight back in.  The price: an interrupt waits for the next
 * deterministic exit, so code that runs long without one (a user-mode loop)
 * sees its timer late.  Kernel-intensive guests exit all the time.
 *
 * While a recording vCPU is inside the guest it holds its exec lock (see
 * rrvm.c); it lets go at each deterministic exit, where its position is
 * exact, so a device writing guest RAM or a checkpoint holds it there.
 *
 * Some kernel loops take no such exit and wait for an interrupt's effect,
 * which would never come (forced stops, below).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "hw/core/cpu.h"
#include "sysemu/rrvm.h"
#include "sysemu/cpu-timers.h"
#include "rrvm-internal.h"

/* whole-VM checkpoints under KVM: every this many deterministic exits */
#define KVM_CKPT_EXITS 100000

static RRVMCpu *rc_of(CPUState *cpu)
{
    return &rrvm.cpus[cpu->cpu_index];
}

/*
 * With the patched KVM (replay-vm's kvm-patches/, KVM_CAP_RRVM_EXITS) every
 * RDTSC, RDTSCP and PAUSE exits to QEMU too.  The TSC value is logged on
 * record and comes from the log on replay (the TimeRead event TCG logs);
 * each such exit is a deterministic exit like a port access, so spin and
 * delay loops, which all execute PAUSE or RDTSC, get their interrupts.
 */
static bool kvm_exits;
static uint64_t n_tsc_exits, n_pause_exits;
static uint64_t n_forced, n_refused[RRVM_STOP_WHY], n_seek_hits, n_found;
/* -rr record,timescale=N (qemu_virtual_clock_slowdown): the TSC's origin */
static uint64_t tsc_base;

void rrvm_kvm_exits_on(bool on)
{
    kvm_exits = on;
    if (!on) {
        warn_report("replay-vm: this KVM lacks KVM_CAP_RRVM_EXITS (replay-vm's "
                    "patched kvm.ko/kvm-amd.ko, kvm-patches/): the guest's "
                    "rdtsc runs natively and unlogged and its spin loops never "
                    "exit, so a Linux guest will not replay (its recording may "
                    "stall); only firmware-level runs can");
    }
}

uint64_t rrvm_kvm_tsc_exit(CPUState *cpu, bool rdtscp, uint64_t tsc,
                           uint32_t aux)
{
    qatomic_inc(&n_tsc_exits);
    if (qemu_virtual_clock_slowdown > 1 && rrvm_recording()) {
        /* KVM's TSCs agree across vCPUs: one base keeps them agreeing */
        if (!qatomic_read(&tsc_base)) {
            qatomic_cmpxchg(&tsc_base, 0, tsc);
        }
        tsc = tsc_base + (int64_t)(tsc - tsc_base) /
                         qemu_virtual_clock_slowdown;
    }
    return rrvm_time_read(cpu, 0, rdtscp ? RRVM_RDTSCP : RRVM_RDTSC, tsc,
                          aux);
}

void rrvm_kvm_pause_exit(CPUState *cpu)
{
    /* nothing to log: the exit itself is the position */
    qatomic_inc(&n_pause_exits);
}

/* why kicks were not taken as forced stops (RRVM_STOP_*) */
static const char *const refusal[RRVM_STOP_WHY] = {
    [RRVM_STOP_USER] = "in user mode",
    [RRVM_STOP_NO_IF] = "with interrupts off",
    [RRVM_STOP_EVENT] = "delivering an event or in an interrupt shadow",
    [RRVM_STOP_REP] = "inside a rep string instruction",
    [RRVM_STOP_NO_CODE] = "where the code could not be read from RAM",
};

/* at the end of a recording: what the positions were made of */
void rrvm_kvm_finish(void)
{
    uint64_t det = 0, refused = 0;
    CPUState *cpu;

    CPU_FOREACH(cpu) {
        det += rc_of(cpu)->det_exits;
    }
    for (int i = RRVM_STOP_OK + 1; i < RRVM_STOP_WHY; i++) {
        refused += qatomic_read(&n_refused[i]);
    }
    info_report("replay-vm: KVM: %" PRIu64 " deterministic exits, of which "
                "%" PRIu64 " RDTSC/RDTSCP and %" PRIu64 " PAUSE (%s)",
                det, qatomic_read(&n_tsc_exits), qatomic_read(&n_pause_exits),
                kvm_exits ? "KVM_CAP_RRVM_EXITS on"
                          : "no KVM_CAP_RRVM_EXITS");
    if (n_forced || refused) {
        g_autoptr(GString) why = g_string_new(NULL);

        for (int i = RRVM_STOP_OK + 1; i < RRVM_STOP_WHY; i++) {
            g_string_append_printf(why, "%s%" PRIu64 " %s",
                                   i > RRVM_STOP_OK + 1 ? ", " : "",
                                   qatomic_read(&n_refused[i]),
                                   refusal[i]);
        }
        info_report("replay-vm: KVM: %" PRIu64 " forced stops (and kicks not "
                    "taken: %s)", qatomic_read(&n_forced), why->str);
    }
    rrvm_kvm_crew_finish();
}

/*
 * A recording's guest time can be slowed down (timescale=N): both the TSC
 * the RDTSC exits deliver and QEMU's VM clock (the APIC timer, PIT, HPET,
 * ACPI PM timer) then advance N times slower than the host's, by the same
 * factor, so that the guest's clocks agree with each other.  For hosts
 * where recording makes the guest so slow that timer interrupts take most
 * of its time: a Linux tick on two vCPUs costs several page transfers
 * (jiffies, the timekeeper, the other CPU's hrtimer and runqueue pages),
 * and nested under TCG each costs about a millisecond.  The replay needs
 * no such option: its time is the log's.
 */
static void set_timescale(uint64_t n)
{
    if (n <= 1) {
        return;
    }
    if (!kvm_exits) {
        error_report("replay-vm: -rr timescale needs the patched KVM's RDTSC "
                     "exits (KVM_CAP_RRVM_EXITS): the guest's TSC would run "
                     "at the host's speed");
        exit(1);
    }
    cpu_clock_set_slowdown(n);
    info_report("replay-vm: the guest's clocks run %" PRIu64 " times slower "
                "than the host's while recording", n);
}

void rrvm_kvm_init(uint64_t ckpt_exits, uint64_t n)
{
    CPUState *cpu;

    if (rrvm.n_cpus > 1 && !rrvm_kvm_crew) {
        /*
         * a KVM without KVM_CAP_RRVM_EXITS (rrvm_kvm_arch_init refuses one
         * that has it but lacks KVM_CAP_RRVM_CREW)
         */
        error_report("replay-vm: under KVM several vCPUs need page CREW: "
                     "per-vCPU page rights from replay-vm's patched KVM "
                     "(KVM_CAP_RRVM_CREW, kvm-patches/)");
        exit(1);
    }
    if (rrvm_kvm_crew) {
        warn_report("replay-vm: %d vCPUs under KVM: page CREW through "
                    "per-vCPU page rights is experimental (tested only "
                    "nested, README \"The KVM backend\")", rrvm.n_cpus);
    }
    if (rrvm_kvm_crew && !rrvm_kvm_arch_ids_are_indexes()) {
        /* KVM's owner bits are vcpu_ids, the log's are CPU indexes */
        error_report("replay-vm: KVM page CREW needs each vCPU's KVM id "
                     "(APIC id) to equal its index: use a plain -smp N");
        exit(1);
    }
    CPU_FOREACH(cpu) {
        rc_of(cpu)->next_ckpt = ckpt_exits ? ckpt_exits : KVM_CKPT_EXITS;
    }
    if (rrvm_recording()) {
        set_timescale(n);
    }
}

void rrvm_kvm_pos(CPUState *cpu, RRVMPos *pos)
{
    *pos = rc_of(cpu)->kvm_pos;
}

/* Out of the guest at a position: a stopper may hold the vCPU here. */
static void at_position(RRVMCpu *rc)
{
    qatomic_set(&rc->in_guest, false);
    if (rrvm_recording() && rc->exec_held) {
        rc->park_pos = rc->kvm_pos;
        rc->park_safe = true;
        rc->exec_held = false;
        qemu_mutex_unlock(&rc->exec_lock);
    }
}

/* Back from KVM_RUN: @det when the exit is a position. */
void rrvm_kvm_exited(CPUState *cpu, bool det)
{
    RRVMCpu *rc = rc_of(cpu);

    if (!det) {
        return;
    }
    rc->kvm_pos.branches = qatomic_read(&rc->det_exits) + 1;
    qatomic_set(&rc->det_exits, rc->kvm_pos.branches);
    rrvm_kvm_arch_regs(cpu, &rc->kvm_pos.rip, &rc->kvm_pos.rcx);
    rc->kvm_pos.dp = 0;
    at_position(rc);
}

/*
 * Forced stops.  A vCPU that runs kernel code without a deterministic exit
 * keeps its pending interrupt, and every vCPU waiting to hold it, waiting;
 * and some kernel loops wait for an interrupt's effect while executing
 * nothing that exits: zap_pte_range gives up its lock and retries until
 * the reschedule IPI it needs is taken, for ever (README, "The KVM
 * backend").
 *
 * So when a recording vCPU has spent RRVM_FORCE_MS (default 1000; 0: never)
 * inside the guest in kernel mode with an interrupt pending or a stop
 * requested and no deterministic exit, it is kicked out, and the place
 * it left the guest becomes a position: the last exit's count, rip and
 * rcx, and in detpoints (unused under KVM otherwise) a hash of its
 * registers, never 0.  A kick that lands where a replay could not find
 * it again (user mode, inside a rep string instruction, an interrupt
 * shadow or an event being delivered) is not taken; the next one may be.
 *
 * The replay finds it with a hardware breakpoint at rip from the same
 * exit count on, and stops at the first hit whose registers hash the
 * same.  That is exact when the registers differ each time rip is
 * reached; a loop whose iterations repeat the same registers stops at
 * the first such iteration, which stands for the one the recording
 * stopped in as long as their memory was the same too, and the
 * checkpoints' RAM hash says if it was not.
 */
static int64_t force_ms = -1;

/* From the flusher, every 200 ms while recording. */
void rrvm_kvm_force_check(void)
{
    int64_t now = g_get_monotonic_time() / 1000;
    CPUState *cpu;

    if (force_ms < 0) {
        const char *env = g_getenv("RRVM_FORCE_MS");

        force_ms = env ? atoll(env) : 1000;
    }
    if (!force_ms) {
        return;
    }
    CPU_FOREACH(cpu) {
        RRVMCpu *rc = rc_of(cpu);
        uint64_t d = qatomic_read(&rc->det_exits);
        bool waits = qatomic_read(&rc->stop_req) ||
                     rrvm_kvm_arch_irq_pending(cpu);

        if (d != rc->force_seen || !qatomic_read(&rc->in_guest) || !waits) {
            rc->force_seen = d;
            rc->force_since = now;
        } else if (now - rc->force_since >= force_ms) {
            qatomic_set(&rc->force_for, d + 1);
            /*
             * Not qemu_cpu_kick: it signals a thread once until the thread
             * next waits in the accelerator's loop, and a vCPU in this
             * state goes straight back into the guest without doing so.
             */
            pthread_kill(cpu->thread->thread, SIG_IPI);
            /*
             * and again at each check while it has to: a kick that lands
             * where a replay could not find the vCPU is not taken
             */
        }
    }
}

RRVMKvmRun rrvm_kvm_after_run(CPUState *cpu, int run_ret)
{
    RRVMCpu *rc = rc_of(cpu);
    int kind = rrvm_kvm_arch_run_kind(cpu, run_ret);
    bool kicked = kind == RRVM_KVM_RUN_KICKED;

    if (rrvm_recording() && kicked) {
        uint64_t want = qatomic_xchg(&rc->force_for, 0);
        RRVMPos pos;
        int why;

        /*
         * Only for the exit count it was asked at: a vCPU that has exited
         * since may still have the instruction of that exit to finish.
         */
        if (!want || want != qatomic_read(&rc->det_exits) + 1) {
            return RRVM_KVM_AGAIN;
        }
        why = rrvm_kvm_arch_stop_pos(cpu, !qatomic_read(&rc->stop_req), &pos);
        if (why != RRVM_STOP_OK) {
            qatomic_inc(&n_refused[why]);
            return RRVM_KVM_AGAIN;
        }
        pos.branches = rc->det_exits;
        rc->kvm_pos = pos;
        qatomic_inc(&n_forced);
        at_position(rc);
        return RRVM_KVM_STOP;
    }
    if (kicked) {
        return RRVM_KVM_AGAIN;
    }
    if (kind == RRVM_KVM_RUN_DEBUG && rc->seeking) {
        qatomic_inc(&n_seek_hits);
        if (!rrvm_kvm_arch_at_stop(cpu, &rc->seek)) {
            return RRVM_KVM_AGAIN;
        }
        rrvm_kvm_arch_breakpoint(cpu, 0);
        qatomic_inc(&n_found);
        rc->seeking = false;
        rc->kvm_pos = rc->seek;
        return RRVM_KVM_STOP;
    }
    return RRVM_KVM_EXIT;
}

uint64_t rrvm_kvm_seek_hits(void)
{
    return qatomic_read(&n_seek_hits);
}

/* At the end of a replay: what finding the forced stops cost */
void rrvm_kvm_report_seeks(void)
{
    if (n_found) {
        fprintf(stderr, "replay-vm: KVM: %" PRIu64 " forced stops found with "
                "%" PRIu64 " breakpoint hits\n", qatomic_read(&n_found),
                qatomic_read(&n_seek_hits));
    }
}

/* Replay, on the vCPU's thread: run on to the forced stop @want. */
void rrvm_kvm_seek(CPUState *cpu, const RRVMPos *want)
{
    RRVMCpu *rc = rc_of(cpu);

    if (!rc->seeking || rc->seek.rip != want->rip) {
        rrvm_kvm_arch_breakpoint(cpu, want->rip);
    }
    rc->seek = *want;
    rc->seeking = true;
}

/*
 * Position 0: the registers at the first entry.  Events before it (an AP's
 * INIT and SIPI, device writes while it waits for them) are at the zero
 * position, on record and replay alike.
 */
static void first_position(RRVMCpu *rc, CPUState *cpu)
{
    if (!rc->kvm_started) {
        rc->kvm_started = true;
        rrvm_kvm_arch_regs(cpu, &rc->kvm_pos.rip, &rc->kvm_pos.rcx);
        rc->park_pos = rc->kvm_pos;
    }
}

/* About to enter the guest from a deterministic point. */
void rrvm_kvm_enter(CPUState *cpu)
{
    RRVMCpu *rc = rc_of(cpu);

    first_position(rc, cpu);
    if (!rrvm_recording()) {
        return;
    }
    if (rc->exec_held) {
        qatomic_set(&rc->in_guest, true);
        return;
    }
    qemu_mutex_lock(&rrvm.lock);
    rrvm_note_wait("to re-enter the guest until a stopper lets it go", -1);
    while (qatomic_read(&rc->stop_req)) {
        qemu_cond_wait(&rrvm.cond, &rrvm.lock);
    }
    qemu_mutex_unlock(&rrvm.lock);
    rrvm_note_wait("for its exec lock to re-enter the guest", -1);
    qemu_mutex_lock(&rc->exec_lock);
    rrvm_note_wait(NULL, -1);
    rc->exec_held = true;
    qatomic_set(&rc->in_guest, true);
}

/*
 * At a deterministic point, before re-entry, without the BQL: record takes
 * its checkpoints here, replay meets the log's events at this position
 * (interrupts are injected through rrvm_target_deliver).
 */
RRVMLoop rrvm_kvm_point(CPUState *cpu)
{
    RRVMCpu *rc = rc_of(cpu);
    RRVMLoop r;

    if (rrvm_recording()) {
        if (cpu->cpu_index == 0 && rc->det_exits >= rc->next_ckpt) {
            uint64_t every = rc->next_ckpt - rc->last_ckpt;

            rc->last_ckpt = rc->det_exits;
            rc->next_ckpt = rc->det_exits +
                            (rrvm_record_checkpoint(cpu) ? every : 100);
        }
        return RRVM_LOOP_RUN;
    }
    /* several events can sit at one exit (an interrupt, then a DMA write) */
    while ((r = rrvm_replay_loop(cpu)) == RRVM_LOOP_INTERRUPT) {
        if (!rrvm_replay_more_here(cpu)) {
            break;
        }
    }
    if (r != RRVM_LOOP_WAIT) {
        rrvm_kvm_crew_settle(cpu);  /* after the transfers logged here */
    }
    if (cpu->halted) {
        return RRVM_LOOP_WAIT;      /* an AP after its INIT: wait for SIPI */
    }
    return r;
}
