/* calib.c — first-cut t_e,std / t_min / t_diff estimates per cache state; see calib.h. */
#include "calib.h"
#include "add_chain.h"
#include "flush.h"
#include "perfvar.h"
#include "perfvar_calib.h"
#include "../clock/clock.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Flush 0 is the reference every segment of unknown context is judged against: it may take this
 * much of the budget; what it leaves rolls over to the flushed states. */
#define FLUSH0_SHARE 0.4
/* No core writes memory faster than this (bytes/ns = GB/s): a lower bound of a flush's cost that
 * decides, before allocating 4 x L3, that a state cannot fit its share. */
#define FLUSH_MAX_BYTES_PER_NS 64.0

static const char *const state_labels[PV_CALIB_NSTATES] = {"0", "4xL1", "4xL2", "4xL3"};

typedef struct ctx {
    const pv_calib_params *p;
    pv_calib_result *r;    /* where the raw distributions are logged */
    double *buf;           /* n_samples scratch, ns */
    double *sorted;        /* n_samples scratch */
    uint64_t deadline;     /* ticks: end of the current state's share */
    double overhead_ns;
    double granularity_ns;
    int last_n;            /* samples the last measure() took (fewer when the budget ran out) */
    int state;             /* index of the state being measured */
    int n;                 /* N of the current state */
    unsigned char *flush_buf;
    uint64_t flush_bytes;  /* of the current state; 0: no flush */
} ctx;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int over_budget(const ctx *c) { return pv_now() > c->deadline; }

/* Measure N samples of a k-ADD chain, each after a flush of the state's size, overhead removed,
 * trimmed above median + max(3 IQR, 3 clock steps): with a quantised clock the IQR is often 0,
 * and a bare 3 IQR would throw away every sample above the median. Stops early (fewer samples)
 * when the budget is spent, so one long batch cannot overrun it: every 64 samples, or every
 * sample after the 16th when each costs a flush. Returns the number of samples kept, sorted
 * ascending in c->sorted. */
static int measure(ctx *c, uint64_t k)
{
    int n = c->n;
    for (int i = 0; i < 8; i++) pv_add_chain(k); /* warm-up: caches, branch predictor */
    for (int i = 0; i < n; i++) {
        if (c->flush_bytes) pv_flush_lines(c->flush_buf, c->flush_bytes);
        uint64_t t0 = pv_now();
        pv_add_chain(k);
        uint64_t t1 = pv_now();
        c->buf[i] = perfvar_ticks_to_ns(t1 - t0) - c->overhead_ns;
        int check = c->flush_bytes ? i + 1 >= 16 : (i & 63) == 63;
        if (check && i + 1 < n && over_budget(c)) {
            n = i + 1;
            break;
        }
    }
    c->last_n = n;
    memcpy(c->sorted, c->buf, (size_t)n * sizeof(double));
    qsort(c->sorted, (size_t)n, sizeof(double), cmp_double);
    double med = c->sorted[n / 2];
    double iqr = c->sorted[(3 * n) / 4] - c->sorted[n / 4];
    double limit = med + (3.0 * iqr > 3.0 * c->granularity_ns ? 3.0 * iqr : 3.0 * c->granularity_ns);
    int kept = n;
    while (kept > 1 && c->sorted[kept - 1] > limit) kept--;
    return kept;
}

/* Keep the raw samples of the distribution measure() just took (c->buf). Flush 0 may fill half
 * of the log, so the flushed states always find room. */
