/*
 * replay-vm under KVM, x86 side: registers at an exit, the checkpoint hash,
 * interrupt injection at deterministic points only (see replay-vm/kvm.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "cpu.h"
#include "exec/address-spaces.h"
#include "sysemu/kvm.h"
#include "sysemu/rrvm.h"
#include "hw/boards.h"
#include "hw/qdev-core.h"
#include "hw/i386/apic_internal.h"
#include "rrvm-kvm-x86.h"

static void get(CPUState *cs, unsigned long req, void *buf, const char *what)
{
    if (kvm_vcpu_ioctl(cs, req, buf) < 0) {
        error_report("replay-vm: cannot read the %s of vCPU %d",
                     what, cs->cpu_index);
        exit(1);
    }
}

void rrvm_kvm_arch_regs(CPUState *cs, uint64_t *rip, uint64_t *rcx)
{
    struct kvm_regs r;

    get(cs, KVM_GET_REGS, &r, "registers");
    *rip = r.rip;
    *rcx = r.rcx;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

static uint64_t state_hash(const struct kvm_regs *rp,
                           const struct kvm_sregs *sp, uint64_t rflags_mask)
{
    const struct kvm_regs r = *rp;
    const struct kvm_sregs s = *sp;
    const struct kvm_segment *seg[] = { &s.es, &s.cs, &s.ss, &s.ds, &s.fs,
                                        &s.gs };
    uint64_t h = 0x6a09e667f3bcc908ULL;
    uint64_t gp[] = { r.rax, r.rbx, r.rcx, r.rdx, r.rsi, r.rdi, r.rsp,
                      r.rbp, r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14,
                      r.r15, r.rip, r.rflags & rflags_mask };

    for (size_t i = 0; i < ARRAY_SIZE(gp); i++) {
        h = mix(h, gp[i]);
    }
    for (size_t i = 0; i < ARRAY_SIZE(seg); i++) {
        h = mix(h, seg[i]->selector);
        h = mix(h, seg[i]->base);
    }
    h = mix(h, s.cr0);
    h = mix(h, s.cr3);
    h = mix(h, s.cr4);
    return mix(h, s.efer);
}

/* From KVM itself: QEMU's copy in env is stale while the vCPU runs. */
uint64_t rrvm_kvm_arch_regs_hash(CPUState *cs)
{
    struct kvm_regs r;
    struct kvm_sregs s;
    uint64_t h;

    get(cs, KVM_GET_REGS, &r, "registers");
    get(cs, KVM_GET_SREGS, &s, "system registers");
    h = state_hash(&r, &s, ~0ULL);
    /*
     * Halted: at a HLT exit it has not left yet.  Not cs->halted alone: a
     * recording's vCPU that finds an interrupt pending at its HLT exit
     * does not halt (the interrupt is injected there before it runs on),
     * and a recording stopped right then hashes it unhalted, while its
     * replay, which has no such interrupt in the log, halts there.
     */
    return mix(h, cs->halted || cs->kvm_run->exit_reason == KVM_EXIT_HLT);
}

/*
 * Forced stops (replay-vm/kvm.c).  RF and TF are left out of the hash: the
 * replay sets RF to go on past its breakpoint where the registers differ.
 */
static uint64_t stop_hash(const struct kvm_regs *r, const struct kvm_sregs *s)
{
    uint64_t h = state_hash(r, s, ~(uint64_t)(RF_MASK | TF_MASK));

    return h ? h : 1;
}

/* What KVM_RUN's return @run_ret was, for replay-vm/kvm.c */
int rrvm_kvm_arch_run_kind(CPUState *cs, int run_ret)
{
    struct kvm_run *run = cs->kvm_run;

    if (run_ret == -EINTR || run_ret == -EAGAIN ||
        (run_ret == 0 && run->exit_reason == KVM_EXIT_INTR)) {
        return RRVM_KVM_RUN_KICKED;
    }
    return run_ret == 0 && run->exit_reason == KVM_EXIT_DEBUG ?
           RRVM_KVM_RUN_DEBUG : RRVM_KVM_RUN_EXIT;
}

