/*
 * replay-vm: x86 positions, register hashes, interrupt delivery and the
 * port I/O path.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "cpu.h"
#include "exec/exec-all.h"
#include "exec/address-spaces.h"
#include "sysemu/rrvm.h"
#include "sysemu/kvm.h"
#include "tcg/helper-tcg.h"
#include "../seg_helper.h"
#include "hw/i386/apic_internal.h"
#include <linux/types.h>
#include "replay-vm/rrlog/include/rvg_abi.h"

/*
 * @ra != 0: the vCPU is inside an instruction called from TCG code at host
 * address @ra; its rip is unwound from the TB rather than read from env,
 * which is only exact between TBs.
 */
void rrvm_target_pos(CPUState *cs, uintptr_t ra, RRVMPos *pos)
{
    CPUX86State *env = &X86_CPU(cs)->env;
    uint64_t pc = env->eip + env->segs[R_CS].base;
    uint64_t data[TARGET_INSN_START_WORDS];

    pos->branches = cs->rr_branches;
    pos->dp = 0;
    pos->seq = 0;
    if (rrvm_byte_active) {
        pos->dp = rrvm_byte_dp(cs);
        pos->seq = rrvm_byte_seq(cs);
        if ((env->hflags & HF_CPL_MASK) != 3) {
            /*
             * kernel: the det point names the place, not the cache rip;
             * rcx tells its doorbell (1) from a halt right after it (2),
             * an MMIO det point (3), and in between (0)
             */
            pos->rip = rrvm_byte_dp_pc(cs);
            pos->rcx = cs->halted ? 2 : rrvm_byte_point(cs);
            return;
        }
    }
    if (ra && cpu_unwind_state_data(cs, ra, data)) {
        pc = TARGET_TB_PCREL ? (pc & TARGET_PAGE_MASK) | data[0] : data[0];
        if (data[1] & RRVM_INSN_IS_BRANCH) {
            pos->branches--;    /* counted at its start, retires at its end */
            pc = cs->rr_branch_pc;
        }
    }
    pos->rip = pc;
    pos->rcx = env->regs[R_ECX];
}

void rrvm_target_step_one(CPUState *cs)
{
    cs->cflags_next_tb = curr_cflags(cs) | CF_NOIRQ | 1;
}

/*
 * The instruction at host address @ra is left before it retires and will
 * run again from its start, where no fault makes it: a branch, counted at
 * its start, must not be counted twice, or the count no longer says
 * where the vCPU is.
 */
void rrvm_target_insn_runs_again(CPUState *cs, uintptr_t ra)
{
    uint64_t data[TARGET_INSN_START_WORDS];

    if (cpu_unwind_state_data(cs, ra, data) &&
        (data[1] & RRVM_INSN_IS_BRANCH)) {
        cs->rr_branches--;
    }
}

/*
 * Record: leave the instruction at host address @ra and run it again from
 * its start, as a fault there would, except that a branch is not counted
 * twice: replay runs it once (see rrvm_crew_fill_end).
 */
void rrvm_target_restart_insn(CPUState *cs, uintptr_t ra)
{
    rrvm_target_insn_runs_again(cs, ra);
    cpu_loop_exit_restore(cs, ra);
}

/*
 * Page CREW, record: the walk of a fill found no mapping (see
 * rrvm_lock_iothread_exception).  Raising the fault sets cr2 and the
 * exception that a second one would make a double fault: keep both.
 */
void rrvm_target_fill_fault(CPUState *cs, uintptr_t ra, int access_type)
{
    CPUX86State *env = &X86_CPU(cs)->env;
    uint64_t data[TARGET_INSN_START_WORDS];

    /*
     * Not one met while delivering an interrupt or exception (no ra, or
     * a fault already in flight): that delivery cannot be taken back.
     * An instruction fetch while translating has no ra either, and the
     * instruction has not begun.
     */
    if (!rrvm_recording() || !rrvm_page_crew || env->old_exception != -1 ||
        (rrvm_byte_active && (env->hflags & HF_CPL_MASK) != 3) ||
        (!ra && access_type != MMU_INST_FETCH)) {
        return;
    }
    if (ra && cpu_unwind_state_data(cs, ra, data) &&
        (data[1] & RRVM_INSN_IS_BRANCH)) {
        return;
    }
    rrvm_note_fill_fault(cs, env->cr[2], (uint64_t)env->old_exception);
}

void rrvm_target_undo_fault(CPUState *cs, const uint64_t *undo)
{
    CPUX86State *env = &X86_CPU(cs)->env;

    env->cr[2] = undo[0];
    env->old_exception = (int)undo[1];
    env->error_code = 0;
    cs->exception_index = -1;
}

