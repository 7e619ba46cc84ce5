/* calib.c — t_e,std / t_min / t_diff estimates per cache state and clock: the budget, the states
 * and their flush buffers; the searches themselves are in search.c. See calib.h. */
#include "calib.h"
#include "flush.h"
#include "perfvar.h"
#include "perfvar_calib.h"
#include "search.h"
#include "../clock/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Flush 0 is the reference every segment of unknown context is judged against: it may take this
 * much of the budget; what it leaves rolls over to the flushed states. */
#define FLUSH0_SHARE 0.4
/* The cycle counter's pass (flush 0 only, starting from the wall clock's t_min / t_diff in ADDs)
 * gets the end of the budget, and what the wall clock's states leave. */
#define CYCLES_SHARE 0.1
/* No core writes memory faster than this (bytes/ns = GB/s): a lower bound of a flush's cost that
 * decides, before allocating 4 x L3, that a state cannot fit its share. */
#define FLUSH_MAX_BYTES_PER_NS 64.0

static const char *const state_labels[PV_CALIB_NSTATES] = {"0", "4xL1", "4xL2", "4xL3"};

/* The distributions a flushed state must be able to measure in its share. Quick mode: p, the
 * least that confirms a t_min (the state is skipped otherwise). Full mode sizes N by the least
 * complete search: p confirmations, the two slope medians and the 2q distributions of one t_diff. */
static double planned_dists(const pv_calib_params *p)
{
    return p->mode == PV_CALIB_FULL ? p->p_confirm + 2.0 + 2.0 * p->q_pairs : p->p_confirm;
}

/* The least N a flushed state can run with: full mode may reduce N down to PV_CALIB_MIN_FLUSHED_N. */
static int least_n(const pv_calib_params *p, const pv_calib_state *st)
{
    return p->mode == PV_CALIB_FULL && st->n_samples > PV_CALIB_MIN_FLUSHED_N ? PV_CALIB_MIN_FLUSHED_N
                                                                               : st->n_samples;
}

/* The least time a flushed state needs (ms): its planned flushes at the least N, at
 * FLUSH_MAX_BYTES_PER_NS. */
static double flush_floor_ms(const pv_calib_params *p, const pv_calib_state *st)
{
    return planned_dists(p) * least_n(p, st) * (double)st->flush_bytes / FLUSH_MAX_BYTES_PER_NS / 1e6;
}

static double ms_until(uint64_t deadline)
{
    uint64_t now = pv_now();
    return now < deadline ? perfvar_ticks_to_ns(deadline - now) / 1e6 : 0;
}

static double available_memory_override;

void pv_calib_set_available_memory(double bytes) { available_memory_override = bytes; }

/* MemAvailable of /proc/meminfo in bytes (free memory plus what the kernel can reclaim, which
 * sysconf's _SC_AVPHYS_PAGES leaves out); 0 when unknown. */
static double available_memory(void)
{
    if (available_memory_override > 0) return available_memory_override;
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    double kib = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kib) == 1) break;
    fclose(f);
    return kib * 1024.0;
}

/* Whether a flushed state can do what planned_dists asks within its share (s->deadline); allocates
 * and times one flush when the optimistic bound allows. In full mode N is reduced to what fits, no
 * lower than PV_CALIB_MIN_FLUSHED_N, and the note says so. `chain_ns`: flush 0's t_min chain.
 * Returns 1 to go on (st->n_samples final), 0 with st skipped (note says why), -1 out of memory. */
