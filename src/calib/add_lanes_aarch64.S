/* add_lanes_aarch64.S — uint64_t pv_add_lanes(uint64_t n): n `add LANE, LANE, x4` with x4 = 1,
 * the lanes x0, x5, x6, x7 in turn; see add_lanes.h. Every A64 instruction is 4 bytes, which the
 * computed entry branch relies on. */
    .text
    .globl pv_add_lanes
    .type pv_add_lanes, %function
    .p2align 6
pv_add_lanes:
    lsr     x1, x0, #8          /* full passes after the first, partial one */
    and     x2, x0, #255        /* ADDs in the first pass */
    mov     x0, #0
    mov     x5, #0
    mov     x6, #0
    mov     x7, #0
    mov     x4, #1              /* the increment, in a register */
    adr     x3, .Lend
    sub     x3, x3, x2, lsl #2
    br      x3
.Lpass:
    .rept 64
    add     x0, x0, x4
    add     x5, x5, x4
    add     x6, x6, x4
    add     x7, x7, x4
    .endr
.Lend:
    cbz     x1, .Ldone
    sub     x1, x1, #1
    b       .Lpass
.Ldone:
    add     x0, x0, x5
    add     x0, x0, x6
    add     x0, x0, x7
    ret
    .size pv_add_lanes, .-pv_add_lanes
    .section .note.GNU-stack,"",%progbits
