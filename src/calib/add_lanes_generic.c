/* add_lanes_generic.c — portable pv_add_lanes for architectures without an assembly kernel: four
 * accumulators, each made opaque by an empty asm so that its additions stay a chain of their own
 * and the compiler neither folds nor merges them. See add_lanes.h. */
#include "add_lanes.h"

uint64_t pv_add_lanes(uint64_t n)
{
    uint64_t a = 0, b = 0, c = 0, d = 0, one = 1, i = 0;
    __asm__ volatile("" : "+r"(one));
    for (; i + PV_ADD_LANES <= n; i += PV_ADD_LANES) {
        a += one, b += one, c += one, d += one;
        __asm__ volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d));
    }
    for (; i < n; i++) {
        a += one;
        __asm__ volatile("" : "+r"(a));
    }
    return a + b + c + d;
}
