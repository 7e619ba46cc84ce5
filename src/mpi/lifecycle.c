/* lifecycle.c — starting perfvar after MPI initialisation and writing the trace at MPI_Finalize.
 *
 * Start (pv_start, collective, from the first Init wrapper or lazily from the first traced call):
 * configuration, output directory (rank 0 decides), clock, calibration on this rank's core, clock
 * offsets, OTF2 archive. Any failure: one message, the application runs uninstrumented.
 * Stop: an MPI_COMM_SELF attribute whose delete callback MPI_Finalize runs first, whichever language
 * binding called it, while MPI is still fully usable. It writes the buffers of every traced thread:
 * as MPI requires, the application's other threads have made their last MPI call by then (and, for
 * perfvar, their last user timer start/stop: normally they have joined). */
#define _GNU_SOURCE
#include "state.h"
#include "../clock/clock.h"
#include "../timer/region_sink.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void pv_message(int rank0_only, const char *fmt, ...)
{
    if (rank0_only && pv_rt.rank != 0) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (rank0_only)
        fprintf(stderr, "perfvar: %s\n", buf);
    else
        fprintf(stderr, "perfvar: rank %d: %s\n", pv_rt.rank, buf);
}

static int mkdir_p(const char *path)
{
    char tmp[4400];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0755) && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(tmp, 0755) && errno != EEXIST ? -1 : 0;
}

/* Rank 0: choose and create the trace directory; "" and a message on failure. */
static void make_output_dir(char *dir, size_t len)
{
    if (pv_rt.cfg.output[0]) {
        snprintf(dir, len, "%s", pv_rt.cfg.output);
    } else {
        char stamp[32];
        time_t now = time(NULL);
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime(&now));
        snprintf(dir, len, "perfvar-%s", stamp);
        struct stat st;
        for (int i = 2; stat(dir, &st) == 0 && i < 1000; i++)
            snprintf(dir, len, "perfvar-%s-%d", stamp, i);
    }
    char meta[4200], probe[4300];
    snprintf(meta, sizeof meta, "%s/perfvar", dir);
    snprintf(probe, sizeof probe, "%s/.write-test", meta);
    FILE *f = NULL;
    if (mkdir_p(meta) == 0 && (f = fopen(probe, "w"))) {
        fclose(f);
        unlink(probe);
        return;
    }
    pv_message(1, "cannot write the trace directory '%s' (%s); running uninstrumented", dir,
               strerror(errno));
    dir[0] = 0;
}

