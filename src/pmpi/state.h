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
 * - shared definitions (sites, user regions, communicators, the thread list), which go to the
 *   rank's definitions file as they are made: under pv_rt.defs_lock. Each thread caches what it
 *   looked up, so the steady state takes no lock.
 * - messages matched by MPI_Mprobe and not yet received: under pv_rt.messages_lock when MPI provides
 *   MPI_THREAD_MULTIPLE; at lower levels MPI calls are serialised by the application (one thread, or
 *   its own locks), and our accesses inside them with the calls. Requests need no shared state: their
 *   starts and completions are paired when the records are converted (records.h).
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
#include "../recorder/recorder.h"
#include "../trace/convert.h"
#include "perfvar.h"
#include "runtime.h"
#include "inject.h"

typedef enum { PV_UNINIT = 0, PV_ACTIVE, PV_DISABLED, PV_FINISHED } pv_state_t;

/* Static regions after the MPI functions: the start-up calibration, and the fixed-work probes
 * ("perfvar:probe", PERFVAR_PROBE). */
enum { PV_REGION_CALIBRATION = 0 /* + PV_FN_COUNT */, PV_REGION_PROBE };


/* A traced thread. Index 0 is the thread that started perfvar (normally the one that initialised
 * MPI); the others are numbered in the order of their first traced call or user timer start/stop.
 * Its compute segments are implied by its records (from one call's exit to the next call's entry). */
/* A per-thread direct-mapped cache of call sites: (function, return address) -> site id, served
 * `left` more times before the miss path looks at the call again. At call-path depth 1 a filled
 * slot is served (almost) forever; at depth > 1 `left` is when the call path is next unwound to
 * check it (sites.c), 0 when every call is unwound. */
#define PV_SITE_CACHE 256
typedef struct pv_site_slot {
    uintptr_t ra;
    int fn, id;
    uint32_t left; /* calls the slot still answers; 0: empty or the next call is unwound */
} pv_site_slot;

/* Per-thread memos of the facts its call sites made last (pv_rec_fact_memoized): the message of
 * an Isend or Irecv, the status of each request a Waitall completes, which repeat call after call.
 * Indexed by site and position (pv_fact_memo_of); a collision only costs a lookup. */
#define PV_FACT_MEMOS 1024

typedef struct pv_thread {
    int index;
    pv_rec_stream *rec;     /* its records; NULL once closed */
    pv_site_slot site_cache[PV_SITE_CACHE];
    pv_rec_fact_memo fact_memos[PV_FACT_MEMOS];
    uint64_t calls[PV_FN_COUNT]; /* its traced calls per function (plain: its own) */
    uint64_t probe_deadline; /* clock tick from which its next traced call runs a fixed-work probe
                                (PV_WORK_PROBE_NEVER when probes are off) */
    pv_inject_thread inject; /* PERFVAR_INJECT (inject.h): on its rank, probe_deadline is held at 0 */
    uint64_t metrics_min_ticks; /* a traced call whose segment lasted this long reads the counters
                                   (PERFVAR_METRICS_MIN_US); UINT64_MAX when it counts nothing */
    uint64_t metrics_since;  /* entry ticks of the call of its last read (first: counting's start) */
    pv_metrics_thread metrics; /* its PAPI counters (src/metrics) */
    pv_u64map sites;        /* caches of the shared maps below: key -> id; at call-path depth > 1,
                               per (fn, return address): what its call paths showed (sites.c) */
    pv_u64map user_sites;
    pv_u64map paths;        /* call-path depth > 1: cache of pv_rt.sites, path hash -> id */
    uint64_t path_rng;      /* xorshift state of the jittered path checks; 0: not seeded yet */
    struct pv_thread *next; /* pv_rt.threads, in index order */
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
    pv_trace_clock_sync sync;
    uint64_t realtime_ns, realtime_ticks;
    /* fixed-work probes (PERFVAR_PROBE, src/calib/work_probe.h); period 0: off */
    uint64_t probe_period_ticks;
    uint64_t probe_adds;           /* K, the chain length of one probe */
    int probe_adds_calibrated;     /* K is the calibration's flush-0 t_min (else the default) */
    uint64_t metrics_min_ticks;    /* PERFVAR_METRICS_MIN_US in ticks (threads copy it) */

    /* MPI_Finalize entered through a wrapper on this thread: its CALL is ended at the stop */
    pv_thread *finalizer;
    pv_rec_unit *finalize_unit;
    uint64_t finalize_entry;

    /* shared definitions, under defs_lock */
    pthread_mutex_t defs_lock;
    pv_u64map sites;        /* (fn, return address) -> site id; at call-path depth > 1
                               (PERFVAR_CALLPATH), a hash of (fn, return addresses) -> site id */
    pv_u64map user_sites;   /* (user region handle, start|stop, return address) -> site id */
    int nsites, ncomms;     /* ids handed out (communicator 0 is MPI_COMM_WORLD) */
    unsigned char *user_defined; /* user timer handle -> its name is in the definitions file;
                                    read without the lock (atomic), written under it */
    pv_thread *threads;     /* every traced thread, index order */
    int nthreads;

    pthread_mutex_t messages_lock; /* taken only at MPI_THREAD_MULTIPLE */
    pv_u64map messages;     /* matched message -> (comm, source, tag, bytes): messages.c */

    int comm_key;           /* MPI attribute caching a communicator's trace id (comms.c) */
    uint64_t untraced_thread_calls; /* atomic: calls of threads perfvar could not trace */
    int converted;          /* the rank's records were whole and converted at the stop */
    int records_removed;    /* the records were removed at the stop (all ranks' archive whole) */
    double convert_ms;      /* how long the conversion took */
    pv_convert_result conv;
} pv_runtime;