static void log_dist(ctx *c, pv_dist_kind kind, uint64_t adds, uint64_t base, uint64_t d, int pair)
{
    pv_calib_result *r = c->r;
    pv_calib_state *st = &r->states[c->state];
    int n = c->last_n;
    int max_dists = c->state == 0 ? PV_CALIB_MAX_DISTS / 2 : PV_CALIB_MAX_DISTS;
    long max_samples = c->state == 0 ? PV_CALIB_MAX_KEPT_SAMPLES / 2 : PV_CALIB_MAX_KEPT_SAMPLES;
    if (r->ndists >= max_dists || r->kept_samples + n > max_samples) {
        r->dists_dropped++, st->dists_dropped++;
        return;
    }
    if (!r->dists && !(r->dists = calloc(PV_CALIB_MAX_DISTS, sizeof *r->dists))) {
        r->dists_dropped++, st->dists_dropped++;
        return;
    }
    float *x = malloc((size_t)n * sizeof *x);
    if (!x) {
        r->dists_dropped++, st->dists_dropped++;
        return;
    }
    for (int i = 0; i < n; i++) x[i] = (float)c->buf[i];
    r->dists[r->ndists++] = (pv_calib_dist){kind, adds, base, d, pair, n, x, c->state};
    r->kept_samples += n;
    st->ndists++;
}

static double cv_of(const double *x, int n)
{
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++) mean += x[i];
    mean /= n;
    for (int i = 0; i < n; i++) var += (x[i] - mean) * (x[i] - mean);
    var /= (n > 1 ? n - 1 : 1);
    return mean > 0 ? sqrt(var) / mean : INFINITY;
}

/* CV < epsilon on p consecutive fresh distributions of k ADDs. *cv gets the last CV seen. */
static int precise_enough(ctx *c, uint64_t k, double *cv)
{
    for (int i = 0; i < c->p->p_confirm; i++) {
        if (i && over_budget(c)) return 0; /* unconfirmed: the caller stops on the budget too */
        int kept = measure(c, k);
        log_dist(c, PV_DIST_TMIN, k, 0, 0, i);
        *cv = cv_of(c->sorted, kept);
        if (!(*cv < c->p->epsilon)) return 0;
    }
    return 1;
}

/* Paper's Algorithm 2 overlap: fraction of a1 not above max(a0). The paper counts a1 < max(a0);
 * ties count as overlap here because real clocks are quantised (this VM's TSC moves in steps of
 * 26 ticks) and two chains that read the same tick value are not distinguished. */
static double overlap(const double *a0_sorted, int n0, const double *a1_sorted, int n1)
{
    double max0 = a0_sorted[n0 - 1];
    int below = 0;
    while (below < n1 && a1_sorted[below] <= max0) below++;
    return (double)below / n1;
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b, b = t;
    }
    return a;
}

/* All q pairs (k0 + (i-1) d, k0 + i d) separate with overlap < alpha. *worst gets the worst overlap. */
static int separable(ctx *c, uint64_t k0, uint64_t d, double *worst, double *a0)
{
    *worst = 0;
    for (int i = 1; i <= c->p->q_pairs; i++) {
        if (i > 1 && over_budget(c)) return 0; /* not shown: the caller stops on the budget too */
        int n0 = measure(c, k0 + (uint64_t)(i - 1) * d);
        log_dist(c, PV_DIST_PAIR_SHORT, k0 + (uint64_t)(i - 1) * d, k0, d, i);
        memcpy(a0, c->sorted, (size_t)n0 * sizeof(double));
        int n1 = measure(c, k0 + (uint64_t)i * d);
        log_dist(c, PV_DIST_PAIR_LONG, k0 + (uint64_t)i * d, k0, d, i);
        double ov = overlap(a0, n0, c->sorted, n1);
        if (ov > *worst) *worst = ov;
        if (!(ov < c->p->alpha)) return 0;
    }
    return 1;
}

static double median_of(ctx *c, uint64_t k)
{
    int kept = measure(c, k);
    return c->sorted[kept / 2];
}

/* Algorithm 1's search: from `hint` (0: from 64 ADDs), double until precise, or halve while
 * precise, then bisect between the last failure and success to 1/16. Returns t_min in ADDs
 * (0: none found). */
