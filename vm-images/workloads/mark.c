/*
 * mark: run the phase marker "xchg %bx,%bx" once.  A no-op on its own;
 * under the kinsns plugin (bench/plugins/kinsns.c) it logs the instruction
 * counts so far, so a benchmark can take the difference around a workload.
 */
int main(void)
{
	__asm__ volatile(".byte 0x66, 0x87, 0xdb" ::: "memory");	/* xchg %bx,%bx */
	return 0;
}