bool rrvm_kvm_arch_irq_pending(CPUState *cs)
{
    return qatomic_read(&cs->interrupt_request) &
           (CPU_INTERRUPT_HARD | CPU_INTERRUPT_NMI);
}

/*
 * Copy @n bytes of guest code at guest-physical @gpa if they are in RAM or
 * ROM.  The guest decides where its rip points: the kernel's code could be
 * mapped over a device, and reading that here would be an MMIO read that
 * no log names (a device changed by it would run differently on replay).
 */
static bool read_code(uint64_t gpa, uint8_t *buf, size_t n)
{
    MemoryRegion *mr;
    hwaddr xlat, len = n;

    RCU_READ_LOCK_GUARD();
    mr = address_space_translate(&address_space_memory, gpa, &xlat, &len,
                                 false, MEMTXATTRS_UNSPECIFIED);
    if (!memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
        len < n) {
        return false;
    }
    memcpy(buf, qemu_map_ram_ptr(mr->ram_block, xlat), n);
    return true;
}

/*
 * Can a replay's instruction breakpoint find the vCPU at linear address
 * @rip again?  Not part-way through a rep string instruction (rep movs,
 * ...): the breakpoint hits at its first iteration only.
 */
static int code_at(CPUState *cs, uint64_t rip)
{
    struct kvm_translation tr = { .linear_address = rip };
    uint8_t b[15];
    size_t n = MIN(sizeof(b), TARGET_PAGE_SIZE - (rip & ~TARGET_PAGE_MASK));
    bool rep = false;

    if (kvm_vcpu_ioctl(cs, KVM_TRANSLATE, &tr) < 0 || !tr.valid ||
        !read_code(tr.physical_address, b, n)) {
        return RRVM_STOP_NO_CODE;
    }
    for (size_t i = 0; i < n; i++) {
        switch (b[i]) {
        case 0xf2: case 0xf3:
            rep = true;
            continue;
        case 0x26: case 0x2e: case 0x36: case 0x3e: case 0x64: case 0x65:
        case 0x66: case 0x67: case 0xf0: case 0x40 ... 0x4f:
            continue;               /* other prefixes, REX */
        case 0x6c ... 0x6f: case 0xa4 ... 0xa7: case 0xaa ... 0xaf:
            return rep ? RRVM_STOP_REP : RRVM_STOP_OK;
        default:
            return RRVM_STOP_OK;
        }
    }
    return RRVM_STOP_NO_CODE;       /* only prefixes on this page */
}

/*
 * Record: is the vCPU, kicked out of the guest, where a replay's hardware
 * breakpoint can find it again?  Between two kernel instructions, with
 * nothing being delivered and no interrupt shadow (which also holds off
 * an instruction breakpoint), and not part-way through a rep string
 * instruction (a breakpoint hits at its first iteration only).  @for_irq:
 * only an interrupt waits, so a place where it cannot be taken (IF clear)
 * is no use either.
 */
int rrvm_kvm_arch_stop_pos(CPUState *cs, bool for_irq, RRVMPos *pos)
{
    struct kvm_regs r;
    struct kvm_sregs s;
    struct kvm_vcpu_events ev;
    int why;

    get(cs, KVM_GET_REGS, &r, "registers");
    get(cs, KVM_GET_SREGS, &s, "system registers");
    get(cs, KVM_GET_VCPU_EVENTS, &ev, "events");
    if (s.cs.selector & 3) {
        return RRVM_STOP_USER;
    }
    if (for_irq && !(r.rflags & IF_MASK)) {
        return RRVM_STOP_NO_IF;
    }
    if (ev.exception.injected || ev.exception.pending ||
        ev.interrupt.injected || ev.interrupt.shadow || ev.nmi.injected) {
        return RRVM_STOP_EVENT;
    }
    why = code_at(cs, r.rip);
    if (why != RRVM_STOP_OK) {
        return why;
    }
    *pos = (RRVMPos) { .rip = r.rip, .rcx = r.rcx, .dp = stop_hash(&r, &s) };
    return RRVM_STOP_OK;
}

