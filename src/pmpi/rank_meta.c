/* rank_meta.c — DIR/perfvar/rank-N.json (every rank), DIR/perfvar/run.json (rank 0) and
 * calibration-rank-N.json, from the runtime's state it is given (rank_meta.h). */
#define _GNU_SOURCE
#include "rank_meta.h"
#include "messages.h"
#include "threads.h"
#include "../calib/work_probe.h"
#include "../clock/clock.h"
#include "../core/message.h"
#include "../metrics/metrics.h"
#include "pv_spec.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Write s as a JSON string. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static FILE *open_meta(const pv_runtime *rt, const char *name)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/perfvar/%s", rt->dir, name);
    FILE *f = fopen(path, "w");
    if (!f) pv_message(0, "cannot write %s: %s", path, strerror(errno));
    return f;
}

/* "mpi": the MPI library, which groups were traced, and the calls the application made. */
static void write_mpi_meta(const pv_runtime *rt, FILE *f)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    PMPI_Get_library_version(version, &len);
    version[strcspn(version, "\n")] = 0;
    fprintf(f, "  " PV_RJ_MPI "{" PV_RJ_MPI_LIBRARY);
    json_str(f, version);
    fprintf(f, ", " PV_RJ_MPI_LAYER "\"%s\", " PV_RJ_MPI_STATUS_SIZES "\"%s\",\n    " PV_RJ_MPI_BOUNDARIES "[",
            PV_MPI_FLAVOUR,
            pv_messages_status_fields() ? "fields" : "MPI_Get_count");
    const char *sep = "";
    for (int g = 0; g < PV_GROUP_COUNT; g++) {
        if (!(rt->cfg.boundaries & (1u << g))) continue;
        fprintf(f, "%s\"%s\"", sep, pv_group_names[g]);
        sep = ", ";
    }
    /* Frames per call site (PERFVAR_CALLPATH), which name the segment classes, and what walked the
     * stack for them (its cost differs tenfold: docs/tracing.md). */
    int depth = rt->cfg.callpath > 0 ? rt->cfg.callpath : 1;
    fprintf(f, "],\n    " PV_RJ_MPI_CALLPATH_DEPTH "%d, " PV_RJ_MPI_CALLPATH_UNWINDER "\"%s\",", depth,
            depth > 1 ? pv_site_unwinder() : "none");
    fprintf(f, "\n    " PV_RJ_MPI_CALLS "{");
    sep = "";
    for (int fn = 0; fn < PV_FN_COUNT; fn++) {
        uint64_t n = __atomic_load_n(&pv_calls[fn], __ATOMIC_RELAXED);
        for (const pv_thread *t = pv_threads_head(); t; t = pv_threads_next(t)) n += t->calls[fn];
        if (!n) continue;
        fprintf(f, "%s\"%s\": %llu", sep, pv_fn_info[fn].name, (unsigned long long)n);
        sep = ", ";
    }
    fprintf(f, "}},\n");
}

/* One state's result (rank-N.json calibration.states[] and calibration.cycles.state): times are
 * named by the state's unit (t_min_ns, ns_per_add; t_min_cycles, cycles_per_add). */
static void write_state(FILE *f, const pv_calib_state *st, const char *sep)
{
    const char *u = st->unit ? st->unit : "ns";
    fprintf(f, "%s{" PV_RJ_STATE_LABEL "\"%s\", " PV_RJ_STATE_FLUSH "%llu, " PV_RJ_STATE_N_SAMPLES "%d, "
               PV_RJ_STATE_N_REQUESTED "%d, " PV_RJ_STATE_STATUS "\"%s\", " PV_RJ_STATE_NOTE,
            sep, st->label ? st->label : "0", (unsigned long long)st->flush_bytes, st->n_samples, st->n_requested,
            st->status);
    json_str(f, st->note);
    fprintf(f,
            ",\n       " PV_RJ_STATE_T_MIN_UNIT "%.3f, " PV_RJ_STATE_T_DIFF_UNIT "%.3f, " PV_RJ_STATE_UNIT_PER_ADD
            "%.5f, " PV_RJ_STATE_T_MIN_ADDS "%llu, " PV_RJ_STATE_T_DIFF_ADDS "%llu, " PV_RJ_STATE_T_MIN_CV "%.5f, "
            PV_RJ_STATE_T_DIFF_OVERLAP "%.4f,\n       " PV_RJ_STATE_BUDGET_MS "%.3f, " PV_RJ_STATE_ELAPSED_MS "%.3f, "
            PV_RJ_STATE_FLUSH_MS "%.4f, " PV_RJ_STATE_DISTRIBUTIONS "%d, " PV_RJ_STATE_DROPPED "%d}",
            u, st->t_min, u, st->t_diff, u, st->per_add, (unsigned long long)st->t_min_adds,
            (unsigned long long)st->t_diff_adds, st->t_min_cv, st->t_diff_overlap, st->budget_ms, st->elapsed_ms,
            st->flush_ms, st->ndists, st->dists_dropped);
}

