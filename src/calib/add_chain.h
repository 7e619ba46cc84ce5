/*
 * add_chain.h — the paper's measured kernel: n dependent integer ADDs (paper §3.1, Algorithm 1).
 *
 * Written in assembly (add_chain_<arch>.S) so no compiler can remove, merge or reorder the chain:
 * 256 ADDs unrolled, entered at the right offset for n % 256 and looped n / 256 times.
 * Each ADD depends on the previous one, so the chain takes n cycles on any out-of-order core.
 * The increment (1) is held in a register, not written as an immediate: Intel's Golden Cove-class
 * renamers fold chains of `add $imm` without executing them, about six per cycle, which made the
 * chain's duration depend on the front end (bimodal, 0.07 ns per ADD on a 2.3 GHz Xeon, CV never
 * below 0.01). A register-register ADD goes through the ALU: one per cycle (0.34 ns there).
 * Returns n (the accumulated sum), which lets a test prove that exactly n ADDs ran.
 * Thread-safe, async-signal-safe.
 */
#ifndef PV_ADD_CHAIN_H
#define PV_ADD_CHAIN_H
#include <stdint.h>

uint64_t pv_add_chain(uint64_t n);

#endif
