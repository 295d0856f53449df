/*
 * A user loop of one-byte `rep stosb`, with no system calls, for the gdb
 * tests of a replay.
 *
 * TCG runs a rep string instruction one iteration per block; after the last
 * one it either comes back to the instruction with ECX 0 and then moves on,
 * or (when blocks are not chained: a page holding a gdb breakpoint, a gdb
 * step) goes straight to the next instruction.  Interrupts taken in this
 * loop often land at the instruction with ECX 0.  A breakpoint on
 * repstos_never, which nothing calls, puts the loop's page under gdb's
 * breakpoint handling without ever stopping there: a replay must still meet
 * those interrupts (QEMU 0053).
 *
 * usage: repstos ROUNDS
 * prints "RESULT repstos rounds=N last=B insn=A never=A": the last byte
 * stored, and the addresses of repstos_insn and repstos_never (the test
 * reads them from the binary's symbols).
 */
#include <stdio.h>
#include <stdlib.h>

void repstos_loop(unsigned long rounds, unsigned char *buf);
void repstos_never(void);
extern const char repstos_insn[];

/*
 * One page of its own: the loop and the never-called function share it,
 * whatever order the compiler puts other functions in.
 */
__asm__(".pushsection .text.repstos, \"ax\", @progbits\n"
        ".balign 4096\n"
        ".globl repstos_loop\n"
        ".type repstos_loop, @function\n"
        "repstos_loop:\n"                   /* rdi rounds, rsi buf */
        "    mov %rdi, %rdx\n"
        "    test %rdx, %rdx\n"
        "    jz 2f\n"
        "    mov %rsi, %r8\n"
        "    mov $0x5a, %eax\n"
        "1:  mov %r8, %rdi\n"
        "    mov $1, %ecx\n"
        ".globl repstos_insn\n"
        "repstos_insn:\n"
        "    rep stosb\n"
        "    inc %al\n"
        "    dec %rdx\n"
        "    jnz 1b\n"
        "2:  ret\n"
        ".size repstos_loop, . - repstos_loop\n"
        ".balign 64\n"
        ".globl repstos_never\n"
        ".type repstos_never, @function\n"
        "repstos_never:\n"
        "    ud2\n"
        ".size repstos_never, . - repstos_never\n"
        ".popsection\n");

int main(int argc, char **argv)
{
    static unsigned char buf[64];
    unsigned long rounds = argc > 1 ? strtoul(argv[1], NULL, 0) : 1000000;

    repstos_loop(rounds, buf);
    printf("RESULT repstos rounds=%lu last=%u insn=%p never=%p\n", rounds,
           buf[0], (void *)repstos_insn, (void *)repstos_never);
    return 0;
}
