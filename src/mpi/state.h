/*
 * state.h — perfvar's per-process MPI runtime state, shared by the files of src/mpi (internal).
 * Written by the traced thread only (the thread that initialised MPI), except g_state which other
 * threads read to decide to pass through.
 */
#ifndef PV_MPI_STATE_H
#define PV_MPI_STATE_H
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>

#include "../calib/calib.h"
#include "../config/config.h"
#include "../core/u64map.h"
#include "../trace/trace.h"
#include "perfvar.h"
#include "runtime.h"

typedef enum { PV_UNINIT = 0, PV_ACTIVE, PV_DISABLED, PV_FINISHED } pv_state_t;

/* Static regions after the MPI functions. */
enum { PV_REGION_CALIBRATION = 0 /* + PV_FN_COUNT */, PV_NSTATIC_EXTRA };

#define PV_MAX_CPUS 4096

typedef struct pv_runtime {
    volatile pv_state_t state;
    pthread_t thread;
    int rank, size;
    char host[256];
    char dir[4096];
    pv_config cfg;
    perfvar_clock_info clock;
    pv_calib_params calib_params;
    pv_calib_result calib;
    pv_trace_clock_sync sync;
    uint64_t realtime_ns, realtime_ticks;

    /* segments */
    int prev_site;          /* site of the last traced call, -1 before MPI_Init returns */
    uint64_t resume_t;      /* when the application resumed after it */
    int resume_cpu;
    uint64_t nsegments;
    int in_finalize;        /* MPI_Finalize entered through a wrapper, its Leave is pending */
    pv_u64map sites;        /* (fn, return address) -> site id */
    pv_u64map user_sites;   /* (user region handle, start|stop, return address) -> site id */
    pv_u64map segments;     /* (from site, to site) -> local region id */
    char **site_names;      /* site id -> "MPI_x@/abs/module+0xoff" */
    char **site_labels;     /* site id -> "MPI_x@module+0xoff" */
    int nsites, sites_cap;
    pv_u64map requests;     /* pending receive request -> (source | tag << 32, bytes) */
    uint32_t *user_regions; /* user timer handle -> local region id (+1; 0 = not defined yet) */
    uint64_t untraced_thread_calls;
    unsigned char cpus_seen[PV_MAX_CPUS / 8];
    pv_trace_stats trace_stats;
} pv_runtime;

extern pv_runtime pv_rt;
extern _Thread_local int pv_depth;

/* sites.c: site id of an MPI call or of a user timer start/stop (defines its name on first sight);
 * local region id of a segment. -1 / UINT32_MAX when out of memory. */
int pv_site_id(int fn, void *return_address);
int pv_site_user(int handle, int is_stop, const char *name, void *return_address);
uint32_t pv_segment_region(int from_site, int to_site);
void pv_note_cpu(int cpu);

/* messages.c: message and collective records (see runtime.h for the call protocol). */
void pv_messages_prepare(int fn, uint64_t t_entry, pv_args *a);
void pv_messages_leave(int fn, uint64_t t_exit, const pv_args *a, const MPI_Request *keys, int rc);

/* runtime.c: a user timer start/stop on the traced thread: ends the current segment at t, records
 * the user region's Enter/Leave, starts the next segment. */
void pv_user_boundary(int handle, int is_stop, void *site, uint64_t t, int cpu);

/* lifecycle.c: start after MPI initialisation; init_fn < 0 for a lazy start from another call.
 * pv_user_region: local region id of a user timer handle (UINT32_MAX on failure). */
uint32_t pv_user_region(int handle);
void pv_start(int init_fn, void *site, uint64_t t_entry);

/* comm_pmpi.c: the trace writer's collective operations over PMPI on MPI_COMM_WORLD. */
void pv_comm_pmpi(pv_trace_comm *comm, int rank, int size);

/* clock_sync.c: this rank's offset to rank 0's clock (collective over MPI_COMM_WORLD). */
void pv_clock_sync(pv_sync_mode mode, const char *host, uint64_t *t, int64_t *offset, double *stddev);

/* rank_meta.c: DIR/perfvar/rank-N.json and (rank 0) run.json; 0 or -1 (message printed). */
int pv_write_rank_meta(void);
/* DIR/perfvar/calibration-rank-N.json: the raw distributions of the start-up calibration. */
int pv_write_calibration_samples(void);
int pv_write_run_meta(void);

/* Print "perfvar: ..." on stderr (only on rank 0 when rank0_only). */
void pv_message(int rank0_only, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
