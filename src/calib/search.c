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

/* Whether the bisection between a failing length lo and a precise one hi has reached 1/16. */
static int t_min_refined(uint64_t lo, uint64_t hi) { return hi - lo <= hi / 16; }

/* Algorithm 1's search: from `hint` (0: from 64 ADDs), double until precise, or halve while
 * precise, then bisect between the last failure and success to 1/16, but not past `refine_until`
 * (pv_now ticks): each bisection step costs p distributions, and a budget spent on refining t_min
 * leaves none for t_diff. *lo_out gets the last failing length (0: none). Returns t_min in ADDs
 * (0: none found). */
static uint64_t search_t_min(pv_search *s, uint64_t hint, uint64_t refine_until, uint64_t *lo_out)
{
    pv_calib_state *st = s->st;
    uint64_t lo = 0, hi = 0, k = hint ? hint : 64;
    double cv = INFINITY;
    if (hint && precise_enough(s, k, &cv, NULL)) {
        hi = k, st->t_min_cv = cv;
        while (k / 2 >= 64 && !over_budget(s)) {
            if (!precise_enough(s, k / 2, &cv, NULL)) {
                lo = k / 2;
                break;
            }
            k /= 2, hi = k, st->t_min_cv = cv;
        }
    } else {
        if (hint) lo = k, k *= 2;
        int retries = 0, passed = 0;
        while (!over_budget(s) && k <= (1u << 24)) {
            if (precise_enough(s, k, &cv, &passed)) {
                hi = k, st->t_min_cv = cv;
                break;
            }
            if (passed > 0 && retries < PV_TMIN_RETRIES) {
                retries++;
                continue;
            }
            lo = k;
            k *= 2, retries = 0;
        }
    }
    while (hi && !t_min_refined(lo, hi) && !over_budget(s) && pv_now() < refine_until) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (mid == 0) break; /* precise down to 1 ADD: 0 would read as "none found" */
        if (precise_enough(s, mid, &cv, NULL))
            hi = mid, st->t_min_cv = cv;
        else
            lo = mid;
    }
    *lo_out = lo;
    return hi;
}

/* Algorithm 2's search above t_min = k0 ADDs, from `hint` (0: from 1 ADD) as search_t_min, then
 * bisected to one ADD (exact) or to 1/8 of the value. Returns t_diff in ADDs (0: none found). */
static uint64_t search_t_diff(pv_search *s, uint64_t k0, uint64_t hint, int exact)
{
    pv_calib_state *st = s->st;
    uint64_t dlo = 0, dhi = 0, d = hint ? (hint < k0 ? hint : k0) : 1;
    double worst = 1.0;
    if (hint && separable(s, k0, d, &worst)) {
        dhi = d, st->t_diff_overlap = worst;
        while (d / 2 >= 1 && !over_budget(s)) {
            if (!separable(s, k0, d / 2, &worst)) {
                dlo = d / 2;
                break;
            }
            d /= 2, dhi = d, st->t_diff_overlap = worst;
        }
    } else {
        if (hint) dlo = d, d *= 2;
        while (!over_budget(s) && d <= k0) {
            if (separable(s, k0, d, &worst)) {
                dhi = d, st->t_diff_overlap = worst;
                break;
            }
            dlo = d;
            d *= 2;
        }
    }
    for (;;) {
        uint64_t tol = exact || dhi < 8 ? 1 : dhi / 8;
        if (!dhi || dhi - dlo <= tol || over_budget(s)) break;
        uint64_t mid = dlo + (dhi - dlo) / 2;
        if (separable(s, k0, mid, &worst))
            dhi = mid, st->t_diff_overlap = worst;
        else
            dlo = mid;
    }
    return dhi;
}

void pv_search_state(pv_search *s, uint64_t hint_min, uint64_t hint_diff)
{
    pv_calib_state *st = s->st;
    uint64_t now = pv_now(), lo = 0;
    uint64_t hi = search_t_min(s, hint_min, now + (s->deadline > now ? (s->deadline - now) / 2 : 0), &lo);
    int complete = 0;
    if (hi) {
        st->t_min_adds = hi;
        /* Units per ADD from the slope between the t_min chain and one 4096 ADDs longer. */
        double m0 = median_of(s, hi), m1 = median_of(s, hi + 4096);
        st->per_add = (m1 - m0) / 4096.0;
        st->t_min = m0;
        uint64_t dhi = search_t_diff(s, hi, hint_diff, s->flush_bytes == 0);
        if (dhi) {
            st->t_diff_adds = dhi;
            st->t_diff = (double)dhi * st->per_add;
            complete = !over_budget(s);
        }
    }
    st->status = complete ? "complete" : "partial";
    if (complete && !t_min_refined(lo, hi))
        snprintf(st->note, sizeof st->note,
                 "t_min refined for half the share: between %llu (not precise) and %llu ADDs",
                 (unsigned long long)lo, (unsigned long long)hi);
    if (!complete)
        snprintf(st->note, sizeof st->note, "%s",
                 over_budget(s) ? "its share of the budget was spent before t_min and t_diff were both final"
                 : !hi          ? "no chain up to 2^24 ADDs had CV < epsilon"
                                : "no difference up to t_min separated the distributions");
}