/* calibration.cycles: the cycle counter's pass, or why there was none. */
static void write_cycles(FILE *f, const pv_calib_cycles *c)
{
    fprintf(f, "    " PV_RJ_CAL_CYCLES "{" PV_RJ_CYC_AVAILABLE "%s, ", c->available ? "true" : "false");
    if (!c->available) {
        fprintf(f, PV_RJ_CYC_WHY);
        json_str(f, c->why[0] ? c->why : "calibration off");
        fprintf(f, "}\n");
        return;
    }
    fprintf(f, PV_RJ_CYC_COUNTER "\"%s\", " PV_RJ_CYC_TIMER_OVERHEAD_CYCLES "%.1f, "
               PV_RJ_CYC_CLOCK_GRANULARITY_CYCLES "%.1f,\n      " PV_RJ_CYC_STATE,
            c->counter, c->timer_overhead, c->granularity);
    write_state(f, &c->state, "");
    fprintf(f, "}\n");
}

static const char *thread_level_name(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "unknown";
    }
}

/* The traced threads as the trace's conversion found them (none before the stop: a rank that dies
 * leaves this file as the start wrote it, and perfvar-recover tells how its threads ended). */
static void write_threads(const pv_runtime *rt, FILE *f, uint64_t *nsegments)
{
    const pv_convert_result *r = &rt->conv;
    *nsegments = 0;
    fprintf(f, "  " PV_RJ_THREAD_LEVEL "\"%s\",\n  " PV_RJ_THREADS "[", thread_level_name(rt->thread_level));
    for (int i = 0; i < r->nthreads; i++) {
        const pv_convert_thread *t = &r->threads[i];
        fprintf(f, "%s\n    {" PV_RJ_THR_THREAD "%u, " PV_RJ_THR_LOCATION "%llu, " PV_RJ_THR_SEGMENTS "%llu, "
                   PV_RJ_THR_EVENTS "%llu, " PV_RJ_THR_CALLS "%llu, " PV_RJ_THR_LOST_RECORDS "%llu, "
                   PV_RJ_THR_BUFFER_MOVES "%llu, " PV_RJ_THR_BUFFER_MOVE_MS "%.3f}",
                i ? "," : "", t->thread, (unsigned long long)t->location, (unsigned long long)t->segments,
                (unsigned long long)t->events, (unsigned long long)t->calls,
                (unsigned long long)t->lost_units, (unsigned long long)t->windows, t->window_ns / 1e6);
        *nsegments += t->segments;
    }
    fprintf(f, "%s],\n", r->nthreads ? "\n  " : "");
}

/* "probe": the fixed-work probes (PERFVAR_PROBE) of every traced thread, or null when off. */
static void write_probe(const pv_runtime *rt, FILE *f)
{
    if (!rt->cfg.probe_ms) {
        fprintf(f, "  " PV_RJ_PROBE "null,\n");
        return;
    }
    const pv_convert_result *r = &rt->conv;
    uint64_t count = 0, ticks = 0;
    for (int i = 0; i < r->nthreads; i++) count += r->threads[i].probes, ticks += r->threads[i].probe_ticks;
    fprintf(f,
            "  " PV_RJ_PROBE "{" PV_RJ_PROBE_PERIOD_MS "%u, " PV_RJ_PROBE_ADDS "%llu, " PV_RJ_PROBE_LANES "%d, " PV_RJ_PROBE_K_SOURCE
            "\"%s\", " PV_RJ_PROBE_COUNT "%llu, " PV_RJ_PROBE_TOTAL_NS "%.1f,\n    " PV_RJ_PROBE_THREADS "[",
            rt->cfg.probe_ms, (unsigned long long)PV_WORK_PROBE_ADDS, PV_ADD_LANES, "fixed", (unsigned long long)count,
            perfvar_ticks_to_ns(ticks));
    for (int i = 0; i < r->nthreads; i++)
        fprintf(f, "%s{" PV_RJ_PTHR_THREAD "%u, " PV_RJ_PTHR_COUNT "%llu, " PV_RJ_PTHR_TOTAL_NS "%.1f}",
                i ? ", " : "", r->threads[i].thread, (unsigned long long)r->threads[i].probes,
                perfvar_ticks_to_ns(r->threads[i].probe_ticks));
    fprintf(f, "]},\n");
}

