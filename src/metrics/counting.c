/* counting.c — one thread's PAPI event set: started once, read as deltas; see metrics.h. */
#include "metrics.h"

#if defined(PERFVAR_HAVE_PAPI)
#include <papi.h>

int pv_metrics_thread_start(pv_metrics_thread *m)
{
    m->eventset = -1;
    int n = pv_metrics_count(), es = PAPI_NULL;
    if (n == 0 || PAPI_create_eventset(&es) != PAPI_OK) return -1;
    int ok = 1;
    for (int i = 0; i < n && ok; i++) ok = PAPI_add_named_event(es, pv_metrics_name(i)) == PAPI_OK;
    if (ok && PAPI_start(es) == PAPI_OK) {
        for (int i = 0; i < n; i++) m->last[i] = 0; /* PAPI_start zeroes the counters */
        m->eventset = es;
        return 0;
    }
    PAPI_cleanup_eventset(es);
    PAPI_destroy_eventset(&es);
    return -1;
}

int pv_metrics_read(pv_metrics_thread *m, uint64_t delta[PV_METRICS_MAX])
{
    long long now[PV_METRICS_MAX];
    if (m->eventset < 0 || PAPI_read(m->eventset, now) != PAPI_OK) return 0;
    int n = pv_metrics_count();
    for (int i = 0; i < n; i++) {
        /* Counters only grow; a smaller total (a counter reset under us) counts from zero. */
        delta[i] = now[i] >= m->last[i] ? (uint64_t)(now[i] - m->last[i]) : (uint64_t)now[i];
        m->last[i] = now[i];
    }
    return n;
}

void pv_metrics_thread_stop(pv_metrics_thread *m)
{
    if (m->eventset < 0) return;
    long long v[PV_METRICS_MAX];
    PAPI_stop(m->eventset, v);
    PAPI_cleanup_eventset(m->eventset);
    PAPI_destroy_eventset(&m->eventset);
    PAPI_unregister_thread();
    m->eventset = -1;
}

#else

int pv_metrics_thread_start(pv_metrics_thread *m)
{
    m->eventset = -1;
    return -1;
}

int pv_metrics_read(pv_metrics_thread *m, uint64_t delta[PV_METRICS_MAX])
{
    (void)m, (void)delta;
    return 0;
}

void pv_metrics_thread_stop(pv_metrics_thread *m) { (void)m; }

#endif
