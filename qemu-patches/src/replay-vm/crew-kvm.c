/*
 * replay-vm: page-granular CREW under KVM, through the patched KVM's
 * per-vCPU page rights (replay-vm's kvm-patches/0002, KVM_CAP_RRVM_CREW).
 *
 * The protocol of crew-page.c with KVM's rights table in the place of the
 * softmmu TLB, indexed by guest frame.  An access a vCPU's rights do not
 * allow leaves KVM_RUN before the instruction runs (a CREW exit).  Rights
 * change only at deterministic exits -- the acquirer's CREW exit, and the
 * next deterministic exit of every previous owner, where it is held -- so
 * a replay that changes them at the same exits takes the same CREW exits:
 * they are deterministic exits too, and positions.
 *
 * Recording: the CREW exit takes the page at once.  Previous owners are
 * held at their next deterministic exit (rrvm_stop_mask waits for their
 * exec locks, which they let go of there), lose their rights, and the
 * transfer is logged with the acquirer's position and theirs.  A take
 * from nobody (a sole reader's upgrade) is logged too, without previous
 * owners: see rrvm_kvm_crew_settle.
 * Replay: a CREW exit only notes the access; the log's events at that
 * position are met (a logged transfer by the previous owners at their
 * logged positions), and rights change only through them.
 *
 * Guest page-table walks: the walker reads the guest's tables only on a
 * TLB miss, so whether a walk needs a table page (and takes a CREW exit
 * for it) might seem to depend on TLB state.  It does not: a vCPU loses
 * rights only while it is out of the guest, and losing them zaps its
 * mappings and flushes its TLB (KVM_RRVM_CREW_SET), so a translation the
 * TLB still holds was walked under rights the vCPU still has.  A walk
 * that faults for lack of rights therefore does so at the same
 * instruction on record and replay.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "hw/core/cpu.h"
#include "sysemu/rrvm.h"
#include "rrvm-internal.h"

#define PAGE_BITS 12

bool rrvm_kvm_crew;
/* KVM's table, as last set: its EXCL bit is RRVM_CREW_EXCL (bit 63) */
static uint64_t *owners;
static uint64_t n_gfns;
static uint64_t n_exits, n_takes, n_refused;

static RRVMCpu *rc_of(CPUState *cpu)
{
    return &rrvm.cpus[cpu->cpu_index];
}

/* KVM's table is enabled (rrvm_kvm_arch_init), each gfn set to @init */
void rrvm_kvm_crew_init(uint64_t gfns, uint64_t init)
{
    owners = g_new(uint64_t, gfns);
    for (uint64_t i = 0; i < gfns; i++) {
        owners[i] = init;
    }
    n_gfns = gfns;
    rrvm_kvm_crew = true;
}

static void set_owners(uint64_t gfn, uint64_t st)
{
    qatomic_set(&owners[gfn], st);
    rrvm_kvm_arch_crew_set(gfn, st);
}

/* Recording: take the page now, with every previous owner held. */
static void record_take(CPUState *cpu, uint64_t gpa, bool write)
{
    RRVMCpu *rc = rc_of(cpu);
    uint64_t gfn = gpa >> PAGE_BITS, bit = 1ULL << cpu->cpu_index, st, prev;

    /* at a deterministic exit our exec lock is free: others may hold us */
    rrvm_world_enter(&rc->kvm_pos);
    st = owners[gfn];               /* changes only under the world lock */
    if (rrvm_crew_allows(st, bit, write)) {
        rrvm_world_exit();
        return;
    }
    prev = st & ~RRVM_CREW_EXCL & ~bit;
    if (prev) {
        rrvm_stop_mask(prev);
        rrvm_crew_transfers++;
    } else {
        n_takes++;
    }
    rrvm_crew_log_transfer(cpu, &rc->kvm_pos, gpa, 1, write, prev);
    set_owners(gfn, rrvm_crew_taken(st, bit, write));
    if (prev) {
        rrvm_resume_mask(prev);
    }
    rrvm_world_exit();
}