/* "metrics": the counters this rank records (PERFVAR_METRICS) and how often its threads read
 * them, or null when none could be opened (or PERFVAR_METRICS=none). */
static void write_metrics(const pv_runtime *rt, FILE *f)
{
    int n = pv_metrics_count();
    if (!n) {
        fprintf(f, "  " PV_RJ_METRICS "null,\n");
        return;
    }
    fprintf(f, "  " PV_RJ_METRICS "{" PV_RJ_METRICS_EVENTS "[");
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s", i ? ", " : "");
        json_str(f, pv_metrics_name(i));
    }
    uint64_t reads = 0;
    for (int i = 0; i < rt->conv.nthreads; i++) reads += rt->conv.threads[i].metric_reads;
    fprintf(f, "], " PV_RJ_METRICS_MIN_US "%u, " PV_RJ_METRICS_READS "%llu},\n", rt->cfg.metrics_min_us,
            (unsigned long long)reads);
}

/* "neighbours": what else ran on the CPUs the rank's threads ran on, from its start to its stop
 * (src/metrics/neighbours.h): each CPU's time by the kernel's columns, and the tasks of other
 * processes that ran last on one of them, most time first; null before the stop, or without /proc. */
enum { NEIGHBOUR_TASKS_SHOWN = 8 };
/* Whether a clock read of a traced call, on any thread, was taken on cpu. */
static int cpu_seen(const pv_runtime *rt, int cpu)
{
    return cpu >= 0 && cpu < PV_CONVERT_MAX_CPUS &&
           (rt->conv.cpus_seen[cpu / 8] & (1u << (cpu % 8)));
}

static void write_neighbours(const pv_runtime *rt, FILE *f)
{
    const pv_neighbours *n = &rt->neighbours;
    if (!n->ended) {
        fprintf(f, "  " PV_RJ_NEIGHBOURS "null,\n");
        return;
    }
    fprintf(f, "  " PV_RJ_NEIGHBOURS "{" PV_RJ_NEIGH_SPAN_NS "%.0f, " PV_RJ_NEIGH_TICK_NS "%.0f, "
            PV_RJ_NEIGH_SELF_NS "%.0f,\n    " PV_RJ_NEIGH_CPUS "[", n->span_ns, n->tick_ns, n->self_ns);
    const char *sep = "";
    for (int cpu = 0; cpu < n->ncpus; cpu++) {
        if (!cpu_seen(rt, cpu)) continue;
        fprintf(f, "%s{" PV_RJ_NCPU_CPU "%d", sep, cpu);
        /* The columns in /proc/stat's order, which the spec's keys follow. */
        for (int c = 0; c < PV_CPU_TIMES; c++)
            fprintf(f, ", \"%s_ns\": %.0f", pv_cpu_time_names[c], n->cpu_ns[cpu * PV_CPU_TIMES + c]);
        fprintf(f, "}");
        sep = ", ";
    }
    fprintf(f, "],\n    " PV_RJ_NEIGH_TASKS "[");
    sep = "";
    for (int i = 0, shown = 0; i < n->ngrew && shown < NEIGHBOUR_TASKS_SHOWN; i++) {
        const pv_neighbour_task *t = &n->grew[i];
        if (!cpu_seen(rt, t->cpu)) continue;
        fprintf(f, "%s{" PV_RJ_NTASK_PID "%d, " PV_RJ_NTASK_TID "%d, " PV_RJ_NTASK_COMM, sep, t->pid,
                t->tid);
        json_str(f, t->comm);
        fprintf(f, ", " PV_RJ_NTASK_CPU "%d, " PV_RJ_NTASK_NS "%.0f}", t->cpu, t->ns);
        sep = ", ";
        shown++;
    }
    fprintf(f, "]},\n");
}

