# __vma_adjust of Debian 6.1.0-56-amd64 (vmlinux unpacked from /boot/vmlinuz; nokaslr address 0xffffffff812d8ee0), objdump excerpts
# the only branch to +0x942 (0xffffffff812d9822, the oops' rip):
ffffffff812d919d:	call   0xffffffff812c0c20
ffffffff812d91a2:	mov    0x10(%rbx),%rdx
ffffffff812d91a6:	lea    -0x10(%rdx),%rbx
ffffffff812d91aa:	cmp    %rdx,%r14
ffffffff812d91ad:	jne    0xffffffff812d9192
ffffffff812d91af:	mov    0x50(%rsp),%rbx
ffffffff812d91b4:	cmpb   $0x0,(%rsp)
ffffffff812d91b8:	jne    0xffffffff812d9822
ffffffff812d91be:	test   %rbp,%rbp
ffffffff812d91c1:	je     0xffffffff812d91d0
ffffffff812d91c3:	mov    0x30(%rsp),%rsi
# ...
ffffffff812d980c:	call   0xffffffff81a56520
ffffffff812d9811:	cmpq   $0x0,0x8(%rsp)
ffffffff812d9817:	jne    0xffffffff812d9106
ffffffff812d981d:	jmp    0xffffffff812d913e
ffffffff812d9822:	mov    0x48(%r13),%rdx
ffffffff812d9826:	lea    0x48(%r13),%rcx
ffffffff812d982a:	lea    -0x10(%rdx),%rax
ffffffff812d982e:	cmp    %rdx,%rcx
ffffffff812d9831:	je     0xffffffff812d9860
ffffffff812d9833:	mov    %rbx,0x50(%rsp)
ffffffff812d9838:	mov    %rcx,%r14
ffffffff812d983b:	mov    %rax,%rbx
ffffffff812d983e:	mov    0x8(%rbx),%rax
ffffffff812d9842:	mov    %rbx,%rdi
ffffffff812d9845:	lea    0x50(%rax),%rsi
ffffffff812d9849:	call   0xffffffff812c0c20
