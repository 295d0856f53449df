/*
 * replay-vm: page-granular CREW (concurrent read, exclusive write) for
 * recording several vCPUs under MTTCG, as SMP-ReVirt does with per-CPU
 * page tables: here each vCPU's softmmu TLB plays the per-CPU EPT.
 *
 * Every guest RAM page has an owner set.  A vCPU's TLB entry for a page
 * carries only what CREW allows it: read when it is an owner, write when
 * it is the only (exclusive) owner.  Any other access misses the TLB; the
 * fill hook then stops the current owners at exact positions, logs the
 * transfer (acquirer and its position, each previous owner and its
 * position), changes the owner set and drops the page from the previous
 * owners' TLBs.  On replay a transfer is a meeting point: the acquirer and
 * every previous owner wait for each other at their logged positions, so
 * conflicting accesses happen in the recorded order.
 *
 * Replay keeps the same owner sets and TLB permissions and changes them at
 * the same points (rrvm_crew_replay_transfer): a TLB miss that CREW caused
 * in the recording made the vCPU walk the page table again, and a walk can
 * see a PTE another vCPU just changed (fault or no fault); a replay without
 * the same misses would keep a stale entry.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/bitmap.h"
#include "qemu/error-report.h"
#include "exec/cpu-common.h"
#include "exec/memory.h"
#include "hw/core/cpu.h"
#include "sysemu/rrvm.h"
#include "rrvm-internal.h"

#define PAGE_BITS 12
#define PAGE_OFF  ((1ULL << PAGE_BITS) - 1)
/* PAGE_READ/WRITE/EXEC of exec/cpu-all.h (checked in cputlb.c) */
#define PAGE_READ  0x0001
#define PAGE_WRITE 0x0002
#define PAGE_EXEC  0x0004

bool rrvm_page_crew;
bool rrvm_user_page_crew;           /* -rr ...,crew=byte,user=page */
uint64_t rrvm_crew_transfers;
uint64_t rrvm_crew_local_takes;     /* replay: see replay_unlogged_take */
uint64_t rrvm_crew_restarts;        /* record: see rrvm_crew_fill_end */
uint64_t rrvm_fault_restarts;       /* record: rrvm_lock_iothread_exception */

static uint64_t *crew_state;        /* owner word per page */
static uint64_t crew_pages;
/*
 * user=page: the pages a walk for a user address has read.  Their page
 * CREW covers those walks (MMU_PTW_USER_IDX on x86) and the kernel's
 * writes, so a walk and the kernel changing the entry it reads (another
 * thread's fault filling it in, a COW break) are ordered as user code and
 * the kernel are; the kernel's reads of it too (rrvm_crew_table_prot).
 * The kernel's own walks stay uncovered, and a page stays a table once it
 * has been one.
 */
static unsigned long *crew_table;

static bool is_table(uint64_t pg)
{
    return test_bit(pg, crew_table);
}

static int span(RAMBlock *rb, void *opaque)
{
    uint64_t *end = opaque;
    uint64_t e = qemu_ram_get_offset(rb) + qemu_ram_get_max_length(rb);

    *end = MAX(*end, e);
    return 0;
}

void rrvm_crew_page_init(void)
{
    uint64_t end = 0;

    if (rrvm.n_cpus > 63) {
        error_report("replay-vm: page CREW supports at most 63 vCPUs");
        exit(1);
    }
    qemu_ram_foreach_block(span, &end);
    crew_pages = end >> PAGE_BITS;
    crew_state = g_new(uint64_t, crew_pages);
    crew_table = bitmap_new(crew_pages);
    /* the boot processor starts alone: it owns everything */
    for (uint64_t i = 0; i < crew_pages; i++) {
        crew_state[i] = 1 | RRVM_CREW_EXCL;
    }
    rrvm_page_crew = true;
}

static RRVMCpu *rc_of(CPUState *cpu)
{
    return &rrvm.cpus[cpu->cpu_index];
}

/*
 * Does page CREW order this access?  Every one before the byte-CREW
 * switch; after it (user=page) those to user addresses, by user or kernel
 * code: the guest module orders the kernel's own memory, and the kernel's
 * user copies (a futex word read while another thread's cmpxchg changes
 * it) must be ordered with the user code's accesses.
 */
bool rrvm_crew_covers(uint64_t vaddr, int mmu_idx)
{
    return !rrvm_byte_active || rrvm_target_user_access(vaddr, mmu_idx);
}

