/*
 * replay-vm: where a crash happened, for a QEMU that leaves no core.
 *
 * A recording or replay that dies of SIGSEGV is rare and usually not
 * reproducible by running it again (one replay in a long batch), and core
 * dumps are off on most hosts, so without this the evidence is gone.  The
 * thread that takes a fatal signal prints the signal, the faulting address,
 * its vCPU (-1: not a vCPU thread) and a backtrace, with the binary's load
 * address so that replay-vm can resolve the frames with addr2line, then
 * dies of the signal as before.
 *
 * SIGBUS is left to QEMU (its own handler takes memory errors).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <execinfo.h>
#include <dlfcn.h>
#include "hw/core/cpu.h"
#include "sysemu/rrvm.h"
#include "rrvm-internal.h"

#define CRASH_FRAMES 64

static const int crash_signals[] = { SIGSEGV, SIGILL, SIGFPE, SIGABRT };
static void *exe_base;      /* where this binary is loaded (PIE) */

/* only async-signal-safe calls, bar snprintf of integers and pointers */
static void crash_handler(int sig, siginfo_t *si, void *uc)
{
    void *frames[CRASH_FRAMES];
    char buf[192];
    int n, len;
    CPUState *cpu = current_cpu;

    if (si->si_code <= 0) {
        len = snprintf(buf, sizeof(buf),
                       "replay-vm: QEMU crashed: signal %d sent by process "
                       "%d, vCPU %d, binary at %p\n", sig, (int)si->si_pid,
                       cpu ? cpu->cpu_index : -1, exe_base);
    } else {
        len = snprintf(buf, sizeof(buf),
                       "replay-vm: QEMU crashed: signal %d, code %d, address "
                       "%p, vCPU %d, binary at %p\n", sig, si->si_code,
                       si->si_addr, cpu ? cpu->cpu_index : -1, exe_base);
    }
    if (len > 0 && write(STDERR_FILENO, buf, MIN(len, sizeof(buf) - 1)) < 0) {
        /* nothing left to tell it with */
    }
    n = backtrace(frames, CRASH_FRAMES);
    backtrace_symbols_fd(frames, n, STDERR_FILENO);
    len = snprintf(buf, sizeof(buf), "replay-vm: end of backtrace\n");
    if (write(STDERR_FILENO, buf, len) < 0) {
        /* as above */
    }
    /*
     * SA_RESETHAND made the action the default again: a fault returns to
     * the faulting instruction and takes it; a signal sent by kill() is
     * raised again, and delivered when this handler returns.
     */
    if (si->si_code <= 0) {
        raise(sig);
    }
}

void rrvm_crash_report_init(void)
{
    struct sigaction sa;
    void *warm[1];
    Dl_info info;
    size_t i;

    if (dladdr((void *)rrvm_crash_report_init, &info)) {
        exe_base = info.dli_fbase;
    }
    /* the first backtrace() loads libgcc_s, which mallocs: not in a crash */
    backtrace(warm, 1);
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = crash_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (i = 0; i < ARRAY_SIZE(crash_signals); i++) {
        sigaction(crash_signals[i], &sa, NULL);
    }
}
