/*
 * replay-vm: the recording side.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "hw/core/cpu.h"
#include "hw/boards.h"
#include "qemu-version.h"
#include "sysemu/kvm.h"
#include "sysemu/rrvm.h"
#include "rrvm-internal.h"

static char *cmdline_args(size_t *n)
{
    g_autofree char *buf = NULL;
    gsize len;

    if (!g_file_get_contents("/proc/self/cmdline", &buf, &len, NULL)) {
        *n = 0;
        return NULL;
    }
    *n = len;
    return g_memdup2(buf, len);
}

void rrvm_record_start(MachineState *ms, const char *path)
{
    Rr__Header h = RR__HEADER__INIT;
    g_autofree char *args = NULL;
    g_autofree char **argv = NULL;
    const char *series = g_getenv("RRVM_SERIES");
    size_t len, n = 0;
    rr_error err;

    h.format_version = RR_FORMAT_VERSION;
    h.n_vcpus = ms->smp.cpus;
    h.ram_mb = ms->ram_size >> 20;
    h.accel = (char *)(kvm_enabled() ? "kvm" : "tcg");
    /* (byte CREW with one vCPU: the guest module still runs, translated) */
    h.crew_mode = rrvm_byte_crew ? RR__HEADER__CREW_MODE__BYTE :
                  rrvm.n_cpus == 1 ? RR__HEADER__CREW_MODE__NONE :
                                     RR__HEADER__CREW_MODE__PAGE;
    h.user_page_crew = rrvm_user_page_crew;
    h.qemu_version = (char *)QEMU_FULL_VERSION;
    if (series) {
        h.patch_series_hash.data = (uint8_t *)series;
        h.patch_series_hash.len = strlen(series);
    }
    args = cmdline_args(&len);
    argv = g_new0(char *, len + 1);
    for (size_t off = 0; args && off < len; off += strlen(args + off) + 1) {
        argv[n++] = args + off;
    }
    h.cmdline = argv;
    h.n_cmdline = n;
    rrvm.start_ns = g_get_real_time() * 1000;
    h.start_time_ns = rrvm.start_ns;
    h.checkpoint_interval = 0;
    rrvm_header_images(&h, ms);

    rrvm.writer = rr_writer_open(path, &h, 0, &err);
    rrvm_header_free(&h);
    if (!rrvm.writer) {
        error_report("replay-vm: cannot record to %s: %s", path, err.msg);
        exit(1);
    }
    info_report("replay-vm: recording %d vCPU(s) to %s", rrvm.n_cpus, path);
}

static Rr__VcpuHash **vcpu_hashes(const RRVMPos *pos, const int *idx, int n,
                                  Rr__VcpuHash *vh, Rr__Position *pp)
{
    Rr__VcpuHash **v = g_new0(Rr__VcpuHash *, n);

    for (int i = 0; i < n; i++) {
        rr_pos p = rrvm_to_rr_pos(&pos[i]);

        rr__vcpu_hash__init(&vh[i]);
        rr__position__init(&pp[i]);
        rr_position_set(&pp[i], &p);
        vh[i].vcpu = idx[i];
        vh[i].pos = &pp[i];
        vh[i].regs_hash = rrvm_target_regs_hash(qemu_get_cpu(idx[i]), &pos[i]);
        v[i] = &vh[i];
    }
    return v;
}

/*
 * @vcpu is the vCPU that takes it, or RR_VCPU_NONE for all of them;
 * @crew_switch: the CREW mode the recording switches to here, or 0.
 */
static void log_checkpoint_sw(uint32_t vcpu, int n, const int *idx,
                              const RRVMPos *pos, uint32_t crew_switch)
{
    g_autofree Rr__VcpuHash *vh = g_new0(Rr__VcpuHash, n);
    g_autofree Rr__Position *pp = g_new0(Rr__Position, n);
    g_autofree Rr__VcpuHash **v = vcpu_hashes(pos, idx, n, vh, pp);
    uint8_t ram[32];
    rr_event_buf b;
    rr_pos p0 = rrvm_to_rr_pos(&pos[0]);

    Rr__Event *ev;

    rrvm_ram_hash(ram);
    ev = rr_ev_checkpoint(&b, vcpu, vcpu == RR_VCPU_NONE ? NULL : &p0,
                          rrvm.n_ckpt++, n, v, ram, sizeof(ram),
                          rrvm_now_ns());
    ev->checkpoint->crew_switch = crew_switch;
    rrvm_append(ev);
}

static void log_checkpoint(uint32_t vcpu, int n, const int *idx,
                           const RRVMPos *pos)
{
    log_checkpoint_sw(vcpu, n, idx, pos, 0);
}

/*
 * vCPU 0, at its safepoint, checkpoints the whole VM: every other vCPU is
 * held between instructions (one caught inside an I/O access makes the
 * attempt give up; it is retried a little later).
 */
