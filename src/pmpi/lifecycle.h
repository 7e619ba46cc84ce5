/*
 * lifecycle.h — perfvar's process-wide MPI runtime state and its start and stop (lifecycle.c;
 * internal to src/pmpi).
 *
 * The one pv_runtime of the process is lifecycle.c's own (static there): only the start (pv_start,
 * from the first Init wrapper or lazily from the first traced call) and the stop (MPI_Finalize)
 * write it, so it is defined beside them. The other files are handed what they need instead of
 * reading a global: rank_meta.c a const pv_runtime * (it reports most of it); threads.c the
 * runtime at the first thread (pv_thread_first), from which each traced thread copies what its
 * per-call path reads (the traced groups, the call-path depth, the probe period, the counters'
 * threshold: threads.h) so that path reads its own state; inject.c the runtime when a thread is
 * set up; comms.c the world's rank and size, messages.c the thread level, at the start.
 *
 * Thread-safety: a pv_runtime's fields are written by the thread in pv_start before the
 * application's other threads make traced calls (MPI_Init, or the first traced call) and by the
 * thread in MPI_Finalize after they have made their last one; read-only in between. The run state
 * (pv_state) is read with acquire and written with release: publishing PV_ACTIVE publishes the
 * runtime, the first thread and the copies it holds.
 */
#ifndef PV_MPI_LIFECYCLE_H
#define PV_MPI_LIFECYCLE_H
#include <stdint.h>

#include "../calib/calib.h"
#include "../clock/clock.h"
#include "../config/config.h"
#include "../metrics/neighbours.h"
#include "../topology/topology.h"
#include "../recorder/recorder.h"
#include "../trace/convert.h"

typedef enum { PV_UNINIT = 0, PV_ACTIVE, PV_DISABLED, PV_FINISHED } pv_state_t;

/* The run state: PV_UNINIT until a start claims it (PV_DISABLED while it runs, and for good when
 * it fails), PV_ACTIVE while tracing, PV_FINISHED from the stop. Hidden: the per-call path reads it
 * with one direct load. Only pv_state() / pv_set_state() touch it (and the start's claim). */
extern pv_state_t pv_run_state __attribute__((visibility("hidden")));
static inline pv_state_t pv_state(void) { return __atomic_load_n(&pv_run_state, __ATOMIC_ACQUIRE); }
static inline void pv_set_state(pv_state_t s) { __atomic_store_n(&pv_run_state, s, __ATOMIC_RELEASE); }

struct pv_thread;

typedef struct pv_runtime {
    int rank, size;
    int thread_level;       /* MPI_THREAD_* provided */
    char host[256];
    char dir[4096];
    pv_config cfg;
    perfvar_clock_info clock;
    pv_calib_params calib_params;
    pv_calib_result calib;
    const char *calib_at;          /* when calib ran: "start-up" or "MPI_Finalize" */
    pv_trace_clock_sync sync;
    uint64_t realtime_ns, realtime_ticks;
    uint64_t start_ticks;          /* the trace's time origin on this rank's clock */
    /* fixed-work probes (PERFVAR_PROBE, src/calib/work_probe.h); period 0: off */
    uint64_t probe_period_ticks;
    uint64_t metrics_min_ticks;    /* PERFVAR_METRICS_MIN_US in ticks (threads copy it) */
    pv_neighbours neighbours;      /* what else ran on the rank's CPUs, from start to stop */
    pv_topology topo;              /* where it ran: socket, NUMA node, core (read at the start) */

    /* MPI_Finalize entered through a wrapper on this thread (pv_finalize_begin): its CALL is
     * ended at the stop */
    struct pv_thread *finalizer;
    pv_rec_unit *finalize_unit;
    uint64_t finalize_entry;

    int converted;          /* the rank's records were whole and converted at the stop */
    int records_removed;    /* the records were removed at the stop (all ranks' archive whole) */
    double convert_ms;      /* how long the conversion took */
    pv_convert_result conv;
} pv_runtime;

/* The one way the per-call path starts perfvar: after the application's MPI_Init (init_fn its
 * function, site and t_entry its call), or lazily from another traced call (init_fn < 0: only when
 * MPI is initialised and not finalized). Only the first caller starts (the others return 0 and
 * pass through untraced meanwhile); it runs perfvar's collective start, with pv_depth raised so
 * that MPI's calls inside it are not the application's. 1 when this call started it. */
int pv_start_hook(int init_fn, void *site, uint64_t t_entry);

#endif