void rrvm_target_kick(CPUState *cs)
{
    qatomic_set(&cpu_neg(cs)->icount_decr.u16.high, -1);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

/* Architectural state a replay must reproduce (rip from @pos). */
uint64_t rrvm_target_regs_hash(CPUState *cs, const RRVMPos *pos)
{
    if (kvm_enabled()) {
        return rrvm_kvm_arch_regs_hash(cs);
    }
    CPUX86State *env = &X86_CPU(cs)->env;
    uint64_t h = 0x6a09e667f3bcc908ULL;
    /*
     * Byte CREW: at an MMIO det point the vCPU is inside the guest
     * module's C code, whose registers are its own (a recording and its
     * replay take different paths there); the position says enough.
     */
    bool in_module = rrvm_byte_active && rrvm_byte_point(cs) == 3 &&
                     (env->hflags & HF_CPL_MASK) != 3;

    for (int i = 0; i < CPU_NB_REGS && !in_module; i++) {
        h = mix(h, env->regs[i]);
    }
    h = mix(h, pos->rip);
    h = mix(h, pos->branches);
    if (rrvm_byte_active) {
        h = mix(h, pos->dp);
        h = mix(h, pos->seq);
    }
    h = mix(h, in_module ? 0 : cpu_compute_eflags(env));
    for (int i = 0; i < 6; i++) {
        h = mix(h, env->segs[i].selector);
        h = mix(h, env->segs[i].base);
    }
    h = mix(h, env->cr[0]);
    h = mix(h, env->cr[3]);
    h = mix(h, env->cr[4]);
    h = mix(h, env->efer);
    /* (byte CREW: just woken from a halt is the same place as halted) */
    h = mix(h, cs->halted || (rrvm_byte_active && rrvm_byte_point(cs) == 2));
    if (rrvm_debug_regs) {
        fprintf(stderr, "rrvm-regs %s vcpu %d point %d:", rrvm_recording() ?
                "record" : "replay", cs->cpu_index,
                rrvm_byte_active ? rrvm_byte_point(cs) : -1);
        for (int i = 0; i < CPU_NB_REGS; i++) {
            fprintf(stderr, " %" PRIx64, (uint64_t)env->regs[i]);
        }
        fprintf(stderr, " fl %x eip %" PRIx64 " cr3 %" PRIx64 " halted %d\n",
                (unsigned)cpu_compute_eflags(env), (uint64_t)env->eip,
                (uint64_t)env->cr[3], cs->halted);
    }
    return h;
}

QEMU_BUILD_BUG_ON(CF_RRVM_BYTE != RRVM_CF_BYTE);

uint64_t rrvm_target_pc(CPUState *cs)
{
    CPUX86State *env = &X86_CPU(cs)->env;

    return env->eip + env->segs[R_CS].base;
}

uint64_t rrvm_target_sp(CPUState *cs)
{
    return X86_CPU(cs)->env.regs[R_ESP];
}

uint64_t rrvm_target_as(CPUState *cs)
{
    return X86_CPU(cs)->env.cr[3] & 0x000ffffffffff000ULL;
}

/*
 * An access to the user half of the address space, by user or kernel code;
 * not a page-table walk (MMU_PHYS_IDX, MMU_NESTED_IDX), which reads
 * physical addresses.
 */
bool rrvm_target_user_access(uint64_t vaddr, int mmu_idx)
{
    return (mmu_idx < MMU_PHYS_IDX && vaddr < 0x0000800000000000ULL) ||
           mmu_idx == MMU_PTW_USER_IDX;
}

/* the TLB index of a walk's table reads (excp_helper.c) */
int rrvm_x86_ptw_idx(uint64_t vaddr, int mmu_idx)
{
    return rrvm_user_page_crew && rrvm_byte_active &&
           rrvm_target_user_access(vaddr, mmu_idx) ? MMU_PTW_USER_IDX
                                                   : MMU_PHYS_IDX;
}

bool rrvm_target_walk_idx(int mmu_idx, bool *for_user)
{
    *for_user = mmu_idx == MMU_PTW_USER_IDX;
    return mmu_idx >= MMU_PHYS_IDX;
}

int rrvm_target_cpl(CPUState *cs)
{
    return X86_CPU(cs)->env.hflags & HF_CPL_MASK;
}

G_NORETURN void rrvm_target_leave_after_insn(CPUState *cs, uintptr_t ra,
                                             int len)
{
    CPUX86State *env = &X86_CPU(cs)->env;

    cpu_restore_state(cs, ra);
    env->eip += len;
    cpu_loop_exit_noexc(cs);
}

/*
 * Byte CREW: a kernel-mode interrupt goes in at the det point itself, so
 * that its frame holds the native pc (the code cache differs between a
 * recording and its replay).  At a doorbell the det-point code has pushed
 * rax and put the flags in ah (SZAPC) and al (OF): undo that.  After a
 * translated hlt the det point stored the pc that follows it.  Called
 * just before the delivery, in a recording and in its replay.
 */
void rrvm_target_byte_rewind(CPUState *cs)
{
    CPUX86State *env = &X86_CPU(cs)->env;
    uint64_t pc = env->eip + env->segs[R_CS].base;

    if (rrvm_byte_active) {
        rrvm_byte_delivering(cs);
    }

    if (!rrvm_byte_active || (env->hflags & HF_CPL_MASK) == 3) {
        return;
    }
    if (!rrvm_byte_in_cache(pc)) {
        rrvm_byte_leave_point(cs);
        return;
    }
    if (rrvm_byte_at_doorbell(cs)) {
        uint64_t rax = cpu_ldq_data(env, env->regs[R_ESP]);
        uint32_t f = cpu_compute_eflags(env);
        uint8_t ah = env->regs[R_EAX] >> 8, al = env->regs[R_EAX];

        f &= ~(CC_S | CC_Z | CC_A | CC_P | CC_C | CC_O);
        f |= ah & (CC_S | CC_Z | CC_A | CC_P | CC_C);
        f |= (al & 1) ? CC_O : 0;
        /* the arithmetic flags live in CC_SRC, not in env->eflags */
        cpu_load_eflags(env, f, 0);
        env->regs[R_EAX] = rax;
        env->regs[R_ESP] += 8;
    }
    env->eip = rrvm_byte_dp_pc(cs) - env->segs[R_CS].base;
    /*
     * The interrupt goes in: until the next det point this vCPU is no
     * longer where its position names it exactly (the position does not
     * change while the entry code runs), so it may not be held there.
     */
    rrvm_byte_leave_point(cs);
}

void rrvm_target_deliver(CPUState *cs, int kind, int vector)
{
    if (kvm_enabled()) {
        rrvm_kvm_arch_deliver(cs, kind, vector);
        return;
    }
    X86CPU *cpu = X86_CPU(cs);
    CPUX86State *env = &cpu->env;

    rrvm_target_byte_rewind(cs);
    switch (kind) {
    case RRVM_INT_HARD:
        do_interrupt_x86_hardirq(env, vector, 1);
        break;
    case RRVM_INT_NMI:
        env->hflags2 |= HF2_NMI_MASK;
        do_interrupt_x86_hardirq(env, EXCP02_NMI, 1);
        break;
    case RRVM_INT_SMI:
        do_smm_enter(cpu);
        break;
    case RRVM_INT_SIPI:
        /* the vector as recorded, whatever the sender has done so far */
        APIC_COMMON(cpu->apic_state)->sipi_vector = vector;
        do_cpu_sipi(cpu);
        break;
    case RRVM_INT_INIT:
        do_cpu_init(cpu);
        break;
    }
}

/* Port I/O: reads come from the log on replay; writes reach the devices. */
uint64_t rrvm_x86_in(CPUX86State *env, uint32_t port, unsigned size,
                     uintptr_t ra)
{
    CPUState *cs = env_cpu(env);
    MemTxAttrs attrs = cpu_get_mem_attrs(env);
    uint64_t val = 0;

    rrvm_lock_iothread(cs, ra);
    if (rrvm_replaying()) {
        val = rrvm_io_read(cs, ra, RRVM_PIO, port, size, 0);
    } else if (rrvm_byte_crew && port == RVG_PORT_CMD) {
        /* the guest module asks whether this host speaks its ABI */
        val = rrvm_io_read(cs, ra, RRVM_PIO, port, size,
                           rrvm_byte_fence_offered() ? RVG_HELLO_MAGIC_FENCE
                                                     : RVG_HELLO_MAGIC);
    } else {
        rrvm_dev_enter();
        switch (size) {
        case 1:
            val = address_space_ldub(&address_space_io, port, attrs, NULL);
            break;
        case 2:
            val = address_space_lduw(&address_space_io, port, attrs, NULL);
            break;
        default:
            val = address_space_ldl(&address_space_io, port, attrs, NULL);
            break;
        }
        rrvm_dev_leave();
        val = rrvm_io_read(cs, ra, RRVM_PIO, port, size, val);
    }
    qemu_mutex_unlock_iothread();
    return val;
}

void rrvm_x86_out(CPUX86State *env, uint32_t port, uint32_t data,
                  unsigned size, uintptr_t ra)
{
    MemTxAttrs attrs = cpu_get_mem_attrs(env);

    if (rrvm_byte_crew && (port == RVG_PORT_DB || port == RVG_PORT_CMD ||
                           port == RVG_PORT_DB_MMIO)) {
        /* the guest module's doorbells and commands: no device, no BQL */
        if (port != RVG_PORT_CMD) {
            rrvm_byte_doorbell(env_cpu(env), ra, port == RVG_PORT_DB ? 1 : 3);
        } else {
            rrvm_byte_command(env_cpu(env), data, env->regs[R_EDI],
                              env->regs[R_ESI], env->regs[R_EDX], ra);
        }
        return;
    }

    rrvm_lock_iothread(env_cpu(env), ra);
    rrvm_dev_enter();
    switch (size) {
    case 1:
        address_space_stb(&address_space_io, port, data, attrs, NULL);
        break;
    case 2:
        address_space_stw(&address_space_io, port, data, attrs, NULL);
        break;
    default:
        address_space_stl(&address_space_io, port, data, attrs, NULL);
        break;
    }
    rrvm_dev_leave();
    qemu_mutex_unlock_iothread();
}

int rrvm_target_sipi_vector(CPUState *cs)
{
    return APIC_COMMON(X86_CPU(cs)->apic_state)->sipi_vector;
}
