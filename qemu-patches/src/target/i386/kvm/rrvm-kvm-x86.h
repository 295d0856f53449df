/*
 * replay-vm under KVM, x86 side (rrvm-kvm-x86.c): what target/i386/kvm/kvm.c
 * calls when recording or replaying.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef RRVM_KVM_X86_H
#define RRVM_KVM_X86_H

#include <linux/kvm.h>
#include <linux/rrvm-kvm.h>

void rrvm_kvm_arch_pre_run(CPUState *cs, struct kvm_run *run);
int rrvm_kvm_arch_init(KVMState *s);
int rrvm_kvm_arch_exit(CPUState *cs, struct kvm_run *run);
void rrvm_kvm_arch_trace_exit(CPUState *cs, struct kvm_run *run);

#endif