/* "clock": the clock the rank read, how its rate was obtained, and the rate measured beside it. */
static void write_clock(const pv_runtime *rt, FILE *f)
{
    fprintf(f, "  " PV_RJ_CLOCK "{" PV_RJ_CLOCK_NAME);
    json_str(f, rt->clock.name);
    fprintf(f, ", " PV_RJ_CLOCK_HZ "%.3f, " PV_RJ_CLOCK_HZ_METHOD, rt->clock.hz);
    json_str(f, rt->clock.hz_method);
    double measured = pv_clock_measured_hz();
    fprintf(f, ", " PV_RJ_CLOCK_HZ_REL_ERROR "%.3g, " PV_RJ_CLOCK_MEASURED_HZ "%.3f, "
               PV_RJ_CLOCK_MEASURED_REL_ERROR "%.3g,",
            rt->clock.hz_rel_error, measured, pv_clock_measured_rel_error());
    /* A stated frequency (hz_rel_error 0) against the always-measured cross-check. */
    if (measured > 0 && strncmp(rt->clock.hz_method, "measured", 8) != 0)
        fprintf(f, " " PV_RJ_CLOCK_HZ_VS_MEASURED_REL "%.3g,", fabs(rt->clock.hz / measured - 1));
    else
        fprintf(f, " " PV_RJ_CLOCK_HZ_VS_MEASURED_REL "null,");
    fprintf(f, "\n    " PV_RJ_CLOCK_SERIALIZED "%s, " PV_RJ_CLOCK_FENCED_READ "\"%s\", " PV_RJ_CLOCK_NOTE,
            rt->clock.serialized ? "true" : "false",
            pv_clock_monotonic ? "clock_gettime" : PERFVAR_CLOCK_FENCED_READ);
    json_str(f, rt->clock.note);
    fprintf(f, "},\n");
}

/* "clock_caps" and "clock_offset": what the machine's clock offers, the offsets to rank 0. */
static void write_caps_offset(const pv_runtime *rt, FILE *f)
{
    const pv_clock_caps *k = pv_clock_caps_get();
    fprintf(f,
            "  " PV_RJ_CLOCK_CAPS "{" PV_RJ_CAPS_RDTSCP "%s, " PV_RJ_CAPS_INVARIANT_TSC "%s, "
            PV_RJ_CAPS_CPUID_TSC_HZ "%.0f, " PV_RJ_CAPS_CPUID_BASE_MHZ "%.0f,\n    " PV_RJ_CAPS_HYPERVISOR,
            k->rdtscp ? "true" : "false", k->invariant_tsc ? "true" : "false", k->cpuid_tsc_hz,
            k->cpuid_base_mhz);
    json_str(f, k->hypervisor);
    fprintf(f, ", " PV_RJ_CAPS_HYPERVISOR_TSC_HZ "%.0f, " PV_RJ_CAPS_TSC_STABLE_BY, k->hypervisor_tsc_hz);
    json_str(f, k->tsc_stable_by);
    fprintf(f, ", " PV_RJ_CAPS_KERNEL_TSC_HZ "%.3f, " PV_RJ_CAPS_KERNEL_TSC_WHY, k->kernel_tsc_hz);
    json_str(f, k->kernel_tsc_why);
    fprintf(f, ",\n    " PV_RJ_CAPS_CYCLES "%s, " PV_RJ_CAPS_CYCLES_WHY, k->cycles ? "true" : "false");
    json_str(f, k->cycles_why);
    fprintf(f, "},\n");
    fprintf(f,
            "  " PV_RJ_CLOCK_OFFSET "{" PV_RJ_OFFSET_BEGIN_TICKS "%lld, " PV_RJ_OFFSET_END_TICKS "%lld, "
            PV_RJ_OFFSET_STDDEV_TICKS "%.1f},\n",
            (long long)rt->sync.offset_begin, (long long)rt->sync.offset_end,
            rt->sync.stddev_end > rt->sync.stddev_begin ? rt->sync.stddev_end
                                                            : rt->sync.stddev_begin);
}

/* "calibration": the start-up calibration's parameters and results, per cache state and on the
 * cycle counter. */
