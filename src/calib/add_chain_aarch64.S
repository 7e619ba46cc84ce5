/* add_chain_aarch64.S — uint64_t pv_add_chain(uint64_t n): n dependent `add x0, x0, x4` with
 * x4 = 1; see add_chain.h for why the increment comes from a register and not an immediate.
 * Every A64 instruction is 4 bytes, which the computed entry branch relies on. */
    .text
    .globl pv_add_chain
    .type pv_add_chain, %function
    .p2align 6
pv_add_chain:
    lsr     x1, x0, #8          /* full passes after the first, partial one */
    and     x2, x0, #255        /* ADDs in the first pass */
    mov     x0, #0
    mov     x4, #1              /* the increment, in a register */
    adr     x3, .Lend
    sub     x3, x3, x2, lsl #2
    br      x3
.Lpass:
    .rept 256
    add     x0, x0, x4
    .endr
.Lend:
    cbz     x1, .Ldone
    sub     x1, x1, #1
    b       .Lpass
.Ldone:
    ret
    .size pv_add_chain, .-pv_add_chain
    .section .note.GNU-stack,"",%progbits
