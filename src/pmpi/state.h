/*
 * state.h — perfvar's MPI runtime state, shared by the files of src/pmpi (internal).
 *
 * Who may touch what:
 * - pv_rt's process-wide fields (rank, configuration, clock, thread level...) are written by pv_start
 *   before the application's other threads make traced calls (MPI_Init, or the first traced call),
 *   and by the thread in MPI_Finalize after they have made their last one; read-only in between.
 *   pv_rt.state is read with acquire / written with release (pv_state(), pv_set_state()).
 * - pv_thread: one per traced thread, its record stream (src/recorder), written by that thread
 *   only; read by the finalizing thread once the others have joined (an MPI program's threads make
 *   no MPI call after MPI_Finalize starts), and marked by the fatal-signal handler.
 * - shared definitions, which go to the rank's definitions file as they are made, are kept by the
 *   file that makes them, under its own lock: call sites (sites.h), communicators (comms.h), the
 *   thread list (threads.h), user timer regions (sites.h, pv_site_user_region_defined). Each thread
 *   caches what it looked up, so the steady state takes no lock.
 * - messages matched by MPI_Mprobe and not yet received: messages.c (messages.h). Requests need no
 *   shared state: their starts and completions are paired when the records are converted
 *   (records.h).
 */
#ifndef PV_MPI_STATE_H
#define PV_MPI_STATE_H
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>

#include "../calib/calib.h"
#include "../clock/clock.h"
#include "../calib/work_probe.h"
#include "../config/config.h"
#include "../core/message.h"
#include "../core/u64map.h"
#include "../metrics/metrics.h"
#include "../metrics/neighbours.h"
#include "../recorder/recorder.h"
#include "../topology/topology.h"
#include "../trace/convert.h"
#include "perfvar.h"
#include "runtime.h"
#include "inject.h"
#include "sites.h"
#include "../timer/region_sink.h"

typedef enum { PV_UNINIT = 0, PV_ACTIVE, PV_DISABLED, PV_FINISHED } pv_state_t;

/* Static regions after the MPI functions: the start-up calibration, and the fixed-work probes
 * ("perfvar:probe", PERFVAR_PROBE). */
enum { PV_REGION_CALIBRATION = 0 /* + PV_FN_COUNT */, PV_REGION_PROBE };


/* A traced thread. Index 0 is the thread that started perfvar (normally the one that initialised
 * MPI); the others are numbered in the order of their first traced call or user timer start/stop.
 * Its compute segments are implied by its records (from one call's exit to the next call's entry). */
/* Per-thread memos of the facts its call sites made last (pv_rec_fact_memoized): the message of
 * an Isend or Irecv, the status of each request a Waitall completes, which repeat call after call.
 * Indexed by site and position (pv_fact_memo_of); a collision only costs a lookup. */
#define PV_FACT_MEMOS 1024

typedef struct pv_thread {
    int index;
    pv_rec_stream *rec;     /* its records; NULL once closed */
    pv_site_slot site_cache[PV_SITE_CACHE]; /* sites.h: its cache of call sites */
    pv_rec_fact_memo fact_memos[PV_FACT_MEMOS];
    uint64_t calls[PV_FN_COUNT]; /* its traced calls per function (plain: its own) */
    uint64_t probe_deadline; /* clock tick from which its next traced call runs a fixed-work probe
                                (PV_WORK_PROBE_NEVER when probes are off) */
    pv_inject_thread inject; /* PERFVAR_INJECT (inject.h): on its rank, probe_deadline is held at 0 */
    uint64_t metrics_min_ticks; /* a traced call whose segment lasted this long reads the counters
                                   (PERFVAR_METRICS_MIN_US); UINT64_MAX when it counts nothing */
    uint64_t metrics_since;  /* entry ticks of the call of its last read (first: counting's start) */
    pv_metrics_thread metrics; /* its PAPI counters (src/metrics) */
    pv_u64map sites;        /* caches of sites.c's shared maps: key -> id; at call-path depth > 1,
                               per (fn, return address): what its call paths showed (sites.c) */
    pv_u64map user_sites;
    pv_u64map paths;        /* call-path depth > 1: cache of the shared paths, hash -> id */
    uint64_t path_rng;      /* xorshift state of the jittered path checks; 0: not seeded yet */
    struct pv_thread *next; /* the thread list (threads.h), in index order */
} pv_thread;

