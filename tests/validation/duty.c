/* duty.c — a disturbance for the validation kit: busy BUSY_MS of every PERIOD_MS ms, then asleep,
 * until killed, on whatever CPU it is pinned to (taskset). The cycle is kept on an absolute
 * schedule (CLOCK_MONOTONIC), so it holds its duty cycle however long a wake-up takes.
 *
 *   duty BUSY_MS PERIOD_MS        (0 < BUSY_MS < PERIOD_MS, ms)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    double busy = argc == 3 ? atof(argv[1]) : 0, period = argc == 3 ? atof(argv[2]) : 0;
    if (!(busy > 0 && busy < period)) {
        fprintf(stderr, "usage: duty BUSY_MS PERIOD_MS (0 < BUSY_MS < PERIOD_MS)\n");
        return 2;
    }
    long long busy_ns = (long long)(busy * 1e6), period_ns = (long long)(period * 1e6);
    volatile unsigned long spin = 0;
    for (long long start = now_ns();; start += period_ns) {
        while (now_ns() < start + busy_ns) spin++;
        long long wake = start + period_ns;
        struct timespec ts = {wake / 1000000000LL, wake % 1000000000LL};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
}
