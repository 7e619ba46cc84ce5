/* bench_probe_lanes.c — why the fixed-work probes run their ADDs in lanes (src/calib/add_lanes.h)
 * and not in the calibration's single chain, measured side by side in one run.
 *
 * Three kernels of the same 12 000 ADDs, interleaved, each timed as the fastest of 3 back-to-back
 * runs every INTERVAL ms:
 *   chain   pv_add_chain: one dependent ADD a cycle (the calibration's kernel)
 *   lanes   pv_add_lanes: the probes' kernel, PV_ADD_LANES chains side by side
 *   loop    a compiled loop of four instructions an iteration (an ADD, the counter, the compare,
 *           the branch), whose pace, like an application's, needs the core's issue slots
 * Printed: each kernel's 10th percentile (its speed when the core was its own), its median and 90th
 * percentile over that, and, over the samples where the loop ran 1.3x or more its own 10th
 * percentile (the core slower for an application), the chain's and the lanes' median ratios. A
 * probe that sees what slows the application moves with the loop there. A benchmark, not a test:
 * it asserts nothing about time (exit 0 unless it cannot run).
 * Usage: bench_probe_lanes [samples=200] [interval_ms=20] */
#define _GNU_SOURCE
#include "bench_time.h"
#include "calib/add_chain.h"
#include "calib/add_lanes.h"

#include <stdio.h>
#include <stdlib.h>

enum { ADDS = 12000, REPEATS = 3, KERNELS = 3 };
static const char *const NAMES[KERNELS] = {"chain", "lanes", "loop"};

static uint64_t loop_adds(uint64_t n)
{
    uint64_t x = 0;
    for (uint64_t i = 0; i < n; i++) {
        x += 1;
        __asm__ volatile("" : "+r"(x)); /* opaque: the loop is kept, one ADD an iteration */
    }
    return x;
}

/* The fastest of REPEATS runs of each kernel, interleaved, in ns. */
static void sample(double out[KERNELS])
{
    uint64_t (*const kernels[KERNELS])(uint64_t) = {pv_add_chain, pv_add_lanes, loop_adds};
    for (int k = 0; k < KERNELS; k++) out[k] = 1e300;
    for (int r = 0; r < REPEATS; r++)
        for (int k = 0; k < KERNELS; k++) {
            double t0 = bench_now_ns();
            volatile uint64_t sum = kernels[k](ADDS);
            double t = bench_now_ns() - t0;
            (void)sum;
            if (t < out[k]) out[k] = t;
        }
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 200;
    double interval_ms = argc > 2 ? atof(argv[2]) : 20;
    if (n < 10 || !(interval_ms >= 0)) {
        fprintf(stderr, "usage: %s [samples >= 10] [interval_ms >= 0]\n", argv[0]);
        return 2;
    }
    double *t = malloc(sizeof *t * (size_t)n * KERNELS), *col = malloc(sizeof *col * (size_t)n);
    if (!t || !col) return 2;
    for (int i = 0; i < n; i++) {
        sample(&t[i * KERNELS]);
        struct timespec pause = {0, (long)(interval_ms * 1e6)};
        nanosleep(&pause, NULL);
    }
    double base[KERNELS];
    for (int k = 0; k < KERNELS; k++) {
        for (int i = 0; i < n; i++) col[i] = t[i * KERNELS + k];
        base[k] = bench_quantile(col, n, 0.1);
        double med = bench_quantile(col, n, 0.5), p90 = bench_quantile(col, n, 0.9);
        printf("%-5s 12000 ADDs: p10 %.0f ns, median x%.3f, p90 x%.3f\n", NAMES[k], base[k], med / base[k],
               p90 / base[k]);
    }
    int slow = 0;
    double chain[n], lanes[n];
    for (int i = 0; i < n; i++)
        if (t[i * KERNELS + 2] >= 1.3 * base[2]) {
            chain[slow] = t[i * KERNELS] / base[0];
            lanes[slow++] = t[i * KERNELS + 1] / base[1];
        }
    if (slow)
        printf("while the loop ran x1.3 or slower (%d of %d samples): chain x%.3f, lanes x%.3f (medians)\n",
               slow, n, bench_median(chain, slow), bench_median(lanes, slow));
    else
        printf("while the loop ran x1.3 or slower: no sample (%d samples)\n", n);
    free(t), free(col);
    return 0;
}
