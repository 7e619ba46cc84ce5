/* calib.c — first-cut t_e,std / t_min / t_diff estimates; see calib.h. */
#include "calib.h"
#include "add_chain.h"
#include "perfvar.h"
#include "../clock/clock.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct ctx {
    const pv_calib_params *p;
    pv_calib_result *r;    /* where the raw distributions are logged */
    double *buf;           /* n_samples scratch, ns */
    double *sorted;        /* n_samples scratch */
    uint64_t deadline;     /* ticks */
    double overhead_ns;
    double granularity_ns;
    int last_n;            /* samples the last measure() took (fewer when the budget ran out) */
} ctx;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int over_budget(const ctx *c) { return pv_now() > c->deadline; }

/* Measure n samples of a k-ADD chain, overhead removed, trimmed above
 * median + max(3 IQR, 3 clock steps): with a quantised clock the IQR is often 0, and a bare 3 IQR
 * would throw away every sample above the median. Stops early (fewer samples) when the budget is
 * spent, so one long batch cannot overrun it. Returns the number of samples kept, sorted ascending
 * in c->sorted. */
static int measure(ctx *c, uint64_t k)
{
    int n = c->p->n_samples;
    for (int i = 0; i < 8; i++) pv_add_chain(k); /* warm-up: caches, branch predictor */
    for (int i = 0; i < n; i++) {
        uint64_t t0 = pv_now();
        pv_add_chain(k);
        uint64_t t1 = pv_now();
        c->buf[i] = perfvar_ticks_to_ns(t1 - t0) - c->overhead_ns;
        if ((i & 63) == 63 && i + 1 >= 16 && over_budget(c)) {
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

/* Keep the raw samples of the distribution measure() just took (c->buf). */
static void log_dist(ctx *c, pv_dist_kind kind, uint64_t adds, uint64_t base, uint64_t d, int pair)
{
    pv_calib_result *r = c->r;
    int n = c->last_n;
    if (r->ndists == PV_CALIB_MAX_DISTS || r->kept_samples + n > PV_CALIB_MAX_KEPT_SAMPLES) {
        r->dists_dropped++;
        return;
    }
    if (!r->dists && !(r->dists = calloc(PV_CALIB_MAX_DISTS, sizeof *r->dists))) {
        r->dists_dropped++;
        return;
    }
    float *x = malloc((size_t)n * sizeof *x);
    if (!x) {
        r->dists_dropped++;
        return;
    }
    for (int i = 0; i < n; i++) x[i] = (float)c->buf[i];
    r->dists[r->ndists++] = (pv_calib_dist){kind, adds, base, d, pair, n, x};
    r->kept_samples += n;
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
static int precise_enough(ctx *c, uint64_t k, int confirmations, double *cv)
{
    for (int i = 0; i < confirmations; i++) {
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
    if (mode == PV_CALIB_FULL) {
        p->budget_ms = 120000;
        p->n_samples = 10000;
        p->p_confirm = 30;
        p->q_pairs = 80;
    } else {
        p->budget_ms = 250;
        p->n_samples = 300;
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
    ctx c = {.p = p, .r = r};
    c.buf = malloc((size_t)p->n_samples * sizeof(double));
    c.sorted = malloc((size_t)p->n_samples * sizeof(double));
    double *a0 = malloc((size_t)p->n_samples * sizeof(double));
    if (!c.buf || !c.sorted || !a0) {
        free(c.buf), free(c.sorted), free(a0);
        return PERFVAR_ERR_NO_MEMORY;
    }
    uint64_t start = pv_now_cpu(&r->cpu_start);
    c.deadline = start + (uint64_t)(p->budget_ms * 1e6 * pv_clock_ticks_per_ns());
    int complete = 0;

    /* t_e,std: the minimal back-to-back read pair. */
    /* and the clock's granularity: the gcd of the observed read-pair differences. */
    uint64_t best = UINT64_MAX, step = 0;
    for (int i = 0; i < 4 * p->n_samples; i++) {
        uint64_t t0 = pv_now();
        uint64_t t1 = pv_now();
        if (t1 - t0 < best) best = t1 - t0;
        step = gcd_u64(step, t1 - t0);
    }
    c.overhead_ns = r->timer_overhead_ns = perfvar_ticks_to_ns(best);
    c.granularity_ns = r->granularity_ns = perfvar_ticks_to_ns(step ? step : 1);

    /* t_min: double the chain until precise, then bisect between the last failure and success. */
    uint64_t lo = 0, hi = 0, k = 64;
    double cv = INFINITY;
    while (!over_budget(&c) && k <= (1u << 24)) {
        if (precise_enough(&c, k, p->p_confirm, &cv)) {
            hi = k;
            r->t_min_cv = cv;
            break;
        }
        lo = k;
        k *= 2;
    }
    while (hi && hi - lo > hi / 16 && !over_budget(&c)) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (precise_enough(&c, mid, p->p_confirm, &cv)) {
            hi = mid;
            r->t_min_cv = cv;
        } else {
            lo = mid;
        }
    }
    if (hi) {
        r->t_min_adds = hi;
        /* ns per ADD from the slope between the t_min chain and one 4096 ADDs longer. */
        double m0 = median_of(&c, hi), m1 = median_of(&c, hi + 4096);
        r->ns_per_add = (m1 - m0) / 4096.0;
        r->t_min_ns = m0;

        /* t_diff: double the extra ADDs until all q pairs separate, then bisect. */
        uint64_t dlo = 0, dhi = 0, d = 1;
        double worst = 1.0;
        while (!over_budget(&c) && d <= hi) {
            if (separable(&c, hi, d, &worst, a0)) {
                dhi = d;
                r->t_diff_overlap = worst;
                break;
            }
            dlo = d;
            d *= 2;
        }
        while (dhi && dhi - dlo > 1 && !over_budget(&c)) {
            uint64_t mid = dlo + (dhi - dlo) / 2;
            if (separable(&c, hi, mid, &worst, a0)) {
                dhi = mid;
                r->t_diff_overlap = worst;
            } else {
                dlo = mid;
            }
        }
        if (dhi) {
            r->t_diff_adds = dhi;
            r->t_diff_ns = (double)dhi * r->ns_per_add;
            complete = !over_budget(&c);
        }
    }
    uint64_t end = pv_now_cpu(&r->cpu_end);
    r->elapsed_ms = perfvar_ticks_to_ns(end - start) / 1e6;
    r->status = complete ? "complete" : "partial";
    free(c.buf), free(c.sorted), free(a0);
    return PERFVAR_OK;
}
