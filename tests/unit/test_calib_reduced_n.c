/* test_calib_reduced_n.c — a flushed cache state whose N does not fit its share: full mode
 * reduces N to what fits (never below PV_CALIB_MIN_FLUSHED_N) and says so; quick mode skips it.
 * A flush buffer larger than this CPU's share of the available memory is skipped too.
 *
 * Full mode is scaled down (p = q = 2, N = 10000, flush 0 to 4xL2) so that 4xL2, whose 10000
 * samples per distribution each cost a flush of 4 x L2, cannot keep N = 10000, and its reduced N
 * must still be large enough. The budget (at least 3 s) is sized from one flush timed here, so that
 * 4xL2's share (about a quarter of it) holds p + 2 + 2q distributions of 4 x PV_CALIB_MIN_FLUSHED_N:
 * an 8 MiB flush takes 0.065 ms on an EPYC, 0.7 ms on a Xeon and 1.6 ms under qemu. Quick mode's
 * budget is a quarter of what its p x N flushes need, from the same timing. No wall-clock bound is
 * asserted. */
#include "check.h"
#include "calib/calib.h"
#include "calib/flush.h"
#include "perfvar.h"
#include "perfvar_calib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Five flushes of 4 x L2 (after one to fault the buffer in), in ms: the slowest and the fastest. */
static void flush_4xl2_ms(double *worst, double *best)
{
    uint64_t bytes = 4 * perfvar_cache_size(2);
    unsigned char *buf = malloc(bytes);
    double ms[5] = {0};
    if (buf) {
        pv_flush_lines(buf, bytes);
        for (int i = 0; i < 5; i++) {
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            pv_flush_lines(buf, bytes);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            ms[i] = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
        }
        free(buf);
    }
    qsort(ms, 5, sizeof ms[0], by_value);
    *worst = ms[4], *best = ms[0];
}

static void scaled(pv_calib_params *p, pv_calib_mode mode, double flush_ms)
{
    pv_calib_defaults(p, mode);
    p->n_samples = p->n_samples_flushed = 10000;
    p->p_confirm = p->q_pairs = 2;
    p->nstates = 3;
    double need_ms = 4.0 * (p->p_confirm + 2 + 2 * p->q_pairs) * 4 * PV_CALIB_MIN_FLUSHED_N * flush_ms;
    p->budget_ms = need_ms > 3000 ? need_ms : 3000;
}

int main(void)
{
    if (!perfvar_cache_size(2)) SKIP("L2 size unknown (sysfs): no 4xL2 state to reduce");
    pv_calib_params p;
    pv_calib_result r;
    double flush_ms, fastest_ms;
    flush_4xl2_ms(&flush_ms, &fastest_ms);

    scaled(&p, PV_CALIB_FULL, flush_ms);
    printf("one flush of 4 x L2: %.3f ms, budget %.0f ms\n", flush_ms, p.budget_ms);
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

    /* Quick mode never reduces N: with the whole budget a quarter of what p distributions of N
     * flushes take at the fastest flush timed here, 4xL2 cannot fit however fast this machine is
     * (the calibration's own timing would have to be 4x faster still), and must be skipped. */
    scaled(&p, PV_CALIB_QUICK, flush_ms);
    double quick_need_ms = p.p_confirm * (double)p.n_samples_flushed * fastest_ms;
    p.budget_ms = quick_need_ms / 4 < 3000 ? quick_need_ms / 4 : 3000;
    if (p.budget_ms < 50) p.budget_ms = 50;
    printf("quick: %d x %d flushes need %.0f ms at %.3f ms each, budget %.0f ms\n", p.p_confirm,
           p.n_samples_flushed, quick_need_ms, fastest_ms, p.budget_ms);
    CHECK(pv_calib_run(&p, &r) == PERFVAR_OK);
    print_states("quick", &r);
    CHECKF(strcmp(r.states[2].status, "skipped") == 0, "quick 4xL2: %s", r.states[2].status);
    CHECK(r.states[2].n_samples == 10000 && r.states[2].ndists == 0);
    pv_calib_free(&r);

    /* Memory for half a 4xL1 buffer per online CPU: 4xL1 is skipped without allocating, and says why. */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    scaled(&p, PV_CALIB_QUICK, flush_ms);
    p.nstates = 2, p.budget_ms = 500;
    pv_calib_set_available_memory((double)(4 * perfvar_cache_size(1)) / 2 * (double)(cpus > 0 ? cpus : 1));
    CHECK(pv_calib_run(&p, &r) == PERFVAR_OK);
    pv_calib_set_available_memory(0);
    print_states("memory", &r);
    CHECKF(strcmp(r.states[1].status, "skipped") == 0, "4xL1 with too little memory: %s", r.states[1].status);
    CHECKF(strstr(r.states[1].note, "exceeds this CPU's share of the available memory") != NULL, "note \"%s\"",
           r.states[1].note);
    CHECK(r.states[1].ndists == 0 && r.states[1].flush_ms == 0);
    pv_calib_free(&r);
    return check_result();
}