bool rrvm_record_checkpoint(CPUState *self)
{
    int n = 0, idx[RRVM_MAX_CPUS];
    RRVMPos pos[RRVM_MAX_CPUS], mine;
    CPUState *cpu;
    bool clean = true;

    rrvm_pos_of(self, 0, &mine);
    rrvm_world_enter(&mine);
    rrvm_stop_mask(~0ULL);
    CPU_FOREACH(cpu) {
        RRVMCpu *rc = &rrvm.cpus[cpu->cpu_index];

        if (cpu != self && !rc->park_safe) {
            clean = false;
        }
        idx[n] = cpu->cpu_index;
        pos[n++] = cpu == self ? mine : rc->park_pos;
    }
    if (clean) {
        log_checkpoint(rrvm.n_cpus == 1 ? 0 : RR_VCPU_NONE, n, idx, pos);
    }
    rrvm_resume_mask(~0ULL);
    rrvm_world_exit();
    return clean;
}

/*
 * Byte CREW: the guest module asked for the switch (@self is at the
 * instruction that asks).  Every other vCPU held between TBs, the switch
 * is logged as a checkpoint and made; false if a vCPU was caught inside an
 * I/O access (try again).
 */
bool rrvm_record_switch(CPUState *self, const RRVMPos *self_pos)
{
    int n = 0, idx[RRVM_MAX_CPUS];
    RRVMPos pos[RRVM_MAX_CPUS];
    CPUState *cpu;
    bool clean = true;

    rrvm_world_enter(self_pos);
    rrvm_stop_mask(~0ULL);
    CPU_FOREACH(cpu) {
        RRVMCpu *rc = &rrvm.cpus[cpu->cpu_index];

        if (cpu != self && !rc->park_safe) {
            clean = false;
        }
        idx[n] = cpu->cpu_index;
        pos[n++] = cpu == self ? *self_pos : rc->park_pos;
    }
    if (clean) {
        log_checkpoint_sw(RR_VCPU_NONE, n, idx, pos,
                          RR__HEADER__CREW_MODE__BYTE);
        rrvm_byte_flip_held();
    }
    rrvm_resume_mask(~0ULL);
    rrvm_world_exit();
    return clean;
}

static void report_page_crew(void)
{
    if (rrvm_crew_transfers) {
        info_report("replay-vm: page CREW: %" PRIu64 " transfers, %" PRIu64
                    " instruction(s) run again after being held inside, %"
                    PRIu64 " after being held in their fault's entry",
                    rrvm_crew_transfers, rrvm_crew_restarts,
                    rrvm_fault_restarts);
    }
}

/*
 * Byte CREW, before the VM is paused for good: hold every vCPU at an exact
 * position (kernel ones at their next det point) and log the final
 * checkpoint and the End there.  A vCPU that never gets to one (it runs
 * native kernel code forever) ends the log without a final checkpoint.
 */
void rrvm_record_settle(void)
{
    int n = 0, idx[RRVM_MAX_CPUS];
    RRVMPos pos[RRVM_MAX_CPUS];
    int64_t deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    CPUState *cpu;
    rr_event_buf b;
    Rr__Event *ev;
    rr_error err;
    int stuck = -1;

    if (!rrvm_recording() || !rrvm_byte_active || !rrvm.writer) {
        return;
    }
    rrvm_flusher_stop();
    qemu_mutex_unlock_iothread();
    qemu_mutex_lock(&rrvm.world_lock);
    CPU_FOREACH(cpu) {
        RRVMCpu *rc = &rrvm.cpus[cpu->cpu_index];

        qatomic_set(&rc->stop_req, 1);
        smp_mb();
        rrvm_target_kick(cpu);
        qemu_cpu_kick(cpu);
        while (qemu_mutex_trylock(&rc->exec_lock)) {
            if (g_get_monotonic_time() > deadline) {
                stuck = cpu->cpu_index;
                break;
            }
            g_usleep(1000);
        }
        if (stuck >= 0) {
            break;
        }
        idx[n] = cpu->cpu_index;
        pos[n++] = rc->park_pos;
    }
    rrvm_byte_drain_all(true);
    if (stuck < 0) {
        log_checkpoint(RR_VCPU_NONE, n, idx, pos);
    }
    ev = rr_ev_end(&b, RR_VCPU_NONE, NULL, stuck < 0,
                   stuck < 0 ? (rrvm.stop_reason ? rrvm.stop_reason
                                                 : "the VM shut down")
                   : "a vCPU never reached a deterministic point",
                   rr_writer_count(rrvm.writer), rrvm_now_ns());
    rrvm_byte_untrained_summary(ev->end);
    rrvm_byte_user_summary(ev->end);
    rrvm_append(ev);
    report_page_crew();
    if (stuck >= 0) {
        error_report("replay-vm: vCPU %d did not reach a deterministic point "
                     "within 10 s; the log ends without a final checkpoint",
                     stuck);
    }
    if (rr_writer_close(rrvm.writer, &err) < 0) {
        error_report("replay-vm: closing the log failed: %s", err.msg);
    }
    rrvm.writer = NULL;
    rrvm.end_logged = true;
    CPU_FOREACH(cpu) {
        RRVMCpu *rc = &rrvm.cpus[cpu->cpu_index];

        if (stuck >= 0 && cpu->cpu_index >= stuck) {
            break;
        }
        qatomic_set(&rc->stop_req, 0);
        qemu_mutex_unlock(&rc->exec_lock);
    }
    if (stuck >= 0) {
        qatomic_set(&rrvm.cpus[stuck].stop_req, 0);
    }
    qemu_mutex_lock(&rrvm.lock);
    qemu_cond_broadcast(&rrvm.cond);
    qemu_mutex_unlock(&rrvm.lock);
    qemu_mutex_unlock(&rrvm.world_lock);
    qemu_mutex_lock_iothread();
}

