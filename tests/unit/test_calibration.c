/* test_calibration.c — the first-cut calibration: quick mode within a 300 ms budget gives plausible
 * t_e,std / granularity / t_min / t_diff; off mode does nothing; a budget too small to finish is
 * reported as "partial", never "complete". No wall-clock bound is asserted. Exit 77 (skipped) when the
 * machine is too busy for any quick calibration to find t_min within its budget. */
#include "check.h"
#include "calib/calib.h"
#include "perfvar.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void print(const char *what, const pv_calib_result *r)
{
    printf("%s: status %s, overhead %.2f ns, granularity %.2f ns, t_min %llu adds = %.1f ns (cv %.4f), "
           "t_diff %llu adds = %.2f ns (overlap %.3f), %.3f ns/add, %.1f ms, cpu %d -> %d\n",
           what, r->status, r->timer_overhead_ns, r->granularity_ns, (unsigned long long)r->t_min_adds,
           r->t_min_ns, r->t_min_cv, (unsigned long long)r->t_diff_adds, r->t_diff_ns, r->t_diff_overlap,
           r->ns_per_add, r->elapsed_ms, r->cpu_start, r->cpu_end);
}

static void check_defaults(void)
{
    pv_calib_params p;
    pv_calib_defaults(&p, PV_CALIB_QUICK);
    CHECK(p.mode == PV_CALIB_QUICK);
    CHECK(p.budget_ms == 250 && p.n_samples == 300 && p.p_confirm == 5 && p.q_pairs == 5);
    CHECK(p.epsilon == 0.01 && p.alpha == 0.05);
    pv_calib_defaults(&p, PV_CALIB_FULL);
    CHECK(p.mode == PV_CALIB_FULL);
    CHECK(p.budget_ms == 120000 && p.n_samples == 10000 && p.p_confirm == 30 && p.q_pairs == 80);
    CHECK(p.epsilon == 0.01 && p.alpha == 0.05);
}

static void check_off(void)
{
    pv_calib_params p;
    pv_calib_result r;
    memset(&r, 0x5a, sizeof r);
    pv_calib_defaults(&p, PV_CALIB_OFF);
    CHECK(p.mode == PV_CALIB_OFF);
    CHECK(pv_calib_run(&p, &r) == PERFVAR_OK);
    CHECK(r.status && strcmp(r.status, "off") == 0);
    CHECK(r.t_min_adds == 0 && r.t_diff_adds == 0 && r.timer_overhead_ns == 0);
}

/* Quick mode with a 300 ms budget. On an overloaded machine the budget can run out before any chain is
 * precise enough (status "partial", t_min_adds 0, which is the documented outcome): then it retries, up
 * to 3 runs. Returns 1 if a run found t_min and was checked, 0 if every run ran out of budget first. */
static int check_quick(void)
{
    pv_calib_params p;
    pv_calib_result r;
    pv_calib_defaults(&p, PV_CALIB_QUICK);
    p.budget_ms = 300;
    for (int attempt = 1; attempt <= 3; attempt++) {
        CHECK(pv_calib_run(&p, &r) == PERFVAR_OK);
        print("quick, 300 ms", &r);
        CHECK(r.status != NULL);
        if (!r.status) return 1;
        int complete = strcmp(r.status, "complete") == 0;
        CHECKF(complete || strcmp(r.status, "partial") == 0, "status \"%s\"", r.status);
        /* A read pair costs at least one clock step, or less than one (0 ticks: coarse counters
         * such as a 25-100 MHz Armv8 generic timer). Either way it is a whole number of steps. */
        CHECK(r.timer_overhead_ns >= 0);
        CHECK(r.granularity_ns > 0);
        CHECK(r.timer_overhead_ns == 0 || r.granularity_ns <= r.timer_overhead_ns * 1.000001);
        CHECK(r.elapsed_ms > 0);
#if defined(__x86_64__)
        CHECK(r.cpu_start >= 0 && r.cpu_end >= 0);
#endif
        if (r.t_min_adds == 0 && !complete) {
            /* Only acceptable when the budget really ran out. */
            CHECKF(r.elapsed_ms >= p.budget_ms, "partial without t_min after only %.1f ms", r.elapsed_ms);
            printf("attempt %d: budget spent before t_min was found (busy machine?)\n", attempt);
            continue;
        }
        CHECK(r.t_min_adds > 0);
        CHECK(r.t_min_ns > 0);
        CHECK(r.t_min_cv >= 0 && r.t_min_cv < p.epsilon);
        CHECKF(r.ns_per_add > 0.01 && r.ns_per_add < 10, "ns_per_add = %g", r.ns_per_add);
        if (complete) {
            CHECK(r.t_diff_adds > 0);
            CHECK(r.t_diff_adds <= r.t_min_adds);
            CHECK(r.t_diff_ns > 0);
            CHECK(fabs(r.t_diff_ns - (double)r.t_diff_adds * r.ns_per_add) <= 1e-9 * r.t_diff_ns);
            CHECK(r.t_diff_overlap >= 0 && r.t_diff_overlap < p.alpha);
        }
        /* The raw distributions the search measured are kept, bounded, for the paper's re-check. */
        CHECK(r.ndists > 0 && r.ndists <= PV_CALIB_MAX_DISTS);
        CHECK(r.kept_samples > 0 && r.kept_samples <= PV_CALIB_MAX_KEPT_SAMPLES);
        long total = 0;
        int tmin_at_result = 0;
        for (int i = 0; i < r.ndists; i++) {
            const pv_calib_dist *d = &r.dists[i];
            CHECK(d->n > 0 && d->n <= p.n_samples && d->samples_ns);
            CHECK(d->kind == PV_DIST_TMIN || d->kind == PV_DIST_PAIR_SHORT || d->kind == PV_DIST_PAIR_LONG);
            total += d->n;
            tmin_at_result += d->kind == PV_DIST_TMIN && d->adds == r.t_min_adds;
        }
        CHECK(total == r.kept_samples);
        CHECKF(tmin_at_result >= p.p_confirm || r.dists_dropped > 0,
               "%d stored distributions at t_min, %d confirmations expected", tmin_at_result, p.p_confirm);
        pv_calib_free(&r);
        CHECK(r.dists == NULL && r.ndists == 0);
        return 1;
    }
    return 0;
}

static void check_tiny_budget(void)
{
    pv_calib_params p;
    pv_calib_result r;
    pv_calib_defaults(&p, PV_CALIB_QUICK);
    p.budget_ms = 1;
    CHECK(pv_calib_run(&p, &r) == PERFVAR_OK);
    print("quick, 1 ms", &r);
    CHECKF(r.status && strcmp(r.status, "partial") == 0, "status \"%s\"", r.status ? r.status : "(null)");
    CHECK(r.granularity_ns > 0); /* measured before the budget is checked */
}

int main(void)
{
    check_defaults();
    check_off();
    check_tiny_budget();
    int measured = check_quick();
    if (check_failures) return check_result();
    if (!measured) SKIP("3 quick calibrations ran out of budget before finding t_min: machine too busy");
    return 0;
}
