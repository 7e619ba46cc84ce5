/*
 * clock.h — clock initialisation: which clock perfvar reads and its frequency (internal).
 *
 * The reads themselves are inline in include/perfvar_clock.h. This module probes the machine once
 * (probe.h) and determines the tick frequency and how it was obtained. x86-64: the first stated source
 * of CPUID 0x15, the hypervisor leaf 0x40000010 and the kernel's perf_event conversion, else the
 * frequency measured against CLOCK_MONOTONIC_RAW with an error bound (always measured, as a
 * cross-check). Armv8: cntfrq_el0, exact. Fallback: 1 GHz, exact.
 */
#ifndef PV_CLOCK_H
#define PV_CLOCK_H
#include "perfvar.h"
#include "probe.h"

/* Initialise once (thread-safe, idempotent; ~20 ms on x86-64) and return the description. */
const perfvar_clock_info *pv_clock_init(void);

/* What the probe found (valid after pv_clock_init). */
const pv_clock_caps *pv_clock_caps_get(void);

/* The frequency measured against CLOCK_MONOTONIC_RAW (x86-64: always measured, as a cross-check of a
 * stated frequency); 0 where not measured. Valid after pv_clock_init. */
double pv_clock_measured_hz(void);

/* Ticks per ns (initialises the clock on first use). Thread-safe. */
double pv_clock_ticks_per_ns(void);

#endif
