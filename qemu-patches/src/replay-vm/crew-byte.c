/*
 * replay-vm: byte-granular CREW, the host side (-rr ...,crew=byte).
 *
 * The guest module (replay-vm's guest-module/) runs the kernel from a code
 * cache of translated blocks that check byte-granular ownership before
 * every shared-memory access and log each ownership transfer into a
 * per-vCPU ring in guest RAM (rrlog/include/rvg_abi.h has the protocol).
 * This file is QEMU's half:
 *
 *  - the module registers its shared memory (RVG_CMD_REGISTER); every
 *    address and length in it is untrusted and checked;
 *  - until the module asks for the switch (RVG_CMD_BYTE_ON, every CPU in
 *    the code cache) the VM is recorded with page-granular CREW, like any
 *    multi-vCPU recording: boot, module load and switch-on included;
 *  - the switch is a barrier logged with every vCPU's page-mode position;
 *    from there on kernel-mode positions are (user branches, det points,
 *    native pc of the det point) and user-mode positions keep counting
 *    user branches (entries into the kernel count one), kernel-mode
 *    interrupts are delivered only at det points (doorbells) or into a
 *    halted vCPU, and page CREW is off (user space is share-nothing);
 *  - record drains the rings into CrewTransfer(BYTE) events, replay feeds
 *    them back (RVG_CMD_REFILL) and the module enforces their order;
 *  - a vCPU parked by the host, halted or in user mode is BLOCKED for the
 *    CREW protocol (no access in flight), so no slow path waits for it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "qemu/atomic.h"
#include "qemu/timer.h"
#include "exec/memory.h"
#include "exec/address-spaces.h"
#include "hw/core/cpu.h"
#include "sysemu/rrvm.h"
#include "exec/cputlb.h"
#include "rrvm-internal.h"
#include <linux/types.h>
#ifdef CONFIG_LINUX
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/membarrier.h>
#endif
#include "replay-vm/rrlog/include/rvg_abi.h"

bool rrvm_byte_crew;            /* -rr ...,crew=byte */
bool rrvm_byte_active;          /* after the switch */

/* what the guest registered, checked (under rrvm.lock or single writer) */
static struct {
    bool registered;
    uint32_t nr_cpus;
    uint64_t ring_len, ring_nr;
    uint64_t cache_lo, cache_hi;
    uint64_t ktext_lo, ktext_hi;
    RRVMRange *excl;
    size_t n_excl;
    uint64_t n_records, n_marks;
    uint64_t shadow_len;        /* bytes of RAM the module's shadow covers */
} bc;

/* crew_rec of the CREW core (guest-module/crew/crew.h), little endian */
#define REC_MAGIC       0xc7e3
#define REC_VERSION     2
#define REC_CSUM        0xa5
#define REC_TRANSFER    1
#define REC_END         2
#define REC_MARK        3       /* replay only: nothing before seq */
#define REC_WRITE       0x01
#define REC_MORE        0x02
#define REC_EXT         0x04
#define REC_OWNERS      4
#define REC_OFF_SITE_PC 16      /* the access's pc (0: not known) */
#define REC_OFF_SITE    24      /* first byte taken | (length - 1) << 52 */
#define REC_OFF_OWNERS  32
#define SITE_ADDR_BITS  52
#define SITE_ADDR_MASK  ((1ULL << SITE_ADDR_BITS) - 1)
#define SEQ_BITS        56
#define SEQ_MASK        ((1ULL << SEQ_BITS) - 1)

typedef struct CrewRec {
    uint8_t b[RVG_REC_SIZE];
} CrewRec;

static RRVMCpu *rc_of(CPUState *cpu)
{
    return &rrvm.cpus[cpu->cpu_index];
}

static G_NORETURN void guest_error(CPUState *cpu, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);

/*
 * The guest broke the protocol.  Record: the recording stops with the
 * reason (what it has logged so far stays readable).  Replay: the run
 * diverged from its recording.
 */
static G_NORETURN void guest_error(CPUState *cpu, const char *fmt, ...)
{
    va_list ap;
    g_autofree char *msg = NULL;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (rrvm_replaying()) {
        RRVMPos p = { 0 };

        rrvm_diverged(cpu, rrvm.next_index, msg, &p, &p);
    }
    error_report("replay-vm: byte CREW: vCPU %d: %s; recording stopped",
                 cpu ? cpu->cpu_index : -1, msg);
    rrvm_record_abort("the guest module broke the byte-CREW protocol");
    _exit(1);
}

/* ---- guest memory ------------------------------------------------------ */

/*
 * Map [gpa, gpa + len) of guest RAM for the host's own use; NULL unless all
 * of it is RAM and contiguous.  Writes through it are not device writes
 * (not logged): only module-private, hash-excluded memory is written.
 */
static void *map_ram(uint64_t gpa, uint64_t len)
{
    hwaddr l = len;
    void *p;

    if (!len || gpa + len < gpa) {
        return NULL;
    }
    p = address_space_map(&address_space_memory, gpa, &l, true,
                          MEMTXATTRS_UNSPECIFIED);
    if (!p) {
        return NULL;
    }
    if (l != len || !memory_access_is_direct(
            address_space_translate(&address_space_memory, gpa, &l, &l,
                                    true, MEMTXATTRS_UNSPECIFIED), true)) {
        address_space_unmap(&address_space_memory, p, l, true, 0);
        return NULL;
    }
    return p;
}

static uint64_t page_ld64(RRVMCpu *rc, unsigned off)
{
    return qatomic_read((uint64_t *)(rc->bpage + off));
}

static void page_st64(RRVMCpu *rc, unsigned off, uint64_t v)
{
    qatomic_set((uint64_t *)(rc->bpage + off), v);
}

/* ---- registration ------------------------------------------------------ */

static int cmp_range(const void *a, const void *b)
{
    const RRVMRange *x = a, *y = b;

    return x->gpa < y->gpa ? -1 : x->gpa > y->gpa;
}