static uint64_t search_t_min(ctx *c, uint64_t hint, pv_calib_state *st)
{
    uint64_t lo = 0, hi = 0, k = hint ? hint : 64;
    double cv = INFINITY;
    if (hint && precise_enough(c, k, &cv)) {
        hi = k, st->t_min_cv = cv;
        while (k / 2 >= 64 && !over_budget(c)) {
            if (!precise_enough(c, k / 2, &cv)) {
                lo = k / 2;
                break;
            }
            k /= 2, hi = k, st->t_min_cv = cv;
        }
    } else {
        if (hint) lo = k, k *= 2;
        while (!over_budget(c) && k <= (1u << 24)) {
            if (precise_enough(c, k, &cv)) {
                hi = k, st->t_min_cv = cv;
                break;
            }
            lo = k;
            k *= 2;
        }
    }
    while (hi && hi - lo > hi / 16 && !over_budget(c)) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (precise_enough(c, mid, &cv))
            hi = mid, st->t_min_cv = cv;
        else
            lo = mid;
    }
    return hi;
}

/* Algorithm 2's search above t_min = k0 ADDs, from `hint` (0: from 1 ADD) as search_t_min, then
 * bisected to one ADD (exact) or to 1/8 of the value. Returns t_diff in ADDs (0: none found). */
static uint64_t search_t_diff(ctx *c, uint64_t k0, uint64_t hint, int exact, double *a0, pv_calib_state *st)
{
    uint64_t dlo = 0, dhi = 0, d = hint ? (hint < k0 ? hint : k0) : 1;
    double worst = 1.0;
    if (hint && separable(c, k0, d, &worst, a0)) {
        dhi = d, st->t_diff_overlap = worst;
        while (d / 2 >= 1 && !over_budget(c)) {
            if (!separable(c, k0, d / 2, &worst, a0)) {
                dlo = d / 2;
                break;
            }
            d /= 2, dhi = d, st->t_diff_overlap = worst;
        }
    } else {
        if (hint) dlo = d, d *= 2;
        while (!over_budget(c) && d <= k0) {
            if (separable(c, k0, d, &worst, a0)) {
                dhi = d, st->t_diff_overlap = worst;
                break;
            }
            dlo = d;
            d *= 2;
        }
    }
    for (;;) {
        uint64_t tol = exact || dhi < 8 ? 1 : dhi / 8;
        if (!dhi || dhi - dlo <= tol || over_budget(c)) break;
        uint64_t mid = dlo + (dhi - dlo) / 2;
        if (separable(c, k0, mid, &worst, a0))
            dhi = mid, st->t_diff_overlap = worst;
        else
            dlo = mid;
    }
    return dhi;
}

/* t_min, slope and t_diff of the current state within c->deadline. */
static void run_state(ctx *c, pv_calib_state *st, uint64_t hint_min, uint64_t hint_diff, double *a0)
{
    uint64_t hi = search_t_min(c, hint_min, st);
    int complete = 0;
    if (hi) {
        st->t_min_adds = hi;
        /* ns per ADD from the slope between the t_min chain and one 4096 ADDs longer. */
        double m0 = median_of(c, hi), m1 = median_of(c, hi + 4096);
        st->ns_per_add = (m1 - m0) / 4096.0;
        st->t_min_ns = m0;
        uint64_t dhi = search_t_diff(c, hi, hint_diff, c->flush_bytes == 0, a0, st);
        if (dhi) {
            st->t_diff_adds = dhi;
            st->t_diff_ns = (double)dhi * st->ns_per_add;
            complete = !over_budget(c);
        }
    }
    st->status = complete ? "complete" : "partial";
    if (!complete)
        snprintf(st->note, sizeof st->note, "%s",
                 over_budget(c) ? "its share of the budget was spent before t_min and t_diff were both final"
                 : !hi          ? "no chain up to 2^24 ADDs had CV < epsilon"
                                : "no difference up to t_min separated the distributions");
}

