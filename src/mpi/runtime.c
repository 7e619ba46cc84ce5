/* runtime.c — the call protocol of generated wrappers: segments, MPI regions, guard; see runtime.h. */
#include "runtime.h"
#include "../clock/clock.h"
#include "state.h"
#include "../timer/region_sink.h"

#include <stdlib.h>
#include <string.h>

pv_runtime pv_rt = {.prev_site = -1, .cfg = {.boundaries = PV_BOUNDARIES_DEFAULT}};
_Thread_local int pv_depth;
uint64_t pv_calls[PV_FN_COUNT];

/* First traced call of a program whose MPI_Init we did not see (e.g. initialised through a binding
 * perfvar does not wrap): start now, if MPI is up. */
static void lazy_start(void)
{
    int init = 0, fin = 0;
    PMPI_Initialized(&init);
    PMPI_Finalized(&fin);
    if (init && !fin) pv_start(-1, NULL, 0);
}

/* Write the compute segment that ran from the last resume to t, ending at site `to`. */
static void close_segment(int to, uint64_t t, int cpu)
{
    pv_note_cpu(cpu);
    if (pv_rt.prev_site < 0) return;
    uint32_t seg = pv_segment_region(pv_rt.prev_site, to);
    if (seg == UINT32_MAX) return;
    pv_trace_enter(pv_rt.resume_t, seg, pv_rt.resume_cpu);
    pv_trace_leave(t, seg, cpu);
    pv_rt.nsegments++;
}

void pv_user_boundary(int handle, int is_stop, void *site, uint64_t t, int cpu)
{
    if (pv_depth) return; /* a timer inside an MPI call (a callback): not a segment boundary */
    const char *name = pv_region_name(handle);
    int site_id = pv_site_user(handle, is_stop, name ? name : "?", site);
    uint32_t region = pv_user_region(handle);
    close_segment(site_id, t, cpu);
    if (region != UINT32_MAX) {
        if (is_stop)
            pv_trace_leave(t, region, cpu);
        else
            pv_trace_enter(t, region, cpu);
    }
    pv_rt.prev_site = site_id;
    pv_rt.resume_t = pv_now_cpu(&pv_rt.resume_cpu); /* last: starts the next segment */
}

int pv_call_enter(pv_call *c, int fn, void *site)
{
    if (pv_depth) return 0; /* an inner layer of a call already seen, or perfvar's own call */
    __atomic_fetch_add(&pv_calls[fn], 1, __ATOMIC_RELAXED);
    int traced = (pv_rt.cfg.boundaries & (1u << pv_fn_info[fn].group)) != 0;
    if (traced && pv_rt.state == PV_UNINIT) {
        pv_depth = 1;
        lazy_start();
        pv_depth = 0;
    }
    if (!traced || pv_rt.state != PV_ACTIVE) {
        pv_depth++;
        return -1;
    }
    if (!pthread_equal(pthread_self(), pv_rt.thread)) {
        __atomic_fetch_add(&pv_rt.untraced_thread_calls, 1, __ATOMIC_RELAXED);
        pv_depth++;
        return -1;
    }
    c->t_entry = pv_now_cpu(&c->cpu_entry); /* first: ends the compute segment */
    pv_depth = 1;
    c->fn = fn;
    c->heap_statuses = NULL;
    c->heap_keys = NULL;
    c->heap_fstatuses = NULL;
    c->site_id = pv_site_id(fn, site);
    close_segment(c->site_id, c->t_entry, c->cpu_entry);
    pv_trace_enter(c->t_entry, (uint32_t)fn, -1);
    if (pv_fn_info[fn].kind == PV_KIND_FINALIZE) pv_rt.in_finalize = 1;
    return 1;
}

void pv_call_prepare(pv_call *c, pv_args *a)
{
    /* Receives report their real source: give MPI our own status where the caller ignores it. */
    if (a->has_status && a->status == MPI_STATUS_IGNORE) a->status = &c->own_status;
    if (a->has_statuses && a->statuses == MPI_STATUSES_IGNORE && a->nreq > 0) {
        if (a->nreq <= PV_INLINE_REQUESTS)
            a->statuses = c->own_statuses;
        else if ((c->heap_statuses = malloc((size_t)a->nreq * sizeof(MPI_Status))))
            a->statuses = c->heap_statuses;
        else
            a->statuses = MPI_STATUSES_IGNORE; /* no memory: leave the caller's choice */
    }
    /* Request handles are overwritten on completion: keep what they were. */
    MPI_Request *keys = c->keys;
    if (a->nreq > PV_INLINE_REQUESTS)
        keys = c->heap_keys = malloc((size_t)a->nreq * sizeof(MPI_Request));
    if (keys) {
        for (int i = 0; i < a->nreq; i++)
            keys[i] = a->requests ? a->requests[i] : PMPI_Request_f2c(a->frequests[i]);
    } else {
        a->nreq = 0; /* no memory: the completions go unrecorded */
    }
    pv_messages_prepare(c->fn, c->t_entry, a);
}

void pv_call_leave(pv_call *c, pv_args *a, int rc)
{
    uint64_t t_exit = pv_now();
    pv_messages_leave(c->fn, t_exit, a, c->heap_keys ? c->heap_keys : c->keys, rc);
    pv_trace_leave(t_exit, (uint32_t)c->fn, -1);
    free(c->heap_statuses);
    free(c->heap_keys);
    free(c->heap_fstatuses);
    pv_rt.prev_site = c->site_id;
    pv_depth = 0;
    pv_rt.resume_t = pv_now_cpu(&pv_rt.resume_cpu); /* last: starts the next segment */
}

void pv_init_begin(pv_call *c, int fn, void *site)
{
    c->fn = fn;
    c->site = site;
    pv_clock_init(); /* selects the clock (PERFVAR_CLOCK) before its first read */
    if (pv_depth == 0) __atomic_fetch_add(&pv_calls[fn], 1, __ATOMIC_RELAXED);
    c->t_entry = pv_now();
    pv_depth++; /* MPI's own calls during initialisation are not the application's */
}

void pv_init_end(pv_call *c, int rc)
{
    pv_depth--;
    if (rc == MPI_SUCCESS && pv_depth == 0 && pv_rt.state == PV_UNINIT) {
        pv_depth = 1;
        pv_start(c->fn, c->site, c->t_entry);
        pv_depth = 0;
        if (pv_rt.state == PV_ACTIVE) pv_rt.resume_t = pv_now_cpu(&pv_rt.resume_cpu);
    }
}

void pv_finalize_end(pv_call *c)
{
    (void)c;
    pv_depth = 0;
}

int64_t pv_bytes(MPI_Count count, MPI_Datatype datatype)
{
    int size;
    if (count < 0 || datatype == MPI_DATATYPE_NULL) return -1;
    if (PMPI_Type_size(datatype, &size) != MPI_SUCCESS || size < 0) return -1;
    return (int64_t)count * size;
}