static void do_register(CPUState *cpu, uint64_t desc_gpa)
{
    struct rvg_desc d;
    int n = rrvm.n_cpus;

    if (bc.registered) {
        guest_error(cpu, "the module registered twice");
    }
    if (desc_gpa & 7 || address_space_read(&address_space_memory, desc_gpa,
                                           MEMTXATTRS_UNSPECIFIED, &d,
                                           sizeof(d)) != MEMTX_OK) {
        guest_error(cpu, "descriptor at 0x%" PRIx64 " is not readable RAM",
                    desc_gpa);
    }
    /* 3 only added a command: recordings of 2's modules still replay */
    if (le32_to_cpu(d.version) < RVG_ABI_MIN_VERSION ||
        le32_to_cpu(d.version) > RVG_ABI_VERSION) {
        guest_error(cpu, "the module speaks ABI version %u, QEMU %u to %u",
                    le32_to_cpu(d.version), RVG_ABI_MIN_VERSION,
                    RVG_ABI_VERSION);
    }
    if (le32_to_cpu(d.nr_cpus) != (uint32_t)n || n > RVG_MAX_CPUS) {
        guest_error(cpu, "the module registered %u vCPUs, the VM has %d "
                    "(byte CREW: at most %d)", le32_to_cpu(d.nr_cpus), n,
                    RVG_MAX_CPUS);
    }
    bc.ring_len = le64_to_cpu(d.ring_len);
    if (bc.ring_len < RVG_RING_HDR + RVG_REC_SIZE ||
        bc.ring_len > (64 << 20) ||
        !is_power_of_2((bc.ring_len - RVG_RING_HDR) / RVG_REC_SIZE) ||
        (bc.ring_len - RVG_RING_HDR) % RVG_REC_SIZE) {
        guest_error(cpu, "bad ring size %" PRIu64, bc.ring_len);
    }
    bc.ring_nr = (bc.ring_len - RVG_RING_HDR) / RVG_REC_SIZE;
    for (int i = 0; i < n; i++) {
        RRVMCpu *rc = &rrvm.cpus[i];
        uint64_t vg = le64_to_cpu(d.vcpu_gpa[i]);
        uint64_t rg = le64_to_cpu(d.ring_gpa[i]);

        if (vg & (RVG_VCPU_SIZE - 1) || !(rc->bpage = map_ram(vg,
                                                              RVG_VCPU_SIZE))) {
            guest_error(cpu, "vCPU %d's area at 0x%" PRIx64 " is not aligned "
                        "RAM", i, vg);
        }
        if (rg & 63 || !(rc->bring = map_ram(rg, bc.ring_len))) {
            guest_error(cpu, "vCPU %d's ring at 0x%" PRIx64 "+%" PRIu64
                        " is not contiguous RAM", i, rg, bc.ring_len);
        }
        qemu_mutex_init(&rc->bring_lock);
        g_queue_init(&rc->byte_q);
        rc->bidx = g_new0(uint64_t, bc.ring_nr);
    }
    bc.cache_lo = le64_to_cpu(d.cache_lo);
    bc.cache_hi = le64_to_cpu(d.cache_hi);
    if (bc.cache_hi <= bc.cache_lo || bc.cache_hi - bc.cache_lo > (1 << 30)) {
        guest_error(cpu, "bad code cache range 0x%" PRIx64 "-0x%" PRIx64,
                    bc.cache_lo, bc.cache_hi);
    }
    bc.ktext_lo = le64_to_cpu(d.ktext_lo);
    bc.ktext_hi = le64_to_cpu(d.ktext_hi);
    if (bc.ktext_hi <= bc.ktext_lo) {
        bc.ktext_lo = bc.ktext_hi = 0;  /* (only a diagnostic) */
    }
    bc.n_excl = le64_to_cpu(d.n_excl);
    if (bc.n_excl > RVG_MAX_EXCL) {
        guest_error(cpu, "%zu excluded ranges (at most %d)", bc.n_excl,
                    RVG_MAX_EXCL);
    }
    bc.excl = g_new0(RRVMRange, bc.n_excl + 1);
    if (bc.n_excl && address_space_read(&address_space_memory,
                                        le64_to_cpu(d.excl_gpa),
                                        MEMTXATTRS_UNSPECIFIED, bc.excl,
                                        bc.n_excl * sizeof(RRVMRange))
                     != MEMTX_OK) {
        guest_error(cpu, "excluded-range list is not readable RAM");
    }
    /* the shadow memory is module-private too */
    bc.excl[bc.n_excl].gpa = le64_to_cpu(d.shadow_gpa);
    bc.excl[bc.n_excl].len = le64_to_cpu(d.shadow_len);
    bc.shadow_len = le64_to_cpu(d.shadow_len);
    bc.n_excl++;
    for (size_t i = 0; i < bc.n_excl; i++) {
        bc.excl[i].gpa = le64_to_cpu(bc.excl[i].gpa);
        bc.excl[i].len = le64_to_cpu(bc.excl[i].len);
        if (bc.excl[i].gpa + bc.excl[i].len < bc.excl[i].gpa) {
            guest_error(cpu, "excluded range %zu wraps around", i);
        }
    }
    qsort(bc.excl, bc.n_excl, sizeof(RRVMRange), cmp_range);
    if (rrvm_debug) {
        for (size_t i = 0; i < bc.n_excl; i++) {
            fprintf(stderr, "rrvm: excluded 0x%" PRIx64 "+0x%" PRIx64 "\n",
                    bc.excl[i].gpa, bc.excl[i].len);
        }
    }
    rrvm_set_ram_hash_exclusions(bc.excl, bc.n_excl);
    /* the module reads this only after the switch (see the header) */
    d.host_mode = cpu_to_le64(rrvm_recording() ? RVG_MODE_RECORD
                                               : RVG_MODE_REPLAY);
    d.host_status = 0;
    address_space_write(&address_space_memory, desc_gpa,
                        MEMTXATTRS_UNSPECIFIED, &d, 24);
    for (int i = 0; i < n; i++) {
        page_st64(&rrvm.cpus[i], RVG_OFF_MODE, le64_to_cpu(d.host_mode));
    }
    bc.registered = true;
    info_report("replay-vm: byte CREW: guest module registered (%d vCPUs, "
                "rings of %" PRIu64 " records, %zu excluded ranges)", n,
                bc.ring_nr, bc.n_excl);
}

/* ---- CREW state of a vCPU (record) ------------------------------------- */

/*
 * BLOCKED while the vCPU cannot have an instrumented access in flight and
 * will not make one soon: user mode, halted, parked by the host.  ACTIVE
 * is set with a locked exchange (a full fence) before it runs kernel code.
 */
/*
 * The host blocks a vCPU that runs user code, is halted or waits outside
 * the guest (I/O, a hold), and unblocks it when it is back in the kernel.
 * It only moves the state between ACTIVE and its own HOST_BLOCKED: the
 * guest blocks itself too (the module's slow path, around its lock
 * spins), and a host unblock on the way back from a wait the spin made
 * (a host wait, a hold) used to write ACTIVE over that: a vCPU spinning
 * for a granule lock whose holder waited for it to move or block, and
 * neither did (a 4-vCPU recording hung so, 2026-11-29).  Read first, not
 * cached: the guest's own ACTIVE at the end of its slow path may replace
 * HOST_BLOCKED while the host still thinks the vCPU blocked.
 */