/* Whether a flushed state can do its minimum (p distributions of N flushed samples at one chain
 * length) within `share_ms`; allocates and times one flush when the optimistic bound allows.
 * Returns 1 to go on, 0 with st skipped (note says why), -1 when out of memory. */
/* The least time a flushed state needs: p x N flushes at FLUSH_MAX_BYTES_PER_NS (ms). */
static double flush_floor_ms(const pv_calib_params *p, const pv_calib_state *st)
{
    return (double)p->p_confirm * st->n_samples * (double)st->flush_bytes / FLUSH_MAX_BYTES_PER_NS / 1e6;
}

static int flushed_state_fits(ctx *c, pv_calib_state *st, double share_ms, uint64_t hint_min,
                              double ns_per_add, uint64_t *flush_cap)
{
    double mib = (double)st->flush_bytes / (1 << 20);
    double flushes = (double)c->p->p_confirm * st->n_samples;
    double floor_ms = flush_floor_ms(c->p, st);
    if (floor_ms > share_ms) {
        st->status = "skipped";
        snprintf(st->note, sizeof st->note,
                 "p x N = %.0f flushes of %.1f MiB need >= %.0f ms (at %.0f GB/s), its share is %.0f ms",
                 flushes, mib, floor_ms, FLUSH_MAX_BYTES_PER_NS, share_ms);
        return 0;
    }
    if (st->flush_bytes > *flush_cap) {
        unsigned char *b = realloc(c->flush_buf, st->flush_bytes);
        if (!b) return -1;
        c->flush_buf = b, *flush_cap = st->flush_bytes;
    }
    pv_flush_lines(c->flush_buf, st->flush_bytes); /* first touch: page faults, not a flush's cost */
    uint64_t t0 = pv_now();
    pv_flush_lines(c->flush_buf, st->flush_bytes);
    st->flush_ms = perfvar_ticks_to_ns(pv_now() - t0) / 1e6;
    double need_ms = flushes * (st->flush_ms + (double)hint_min * ns_per_add / 1e6);
    uint64_t now = pv_now();
    double left_ms = now < c->deadline ? perfvar_ticks_to_ns(c->deadline - now) / 1e6 : 0;
    if (need_ms > left_ms) {
        st->status = "skipped";
        snprintf(st->note, sizeof st->note,
                 "one flush of %.1f MiB took %.3f ms: p x N = %.0f samples need %.0f ms, %.0f ms left of its share",
                 mib, st->flush_ms, flushes, need_ms, left_ms);
        return 0;
    }
    return 1;
}

void pv_calib_free(pv_calib_result *r)
{
    for (int i = 0; i < r->ndists; i++) free(r->dists[i].samples_ns);
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
        p->budget_ms = 400; /* 250 ms did not let 4xL2 finish here (2-core VM, flush 0.1 ms) */
        p->n_samples = 300;
        p->n_samples_flushed = 100;
        p->p_confirm = 5;
        p->q_pairs = 5;
    }
}