/* ---- user timer regions in the trace: local region id of a handle, defined on first use ---- */
uint32_t pv_user_region(int handle)
{
    if (!pv_rt.user_regions || handle < 0 || handle >= PERFVAR_MAX_REGIONS) return UINT32_MAX;
    uint32_t id = __atomic_load_n(&pv_rt.user_regions[handle], __ATOMIC_ACQUIRE);
    if (id) return id - 1;
    pthread_mutex_lock(&pv_rt.defs_lock);
    id = pv_rt.user_regions[handle]; /* another thread may have defined it meanwhile */
    if (!id) {
        char canonical[PERFVAR_NAME_MAX + 16];
        const char *name = pv_region_name(handle);
        snprintf(canonical, sizeof canonical, "perfvar:user:%s", name ? name : "?");
        uint32_t r = pv_trace_region_define(canonical, name ? name : "?", OTF2_REGION_ROLE_FUNCTION,
                                            OTF2_PARADIGM_USER);
        if (r != UINT32_MAX) __atomic_store_n(&pv_rt.user_regions[handle], id = r + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&pv_rt.defs_lock);
    return id ? id - 1 : UINT32_MAX;
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
    if (self) pv_user_boundary(self, handle, 0, site, t, cpu);
}

static void user_leave(int handle, uint64_t t, int cpu, void *site)
{
    pv_thread *self = timer_thread();
    if (self) pv_user_boundary(self, handle, 1, site, t, cpu);
}

static const pv_region_sink user_sink = {user_enter, user_leave};

/* ---- stop ---- */
static void stop(void)
{
    uint64_t t = pv_now();
    pv_depth = 1;
    if (pv_rt.finalizer) pv_trace_leave(pv_rt.finalizer->loc, t, (uint32_t)PV_FN_MPI_Finalize, -1);
    pv_regions_set_sink(NULL);
    pv_set_state(PV_FINISHED);
    pv_clock_sync(pv_rt.cfg.clock_sync, pv_rt.host, &pv_rt.sync.t_end, &pv_rt.sync.offset_end,
                  &pv_rt.sync.stddev_end);
    /* One timer resolution for the whole trace: rank 0's (same-host ranks measure the same TSC). */
    double hz = pv_rt.clock.hz;
    PMPI_Bcast(&hz, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    int rc = pv_trace_close(hz, pv_rt.host, &pv_rt.sync, pv_rt.realtime_ns, pv_rt.realtime_ticks,
                            &pv_rt.trace_stats);
    if (rc != PERFVAR_OK) pv_message(0, "writing the OTF2 trace failed: %s", perfvar_strerror(rc));
    pv_write_rank_meta();
    pv_write_run_meta();
    uint64_t counts[2] = {pv_rt.trace_stats.events_written, pv_rt.trace_stats.events_lost};
    PMPI_Reduce(pv_rt.rank ? counts : MPI_IN_PLACE, counts, 2, MPI_UINT64_T, MPI_SUM, 0,
                MPI_COMM_WORLD);
    if (pv_rt.cfg.verbose >= 1 || counts[1])
        pv_message(1, "trace written to %s: %d ranks, %llu events, %llu lost", pv_rt.dir, pv_rt.size,
                   (unsigned long long)counts[0], (unsigned long long)counts[1]);
}

static int finalize_callback(MPI_Comm comm, int key, void *value, void *extra)
{
    (void)comm, (void)key, (void)value, (void)extra;
    if (pv_state() == PV_ACTIVE) stop();
    return MPI_SUCCESS;
}

/* ---- start ---- */
static int all_agree(int ok)
{
    PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return ok;
}

int pv_start_claim(void)
{
    /* PV_DISABLED until pv_start has worked: other threads' calls pass through meanwhile. */
    pv_state_t expect = PV_UNINIT;
    return __atomic_compare_exchange_n(&pv_rt.state, &expect, PV_DISABLED, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE);
}

void pv_start(int init_fn, void *site, uint64_t t_entry)
{
    PMPI_Comm_rank(MPI_COMM_WORLD, &pv_rt.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &pv_rt.size);
    PMPI_Query_thread(&pv_rt.thread_level);
    char msg[512];
    int ok = pv_config_load(&pv_rt.cfg, msg, sizeof msg) == PERFVAR_OK;
    if (!ok) pv_message(1, "%s; running uninstrumented", msg);
    if (!all_agree(ok)) return;

    if (pv_rt.rank == 0) make_output_dir(pv_rt.dir, sizeof pv_rt.dir);
    PMPI_Bcast(pv_rt.dir, sizeof pv_rt.dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (!pv_rt.dir[0]) return;

    gethostname(pv_rt.host, sizeof pv_rt.host - 1);
    pv_rt.clock = *pv_clock_init();
    if (pv_rt.clock.note[0]) pv_message(1, "%s", pv_rt.clock.note);

    uint64_t t_calib0 = pv_now();
    pv_calib_params *params = &pv_rt.calib_params;
    pv_calib_defaults(params, pv_rt.cfg.calibration);
    pv_config_apply_calib(&pv_rt.cfg, params);
    if (pv_calib_run(params, &pv_rt.calib) != PERFVAR_OK)
        pv_message(0, "calibration skipped: out of memory");
    uint64_t t_calib1 = pv_now();
    /* Fixed-work probes: K from this rank's own calibration, the period in this clock's ticks. */
    pv_rt.probe_adds = pv_work_probe_adds(&pv_rt.calib, &pv_rt.probe_adds_calibrated);
    pv_rt.probe_period_ticks = pv_work_probe_period_ticks(pv_rt.cfg.probe_ms, pv_clock_ticks_per_ns());

    pv_clock_sync(pv_rt.cfg.clock_sync, pv_rt.host, &pv_rt.sync.t_begin, &pv_rt.sync.offset_begin,
                  &pv_rt.sync.stddev_begin);
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    pv_rt.realtime_ticks = pv_now();
    pv_rt.realtime_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;

    static pv_static_region regions[PV_FN_COUNT + PV_NSTATIC_EXTRA];
    for (int i = 0; i < PV_FN_COUNT; i++)
        regions[i] = (pv_static_region){pv_fn_info[i].name, pv_fn_info[i].role, OTF2_PARADIGM_MPI};
    regions[PV_FN_COUNT + PV_REGION_CALIBRATION] = (pv_static_region){
        "perfvar calibration", OTF2_REGION_ROLE_ARTIFICIAL, OTF2_PARADIGM_MEASUREMENT_SYSTEM};
    /* Defined whatever PERFVAR_PROBE says: static regions must be the same on every rank. */
    regions[PV_FN_COUNT + PV_REGION_PROBE] = (pv_static_region){
        "perfvar:probe", OTF2_REGION_ROLE_ARTIFICIAL, OTF2_PARADIGM_MEASUREMENT_SYSTEM};
    pv_trace_comm comm;
    pv_comm_pmpi(&comm, pv_rt.rank, pv_rt.size);
    pv_comms_init();
    char trace_dir[4200];
    snprintf(trace_dir, sizeof trace_dir, "%s", pv_rt.dir);
    int rc = pv_trace_open(trace_dir, pv_rt.cfg.buffer_mb, regions, PV_FN_COUNT + PV_NSTATIC_EXTRA,
                           &comm);
    pv_thread *self = rc == PERFVAR_OK ? pv_thread_first() : NULL;
    pv_rt.user_regions = calloc(PERFVAR_MAX_REGIONS, sizeof *pv_rt.user_regions);
    if (!all_agree(self && pv_rt.user_regions)) {
        const char *why = pv_trace_open_error();
        pv_message(1, "cannot create the OTF2 archive in '%s'%s%s%s; running uninstrumented", pv_rt.dir,
                   why[0] ? " (" : "", why, why[0] ? ")" : "");
        return;
    }
    int key;
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_callback, &key, NULL) != MPI_SUCCESS ||
        PMPI_Comm_set_attr(MPI_COMM_SELF, key, NULL) != MPI_SUCCESS) {
        pv_message(1, "cannot hook MPI_Finalize; running uninstrumented");
        return;
    }

    /* The MPI_Init region spans MPI's initialisation and perfvar's calibration inside it. A lazy
     * start (init_fn < 0) has no MPI_Init region and no segment before the next call. */
    if (init_fn >= 0) pv_trace_enter(self->loc, t_entry, (uint32_t)init_fn, -1);
    pv_trace_enter(self->loc, t_calib0, PV_FN_COUNT + PV_REGION_CALIBRATION, -1);
    pv_trace_leave(self->loc, t_calib1, PV_FN_COUNT + PV_REGION_CALIBRATION, -1);
    if (init_fn >= 0) {
        pv_trace_leave(self->loc, pv_now(), (uint32_t)init_fn, -1);
        self->prev_site = pv_site_id(self, init_fn, site);
    }
    /* The raw calibration samples go to disk now: not held through the run, kept if it dies. */
    pv_write_calibration_samples();
    pv_calib_free(&pv_rt.calib);
    pv_regions_set_sink(&user_sink);
    pv_set_state(PV_ACTIVE);
    if (pv_rt.cfg.verbose >= 1)
        pv_message(1, "tracing %d ranks into %s (clock %s, %.6f GHz %s)", pv_rt.size, pv_rt.dir,
                   pv_rt.clock.name, pv_rt.clock.hz / 1e9, pv_rt.clock.hz_method);
}
