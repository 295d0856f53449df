/*
 * replay-vm: the replay side.
 *
 * The log is read lazily under rrvm.lock by whichever vCPU needs its next
 * event; events are queued per vCPU: synchronous ones (read values) in
 * order, asynchronous ones (interrupts, DMA, checkpoints) by position.  The
 * TB prologue exits once the branch counter reaches the next asynchronous
 * event's count; from there the vCPU steps one instruction at a time until
 * rip and rcx match too.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "hw/core/cpu.h"
#include "hw/boards.h"
#include "sysemu/runstate.h"
#include "sysemu/kvm.h"
#include "sysemu/rrvm.h"
#include "rrvm-internal.h"

#define EXIT_BAD_LOG 2
#define PROGRESS_US 500000

/* what a vCPU waits on while it holds still at the until point */
static RRVMItem until_mark = { .refs = INT_MAX };

static RRVMCpu *rc_of(CPUState *cpu)
{
    return &rrvm.cpus[cpu->cpu_index];
}

static void fmt_pos(char *buf, size_t n, const RRVMPos *p)
{
    if (rrvm_byte_active) {
        snprintf(buf, n, "(branches=%" PRIu64 " rip=0x%" PRIx64 " rcx=0x%"
                 PRIx64 " detpoints=%" PRIu64 " crew_seq=%" PRIu64 ")",
                 p->branches, p->rip, p->rcx, p->dp, p->seq);
        return;
    }
    if (p->dp) {
        /* KVM: a forced stop after exit #branches (kvm.c) */
        snprintf(buf, n, "(branches=%" PRIu64 " rip=0x%" PRIx64 " rcx=0x%"
                 PRIx64 " forced stop, registers hash 0x%" PRIx64 ")",
                 p->branches, p->rip, p->rcx, p->dp);
        return;
    }
    snprintf(buf, n, "(branches=%" PRIu64 " rip=0x%" PRIx64 " rcx=0x%" PRIx64
             ")", p->branches, p->rip, p->rcx);
}

G_NORETURN void rrvm_diverged(CPUState *cpu, uint64_t index, const char *what,
                              const RRVMPos *want, const RRVMPos *found)
{
    char w[160], f[160];

    fmt_pos(w, sizeof(w), want);
    fmt_pos(f, sizeof(f), found);
    fprintf(stderr, "replay-vm: DIVERGENCE at event #%" PRIu64 " (vcpu %d): "
            "%s\n  expected at %s\n  found at    %s\n",
            index, cpu ? cpu->cpu_index : -1, what, w, f);
    fflush(stderr);
    rrvm_ram_dump_diverged();
    _exit(RRVM_EXIT_DIVERGED);
}

G_NORETURN void rrvm_replay_complete(const char *how)
{
    static int once;

    /* a vCPU and the stall watchdog can both find the end */
    if (qatomic_xchg(&once, 1)) {
        for (;;) {
            g_usleep(G_USEC_PER_SEC);
        }
    }
    rrvm_byte_report_waits();
    if (kvm_enabled()) {
        rrvm_kvm_report_seeks();
    }
    fprintf(stderr, "replay-vm: REPLAY OK: %" PRIu64 " events replayed, "
            "%" PRIu64 " checkpoints matched; %s\n",
            rrvm.next_index, rrvm.n_verified, how);
    fflush(stderr);
    _exit(0);
}

G_NORETURN void rrvm_bad_log(const char *what, uint64_t index)
{
    error_report("replay-vm: bad log at event #%" PRIu64 ": %s", index, what);
    _exit(EXIT_BAD_LOG);
}

void rrvm_replay_start(MachineState *ms, const char *path)
{
    Rr__Header mine = RR__HEADER__INIT;
    const Rr__Header *h;
    rr_error err;

    rrvm.reader = rr_reader_open(path, &err);
    if (!rrvm.reader) {
        error_report("replay-vm: cannot replay %s: %s (byte %" PRIu64 ")",
                     path, err.msg, err.offset);
        exit(EXIT_BAD_LOG);
    }
    h = rr_reader_header(rrvm.reader);
    if (h->n_vcpus != ms->smp.cpus || h->ram_mb != ms->ram_size >> 20) {
        error_report("replay-vm: %s was recorded with %u vCPUs and %" PRIu64
                     " MiB; this VM has %u and %" PRIu64 " MiB", path,
                     h->n_vcpus, h->ram_mb, ms->smp.cpus, ms->ram_size >> 20);
        exit(EXIT_BAD_LOG);
    }
    rrvm_header_images(&mine, ms);
    for (size_t i = 0; i < h->n_images; i++) {
        const Rr__Header__Image *want = h->images[i];
        bool found = false;

        for (size_t j = 0; j < mine.n_images; j++) {
            const Rr__Header__Image *have = mine.images[j];

            if (strcmp(want->role, have->role)) {
                continue;
            }
            found = true;
            if (want->sha256.len != have->sha256.len ||
                memcmp(want->sha256.data, have->sha256.data,
                       have->sha256.len)) {
                error_report("replay-vm: image mismatch: %s %s differs from "
                             "the recorded one (%s, %" PRIu64 " bytes); "
                             "replay needs the exact image", want->role,
                             have->path, want->path, want->size);
                exit(EXIT_BAD_LOG);
            }
        }
        if (!found) {
            error_report("replay-vm: the recording used %s %s, this VM has "
                         "none", want->role, want->path);
            exit(EXIT_BAD_LOG);
        }
    }
    rrvm_header_free(&mine);
    /* the recording's CREW mode, whatever the replay's -rr option says */
    rrvm_byte_crew = h->crew_mode == RR__HEADER__CREW_MODE__BYTE;
    rrvm_user_page_crew = rrvm_byte_crew && h->user_page_crew;
    info_report("replay-vm: replaying %s (%u vCPU(s)%s)", path, h->n_vcpus,
                rrvm_byte_crew ? ", byte CREW" : "");
}