int pv_calib_run(const pv_calib_params *p, pv_calib_result *r)
{
    memset(r, 0, sizeof *r);
    r->status = "off";
    r->cpu_start = r->cpu_end = -1;
    if (p->mode == PV_CALIB_OFF) return PERFVAR_OK;
    pv_clock_init();
    int nmax = p->n_samples > p->n_samples_flushed ? p->n_samples : p->n_samples_flushed;
    ctx c = {.p = p, .r = r};
    c.buf = malloc((size_t)nmax * sizeof(double));
    c.sorted = malloc((size_t)nmax * sizeof(double));
    double *a0 = malloc((size_t)nmax * sizeof(double));
    if (!c.buf || !c.sorted || !a0) {
        free(c.buf), free(c.sorted), free(a0);
        return PERFVAR_ERR_NO_MEMORY;
    }
    double tpn = pv_clock_ticks_per_ns();
    uint64_t start = pv_now_cpu(&r->cpu_start);
    uint64_t end_all = start + (uint64_t)(p->budget_ms * 1e6 * tpn);

    /* t_e,std: the minimal back-to-back read pair, and the clock's granularity: the gcd of the
     * observed read-pair differences. Caches warm: filter_cost subtracts the timer's own cost. */
    uint64_t best = UINT64_MAX, step = 0;
    for (int i = 0; i < 4 * p->n_samples; i++) {
        uint64_t t0 = pv_now();
        uint64_t t1 = pv_now();
        if (t1 - t0 < best) best = t1 - t0;
        step = gcd_u64(step, t1 - t0);
    }
    c.overhead_ns = r->timer_overhead_ns = perfvar_ticks_to_ns(best);
    c.granularity_ns = r->granularity_ns = perfvar_ticks_to_ns(step ? step : 1);

    int nstates = p->nstates < 1 ? 1 : p->nstates > PV_CALIB_NSTATES ? PV_CALIB_NSTATES : p->nstates;
    r->nstates = nstates;
    for (int s = 0; s < nstates; s++) {
        pv_calib_state *st = &r->states[s];
        st->label = state_labels[s];
        st->flush_bytes = s ? 4 * perfvar_cache_size(s) : 0;
        st->n_samples = s ? p->n_samples_flushed : p->n_samples;
    }
    uint64_t flush_cap = 0;
    for (int s = 0; s < nstates; s++) {
        pv_calib_state *st = &r->states[s];
        uint64_t now = pv_now();
        double left_ms = now < end_all ? perfvar_ticks_to_ns(end_all - now) / 1e6 : 0;
        /* Equal shares among the states still to come that could fit in all that is left: a state
         * that cannot (4 x L3 in quick mode) must not hold back time it would only skip. */
        int sharing = 1;
        for (int t = s + 1; t < nstates; t++)
            sharing += r->states[t].flush_bytes && flush_floor_ms(p, &r->states[t]) <= left_ms;
        st->budget_ms = s == 0 ? p->budget_ms * FLUSH0_SHARE : left_ms / sharing;
        c.deadline = now + (uint64_t)(st->budget_ms * 1e6 * tpn);
        c.state = s, c.n = st->n_samples, c.flush_bytes = 0;
        if (s && !st->flush_bytes) {
            st->status = "skipped";
            snprintf(st->note, sizeof st->note, "L%d cache size unknown (sysfs)", s);
            continue;
        }
        if (s) {
            int fits = flushed_state_fits(&c, st, st->budget_ms, r->states[0].t_min_adds,
                                          r->states[0].ns_per_add, &flush_cap);
            if (fits < 0) {
                st->status = "skipped";
                snprintf(st->note, sizeof st->note, "no memory for a %.1f MiB flush buffer",
                         (double)st->flush_bytes / (1 << 20));
                continue;
            }
            if (!fits) continue;
            c.flush_bytes = st->flush_bytes;
        }
        run_state(&c, st, s ? r->states[0].t_min_adds : 0, s ? r->states[0].t_diff_adds : 0, a0);
        st->elapsed_ms = perfvar_ticks_to_ns(pv_now() - now) / 1e6;
    }
    free(c.flush_buf); /* up to 4 x L3: not kept through the run */

    const pv_calib_state *s0 = &r->states[0];
    r->status = s0->status;
    r->t_min_ns = s0->t_min_ns, r->t_diff_ns = s0->t_diff_ns, r->ns_per_add = s0->ns_per_add;
    r->t_min_adds = s0->t_min_adds, r->t_diff_adds = s0->t_diff_adds;
    r->t_min_cv = s0->t_min_cv, r->t_diff_overlap = s0->t_diff_overlap;
    uint64_t end = pv_now_cpu(&r->cpu_end);
    r->elapsed_ms = perfvar_ticks_to_ns(end - start) / 1e6;
    free(c.buf), free(c.sorted), free(a0);
    return PERFVAR_OK;
}
