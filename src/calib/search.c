/* search.c — Algorithms 1 and 2 of the paper on one clock and one cache state; see search.h. */
#include "search.h"
#include "add_chain.h"
#include "flush.h"
#include "perfvar.h"
#include "resolution.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int over_budget(const pv_search *s) { return pv_now() > s->deadline; }

double pv_search_units(const pv_search *s, uint64_t delta)
{
    return s->counter == PV_SEARCH_WALL ? perfvar_ticks_to_ns(delta) : (double)delta;
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b, b = t;
    }
    return a;
}

/* The step the counter reads in, in its own ticks: pairs around chains of 0 .. PV_RESOLUTION_SWEEP - 1
 * ADDs (resolution.h), never finer than the gcd of the differences; the gcd alone where the sweep
 * cannot be held in memory or shows a single value. */
static uint64_t read_step(const pv_search *s, int pairs, uint64_t gcd)
{
    double *d = malloc((size_t)pairs * sizeof *d);
    if (!d) return gcd;
    for (int i = 0; i < pairs; i++) {
        uint64_t t0 = pv_search_read(s);
        pv_add_chain((uint64_t)(i % PV_RESOLUTION_SWEEP));
        d[i] = (double)(pv_search_read(s) - t0);
    }
    double widest = pv_clock_resolution(d, pairs);
    free(d);
    return widest > (double)gcd ? (uint64_t)widest : gcd;
}

void pv_search_timer_cost(pv_search *s, int pairs)
{
    uint64_t best = UINT64_MAX, step = 0;
    for (int i = 0; i < pairs; i++) {
        uint64_t t0 = pv_search_read(s);
        uint64_t t1 = pv_search_read(s);
        if (t1 - t0 < best) best = t1 - t0;
        step = gcd_u64(step, t1 - t0);
    }
    s->overhead = pv_search_units(s, best);
    s->granularity = pv_search_units(s, read_step(s, pairs, step ? step : 1));
}

/* Measure N samples of a k-ADD chain, each after a flush of the state's size, overhead removed,
 * trimmed above median + max(3 IQR, 3 clock steps): with a quantised clock the IQR is often 0,
 * and a bare 3 IQR would throw away every sample above the median. Stops early (fewer samples)
 * when the budget is spent, so one long batch cannot overrun it: every 64 samples, or every
 * sample after the 16th when each costs a flush or a chain of 2^16 ADDs or more (tens of us).
 * Returns the number of samples kept, sorted ascending in s->sorted. */
static int measure(pv_search *s, uint64_t k)
{
    int n = s->n;
    for (int i = 0; i < 8; i++) pv_add_chain(k); /* warm-up: caches, branch predictor */
    for (int i = 0; i < n; i++) {
        if (s->flush_bytes) pv_flush_lines(s->flush_buf, s->flush_bytes);
        uint64_t t0 = pv_search_read(s);
        pv_add_chain(k);
        uint64_t t1 = pv_search_read(s);
        s->buf[i] = pv_search_units(s, t1 - t0) - s->overhead;
        int check = s->flush_bytes || k >= (1u << 16) ? i + 1 >= 16 : (i & 63) == 63;
        if (check && i + 1 < n && over_budget(s)) {
            n = i + 1;
            break;
        }
    }
    s->last_n = n;
    memcpy(s->sorted, s->buf, (size_t)n * sizeof(double));
    qsort(s->sorted, (size_t)n, sizeof(double), cmp_double);
    double med = s->sorted[n / 2];
    double iqr = s->sorted[(3 * n) / 4] - s->sorted[n / 4];
    double limit = med + (3.0 * iqr > 3.0 * s->granularity ? 3.0 * iqr : 3.0 * s->granularity);
    int kept = n;
    while (kept > 1 && s->sorted[kept - 1] > limit) kept--;
    return kept;
}

/* Keep the raw samples of the distribution measure() just took (s->buf). Flush 0 may fill half of
 * the log and the wall-clock states together 7/8 of it, so the flushed states and the cycle
 * counter's pass, which run after them, always find room. */
