/*
 * inject.h — PERFVAR_INJECT, a validation aid: extra work injected into an unchanged binary, so that
 * a validation kit can check that the analysis names what was injected (internal).
 *
 * On the configured rank, each compute segment whose closing call site's name contains `to` and
 * whose opening one's contains `from` (src/config/config.h; names are the sites' labels as the trace's
 * segment keys give them: "MPI_Fn@module+0xoffset", the return address into the caller, then
 * "<module+0xoffset" per caller frame at PERFVAR_CALLPATH > 1, so a pattern can select one call
 * path), and that ran longer than `longer_ms` by the time the call is entered, gets pct % of its own
 * duration so far added as dependent ADDs (src/calib/add_chain.h), calibrated once per thread in ADDs per
 * clock tick, run just before the call's entry read: the extra work lies inside the segment, in C
 * and in every Fortran binding, since every wrapper goes through pv_call_enter.
 *
 * No cost when off: the injecting rank's threads keep their probe deadline at 0, so every traced
 * call takes the cold probe path of runtime.c, which calls pv_inject_run; the fixed-work probe's
 * real deadline is kept in pv_inject_thread meanwhile (both features work together). Other ranks,
 * and runs without PERFVAR_INJECT, never reach this code. Whether a site matches is decided once per
 * site (per thread), when the thread first meets it, never by string compares per call.
 *
 * Functions are called by the thread for itself only; not async-signal-safe. Units: clock ticks.
 */
#ifndef PV_INJECT_H
#define PV_INJECT_H
#include <stdint.h>

#include "../config/config.h"

struct pv_thread;
struct pv_runtime;

typedef struct pv_inject_thread {
    int on;                   /* this thread injects (its rank is the configured one) */
    int prev_site;            /* site id of its previous traced call; -1 before the first */
    uint64_t probe_deadline;  /* the fixed-work probe's deadline while pv_thread's is held at 0 */
    uint64_t window_begin, window_end; /* ticks: injection from begin to before end */
    uint64_t longer_ticks;    /* only segments longer than this (ticks); 0: any */
    double adds_per_tick;     /* the ADD chain's speed on this thread's core, measured at start */
    const pv_inject_spec *spec; /* what to inject (the runtime's PERFVAR_INJECT, read-only) */
    int verbose;              /* PERFVAR_VERBOSE: >= 2 says which sites match */
    int nsites;               /* entries in match */
    unsigned char *match;     /* per site id: 0 not yet seen, else 1 | PV_INJECT_TO | PV_INJECT_FROM */
} pv_inject_thread;

/* Set up thread t's injection state at its start (tick now) from the runtime rt it is traced
 * under (its PERFVAR_INJECT, rank, trace origin; rt must outlive the thread's tracing): when this
 * rank injects, hold its probe deadline at 0 and measure the ADD chain's speed (a few ms). Called
 * once per thread, before its first traced call, after its probe deadline is set. */
void pv_inject_thread_init(struct pv_thread *t, const struct pv_runtime *rt, uint64_t now);

/* The injection of the call at site site_id, whose entry
 * read was t_entry: adds the extra work when the segment matches and returns the call's new entry
 * read (and *cpu its CPU), else returns t_entry. Only for threads whose inject.on is set. */
uint64_t pv_inject_run(struct pv_thread *t, int site_id, uint64_t t_entry, int *cpu);

#endif