void rrvm_byte_set_blocked(CPUState *cpu, bool blocked)
{
    RRVMCpu *rc = rc_of(cpu);
    uint32_t *st;

    if (!rrvm_byte_active || !rrvm_recording()) {
        return;
    }
    st = (uint32_t *)(rc->bpage + RVG_OFF_STATE);
    if (blocked) {
        /* (a full barrier: the vCPU's accesses are done before it says so) */
        if (qatomic_read(st) == RVG_STATE_ACTIVE) {
            qatomic_cmpxchg(st, RVG_STATE_ACTIVE, RVG_STATE_HOST_BLOCKED);
        }
    } else if (qatomic_read(st) == RVG_STATE_HOST_BLOCKED) {
        qatomic_cmpxchg(st, RVG_STATE_HOST_BLOCKED, RVG_STATE_ACTIVE);
    }
}

/* ---- positions --------------------------------------------------------- */

uint64_t rrvm_byte_dp(CPUState *cpu)
{
    RRVMCpu *rc = rc_of(cpu);

    return rc->dp_base - page_ld64(rc, RVG_OFF_DP_REMAIN);
}

uint64_t rrvm_byte_dp_pc(CPUState *cpu)
{
    return page_ld64(rc_of(cpu), RVG_OFF_DP_PC);
}

uint64_t rrvm_byte_seq(CPUState *cpu)
{
    return page_ld64(rc_of(cpu), RVG_OFF_SEQ) & SEQ_MASK;
}

/* Ring the doorbell at the @n-th det point from here (vCPU thread only). */
void rrvm_byte_arm(CPUState *cpu, uint64_t n)
{
    RRVMCpu *rc = rc_of(cpu);
    uint64_t dp = rrvm_byte_dp(cpu);

    page_st64(rc, RVG_OFF_DP_REMAIN, n);
    rc->dp_base = dp + n;
}

bool rrvm_byte_in_cache(uint64_t pc)
{
    return pc >= bc.cache_lo && pc < bc.cache_hi;
}

/*
 * Is the vCPU where a byte-mode position names it exactly?  User mode at
 * an instruction boundary, halted, or stopped at a doorbell.
 */
bool rrvm_byte_exact(CPUState *cpu, bool user)
{
    return !rrvm_byte_active || user || cpu->halted || rc_of(cpu)->point;
}

int rrvm_byte_point(CPUState *cpu)
{
    return rc_of(cpu)->point;
}

bool rrvm_byte_at_doorbell(CPUState *cpu)
{
    return rc_of(cpu)->point == 1;
}

/* a halted vCPU wakes: where it halted is an exact point */
void rrvm_byte_woke(CPUState *cpu)
{
    if (rrvm_byte_active && rrvm_target_cpl(cpu) != 3) {
        rc_of(cpu)->point = 2;
    }
}

void rrvm_byte_leave_point(CPUState *cpu)
{
    if (rc_of(cpu)->point && rrvm_debug) {
        fprintf(stderr, "rrvm: vcpu %d leaves point %d dp=%" PRIu64 "\n",
                cpu->cpu_index, rc_of(cpu)->point, rrvm_byte_dp(cpu));
    }
    /* a delivery leaves its point first; it ends when guest code runs */
    if (!rc_of(cpu)->point) {
        rc_of(cpu)->delivering = false;
    }
    rc_of(cpu)->point = 0;
}

/*
 * An interrupt goes in here: until the vCPU runs guest code again, what
 * its delivery takes (user=page: a kernel stack page that was a page
 * table) is logged at the interrupt's position (crew-page.c), where a
 * replay meets it before delivering.
 */
void rrvm_byte_delivering(CPUState *cpu)
{
    RRVMCpu *rc = rc_of(cpu);

    rrvm_pos_of(cpu, 0, &rc->deliver_pos);
    rc->delivering = true;
}

/*
 * Top of every cpu_exec loop iteration (record and replay): an entry into
 * the kernel from user mode counts as a branch, so that (branches, det
 * points) orders every position; the CREW state follows the mode.
 */
/*
 * After the switch, kernel text must only run translated (from the code
 * cache): code run natively has neither ownership checks nor det points,
 * so a recording would not replay and a vCPU waiting for it may wait
 * forever.  Sampled between TBs; a guest module bug, said a few times.
 */
static void note_native(CPUState *cpu)
{
    static int said;
    uint64_t pc = rrvm_target_pc(cpu), top, sp;

    if (pc < bc.ktext_lo || pc >= bc.ktext_hi) {
        return;
    }
    /* the module's own runtime (translator, slow paths) calls kernel
     * helpers natively, on its private stack: that is by design */
    top = page_ld64(rc_of(cpu), RVG_OFF_PRIV_TOP);
    sp = rrvm_target_sp(cpu);
    if (sp <= top && top - sp < RVG_PRIV_STACK_SIZE) {
        return;
    }
    /*
     * Read first: a kernel left running natively passes here millions of
     * times a second, and the count must not wrap.
     */
    if (qatomic_read(&said) < 8 && qatomic_fetch_inc(&said) < 8) {
        warn_report("replay-vm: vCPU %d runs kernel text natively at 0x%"
                    PRIx64 " (byte CREW; last det point 0x%" PRIx64 ")",
                    cpu->cpu_index, pc, rrvm_byte_dp_pc(cpu));
    }
}

/*
 * Record: byte CREW orders kernel memory only, so user space must share
 * nothing between vCPUs.  Threads of one process running user code on two
 * vCPUs at once break that: seen here as a vCPU going into user mode in
 * the address space (CR3's table, not its PCID) that another vCPU runs
 * user code in.  A thread that moved to another vCPU is not caught (its
 * old vCPU left user mode first), nor is memory that two processes map
 * together.  Counted, said at the end and kept in the End record: whether
 * such a recording replays depends on those threads' shared data not
 * racing, which nothing here orders.
 */
static uint64_t user_as[RRVM_MAX_CPUS];     /* 0: not in user mode */
static struct {
    uint64_t count, as, pc, vcpus;
} user_par;