static void log_dist(pv_search *s, pv_dist_kind kind, uint64_t adds, uint64_t base, uint64_t d, int pair)
{
    pv_calib_result *r = s->r;
    pv_calib_state *st = s->st;
    int n = s->last_n;
    int eighths = s->tag == 0 ? 4 : s->tag < PV_CALIB_NSTATES ? 7 : 8;
    int max_dists = PV_CALIB_MAX_DISTS / 8 * eighths;
    long max_samples = PV_CALIB_MAX_KEPT_SAMPLES / 8 * eighths;
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
    for (int i = 0; i < n; i++) x[i] = (float)s->buf[i];
    r->dists[r->ndists++] = (pv_calib_dist){kind, adds, base, d, pair, n, x, s->tag};
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

/* CV < epsilon on p consecutive fresh distributions of k ADDs, each with a median of at least
 * granularity / epsilon: a clock that reads in steps cannot tell a chain to epsilon of its length
 * when one step is more than that, however alike its readings (a 40 ns chain read on a 10 ns-step
 * clock gives 300 equal values, CV 0). *cv gets the last CV seen, *passed (if not NULL) how many
 * distributions passed before the one that failed. */
static int precise_enough(pv_search *s, uint64_t k, double *cv, int *passed)
{
    for (int i = 0; i < s->p->p_confirm; i++) {
        if (passed) *passed = i;
        if (i && over_budget(s)) return 0; /* unconfirmed: the caller stops on the budget too */
        int kept = measure(s, k);
        log_dist(s, PV_DIST_TMIN, k, 0, 0, i);
        *cv = cv_of(s->sorted, kept);
        if (!(*cv < s->p->epsilon) || s->sorted[kept / 2] * s->p->epsilon < s->granularity) return 0;
    }
    return 1;
}

/* Confirmations that failed after k had passed at least once are retried at k this many times
 * before the search doubles k. On a shared host the noise comes in phases of tens to hundreds of
 * ms, not with the chain's length: a phase that breaks a confirmation at 2048 ADDs, if answered by
 * doubling, sends the search to chains whose distributions last longer and so catch more phases
 * (seen on a Xeon VM: 2048 passed 4 times, then a phase; the search ran up to 2^21 ADDs and spent
 * its budget without t_min). A retry still needs p consecutive passes, as the paper asks. */
#define PV_TMIN_RETRIES 2

/* Paper's Algorithm 2 overlap: fraction of a1 not above max(a0). The paper counts a1 < max(a0);
 * ties count as overlap here because real clocks are quantised (an AMD EPYC VM's TSC moved in steps
 * of 26 ticks) and two chains that read the same tick value are not distinguished. */
static double overlap(const double *a0_sorted, int n0, const double *a1_sorted, int n1)
{
    double max0 = a0_sorted[n0 - 1];
    int below = 0;
    while (below < n1 && a1_sorted[below] <= max0) below++;
    return (double)below / n1;
}

/* All q pairs (k0 + (i-1) d, k0 + i d) separate with overlap < alpha. *worst gets the worst overlap. */
static int separable(pv_search *s, uint64_t k0, uint64_t d, double *worst)
{
    *worst = 0;
    for (int i = 1; i <= s->p->q_pairs; i++) {
        if (i > 1 && over_budget(s)) return 0; /* not shown: the caller stops on the budget too */
        int n0 = measure(s, k0 + (uint64_t)(i - 1) * d);
        log_dist(s, PV_DIST_PAIR_SHORT, k0 + (uint64_t)(i - 1) * d, k0, d, i);
        memcpy(s->a0, s->sorted, (size_t)n0 * sizeof(double));
        int n1 = measure(s, k0 + (uint64_t)i * d);
        log_dist(s, PV_DIST_PAIR_LONG, k0 + (uint64_t)i * d, k0, d, i);
        double ov = overlap(s->a0, n0, s->sorted, n1);
        if (ov > *worst) *worst = ov;
        if (!(ov < s->p->alpha)) return 0;
    }
    return 1;
}

static double median_of(pv_search *s, uint64_t k)
{
    int kept = measure(s, k);
    return s->sorted[kept / 2];
}

/* How far a bisection between a failing length lo and a passing one hi goes: to hi / fraction
 * (fraction 0: to one ADD), never finer than one ADD, where a failing lo and the passing lo + 1
 * leave nothing between them. */
static int refined(uint64_t lo, uint64_t hi, uint64_t fraction)
{
    uint64_t tolerance = fraction ? hi / fraction : 1;
    return hi - lo <= (tolerance ? tolerance : 1);
}

/* One test of a search at length k in ADDs (Algorithm 1: the chain k is precise; Algorithm 2:
 * pairs k apart above a base of k0 ADDs separate). *figure gets its figure (the CV, the worst
 * overlap), *passed (if not NULL) how many confirmations passed before the one that failed. */
typedef int (*pv_length_test)(pv_search *s, uint64_t k0, uint64_t k, double *figure, int *passed);

/* How one of the two searches walks over lengths (ADDs). */
typedef struct {
    pv_length_test test;
    uint64_t k0;           /* the test's base */
    uint64_t start;        /* the first length without a hint */
    uint64_t shortest;     /* halving from a passing hint goes no shorter */
    uint64_t longest;      /* doubling goes no longer */
    int retries;           /* a length that failed after passing is measured again this often */
    uint64_t fraction;     /* the bisection's end (refined) */
    uint64_t refine_until; /* pv_now ticks: the bisection stops there */
    double *figure;        /* gets the figure of the length returned */
} pv_walk;

static int precise_test(pv_search *s, uint64_t k0, uint64_t k, double *cv, int *passed)
{
    (void)k0;
    return precise_enough(s, k, cv, passed);
}

static int separable_test(pv_search *s, uint64_t k0, uint64_t d, double *worst, int *passed)
{
    (void)passed; /* Algorithm 2 does not retry: a pair that fails once is not separated */
    return separable(s, k0, d, worst);
}

/* From a length k that passed: halve while the test passes. */
static void walk_down(pv_search *s, const pv_walk *w, uint64_t k, uint64_t *lo, uint64_t *hi)
{
    double figure;
    *hi = k;
    while (k / 2 >= w->shortest && !over_budget(s)) {
        if (!w->test(s, w->k0, k / 2, &figure, NULL)) {
            *lo = k / 2;
            return;
        }
        k /= 2, *hi = k, *w->figure = figure;
    }
}

/* From k: double until the test passes; a length that failed after passing some confirmations is
 * measured again, up to w->retries times, before it counts as failed. */
static void walk_up(pv_search *s, const pv_walk *w, uint64_t k, uint64_t *lo, uint64_t *hi)
{
    double figure;
    int retries = 0, passed = 0;
    while (!over_budget(s) && k <= w->longest) {
        if (w->test(s, w->k0, k, &figure, &passed)) {
            *hi = k, *w->figure = figure;
            return;
        }
        if (passed > 0 && retries < w->retries) {
            retries++;
            continue;
        }
        *lo = k, k *= 2, retries = 0;
    }
}

/* Between a failing length *lo and a passing one *hi: bisect to w->fraction (refined). */
static void walk_between(pv_search *s, const pv_walk *w, uint64_t *lo, uint64_t *hi)
{
    double figure;
    while (*hi && !refined(*lo, *hi, w->fraction) && !over_budget(s) && pv_now() < w->refine_until) {
        uint64_t mid = *lo + (*hi - *lo) / 2;
        if (w->test(s, w->k0, mid, &figure, NULL))
            *hi = mid, *w->figure = figure;
        else
            *lo = mid;
    }
}

/* The paper's searches on one schedule: from `hint` (0: from w->start), halve while the test
 * passes, or double until it passes, then bisect between the last failure and the last pass to
 * w->fraction. *lo_out (if not NULL) gets the last failing length (0: none). Returns the shortest
 * passing length found (0: none). */
static uint64_t walk(pv_search *s, const pv_walk *w, uint64_t hint, uint64_t *lo_out)
{
    uint64_t lo = 0, hi = 0, k = hint ? hint : w->start;
    double figure;
    if (hint && w->test(s, w->k0, k, &figure, NULL)) {
        *w->figure = figure;
        walk_down(s, w, k, &lo, &hi);
    } else {
        if (hint) lo = k, k *= 2;
        walk_up(s, w, k, &lo, &hi);
    }
    walk_between(s, w, &lo, &hi);
    if (lo_out) *lo_out = lo;
    return hi;
}

/* Algorithm 1: t_min bisected to 1/16, but not past `refine_until` (pv_now ticks): each bisection
 * step costs p distributions, and a budget spent on refining t_min leaves none for t_diff. */
#define PV_TMIN_FRACTION 16
/* Algorithm 2: t_diff bisected to 1/8, or to one ADD (exact). */
#define PV_TDIFF_FRACTION 8

void pv_search_state(pv_search *s, uint64_t hint_min, uint64_t hint_diff)
{
    pv_calib_state *st = s->st;
    uint64_t now = pv_now(), lo = 0;
    pv_walk t_min = {.test = precise_test, .start = 64, .shortest = 64, .longest = 1u << 24,
                     .retries = PV_TMIN_RETRIES, .fraction = PV_TMIN_FRACTION,
                     .refine_until = now + (s->deadline > now ? (s->deadline - now) / 2 : 0),
                     .figure = &st->t_min_cv};
    uint64_t hi = walk(s, &t_min, hint_min, &lo);
    int complete = 0;
    if (hi) {
        st->t_min_adds = hi;
        /* Units per ADD from the slope between the t_min chain and one 4096 ADDs longer. */
        double m0 = median_of(s, hi), m1 = median_of(s, hi + 4096);
        st->per_add = (m1 - m0) / 4096.0;
        st->t_min = m0;
        pv_walk t_diff = {.test = separable_test, .k0 = hi, .start = 1, .shortest = 1, .longest = hi,
                          .fraction = s->flush_bytes == 0 ? 0 : PV_TDIFF_FRACTION,
                          .refine_until = UINT64_MAX, .figure = &st->t_diff_overlap};
        uint64_t dhi = walk(s, &t_diff, hint_diff ? (hint_diff < hi ? hint_diff : hi) : 0, NULL);
        if (dhi) {
            st->t_diff_adds = dhi;
            st->t_diff = (double)dhi * st->per_add;
            complete = !over_budget(s);
        }
    }
    st->status = complete ? "complete" : "partial";
    if (complete && !refined(lo, hi, PV_TMIN_FRACTION))
        snprintf(st->note, sizeof st->note,
                 "t_min refined for half the share: between %llu (not precise) and %llu ADDs",
                 (unsigned long long)lo, (unsigned long long)hi);
    if (!complete)
        snprintf(st->note, sizeof st->note, "%s",
                 over_budget(s) ? "its share of the budget was spent before t_min and t_diff were both final"
                 : !hi          ? "no chain up to 2^24 ADDs had CV < epsilon"
                                : "no difference up to t_min separated the distributions");
}