/* Replay: a hardware breakpoint at @rip (0: none) through KVM's debug API. */
void rrvm_kvm_arch_breakpoint(CPUState *cs, uint64_t rip)
{
    struct kvm_guest_debug dbg = { 0 };

    if (rip) {
        dbg.control = KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_USE_HW_BP;
        dbg.arch.debugreg[0] = rip;
        dbg.arch.debugreg[7] = 0x0600 | 2;      /* G0: execute, 1 byte */
    }
    if (kvm_vcpu_ioctl(cs, KVM_SET_GUEST_DEBUG, &dbg) < 0) {
        error_report("replay-vm: vCPU %d: KVM cannot set the breakpoint "
                     "that finds a forced stop (KVM_SET_GUEST_DEBUG)",
                     cs->cpu_index);
        exit(1);
    }
}

/*
 * Replay, at a KVM_EXIT_DEBUG: is this the forced stop @want?  If not, the
 * instruction runs on with RF set, which keeps the breakpoint from hitting
 * it again.
 */
bool rrvm_kvm_arch_at_stop(CPUState *cs, const RRVMPos *want)
{
    struct kvm_regs r;
    struct kvm_sregs s;

    get(cs, KVM_GET_REGS, &r, "registers");
    if (r.rip == want->rip && r.rcx == want->rcx &&
        (get(cs, KVM_GET_SREGS, &s, "system registers"),
         stop_hash(&r, &s) == want->dp)) {
        /* the same line in RRVM_KVM_TRACE as the recording's kick */
        cs->kvm_run->exit_reason = KVM_EXIT_INTR;
        return true;
    }
    r.rflags |= RF_MASK;
    if (kvm_vcpu_ioctl(cs, KVM_SET_REGS, &r) < 0) {
        error_report("replay-vm: vCPU %d: cannot step past a breakpoint",
                     cs->cpu_index);
        exit(1);
    }
    return false;
}

/*
 * RRVM_KVM_TRACE=FILE: one line per KVM exit (every one is a position) and
 * per injected interrupt, the same on record and replay, so that diffing
 * the two files finds the first exit that differs: exit number, reason,
 * rip, rcx, IF, the interrupt shadow, ready_for_interrupt_injection and
 * request_interrupt_window, and the port, MMIO address or RRVM insn.
 */
static FILE *trace_file(void)
{
    static FILE *f;
    static bool done;

    if (!done) {
        const char *p = g_getenv("RRVM_KVM_TRACE");

        done = true;
        f = p ? fopen(p, "w") : NULL;
        if (f) {
            setvbuf(f, NULL, _IOLBF, 0);    /* a killed run keeps its end */
        }
    }
    return f;
}

void rrvm_kvm_arch_trace_exit(CPUState *cs, struct kvm_run *run)
{
    static uint64_t n;
    FILE *f = trace_file();
    struct kvm_regs r;
    struct kvm_vcpu_events ev;
    uint64_t what = 0, gp;

    if (!f) {
        return;
    }
    get(cs, KVM_GET_REGS, &r, "registers");
    get(cs, KVM_GET_VCPU_EVENTS, &ev, "events");
    switch (run->exit_reason) {
    case KVM_EXIT_IO:
        what = run->io.port | (uint64_t)run->io.direction << 16;
        break;
    case KVM_EXIT_MMIO:
        what = run->mmio.phys_addr;
        break;
    case KVM_EXIT_RRVM:
        what = kvm_run_rrvm(run)->insn == KVM_RRVM_CREW ?
               kvm_run_rrvm(run)->gpa : kvm_run_rrvm(run)->insn;
        break;
    }
    /* the other registers, so that a diff finds where state first parts */
    gp = mix(mix(mix(mix(r.rax, r.rbx), mix(r.rdx, r.rsi)),
                 mix(mix(r.rdi, r.rsp), mix(r.rbp, r.r8))),
             mix(mix(mix(r.r9, r.r10), mix(r.r11, r.r12)),
                 mix(mix(r.r13, r.r14), mix(r.r15, r.rflags))));
    fprintf(f, "X %" PRIu64 " cpu=%d r=%x rip=%" PRIx64 " rcx=%" PRIx64
            " if=%d sh=%d ready=%d win=%d w=%" PRIx64 " gp=%" PRIx64 "\n",
            qatomic_fetch_inc(&n) + 1, cs->cpu_index, run->exit_reason,
            (uint64_t)r.rip, (uint64_t)r.rcx, !!(r.rflags & IF_MASK),
            ev.interrupt.shadow, run->ready_for_interrupt_injection,
            run->request_interrupt_window, what, gp);
}