/* KVM_EXIT_RRVM / KVM_RRVM_CREW: @cpu may not make this access yet. */
void rrvm_kvm_crew_fault(CPUState *cpu, uint64_t gpa, bool write)
{
    RRVMCpu *rc = rc_of(cpu);

    if (!rrvm_kvm_crew || (gpa >> PAGE_BITS) >= n_gfns) {
        error_report("replay-vm: KVM reported a CREW exit for gpa 0x%" PRIx64
                     " on vCPU %d, outside the %" PRIu64 " pages tracked",
                     gpa, cpu->cpu_index, n_gfns);
        exit(1);
    }
    qatomic_inc(&n_exits);
    if (rrvm_replaying()) {
        rc->crew_gpa = gpa;
        rc->crew_write = write;
        rc->crew_pending = true;
        return;
    }
    record_take(cpu, gpa, write);
}

/*
 * Replay, at the CREW exit's position after the log's events there.  The
 * recording logs every take, from nobody too, because one it did not log
 * could not be placed among the transfers other vCPUs logged at this same
 * position: they may take the page back before this vCPU runs on (taking
 * it here, after them, took it from them at a point of theirs that no log
 * names).  An access still not allowed now was not allowed when the
 * recording's vCPU ran on either: it exits again, as it did there.
 */
void rrvm_kvm_crew_settle(CPUState *cpu)
{
    RRVMCpu *rc = rc_of(cpu);
    uint64_t bit = 1ULL << cpu->cpu_index;

    if (!rc->crew_pending) {
        return;
    }
    rc->crew_pending = false;
    if (!rrvm_crew_allows(qatomic_read(&owners[rc->crew_gpa >> PAGE_BITS]),
                          bit, rc->crew_write)) {
        qatomic_inc(&n_refused);
    }
}

/* Replay: a logged transfer, met by everyone it names (under rrvm.lock). */
void rrvm_kvm_crew_replay_transfer(CPUState *cpu, const RRVMItem *it)
{
    const Rr__Event *ev = it->ev;
    const Rr__CrewTransfer *t = ev->crew_transfer;
    uint64_t gfn = t->addr >> PAGE_BITS;
    RRVMCpu *acq;

    if (t->granularity != RR__CREW_TRANSFER__GRANULARITY__PAGE ||
        gfn >= n_gfns || ev->vcpu >= (uint32_t)rrvm.n_cpus) {
        rrvm_bad_log("page CREW transfer outside the pages KVM tracks",
                     it->index);
    }
    /* the acquirer is at the CREW exit that made it: for the same page? */
    acq = &rrvm.cpus[ev->vcpu];
    if (!acq->crew_pending || acq->crew_gpa >> PAGE_BITS != gfn) {
        rrvm_diverged(qemu_get_cpu(ev->vcpu), it->index,
                      acq->crew_pending ? "the CREW exit here is for another "
                      "page" : "no CREW exit here", &acq->kvm_pos,
                      &acq->kvm_pos);
    }
    set_owners(gfn, rrvm_crew_taken(owners[gfn], 1ULL << ev->vcpu,
                                    t->write));
    if (t->n_prev_owners) {
        rrvm_crew_transfers++;
    } else {
        n_takes++;
    }
}

void rrvm_kvm_crew_finish(void)
{
    if (rrvm_kvm_crew) {
        info_report("replay-vm: KVM page CREW: %" PRIu64 " CREW exits, %"
                    PRIu64 " transfers and %" PRIu64 " takes from nobody "
                    "%s; %" PRIu64 " exits found the page taken back",
                    qatomic_read(&n_exits), rrvm_crew_transfers, n_takes,
                    rrvm_replaying() ? "replayed" : "logged",
                    qatomic_read(&n_refused));
    }
}
