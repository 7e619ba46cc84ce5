/* bench_time.h — how the C benchmarks time blocks of calls and summarise rounds (header-only).
 * bench_now_ns: CLOCK_MONOTONIC in ns (around whole blocks, so its own cost and resolution vanish
 * in the block); bench_median / bench_quantile sort their samples in place. Thread-safe. */
#ifndef PV_BENCH_TIME_H
#define PV_BENCH_TIME_H
#include <stdlib.h>
#include <time.h>

static inline double bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile (0..1) of v[0..n), the nearest sample; sorts v. */
static inline double bench_quantile(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return v[(int)(q * (n - 1) + 0.5)];
}

/* The median of v[0..n), the mean of the middle two for an even n; sorts v. */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