/* Where a take happens: in kernel mode after the switch, RRVM_TAKE_RCX. */
void rrvm_crew_take_pos(CPUState *cpu, uintptr_t ra, bool in_insn,
                        RRVMPos *pos)
{
    RRVMCpu *rc = rc_of(cpu);

    rrvm_pos_of(cpu, ra, pos);
    /*
     * Not in an instruction (@in_insn false): the delivery of an interrupt
     * pushing its frame (a kernel stack page can be a former page table).
     * Its position is the delivery's, where replay meets what was logged
     * during it before delivering.
     */
    if (rrvm_byte_active && !in_insn && rc->delivering) {
        *pos = rc->deliver_pos;
        return;
    }
    if (rrvm_byte_active && rrvm_target_cpl(cpu) != 3 && in_insn) {
        pos->rcx = RRVM_TAKE_RCX + (rc->take_dp == pos->dp ? rc->take_k : 0);
    }
}

static bool is_take_pos(const RRVMPos *pos)
{
    return pos->rip >= 0xffff800000000000ULL && pos->rcx >= RRVM_TAKE_RCX &&
           pos->rcx < RRVM_TAKE_POST;
}

/*
 * @cpu logged (record) or met (replay) its take at @pos: the next one is
 * k + 1, and until the access is done it is at @post (RRVM_TAKE_POST).
 * false: not a kernel-mode take.
 */
bool rrvm_crew_took(CPUState *cpu, const RRVMPos *pos, RRVMPos *post)
{
    RRVMCpu *rc = rc_of(cpu);

    if (!rrvm_byte_active || !is_take_pos(pos)) {
        return false;
    }
    rc->take_k = pos->rcx - RRVM_TAKE_RCX + 1;
    rc->take_dp = pos->dp;
    *post = *pos;
    post->rcx = pos->rcx - RRVM_TAKE_RCX + RRVM_TAKE_POST;
    return true;
}

/* What the TLB may allow @cpu on RAM page @ram_addr (tlb_set_page_full). */
int rrvm_crew_prot(CPUState *cpu, uint64_t ram_addr, int mmu_idx)
{
    uint64_t pg = ram_addr >> PAGE_BITS, st, bit = 1ULL << cpu->cpu_index;
    RRVMCpu *rc = rc_of(cpu);
    bool for_user;

    rc->fill_ram = ram_addr;
    if (pg >= crew_pages) {
        return PAGE_READ | PAGE_WRITE | PAGE_EXEC;
    }
    if (rrvm_byte_active && rrvm_target_walk_idx(mmu_idx, &for_user) &&
        for_user && !is_table(pg)) {
        rc->fill_mark = true;           /* rrvm_crew_fill_end marks it */
        return 0;
    }
    st = qatomic_read(&crew_state[pg]);
    if (!(st & bit)) {
        return 0;
    }
    return (st & RRVM_CREW_EXCL) ? PAGE_READ | PAGE_WRITE | PAGE_EXEC
                            : PAGE_READ | PAGE_EXEC;
}

/*
 * The host return address of the guest access being filled, for nested
 * fills (page-table walks) that have none.  Enter returns the one to put
 * back on leave; a fault that unwinds a fill clears it (rrvm_crew_unwound).
 */
uintptr_t rrvm_crew_fill_enter(CPUState *cpu, uintptr_t ra)
{
    RRVMCpu *rc = rc_of(cpu);
    uintptr_t prev = rc->fill_ra;

    if (ra) {
        rc->fill_ra = ra;
    }
    return prev;
}

void rrvm_crew_fill_leave(CPUState *cpu, uintptr_t prev)
{
    rc_of(cpu)->fill_ra = prev;
}

void rrvm_crew_unwound(CPUState *cpu)
{
    rc_of(cpu)->fill_ra = 0;
}

/*
 * user=page: what the kernel may do on a page user walks read (a fill CREW
 * does not cover otherwise): read as an owner (a walk sets accessed and
 * dirty bits: a fault handler comparing an entry it read before must see
 * them where the recording did), write as the exclusive owner, execute
 * always (a fetch cannot take in the middle of a TB).
 */
int rrvm_crew_table_prot(CPUState *cpu, uint64_t ram_addr, int mmu_idx)
{
    uint64_t pg = ram_addr >> PAGE_BITS, bit = 1ULL << cpu->cpu_index, st;
    RRVMCpu *rc = rc_of(cpu);
    bool for_user;

    if (!rrvm_byte_active || pg >= crew_pages || !is_table(pg) ||
        rrvm_target_walk_idx(mmu_idx, &for_user)) {
        return PAGE_READ | PAGE_WRITE | PAGE_EXEC;
    }
    rc->fill_ram = ram_addr;
    rc->fill_table = true;
    st = qatomic_read(&crew_state[pg]);
    return PAGE_EXEC | (rrvm_crew_allows(st, bit, false) ? PAGE_READ : 0) |
           (rrvm_crew_allows(st, bit, true) ? PAGE_WRITE : 0);
}

