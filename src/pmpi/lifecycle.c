/* lifecycle.c — starting perfvar after MPI initialisation and writing the trace at MPI_Finalize.
 *
 * Start (pv_start, collective, from the first Init wrapper or lazily from the first traced call):
 * configuration, output directory (rank 0 decides), clock, calibration on this rank's core, clock
 * offsets, the rank's definitions file and first records file (src/recorder), rank-N.json. Any
 * failure: one message, the application runs uninstrumented.
 * Stop: an MPI_COMM_SELF attribute whose delete callback MPI_Finalize runs first, whichever language
 * binding called it, while MPI is still fully usable. It closes the records of every traced thread
 * and converts them into the OTF2 archive (src/trace/convert.h, collective): as MPI requires, the
 * application's other threads have made their last MPI call by then (and, for perfvar, their last
 * user timer start/stop: normally they have joined). Once every rank's records are whole in the
 * archive they are removed (they would double the trace's footprint), unless PERFVAR_KEEP_RECORDS=1;
 * a job that dies before its stop, or whose conversion failed, keeps them for perfvar-recover.
 *
 * The process's runtime state, pv_rt, is defined here and nowhere else reads it: start and stop
 * are its only writers, and they hand the other files what they need (lifecycle.h). */
#define _GNU_SOURCE
#include "lifecycle.h"
#include "comms.h"
#include "messages.h"
#include "runtime.h"
#include "signals.h"
#include "sites.h"
#include "threads.h"
#include "rank_meta.h"
#include "clock_sync.h"
#include "roll_call.h"
#include "comm_pmpi.h"
#include "../calib/work_probe.h"
#include "../clock/clock.h"
#include "../core/message.h"
#include "../metrics/metrics.h"
#include "../timer/region_sink.h"
#include "perfvar.h"
#include "pv_spec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The process's runtime state (lifecycle.h). Its configuration is pv_config_load's from the start
 * on; before it, the per-call path decides a lazy start on PV_BOUNDARIES_DEFAULT (runtime.c). */
static pv_runtime pv_rt = {.cfg = {.boundaries = PV_BOUNDARIES_DEFAULT}};
pv_state_t pv_run_state;

/* Static regions after the MPI functions: the start-up calibration, and the fixed-work probes
 * ("perfvar:probe", PERFVAR_PROBE). */
enum { PV_REGION_CALIBRATION = 0 /* + PV_FN_COUNT */, PV_REGION_PROBE };

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

/* ---- stop ---- */
void pv_finalize_begin(pv_call *c)
{
    pv_rt.finalizer = c->thread;
    pv_rt.finalize_unit = c->unit;
    pv_rt.finalize_entry = c->t_entry;
}

/* Close every thread's records; the finalizing thread's MPI_Finalize record ends now. Returns how
 * many threads' records had stopped early (the file could not grow: a full disk, a file size
 * limit). */
static int close_records(uint64_t t, int cpu)
{
    int stopped = 0;
    if (pv_rt.finalizer && pv_rt.finalize_unit)
        pv_rec_call_end(pv_rt.finalizer->rec, pv_rt.finalize_unit, pv_rt.finalize_entry, t, cpu);
    for (pv_thread *th = pv_threads_head(); th; th = pv_threads_next(th)) {
        pv_rec_stream *s = th->rec;
        __atomic_store_n(&th->rec, NULL, __ATOMIC_RELEASE); /* the signal handler no longer marks it */
        if (s && pv_rec_close(s, t)) stopped++;
    }
    return stopped;
}

/* What went wrong at the stop, in one line per job where the ranks agree (rank 0 says it), else
 * one per rank that differs. */