static void note_user_as(CPUState *cpu, bool enter)
{
    uint64_t as = enter ? rrvm_target_as(cpu) | 1 : 0;
    CPUState *o;

    qatomic_set(&user_as[cpu->cpu_index], as);
    if (!enter) {
        return;
    }
    smp_mb();               /* of two vCPUs entering at once, one sees */
    CPU_FOREACH(o) {
        if (o == cpu || qatomic_read(&user_as[o->cpu_index]) != as) {
            continue;
        }
        if (qatomic_fetch_inc(&user_par.count) == 0) {
            user_par.as = as & ~1ULL;
            user_par.pc = rrvm_target_pc(cpu);
            user_par.vcpus = (1ULL << cpu->cpu_index) | (1ULL << o->cpu_index);
        }
        return;
    }
}

void rrvm_byte_user_summary(Rr__End *end)
{
    uint64_t n = qatomic_read(&user_par.count);
    int a = -1, b = -1;

    if (!rrvm_byte_active || !rrvm_recording() || !n ||
        rrvm_user_page_crew) {      /* user memory ordered by page CREW */
        return;
    }
    end->user_parallel = n;
    end->user_parallel_as = user_par.as;
    end->user_parallel_vcpus = user_par.vcpus;
    end->user_parallel_pc = user_par.pc;
    for (int i = 0; i < RRVM_MAX_CPUS; i++) {
        if (user_par.vcpus & (1ULL << i)) {
            *(a < 0 ? &a : &b) = i;
        }
    }
    warn_report("replay-vm: byte CREW: user space was not share-nothing: "
                "vCPUs %d and %d ran user code of one address space (cr3 "
                "0x%" PRIx64 ") at once, %" PRIu64 " time(s), first at pc "
                "0x%" PRIx64 "; user memory is not ordered, so a replay "
                "diverges where those threads' shared data raced (record "
                "threaded programs with user=page, or crew=page)",
                a, b, user_par.as, n, user_par.pc);
}

void rrvm_byte_cpl_hook(CPUState *cpu, int cpl)
{
    RRVMCpu *rc = rc_of(cpu);

    if (cpl == 0 && bc.ktext_hi) {
        note_native(cpu);
    }
    if ((cpl == 3) != (rc->last_cpl == 3) && rrvm_recording()) {
        note_user_as(cpu, cpl == 3);
    }

    if (rc->last_cpl == 3 && cpl != 3) {
        cpu->rr_branches++;
    }
    rc->last_cpl = cpl;
    if (rrvm_recording()) {
        rrvm_byte_set_blocked(cpu, cpl == 3 || cpu->halted);
    }
}

/* Record: may this vCPU not leave cpu_exec here (exit request)? */
bool rrvm_byte_hold_exit(CPUState *cpu)
{
    if (!rrvm_recording() || rrvm_byte_exact(cpu, rrvm_target_cpl(cpu) == 3)) {
        return false;
    }
    rrvm_byte_arm(cpu, 1);
    return true;
}

/*
 * Record: an interrupt is pending.  In kernel mode it waits for the next
 * det point (or halt); true: do not look at it now.
 */
bool rrvm_byte_defer_irq(CPUState *cpu, int cpl)
{
    if (!rrvm_recording() || cpl == 3) {
        return false;
    }
    rrvm_byte_arm(cpu, 1);      /* look again at the next det point */
    return rc_of(cpu)->point != 1 && rc_of(cpu)->point != 2;
}

/* ---- the doorbell and the commands ------------------------------------- */

/*
 * "out %al, $RVG_PORT_DB" at a det point whose count reached the target
 * (@kind 1), or the guest module's C code at an MMIO det point (@kind 3:
 * an exact place, but no interrupt goes in there).
 */
void rrvm_byte_doorbell(CPUState *cpu, uintptr_t ra, int kind)
{
    if (!rrvm_byte_active) {
        return;                 /* not armed before the switch: ignore */
    }
    rc_of(cpu)->point = kind;
    if (rrvm_debug) {
        fprintf(stderr, "rrvm: vcpu %d doorbell %d dp=%" PRIu64 "\n",
                cpu->cpu_index, kind, rrvm_byte_dp(cpu));
    }
    rrvm_target_leave_after_insn(cpu, ra, 2);
}

/* the guest module's CREW_E* codes (guest-module/crew/crew.h) */
static const char *crew_error_name(uint64_t e)
{
    static const char *const names[RVG_CREW_NERR + 1] = {
        [1] = "invalid argument",
        [2] = "the transfer log is full",
        [3] = "a malformed or inconsistent record",
        [4] = "the records ended without an END record",
        [5] = "a replay wait for a vCPU that has finished and never got "
              "there",
        [6] = "replay waits form a cycle",
        [7] = "more or fewer accesses than recorded",
        [8] = "a remote fence failed",
        [9] = "the ring's consumer broke the protocol",
        [RVG_CREW_ESITE] = "an access at another pc or address than "
                           "recorded",
        [RVG_CREW_ELIVELOCK] = "an access to several ranges kept losing "
                               "one of them to other vCPUs (gave up)",
    };

    switch (e) {
    case RVG_ERR_NATIVE_RETURN:
        return "a return from native code that no call into it made";
    case RVG_ERR_CACHE_FULL:
        return "its code cache is full: a kernel block could not be "
               "translated (the kernel would have run it natively)";
    case RVG_ERR_INT3:
        return "an int3 in kernel code that nothing orders, most likely "
               "a kprobe inside a function: its handler, or the detour "
               "an optimized kprobe jumps to, would run the kernel "
               "natively (remove the kprobe before recording, or probe "
               "a function's entry, which is ordered)";
    }
    return e <= RVG_CREW_NERR && names[e] ? names[e] : "unknown code";
}

/*
 * Replay: the module met a logged transfer at an access with another pc
 * or address (CREW_ESITE).  Its record is the last one it took from the
 * ring.  What the guest wrote there is only printed.
 */
static G_NORETURN void site_diverged(CPUState *cpu)
{
    RRVMCpu *rc = rc_of(cpu);
    uint64_t tail = le64_to_cpu(qatomic_load_acquire(&((uint64_t *)
                                                       rc->bring)[1]));
    uint64_t index = rrvm.next_index;
    RRVMPos want = { .seq = rrvm_byte_seq(cpu), .dp = rrvm_byte_dp(cpu) };
    RRVMPos found = want;
    g_autofree char *msg = NULL;

    if (tail && tail <= rc->bhead && rc->bhead - tail < bc.ring_nr) {
        index = rc->bidx[(tail - 1) & (bc.ring_nr - 1)];
    }
    want.rip = page_ld64(rc, RVG_OFF_BAD_SITE);
    found.rip = page_ld64(rc, RVG_OFF_BAD_SITE + 16);
    msg = g_strdup_printf("byte CREW: the replay left the recording's path "
                          "before this transfer: access #%" PRIu64 " is at "
                          "pc 0x%" PRIx64 ", address 0x%" PRIx64 "; the "
                          "recording's was at pc 0x%" PRIx64 ", address 0x%"
                          PRIx64 " (rip = the access's pc, detpoints = the "
                          "vCPU's count now)", want.seq, found.rip,
                          page_ld64(rc, RVG_OFF_BAD_SITE + 24), want.rip,
                          page_ld64(rc, RVG_OFF_BAD_SITE + 8));
    rrvm_diverged(cpu, index, msg, &want, &found);
}

