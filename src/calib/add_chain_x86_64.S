/* add_chain_x86_64.S — uint64_t pv_add_chain(uint64_t n): n dependent `add %rsi, %rax` with
 * %rsi = 1; see add_chain.h for why the increment comes from a register and not an immediate.
 * Every `add %rsi, %rax` encodes in 3 bytes (48 01 f0), which the computed entry jump relies on. */
    .text
    .globl pv_add_chain
    .type pv_add_chain, @function
    .p2align 6
pv_add_chain:
    xorl    %eax, %eax
    movl    $1, %esi            /* the increment, in a register */
    movq    %rdi, %rcx
    shrq    $8, %rcx            /* full passes after the first, partial one */
    movq    %rdi, %rdx
    andq    $255, %rdx          /* ADDs in the first pass */
    leaq    .Lend(%rip), %r8
    leaq    (%rdx,%rdx,2), %rdx /* their bytes: 3 each */
    subq    %rdx, %r8
    jmp     *%r8
.Lpass:
    .rept 256
    .byte 0x48, 0x01, 0xf0      /* add %rsi, %rax */
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