extern pv_runtime pv_rt;
extern _Thread_local pv_thread *pv_self PV_HIDDEN; /* this thread's state, NULL until first traced */

static inline pv_state_t pv_state(void) { return __atomic_load_n(&pv_rt.state, __ATOMIC_ACQUIRE); }
static inline void pv_set_state(pv_state_t s) { __atomic_store_n(&pv_rt.state, s, __ATOMIC_RELEASE); }

/* threads.c: this thread's state, created on its first use while perfvar is active; NULL when the
 * thread cannot be traced (then its call is counted in untraced_thread_calls). pv_thread_first
 * creates thread 0 (pv_start). Thread-safe. */
pv_thread *pv_thread_attach(void);
pv_thread *pv_thread_first(void);

/* sites.c: site id of a call of static region `region` (an MPI function, or perfvar's own), or of
 * a user timer start/stop, defined in the definitions file on first sight; -1 when out of memory.
 * A call's site is its return address, and at call-path depth k > 1 (pv_rt.cfg.callpath) also
 * the return addresses of the k - 1 callers above it (unwound only when needed, see sites.c).
 * Called by thread t for itself (its caches); thread-safe. */
int pv_site_id_miss(pv_thread *t, int region, void *return_address);
static inline pv_site_slot *pv_site_slot_of(pv_thread *t, int region, void *ra)
{
    return &t->site_cache[((uintptr_t)ra >> 1 ^ (uintptr_t)region * 0x9e37u) % PV_SITE_CACHE];
}
/* Most calls come from a few sites whose callers do not vary: the thread's direct-mapped cache
 * first, inline. */
static inline int pv_site_id(pv_thread *t, int region, void *ra)
{
    pv_site_slot *slot = pv_site_slot_of(t, region, ra);
    if (__builtin_expect(slot->ra == (uintptr_t)ra && slot->fn == region && slot->left > 0, 1)) {
        slot->left--;
        return slot->id;
    }
    return pv_site_id_miss(t, region, ra);
}
/* Unwind the calling thread's stack from return address ra (searched among the innermost
 * frames): ra and the return addresses of up to max - 1 callers above it into frames[]; their
 * number (1 when ra is not found: ra alone). Async-signal-unsafe (the unwinder may lock);
 * thread-safe. */
int pv_site_unwind(void *ra, uintptr_t *frames, int max);
/* The unwinder pv_site_unwind uses: "libunwind" (unw_backtrace, loaded on first use) or "libgcc"
 * (_Unwind_Backtrace: libunwind not found at build time or not loadable). Thread-safe. */
const char *pv_site_unwinder(void);
/* The label of site id (as in the trace's segment keys: "<fn>@<module base name>+0x<offset>", then
 * "<<module>+0x<offset>" per caller frame) into out; 0, or -1 when the site has none. Takes
 * defs_lock: for cold paths only. Thread-safe. */
