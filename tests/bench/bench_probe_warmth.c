/* bench_probe_warmth.c — why a fixed-work probe runs its kernel once untimed before the timed pass
 * (src/calib/work_probe.h), measured side by side in one run.
 *
 * A probe comes every PERFVAR_PROBE ms, after the application's own code and the MPI library's
 * have run, so the kernel's code is no longer in the core's caches. Four variants, interleaved:
 *   timed alone, warm     pv_work_probe_timed: the kernel timed, its code in cache
 *   timed alone, cold     the same, its code and the probe's flushed from every cache first
 *   probe, warm           pv_work_probe_run: an untimed pass, then the timed one (what perfvar runs)
 *   probe, cold           the same, flushed first
 * Each sample is one probe's t_end - t_begin, in ns (clock ticks / ticks per ns). A probe that
 * measures the core gives the same figure cold as warm; printed: the medians, p90 and the ratios
 * cold / warm. "Cold" flushes with clflush, on x86-64 only (elsewhere the cold rows are not
 * measured). A benchmark, not a test: it asserts nothing about time (exit 0 unless it cannot run).
 * Usage: bench_probe_warmth [samples=400] [rounds=5] */
#include "bench_time.h"
#include "calib/work_probe.h"
#include "clock/clock.h"

#include <stdio.h>
#include <stdlib.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define HAVE_FLUSH 1
/* The lines of code a probe runs: the lanes' unrolled block (256 ADDs of 3 bytes and its entry)
 * and the out-of-line timed pass. */
static void flush_code(void)
{
    const char *chain = (const char *)(void *)pv_add_lanes;
    const char *timed = (const char *)(void *)pv_work_probe_timed;
    for (int at = -64; at < 1024; at += 64) _mm_clflush(chain + at);
    for (int at = -64; at < 256; at += 64) _mm_clflush(timed + at);
    _mm_mfence();
}
#else
#define HAVE_FLUSH 0
static void flush_code(void) {}
#endif

enum { TIMED_WARM, TIMED_COLD, PROBE_WARM, PROBE_COLD, VARIANTS };
static const char *const names[VARIANTS] = {"timed alone, warm", "timed alone, cold", "probe, warm",
                                            "probe, cold"};

static int measured(int variant)
{
    return HAVE_FLUSH || variant == TIMED_WARM || variant == PROBE_WARM;
}

/* Every variant waits PAUSE_NS on the clock before its probe, as a probe comes long after the last:
 * right after the flush, the front end fetched the chain again while the fences waited, and cold
 * read as warm. */
#define PAUSE_NS 10000.0

static double one(int variant, double ticks_per_ns)
{
    pv_work_probe_sample s;
    if (variant == TIMED_COLD || variant == PROBE_COLD) flush_code();
    uint64_t until = pv_now() + (uint64_t)(PAUSE_NS * ticks_per_ns);
    while (pv_now() < until) {
    }
    if (variant == TIMED_WARM || variant == TIMED_COLD)
        pv_work_probe_timed(PV_WORK_PROBE_ADDS, &s);
    else
        pv_work_probe_run(PV_WORK_PROBE_ADDS, &s);
    return (double)(s.t_end - s.t_begin) / ticks_per_ns;
}

int main(int argc, char **argv)
{
    int samples = argc > 1 ? atoi(argv[1]) : 400, rounds = argc > 2 ? atoi(argv[2]) : 5;
    if (samples < 10 || rounds < 1) {
        fprintf(stderr, "usage: bench_probe_warmth [samples>=10] [rounds>=1]\n");
        return 2;
    }
    if (!pv_clock_init()) {
        fprintf(stderr, "bench_probe_warmth: no clock\n");
        return 1;
    }
    double tpn = pv_clock_ticks_per_ns();
    double *d[VARIANTS], med[VARIANTS][64], p90[VARIANTS][64];
    if (rounds > 64) rounds = 64;
    for (int v = 0; v < VARIANTS; v++) d[v] = malloc(sizeof(double) * (size_t)samples);
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < samples; i++)
            for (int v = 0; v < VARIANTS; v++)
                if (measured(v)) d[v][i] = one(v, tpn);
        for (int v = 0; v < VARIANTS; v++) {
            if (!measured(v)) continue;
            p90[v][r] = bench_quantile(d[v], samples, 0.9);
            med[v][r] = bench_median(d[v], samples);
        }
    }
    printf("probe of %u ADDs (warm pass %u ADDs), %d samples x %d rounds, ns:\n", PV_WORK_PROBE_ADDS,
           PV_WORK_PROBE_WARM_ADDS, samples, rounds);
    double m[VARIANTS];
    for (int v = 0; v < VARIANTS; v++) {
        if (!measured(v)) {
            printf("  %-18s not measured (no clflush here)\n", names[v]);
            continue;
        }
        double q90 = bench_median(p90[v], rounds);
        m[v] = bench_median(med[v], rounds);
        printf("  %-18s median %7.1f  p90 %7.1f\n", names[v], m[v], q90);
    }
    if (HAVE_FLUSH)
        printf("cold / warm: timed alone %.2fx, probe %.2fx\n", m[TIMED_COLD] / m[TIMED_WARM],
               m[PROBE_COLD] / m[PROBE_WARM]);
    for (int v = 0; v < VARIANTS; v++) free(d[v]);
    return 0;
}
