/* test_clock_resolution.c — the step a clock reads in (calib/resolution.h), on read differences the
 * test writes: a VM's TSC that moves in steps of ~24.5 ticks with a tick of jitter (gcd 1, step 24),
 * a fine clock that reads every tick, a fine clock with rare interrupts, and a single value. */
#include "check.h"
#include "calib/resolution.h"

#include <stdio.h>

enum { N = 1000 };

int main(void)
{
    static double v[N];
    /* Levels 24.5 ticks apart, each read as its floor or ceiling, as a sweep of chains gives them. */
    for (int i = 0; i < N; i++) v[i] = (double)(49 + (i % 16) * 49 / 2 + (i / 16) % 2);
    double step = pv_clock_resolution(v, N);
    printf("stepped clock: %.0f ticks\n", step);
    CHECKF(step >= 23 && step <= 25, "%.0f", step);

    /* Every tick of 30 .. 285 read: the clock is as fine as its tick. */
    for (int i = 0; i < N; i++) v[i] = (double)(30 + i % 256);
    step = pv_clock_resolution(v, N);
    printf("fine clock: %.0f ticks\n", step);
    CHECKF(step == 1, "%.0f", step);

    /* The same with 2 % of the reads interrupted (10000 ticks and more): outside the central 90 %. */
    for (int i = 0; i < N; i++) v[i] = i % 50 == 0 ? 10000.0 + i : (double)(30 + i % 256);
    step = pv_clock_resolution(v, N);
    printf("fine clock, interrupted reads: %.0f ticks\n", step);
    CHECKF(step <= 2, "%.0f", step);

    /* A single value says nothing of the step. */
    for (int i = 0; i < N; i++) v[i] = 42;
    CHECK(pv_clock_resolution(v, N) == 0);
    CHECK(pv_clock_resolution(v, 1) == 0);
    return check_result();
}