/* ---- CREW waits that sleep in the host ---------------------------------- */

#define WAIT_YIELD_NS   50000           /* first yield the core, polling */
#define WAIT_POLL_NS    10000           /* then sleep, looking this often */
#define WAIT_MAX_NS     1000000         /* then the guest looks again itself */

static uint64_t n_waits, wait_ns;

/*
 * The guest module's slow path waited a while for vCPU @id's seq to move
 * from @old (an owner's access in flight, a replay's logged order), or for
 * a lock (@id RVG_WAIT_ANY).  Spinning in guest code would keep this thread
 * on a host core that the vCPU it waits for may need: vCPU threads can
 * outnumber cores, and then the owner runs only when the spinner's time
 * slice ends.  So the thread waits here, polling the owner's area, for a
 * bounded time: first yielding (the owner may be runnable on this core),
 * then sleeping (an idle core pulls in a runnable thread from a busy one).
 * The guest looks again either way, so nothing of this is logged or seen
 * by the guest, and a kick (a barrier, a stop) ends it.
 */
static void host_wait(CPUState *cpu, uint64_t id, uint64_t old, uint64_t how)
{
    static __thread bool slack_set;
    int64_t t0 = get_clock(), now = t0;
    uint32_t *st = NULL;

    if (!bc.registered) {
        guest_error(cpu, "a CREW wait before registering");
    }
    if (id != RVG_WAIT_ANY && (id >= (uint64_t)rrvm.n_cpus ||
                               id == (uint64_t)cpu->cpu_index)) {
        guest_error(cpu, "a CREW wait for vCPU %" PRIu64 " (the VM has %d, "
                    "this is %d)", id, rrvm.n_cpus, cpu->cpu_index);
    }
    if (how & ~(uint64_t)RVG_WAIT_ACTIVE) {
        guest_error(cpu, "a CREW wait with unknown flags 0x%" PRIx64, how);
    }
#ifdef CONFIG_LINUX
    if (!slack_set) {
        /* the default 50 us of timer slack would dwarf the poll period */
        prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0);
        slack_set = true;
    }
#endif
    if (id != RVG_WAIT_ANY) {
        st = (uint32_t *)(rrvm.cpus[id].bpage + RVG_OFF_STATE);
    }
    /* a translation may wait for this vCPU to be between blocks */
    tlb_code_store_park(cpu, true);
    for (;;) {
        struct timespec ts = { 0, WAIT_POLL_NS };

        if (st && (page_ld64(&rrvm.cpus[id], RVG_OFF_SEQ) != old ||
                   qatomic_read(st) == RVG_STATE_FINISHED ||
                   ((how & RVG_WAIT_ACTIVE) &&
                    qatomic_read(st) != RVG_STATE_ACTIVE))) {
            break;
        }
        if (qatomic_read(&cpu->exit_request) || now - t0 >= WAIT_MAX_NS) {
            break;
        }
        if (now - t0 < WAIT_YIELD_NS) {
            sched_yield();
        } else {
            nanosleep(&ts, NULL);
        }
        now = get_clock();
        if (!st) {
            break;
        }
    }
    tlb_code_store_park(cpu, false);
    qatomic_inc(&n_waits);
    qatomic_add(&wait_ns, now - t0);
}

/* ---- remote fences ----------------------------------------------------- */

static int fence_state;         /* 0: not asked yet, 1: offered, -1: not */
static uint64_t n_fences;

/*
 * Whether a recording offers the guest module remote fences (its hello
 * says so).  Without them every instrumented access ends with a fence
 * (under MTTCG one host fence per access, ~15 % of byte CREW's time at 2
 * vCPUs); with them a transfer asks for one on the owners instead.
 * membarrier's private expedited command makes every thread of this
 * process that is running execute a full barrier before it returns (a
 * thread that is not running has passed one), and the vCPUs are threads
 * of this process whose stores are host stores.  RRVM_NO_FENCE=1 turns
 * the offer off.
 */
bool rrvm_byte_fence_offered(void)
{
    if (!fence_state) {
        fence_state = -1;
#if defined(CONFIG_LINUX) && defined(__NR_membarrier)
        if (!g_getenv("RRVM_NO_FENCE") &&
            syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
                    0, 0) == 0) {
            fence_state = 1;
        }
#endif
    }
    return fence_state > 0;
}

static void remote_fence(CPUState *cpu, uint64_t mask)
{
    if (!rrvm_recording() || qatomic_read(&fence_state) <= 0) {
        guest_error(cpu, "a remote fence this host did not offer");
    }
    if (mask >> rrvm.n_cpus) {
        guest_error(cpu, "a remote fence on vCPUs 0x%" PRIx64 " (the VM has "
                    "%d)", mask, rrvm.n_cpus);
    }
#if defined(CONFIG_LINUX) && defined(__NR_membarrier)
    if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0)) {
        guest_error(cpu, "membarrier failed: %s", strerror(errno));
    }
#endif
    qatomic_inc(&n_fences);
}

void rrvm_byte_report_waits(void)
{
    if (bc.registered) {
        info_report("replay-vm: byte CREW: %" PRIu64 " long CREW wait(s) "
                    "handed to the host, %" PRIu64 " ms in all",
                    qatomic_read(&n_waits),
                    qatomic_read(&wait_ns) / 1000000);
        if (rrvm_recording()) {
            info_report("replay-vm: byte CREW: %" PRIu64 " remote fence(s)%s",
                        qatomic_read(&n_fences), fence_state > 0 ? "" :
                        " (not offered: every release fenced)");
        }
    }
}

static void switch_to_byte(CPUState *self, uintptr_t ra);
static void drain(CPUState *cpu, RRVMCpu *rc, bool mark);
static void refill(CPUState *cpu, uintptr_t ra);

