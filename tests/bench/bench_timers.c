/* bench_timers.c — what one timed interval costs, measured side by side in one run (issue 3, item 6).
 *
 * For each method, a block of N back-to-back "start; stop" pairs is timed with the fenced TSC read;
 * blocks of all methods are interleaved and repeated, and the median block gives the cost per pair.
 * Printed: ns per pair and the ratio of perfvar_start/perfvar_stop to
 *   - a bare fenced read pair (perfvar_clock_read twice: the physical floor),
 *   - PAPI_get_real_nsec twice,
 *   - clock_gettime(CLOCK_MONOTONIC) twice.
 * A benchmark, not a test: it asserts nothing about time (exit 0 unless something fails to run).
 * Usage: bench_timers [pairs_per_block=2000] [rounds=31] */
#include <papi.h>
#include <perfvar.h>
#include <perfvar_clock.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { BARE, PERFVAR, PAPI_NSEC, CLOCK_GETTIME, NMETHODS };
static const char *const names[NMETHODS] = {"fenced read pair (floor)", "perfvar_start/stop",
                                            "PAPI_get_real_nsec x2", "clock_gettime x2"};

static volatile uint64_t sink; /* keeps the compiler from dropping the reads */

static double block_ns(int method, int n, int handle)
{
    uint64_t t0 = perfvar_clock_read();
    for (int i = 0; i < n; i++) {
        switch (method) {
        case BARE: sink = perfvar_clock_read() - perfvar_clock_read(); break;
        case PERFVAR: perfvar_start(handle), perfvar_stop(handle); break;
        case PAPI_NSEC: sink = (uint64_t)(PAPI_get_real_nsec() - PAPI_get_real_nsec()); break;
        case CLOCK_GETTIME: {
            struct timespec a, b;
            clock_gettime(CLOCK_MONOTONIC, &a);
            clock_gettime(CLOCK_MONOTONIC, &b);
            sink = (uint64_t)(b.tv_nsec - a.tv_nsec);
            break;
        }
        }
    }
    return perfvar_ticks_to_ns(perfvar_clock_read() - t0) / n;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2000, rounds = argc > 2 ? atoi(argv[2]) : 31;
    if (n < 1 || rounds < 1) {
        fprintf(stderr, "usage: bench_timers [pairs_per_block>0] [rounds>0]\n");
        return 2;
    }
    int rc = PAPI_library_init(PAPI_VER_CURRENT);
    if (rc != PAPI_VER_CURRENT && rc < 0) {
        fprintf(stderr, "bench_timers: PAPI_library_init: %s\n", PAPI_strerror(rc));
        return 1;
    }
    int h;
    if (perfvar_region_register("bench", &h) != PERFVAR_OK) return 1;
    perfvar_clock_info clock;
    perfvar_clock_info_get(&clock);
    double *per[NMETHODS];
    for (int m = 0; m < NMETHODS; m++) per[m] = malloc((size_t)rounds * sizeof(double));
    for (int m = 0; m < NMETHODS; m++) block_ns(m, n, h); /* warm-up */
    for (int r = 0; r < rounds; r++)
        for (int m = 0; m < NMETHODS; m++) per[m][r] = block_ns(m, n, h);
    double med[NMETHODS];
    for (int m = 0; m < NMETHODS; m++) {
        qsort(per[m], (size_t)rounds, sizeof(double), cmp);
        med[m] = per[m][rounds / 2];
    }
    printf("bench_timers: clock %s at %.6f GHz (%s); %d rounds of %d pairs per method, interleaved\n",
           clock.name, clock.hz / 1e9, clock.hz_method, rounds, n);
    printf("%-28s %14s %14s %14s\n", "method", "median ns/pair", "p10 ns/pair", "p90 ns/pair");
    for (int m = 0; m < NMETHODS; m++)
        printf("%-28s %14.1f %14.1f %14.1f\n", names[m], med[m], per[m][rounds / 10],
               per[m][(rounds * 9) / 10]);
    printf("perfvar_start/stop pair = %.2fx the bare fenced read pair, %.2fx PAPI_get_real_nsec x2, "
           "%.2fx clock_gettime x2 (medians, same run)\n",
           med[PERFVAR] / med[BARE], med[PERFVAR] / med[PAPI_NSEC], med[PERFVAR] / med[CLOCK_GETTIME]);
    for (int m = 0; m < NMETHODS; m++) free(per[m]);
    return 0;
}