static int flushed_state_fits(pv_search *s, pv_calib_state *st, double chain_ns, uint64_t *flush_cap)
{
    const pv_calib_params *p = s->p;
    double mib = (double)st->flush_bytes / (1 << 20);
    double floor_ms = flush_floor_ms(p, st);
    if (floor_ms > st->budget_ms) {
        st->status = "skipped";
        snprintf(st->note, sizeof st->note,
                 "%.0f distributions of N = %d flushes of %.1f MiB need >= %.0f ms (at %.0f GB/s), its share is "
                 "%.0f ms",
                 planned_dists(p), least_n(p, st), mib, floor_ms, FLUSH_MAX_BYTES_PER_NS, st->budget_ms);
        return 0;
    }
    /* Every core of the node may hold a rank calibrating at once, each with its own buffer, and 4 x L3
     * of a large shared L3 is big (1040 MiB on a Xeon VM whose L3 reads 260 MiB): no buffer larger
     * than the available memory divided among the online CPUs. */
    double avail = available_memory();
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (avail > 0 && cpus > 0) {
        double per_cpu = avail / (double)cpus;
        if ((double)st->flush_bytes > per_cpu) {
            st->status = "skipped";
            snprintf(st->note, sizeof st->note,
                     "a %.1f MiB flush buffer exceeds this CPU's share of the available memory (%.1f MiB = "
                     "available / %ld online CPUs)",
                     mib, per_cpu / (1 << 20), cpus);
            return 0;
        }
    }
    if (st->flush_bytes > *flush_cap) {
        unsigned char *b = realloc(s->flush_buf, st->flush_bytes);
        if (!b) return -1;
        s->flush_buf = b, *flush_cap = st->flush_bytes;
    }
    pv_flush_lines(s->flush_buf, st->flush_bytes); /* first touch: page faults, not a flush's cost */
    uint64_t t0 = pv_now();
    pv_flush_lines(s->flush_buf, st->flush_bytes);
    st->flush_ms = perfvar_ticks_to_ns(pv_now() - t0) / 1e6;
    double sample_ms = st->flush_ms + chain_ns / 1e6;
    double left_ms = ms_until(s->deadline);
    double fit = left_ms / (planned_dists(p) * sample_ms);
    if (fit >= st->n_samples) return 1;
    if (fit >= least_n(p, st) && least_n(p, st) < st->n_samples) {
        st->n_samples = (int)fit;
        snprintf(st->note, sizeof st->note, "N reduced from %d to %d to fit its share (one flush of %.1f MiB: %.3f ms)",
                 st->n_requested, st->n_samples, mib, st->flush_ms);
        return 1;
    }
    st->status = "skipped";
    snprintf(st->note, sizeof st->note,
             "one flush of %.1f MiB took %.3f ms: %.0f distributions of N = %d need %.0f ms, %.0f ms left of its "
             "share",
             mib, st->flush_ms, planned_dists(p), least_n(p, st), planned_dists(p) * least_n(p, st) * sample_ms,
             left_ms);
    return 0;
}

void pv_calib_free(pv_calib_result *r)
{
    for (int i = 0; i < r->ndists; i++) free(r->dists[i].samples);
    free(r->dists);
    r->dists = NULL;
    r->ndists = 0;
    r->kept_samples = 0;
}

void pv_calib_defaults(pv_calib_params *p, pv_calib_mode mode)
{
    memset(p, 0, sizeof *p);
    p->mode = mode;
    p->epsilon = 0.01;
    p->alpha = 0.05;
    p->nstates = PV_CALIB_NSTATES;
    if (mode == PV_CALIB_FULL) {
        p->budget_ms = 120000;
        p->n_samples = p->n_samples_flushed = 10000;
        p->p_confirm = 30;
        p->q_pairs = 80;
    } else {
        p->budget_ms = 400; /* 250 ms did not let 4xL2 finish on a 2-core VM (flush 0.1 ms) */
        p->n_samples = 300;
        p->n_samples_flushed = 100;
        p->p_confirm = 5;
        p->q_pairs = 5;
    }
}

/* One wall-clock state: its share of what is left before wall_end, its flush buffer, its search. */
static int run_wall_state(pv_search *s, int state, uint64_t wall_end, uint64_t *flush_cap)
{
    const pv_calib_params *p = s->p;
    pv_calib_result *r = s->r;
    pv_calib_state *st = &r->states[state];
    uint64_t now = pv_now();
    double left_ms = ms_until(wall_end);
    /* Equal shares among the states still to come that could fit in all that is left: a state
     * that cannot (4 x L3 in quick mode) must not hold back time it would only skip. */
    int sharing = 1;
    for (int t = state + 1; t < r->nstates; t++)
        sharing += r->states[t].flush_bytes && flush_floor_ms(p, &r->states[t]) <= left_ms;
    st->budget_ms = state == 0 ? p->budget_ms * FLUSH0_SHARE : left_ms / sharing;
    if (state == 0 && st->budget_ms > left_ms) st->budget_ms = left_ms;
    s->deadline = now + (uint64_t)(st->budget_ms * 1e6 * pv_clock_ticks_per_ns());
    s->st = st, s->tag = state, s->flush_bytes = 0;
    if (state && !st->flush_bytes) {
        st->status = "skipped";
        snprintf(st->note, sizeof st->note, "L%d cache size unknown (sysfs)", state);
        return PERFVAR_OK;
    }
    if (state) {
        int fits = flushed_state_fits(s, st, r->states[0].t_min, flush_cap);
        if (fits < 0) {
            st->status = "skipped";
            snprintf(st->note, sizeof st->note, "no memory for a %.1f MiB flush buffer",
                     (double)st->flush_bytes / (1 << 20));
            return PERFVAR_OK;
        }
        if (!fits) return PERFVAR_OK;
        s->flush_bytes = st->flush_bytes;
    }
    s->n = st->n_samples;
    char reduced[sizeof st->note]; /* "N reduced ...", kept after whatever the search notes */
    snprintf(reduced, sizeof reduced, "%s", st->note);
    st->note[0] = 0;
    pv_search_state(s, state ? r->states[0].t_min_adds : 0, state ? r->states[0].t_diff_adds : 0);
    if (reduced[0]) {
        size_t len = strlen(st->note);
        snprintf(st->note + len, sizeof st->note - len, "%s%s", len ? "; " : "", reduced);
    }
    st->elapsed_ms = perfvar_ticks_to_ns(pv_now() - now) / 1e6;
    return PERFVAR_OK;
}