void rrvm_byte_command(CPUState *cpu, uint32_t cmd, uint64_t a0, uint64_t a1,
                       uint64_t a2, uintptr_t ra)
{
    switch (cmd) {
    case RVG_CMD_WAIT:
        host_wait(cpu, a0, a1, a2);
        break;
    case RVG_CMD_FENCE:
        remote_fence(cpu, a0);
        break;
    case RVG_CMD_REGISTER:
        do_register(cpu, a0);
        break;
    case RVG_CMD_BYTE_ON:
        /* (a replay has switched already, at the logged barrier) */
        if (!bc.registered || (rrvm_recording() && rrvm_byte_active)) {
            guest_error(cpu, "switch to byte CREW %s",
                        bc.registered ? "asked twice" : "before registering");
        }
        switch_to_byte(cpu, ra);
        break;
    case RVG_CMD_DRAIN:
        if (bc.registered && rrvm_recording()) {
            RRVMCpu *rc = rc_of(cpu);

            qemu_mutex_lock(&rc->bring_lock);
            drain(cpu, rc, true);
            qemu_mutex_unlock(&rc->bring_lock);
        }
        break;
    case RVG_CMD_REFILL:
        if (bc.registered && rrvm_replaying()) {
            refill(cpu, ra);
        }
        break;
    case RVG_CMD_ERROR:
        if (a0 == RVG_CREW_ESITE && rrvm_replaying()) {
            site_diverged(cpu);
        }
        guest_error(cpu, "the guest module reports %s error %" PRIu64
                    " (%s), at %s 0x%" PRIx64,
                    a0 < RVG_ERR_NATIVE_RETURN ? "CREW" : "translator", a0,
                    crew_error_name(a0),
                    a0 == RVG_ERR_NATIVE_RETURN ? "stack pointer" : "pc", a1);
    default:
        guest_error(cpu, "unknown command %u", cmd);
    }
}

/* ---- the switch -------------------------------------------------------- */

static void flip(void)
{
    CPUState *o;

    /*
     * page CREW goes on for user addresses only (user=page), or off; TLB
     * entries it no longer covers miss and refill with every right
     */
    rrvm_page_crew = rrvm_user_page_crew;
    CPU_FOREACH(o) {
        RRVMCpu *rc = rc_of(o);

        /* the module starts every count at RVG remain = dp_base: count 0 */
        rc->dp_base = page_ld64(rc, RVG_OFF_DP_REMAIN);
        rc->last_cpl = -1;
        if (rrvm_recording()) {
            /* registered BLOCKED: the host lifts it in kernel code */
            qatomic_cmpxchg((uint32_t *)(rc->bpage + RVG_OFF_STATE),
                            RVG_STATE_BLOCKED, RVG_STATE_HOST_BLOCKED);
        }
        /* new TBs count user branches only (the flag is part of the key) */
        o->tcg_cflags |= RRVM_CF_BYTE;
        rrvm_target_kick(o);
    }
    qatomic_set(&rrvm_byte_active, true);
}

/*
 * Record: every other vCPU held at a page-mode position between TBs (one
 * caught inside an I/O access is let go and tried again), the barrier
 * logged, then the flip.  Replay: the logged barrier is met like a
 * checkpoint (replay.c), which calls rrvm_byte_replay_flip().
 */
static void switch_to_byte(CPUState *self, uintptr_t ra)
{
    RRVMPos mine;

    if (rrvm_replaying()) {
        /* the barrier was met before this instruction ran (replay.c) */
        if (!rrvm_byte_active) {
            guest_error(self, "the guest asked for byte CREW where the "
                        "recording did not switch");
        }
        rrvm_target_leave_after_insn(self, ra, 2);
    }
    rrvm_pos_of(self, ra, &mine);
    for (int tries = 0;; tries++) {
        if (rrvm_record_switch(self, &mine)) {
            break;
        }
        if (tries > 10000) {
            guest_error(self, "could not hold every vCPU between "
                        "instructions for the switch");
        }
        g_usleep(1000);
    }
    info_report("replay-vm: byte CREW on: kernel ownership from the guest "
                "module, kernel interrupts at deterministic points");
    rrvm_target_leave_after_insn(self, ra, 2);
}

/* called with every vCPU held, by record.c (logged) and replay.c (met) */
void rrvm_byte_flip_held(void)
{
    flip();
}

/* ---- record: draining the rings ---------------------------------------- */

static uint64_t le64(const uint8_t *p)
{
    return ldq_le_p(p);
}

/* a record the guest wrote; NULL if fine, else what is wrong */
static const char *check_rec(const CrewRec *r, uint32_t acq)
{
    unsigned n = r->b[5], sum = 0, last = 0;
    uint64_t site;

    for (int i = 0; i < RVG_REC_SIZE; i++) {
        sum += r->b[i];
    }
    if (lduw_le_p(r->b) != REC_MAGIC || r->b[2] != REC_VERSION) {
        return "bad magic or version";
    }
    if ((sum & 0xff) != REC_CSUM) {
        return "bad checksum";
    }
    if (r->b[3] != REC_TRANSFER) {
        return r->b[3] == REC_END ? "unexpected END record" : "bad type";
    }
    if (r->b[4] != acq) {
        return "acquirer is not the ring's vCPU";
    }
    if (n < 1 || n > REC_OWNERS || (r->b[6] & ~(REC_WRITE | REC_MORE))) {
        return "bad owner count or flags";
    }
    if (le64(r->b + 8) >> SEQ_BITS) {
        return "acquirer sequence number out of range";
    }
    site = le64(r->b + REC_OFF_SITE);
    if ((site & SITE_ADDR_MASK) + (site >> SITE_ADDR_BITS) >= bc.shadow_len) {
        return "site address outside the RAM the shadow covers";
    }
    for (unsigned i = 0; i < REC_OWNERS; i++) {
        uint64_t o = le64(r->b + REC_OFF_OWNERS + 8 * i);
        unsigned id = o >> SEQ_BITS;

        if (i >= n) {
            if (o) {
                return "unused owner slot not zero";
            }
            continue;
        }
        if (id >= (unsigned)rrvm.n_cpus || id == acq || (i && id <= last)) {
            return "bad owner id";
        }
        last = id;
    }
    return NULL;
}

/*
 * The site goes in as the event's rip, addr and len: a replay gives it
 * back to the module, which checks it against the access it meets there.
 */