static void write_calibration(const pv_runtime *rt, FILE *f)
{
    const pv_calib_result *c = &rt->calib;
    const pv_calib_params *p = &rt->calib_params;
    const char *mode = rt->cfg.calibration == PV_CALIB_FULL    ? "full"
                       : rt->cfg.calibration == PV_CALIB_QUICK ? "quick"
                                                                 : "off";
    fprintf(f,
            "  " PV_RJ_CALIBRATION "{\n    " PV_RJ_CAL_MODE "\"%s\", " PV_RJ_CAL_STATUS "\"%s\", " PV_RJ_CAL_ESTIMATE
            "\"C-side search, samples trimmed above median + max(3 IQR, 3 clock steps)\", " PV_RJ_CAL_AT
            "\"%s\",\n"
            "    " PV_RJ_CAL_TIMER_OVERHEAD_NS "%.3f, " PV_RJ_CAL_CLOCK_GRANULARITY_NS "%.3f,\n"
            "    " PV_RJ_CAL_T_MIN_NS "%.3f, " PV_RJ_CAL_T_DIFF_NS "%.3f,\n"
            "    " PV_RJ_CAL_NS_PER_ADD "%.5f, " PV_RJ_CAL_T_MIN_ADDS "%llu, " PV_RJ_CAL_T_DIFF_ADDS "%llu,\n"
            "    " PV_RJ_CAL_T_MIN_CV "%.5f, " PV_RJ_CAL_T_DIFF_OVERLAP "%.4f, " PV_RJ_CAL_CPU_START "%d, "
            PV_RJ_CAL_CPU_END "%d,\n"
            "    " PV_RJ_CAL_ELAPSED_MS "%.3f,\n"
            "    " PV_RJ_CAL_N_SAMPLES "%d, " PV_RJ_CAL_N_SAMPLES_FLUSHED "%d, " PV_RJ_CAL_P "%d, " PV_RJ_CAL_Q
            "%d, " PV_RJ_CAL_EPSILON "%g, " PV_RJ_CAL_ALPHA "%g, " PV_RJ_CAL_NSTATES "%d, " PV_RJ_CAL_BUDGET_MS
            "%.3f,\n    " PV_RJ_CAL_STATES "[",
            mode, c->status, rt->calib_at ? rt->calib_at : "start-up", c->timer_overhead_ns, c->granularity_ns, c->t_min_ns, c->t_diff_ns, c->ns_per_add,
            (unsigned long long)c->t_min_adds, (unsigned long long)c->t_diff_adds, c->t_min_cv,
            c->t_diff_overlap, c->cpu_start, c->cpu_end, c->elapsed_ms, p->n_samples, p->n_samples_flushed,
            p->p_confirm, p->q_pairs, p->epsilon, p->alpha, p->nstates, p->budget_ms);
    for (int i = 0; i < c->nstates; i++) write_state(f, &c->states[i], i ? ",\n      " : "\n      ");
    fprintf(f, "%s],\n", c->nstates ? "\n    " : "");
    write_cycles(f, &c->cycles);
    fprintf(f, "  },\n");
}

/* "topology": where the rank ran (src/topology): the socket, NUMA node and core of the CPU it
 * started on, and of each CPU of its affinity mask. */
static void write_topology(const pv_runtime *rt, FILE *f)
{
    const pv_topology *t = &rt->topo;
    fprintf(f, "  " PV_RJ_TOPOLOGY "{" PV_RJ_TOPO_SOURCE);
    json_str(f, t->source ? t->source : "none");
    fprintf(f, ", " PV_RJ_TOPO_NOTE);
    json_str(f, t->note);
    fprintf(f, ", " PV_RJ_TOPO_PACKAGE "%d, " PV_RJ_TOPO_NUMA "%d, " PV_RJ_TOPO_CORE "%d,\n    "
               PV_RJ_TOPO_CPUS "[", t->package, t->numa, t->core);
    for (int i = 0; i < t->ncpus; i++) {
        const pv_topo_cpu *c = &t->cpus[i];
        fprintf(f, "%s{" PV_RJ_TCPU_CPU "%d, " PV_RJ_TCPU_PACKAGE "%d, " PV_RJ_TCPU_NUMA "%d, "
                   PV_RJ_TCPU_CORE "%d}", i ? ", " : "", c->cpu, c->package, c->numa, c->core);
    }
    fprintf(f, "]},\n");
}

/* The keys and layout of rank-N.json are src/spec/contracts.py's (PV_RJ_*, pv_spec.h); the Python
 * package reads it by the same table (perfvar._spec). */