static const Rr__Position *item_pos(const RRVMItem *it, int vcpu)
{
    const Rr__Event *ev = it->ev;

    switch (ev->body_case) {
    case RR__EVENT__BODY_DMA_WRITE:
        for (size_t i = 0; i < ev->dma_write->n_others; i++) {
            if (ev->dma_write->others[i]->vcpu == vcpu) {
                return ev->dma_write->others[i]->pos;
            }
        }
        return NULL;
    case RR__EVENT__BODY_CHECKPOINT:
        for (size_t i = 0; i < ev->checkpoint->n_vcpus; i++) {
            if (ev->checkpoint->vcpus[i]->vcpu == vcpu) {
                return ev->checkpoint->vcpus[i]->pos;
            }
        }
        return NULL;
    case RR__EVENT__BODY_CREW_TRANSFER:
        if (ev->vcpu == vcpu) {
            return ev->pos;
        }
        for (size_t i = 0; i < ev->crew_transfer->n_prev_owners; i++) {
            if (ev->crew_transfer->prev_owners[i]->vcpu == vcpu) {
                return ev->crew_transfer->prev_owners[i]->pos;
            }
        }
        return NULL;
    default:
        return ev->pos;
    }
}


static void item_unref(RRVMItem *it)
{
    if (--it->refs == 0) {
        rr_event_free(it->ev);
        g_free(it);
        rrvm.live_items--;
    }
}

static RRVMCpu *target_cpu(uint32_t vcpu, uint64_t index)
{
    if (vcpu >= rrvm.n_cpus) {
        rrvm_bad_log("vCPU number out of range", index);
    }
    return &rrvm.cpus[vcpu];
}

static void queue_async(uint32_t vcpu, RRVMItem *it);

/* Read one event and queue it where it belongs.  false: no more events. */
static bool fetch_locked(void)
{
    Rr__Event *ev;
    RRVMItem *it;
    rr_error err;
    int r;

    if (rrvm.log_ended) {
        return false;
    }
    r = rr_reader_next(rrvm.reader, &ev, &err);
    if (r < 0) {
        error_report("replay-vm: reading event #%" PRIu64 ": %s (byte %"
                     PRIu64 ")", rrvm.next_index, err.msg, err.offset);
        _exit(EXIT_BAD_LOG);
    }
    if (r == 0) {
        rrvm.log_ended = true;
        return false;
    }
    it = g_new0(RRVMItem, 1);
    it->ev = ev;
    it->index = rrvm.next_index++;
    rrvm.live_items++;
    if (rrvm.progress) {
        int64_t now = g_get_monotonic_time();

        if (now - rrvm.progress_last_us >= PROGRESS_US) {
            rrvm.progress_last_us = now;
            fprintf(stderr, "replay-vm: progress %" PRIu64 "\n", it->index);
        }
    }
    switch (ev->body_case) {
    case RR__EVENT__BODY_IO_READ:
    case RR__EVENT__BODY_TIME_READ:
        it->refs = 1;
        g_queue_push_tail(&target_cpu(ev->vcpu, it->index)->sync_q, it);
        break;
    case RR__EVENT__BODY_INTERRUPT:
        it->refs = 1;
        queue_async(ev->vcpu, it);
        break;
    case RR__EVENT__BODY_DMA_WRITE:
    case RR__EVENT__BODY_CHECKPOINT: {
        size_t n = ev->body_case == RR__EVENT__BODY_DMA_WRITE ?
                   ev->dma_write->n_others : ev->checkpoint->n_vcpus;

        for (size_t i = 0; i < n; i++) {
            uint32_t v = ev->body_case == RR__EVENT__BODY_DMA_WRITE ?
                         ev->dma_write->others[i]->vcpu :
                         ev->checkpoint->vcpus[i]->vcpu;

            queue_async(v, it);
            it->refs++;
            it->pending++;
        }
        if (!n) {
            rrvm_bad_log("barrier event without vCPU positions", it->index);
        }
        break;
    }
    case RR__EVENT__BODY_CREW_TRANSFER:
        if (ev->crew_transfer->granularity ==
            RR__CREW_TRANSFER__GRANULARITY__BYTE) {
            /* the guest module enforces these (crew-byte.c feeds it) */
            target_cpu(ev->vcpu, it->index);
            it->refs = 1;
            rrvm_byte_queue(it);
            break;
        }
        /* the acquirer and every previous owner meet at their positions */
        queue_async(ev->vcpu, it);
        it->refs = it->pending = 1;
        for (size_t i = 0; i < ev->crew_transfer->n_prev_owners; i++) {
            uint32_t v = ev->crew_transfer->prev_owners[i]->vcpu;

            if (v == ev->vcpu) {
                rrvm_bad_log("CREW transfer lists its acquirer as a previous owner",
                        it->index);
            }
            queue_async(v, it);
            it->refs++;
            it->pending++;
        }
        break;
    case RR__EVENT__BODY_END:
        rrvm.log_ended = true;
        rrvm.end_clean = ev->end->clean;
        rrvm.end_reason = g_strdup(ev->end->reason);
        rr_event_free(ev);
        g_free(it);
        rrvm.live_items--;
        return false;
    default:
        rr_event_free(ev);      /* informational (network copies, ...) */
        g_free(it);
        rrvm.live_items--;
        break;
    }
    return true;
}

