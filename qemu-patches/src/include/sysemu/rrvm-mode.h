/*
 * replay-vm: record/replay mode flag, cheap to test from hot inline paths.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef SYSEMU_RRVM_MODE_H
#define SYSEMU_RRVM_MODE_H

enum {
    RRVM_OFF = 0,
    RRVM_RECORD = 1,
    RRVM_REPLAY = 2,
};

extern int rrvm_mode;

static inline bool rrvm_enabled(void)
{
    return __builtin_expect(rrvm_mode != RRVM_OFF, 0);
}

static inline bool rrvm_recording(void)
{
    return __builtin_expect(rrvm_mode == RRVM_RECORD, 0);
}

static inline bool rrvm_replaying(void)
{
    return __builtin_expect(rrvm_mode == RRVM_REPLAY, 0);
}

#endif