int pv_write_rank_meta(const pv_runtime *rt)
{
    char name[64];
    snprintf(name, sizeof name, "rank-%d.json", rt->rank);
    FILE *f = open_meta(rt, name);
    if (!f) return -1;
    fprintf(f, "{\n  " PV_RJ_RANK "%d,\n  " PV_RJ_NRANKS "%d,\n  " PV_RJ_HOST, rt->rank, rt->size);
    json_str(f, rt->host);
    fprintf(f, ",\n  " PV_RJ_PID "%ld,\n  " PV_RJ_CPUS "[", (long)getpid());
    const char *sep = "";
    for (int cpu = 0; cpu < PV_CONVERT_MAX_CPUS; cpu++) {
        if (!cpu_seen(rt, cpu)) continue;
        fprintf(f, "%s%d", sep, cpu);
        sep = ", ";
    }
    fprintf(f, "],\n");
    write_topology(rt, f);
    write_clock(rt, f);
    write_caps_offset(rt, f);
    write_calibration(rt, f);
    write_mpi_meta(rt, f);
    const pv_trace_stats *s = &rt->conv.stats;
    uint64_t nsegments;
    write_threads(rt, f, &nsegments);
    write_probe(rt, f);
    write_metrics(rt, f);
    write_neighbours(rt, f);
    fprintf(f,
            "  " PV_RJ_EVENTS "{" PV_RJ_EVENTS_WRITTEN "%llu, " PV_RJ_EVENTS_LOST "%llu, "
            PV_RJ_EVENTS_TIMESTAMPS_RAISED "%llu, " PV_RJ_EVENTS_BUFFER_FLUSHES "%llu},\n  " PV_RJ_SEGMENTS
            "%llu,\n  " PV_RJ_UNTRACED_THREAD_CALLS "%llu,\n  " PV_RJ_CONVERT_MS "%.1f,\n  " PV_RJ_RECORDS_KEPT
            "%s,\n  " PV_RJ_COMPLETE "%s\n}\n",
            (unsigned long long)s->events_written, (unsigned long long)s->events_lost,
            (unsigned long long)s->timestamps_raised, (unsigned long long)s->flushes,
            (unsigned long long)nsegments,
            (unsigned long long)pv_threads_untraced_calls(),
            rt->convert_ms, rt->records_removed ? "false" : "true",
            rt->converted ? "true" : "false");
    return fclose(f) == 0 ? 0 : -1;
}

/* The raw distributions tagged `state` (a cache state, or PV_CALIB_CYCLES_TAG), comma-separated;
 * samples named by their unit (samples_ns, samples_cycles). */
static void write_dists(FILE *f, const pv_calib_result *c, int state, const char *unit)
{
    static const char *const kinds[] = {"tmin", "pair_short", "pair_long"};
    const char *sep = "";
    for (int i = 0; i < c->ndists; i++) {
        const pv_calib_dist *d = &c->dists[i];
        if (d->state != state) continue;
        fprintf(f, "%s\n  {" PV_CALJ_DIST_KIND "\"%s\", " PV_CALJ_DIST_ADDS "%llu, " PV_CALJ_DIST_BASE "%llu, "
                   PV_CALJ_DIST_D "%llu, " PV_CALJ_DIST_PAIR "%d, " PV_CALJ_DIST_SAMPLES_UNIT "[",
                sep, kinds[d->kind], (unsigned long long)d->adds, (unsigned long long)d->base,
                (unsigned long long)d->d, d->pair, unit);
        for (int j = 0; j < d->n; j++) fprintf(f, "%s%.1f", j ? "," : "", d->samples[j]);
        fprintf(f, "]}");
        sep = ",";
    }
}