static void log_transfer(uint32_t acq, uint64_t seq, bool write,
                         const uint64_t *owners, int n, uint64_t pc,
                         uint64_t site)
{
    Rr__VcpuPos vp[RVG_MAX_CPUS], *vpp[RVG_MAX_CPUS];
    Rr__Position pp[RVG_MAX_CPUS];
    rr_pos p = { .crew_seq = seq, .rip = pc };
    uint64_t len = n ? (site >> SITE_ADDR_BITS) + 1 : 0;
    rr_event_buf b;

    for (int i = 0; i < n; i++) {
        rr_pos op = { .crew_seq = owners[i] & SEQ_MASK };

        rr_vcpu_pos_init(&vp[i], &pp[i], owners[i] >> SEQ_BITS, &op);
        vpp[i] = &vp[i];
    }
    rrvm_append(rr_ev_crew_transfer(&b, acq, &p,
                                    RR__CREW_TRANSFER__GRANULARITY__BYTE,
                                    n ? site & SITE_ADDR_MASK : 0, len,
                                    write, n, vpp));
}

/*
 * Consume what the guest produced.  The guest's head is untrusted; the
 * host keeps its own tail.  A MORE chain (more owners than fit one
 * record) becomes one event.  @mark: also log how far this vCPU's
 * sequence has got (replay reads ahead no further than that).
 */
static void drain(CPUState *cpu, RRVMCpu *rc, bool mark)
{
    uint64_t *hdr = (uint64_t *)rc->bring;
    uint64_t seq_now = rrvm_byte_seq(cpu);      /* before the head */
    uint64_t head = qatomic_load_acquire(&hdr[0]);
    uint64_t owners[RVG_MAX_CPUS];
    int n = 0;

    if (head < rc->btail || head - rc->btail > bc.ring_nr) {
        guest_error(cpu, "ring head %" PRIu64 " is impossible (host tail %"
                    PRIu64 ", %" PRIu64 " slots)", head, rc->btail,
                    bc.ring_nr);
    }
    while (rc->btail < head) {
        CrewRec r;
        const char *bad;
        const uint8_t *src = rc->bring + RVG_RING_HDR +
                             (rc->btail & (bc.ring_nr - 1)) * RVG_REC_SIZE;

        memcpy(&r, src, sizeof(r));         /* copy, then check the copy */
        if ((bad = check_rec(&r, cpu->cpu_index))) {
            guest_error(cpu, "record %" PRIu64 " of its ring: %s", rc->btail,
                        bad);
        }
        for (int i = 0; i < r.b[5]; i++) {
            if (n == RVG_MAX_CPUS) {
                guest_error(cpu, "record %" PRIu64 ": MORE chain names too "
                            "many owners", rc->btail);
            }
            owners[n++] = le64(r.b + REC_OFF_OWNERS + 8 * i);
        }
        rc->btail++;
        if (r.b[6] & REC_MORE) {
            if (rc->btail == head) {
                /* the rest is not there yet: take the chain again later */
                rc->btail -= 1 + (n - r.b[5]) / REC_OWNERS;
                break;
            }
            continue;
        }
        log_transfer(cpu->cpu_index, le64(r.b + 8) & SEQ_MASK,
                     r.b[6] & REC_WRITE, owners, n,
                     le64(r.b + REC_OFF_SITE_PC), le64(r.b + REC_OFF_SITE));
        bc.n_records++;
        n = 0;
    }
    qatomic_store_release(&hdr[1], cpu_to_le64(rc->btail));
    if (mark && seq_now > rc->bmark) {
        /* "no transfer of this vCPU before seq_now is still to come" */
        log_transfer(cpu->cpu_index, seq_now, false, NULL, 0, 0, 0);
        rc->bmark = seq_now;
        bc.n_marks++;
    }
}

/* Periodically (flusher thread) and at the end: drain every ring. */
void rrvm_byte_drain_all(bool final)
{
    CPUState *o;

    if (!bc.registered || !rrvm_recording()) {
        return;
    }
    CPU_FOREACH(o) {
        RRVMCpu *rc = rc_of(o);

        qemu_mutex_lock(&rc->bring_lock);
        drain(o, rc, rrvm_byte_active);
        qemu_mutex_unlock(&rc->bring_lock);
    }
    if (final && rrvm_byte_active) {
        info_report("replay-vm: byte CREW: %" PRIu64 " ownership transfers "
                    "logged; %" PRIu64 " vCPU position(s) logged inside a "
                    "kernel exception's entry", bc.n_records,
                    qatomic_read(&rrvm.exc_positions));
        rrvm_byte_report_waits();
    }
}

/*
 * Record with a trained list: the module counts accesses by instructions
 * not on the list to bytes another vCPU owned.  They are logged like any
 * transfer, but their sites release without a fence (crew.h hole 1 stays
 * open there) and they show the list is incomplete.  The numbers sit in
 * each vCPU's area (guest memory: only reported, never trusted) and go
 * into the End record; a non-zero count is said now, while the user can
 * still retrain.
 */
#define UNTRAINED_PCS_MAX 64

void rrvm_byte_untrained_summary(Rr__End *end)
{
    static uint64_t pcs[UNTRAINED_PCS_MAX];
    uint64_t total = 0;
    size_t n = 0, j;
    CPUState *o;
    int i;

    if (!bc.registered || !rrvm_recording()) {
        return;
    }
    CPU_FOREACH(o) {
        RRVMCpu *rc = rc_of(o);
        uint64_t c = page_ld64(rc, RVG_OFF_UNTRAINED);

        total = total + c < total ? UINT64_MAX : total + c;
        for (i = 0; i < RVG_UNTRAINED_PCS && n < UNTRAINED_PCS_MAX; i++) {
            uint64_t pc = page_ld64(rc, RVG_OFF_UNTRAINED_PC + 8 * i);

            if (!pc) {
                break;
            }
            for (j = 0; j < n && pcs[j] != pc; j++) {
            }
            if (j == n) {
                pcs[n++] = pc;
            }
        }
    }
    if (!total) {
        return;
    }
    end->untrained_shared = total;
    end->n_untrained_pcs = n;
    end->untrained_pcs = pcs;
    warn_report("replay-vm: byte CREW: %" PRIu64 " access(es) by instructions "
                "not in the trained list to bytes another vCPU owned (%zu "
                "pc(s), first 0x%" PRIx64 "): logged, but their sites run "
                "without the fenced release; train with this workload to "
                "list them", total, n, n ? pcs[0] : 0);
}

/* ---- replay: feeding the rings ----------------------------------------- */

static void put_rec(RRVMCpu *rc, uint64_t head, const CrewRec *r)
{
    memcpy(rc->bring + RVG_RING_HDR + (head & (bc.ring_nr - 1)) *
           RVG_REC_SIZE, r, sizeof(*r));
}

