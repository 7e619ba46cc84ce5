/*
 * clock.h — clock initialisation: which clock perfvar reads and its frequency (internal).
 *
 * The reads themselves are inline in include/perfvar_clock.h. This module determines, once per process,
 * the tick frequency and how it was obtained (x86-64: measured against CLOCK_MONOTONIC_RAW with an error
 * bound; Armv8: cntfrq_el0, exact; fallback: 1 GHz, exact).
 */
#ifndef PV_CLOCK_H
#define PV_CLOCK_H
#include "perfvar.h"

/* Initialise once (thread-safe, idempotent; ~20 ms on x86-64) and return the description. */
const perfvar_clock_info *pv_clock_init(void);

/* Ticks per ns (initialises the clock on first use). Thread-safe. */
double pv_clock_ticks_per_ns(void);

#endif