/* a halted vCPU sleeps until kicked: wake it to look at its new event */
static void queue_async(uint32_t vcpu, RRVMItem *it)
{
    RRVMCpu *rc = target_cpu(vcpu, it->index);

    g_queue_push_tail(&rc->async_q, it);
    if (rc->cpu && rc->cpu != current_cpu) {
        rrvm.kick_mask |= 1ULL << vcpu;
    }
}

/*
 * Release rrvm.lock, then wake the vCPUs that have something new to do.
 * The kick happens under the BQL: a vCPU decides to sleep (it is halted or
 * at a barrier) and sleeps under the BQL, so a kick cannot fall between.
 */
static void replay_unlock(void)
{
    uint64_t mask = rrvm.kick_mask;
    bool bql = qemu_mutex_iothread_locked();
    CPUState *cpu;

    rrvm.kick_mask = 0;
    qemu_mutex_unlock(&rrvm.lock);
    if (!mask) {
        return;
    }
    if (!bql) {
        qemu_mutex_lock_iothread();
    }
    CPU_FOREACH(cpu) {
        if (mask & (1ULL << cpu->cpu_index)) {
            qemu_cpu_kick(cpu);
        }
    }
    if (!bql) {
        qemu_mutex_unlock_iothread();
    }
}

static RRVMItem *queue_head(GQueue *q)
{
    while (g_queue_is_empty(q) && fetch_locked()) {
        /* keep reading */
    }
    return g_queue_peek_head(q);
}

/* byte CREW: this vCPU's next logged transfer (under rrvm.lock) */
RRVMItem *rrvm_byte_next_locked(RRVMCpu *rc)
{
    return queue_head(&rc->byte_q);
}

void rrvm_item_release_locked(RRVMItem *it)
{
    item_unref(it);
}

void rrvm_replay_unlock(void)
{
    replay_unlock();
}

/* The verdict's last words when every vCPU met the recording's end. */
static G_NORETURN void complete_clean_end(void)
{
    g_autofree char *how = NULL;

    if (rrvm.end_reason && g_str_has_prefix(rrvm.end_reason, "stopped")) {
        how = g_strdup_printf("the recording was %s at this point; replay "
                              "reached it", rrvm.end_reason);
    } else {
        how = g_strdup_printf("reached the end of the recording (%s)",
                              rrvm.end_reason && *rrvm.end_reason ?
                              rrvm.end_reason : "no reason logged");
    }
    rrvm_replay_complete(how);
}

static void complete_at_end(void)
{
    int64_t cut = rr_reader_truncated(rrvm.reader);

    if (cut >= 0) {
        g_autofree char *how = g_strdup_printf(
            "the recording was cut at byte %" PRId64 " (no clean end); "
            "replay reached the cut", cut);
        rrvm_replay_complete(how);
    }
    complete_clean_end();
}

/* The next logged read value for @cpu; ends the replay past the log. */
RRVMItem *rrvm_next_sync(CPUState *cpu)
{
    RRVMItem *it;

    qemu_mutex_lock(&rrvm.lock);
    it = queue_head(&rc_of(cpu)->sync_q);
    if (it) {
        g_queue_pop_head(&rc_of(cpu)->sync_q);
    }
    replay_unlock();
    if (!it) {
        complete_at_end();
    }
    return it;
}

void rrvm_item_done(RRVMItem *it)
{
    qemu_mutex_lock(&rrvm.lock);
    item_unref(it);
    replay_unlock();
}

static void verify_checkpoint(CPUState *cpu, RRVMItem *it, bool last)
{
    const Rr__Checkpoint *ck = it->ev->checkpoint;
    RRVMPos pos;

    rrvm_pos_of(cpu, 0, &pos);
    for (size_t i = 0; i < ck->n_vcpus; i++) {
        if (ck->vcpus[i]->vcpu == cpu->cpu_index &&
            ck->vcpus[i]->regs_hash != rrvm_target_regs_hash(cpu, &pos)) {
            rrvm_diverged(cpu, it->index, "checkpoint: vCPU register hash "
                          "differs", &pos, &pos);
        }
    }
    if (last) {
        uint8_t ram[32];

        rrvm_ram_hash(ram);
        if (ck->ram_hash.len != sizeof(ram) ||
            memcmp(ck->ram_hash.data, ram, sizeof(ram))) {
            rrvm_diverged(cpu, it->index, "checkpoint: guest RAM hash "
                          "differs", &pos, &pos);
        }
        rrvm.n_verified++;
    }
}