static void seal(CrewRec *r)
{
    unsigned sum = 0;

    r->b[7] = 0;
    for (int i = 0; i < RVG_REC_SIZE; i++) {
        sum += r->b[i];
    }
    r->b[7] = (uint8_t)(REC_CSUM - sum);
}

/* records for one logged transfer (or mark); how many were written */
static int ev_to_recs(const Rr__Event *ev, CrewRec out[2], uint64_t index)
{
    const Rr__CrewTransfer *t = ev->crew_transfer;
    rr_pos p = rr_pos_from(ev->pos);
    size_t n = t->n_prev_owners, k = 0;
    uint64_t site = 0;
    bool has_site = t->len != 0;    /* no: a mark, or a log without sites */
    int nrec = 0;

    if (n > RVG_MAX_CPUS - 1 || (p.crew_seq >> SEQ_BITS)) {
        rrvm_bad_log("byte CREW transfer with too many owners or a bad "
                     "sequence number", index);
    }
    if (has_site) {
        if (!n || t->len > 4096 || t->addr > SITE_ADDR_MASK) {
            rrvm_bad_log("byte CREW transfer with a bad site", index);
        }
        site = t->addr | (t->len - 1) << SITE_ADDR_BITS;
    }
    do {
        CrewRec *r = &out[nrec++];
        size_t m = MIN(n - k, REC_OWNERS);

        memset(r, 0, sizeof(*r));
        stw_le_p(r->b, REC_MAGIC);
        r->b[2] = REC_VERSION;
        r->b[3] = n ? REC_TRANSFER : REC_MARK;
        r->b[4] = ev->vcpu;
        r->b[5] = m;
        r->b[6] = (t->write ? REC_WRITE : 0) | (k + m < n ? REC_MORE : 0);
        stq_le_p(r->b + 8, p.crew_seq);
        if (has_site) {
            stq_le_p(r->b + REC_OFF_SITE_PC, p.rip);
            stq_le_p(r->b + REC_OFF_SITE, site);
        }
        for (size_t i = 0; i < m; i++) {
            const Rr__VcpuPos *o = t->prev_owners[k + i];
            uint64_t s = rr_pos_from(o->pos).crew_seq;

            if (o->vcpu >= (uint32_t)rrvm.n_cpus || o->vcpu == ev->vcpu ||
                (s >> SEQ_BITS)) {
                rrvm_bad_log("byte CREW transfer names a bad owner", index);
            }
            stq_le_p(r->b + REC_OFF_OWNERS + 8 * i,
                     (uint64_t)o->vcpu << SEQ_BITS | s);
        }
        k += m;
        seal(r);
    } while (k < n);
    return nrec;
}

/* replay.c queues byte transfers here (under rrvm.lock) */
void rrvm_byte_queue(RRVMItem *it)
{
    g_queue_push_tail(&rrvm.cpus[it->ev->vcpu].byte_q, it);
}

/* a record that only says "nothing before @seq" (the guest reads on) */
static void mark_rec(CrewRec *r, int vcpu, uint8_t type, uint64_t seq)
{
    memset(r, 0, sizeof(*r));
    stw_le_p(r->b, REC_MAGIC);
    r->b[2] = REC_VERSION;
    r->b[3] = type;
    r->b[4] = vcpu;
    stq_le_p(r->b + 8, seq);
    seal(r);
}

/*
 * --until N and a vCPU's first transfer numbered N or more: the guest
 * gets a mark one access before that transfer's seq instead (or at the
 * last record's seq, if that is later), reads on to it, and asks again
 * with its ring empty: it then holds still, in the host, at that access
 * (the same one on every replay), until the debugger lets the VM go on
 * and the REFILL runs again.  true: hold.
 */
static bool until_point(CPUState *cpu, RRVMCpu *rc, RRVMItem *it,
                        uint64_t *head, uint64_t tail)
{
    uint64_t seq = rr_pos_from(it->ev->pos).crew_seq;
    CrewRec r;

    if (!rc->buntil_mark) {
        mark_rec(&r, cpu->cpu_index, REC_MARK,
                 MAX(seq ? seq - 1 : 0, rc->bseq_last));
        rc->bidx[*head & (bc.ring_nr - 1)] = it->index;
        put_rec(rc, (*head)++, &r);
        rc->buntil_mark = true;
        return false;
    }
    return *head == tail && rrvm_replay_until_hold_locked(cpu);
}

/*
 * The module's ring is empty: give it the next logged transfers of this
 * vCPU, reading ahead in the log as far as needed.  At the end of the log
 * an END record says no transfer will come any more.
 */
static void refill(CPUState *cpu, uintptr_t ra)
{
    RRVMCpu *rc = rc_of(cpu);
    uint64_t *hdr = (uint64_t *)rc->bring;
    uint64_t tail = le64_to_cpu(qatomic_load_acquire(&hdr[1]));
    uint64_t head = rc->bhead;
    bool hold = false;
    int put = 0;

    if (tail > head || head - tail > bc.ring_nr) {
        guest_error(cpu, "ring tail %" PRIu64 " is impossible (host head %"
                    PRIu64 ")", tail, head);
    }
    qemu_mutex_lock(&rrvm.lock);
    while (head - tail + 2 <= bc.ring_nr && put < 4096) {
        RRVMItem *it = rrvm_byte_next_locked(rc);
        CrewRec r[2];
        int k;

        if (!it) {
            if (!rc->bend_sent) {
                mark_rec(&r[0], cpu->cpu_index, REC_END, SEQ_MASK);
                put_rec(rc, head++, &r[0]);
                rc->bend_sent = true;
            }
            break;
        }
        if (it->index >= rrvm.until) {
            hold = until_point(cpu, rc, it, &head, tail);
            break;
        }
        g_queue_pop_head(&rc->byte_q);
        rc->bseq_last = rr_pos_from(it->ev->pos).crew_seq;
        k = ev_to_recs(it->ev, r, it->index);
        for (int i = 0; i < k; i++) {
            rc->bidx[head & (bc.ring_nr - 1)] = it->index;
            put_rec(rc, head++, &r[i]);
        }
        rrvm_item_release_locked(it);
        put++;
    }
    rrvm_replay_unlock();
    rc->bhead = head;
    qatomic_store_release(&hdr[0], cpu_to_le64(head));
    if (hold) {
        /* back to the main loop, where it sleeps; then this REFILL again */
        rrvm_target_restart_insn(cpu, ra);
    }
}
