/*
 * add_lanes.h — the fixed-work probes' kernel: n integer ADDs in PV_ADD_LANES independent chains
 * (lanes), each ADD in a lane depending on the one before it in that lane.
 *
 * Where the paper's chain (add_chain.h) is clocked by the core's clock alone, one ADD a cycle,
 * the lanes are clocked by its clock and by the issue slots its thread gets: PV_ADD_LANES ADDs a
 * cycle on a core with that many integer ALUs. A core whose slots another hardware thread takes
 * (an SMT sibling: on a shared host, another tenant's vCPU) runs the lanes slower and the chain
 * not, since one ADD a cycle leaves the other slots free. On a 2-vCPU AMD EPYC KVM guest, while a
 * loop of four instructions an iteration ran 1.3x or more slower on a vCPU, the chain ran 1.02x
 * and the lanes 1.6x there (tests/bench/bench_probe_lanes.c); an application's segments ran 1.04x
 * to 1.64x slower in such stretches.
 *
 * Written in assembly (add_lanes_<arch>.S) like the chain: 256 ADDs unrolled, the lanes in turn,
 * entered at the right offset for n % 256 and looped n / 256 times; the increment in a register
 * (add_chain.h says why). Returns n (the lanes' sum), which lets a test prove that exactly n ADDs
 * ran. Thread-safe, async-signal-safe.
 */
#ifndef PV_ADD_LANES_H
#define PV_ADD_LANES_H
#include <stdint.h>

#define PV_ADD_LANES 4 /* independent chains: the integer ALUs of most cores since 2013 */

uint64_t pv_add_lanes(uint64_t n);

#endif