/*
 * Meet a barrier (DMA write, checkpoint, CREW transfer): the last vCPU to
 * arrive carries it out.  The others do not block inside cpu_exec (they
 * must still run work queued on them, e.g. run_on_cpu from a device): they
 * leave it and sleep as idle until the barrier is done.  true: done.
 */
static bool meet_barrier(CPUState *cpu, RRVMItem *it)
{
    RRVMCpu *rc = rc_of(cpu);
    bool is_ckpt = it->ev->body_case == RR__EVENT__BODY_CHECKPOINT;
    CPUState *other;

    g_queue_remove(&rc->async_q, it);
    if (--it->pending == 0) {
        if (is_ckpt) {
            verify_checkpoint(cpu, it, true);
            if (it->ev->checkpoint->crew_switch ==
                RR__HEADER__CREW_MODE__BYTE) {
                if (!rrvm_byte_crew) {
                    rrvm_bad_log("the recording switched to byte CREW, "
                                 "this replay was not started for it",
                                 it->index);
                }
                rrvm_byte_flip_held();
            }
        } else if (it->ev->body_case == RR__EVENT__BODY_DMA_WRITE) {
            const Rr__DmaWrite *d = it->ev->dma_write;

            if (!rrvm_apply_ram(d->gpa, d->data.data, d->data.len)) {
                rrvm_bad_log("DMA write outside guest RAM", it->index);
            }
        } else if (it->ev->body_case == RR__EVENT__BODY_CREW_TRANSFER) {
            rrvm_crew_replay_transfer(cpu, it);
        }
        it->done = true;
        CPU_FOREACH(other) {
            if (other != cpu) {
                rrvm.kick_mask |= 1ULL << other->cpu_index;
            }
        }
        item_unref(it);
        return true;
    }
    if (is_ckpt) {
        verify_checkpoint(cpu, it, false);
    }
    rc->wait_item = it;         /* keeps our reference */
    return false;
}

/* Still waiting at a barrier? (under rrvm.lock) */
static bool still_waiting(RRVMCpu *rc)
{
    if (!rc->wait_item) {
        return false;
    }
    if (!rc->wait_item->done) {
        return true;
    }
    item_unref(rc->wait_item);
    rc->wait_item = NULL;
    return false;
}

/*
 * until=N: each vCPU holds still at its first asynchronous event numbered N
 * or more (a position that is the same on every replay).  Once all of them
 * hold, the replay ends with its verdict so far, or with pause=on stops the
 * VM for a debugger; continuing from there runs the replay on to its end.
 */
static bool until_hit;

static void until_reached(void)
{
    CPUState *cpu;

    until_hit = true;
    fprintf(stderr, "replay-vm: STOPPED before event #%" PRIu64 " as asked; "
            "%" PRIu64 " checkpoints matched so far\n", rrvm.until,
            rrvm.n_verified);
    CPU_FOREACH(cpu) {
        RRVMPos p;
        char b[96];

        rrvm_pos_of(cpu, 0, &p);
        fmt_pos(b, sizeof(b), &p);
        fprintf(stderr, "replay-vm:   vcpu %d at %s\n", cpu->cpu_index, b);
    }
    if (!rrvm.until_pause) {
        g_autofree char *how = g_strdup_printf(
            "stopped before event #%" PRIu64 " as asked", rrvm.until);
        rrvm_replay_complete(how);
    }
    fflush(stderr);
    qemu_system_vmstop_request_prepare();
    qemu_system_vmstop_request(RUN_STATE_PAUSED);
}

/* At @it's position: hold still here if it is at or past the until point. */
static bool park_for_until(RRVMCpu *rc, RRVMItem *it)
{
    if (it->index < rrvm.until) {
        return false;
    }
    rc->wait_item = &until_mark;
    if (++rrvm.n_parked == rrvm.n_cpus) {
        until_reached();
    }
    return true;
}

/*
 * Byte CREW (crew-byte.c): @cpu asks for its first transfer at or past the
 * until point, at that transfer's access: it holds still there.  Under
 * rrvm.lock.
 */
bool rrvm_replay_until_hold_locked(CPUState *cpu)
{
    RRVMCpu *rc = rc_of(cpu);

    if (rrvm.until == UINT64_MAX || rc->wait_item) {
        return false;
    }
    rc->wait_item = &until_mark;
    if (++rrvm.n_parked == rrvm.n_cpus) {
        until_reached();
    }
    return true;
}

/* The debugger lets the VM go on after the until point. */
static void until_resume(void *opaque, bool running, RunState state)
{
    if (!running || !until_hit) {
        return;
    }
    qemu_mutex_lock(&rrvm.lock);
    until_hit = false;
    rrvm.until = UINT64_MAX;
    until_mark.done = true;
    rrvm.kick_mask = ~0ULL >> (64 - rrvm.n_cpus);
    replay_unlock();
}

