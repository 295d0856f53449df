// SPDX-License-Identifier: GPL-2.0
/*
 * Decoding: the kernel's own maintained x86 instruction decoder
 * (arch/x86/lib/insn.c, the one kprobes, objtool's users and the alternatives
 * code rely on), called through its kallsyms address.  No opcode table here.
 */
#include <linux/kernel.h>
#include <linux/sched.h>
#include "rv.h"

unsigned long rv_selftest_insns, rv_selftest_bad;

int rv_decode(struct insn *insn, unsigned long pc)
{
	int ret = rv_k.insn_decode(insn, (void *)pc, MAX_INSN_SIZE, INSN_MODE_64);

	if (ret < 0 || !insn->length)
		return -EINVAL;
	return 0;
}

/* Linear sweep over the kernel text: how much of it the decoder accepts. */
int rv_selftest_decode(void)
{
	unsigned long pc = rv_k.stext, n = 0, bad = 0;
	struct insn insn;

	while (pc < rv_k.etext) {
		if (rv_decode(&insn, pc)) {
			bad++;
			pc++;
		} else {
			n++;
			pc += insn.length;
		}
		if (!(n & 0xffff))
			cond_resched();
	}
	rv_selftest_insns = n;
	rv_selftest_bad = bad;
	pr_info(RV_PR "decode selftest: %lu instructions, %lu undecodable bytes in %lu KiB of text\n",
		n, bad, (rv_k.etext - rv_k.stext) >> 10);
	return 0;
}
