/*
 * work_probe.h — the fixed-work probe (PERFVAR_PROBE): K integer ADDs in independent lanes
 * (add_lanes.h) run every P ms on each traced thread, at an MPI boundary, so that cores and phases
 * can be compared on the same work whatever load balance the application has (internal).
 *
 * The probe is K ADDs in PV_ADD_LANES lanes between two reads of the clock every segment uses
 * (pv_now_cpu: rdtscp; lfence on x86-64). Lanes, not the calibration's single chain: the lanes'
 * pace is the core's clock times the issue slots its thread gets, which is what an application's
 * segments run at, while one dependent ADD a cycle leaves the slots an SMT sibling takes unmissed
 * (on a shared host's vCPU, the chain ran at full speed while an application's segments ran 1.04x
 * to 1.64x slower; add_lanes.h). K is PV_WORK_PROBE_ADDS on every rank of every job: the probes
 * compare cores only if they run the same instructions, fences and clock reads included. (K taken
 * from each rank's own t_min, 320 ADDs on one rank and 1920 on its peer, made a probe's fixed part,
 * about 250 ns of fences and reads there, a different share of each rank's probes, and scaling by
 * K showed one core +103 % slower while its segments ran at its peer's speed.)
 *
 * Scheduling is a per-thread deadline in clock ticks: a probe is due at the first traced call whose
 * entry read is at or past the deadline, and the next deadline is the probe's own start + P. So
 * probes on one thread start at least P apart, and the hot path when none is due is one compare
 * (pv_work_probe_due) against a deadline that is PV_WORK_PROBE_NEVER when probes are off.
 *
 * All functions are inline or static, pure except pv_work_probe_run (which reads the clock),
 * thread-safe and async-signal-safe. Units: ms for periods as configured, clock ticks for times
 * and deadlines.
 */
#ifndef PV_WORK_PROBE_H
#define PV_WORK_PROBE_H
#include "add_lanes.h"
#include "../clock/clock.h"

#include <math.h>
#include <stdint.h>

#define PV_WORK_PROBE_DEFAULT_MS 10u  /* PERFVAR_PROBE=on, and the default */
#define PV_WORK_PROBE_MAX_MS 60000u   /* the longest period PERFVAR_PROBE accepts */
/* K: 3000 ADDs a lane, about 1 us at PV_ADD_LANES ADDs a cycle on a 3 GHz core, several times
 * the fixed part of a probe and above the flush-0 t_min the quick calibration finds on most cores
 * (140 ns to 1.4 us on the VMs measured); at the default period a probe costs about 0.01 % of a
 * thread's time. */
#define PV_WORK_PROBE_LANE_ADDS 3000u
#define PV_WORK_PROBE_ADDS (PV_WORK_PROBE_LANE_ADDS * PV_ADD_LANES)
#define PV_WORK_PROBE_NEVER UINT64_MAX /* the deadline of a thread that never probes */

/* The period of period_ms ms in clock ticks (ticks_per_ns from pv_clock_ticks_per_ns), at least 1;
 * 0 when period_ms is 0 (probes off). */
static inline uint64_t pv_work_probe_period_ticks(unsigned period_ms, double ticks_per_ns)
{
    if (!period_ms) return 0;
    double t = nearbyint((double)period_ms * 1e6 * ticks_per_ns);
    return t < 1 ? 1 : (uint64_t)t;
}

/* The deadline after a probe that started at tick t: t + period, saturated at
 * PV_WORK_PROBE_NEVER; PV_WORK_PROBE_NEVER when period_ticks is 0 (off). Also the first deadline
 * of a thread, from the tick it started being traced. */
static inline uint64_t pv_work_probe_deadline(uint64_t t, uint64_t period_ticks)
{
    if (!period_ticks || t > PV_WORK_PROBE_NEVER - period_ticks) return PV_WORK_PROBE_NEVER;
    return t + period_ticks;
}

/* Whether a probe is due at tick now: the hot path's only test. A PV_WORK_PROBE_NEVER deadline is
 * never reached by a real clock read (2^64 ticks are 200 years at 3 GHz). */
static inline int pv_work_probe_due(uint64_t now, uint64_t deadline) { return now >= deadline; }

/* One probe: the clock and CPU read before and after `adds` ADDs in lanes. */
typedef struct pv_work_probe_sample {
    uint64_t t_begin, t_end; /* clock ticks */
    int cpu_begin, cpu_end;  /* -1 where the clock does not name the CPU */
} pv_work_probe_sample;

/* The untimed pass before each probe: 256 ADDs run the lanes' whole unrolled block once. */
#define PV_WORK_PROBE_WARM_ADDS 256u

/* Out of line, so that the warm pass and the timed one run the very same instructions. */
static __attribute__((noinline)) void pv_work_probe_timed(uint64_t adds, pv_work_probe_sample *s)
{
    s->t_begin = pv_now_cpu(&s->cpu_begin);
    pv_add_lanes(adds); /* an external assembly function: never elided or moved past the reads */
    s->t_end = pv_now_cpu(&s->cpu_end);
}

/* A probe runs warm, as a calibration sample does: a probe comes every P ms, after the
 * application's own code has evicted the chain's, and timed cold it measured the fetch of its
 * code from memory, not the core. A chain of 3000 ADDs whose 13 lines of code were flushed took
 * 1.3x to 1.6x its warm time on a 2-vCPU Xeon KVM guest, more while the other vCPU streamed
 * memory; after an untimed pass of PV_WORK_PROBE_WARM_ADDS it took its warm time, flushed or not
 * (tests/bench/bench_probe_warmth.c). The warm pass costs about a tenth of a probe. */
static inline void pv_work_probe_run(uint64_t adds, pv_work_probe_sample *s)
{
    pv_work_probe_sample warm;
    pv_work_probe_timed(PV_WORK_PROBE_WARM_ADDS, &warm);
    pv_work_probe_timed(adds, s);
}

#endif
