/*
 * threads.h — which threads are traced (threads.c; internal to src/pmpi).
 *
 * Each thread gets its pv_thread (below) and its own record stream on its first traced call or
 * user timer start/stop; index 0 is the thread that started perfvar (pv_thread_first), the others
 * are numbered in the order of their first traced call.
 *
 * State: the runtime the threads are traced under (given by pv_thread_first, read-only after), the
 * list of every traced thread, in index order, their number, and the count of calls of threads
 * perfvar could not trace belong to threads.c. Threads are appended under threads.c's own
 * lock and never removed (a pv_thread lives until the process ends: MPI_Finalize closes the streams
 * of threads that have already exited); each link is published with release, so the list is
 * walked without the lock (pv_threads_head, pv_threads_next), from any thread and from a signal
 * handler. The untraced count is atomic.
 */
#ifndef PV_MPI_THREADS_H
#define PV_MPI_THREADS_H
#include <stdint.h>

#include "../core/u64map.h"
#include "../metrics/metrics.h"
#include "../recorder/recorder.h"
#include "inject.h"
#include "runtime.h"
#include "sites.h"

struct pv_runtime;

/* Per-thread memos of the facts its call sites made last (pv_rec_fact_memoized): the message of
 * an Isend or Irecv, the status of each request a Waitall completes, which repeat call after call.
 * Indexed by site and position (pv_fact_memo_of); a collision only costs a lookup. */
#define PV_FACT_MEMOS 1024

/* A traced thread. Index 0 is the thread that started perfvar (normally the one that initialised
 * MPI); the others are numbered in the order of their first traced call or user timer start/stop.
 * Its compute segments are implied by its records (from one call's exit to the next call's entry).
 * Written by its own thread only; read by the finalizing thread once the others have joined (an
 * MPI program's threads make no MPI call after MPI_Finalize starts), and marked by the
 * fatal-signal handler (rec, read with acquire). */
typedef struct pv_thread {
    int index;
    pv_rec_stream *rec;     /* its records; NULL once closed */
    /* Copies of the runtime's settings its per-call path reads, made when it starts being traced
     * (the runtime is read-only from then on): its own cache lines, no load of process state. */
    unsigned boundaries;    /* PERFVAR_BOUNDARIES: bit g set when group g's calls are traced */
    int callpath;           /* PERFVAR_CALLPATH: call-path depth of its sites (sites.c) */
    uint64_t probe_period_ticks; /* PERFVAR_PROBE's period in ticks; 0: off */
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
    struct pv_thread *next; /* the thread list, in index order */
} pv_thread;

/* This thread's state, NULL until its first traced call (pv_thread_attach, pv_thread_first). */
extern _Thread_local pv_thread *pv_self PV_HIDDEN;

/* The memo of the i-th fact of call site site_id on thread t. */
static inline pv_rec_fact_memo *pv_fact_memo_of(pv_thread *t, int site_id, int i)
{
    return &t->fact_memos[((unsigned)site_id * 8u + (unsigned)i) % PV_FACT_MEMOS];
}

/* This thread's state, created on its first use (a new record stream, the next index, copies of
 * the runtime's settings); NULL when the thread cannot be traced (its records file cannot be
 * created: one message, the first time; or no runtime yet: before pv_thread_first), and then this
 * call and each later one are counted in pv_threads_untraced_calls(). Thread-safe. */
pv_thread *pv_thread_attach(void);
/* Create the state of the thread that starts perfvar, thread 0 (pv_start), traced under rt: its
 * trace directory, rank, buffer size, settings; NULL on failure (not counted). Called once, before
 * any other thread is traced; rt must stay valid, and from then on unchanged in what threads copy,
 * while threads are traced. */
pv_thread *pv_thread_first(const struct pv_runtime *rt);
/* The runtime pv_thread_first was given (acquire), NULL before: what the per-call path reads for a
 * thread not traced yet. Thread-safe. */
const struct pv_runtime *pv_threads_runtime(void);

/* Walk the traced threads in index order: for (t = pv_threads_head(); t; t = pv_threads_next(t)).
 * A thread appended meanwhile may or may not be seen. Lock-free (acquire loads): thread-safe and
 * async-signal-safe. */
pv_thread *pv_threads_head(void);
pv_thread *pv_threads_next(const pv_thread *t);

/* Calls made by threads perfvar could not trace, so far (relaxed). Thread-safe,
 * async-signal-safe. */
uint64_t pv_threads_untraced_calls(void);

#endif