int pv_site_label(int id, char *out, size_t len);
int pv_site_user(pv_thread *t, int handle, int is_stop, const char *name, void *return_address);

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

/* messages.c: message and collective facts of the calling thread's open CALL (see runtime.h for the
 * call protocol). prepare records what a blocking send sends at the call's entry; leave records what
 * the call received, started (a request's handle) and completed (the handles a Wait* had before the
 * call, kept by pv_call_prepare, that it set to MPI_REQUEST_NULL). */
void pv_messages_prepare(pv_call *c, pv_args *a);
void pv_messages_leave(pv_call *c, const pv_args *a, int rc);
/* Whether a status's byte count can be read from the MPI library's own status fields, checked
 * against MPI_Get_elements_x on statuses it set, once at the start (pv_start); otherwise
 * MPI_Get_count is called per receive. */
void pv_messages_init(void);
int pv_messages_status_fields(void); /* 1: read from the fields; 0: MPI_Get_count */
/* The event role (PV_REC_EV_*) of a call of MPI function fn: what its facts stand for. */
unsigned pv_messages_event_role(int fn);

/* runtime.c: a user timer start/stop on thread t at t (its CPU cpu): a CALL at its site, ending the
 * thread's segment, whose exit starts the next one. */
void pv_user_boundary(pv_thread *self, int handle, int is_stop, void *site, uint64_t t, int cpu);

/* lifecycle.c: start after MPI initialisation; init_fn < 0 for a lazy start from another call.
 * Only the caller that moved pv_rt.state from PV_UNINIT (pv_start_claim) starts.
 * pv_user_region_defined: 1 once user timer handle's region is in the definitions file (written
 * on its first use), 0 if it cannot be; thread-safe. */
int pv_user_region_defined(int handle);
int pv_start_claim(void);
void pv_start(int init_fn, void *site, uint64_t t_entry);

/* comms.c: the communicator id of comm in the definitions file (0 = MPI_COMM_WORLD), its size and
 * this process's rank in it; 0 when messages on comm are not recorded (MPI_COMM_NULL, an inter-communicator). The keyval
 * is created by pv_comms_init (pv_start). Thread-safe. */
void pv_comms_init(void);
int pv_comm_lookup_other(MPI_Comm comm, uint32_t *id, int *size, int *rank);
/* MPI_COMM_WORLD, the common case, inline; any other communicator through its attribute. */
static inline int pv_comm_lookup(MPI_Comm comm, uint32_t *id, int *size, int *rank)
{
    if (comm != MPI_COMM_WORLD) return pv_comm_lookup_other(comm, id, size, rank);
    *id = 0, *size = pv_rt.size, *rank = pv_rt.rank;
    return 1;
}

/* comm_pmpi.c: the trace writer's collective operations over PMPI on MPI_COMM_WORLD. */
void pv_comm_pmpi(pv_trace_comm *comm, int rank, int size);

/* clock_sync.c: this rank's offset to rank 0's clock (collective over MPI_COMM_WORLD). */
void pv_clock_sync(pv_sync_mode mode, const char *host, uint64_t *t, int64_t *offset, double *stddev);

/* roll_call.c: 1 if every rank of MPI_COMM_WORLD is under perfvar, asked by messages before any
 * collective. Rank 0 waits at most PV_ROLL_CALL_S for the others and lists the ranks that did not
 * call in missing (room for pv_rt.size); the others wait at most PV_ANSWER_S for its answer, and
 * *answered = 0 when none came. Called once, by the starting thread. */
#define PV_ROLL_CALL_S 10.0
#define PV_ANSWER_S 30.0
int pv_roll_call(int *missing, int *n_missing, int *answered);

/* rank_meta.c: DIR/perfvar/rank-N.json and (rank 0) run.json; 0 or -1 (message printed). Written
 * at the start (what a rank that dies leaves) and again at the stop, with the trace's figures. */
int pv_write_rank_meta(void);
/* DIR/perfvar/calibration-rank-N.json: the raw distributions of the start-up calibration. */
int pv_write_calibration_samples(void);
int pv_write_run_meta(void);

/* signals.c: mark every thread's records with a fatal signal before the application's own handler
 * (or the default action) runs. Installed at the start. */
void pv_signals_install(void);


#endif