int pv_calib_run(const pv_calib_params *p, pv_calib_result *r)
{
    memset(r, 0, sizeof *r);
    r->status = "off";
    r->cpu_start = r->cpu_end = -1;
    r->cycles.state.status = "off";
    if (p->mode == PV_CALIB_OFF) return PERFVAR_OK;
    pv_clock_init();
    int nmax = p->n_samples > p->n_samples_flushed ? p->n_samples : p->n_samples_flushed;
    pv_search s = {.p = p, .r = r, .counter = PV_SEARCH_WALL};
    s.buf = malloc((size_t)nmax * sizeof(double));
    s.sorted = malloc((size_t)nmax * sizeof(double));
    s.a0 = malloc((size_t)nmax * sizeof(double));
    if (!s.buf || !s.sorted || !s.a0) {
        free(s.buf), free(s.sorted), free(s.a0);
        return PERFVAR_ERR_NO_MEMORY;
    }
    double tpn = pv_clock_ticks_per_ns();
    uint64_t start = pv_now_cpu(&r->cpu_start);
    uint64_t end_all = start + (uint64_t)(p->budget_ms * 1e6 * tpn);
    int cycles = pv_calib_cycles_possible(r);
    uint64_t wall_end = start + (uint64_t)(p->budget_ms * (cycles ? 1.0 - CYCLES_SHARE : 1.0) * 1e6 * tpn);

    /* t_e,std and the clock's granularity, caches warm: filter_cost subtracts the timer's own cost. */
    pv_search_timer_cost(&s, 4 * p->n_samples);
    r->timer_overhead_ns = s.overhead, r->granularity_ns = s.granularity;

    int nstates = p->nstates < 1 ? 1 : p->nstates > PV_CALIB_NSTATES ? PV_CALIB_NSTATES : p->nstates;
    r->nstates = nstates;
    for (int i = 0; i < nstates; i++) {
        pv_calib_state *st = &r->states[i];
        st->label = state_labels[i];
        st->unit = "ns";
        st->flush_bytes = i ? 4 * perfvar_cache_size(i) : 0;
        st->n_samples = st->n_requested = i ? p->n_samples_flushed : p->n_samples;
    }
    uint64_t flush_cap = 0;
    int rc = PERFVAR_OK;
    for (int i = 0; i < nstates && rc == PERFVAR_OK; i++) rc = run_wall_state(&s, i, wall_end, &flush_cap);
    free(s.flush_buf); /* up to 4 x L3: not kept through the run */
    s.flush_buf = NULL, s.flush_bytes = 0;

    const pv_calib_state *s0 = &r->states[0];
    r->status = s0->status;
    r->t_min_ns = s0->t_min, r->t_diff_ns = s0->t_diff, r->ns_per_add = s0->per_add;
    r->t_min_adds = s0->t_min_adds, r->t_diff_adds = s0->t_diff_adds;
    r->t_min_cv = s0->t_min_cv, r->t_diff_overlap = s0->t_diff_overlap;
    if (cycles && rc == PERFVAR_OK) rc = pv_calib_cycles_run(&s, r, end_all);
    uint64_t end = pv_now_cpu(&r->cpu_end);
    r->elapsed_ms = perfvar_ticks_to_ns(end - start) / 1e6;
    free(s.buf), free(s.sorted), free(s.a0);
    return rc;
}