typedef struct pv_runtime {
    pv_state_t state;       /* pv_state() / pv_set_state() */
    int rank, size;
    int thread_level;       /* MPI_THREAD_* provided */
    char host[256];
    char dir[4096];
    pv_config cfg;
    perfvar_clock_info clock;
    pv_calib_params calib_params;
    pv_calib_result calib;
    const char *calib_at;          /* when calib ran: "start-up" or "MPI_Finalize" (lifecycle.c) */
    pv_trace_clock_sync sync;
    uint64_t realtime_ns, realtime_ticks;
    uint64_t start_ticks;          /* the trace's time origin on this rank's clock (lifecycle.c) */
    /* fixed-work probes (PERFVAR_PROBE, src/calib/work_probe.h); period 0: off */
    uint64_t probe_period_ticks;
    uint64_t metrics_min_ticks;    /* PERFVAR_METRICS_MIN_US in ticks (threads copy it) */
    pv_neighbours neighbours;      /* what else ran on the rank's CPUs, from start to stop */
    pv_topology topo;              /* where it ran: socket, NUMA node, core (read at the start) */

    /* MPI_Finalize entered through a wrapper on this thread: its CALL is ended at the stop */
    pv_thread *finalizer;
    pv_rec_unit *finalize_unit;
    uint64_t finalize_entry;

    int converted;          /* the rank's records were whole and converted at the stop */
    int records_removed;    /* the records were removed at the stop (all ranks' archive whole) */
    double convert_ms;      /* how long the conversion took */
    pv_convert_result conv;
} pv_runtime;

extern pv_runtime pv_rt;
extern _Thread_local pv_thread *pv_self PV_HIDDEN; /* this thread's state, NULL until first traced */

static inline pv_state_t pv_state(void) { return __atomic_load_n(&pv_rt.state, __ATOMIC_ACQUIRE); }
static inline void pv_set_state(pv_state_t s) { __atomic_store_n(&pv_rt.state, s, __ATOMIC_RELEASE); }

/* sites.h: the site id of a call of static region `region` at return address ra, or -1 (see
 * pv_site_id_miss). Most calls come from a few sites whose callers do not vary: the thread's
 * direct-mapped cache first, inline. Called by thread t for itself. */
static inline int pv_site_id(pv_thread *t, int region, void *ra)
{
    pv_site_slot *slot = pv_site_slot_of(t->site_cache, region, ra);
    if (__builtin_expect(slot->ra == (uintptr_t)ra && slot->fn == region && slot->left > 0, 1)) {
        slot->left--;
        return slot->id;
    }
    return pv_site_id_miss(t, region, ra);
}

/* The end of every traced call (pv_call_end, and the short paths of messages.c, inline): releases the
 * guard, then the exit read, which starts the next compute segment, then ends the CALL record. */
static inline void pv_call_end_inline(pv_call *c)
{
    pv_depth = 0;
    int cpu;
    uint64_t t_exit = pv_now_cpu(&cpu); /* last: starts the next segment */
    pv_rec_call_end(c->thread->rec, c->unit, c->t_entry, t_exit, cpu);
}

/* The memo of the i-th fact of call site site_id on thread t. */
static inline pv_rec_fact_memo *pv_fact_memo_of(pv_thread *t, int site_id, int i)
{
    return &t->fact_memos[((unsigned)site_id * 8u + (unsigned)i) % PV_FACT_MEMOS];
}

/* runtime.c: a user timer start/stop on thread t at t (its CPU cpu): a CALL at its site, ending the
 * thread's segment, whose exit starts the next one. */
void pv_user_boundary(pv_thread *self, int handle, int is_stop, void *site, uint64_t t, int cpu);

/* lifecycle.c, the one way the per-call path starts perfvar: after the application's MPI_Init
 * (init_fn its function, site and t_entry its call), or lazily from another traced call (init_fn
 * < 0: only when MPI is initialised and not finalized). Only the first caller starts (the others
 * return 0 and pass through untraced meanwhile); it runs perfvar's collective start, with
 * pv_depth raised so that MPI's calls inside it are not the application's. 1 when this call
 * started it. */
int pv_start_hook(int init_fn, void *site, uint64_t t_entry);

/* runtime.c: where perfvar_start/stop report to the MPI layer (src/timer's region sink): a user
 * timer start/stop of a traced thread is a segment boundary (pv_user_boundary). */
extern const pv_region_sink pv_user_sink;

/* signals.c: mark every thread's records with a fatal signal before the application's own handler
 * (or the default action) runs. Installed at the start. */
void pv_signals_install(void);


#endif
