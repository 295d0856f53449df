/*
 * replay-vm: a recording that stops logging says where each vCPU is.
 *
 * A recording holds vCPUs for one another (page transfers, checkpoints,
 * device writes) and a vCPU can only be held at a deterministic point, so
 * a vCPU that never gets to one (under KVM: guest code that runs without
 * port, MMIO, RDTSC or PAUSE exits) or a lock taken in the wrong order
 * stops the whole recording with nothing on the console.  When no event
 * has been logged for RRVM_STALL_SECONDS (default 120) while the VM runs,
 * this prints each vCPU's state once: what its thread waits for, whether
 * it is inside the guest, its last position, and who holds the world
 * lock.  The recording goes on: a guest may also just be idle.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/core/cpu.h"
#include "sysemu/kvm.h"
#include "sysemu/runstate.h"
#include "sysemu/rrvm.h"
#include "rrvm-internal.h"

/* a thread that is not a vCPU's (the main loop) */
static const char *other_waiting;
static int other_waiting_on = -1;

void rrvm_note_wait(const char *what, int on)
{
    if (current_cpu) {
        RRVMCpu *rc = &rrvm.cpus[current_cpu->cpu_index];

        qatomic_set(&rc->waiting_on, on);
        qatomic_set(&rc->waiting, what);
    } else {
        qatomic_set(&other_waiting_on, on);
        qatomic_set(&other_waiting, what);
    }
}

static void print_wait(const char *what, int on)
{
    if (on >= 0) {
        fprintf(stderr, "waits %s %d", what, on);
    } else {
        fprintf(stderr, "waits %s", what);
    }
}

static void report(uint64_t events, int64_t secs)
{
    int owner = qatomic_read(&rrvm.world_owner);
    const char *ow = qatomic_read(&other_waiting);
    bool stuck = false;
    CPUState *cpu;

    fprintf(stderr, "replay-vm: the recording has logged no event for %"
            PRId64 " s (%" PRIu64 " so far); where each vCPU is:\n", secs,
            events);
    CPU_FOREACH(cpu) {
        RRVMCpu *rc = &rrvm.cpus[cpu->cpu_index];
        const char *w = qatomic_read(&rc->waiting);

        if (!w && qatomic_read(&rc->in_guest) &&
            qatomic_read(&rc->stop_req)) {
            stuck = true;
        }
        fprintf(stderr, "replay-vm:   vcpu %d: ", cpu->cpu_index);
        if (w) {
            print_wait(w, qatomic_read(&rc->waiting_on));
        } else if (qatomic_read(&rc->in_guest)) {
            fprintf(stderr, "in the guest");
        } else if (cpu->halted) {
            fprintf(stderr, "halted");
        } else {
            fprintf(stderr, "in QEMU");
        }
        if (kvm_enabled()) {
            fprintf(stderr, "; last deterministic exit #%" PRIu64 " at rip "
                    "0x%" PRIx64 " rcx 0x%" PRIx64, rc->kvm_pos.branches,
                    rc->kvm_pos.rip, rc->kvm_pos.rcx);
        } else {
            fprintf(stderr, "; %" PRIu64 " user branches", cpu->rr_branches);
        }
        fprintf(stderr, "%s; held %" PRIu64 " times\n",
                qatomic_read(&rc->stop_req) ? "; a stop is requested" : "",
                rc->held);
    }
    if (ow) {
        fprintf(stderr, "replay-vm:   the main loop ");
        print_wait(ow, qatomic_read(&other_waiting_on));
        fprintf(stderr, "\n");
    }
    fprintf(stderr, "replay-vm:   the world lock is %s", owner == -1 ? "free"
            : owner == -2 ? "held by the main loop" : "held by vcpu ");
    if (owner >= 0) {
        fprintf(stderr, "%d", owner);
    }
    fprintf(stderr, "\n");
    if (stuck && kvm_enabled()) {
        fprintf(stderr, "replay-vm:   a vCPU in the guest with a stop "
                "requested has taken no deterministic exit since: without a "
                "PMU it may be in a loop that waits for an interrupt (which "
                "waits for such an exit) or spins without PAUSE, RDTSC or "
                "I/O; forced stops (RRVM_FORCE_MS) end such loops in kernel "
                "mode only (README \"Known limits\")\n");
    }
    fflush(stderr);
}

/* How long a recording or a replay may make no progress before it says so */
int64_t rrvm_stall_seconds(void)
{
    const char *env = g_getenv("RRVM_STALL_SECONDS");

    return env ? atoll(env) : 120;
}

/* From the flusher, every few hundred milliseconds while recording. */
void rrvm_record_stall_check(void)
{
    static int64_t limit = -1;
    static uint64_t last;
    static int64_t since;
    static bool told;
    int64_t now = g_get_monotonic_time() / G_USEC_PER_SEC;
    uint64_t n = rr_writer_count(rrvm.writer);

    if (limit < 0) {
        limit = rrvm_stall_seconds();
        since = now;
    }
    if (n != last || !runstate_is_running()) {
        last = n;
        since = now;
        told = false;
        return;
    }
    if (!told && limit > 0 && now - since >= limit) {
        told = true;
        report(n, now - since);
    }
}