/*
 * The recording cannot go on (a guest broke the byte-CREW protocol): end
 * the log here, without a final checkpoint (nobody is at a known place),
 * so that everything logged so far stays readable and replayable.
 */
void rrvm_record_abort(const char *reason)
{
    rr_event_buf b;
    rr_error err;

    if (!rrvm.writer) {
        return;
    }
    qatomic_set(&rrvm.flusher_on, false);   /* no join: it may hold a ring */
    rrvm_append(rr_ev_end(&b, RR_VCPU_NONE, NULL, 0, reason,
                          rr_writer_count(rrvm.writer), rrvm_now_ns()));
    if (rr_writer_close(rrvm.writer, &err) < 0) {
        error_report("replay-vm: closing the log failed: %s", err.msg);
    }
    rrvm.writer = NULL;
}

/* Called with every vCPU paused outside cpu_exec. */
void rrvm_record_finish(const char *reason)
{
    int n = rrvm.n_cpus, idx[RRVM_MAX_CPUS];
    RRVMPos pos[RRVM_MAX_CPUS];
    CPUState *cpu;
    rr_event_buf b;
    rr_error err;
    int i = 0;

    CPU_FOREACH(cpu) {
        idx[i] = cpu->cpu_index;
        rrvm_pos_of(cpu, 0, &pos[i]);
        i++;
    }
    log_checkpoint(RR_VCPU_NONE, n, idx, pos);
    rrvm_append(rr_ev_end(&b, RR_VCPU_NONE, NULL, 1, reason,
                          rr_writer_count(rrvm.writer), rrvm_now_ns()));
    report_page_crew();
    if (rr_writer_close(rrvm.writer, &err) < 0) {
        error_report("replay-vm: closing the log failed: %s", err.msg);
    }
    rrvm.writer = NULL;
}

void rrvm_record_interrupt(CPUState *cpu, int kind, int vector)
{
    RRVMPos pos;
    rr_pos p;
    rr_event_buf b;

    if (!rrvm_recording()) {
        return;
    }
    rrvm_pos_of(cpu, 0, &pos);
    p = rrvm_to_rr_pos(&pos);
    rrvm_append(rr_ev_interrupt(&b, cpu->cpu_index, &p, kind, vector));
}

/*
 * A device writes guest RAM.  Every vCPU is held at an exact position while
 * the bytes land, and the write is logged with all those positions.
 */
bool rrvm_ram_write(ram_addr_t addr, void *host, const void *buf, hwaddr len)
{
    if (!rrvm_in_device()) {
        return false;       /* the vCPU's own (deterministic) access */
    }
    if (rrvm_replaying()) {
        return true;        /* the log delivers it; drop the device's copy */
    }
    rrvm_stop_world();
    memmove(host, buf, len);
    rrvm_ram_written(addr, host, len);
    rrvm_resume_world();
    return true;
}

/* Log bytes a device has already put into guest RAM (e.g. at unmap). */
void rrvm_ram_written(ram_addr_t addr, const void *host, hwaddr len)
{
    g_autofree Rr__VcpuPos *vp = g_new0(Rr__VcpuPos, rrvm.n_cpus);
    g_autofree Rr__Position *pp = g_new0(Rr__Position, rrvm.n_cpus);
    g_autofree Rr__VcpuPos **others = g_new0(Rr__VcpuPos *, rrvm.n_cpus);
    CPUState *cpu;
    rr_event_buf b;
    int i = 0;

    rrvm_stop_world();
    CPU_FOREACH(cpu) {
        RRVMPos pos;
        rr_pos p;

        rrvm_stopped_pos(cpu, &pos);
        p = rrvm_to_rr_pos(&pos);
        rr_vcpu_pos_init(&vp[i], &pp[i], cpu->cpu_index, &p);
        others[i] = &vp[i];
        i++;
    }
    rrvm_append(rr_ev_dma_write(&b, RR_VCPU_NONE, NULL, addr, host, len,
                                i, others));
    rrvm_resume_world();
}