/*
 * A cut recording (no End event) whose every event has been replayed.
 * vCPUs usually notice the cut themselves, at their next read of a device
 * or the clock; but one can wait in hlt for an interrupt that was never
 * logged while the other spins for it (an IPI), or run a loop that reads
 * nothing.  Byte CREW is left out: its transfers are done with when handed
 * to the guest module's ring, before the module has met them.
 */
static bool replayed_to_the_cut(void)
{
    bool r;

    qemu_mutex_lock(&rrvm.lock);
    r = rrvm.log_ended && !rrvm.end_reason && rrvm.live_items == 0 &&
        !rrvm_byte_active && rr_reader_truncated(rrvm.reader) >= 0;
    qemu_mutex_unlock(&rrvm.lock);
    return r;
}

/*
 * Byte CREW: vCPUs that hold at the until point and others that wait, in
 * the guest module, for one of those to move (a transfer numbered before
 * the point, whose log index is not its time: rings are drained in
 * batches): after a few seconds with nothing done, the waiters hold where
 * they wait, and the until point is reached.
 */
static void until_settled(int64_t idle)
{
    qemu_mutex_lock(&rrvm.lock);
    if (idle >= 3 && rrvm.until != UINT64_MAX && rrvm.n_parked > 0 &&
        !until_hit && rrvm_byte_active) {
        fprintf(stderr, "replay-vm: %d of %d vCPUs hold at the until point, "
                "the others wait for them in byte CREW\n", rrvm.n_parked,
                rrvm.n_cpus);
        until_reached();
    }
    qemu_mutex_unlock(&rrvm.lock);
}

/*
 * A replay that stops making progress (a guest module waiting for an owner
 * that never gets there: a corrupted or mismatched log) is a divergence,
 * not a hang: no event consumed for RRVM_STALL_SECONDS (default 120) while
 * the VM runs ends it with the vCPUs' positions.  A cut recording replayed
 * to its last event ends there instead, after a second's grace for the
 * delivery of that event.
 */
static void *stall_watchdog(void *opaque)
{
    int64_t limit = rrvm_stall_seconds(), idle = 0, at_cut = 0;
    uint64_t last = 0, last_hits = 0;

    for (;;) {
        uint64_t now, hits;

        g_usleep(G_USEC_PER_SEC);
        if (runstate_is_running() && !until_hit && replayed_to_the_cut()) {
            if (++at_cut > 1) {
                complete_at_end();
            }
        } else {
            at_cut = 0;
        }
        /*
         * Events done with, not events read: reading runs ahead of the
         * vCPUs (byte CREW's ring refill looks for a vCPU's next transfers
         * past every other event), to the end of the log where transfers
         * are rare, and a replay still going then is not stalled.
         */
        qemu_mutex_lock(&rrvm.lock);
        now = rrvm.next_index - rrvm.live_items;
        qemu_mutex_unlock(&rrvm.lock);
        /* KVM: a vCPU passing its breakpoint on the way to a forced stop */
        hits = kvm_enabled() ? rrvm_kvm_seek_hits() : 0;
        if (now != last || hits != last_hits || !runstate_is_running() ||
            until_hit) {
            last = now;
            last_hits = hits;
            idle = 0;
            continue;
        }
        if (++idle < limit) {
            until_settled(idle);
            continue;
        }
        fprintf(stderr, "replay-vm: DIVERGENCE at event #%" PRIu64 ": the "
                "replay made no progress for %" PRId64 " s (a vCPU waits for "
                "something the log promised and that never comes)\n",
                now, limit);
        {
            CPUState *cpu;

            CPU_FOREACH(cpu) {
                RRVMPos p;
                char b[160];

                rrvm_pos_of(cpu, 0, &p);
                fmt_pos(b, sizeof(b), &p);
                fprintf(stderr, "replay-vm:   vcpu %d at %s\n",
                        cpu->cpu_index, b);
            }
        }
        fflush(stderr);
        rrvm_ram_dump_diverged();
        _exit(RRVM_EXIT_DIVERGED);
    }
    return NULL;
}

void rrvm_replay_set_until(uint64_t until, bool pause)
{
    static QemuThread watchdog;

    qemu_thread_create(&watchdog, "rrvm-stall", stall_watchdog, NULL,
                       QEMU_THREAD_DETACHED);
    rrvm.until = until;
    rrvm.until_pause = pause;
    if (until != UINT64_MAX) {
        info_report("replay-vm: will stop before event #%" PRIu64 "%s", until,
                    pause ? " and wait for a debugger" : "");
    }
    qemu_add_vm_change_state_handler(until_resume, NULL);
}

bool rrvm_cpu_waiting(CPUState *cpu)
{
    bool r;

    if (!rrvm_replaying()) {
        return false;
    }
    qemu_mutex_lock(&rrvm.lock);
    r = rc_of(cpu)->wait_item && !rc_of(cpu)->wait_item->done;
    replay_unlock();
    return r;
}


/*
 * Has @rc met everything the log holds for it, up to a clean end?  The
 * log's End record comes after its last checkpoint, and the reader may
 * not have reached it when the last vCPU meets that checkpoint: read on
 * to it.  Otherwise both vCPUs ran on past the recording's end, which no
 * one then noticed (the watchdog's test is for cut logs), and a replay
 * that had matched the whole recording was reported as stalled.
 */