void rrvm_crew_fill_begin(CPUState *cpu)
{
    RRVMCpu *rc = rc_of(cpu);

    rc->fill_ram = UINT64_MAX;
    rc->fill_mark = rc->fill_table = false;
}

/*
 * @pg becomes a page table (under the world lock, or a replay's barrier):
 * every TLB entry of it goes, those that CREW did not cover too.
 */
static void mark_table(uint64_t pg)
{
    CPUState *o;

    set_bit_atomic(pg, crew_table);
    CPU_FOREACH(o) {
        rrvm_tlb_revoke(o, pg << PAGE_BITS);
    }
}

/*
 * The logged address is the byte the acquirer touched and the length its
 * access size (the page is addr & ~0xfff): replay needs only the page, but
 * the byte range lets the log tell false sharing from true sharing.
 */
void rrvm_crew_log_transfer(CPUState *cpu, const RRVMPos *me, uint64_t gpa,
                            int size, bool write, uint64_t prev)
{
    Rr__VcpuPos vp[RRVM_MAX_CPUS], *vpp[RRVM_MAX_CPUS];
    Rr__Position pp[RRVM_MAX_CPUS];
    rr_pos p = rrvm_to_rr_pos(me);
    rr_event_buf b;
    CPUState *o;
    int n = 0;

    CPU_FOREACH(o) {
        if (prev & (1ULL << o->cpu_index)) {
            rr_pos op = rrvm_to_rr_pos(&rc_of(o)->park_pos);

            rr_vcpu_pos_init(&vp[n], &pp[n], o->cpu_index, &op);
            vpp[n] = &vp[n];
            n++;
        }
    }
    rrvm_append(rr_ev_crew_transfer(&b, cpu->cpu_index, &p,
                                    RR__CREW_TRANSFER__GRANULARITY__PAGE,
                                    gpa, size, write,
                                    n, vpp));
}

/*
 * Replay, a fill CREW keeps out although the log's transfers at this
 * position were met.  Right for a change the recording did not log
 * (taking a page nobody else owns, e.g. a sole reader's upgrade); also
 * seen when this vCPU's TLB lost an entry the recording's still had
 * (flushes QEMU makes on its own schedule, e.g. from memory map changes).
 * Either way the order of conflicting accesses comes from the log's
 * barriers, not from these permissions: take the page locally and go on.
 */
static bool replay_unlogged_take(CPUState *cpu, uint64_t pg, bool write,
                                 bool mark)
{
    uint64_t bit = 1ULL << cpu->cpu_index, st;

    qemu_mutex_lock(&rrvm.lock);
    st = crew_state[pg];
    if ((st & ~RRVM_CREW_EXCL & ~bit) || mark) {
        rrvm_crew_local_takes++;
    }
    if (mark && !is_table(pg)) {
        mark_table(pg);
        st = 0;
    }
    qatomic_set(&crew_state[pg], rrvm_crew_taken(st, bit, write));
    qemu_mutex_unlock(&rrvm.lock);
    return true;
}

/*
 * Replay: a logged transfer, met by everyone it names (they wait at their
 * positions).  Same owner change, TLB revocations and TB invalidation as
 * in the recording (to the owners the log names and any this replay has).
 */
void rrvm_crew_replay_transfer(CPUState *cpu, const RRVMItem *it)
{
    const Rr__Event *ev = it->ev;
    const Rr__CrewTransfer *t = ev->crew_transfer;
    uint64_t pg = t->addr >> PAGE_BITS, bit, st, prev = 0, logged = 0;
    CPUState *o;

    if (rrvm_kvm_crew) {
        rrvm_kvm_crew_replay_transfer(cpu, it);   /* gfns, KVM's rights */
        return;
    }
    if (t->granularity != RR__CREW_TRANSFER__GRANULARITY__PAGE ||
        pg >= crew_pages || ev->vcpu >= (uint32_t)rrvm.n_cpus) {
        return;
    }
    bit = 1ULL << ev->vcpu;
    for (size_t i = 0; i < t->n_prev_owners; i++) {
        logged |= 1ULL << t->prev_owners[i]->vcpu;
    }
    st = crew_state[pg];
    prev = (st & ~RRVM_CREW_EXCL & ~bit) | (logged & ~bit);
    if (t->len == 0) {
        /* a user walk's first read of a page: a page table from now on */
        mark_table(pg);
        st = 0;
    }
    qatomic_set(&crew_state[pg], rrvm_crew_taken(st, bit, t->write));
    CPU_FOREACH(o) {
        if (prev & (1ULL << o->cpu_index)) {
            rrvm_tlb_revoke(o, pg << PAGE_BITS);
            if (is_table(pg)) {
                rrvm_tlb_drop_user(o);
            }
        }
    }
    if (t->write && prev) {
        rrvm_tb_invalidate_page(pg << PAGE_BITS);
    }
}

