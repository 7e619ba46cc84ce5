/* bench_metrics_read.c — what one counter read costs (PERFVAR_METRICS): the threshold
 * PERFVAR_METRICS_MIN_US is derived from it (a benchmark: it prints, it asserts nothing about time).
 *
 * Opens the events as the MPI layer does (src/metrics: pv_metrics_init, pv_metrics_thread_start on
 * this thread) and times pv_metrics_read per block of calls (CLOCK_MONOTONIC around the block, /
 * calls), median over rounds, one warm-up round discarded; next to it PAPI_read alone on the same
 * event set and getrusage(RUSAGE_THREAD), the cheapest per-thread alternative. Back-to-back reads
 * find PAPI's and the kernel's code and data in the caches; a segment's end does not: the last
 * series times each read on its own (CLOCK_MONOTONIC around it) after 200 us of work that streams
 * through 4 MiB, as a read at the end of a segment just over the threshold would be (median and
 * 90th percentile). The threshold at which a read at the end of every segment costs 1 % of the run
 * is that read's 90th percentile / 1 %.
 * Usage: bench_metrics_read [events | default] [calls per block = 2000] [rounds = 31]
 * Prints "metrics-read ns=X cold_ns=Y cold_p90_ns=Z events=N" (ns per read), or "metrics-read none: why" when no
 * event can be opened here (no perf events: perf_event_paranoid, a container), and exits 0 then.
 */
#define _GNU_SOURCE
#include "metrics/metrics.h"
#include "bench_time.h"

#include <papi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

enum { READ, PAPI_ONLY, RUSAGE, NSERIES };

int main(int argc, char **argv)
{
    const char *events = argc > 1 && strcmp(argv[1], "default") ? argv[1] : NULL;
    int calls = argc > 2 ? atoi(argv[2]) : 2000, rounds = argc > 3 ? atoi(argv[3]) : 31;
    if (calls < 1 || rounds < 1) return 2;
    char why[600];
    int n = pv_metrics_init(events, why, sizeof why);
    pv_metrics_thread m;
    if (!n || pv_metrics_thread_start(&m)) {
        printf("metrics-read none: %s\n", why[0] ? why : "no event of the set can be opened here");
        return 0;
    }
    double *ns = malloc(sizeof(double) * NSERIES * (size_t)rounds);
    if (!ns) return 1;
    uint64_t delta[PV_METRICS_MAX], sink = 0;
    long long raw[PV_METRICS_MAX];
    struct rusage ru;
    for (int r = -1; r < rounds; r++) { /* round -1: warm-up */
        for (int s = 0; s < NSERIES; s++) {
            double t0 = bench_now_ns();
            for (int i = 0; i < calls; i++) {
                if (s == READ) pv_metrics_read(&m, delta), sink += delta[0];
                else if (s == PAPI_ONLY) PAPI_read(m.eventset, raw), sink += (uint64_t)raw[0];
                else getrusage(RUSAGE_THREAD, &ru), sink += (uint64_t)ru.ru_nvcsw;
            }
            if (r >= 0) ns[s * rounds + r] = (bench_now_ns() - t0) / calls;
        }
    }
    /* Reads after work, one at a time. */
    enum { WORK_US = 200, WORK_BYTES = 4 << 20 };
    int ncold = rounds * 8;
    double *cold = malloc(sizeof(double) * (size_t)ncold);
    volatile char *buf = malloc(WORK_BYTES);
    if (!cold || !buf) return 1;
    for (int r = -1; r < ncold; r++) {
        double until = bench_now_ns() + WORK_US * 1e3;
        for (size_t at = 0; bench_now_ns() < until; at = (at + 4096) % WORK_BYTES) buf[at]++;
        double t0 = bench_now_ns();
        pv_metrics_read(&m, delta);
        if (r >= 0) cold[r] = bench_now_ns() - t0;
        sink += delta[0];
    }
    double cold_med = bench_median(cold, ncold), cold_p90 = bench_quantile(cold, ncold, 0.9);
    const char *names[NSERIES] = {"pv_metrics_read", "PAPI_read", "getrusage(RUSAGE_THREAD)"};
    double med[NSERIES];
    for (int s = 0; s < NSERIES; s++) {
        med[s] = bench_median(ns + s * rounds, rounds);
        printf("%-26s %8.1f ns (median of %d rounds of %d calls)\n", names[s], med[s], rounds, calls);
    }
    printf("events:");
    for (int i = 0; i < n; i++) printf(" %s", pv_metrics_name(i));
    printf("\nread after %d us of work through %d MiB: median %.1f ns, 90th percentile %.1f ns (%d reads)\n",
           WORK_US, WORK_BYTES >> 20, cold_med, cold_p90, ncold);
    printf("threshold for 1 %% of the run: %.0f us (90th percentile after work / 0.01)\n",
           cold_p90 / 0.01 / 1e3);
    printf("metrics-read ns=%.1f cold_ns=%.1f cold_p90_ns=%.1f events=%d sink=%llu\n", med[READ],
           cold_med, cold_p90, n, (unsigned long long)(sink & 1));
    free(cold), free((void *)buf);
    pv_metrics_thread_stop(&m);
    free(ns);
    return 0;
}