static bool ended_here(RRVMCpu *rc)
{
    return !queue_head(&rc->async_q) && rrvm.log_ended && rrvm.end_clean &&
           g_queue_is_empty(&rc->sync_q);
}

/* The barrier queued right after the head, if it is at @cur too. */
static RRVMItem *next_at_same_position(CPUState *cpu, RRVMCpu *rc,
                                       const RRVMPos *cur)
{
    RRVMItem *nx;
    RRVMPos p;

    while (g_queue_get_length(&rc->async_q) < 2 && fetch_locked()) {
        /* read ahead until this vCPU has a second event */
    }
    nx = g_queue_peek_nth(&rc->async_q, 1);
    if (!nx || nx->ev->body_case == RR__EVENT__BODY_INTERRUPT) {
        return NULL;
    }
    p = rrvm_from_rr_pos(item_pos(nx, cpu->cpu_index));
    return rrvm_pos_equal(&p, cur) ? nx : NULL;
}

/*
 * gdb steps a vCPU over a breakpoint with every other vCPU stopped.  If the
 * stepping vCPU has to wait at a barrier for one of them, the step would
 * never end: let the stopped vCPUs run on (they meet their side of the
 * barrier); the vm_stop that ends the step stops them again.  Called
 * without rrvm.lock.
 */
static void release_debug_stopped(CPUState *cpu)
{
    bool bql = qemu_mutex_iothread_locked();
    CPUState *other;

    if (!bql) {
        qemu_mutex_lock_iothread();
    }
    if (runstate_is_running()) {
        CPU_FOREACH(other) {
            if (other != cpu && other->stopped) {
                cpu_resume(other);
            }
        }
    }
    if (!bql) {
        qemu_mutex_unlock_iothread();
    }
}

/*
 * Byte CREW: how far is @cpu from @want?  Positions are ordered by
 * (branches, det points): branches count user-mode branches and kernel
 * entries, det points the kernel's.  -1: run on (the doorbell or the
 * branch limit stops it); 0: same user epoch, step to rip/rcx; 1: here.
 * Called under rrvm.lock; a divergence does not return.
 */
static int byte_approach(CPUState *cpu, RRVMItem *it, const RRVMPos *cur,
                         const RRVMPos *want)
{
    bool user = rrvm_target_cpl(cpu) == 3;
    bool want_kernel = want->rip >= 0xffff800000000000ULL;

    if (rrvm_debug) {
        fprintf(stderr, "rrvm: vcpu %d #%" PRIu64 " %s point %d cur br=%" PRIu64
                " dp=%" PRIu64 " want br=%" PRIu64 " dp=%" PRIu64 " base %" PRIu64
                " dp_pc %" PRIx64 "\n",
                cpu->cpu_index, it->index, user ? "user" : "kernel",
                rc_of(cpu)->point, cur->branches, cur->dp, want->branches,
                want->dp, rc_of(cpu)->dp_base, rrvm_byte_dp_pc(cpu));
    }

    if (cur->branches > want->branches ||
        (cur->branches == want->branches && cur->dp > want->dp)) {
        replay_unlock();
        rrvm_diverged(cpu, it->index, "ran past the position of the next "
                      "event", want, cur);
    }
    if (cur->branches < want->branches) {
        if (!user) {
            rrvm_byte_arm(cpu, 1ULL << 62);     /* no doorbell needed */
        }
        return -1;
    }
    if (cur->dp < want->dp) {
        if (user) {
            replay_unlock();
            rrvm_diverged(cpu, it->index, "back in user mode before the "
                          "kernel got to the event's det point", want, cur);
        }
        rrvm_byte_arm(cpu, want->dp - cur->dp);
        return -1;
    }
    if (!want_kernel) {
        if (!user) {
            /* the kernel part of this epoch, no det point left in it */
            rrvm_byte_arm(cpu, 1ULL << 62);
            return -1;
        }
        return rrvm_pos_equal(cur, want) ? 1 : 0;
    }
    if (user) {
        replay_unlock();
        rrvm_diverged(cpu, it->index, "in user mode where the log has a "
                      "kernel det point", want, cur);
    }
    if (want->rcx >= RRVM_TAKE_RCX) {
        /*
         * a page taken by kernel code (user=page): met at its fill
         * (rrvm_replay_take_here); the next det point says if it never came
         */
        rrvm_byte_arm(cpu, 1);
        return -1;
    }
    if (!rrvm_byte_exact(cpu, false) || cur->rcx < want->rcx) {
        /*
         * between the det point's count and its doorbell, or at the
         * doorbell of a det point the log has the vCPU halted after:
         * get there
         */
        return -1;
    }
    /*
     * rcx 0: the recording held the vCPU inside the I/O access that follows
     * this det point (port I/O, or MMIO), where nothing else happens: its
     * doorbell is the same place.
     */
    if (want->rcx == 0 && cur->rcx != 2) {
        RRVMPos c = *cur;

        c.rcx = 0;
        if (rrvm_pos_equal(&c, want)) {
            return 1;
        }
    }
    /*
     * rcx 0 and more accesses than here: the recording held the vCPU
     * further on in this det point's stretch, in the exception it was
     * delivering there (a fault in a user copy takes the BQL to go in:
     * rrvm_lock_iothread).  Not a det point, but an exact place all the
     * same: run on, rrvm_replay_pre_exception meets the event there, and
     * the next det point's doorbell says if it never came.
     */
    if (want->rcx == 0 && cur->seq < want->seq &&
        cur->branches == want->branches && cur->dp == want->dp &&
        cur->rip == want->rip) {
        rrvm_byte_arm(cpu, 1);
        return -1;
    }
    if (!rrvm_pos_equal(cur, want)) {
        replay_unlock();
        rrvm_diverged(cpu, it->index, "at the event's det point, but at "
                      "another instruction or CREW sequence", want, cur);
    }
    return 1;
}