int pv_write_calibration_samples(const pv_runtime *rt)
{
    const pv_calib_result *c = &rt->calib;
    if (!c->ndists) return 0;
    char name[64];
    snprintf(name, sizeof name, "calibration-rank-%d.json", rt->rank);
    FILE *f = open_meta(rt, name);
    if (!f) return -1;
    /* The top level is flush 0, laid out as before cache states existed; "states" adds the
     * flushed ones, each with its own distributions. */
    fprintf(f,
            "{" PV_CALJ_RANK "%d, " PV_CALJ_FLUSH "0, " PV_CALJ_N_SAMPLES "%d, " PV_CALJ_EPSILON "%g, "
            PV_CALJ_ALPHA "%g, " PV_CALJ_P "%d, " PV_CALJ_Q "%d,\n " PV_CALJ_TIMER_OVERHEAD_NS "%.3f, "
            PV_CALJ_CLOCK_GRANULARITY_NS "%.3f, " PV_CALJ_OVERHEAD_REMOVED "true, " PV_CALJ_DROPPED "%d,\n "
            PV_CALJ_DISTRIBUTIONS "[",
            rt->rank, rt->calib_params.n_samples, rt->calib_params.epsilon, rt->calib_params.alpha,
            rt->calib_params.p_confirm, rt->calib_params.q_pairs, c->timer_overhead_ns, c->granularity_ns,
            c->nstates ? c->states[0].dists_dropped : c->dists_dropped);
    write_dists(f, c, 0, "ns");
    fprintf(f, "\n],\n " PV_CALJ_STATES "[");
    for (int s = 1; s < c->nstates; s++) {
        const pv_calib_state *st = &c->states[s];
        fprintf(f, "%s\n {" PV_CALJ_STATE_LABEL "\"%s\", " PV_CALJ_STATE_FLUSH "%llu, " PV_CALJ_STATE_N_SAMPLES
                   "%d, " PV_CALJ_STATE_STATUS "\"%s\", " PV_CALJ_STATE_DROPPED "%d,\n  " PV_CALJ_STATE_DISTRIBUTIONS "[",
                s > 1 ? "," : "", st->label, (unsigned long long)st->flush_bytes, st->n_samples, st->status,
                st->dists_dropped);
        write_dists(f, c, s, "ns");
        fprintf(f, "]}");
    }
    fprintf(f, "\n]");
    if (c->cycles.available && c->cycles.state.ndists) { /* the cycle counter's pass: flush 0, in cycles */
        const pv_calib_state *st = &c->cycles.state;
        fprintf(f, ",\n " PV_CALJ_CYCLES "{" PV_CALJ_CYCLES_COUNTER "\"%s\", " PV_CALJ_CYCLES_N_SAMPLES "%d, "
                   PV_CALJ_CYCLES_STATUS "\"%s\", " PV_CALJ_CYCLES_TIMER_OVERHEAD_CYCLES "%.1f, "
                   PV_CALJ_CYCLES_CLOCK_GRANULARITY_CYCLES "%.1f, " PV_CALJ_CYCLES_DROPPED "%d,\n  "
                   PV_CALJ_CYCLES_DISTRIBUTIONS "[",
                c->cycles.counter, st->n_samples, st->status, c->cycles.timer_overhead, c->cycles.granularity,
                st->dists_dropped);
        write_dists(f, c, PV_CALIB_CYCLES_TAG, "cycles");
        fprintf(f, "]}");
    } else {
        fprintf(f, ",\n " PV_CALJ_CYCLES "null");
    }
    fprintf(f, "}\n");
    return fclose(f) == 0 ? 0 : -1;
}

int pv_write_run_meta(const pv_runtime *rt)
{
    if (rt->rank != 0) return 0;
    FILE *f = open_meta(rt, "run.json");
    if (!f) return -1;
    char cmd[4096] = "";
    FILE *c = fopen("/proc/self/cmdline", "r");
    if (c) {
        size_t n = fread(cmd, 1, sizeof cmd - 1, c);
        fclose(c);
        for (size_t i = 0; i + 1 < n; i++)
            if (!cmd[i]) cmd[i] = ' ';
        cmd[n] = 0;
    }
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    PMPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl) *nl = 0;
    char stamp[64];
    time_t start = (time_t)(rt->realtime_ns / 1000000000u);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime(&start));
    fprintf(f, "{\n  " PV_RUNJ_NRANKS "%d,\n  " PV_RUNJ_COMMAND, rt->size);
    json_str(f, cmd);
    fprintf(f, ",\n  " PV_RUNJ_START_UTC "\"%s\",\n  " PV_RUNJ_PERFVAR_VERSION "\"%d.%d.%d\",\n  "
               PV_RUNJ_MPI_LIBRARY, stamp, PERFVAR_VERSION_MAJOR, PERFVAR_VERSION_MINOR,
            PERFVAR_VERSION_PATCH);
    json_str(f, lib);
    fprintf(f, "\n}\n");
    return fclose(f) == 0 ? 0 : -1;
}
