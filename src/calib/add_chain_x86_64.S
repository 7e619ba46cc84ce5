/* add_chain_x86_64.S — uint64_t pv_add_chain(uint64_t n): n dependent `add $1, %rax`; see add_chain.h.
 * Every `add $1, %rax` encodes in 4 bytes (48 83 c0 01), which the computed entry jump relies on. */
    .text
    .globl pv_add_chain
    .type pv_add_chain, @function
    .p2align 6
pv_add_chain:
    xorl    %eax, %eax
    movq    %rdi, %rcx
    shrq    $8, %rcx            /* full passes after the first, partial one */
    movq    %rdi, %rdx
    andq    $255, %rdx          /* ADDs in the first pass */
    leaq    .Lend(%rip), %r8
    shlq    $2, %rdx
    subq    %rdx, %r8
    jmp     *%r8
.Lpass:
    .rept 256
    .byte 0x48, 0x83, 0xc0, 0x01    /* add $1, %rax */
    .endr
.Lend:
    testq   %rcx, %rcx
    jz      .Ldone
    decq    %rcx
    jmp     .Lpass
.Ldone:
    ret
    .size pv_add_chain, .-pv_add_chain
    .section .note.GNU-stack,"",@progbits
