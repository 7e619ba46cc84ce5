/* threads.c — which threads are traced: each thread gets its own segment state and OTF2 location on
 * its first traced call (or user timer start/stop), so MPI_THREAD_MULTIPLE programs (and threads
 * taking turns under SERIALIZED) are traced per thread without sharing any hot-path state.
 *
 * A thread's pv_thread lives until the process ends: MPI_Finalize writes the buffers of threads
 * that have already exited. */
#include "state.h"
#include "../clock/clock.h"

#include <stdlib.h>

_Thread_local pv_thread *pv_self PV_HIDDEN;
/* This thread could not be traced (no memory, OTF2 refused a location): do not retry each call. */
static _Thread_local int t_refused;

/* A new thread with the next index, linked in pv_rt.threads; NULL on failure. */
static pv_thread *thread_new(void)
{
    pv_thread *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->prev_site = -1;
    /* Its first probe is due one period after it starts being traced (pv_rt.probe_* are set
     * before any thread exists). */
    t->probe_deadline = pv_work_probe_deadline(pv_now(), pv_rt.probe_period_ticks);
    pthread_mutex_lock(&pv_rt.defs_lock);
    t->index = pv_rt.nthreads;
    t->loc = pv_trace_location((uint32_t)t->index);
    if (t->loc) {
        pv_thread **tail = &pv_rt.threads;
        while (*tail) tail = &(*tail)->next;
        *tail = t;
        pv_rt.nthreads++;
    }
    pthread_mutex_unlock(&pv_rt.defs_lock);
    if (!t->loc) {
        free(t);
        return NULL;
    }
    return t;
}

pv_thread *pv_thread_first(void)
{
    return pv_self = thread_new();
}

pv_thread *pv_thread_attach(void)
{
    if (!t_refused) {
        int depth = pv_depth;
        pv_depth = 1; /* whatever OTF2 does here is perfvar's */
        pv_self = thread_new();
        pv_depth = depth;
        if (pv_self) return pv_self;
        t_refused = 1;
        pv_message(0, "a thread cannot be traced (out of memory or OTF2 error); its MPI calls are "
                      "counted in untraced_thread_calls");
    }
    __atomic_fetch_add(&pv_rt.untraced_thread_calls, 1, __ATOMIC_RELAXED);
    return NULL;
}
