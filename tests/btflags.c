/*
 * Guest probe for QEMU 0033: the flags bt leaves undefined (OF, SF, AF,
 * PF), read by pushf, for a bt in the middle of a TB and for one right
 * after a jmp (the start of a TB).  The add before it overflows to zero,
 * so OF is 1 going in and a CC_OP_SAR computation would give 0.
 */
#include <stdio.h>

#define FLAGS 0x8d5UL	/* OF SF ZF AF PF CF */

static unsigned long bt_mid_tb(void)
{
	unsigned long f, a = 0x8000000000000000UL, d = 1;

	asm volatile("add %1, %1\n\tbt $0, %2\n\tpushfq\n\tpop %0"
		     : "=r"(f), "+r"(a) : "r"(d) : "cc");
	return f & FLAGS;
}

static unsigned long bt_tb_start(void)
{
	unsigned long f, a = 0x8000000000000000UL, d = 1;

	asm volatile("add %1, %1\n\tjmp 1f\n1:\tbt $0, %2\n\tpushfq\n\tpop %0"
		     : "=r"(f), "+r"(a) : "r"(d) : "cc");
	return f & FLAGS;
}

int main(void)
{
	printf("bt flags mid-TB %#lx at TB start %#lx\n", bt_mid_tb(), bt_tb_start());
	return 0;
}
