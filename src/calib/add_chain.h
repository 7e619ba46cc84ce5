/*
 * add_chain.h — the paper's measured kernel: n dependent integer ADDs (paper §3.1, Algorithm 1).
 *
 * Written in assembly (add_chain_<arch>.S) so no compiler can remove, merge or reorder the chain:
 * 256 `add 1` instructions unrolled, entered at the right offset for n % 256 and looped n / 256 times.
 * Each ADD depends on the previous one, so the chain takes n cycles on any out-of-order core.
 * Returns n (the accumulated sum), which lets a test prove that exactly n ADDs ran.
 * Thread-safe, async-signal-safe.
 */
#ifndef PV_ADD_CHAIN_H
#define PV_ADD_CHAIN_H
#include <stdint.h>

uint64_t pv_add_chain(uint64_t n);

#endif