/*
 * Replay: INIT and SIPI as the recording's kvm_arch_process_async_events
 * took them (logged there), in QEMU's CPU state; the registers go to KVM
 * now, since the vCPU enters the guest without another sync.  At the
 * level the recording's vCPU loop put them (runtime state): a reset-level
 * put would also write the MSRs cpu_reset cleared in QEMU's copy, the
 * MTRRs among them, which INIT keeps and the recording's KVM kept.
 */
static void start_ap(CPUState *cs, int kind, int vector)
{
    X86CPU *cpu = X86_CPU(cs);
    bool locked = qemu_mutex_iothread_locked();

    if (kind == RRVM_INT_SIPI &&
        !APIC_COMMON(cpu->apic_state)->wait_for_sipi) {
        /*
         * A SIPI for a vCPU not waiting for one (Linux sends two; the
         * second finds the AP started) changes nothing: the recording's
         * vCPU stayed as it was, halted if it was at a HLT.  Waking it for
         * this logged "interrupt" must not run it on.
         */
        cs->halted = cs->kvm_run->exit_reason == KVM_EXIT_HLT;
        return;
    }
    if (!locked) {
        qemu_mutex_lock_iothread();
    }
    kvm_cpu_synchronize_state(cs);
    if (kind == RRVM_INT_INIT) {
        do_cpu_init(cpu);
    } else {
        APIC_COMMON(cpu->apic_state)->sipi_vector = vector;
        do_cpu_sipi(cpu);
    }
    kvm_arch_put_registers(cs, KVM_PUT_RUNTIME_STATE);
    cs->vcpu_dirty = false;
    if (!locked) {
        qemu_mutex_unlock_iothread();
    }
}

void rrvm_kvm_arch_deliver(CPUState *cs, int kind, int vector)
{
    struct kvm_interrupt intr = { .irq = vector };
    int ret;

    if (trace_file()) {
        fprintf(trace_file(), "I kind=%d vec=%d\n", kind, vector);
    }

    switch (kind) {
    case RRVM_INT_HARD:
        ret = kvm_vcpu_ioctl(cs, KVM_INTERRUPT, &intr);
        break;
    case RRVM_INT_NMI:
        ret = kvm_vcpu_ioctl(cs, KVM_NMI);
        break;
    case RRVM_INT_SMI:
        ret = kvm_vcpu_ioctl(cs, KVM_SMI);
        break;
    case RRVM_INT_INIT:
    case RRVM_INT_SIPI:
        /* an AP's start, at the position the recording logged it */
        start_ap(cs, kind, vector);
        return;
    default:
        error_report("replay-vm: interrupt kind %d is not supported under "
                     "KVM yet", kind);
        exit(1);
    }
    if (ret < 0) {
        error_report("replay-vm: injecting interrupt %d (kind %d) into vCPU "
                     "%d failed: %s", vector, kind, cs->cpu_index,
                     strerror(-ret));
        exit(1);
    }
}

/*
 * Several vCPUs: page CREW through the patched KVM's per-vCPU page rights
 * (KVM_CAP_RRVM_CREW), over every gfn up to 4 GiB plus the RAM size (the
 * PC machine's RAM above 4 GiB ends below that), vCPU 0 owning all: it
 * starts alone.
 */
