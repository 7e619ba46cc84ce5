/* threads.c — which threads are traced: each thread gets its own record stream (its file under
 * DIR/perfvar/records) on its first traced call (or user timer start/stop), so MPI_THREAD_MULTIPLE
 * programs (and threads taking turns under SERIALIZED) are traced per thread without sharing any
 * hot-path state.
 *
 * A thread's pv_thread lives until the process ends: MPI_Finalize closes the streams of threads
 * that have already exited. */
#include "threads.h"
#include "lifecycle.h"
#include "../calib/work_probe.h"
#include "../clock/clock.h"
#include "../core/message.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

_Thread_local pv_thread *pv_self PV_HIDDEN;
/* The runtime threads are traced under (pv_thread_first), published with release. */
static const pv_runtime *runtime;
/* The traced threads (threads.h): appended under lock, each link published with release. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pv_thread *threads; /* index order */
static int nthreads;
static uint64_t untraced_calls; /* atomic */
/* This thread could not be traced (no memory, OTF2 refused a location): do not retry each call. */
static _Thread_local int t_refused;

/* A new thread traced under rt with the next index, linked in the list; NULL on failure. */
static pv_thread *thread_new(const pv_runtime *rt)
{
    pv_thread *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->boundaries = rt->cfg.boundaries;
    t->callpath = rt->cfg.callpath;
    t->probe_period_ticks = rt->probe_period_ticks;
    /* Its first probe is due one period after it starts being traced (the runtime's probe period
     * is set before any thread exists). */
    uint64_t now = pv_now();
    t->probe_deadline = pv_work_probe_deadline(now, t->probe_period_ticks);
    pv_inject_thread_init(t, rt, now); /* PERFVAR_INJECT's rank: every call takes the cold path */
    /* Its counters run from now; a thread PAPI refuses is traced without them. */
    t->metrics_min_ticks = UINT64_MAX;
    if (pv_metrics_count() && pv_metrics_thread_start(&t->metrics) == 0)
        t->metrics_min_ticks = rt->metrics_min_ticks, t->metrics_since = now;
    pthread_mutex_lock(&lock);
    t->index = nthreads;
    t->rec = pv_rec_open(rt->dir, (uint32_t)rt->rank, (uint32_t)t->index, (size_t)rt->cfg.buffer_mb << 20);
    if (t->rec) {
        pv_thread **tail = &threads;
        while (*tail) tail = &(*tail)->next;
        /* Published last: the signal handler walks this list without the lock. */
        __atomic_store_n(tail, t, __ATOMIC_RELEASE);
        nthreads++;
    }
    pthread_mutex_unlock(&lock);
    if (!t->rec) {
        free(t);
        return NULL;
    }
    return t;
}

pv_thread *pv_thread_first(const pv_runtime *rt)
{
    __atomic_store_n(&runtime, rt, __ATOMIC_RELEASE);
    return pv_self = thread_new(rt);
}

const pv_runtime *pv_threads_runtime(void) { return __atomic_load_n(&runtime, __ATOMIC_ACQUIRE); }

pv_thread *pv_thread_attach(void)
{
    if (pv_self) return pv_self;
    const pv_runtime *rt = pv_threads_runtime();
    if (rt && !t_refused) {
        int depth = pv_depth;
        pv_depth = 1; /* whatever OTF2 does here is perfvar's */
        pv_self = thread_new(rt);
        pv_depth = depth;
        if (pv_self) return pv_self;
        t_refused = 1;
        pv_message(0, "a thread cannot be traced (cannot create its records file: %s); its MPI calls "
                      "are counted in untraced_thread_calls", strerror(errno));
    }
    __atomic_fetch_add(&untraced_calls, 1, __ATOMIC_RELAXED);
    return NULL;
}

pv_thread *pv_threads_head(void) { return __atomic_load_n(&threads, __ATOMIC_ACQUIRE); }

pv_thread *pv_threads_next(const pv_thread *t) { return __atomic_load_n(&t->next, __ATOMIC_ACQUIRE); }

uint64_t pv_threads_untraced_calls(void) { return __atomic_load_n(&untraced_calls, __ATOMIC_RELAXED); }
