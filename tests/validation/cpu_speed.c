/* cpu_speed.c — the validation kit's witness of the host: how fast the CPU it is pinned to
 * (taskset) runs a fixed chain of dependent additions, sampled every INTERVAL_MS ms until killed.
 * A virtual machine's vCPU can run slower for seconds or whole runs (its host clocks it down or
 * shares its core); a rank on such a vCPU is slower, with nothing injected. The kit sets each
 * rank's named slowness beside this measurement, taken outside perfvar.
 *
 *   cpu_speed INTERVAL_MS        (> 0, ms)
 *
 * Output, one line per sample, flushed: "<CLOCK_MONOTONIC ns> <chain ns>", the chain's time the
 * fastest of REPEATS back-to-back runs (an interrupt lengthens one run, not all). Cost on the CPU:
 * REPEATS chains of 10-20 us each per interval and a wake-up; the kernel counted 0.5-1.1 % of the
 * CPU at 20 ms, 0.09-0.25 % at 100 ms (the kit's interval), beside CloverLeaf's ranks.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { CHAIN_ADDS = 30000, REPEATS = 3 };

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Each addition waits for the one before (the empty asm makes x opaque to the compiler), so the
 * chain takes CHAIN_ADDS x the add latency: a clock, not a throughput. */
static long long chain_ns(void)
{
    unsigned long x = 0;
    long long t0 = now_ns();
    for (int i = 0; i < CHAIN_ADDS; i++) {
        x += 1;
        __asm__ volatile("" : "+r"(x));
    }
    return now_ns() - t0 + (long long)(x & 0); /* x used: the loop is kept */
}

int main(int argc, char **argv)
{
    double interval = argc == 2 ? atof(argv[1]) : 0;
    if (!(interval > 0)) {
        fprintf(stderr, "usage: cpu_speed INTERVAL_MS (> 0)\n");
        return 2;
    }
    long long interval_ns = (long long)(interval * 1e6);
    /* An absolute schedule: the samples stay INTERVAL_MS apart however long a wake-up takes. */
    for (long long wake = now_ns();; wake += interval_ns) {
        long long best = -1;
        for (int r = 0; r < REPEATS; r++) {
            long long ns = chain_ns();
            if (best < 0 || ns < best) best = ns;
        }
        printf("%lld %lld\n", now_ns(), best);
        fflush(stdout);
        long long next = wake + interval_ns;
        struct timespec ts = {next / 1000000000LL, next % 1000000000LL};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
}