static void report_stop(int stopped, int rc, const char *why)
{
    int mine[2] = {stopped, rc != PERFVAR_OK}, all[2];
    PMPI_Allreduce(mine, all, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int any_ok = all[1] < pv_rt.size; /* all[1]: the ranks whose conversion failed */
    char early[256] = "";
    if (all[0])
        snprintf(early, sizeof early, "recording stopped early on %d thread(s): a records file could "
                 "not grow (disk full or file size limit)", all[0]);
    if (!all[1]) {
        if (all[0]) pv_message(1, "%s; the trace holds what was recorded before", early);
    } else if (!any_ok) { /* every rank failed: the conversion's checks are collective */
        pv_message(1, "writing the OTF2 trace failed: %s%s%s", why, early[0] ? "; " : "", early);
    } else if (rc != PERFVAR_OK) {
        pv_message(0, "writing the OTF2 trace failed: %s", why);
    }
}

/* 1 when this rank's part of the archive is whole: converted without error or lost event, from
 * records that were whole and closed, with an event file for each location that has events. */
static int rank_archive_whole(int rc, int stopped)
{
    if (rc != PERFVAR_OK || stopped || pv_rt.conv.stats.events_lost) return 0;
    for (int i = 0; i < pv_rt.conv.nthreads; i++) {
        const pv_convert_thread *t = &pv_rt.conv.threads[i];
        char path[4400];
        struct stat st;
        if (t->state != PV_REC_CLOSED || t->lost_units) return 0;
        snprintf(path, sizeof path, "%s/traces/%llu.evt", pv_rt.dir, (unsigned long long)t->location);
        if (t->events && (stat(path, &st) || st.st_size == 0)) return 0;
    }
    return 1;
}

/* Whether the records can go (collective, the same answer on every rank): every rank's part of
 * the archive is whole and the user did not ask to keep them. A rank's records are useless
 * without the others' (perfvar-recover rebuilds the whole job), so it is all or none. */
static int records_done(int rc, int stopped)
{
    int ok = rank_archive_whole(rc, stopped);
    PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return ok && !pv_rt.cfg.keep_records;
}

/* Remove every rank's records (collective), then their directory (rank 0, once all are gone). */
static void remove_records(void)
{
    int failed = pv_rec_remove_rank(pv_rt.dir, (uint32_t)pv_rt.rank) != 0;
    if (failed)
        pv_message(0, "cannot remove the records of this rank from %s/perfvar/records: %s (the "
                   "archive is complete; they can be deleted)", pv_rt.dir, strerror(errno));
    PMPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (pv_rt.rank == 0 && !failed) {
        char path[4400];
        snprintf(path, sizeof path, "%s/perfvar/records", pv_rt.dir);
        rmdir(path); /* ENOTEMPTY: someone put a file there; it stays */
    }
}

/* A start-up calibration that found no flush-0 t_min or t_diff (its core disturbed while the job
 * started: a cold cache, the processes of a build still ending; or PERFVAR_CALIBRATION_* settings
 * no run could meet) runs again at the stop, on the same core, after the job's own work, with its
 * mode's own parameters: the settings that found nothing are set aside. Where it finds both, its
 * results, parameters and samples replace the start-up ones and rank-N.json says calibration.at
 * "MPI_Finalize". About the mode's budget (0.4 s quick) of one rank's time, and only where the
 * verdict would otherwise lack its figures. */
static void calibrate_again(void)
{
    const pv_calib_result *c = &pv_rt.calib;
    if (pv_rt.cfg.calibration == PV_CALIB_OFF || (c->t_min_adds && c->t_diff_adds)) return;
    pv_calib_params params;
    pv_calib_defaults(&params, pv_rt.cfg.calibration);
    pv_calib_result again;
    memset(&again, 0, sizeof again);
    int rc = pv_calib_run(&params, &again);
    if (rc != PERFVAR_OK || !again.t_min_adds || !again.t_diff_adds) {
        pv_calib_free(&again);
        return;
    }
    pv_rt.calib_params = params;
    pv_rt.calib = again;
    pv_rt.calib_at = "MPI_Finalize";
    pv_write_calibration_samples(&pv_rt);
    pv_calib_free(&pv_rt.calib);
    if (pv_rt.cfg.verbose >= 1)
        pv_message(1, "calibrated again at MPI_Finalize: t_min %.1f ns, t_diff %.1f ns", pv_rt.calib.t_min_ns,
                   pv_rt.calib.t_diff_ns);
}

static void stop(void)
{
    int cpu;
    uint64_t t = pv_now_cpu(&cpu);
    pv_depth = 1;
    pv_regions_set_sink(NULL);
    pv_set_state(PV_FINISHED);
    int stopped = close_records(t, cpu);
    calibrate_again();
    pv_neighbours_end(&pv_rt.neighbours); /* beside the trace's end, its scan outside it */
    pv_clock_sync(pv_rt.rank, pv_rt.size, pv_rt.cfg.clock_sync, pv_rt.host, &pv_rt.sync.t_end,
                  &pv_rt.sync.offset_end, &pv_rt.sync.stddev_end);
    pv_rec_defs_line(PV_DEFS_SYNC, (unsigned long long)pv_rt.sync.t_end,
                     (long long)pv_rt.sync.offset_end, pv_rt.sync.stddev_end);
    pv_rec_defs_close();
    pv_trace_comm comm;
    pv_comm_pmpi(&comm, pv_rt.rank, pv_rt.size);
    char why[1024] = "";
    struct timespec c0, c1;
    clock_gettime(CLOCK_MONOTONIC, &c0);
    int rc = pv_convert_rank(pv_rt.dir, pv_rt.rank, &comm, pv_rt.cfg.buffer_mb, &pv_rt.conv, why,
                             sizeof why);
    clock_gettime(CLOCK_MONOTONIC, &c1);
    pv_rt.convert_ms = (double)(c1.tv_sec - c0.tv_sec) * 1e3 + (double)(c1.tv_nsec - c0.tv_nsec) / 1e6;
    if (rc != PERFVAR_OK && !why[0]) snprintf(why, sizeof why, "%s", perfvar_strerror(rc));
    /* rank-N.json says "complete" only when this rank's records are whole and in the archive. */
    pv_rt.converted = rc == PERFVAR_OK && !stopped;
    report_stop(stopped, rc, why);
    pv_rt.records_removed = records_done(rc, stopped);
    /* rank-N.json first: a job killed while the records go still says its archive is complete. */
    pv_write_rank_meta(&pv_rt);
    pv_write_run_meta(&pv_rt);
    pv_neighbours_free(&pv_rt.neighbours);
    if (pv_rt.records_removed) remove_records();
    uint64_t counts[2] = {pv_rt.conv.stats.events_written, pv_rt.conv.stats.events_lost};
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

/* The archive must not exist yet (a reused output directory): 1, or 0 with the reason in why. */
static int archive_absent(char *why, size_t len)
{
    static const char *const parts[] = {"traces.otf2", "traces.def", "traces"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        char path[4400];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", pv_rt.dir, parts[i]);
        if (stat(path, &st) == 0) {
            snprintf(why, len, "%.500s does already exist", path);
            return 0;
        }
    }
    return 1;
}

/* The rank's definitions file: what the records' conversion needs besides the records (recorder.h).
 * 1, or 0 with the reason in why. */
static int write_definitions(char *why, size_t len)
{
    if (pv_rec_defs_open(pv_rt.dir, (uint32_t)pv_rt.rank)) {
        snprintf(why, len, "%.400s/perfvar/records: %s", pv_rt.dir, strerror(errno));
        return 0;
    }
    char host[sizeof pv_rt.host];
    pv_rec_defs_clean(host, sizeof host, pv_rt.host);
    int bad = pv_rec_defs_line(PV_DEFS_RANK, pv_rt.rank, pv_rt.size);
    bad |= pv_rec_defs_line(PV_DEFS_HOST, host);
    int package, core;
    pv_topology_place(&pv_rt.topo, &package, &core);
    bad |= pv_rec_defs_line(PV_DEFS_PLACE, package, core);
    bad |= pv_rec_defs_line(PV_DEFS_CLOCK, pv_rt.clock.hz);
    bad |= pv_rec_defs_line(PV_DEFS_SYNC, (unsigned long long)pv_rt.sync.t_begin,
                            (long long)pv_rt.sync.offset_begin, pv_rt.sync.stddev_begin);
    bad |= pv_rec_defs_line(PV_DEFS_REALTIME, (unsigned long long)pv_rt.realtime_ns,
                            (unsigned long long)pv_rt.realtime_ticks);
    /* Static regions: the MPI functions, then perfvar's own; the same on every rank. The probe's
     * is defined whatever PERFVAR_PROBE says. */
    for (int i = 0; i < PV_FN_COUNT; i++)
        bad |= pv_rec_defs_line(PV_DEFS_REGION, i, (int)pv_fn_info[i].role,
                                (int)OTF2_PARADIGM_MPI, pv_messages_event_role(i), pv_fn_info[i].name);
    bad |= pv_rec_defs_line(PV_DEFS_REGION, PV_FN_COUNT + PV_REGION_CALIBRATION,
                            (int)OTF2_REGION_ROLE_ARTIFICIAL, (int)OTF2_PARADIGM_MEASUREMENT_SYSTEM,
                            PV_REC_EV_NONE, "perfvar calibration");
    bad |= pv_rec_defs_line(PV_DEFS_REGION, PV_FN_COUNT + PV_REGION_PROBE,
                            (int)OTF2_REGION_ROLE_ARTIFICIAL, (int)OTF2_PARADIGM_MEASUREMENT_SYSTEM,
                            PV_REC_EV_NONE, PV_TRACE_PROBE_REGION);
    /* The counters, in the order of a METRIC unit's values. */
    for (int i = 0; i < pv_metrics_count(); i++) {
        char unit[64], desc[256];
        pv_rec_defs_clean(unit, sizeof unit, pv_metrics_unit(i));
        pv_rec_defs_clean(desc, sizeof desc, pv_metrics_description(i));
        bad |= pv_rec_defs_line(PV_DEFS_METRIC, i, pv_metrics_name(i), unit, desc);
    }
    if (bad) snprintf(why, len, "%.400s/perfvar/records: %s", pv_rt.dir, strerror(errno));
    return !bad;
}

/* PERFVAR_METRICS: open this rank's counters, and say once which events could not be (rank 0's
 * line for the job; a rank whose line differs prints its own). Collective. */
static void start_metrics(void)
{
    char why[600], line[700] = "", root[700];
    int n = pv_metrics_init(pv_rt.cfg.metrics[0] ? pv_rt.cfg.metrics : NULL, why, sizeof why);
    if (why[0]) {
        size_t at = (size_t)snprintf(line, sizeof line, "PERFVAR_METRICS: cannot count %s; ", why);
        for (int i = 0; i < n && at < sizeof line; i++)
            at += (size_t)snprintf(line + at, sizeof line - at, "%s%s", i ? "," : "counting ",
                                   pv_metrics_name(i));
        if (!n && at < sizeof line) snprintf(line + at, sizeof line - at, "no counters recorded");
    }
    memcpy(root, line, sizeof root);
    PMPI_Bcast(root, sizeof root, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (pv_rt.rank == 0 && line[0])
        pv_message(1, "%s", line);
    else if (pv_rt.rank != 0 && strcmp(root, line))
        pv_message(0, "%s", line[0] ? line : "PERFVAR_METRICS: every event counted here");
    /* The default set says nothing of what the machine lacks, unless asked to. */
    if (!n && !pv_rt.cfg.metrics[0] && pv_rt.cfg.verbose >= 1)
        pv_message(0, "PERFVAR_METRICS: no software event can be counted here (perf events closed: "
                      "/proc/sys/kernel/perf_event_paranoid, a container?); no counters recorded");
    pv_rt.metrics_min_ticks =
        (uint64_t)((double)pv_rt.cfg.metrics_min_us * 1e3 * pv_clock_ticks_per_ns());
}

/* The message a rank's configuration check leaves (config.h): what pv_config_load is given. */
#define CONFIG_MESSAGE 1024 /* the unknown-variable message lists every variable */

/* "1,3-5": the n ranks of r (increasing), as ranges. */
static void format_ranks(char *out, size_t len, const int *r, int n)
{
    size_t at = 0;
    out[0] = 0;
    for (int i = 0; i < n && at < len;) {
        int j = i;
        while (j + 1 < n && r[j + 1] == r[j] + 1) j++;
        if (j > i)
            at += (size_t)snprintf(out + at, len - at, "%s%d-%d", at ? "," : "", r[i], r[j]);
        else
            at += (size_t)snprintf(out + at, len - at, "%s%d", at ? "," : "", r[i]);
        i = j + 1;
    }
}

/* The ranks that rejected their configuration (msg: why, "" if this rank accepted it): rank 0 says
 * each distinct reason once, naming the ranks unless every rank gave it (collective). */
static void report_configurations(const char *msg)
{
    int root = pv_rt.rank == 0;
    char *all = root ? calloc((size_t)pv_rt.size, CONFIG_MESSAGE) : NULL;
    int *ranks = root ? malloc((size_t)pv_rt.size * sizeof *ranks) : NULL;
    char mine[CONFIG_MESSAGE];
    snprintf(mine, sizeof mine, "%s", msg);
    PMPI_Gather(mine, CONFIG_MESSAGE, MPI_CHAR, all, CONFIG_MESSAGE, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (root && (!all || !ranks)) pv_message(1, "%s; running uninstrumented", msg[0] ? msg : "a rank "
                                             "rejected its configuration");
    for (int r = 0; all && ranks && r < pv_rt.size; r++) {
        const char *m = all + (size_t)r * CONFIG_MESSAGE;
        if (!m[0]) continue;
        int n = 0;
        for (int q = r; q < pv_rt.size; q++) {
            char *o = all + (size_t)q * CONFIG_MESSAGE;
            if (q == r || !strcmp(o, m)) ranks[n++] = q;
            if (q != r && !strcmp(o, m)) o[0] = 0; /* said once */
        }
        char list[256];
        format_ranks(list, sizeof list, ranks, n);
        if (n == pv_rt.size)
            pv_message(1, "%s; running uninstrumented", m);
        else
            pv_message(1, "rank%s %s: %s; running uninstrumented", n > 1 ? "s" : "", list, m);
    }
    free(all), free(ranks);
}

/* The roll call (roll_call.c) before any collective: 1 if every rank is under perfvar; else each
 * traced rank runs uninstrumented, and says why where it knows. */
static int every_rank_traced(void)
{
    int *missing = malloc((size_t)pv_rt.size * sizeof *missing), n = 0, answered = 1;
    if (!missing) return 0; /* with no answer from this rank, rank 0 turns tracing off for all */
    int all = pv_roll_call(pv_rt.rank, pv_rt.size, missing, &n, &answered);
    if (pv_rt.rank == 0 && !all) {
        char list[256];
        format_ranks(list, sizeof list, missing, n);
        pv_message(1, "rank%s %s not under perfvar (no word from %s in %.0f s: an MPMD job with "
                   "perfvar-run on some of its programs only?); running uninstrumented",
                   n > 1 ? "s" : "", list, n > 1 ? "them" : "it", PV_ROLL_CALL_S);
    } else if (!answered) {
        pv_message(0, "no word from rank 0 in %.0f s: is it under perfvar-run? running "
                   "uninstrumented", PV_ANSWER_S);
    }
    free(missing);
    return all;
}

static int pv_start_claim(void)
{
    /* PV_DISABLED until pv_start has worked: other threads' calls pass through meanwhile. */
    pv_state_t expect = PV_UNINIT;
    return __atomic_compare_exchange_n(&pv_run_state, &expect, PV_DISABLED, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE);
}

/* Rank, size, thread level; every rank traced and of one configuration. Collective. 1 or 0. */
static int agree_to_trace(void)
{
    PMPI_Comm_rank(MPI_COMM_WORLD, &pv_rt.rank);
    pv_message_set_rank(pv_rt.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &pv_rt.size);
    PMPI_Query_thread(&pv_rt.thread_level);
    if (!every_rank_traced()) return 0;
    char msg[CONFIG_MESSAGE] = "";
    int ok = pv_config_load(&pv_rt.cfg, msg, sizeof msg) == PERFVAR_OK;
    if (!all_agree(ok)) {
        report_configurations(ok ? "" : msg);
        return 0;
    }
    /* Rank 0 makes the output directory, the others take its name. */
    if (pv_rt.rank == 0) make_output_dir(pv_rt.dir, sizeof pv_rt.dir);
    PMPI_Bcast(pv_rt.dir, sizeof pv_rt.dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    return pv_rt.dir[0] != 0;
}

/* The clock, this rank's calibration (its span in t_calib, ticks), the fixed-work probes, the
 * counters, the clock offset to rank 0 and the realtime anchor. Collective (clock sync). */
static void measure_this_rank(uint64_t t_calib[2])
{
    gethostname(pv_rt.host, sizeof pv_rt.host - 1);
    /* Before the calibration, which runs on the CPU the rank starts on: the one recorded here. */
    pv_topology_read(&pv_rt.topo);
    pv_rt.clock = *pv_clock_init();
    if (pv_rt.clock.note[0]) pv_message(1, "%s", pv_rt.clock.note);

    t_calib[0] = pv_now();
    pv_calib_params *params = &pv_rt.calib_params;
    pv_calib_defaults(params, pv_rt.cfg.calibration);
    pv_config_apply_calib(&pv_rt.cfg, params);
    if (pv_calib_run(params, &pv_rt.calib) != PERFVAR_OK)
        pv_message(0, "calibration skipped: out of memory");
    pv_rt.calib_at = "start-up";
    t_calib[1] = pv_now();
    /* Fixed-work probes: the period in this clock's ticks (K is the same on every rank). */
    pv_rt.probe_period_ticks = pv_work_probe_period_ticks(pv_rt.cfg.probe_ms, pv_clock_ticks_per_ns());
    start_metrics();

    pv_clock_sync(pv_rt.rank, pv_rt.size, pv_rt.cfg.clock_sync, pv_rt.host, &pv_rt.sync.t_begin,
                  &pv_rt.sync.offset_begin, &pv_rt.sync.stddev_begin);
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    pv_rt.realtime_ticks = pv_now();
    pv_rt.realtime_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
}

/* The definitions file, the first thread's records and the user regions' table, on every rank, and
 * the hook on MPI_Finalize. Collective. The first thread, or NULL (said why) to run uninstrumented. */
static pv_thread *open_records(void)
{
    pv_comms_init(pv_rt.rank, pv_rt.size);
    pv_messages_init();
    pv_messages_matched_init(pv_rt.thread_level);
    pv_f_request_null = PMPI_Request_c2f(MPI_REQUEST_NULL);
    pv_f_comm_world = PMPI_Comm_c2f(MPI_COMM_WORLD);
    char why[600] = "";
    int ok_defs = archive_absent(why, sizeof why) && write_definitions(why, sizeof why);
    pv_thread *self = ok_defs ? pv_thread_first(&pv_rt) : NULL;
    if (ok_defs && !self) snprintf(why, sizeof why, "records file: %s", strerror(errno));
    int user_ok = pv_site_user_regions_init() == 0;
    if (!all_agree(self && user_ok)) {
        if (!why[0]) snprintf(why, sizeof why, "on another rank");
        pv_message(1, "cannot create the OTF2 archive in '%s' (%s); running uninstrumented", pv_rt.dir,
                   why);
        return NULL;
    }
    int key;
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_callback, &key, NULL) != MPI_SUCCESS ||
        PMPI_Comm_set_attr(MPI_COMM_SELF, key, NULL) != MPI_SUCCESS) {
        pv_message(1, "cannot hook MPI_Finalize; running uninstrumented");
        return NULL;
    }
    return self;
}

/* The MPI_Init record spans MPI's initialisation and perfvar's calibration inside it. A lazy start
 * (init_fn < 0) records the calibration on its own: perfvar's region, not a segment boundary, so
 * there is no segment before the next call. */
static void record_start(pv_thread *self, int init_fn, void *site, uint64_t t_entry,
                         const uint64_t t_calib[2])
{
    int calib_region = PV_FN_COUNT + PV_REGION_CALIBRATION;
    int site_id = pv_site_id(self, self->site_cache, init_fn >= 0 ? init_fn : calib_region,
                             init_fn >= 0 ? site : NULL);
    if (site_id < 0) return;
    uint64_t t0 = init_fn >= 0 ? t_entry : t_calib[0];
    pv_rec_unit *u = pv_rec_call_begin(self->rec, (uint32_t)site_id, t0, -1);
    if (init_fn >= 0)
        pv_rec_inner(self->rec, PV_REC_NESTED, t0, t_calib[0], t_calib[1], -1, (uint16_t)calib_region);
    int cpu;
    uint64_t t1 = init_fn >= 0 ? pv_now_cpu(&cpu) : t_calib[1];
    pv_rec_call_end(self->rec, u, t0, t1, init_fn >= 0 ? cpu : -1);
}

/* Where the trace's time starts, on this rank's clock: its origin is its first event, the earliest
 * rank's first record (`mine` here: as record_start begins it), on rank 0's clock through the
 * offsets the clock sync measured. Threads time PERFVAR_INJECT's window from it, so that its
 * seconds are the trace's. Collective. */
static uint64_t trace_start_here(uint64_t mine)
{
    int64_t offset = pv_rt.sync.offset_begin;
    uint64_t global = (uint64_t)((int64_t)mine + offset), first = global;
    PMPI_Allreduce(&global, &first, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    return (uint64_t)((int64_t)first - offset);
}

static void pv_start(int init_fn, void *site, uint64_t t_entry)
{
    if (!agree_to_trace()) return;
    uint64_t t_calib[2];
    measure_this_rank(t_calib);
    pv_rt.start_ticks = trace_start_here(init_fn >= 0 ? t_entry : t_calib[0]);
    pv_thread *self = open_records();
    if (!self) return;
    /* Inside MPI_Init's record (or before the first segment of a lazy start): its scan of /proc
     * is no compute segment. Without /proc, rank-N.json says null. */
    pv_neighbours_begin(&pv_rt.neighbours);
    record_start(self, init_fn, site, t_entry, t_calib);
    pv_signals_install();
    pv_write_rank_meta(&pv_rt); /* what a rank that dies before its stop leaves */
    pv_write_run_meta(&pv_rt);
    /* The raw calibration samples go to disk now: not held through the run, kept if it dies. */
    pv_write_calibration_samples(&pv_rt);
    pv_calib_free(&pv_rt.calib);
    /* Its first probe one period from now: the start's own work (the scan, the files) is no
     * segment, and a lazy start's next call, the one that started it, would find the deadline
     * past with no segment before it. */
    uint64_t first = pv_work_probe_deadline(pv_now(), pv_rt.probe_period_ticks);
    if (self->inject.on)
        self->inject.probe_deadline = first;
    else
        self->probe_deadline = first;
    pv_regions_set_sink(&pv_user_sink);
    pv_set_state(PV_ACTIVE);
    if (pv_rt.cfg.verbose >= 1)
        pv_message(1, "tracing %d ranks into %s (clock %s, %.6f GHz %s)", pv_rt.size, pv_rt.dir,
                   pv_rt.clock.name, pv_rt.clock.hz / 1e9, pv_rt.clock.hz_method);
}

int pv_start_hook(int init_fn, void *site, uint64_t t_entry)
{
    if (init_fn < 0) { /* a lazy start: only once MPI is up, and not after it is finalized */
        int init = 0, fin = 0;
        PMPI_Initialized(&init);
        PMPI_Finalized(&fin);
        if (!init || fin) return 0;
    }
    if (!pv_start_claim()) return 0;
    int outer = pv_depth;
    pv_depth = 1; /* MPI's calls inside perfvar's start are not the application's */
    pv_start(init_fn, site, t_entry);
    pv_depth = outer;
    return 1;
}
