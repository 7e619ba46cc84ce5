/* runtime.c — the call protocol of generated wrappers: call records, probes, guard; see runtime.h. */
#include "runtime.h"
#include "call_end.h"
#include "lifecycle.h"
#include "messages.h"
#include "sites.h"
#include "threads.h"
#include "../calib/work_probe.h"
#include "../clock/clock.h"
#include "../metrics/metrics.h"
#include "../recorder/recorder.h"
#include "../timer/region_sink.h"

#include <stdlib.h>
#include <string.h>

_Thread_local int pv_depth PV_HIDDEN;
MPI_Fint pv_f_request_null, pv_f_comm_world;
uint64_t pv_calls[PV_FN_COUNT];


/* Run a fixed-work probe on thread t, whose traced call's entry read is at or past its deadline,
 * and record it in the call's record: the call's region starts where the probe ends, so the probe's
 * time is counted in neither the segment nor the call. Out of line and cold: the hot path only
 * compares the deadline. */
static __attribute__((noinline, cold)) void work_probe(pv_thread *t, uint64_t t_entry)
{
    pv_work_probe_sample s;
    pv_work_probe_run(PV_WORK_PROBE_ADDS, &s);
    uint16_t cpu_end = s.cpu_end >= 0 && s.cpu_end < (int)PV_REC_CPU_MASK ? (uint16_t)s.cpu_end
                                                                          : (uint16_t)PV_REC_CPU_UNKNOWN;
    pv_rec_inner(t->rec, PV_REC_PROBE, t_entry, s.t_begin, s.t_end, s.cpu_begin, cpu_end);
    /* From the probe's own start: probes on a thread start at least one period apart. */
    t->probe_deadline = pv_work_probe_deadline(s.t_begin, t->probe_period_ticks);
}

_Static_assert(PV_METRICS_MAX <= PV_REC_METRIC_MAX, "a METRIC unit holds every counter");

/* Read thread t's counters at the entry (t_entry) of a call that ends a long enough segment, and
 * record their deltas after its CALL unit. Right after the entry read, so the interval ends with
 * the segment; the read's own cost falls inside the call's region. */
static __attribute__((noinline, cold)) void metrics_read(pv_thread *t, uint64_t t_entry)
{
    uint64_t delta[PV_METRICS_MAX];
    int n = pv_metrics_read(&t->metrics, delta);
    if (!n) return; /* a failed read: its counts go to the next one */
    pv_rec_metric(t->rec, t->metrics_since, delta, (unsigned)n);
    t->metrics_since = t_entry;
}

/* Whether the segment that ends at t_entry is long enough to read the counters at its end. A
 * thread's first call (last_exit 0) passes too, and its cold path reads nothing: no segment ends
 * there. */
static inline int metrics_due(const pv_thread *t, uint64_t t_entry)
{
    return t_entry - t->rec->last_exit >= t->metrics_min_ticks;
}

/* The begin of a call whose entry read reached the thread's probe deadline or ends a segment long
 * enough to read the counters: on a PERFVAR_INJECT rank (deadline held at 0: every call) the extra
 * work first, which moves the entry read; then the CALL record, the counters, then the fixed-work
 * probe when its own deadline is due. */
static __attribute__((noinline, cold)) void call_begin_cold(pv_thread *t, pv_call *c)
{
    uint64_t probe_deadline = t->probe_deadline;
    if (t->inject.on) {
        c->t_entry = pv_inject_run(t, c->site_id, c->t_entry, &c->cpu_entry);
        probe_deadline = t->inject.probe_deadline;
    }
    int read = t->rec->last_exit && metrics_due(t, c->t_entry);
    c->unit = pv_rec_call_begin(t->rec, (uint32_t)c->site_id, c->t_entry, c->cpu_entry);
    if (read) metrics_read(t, c->t_entry);
    if (pv_work_probe_due(c->t_entry, probe_deadline)) {
        work_probe(t, c->t_entry);
        if (t->inject.on) t->inject.probe_deadline = t->probe_deadline, t->probe_deadline = 0;
    }
}

/* A user timer start/stop on thread self at t (its CPU cpu): a CALL at its site, ending the
 * thread's segment, whose exit starts the next one. */
static void user_boundary(pv_thread *self, int handle, int is_stop, void *site, uint64_t t, int cpu)
{
    if (pv_depth) return; /* a timer inside an MPI call (a callback): not a segment boundary */
    const char *name = pv_region_name(handle);
    int site_id = pv_site_user(self, handle, is_stop, name ? name : "?", site);
    if (site_id < 0 || !pv_site_user_region_defined(handle)) return;
    int read = self->rec->last_exit && metrics_due(self, t);
    pv_rec_unit *u = pv_rec_call_begin(self->rec, (uint32_t)site_id, t, cpu);
    if (read) metrics_read(self, t);
    int cpu_exit;
    uint64_t t_exit = pv_now_cpu(&cpu_exit); /* last: starts the next segment */
    pv_rec_call_end(self->rec, u, t, t_exit, cpu_exit);
}

/* The calling thread's state if its timers are traced now, else NULL. */
static pv_thread *timer_thread(void)
{
    if (pv_state() != PV_ACTIVE || pv_depth) return NULL;
    pv_thread *self = pv_self;
    return self ? self : pv_thread_attach();
}

static void user_enter(int handle, uint64_t t, int cpu, void *site)
{
    pv_thread *self = timer_thread();
    if (self) user_boundary(self, handle, 0, site, t, cpu);
}

