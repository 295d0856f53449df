/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel functions the translator, the dispatcher and byte CREW's slow
 * path call natively while the kernel runs translated (rv_translatable,
 * rv_decode, jump-label and static-call lookups, the vtlb's page walk),
 * and every traced function they reach in turn (not counting failure
 * paths: the stack protector's, WARN, panic).
 * Byte mode takes them out of the function tracer (coherence.c): traced,
 * their entries become int3 during a batch and then calls into the tracer,
 * both run natively on the dispatcher's stack (turning on function tracing
 * of every function crashed the recording with a double fault).
 * tests/test_guest_notrace.py checks the list against vmlinux's call graph.
 */
#ifndef RV_NOTRACE_H
#define RV_NOTRACE_H

/* what the module calls (rv_k) */
#define RV_NATIVE_ROOTS \
	"insn_decode", "__module_text_address", "is_ftrace_trampoline", \
	"lookup_address"

/* ... and every traced function they reach */
#define RV_NATIVE_CALLEES \
	"__module_address", "__module_text_address", "inat_get_avx_attribute", \
	"inat_get_escape_attribute", "inat_get_group_attribute", \
	"inat_get_last_prefix_id", "inat_get_opcode_attribute", "insn_decode", \
	"insn_get_displacement", "insn_get_immediate", "insn_get_modrm", \
	"insn_get_opcode", "insn_get_prefixes", "insn_get_sib", "insn_init", \
	"lookup_address", "lookup_address_in_pgd_attr", "mod_find"

#endif
