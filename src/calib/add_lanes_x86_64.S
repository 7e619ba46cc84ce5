/* add_lanes_x86_64.S — uint64_t pv_add_lanes(uint64_t n): n `add %rsi, LANE` with %rsi = 1, the
 * lanes %rax, %r9, %r10, %r11 in turn; see add_lanes.h. Every ADD encodes in 3 bytes (48 01 f0,
 * 49 01 f1, 49 01 f2, 49 01 f3), which the computed entry jump relies on. */
    .text
    .globl pv_add_lanes
    .type pv_add_lanes, @function
    .p2align 6
pv_add_lanes:
    xorl    %eax, %eax
    xorl    %r9d, %r9d
    xorl    %r10d, %r10d
    xorl    %r11d, %r11d
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
    .rept 64
    .byte 0x48, 0x01, 0xf0      /* add %rsi, %rax */
    .byte 0x49, 0x01, 0xf1      /* add %rsi, %r9 */
    .byte 0x49, 0x01, 0xf2      /* add %rsi, %r10 */
    .byte 0x49, 0x01, 0xf3      /* add %rsi, %r11 */
    .endr
.Lend:
    testq   %rcx, %rcx
    jz      .Ldone
    decq    %rcx
    jmp     .Lpass
.Ldone:
    addq    %r9, %rax
    addq    %r10, %rax
    addq    %r11, %rax
    ret
    .size pv_add_lanes, .-pv_add_lanes
    .section .note.GNU-stack,"",@progbits
