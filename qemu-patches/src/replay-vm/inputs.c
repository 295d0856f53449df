/*
 * replay-vm: synchronous inputs, the values a vCPU reads from outside.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/core/cpu.h"
#include "sysemu/rrvm.h"
#include "rrvm-internal.h"

static void check_pos(CPUState *cpu, RRVMItem *it, const RRVMPos *cur,
                      const char *what)
{
    RRVMPos want = rrvm_from_rr_pos(it->ev->pos);

    if (!rrvm_pos_equal(&want, cur)) {
        rrvm_diverged(cpu, it->index, what, &want, cur);
    }
}

uint64_t rrvm_io_read(CPUState *cpu, uintptr_t ra, int space, hwaddr addr,
                      unsigned size, uint64_t value)
{
    RRVMPos pos;
    RRVMItem *it;
    const Rr__IoRead *io;

    rrvm_pos_of(cpu, ra, &pos);
    if (rrvm_recording()) {
        rr_event_buf b;
        rr_pos p = rrvm_to_rr_pos(&pos);

        rrvm_append(rr_ev_io_read(&b, cpu->cpu_index, &p, space, addr, size,
                                  value));
        return value;
    }
    it = rrvm_next_sync(cpu);
    io = it->ev->body_case == RR__EVENT__BODY_IO_READ ? it->ev->io_read : NULL;
    if (!io || (int)io->space != space ||
        io->addr != addr || io->size != size) {
        g_autofree char *logged = it->ev->body_case == RR__EVENT__BODY_IO_READ
            ? g_strdup_printf("a read of %s 0x%" PRIx64 "/%u",
                              (int)io->space == RRVM_PIO ? "port" : "MMIO",
                              io->addr, io->size)
            : g_strdup(rr_event_kind_name(it->ev->body_case));
        g_autofree char *what = g_strdup_printf(
            "the guest read %s 0x%" PRIx64 "/%u where the log has %s",
            space == RRVM_PIO ? "port" : "MMIO", (uint64_t)addr, size,
            logged);
        rrvm_diverged(cpu, it->index, what, &pos, &pos);
    }
    check_pos(cpu, it, &pos, "I/O read at another position");
    value = io->value;
    rrvm_item_done(it);
    return value;
}

uint64_t rrvm_time_read(CPUState *cpu, uintptr_t ra, int kind, uint64_t value,
                        uint64_t aux)
{
    RRVMPos pos;
    RRVMItem *it;

    rrvm_pos_of(cpu, ra, &pos);
    if (rrvm_recording()) {
        rr_event_buf b;
        rr_pos p = rrvm_to_rr_pos(&pos);

        rrvm_append(rr_ev_time_read(&b, cpu->cpu_index, &p, kind, value,
                                    aux));
        return value;
    }
    it = rrvm_next_sync(cpu);
    if (it->ev->body_case != RR__EVENT__BODY_TIME_READ ||
        it->ev->time_read->kind != kind) {
        g_autofree char *what = g_strdup_printf(
            "the guest read a timestamp/random value where the log has %s",
            rr_event_kind_name(it->ev->body_case));
        rrvm_diverged(cpu, it->index, what, &pos, &pos);
    }
    check_pos(cpu, it, &pos, "timestamp/random read at another position");
    value = it->ev->time_read->value;
    rrvm_item_done(it);
    return value;
}
