/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Byte-CREW switch-on: the stop_machine() callback.  It runs the C part
 * (rv_byte_on_cpu: shadow IDT, the host's switch, crew state) and then
 * returns into the code cache instead of native code: its return address
 * becomes the enter trampoline (a fixed address, so the stack gets the same
 * bytes in a recording and its replay), the native one goes to this CPU's
 * enter_native slot.  From here on every CPU runs translated kernel code.
 * The C part runs on this CPU's private stack and the caller-saved
 * registers are cleared afterwards: its frames and what it left in them
 * differ between a recording and its replay (they take different paths),
 * and the kernel stack must not show that.
 */
#include <linux/linkage.h>
#include <asm/percpu.h>

#define RV_OFF_ENTER_NATIVE 608	/* offsetof(struct rv_vcpu, enter_native) */
#define RV_OFF_PRIV_RSP 536	/* offsetof(struct rv_vcpu, priv_rsp) */
#define RV_OFF_PRIV_TOP 544	/* offsetof(struct rv_vcpu, priv_top) */

/*
 * The next RET goes to enter_tramp, which jumps to the translation of the
 * native return address (kept in this CPU's enter_native slot); the
 * caller-saved registers, whose values differ between a recording and
 * its replay here, are cleared.  Returns 0.
 */
.macro RETURN_INTO_CACHE
	movq	(%rsp), %rdx
	movq	%rdx, %gs:rv_vcpu + RV_OFF_ENTER_NATIVE
	movq	rv_byte_enter_tramp(%rip), %rdx
	movq	%rdx, (%rsp)
	xorl	%ecx, %ecx
	xorl	%edx, %edx
	xorl	%esi, %esi
	xorl	%edi, %edi
	xorl	%r8d, %r8d
	xorl	%r9d, %r9d
	xorl	%r10d, %r10d
	xorl	%r11d, %r11d
	xorl	%eax, %eax
.endm

	.text
SYM_FUNC_START(rv_byte_stop_fn)
	movq	%rsp, %gs:rv_vcpu + RV_OFF_PRIV_RSP
	movq	%gs:rv_vcpu + RV_OFF_PRIV_TOP, %rsp
	call	rv_byte_on_cpu
	movq	%gs:rv_vcpu + RV_OFF_PRIV_RSP, %rsp
	testl	%eax, %eax
	jnz	1f
	RETURN_INTO_CACHE
1:	RET
SYM_FUNC_END(rv_byte_stop_fn)

/*
 * The module's init function (init_module).  In byte mode the switch comes last and this
 * task returns from it into the code cache, not into native
 * do_one_initcall(): run natively, the rest of module loading (mutexes,
 * RCU, the module list) would touch shared kernel memory outside CREW and
 * keep its CPU away from det points.  No interrupt reaches native code
 * after the switch (the host injects them at det points only), so the
 * per-CPU enter_native slot holds until enter_tramp reads it.
 */
	.pushsection .init.text, "ax"
SYM_FUNC_START(init_module)
	call	replayvm_init
	cmpl	$1, %eax		/* RV_INIT_SWITCH */
	jne	1f
	call	rv_byte_switch_on
	testl	%eax, %eax
	jnz	2f
	RETURN_INTO_CACHE
1:	RET
2:	movl	%eax, %edi
	call	rv_byte_switch_failed
	RET
SYM_FUNC_END(init_module)
	.popsection
