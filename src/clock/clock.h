/*
 * clock.h — clock initialisation: which clock perfvar reads and its frequency (internal).
 *
 * The reads themselves are inline in include/perfvar_clock.h. This module probes the machine once
 * (probe.h) and determines the tick frequency and how it was obtained. x86-64: the first stated source
 * of CPUID 0x15, the hypervisor leaf 0x40000010 and the kernel's perf_event conversion, else the
 * frequency measured against CLOCK_MONOTONIC_RAW with an error bound (always measured, as a
 * cross-check). Armv8: cntfrq_el0, exact. Fallback: 1 GHz, exact.
 * PERFVAR_CLOCK=auto|tsc|cntvct|clock_monotonic_raw selects the backend (auto: the native one);
 * a clock not available here is replaced by the best available one, and perfvar_clock_info.note
 * says so.
 */
#ifndef PV_CLOCK_H
#define PV_CLOCK_H
#include "perfvar.h"
#include "perfvar_clock.h"
#include "probe.h"

/* Initialise once (thread-safe, idempotent; ~20 ms on x86-64) and return the description. */
const perfvar_clock_info *pv_clock_init(void);

/* The clock every perfvar measurement reads: the native serialized read (perfvar_clock.h), or
 * CLOCK_MONOTONIC_RAW (ns, CPU from sched_getcpu) when PERFVAR_CLOCK asks for it. The selection
 * happens in pv_clock_init: call it before the first read. Inline, thread-safe; the branch is
 * always predicted. */
extern int pv_clock_monotonic;
uint64_t pv_clock_monotonic_read(int *cpu);

static inline uint64_t pv_now_cpu(int *cpu)
{
    if (__builtin_expect(pv_clock_monotonic, 0)) return pv_clock_monotonic_read(cpu);
    return perfvar_clock_read_cpu(cpu);
}

static inline uint64_t pv_now(void) { return pv_now_cpu((int *)0); }

/* What the probe found (valid after pv_clock_init). */
const pv_clock_caps *pv_clock_caps_get(void);

/* The frequency measured against CLOCK_MONOTONIC_RAW (x86-64: always measured, as a cross-check of a
 * stated frequency); 0 where not measured. Valid after pv_clock_init. */
double pv_clock_measured_hz(void);

/* The measurement's own relative error bound (pairing error over the interval); 0 where not
 * measured. Valid after pv_clock_init. */
double pv_clock_measured_rel_error(void);

/* A nominal frequency (CPUID 0x16) is used only this close to the measured rate (relative). */
#define PV_CLOCK_NOMINAL_AGREEMENT 0.01

/* The clock decision of pv_clock_init from capabilities `caps` and the PERFVAR_CLOCK value `want`
 * (NULL: unset): 1 to use CLOCK_MONOTONIC_RAW, 0 for the native clock; note (note_len bytes) gets
 * "" or why the choice is not the one asked for (or why auto did not take the native clock).
 * Pure: tests pass made-up caps. Thread-safe. */
int pv_clock_choose(const pv_clock_caps *caps, const char *want, char *note, int note_len);

/* The x86-64 TSC frequency decision: hz, hz_rel_error and hz_method of *info from `caps` and the
 * rate measured against CLOCK_MONOTONIC_RAW (Hz, relative error bound). Pure, thread-safe. */
void pv_clock_pick_hz(const pv_clock_caps *caps, double measured_hz, double measured_rel_error,
                      perfvar_clock_info *info);

/* Ticks per ns (initialises the clock on first use). Thread-safe. */
double pv_clock_ticks_per_ns(void);

#endif