/* Top of the cpu_exec loop. */
RRVMLoop rrvm_replay_loop(CPUState *cpu)
{
    RRVMCpu *rc = rc_of(cpu);
    RRVMLoop r = RRVM_LOOP_RUN;

    qemu_mutex_lock(&rrvm.lock);
    while (!still_waiting(rc)) {
        RRVMItem *it = queue_head(&rc->async_q);
        RRVMPos want, cur;

        if (!it) {
            cpu->rr_branch_limit = UINT64_MAX;
            break;
        }
        want = rrvm_from_rr_pos(item_pos(it, cpu->cpu_index));
        rrvm_pos_of(cpu, 0, &cur);
        cpu->rr_branch_limit = want.branches;
        if (rc->take_at_head || (rc->in_take_post &&
                                 it->ev->vcpu != cpu->cpu_index &&
                                 rrvm_pos_equal(&want, &rc->take_post))) {
            /*
             * found at its take by rrvm_replay_take_here, or logged
             * between its take and its access (RRVM_TAKE_POST)
             */
            rc->take_at_head = false;
            if (it->ev->body_case == RR__EVENT__BODY_CREW_TRANSFER &&
                it->ev->vcpu == cpu->cpu_index) {
                rc->in_take_post = rrvm_crew_took(cpu, &want, &rc->take_post);
            }
            if (meet_barrier(cpu, it) && ended_here(rc)) {
                replay_unlock();
                complete_clean_end();
            }
            continue;
        }
        rc->in_take_post = false;
        if (rrvm_byte_active) {
            int r = byte_approach(cpu, it, &cur, &want);

            if (r < 0) {
                break;          /* run on */
            }
            if (r == 0) {
                rrvm_target_step_one(cpu);
                break;
            }
            goto here;          /* at the event's position */
        }
        if (cur.branches < want.branches) {
            break;
        }
        if (cur.branches > want.branches) {
            replay_unlock();
            rrvm_diverged(cpu, it->index, "ran past the position of the "
                          "next event", &want, &cur);
        }
        if (!rrvm_pos_equal(&cur, &want)) {
            if (kvm_enabled() && want.dp && cur.branches == want.branches) {
                rrvm_kvm_seek(cpu, &want);      /* a forced stop (kvm.c) */
                break;
            }
            if (kvm_enabled()) {
                replay_unlock();
                rrvm_diverged(cpu, it->index, "the deterministic exit of "
                              "the next event is at another instruction",
                              &want, &cur);
            }
            /* same branch epoch: step to the exact instruction */
            rrvm_target_step_one(cpu);
            break;
        }
here:
        if (park_for_until(rc, it)) {
            break;
        }
        if (it->ev->body_case == RR__EVENT__BODY_INTERRUPT) {
            int kind = it->ev->interrupt->kind, vec = it->ev->interrupt->vector;
            RRVMItem *during = next_at_same_position(cpu, rc, &cur);

            if (during && park_for_until(rc, during)) {
                break;
            }
            if (during) {
                /*
                 * Logged while this interrupt was being delivered (e.g. a page
                 * taken for the IDT or the stack): meet it first.
                 */
                meet_barrier(cpu, during);
                continue;
            }
            g_queue_pop_head(&rc->async_q);
            item_unref(it);
            replay_unlock();
            qemu_mutex_lock_iothread();
            rrvm_target_deliver(cpu, kind, vec);
            qemu_mutex_unlock_iothread();
            return RRVM_LOOP_INTERRUPT;
        }
        if (meet_barrier(cpu, it) && ended_here(rc)) {
            replay_unlock();
            complete_clean_end();
        }
    }
    if (rc->wait_item) {
        r = RRVM_LOOP_WAIT;
    }
    replay_unlock();
    if (r == RRVM_LOOP_WAIT && cpu->singlestep_enabled) {
        release_debug_stopped(cpu);
    }
    return r;
}

/*
 * Byte CREW with user=page: a kernel-mode fill that CREW kept out.  If the
 * log's next event for @cpu is at this take (a transfer of this page, or
 * a barrier logged while the vCPU waited in it), the vCPU meets it at the
 * top of its loop (take_at_head) and runs the access again.
 */