static int rrvm_kvm_arch_crew_init(KVMState *s)
{
    MachineState *ms = MACHINE(qdev_get_machine());
    uint64_t gfns = ((4ULL << 30) + ms->ram_size) >> 12;
    uint64_t init = 1 | KVM_RRVM_CREW_EXCL;
    int max, ret;

    if (ms->smp.cpus < 2) {
        return 0;
    }
    max = kvm_vm_check_extension(s, KVM_CAP_RRVM_CREW);
    if (max < (int)ms->smp.cpus) {
        error_report("replay-vm: recording or replaying %u vCPUs under KVM "
                     "needs page CREW, per-vCPU page rights from replay-vm's "
                     "patched KVM (KVM_CAP_RRVM_CREW, kvm-patches/); %s",
                     ms->smp.cpus, max > 0 ? "it serves fewer vCPUs" :
                     "this KVM lacks it (or runs without the TDP MMU)");
        return -ENOTSUP;
    }
    ret = kvm_vm_enable_cap(s, KVM_CAP_RRVM_CREW, 0, gfns, init);
    if (ret < 0) {
        error_report("replay-vm: enabling KVM_CAP_RRVM_CREW for %" PRIu64
                     " pages failed: %s", gfns, strerror(-ret));
        return ret;
    }
    rrvm_kvm_crew_init(gfns, init);
    return 0;
}

/* KVM's owner bits are vcpu_ids (APIC ids), the log's CPU indexes */
bool rrvm_kvm_arch_ids_are_indexes(void)
{
    CPUState *cs;

    CPU_FOREACH(cs) {
        if (kvm_arch_vcpu_id(cs) != cs->cpu_index) {
            return false;
        }
    }
    return true;
}

void rrvm_kvm_arch_crew_set(uint64_t gfn, uint64_t owners)
{
    struct kvm_rrvm_crew_set set = { .gfn = gfn, .owners = owners };
    int ret = kvm_vm_ioctl(kvm_state, KVM_RRVM_CREW_SET, &set);

    if (ret < 0) {
        error_report("replay-vm: KVM_RRVM_CREW_SET gfn 0x%" PRIx64 " owners 0x%"
                     PRIx64 ": %s", gfn, owners, strerror(-ret));
        exit(1);
    }
}

/*
 * kvm_arch_init when recording or replaying, before any vCPU exists (the
 * capability can only be enabled then): turn on the patched KVM's RDTSC,
 * RDTSCP and PAUSE exits (replay-vm's kvm-patches/, ABI in
 * linux/rrvm-kvm.h), or carry on without them as before.
 */
int rrvm_kvm_arch_init(KVMState *s)
{
    int have = kvm_check_extension(s, KVM_CAP_RRVM_EXITS);
    int ret;

    /*
     * No kvmvapic: with the APIC in QEMU it would patch guest code and
     * write its vapic page on TPR accesses, host writes into guest memory
     * at points no log names.  (A -global on the command line still wins.)
     */
    object_register_sugar_prop("apic-common", "vapic", "off", false);

    if ((have & KVM_RRVM_EXIT_ALL) != KVM_RRVM_EXIT_ALL) {
        rrvm_kvm_exits_on(false);
        return 0;
    }
    ret = kvm_vm_enable_cap(s, KVM_CAP_RRVM_EXITS, 0, KVM_RRVM_EXIT_ALL);
    if (ret < 0) {
        error_report("replay-vm: KVM has KVM_CAP_RRVM_EXITS but enabling it "
                     "failed: %s", strerror(-ret));
        return ret;
    }
    rrvm_kvm_exits_on(true);
    return rrvm_kvm_arch_crew_init(s);
}

/*
 * Is the instruction of @cs's last exit still to be finished by the next
 * KVM_RUN?  A port or MMIO access, RDTSC, RDTSCP and PAUSE are; a CREW
 * exit's instruction has not started (it runs again), HLT is done.
 */
