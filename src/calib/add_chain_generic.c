/* add_chain_generic.c — portable pv_add_chain for architectures without an assembly kernel.
 * The empty asm with a "+r" operand makes every addition depend on the previous one and opaque to
 * the optimiser, so the chain is neither removed nor folded; the increment goes through one too, so
 * the compiler emits a register ADD, not an immediate one a renamer could fold. See add_chain.h. */
#include "add_chain.h"

uint64_t pv_add_chain(uint64_t n)
{
    uint64_t x = 0, one = 1;
    __asm__ volatile("" : "+r"(one));
    for (uint64_t i = 0; i < n; i++) {
        x += one;
        __asm__ volatile("" : "+r"(x));
    }
    return x;
}
