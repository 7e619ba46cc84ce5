/* test_calib_reduced_n.c — a flushed cache state whose N does not fit its share: full mode
 * reduces N to what fits (never below PV_CALIB_MIN_FLUSHED_N) and says so; quick mode skips it.
 *
 * Full mode is scaled down (p = q = 5, N = 10000, 3 s, flush 0 to 4xL2) so that 4xL2, whose
 * 10000 samples per distribution each cost a flush of 4 x L2, cannot keep N = 10000 in any share
 * of 3 s, and its reduced N must still be large enough. No wall-clock bound is asserted. */
#include "check.h"
#include "calib/calib.h"
#include "perfvar.h"
#include "perfvar_calib.h"

#include <stdio.h>
#include <string.h>

static void print_states(const char *what, const pv_calib_result *r)
{
    for (int s = 0; s < r->nstates; s++) {
        const pv_calib_state *st = &r->states[s];
        printf("%s %-4s N=%d of %d %-8s share %7.1f ms, used %7.1f ms, flush %.3f ms, t_min %llu adds, "
               "t_diff %llu adds, %d dists%s%s\n",
               what, st->label, st->n_samples, st->n_requested, st->status, st->budget_ms, st->elapsed_ms,
               st->flush_ms, (unsigned long long)st->t_min_adds, (unsigned long long)st->t_diff_adds, st->ndists,
               st->note[0] ? ": " : "", st->note);
    }
}

static void scaled(pv_calib_params *p, pv_calib_mode mode)
{
    pv_calib_defaults(p, mode);
    p->budget_ms = 3000;
    p->n_samples = p->n_samples_flushed = 10000;
    p->p_confirm = p->q_pairs = 5;
    p->nstates = 3;
}

int main(void)
{
    if (!perfvar_cache_size(2)) SKIP("L2 size unknown (sysfs): no 4xL2 state to reduce");
    pv_calib_params p;
    pv_calib_result r;

    scaled(&p, PV_CALIB_FULL);
    CHECK(pv_calib_run(&p, &r) == PERFVAR_OK);
    print_states("full ", &r);
    const pv_calib_state *l2 = &r.states[2];
    CHECK(l2->n_requested == 10000);
    CHECKF(strcmp(l2->status, "skipped") != 0, "4xL2 skipped: %s", l2->note);
    CHECKF(l2->n_samples < l2->n_requested && l2->n_samples >= PV_CALIB_MIN_FLUSHED_N, "N = %d", l2->n_samples);
    char expect[80];
    snprintf(expect, sizeof expect, "N reduced from 10000 to %d", l2->n_samples);
    CHECKF(strstr(l2->note, expect) != NULL, "note \"%s\"", l2->note);
    for (int i = 0; i < r.ndists; i++)
        if (r.dists[i].state == 2) CHECK(r.dists[i].n <= l2->n_samples);
    for (int s = 0; s < r.nstates; s++) /* a state that kept its N says nothing of a reduction */
        if (r.states[s].n_samples == r.states[s].n_requested) CHECK(!strstr(r.states[s].note, "N reduced"));
    pv_calib_free(&r);

    scaled(&p, PV_CALIB_QUICK);
    CHECK(pv_calib_run(&p, &r) == PERFVAR_OK);
    print_states("quick", &r);
    CHECKF(strcmp(r.states[2].status, "skipped") == 0, "quick 4xL2: %s", r.states[2].status);
    CHECK(r.states[2].n_samples == 10000 && r.states[2].ndists == 0);
    pv_calib_free(&r);
    return check_result();
}
