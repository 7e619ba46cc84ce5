/*
 * search.h — the paper's searches for t_min (Algorithm 1) and t_diff (Algorithm 2) on one clock and
 * one cache state (internal; calib.c runs them per state, calib_cycles.c on the cycle counter).
 *
 * A search reads one of three counters around the ADD chain (add_chain.h):
 *   PV_SEARCH_WALL       the clock every perfvar timestamp uses (pv_now), converted to ns;
 *   PV_SEARCH_CYCLES     the CPU-cycle counter (perfvar_cycles_read), in cycles, never converted;
 *   PV_SEARCH_SUBSTITUTE a caller's function, in its own units (tests drive the cycles pass with it
 *                        where no PMU exists).
 * The read is inline and branches on a constant, so the sample brackets hold only the chain.
 * Budgets are always wall time (pv_now ticks). Values are in the state's `unit`.
 * Not thread-safe: one search per thread, on the core it runs on.
 */
#ifndef PV_CALIB_SEARCH_H
#define PV_CALIB_SEARCH_H
#include "calib.h"
#include "perfvar_clock.h"
#include "../clock/clock.h"

#include <stdint.h>

typedef enum { PV_SEARCH_WALL = 0, PV_SEARCH_CYCLES = 1, PV_SEARCH_SUBSTITUTE = 2 } pv_search_counter;

typedef struct pv_search {
    const pv_calib_params *p;
    pv_calib_result *r;         /* where the raw distributions are logged */
    pv_calib_state *st;         /* the state being measured */
    int tag;                    /* its pv_calib_dist.state tag */
    pv_search_counter counter;
    const perfvar_cycles_page *cycles_page;  /* PV_SEARCH_CYCLES (NULL on Armv8: no page needed) */
    uint64_t (*substitute)(void);            /* PV_SEARCH_SUBSTITUTE */
    double *buf;                /* N scratch values, in the unit */
    double *sorted;             /* N scratch */
    double *a0;                 /* N scratch: the shorter chain of a t_diff pair */
    uint64_t deadline;          /* pv_now ticks: end of the current state's share */
    double overhead;            /* t_e,std in the unit: removed from every sample */
    double granularity;         /* clock step in the unit */
    int last_n;                 /* samples the last measure took (fewer when the budget ran out) */
    int n;                      /* N of the current state */
    unsigned char *flush_buf;
    uint64_t flush_bytes;       /* of the current state; 0: no flush */
} pv_search;

static inline uint64_t pv_search_read(const pv_search *s)
{
    switch (s->counter) {
    case PV_SEARCH_CYCLES: return perfvar_cycles_read(s->cycles_page);
    case PV_SEARCH_SUBSTITUTE: return s->substitute();
    default: return pv_now();
    }
}

/* A read difference in the search's unit. */
double pv_search_units(const pv_search *s, uint64_t delta);

/* t_e,std (the minimal back-to-back read pair) and the granularity (the step the counter reads in,
 * from `pairs` pairs around a sweep of chain lengths; resolution.h) of the search's counter, caches
 * warm, into s->overhead and s->granularity. */
void pv_search_timer_cost(pv_search *s, int pairs);

/* t_min, slope and t_diff of the current state (s->st) within s->deadline, starting from hints in
 * ADDs (0: none). Sets the state's values, status and note. */
void pv_search_state(pv_search *s, uint64_t hint_min, uint64_t hint_diff);

#endif