bool rrvm_replay_take_here(CPUState *cpu, uint64_t page)
{
    RRVMCpu *rc = rc_of(cpu);
    RRVMItem *it;
    RRVMPos want, cur;
    bool here = false;

    rrvm_crew_take_pos(cpu, 0, true, &cur);
    qemu_mutex_lock(&rrvm.lock);
    it = queue_head(&rc->async_q);
    if (it) {
        want = rrvm_from_rr_pos(item_pos(it, cpu->cpu_index));
        /*
         * its own take is of this page; anything else (another's take of
         * this vCPU's page, a DMA write) was logged while it waited here
         */
        here = rrvm_pos_equal(&want, &cur) &&
               (it->ev->body_case != RR__EVENT__BODY_CREW_TRANSFER ||
                it->ev->vcpu != cpu->cpu_index ||
                (it->ev->crew_transfer->addr >> 12) == (page >> 12));
    }
    rc->take_at_head = here;
    if (rrvm_debug) {
        fprintf(stderr, "rrvm: vcpu %d take of page 0x%" PRIx64 " at dp=%"
                PRIu64 " rcx=0x%" PRIx64 " seq=%" PRIu64 ": head #%" PRIu64
                "%s\n", cpu->cpu_index, page, cur.dp, cur.rcx, cur.seq,
                it ? it->index : 0, here ? " is here" : "");
    }
    replay_unlock();
    return here;
}

/* KVM: is the next event of @cpu at its current position too? */
bool rrvm_replay_more_here(CPUState *cpu)
{
    RRVMItem *it;
    RRVMPos want, cur;
    bool r = false;

    qemu_mutex_lock(&rrvm.lock);
    it = queue_head(&rc_of(cpu)->async_q);
    if (it && !rc_of(cpu)->wait_item) {
        want = rrvm_from_rr_pos(item_pos(it, cpu->cpu_index));
        rrvm_pos_of(cpu, 0, &cur);
        r = rrvm_pos_equal(&want, &cur) &&
            it->ev->body_case != RR__EVENT__BODY_INTERRUPT;
    }
    replay_unlock();
    return r;
}

/*
 * About to deliver an exception: meet the barriers logged at exactly this
 * point (e.g. a page taken for the exception frame of a faulting branch,
 * whose count already includes it).  true: wait, deliver it later.
 */
bool rrvm_replay_pre_exception(CPUState *cpu)
{
    RRVMCpu *rc = rc_of(cpu);
    bool wait;

    qemu_mutex_lock(&rrvm.lock);
    while (!still_waiting(rc)) {
        RRVMItem *it = queue_head(&rc->async_q);
        RRVMPos want, cur;

        if (!it || it->ev->body_case == RR__EVENT__BODY_INTERRUPT) {
            break;
        }
        want = rrvm_from_rr_pos(item_pos(it, cpu->cpu_index));
        rrvm_pos_of(cpu, 0, &cur);
        if (!rrvm_pos_equal(&cur, &want) || park_for_until(rc, it)) {
            break;
        }
        meet_barrier(cpu, it);
    }
    wait = rc->wait_item != NULL;
    replay_unlock();
    return wait;
}

/* A halted vCPU: true to stay halted, false to wake for an interrupt. */
bool rrvm_replay_halted(CPUState *cpu)
{
    RRVMCpu *rc = rc_of(cpu);
    bool stay = true;

    qemu_mutex_lock(&rrvm.lock);
    while (!still_waiting(rc)) {
        RRVMItem *it = queue_head(&rc->async_q);
        RRVMPos want, cur;

        if (!it) {
            if (rrvm.log_ended && rrvm.n_cpus == 1) {
                replay_unlock();
                complete_at_end();
            }
            break;
        }
        want = rrvm_from_rr_pos(item_pos(it, cpu->cpu_index));
        rrvm_pos_of(cpu, 0, &cur);
        if (!rrvm_pos_equal(&cur, &want)) {
            if (rrvm.n_cpus == 1) {
                replay_unlock();
                rrvm_diverged(cpu, it->index, "vCPU halted, but the next "
                              "event is elsewhere", &want, &cur);
            }
            break;
        }
        if (park_for_until(rc, it)) {
            break;
        }
        if (it->ev->body_case == RR__EVENT__BODY_INTERRUPT) {
            stay = false;
            break;
        }
        if (meet_barrier(cpu, it) && ended_here(rc)) {
            replay_unlock();
            complete_clean_end();
        }
    }
    replay_unlock();
    return stay;
}

bool rrvm_cpu_has_work(CPUState *cpu)
{
    RRVMItem *it;
    RRVMPos want, cur;
    bool r;

    qemu_mutex_lock(&rrvm.lock);
    if (still_waiting(rc_of(cpu))) {
        replay_unlock();
        return false;
    }
    if (rrvm.n_cpus == 1) {
        replay_unlock();
        return true;    /* rrvm_replay_halted decides, or reports */
    }
    it = queue_head(&rc_of(cpu)->async_q);
    if (it) {
        want = rrvm_from_rr_pos(item_pos(it, cpu->cpu_index));
        rrvm_pos_of(cpu, 0, &cur);
    }
    r = it && rrvm_pos_equal(&want, &cur);
    replay_unlock();
    return r;
}