/*
 * After a TLB fill: if CREW kept the access out, take the page and ask
 * for a refill.  Runs in the vCPU thread in the middle of the access
 * (@ra locates it), so the acquirer's position is exact too.
 */
bool rrvm_crew_fill_end(CPUState *cpu, int access_type, uint64_t addr,
                        int size, uintptr_t ra)
{
    RRVMCpu *rc = rc_of(cpu);
    uint64_t ram = rc->fill_ram, pg, st, prev, bit, held;
    bool write = access_type == MMU_DATA_STORE;
    bool mark = rc->fill_mark, table = rc->fill_table;
    RRVMPos me, post;
    CPUState *o;

    rc->fill_ram = UINT64_MAX;
    rc->fill_mark = rc->fill_table = false;
    pg = ram >> PAGE_BITS;          /* UINT64_MAX (no fill): past the end */
    if (pg >= crew_pages || (table && access_type == MMU_INST_FETCH)) {
        return false;
    }
    bit = 1ULL << cpu->cpu_index;
    st = qatomic_read(&crew_state[pg]);
    if (!mark && rrvm_crew_allows(st, bit, write)) {
        return false;
    }
    if (rrvm_replaying()) {
        if (rrvm_byte_active && ra && rrvm_target_cpl(cpu) != 3 &&
            rrvm_replay_take_here(cpu, pg << PAGE_BITS)) {
            /* met at the top of its loop; then the access runs again */
            rrvm_target_restart_insn(cpu, ra);
        }
        return replay_unlogged_take(cpu, pg, write, mark);
    }

    rrvm_crew_take_pos(cpu, ra, ra != 0, &me);
    held = rc->held;
    if (rrvm_world_enter(&me) && rc->held != held && ra &&
        !rrvm_insn_did_io(rc, &me)) {
        /*
         * While it waited, others held this vCPU at the start of its
         * instruction and may have changed what the instruction already
         * read (the load of an add to memory whose store is filling here):
         * replay runs the whole instruction after them, so run it again.
         * Not one that did I/O already (ins, movs from MMIO).
         */
        rrvm_world_exit();
        rrvm_crew_restarts++;
        rrvm_target_restart_insn(cpu, ra);
    }
    st = crew_state[pg];            /* owners change only under the lock */
    prev = st & ~RRVM_CREW_EXCL & ~bit;
    mark = mark && !is_table(pg);
    if (mark) {
        /*
         * The first walk for a user address through this page: until now
         * the kernel wrote it without page CREW, any vCPU may have.  All
         * stop where they are, logged (len 0: the mark), and from here on
         * their writes to it are takes.
         */
        prev = (~0ULL >> (64 - rrvm.n_cpus)) & ~bit;
    }
    if (prev) {
        rrvm_stop_mask(prev);
        rrvm_crew_log_transfer(cpu, &me,
                               (pg << PAGE_BITS) | (addr & PAGE_OFF),
                               mark ? 0 : MAX(size, 1), write, prev);
        if (rrvm_crew_took(cpu, &me, &post)) {
            /* a stopper may hold it before it has its exec lock back */
            rc->park_pos = post;
        }
        rrvm_crew_transfers++;
    }
    if (mark) {
        mark_table(pg);
        st = 0;
    }
    qatomic_set(&crew_state[pg], rrvm_crew_taken(st, bit, write));
    CPU_FOREACH(o) {
        if (prev & (1ULL << o->cpu_index)) {
            /* a writer turned reader loses write; others lose the page */
            rrvm_tlb_revoke(o, pg << PAGE_BITS);
            if (is_table(pg)) {
                /* and what they walked through it (replay does the same) */
                rrvm_tlb_drop_user(o);
            }
        }
    }
    if (write && prev) {
        rrvm_tb_invalidate_page(pg << PAGE_BITS);
    }
    if (prev) {
        rrvm_resume_mask(prev);
    }
    rrvm_world_exit();
    return true;
}