bool rrvm_kvm_arch_insn_pending(CPUState *cs)
{
    struct kvm_run *run = cs->kvm_run;

    switch (run->exit_reason) {
    case KVM_EXIT_IO:
    case KVM_EXIT_MMIO:
        return true;
    case KVM_EXIT_RRVM:
        return kvm_run_rrvm(run)->insn != KVM_RRVM_CREW;
    }
    return false;
}

/*
 * KVM_EXIT_RRVM: the vCPU is at an RDTSC, RDTSCP or PAUSE, not yet
 * executed (rip and the registers are as before it); it is a deterministic
 * exit, counted by rrvm_kvm_exited like any other.  The next KVM_RUN
 * completes the instruction with the TSC (and TSC_AUX) left in the exit.
 */
int rrvm_kvm_arch_exit(CPUState *cs, struct kvm_run *run)
{
    struct kvm_rrvm_exit *e = kvm_run_rrvm(run);

    switch (e->insn) {
    case KVM_RRVM_RDTSC:
        e->tsc = rrvm_kvm_tsc_exit(cs, false, e->tsc, 0);
        return 0;
    case KVM_RRVM_RDTSCP:
        e->tsc = rrvm_kvm_tsc_exit(cs, true, e->tsc, e->tsc_aux);
        return 0;
    case KVM_RRVM_PAUSE:
        rrvm_kvm_pause_exit(cs);
        return 0;
    case KVM_RRVM_CREW:
        rrvm_kvm_crew_fault(cs, e->gpa, e->access & KVM_RRVM_CREW_WRITE);
        return 0;
    }
    error_report("replay-vm: KVM_EXIT_RRVM for unknown instruction %u at "
                 "rip 0x%" PRIx64, e->insn, (uint64_t)e->rip);
    return -1;
}

/*
 * kvm_arch_pre_run when recording or replaying; called at deterministic
 * points only.  Recording injects what the interrupt controllers have
 * pending and logs it; replay has injected the log's interrupt already.
 */
void rrvm_kvm_arch_pre_run(CPUState *cs, struct kvm_run *run)
{
    X86CPU *cpu = X86_CPU(cs);
    CPUX86State *env = &cpu->env;

    qemu_mutex_lock_iothread();
    if (rrvm_recording()) {
        /* SeaBIOS waits for its SMI handler (port 0xb2), so SMIs matter */
        if (cs->interrupt_request & CPU_INTERRUPT_SMI) {
            cs->interrupt_request &= ~CPU_INTERRUPT_SMI;
            rrvm_record_interrupt(cs, RRVM_INT_SMI, 0);
            rrvm_kvm_arch_deliver(cs, RRVM_INT_SMI, 0);
        } else if (cs->interrupt_request & CPU_INTERRUPT_NMI) {
            cs->interrupt_request &= ~CPU_INTERRUPT_NMI;
            rrvm_record_interrupt(cs, RRVM_INT_NMI, 2);
            rrvm_kvm_arch_deliver(cs, RRVM_INT_NMI, 2);
        } else if (run->ready_for_interrupt_injection &&
                   (cs->interrupt_request & CPU_INTERRUPT_HARD) &&
                   (env->eflags & IF_MASK)) {
            int irq;

            cs->interrupt_request &= ~CPU_INTERRUPT_HARD;
            irq = cpu_get_pic_interrupt(env);
            if (irq >= 0) {
                rrvm_record_interrupt(cs, RRVM_INT_HARD, irq);
                rrvm_kvm_arch_deliver(cs, RRVM_INT_HARD, irq);
            }
        }
    }
    /*
     * No interrupt windows, on either side: an interrupt the guest cannot
     * take at this exit waits for the next deterministic exit where it
     * can (ready_for_interrupt_injection).  A window exit would be a
     * position whose rip is only as exact as the CPU's (or an emulator's)
     * VINTR and interrupt-shadow handling and KVM's choice of when to
     * report it; a port/MMIO access, HLT, RDTSC or PAUSE is at a fixed
     * instruction whatever happens around it.
     */
    run->request_interrupt_window = 0;
    run->cr8 = cpu_get_apic_tpr(cpu->apic_state);
    qemu_mutex_unlock_iothread();
}