static void user_leave(int handle, uint64_t t, int cpu, void *site)
{
    pv_thread *self = timer_thread();
    if (self) user_boundary(self, handle, 1, site, t, cpu);
}

const pv_region_sink pv_user_sink = {user_enter, user_leave};

/* The calling thread's state if a call of fn is traced, past what the per-call path checks: the
 * thread's first traced call, a call perfvar's start has to come first, or a call not traced (its
 * group, perfvar not active, a thread that cannot be traced: then it is counted, NULL). */
static __attribute__((noinline, cold)) pv_thread *enter_cold(int fn, pv_thread *self)
{
    pv_state_t state = pv_state(); /* acquire: when active, the threads' runtime is seen */
    const pv_runtime *rt = pv_threads_runtime();
    /* Before the start nothing is configured: the default groups decide a lazy start. */
    unsigned boundaries = self ? self->boundaries : rt ? rt->cfg.boundaries : PV_BOUNDARIES_DEFAULT;
    int traced = (boundaries & (1u << pv_fn_info[fn].group)) != 0;
    if (traced && state == PV_UNINIT) {
        /* A program whose MPI_Init we did not see (initialised through a binding perfvar does
         * not wrap): start now, if MPI is up. Calls that other threads make meanwhile pass
         * through untraced (perfvar's start is collective and must not meet them: a lazy start
         * assumes the first traced call comes before other threads call MPI). */
        pv_start_hook(-1, NULL, 0);
        self = pv_self;
    }
    if (!traced || pv_state() != PV_ACTIVE || (!self && !(self = pv_thread_attach()))) {
        __atomic_fetch_add(&pv_calls[fn], 1, __ATOMIC_RELAXED);
        return NULL;
    }
    return self;
}

int pv_call_enter(pv_call *c, int fn, void *site)
{
    int *depth = &pv_depth; /* thread-locals: looked up once per call */
    pv_thread *self = pv_self;
    if (*depth) return 0; /* an inner layer of a call already seen, or perfvar's own call */
    if (__builtin_expect(!self || !(self->boundaries & (1u << pv_fn_info[fn].group)) ||
                             pv_state() != PV_ACTIVE,
                         0)) {
        if (!(self = enter_cold(fn, self))) {
            ++*depth; /* counted, not traced: released by pv_untraced_end */
            return -1;
        }
    }
    self->calls[fn]++;
    c->t_entry = pv_now_cpu(&c->cpu_entry); /* first: ends the compute segment */
    *depth = 1;
    c->fn = fn;
    c->thread = self;
    c->site_id = pv_site_id(self, self->site_cache, fn, site);
    if (__builtin_expect(c->site_id < 0, 0)) return -1; /* out of memory: not traced */
    /* One branch for both rare cases: a probe due, a segment long enough to read counters. */
    if (__builtin_expect(pv_work_probe_due(c->t_entry, self->probe_deadline) |
                             metrics_due(self, c->t_entry),
                         0))
        call_begin_cold(self, c);
    else
        c->unit = pv_rec_call_begin(self->rec, (uint32_t)c->site_id, c->t_entry, c->cpu_entry);
    return 1;
}

void pv_call_prepare(pv_call *c, pv_args *a)
{
    c->heap_statuses = NULL;
    c->heap_keys = NULL;
    c->heap_fstatuses = NULL;
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
    if (a->nreq > PV_INLINE_REQUESTS) keys = c->heap_keys = malloc((size_t)a->nreq * sizeof *keys);
    if (keys) {
        for (int i = 0; i < a->nreq; i++)
            keys[i] = a->requests ? a->requests[i] : PMPI_Request_f2c(a->frequests[i]);
    } else {
        a->nreq = 0; /* no memory: the completions go unrecorded */
    }
    pv_messages_prepare(c, a);
}

void pv_call_leave(pv_call *c, pv_args *a, int rc)
{
    unsigned kind = pv_fn_info[c->fn].kind;
    if (a->nreq || kind != PV_KIND_WAIT) pv_messages_leave(c, a, rc);
    /* Only a Wait* allocates (see pv_call); it is always prepared, so the pointers are set. */
    if (kind == PV_KIND_WAIT && __builtin_expect(c->heap_statuses || c->heap_keys || c->heap_fstatuses, 0)) {
        free(c->heap_statuses);
        free(c->heap_keys);
        free(c->heap_fstatuses);
    }
    pv_call_end_inline(c);
}

void pv_call_end(pv_call *c) { pv_call_end_inline(c); }

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
    if (rc == MPI_SUCCESS && pv_depth == 0 && pv_state() == PV_UNINIT)
        pv_start_hook(c->fn, c->site, c->t_entry);
}

void pv_finalize_end(pv_call *c)
{
    (void)c;
    pv_depth = 0;
}

_Thread_local pv_type_size pv_type_cache[1 << PV_TYPE_CACHE_BITS] PV_HIDDEN;

int64_t pv_bytes_miss(MPI_Count count, MPI_Datatype datatype, pv_type_size *slot)
{
    int size, ni, na, nd, combiner;
    if (count < 0 || datatype == MPI_DATATYPE_NULL) return -1;
    if (PMPI_Type_size(datatype, &size) != MPI_SUCCESS || size < 0) return -1;
    /* Predefined (never freed): cached. */
    if (PMPI_Type_get_envelope(datatype, &ni, &na, &nd, &combiner) == MPI_SUCCESS &&
        combiner == MPI_COMBINER_NAMED)
        slot->type = datatype, slot->size_1 = (int64_t)size + 1;
    return (int64_t)count * size;
}
