/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Byte-CREW switch-on: the stop_machine() callback.  It runs the C part
 * (rv_byte_on_cpu: shadow IDT, the host's switch, crew state) and then
 * returns into the code cache instead of native code: its return address
 * becomes the enter trampoline (a fixed address, so the stack gets the same
 * bytes in a recording and its replay), the native one goes to this CPU's
 * enter_native slot.  From here on every CPU runs translated kernel code.
 */
#include <linux/linkage.h>
#include <asm/percpu.h>

#define RV_OFF_ENTER_NATIVE 608	/* offsetof(struct rv_vcpu, enter_native) */

	.text
SYM_FUNC_START(rv_byte_stop_fn)
	call	rv_byte_on_cpu
	testl	%eax, %eax
	jnz	1f
	movq	(%rsp), %rdx
	movq	%rdx, %gs:rv_vcpu + RV_OFF_ENTER_NATIVE
	movq	rv_byte_enter_tramp(%rip), %rdx
	movq	%rdx, (%rsp)
1:	RET
SYM_FUNC_END(rv_byte_stop_fn)
