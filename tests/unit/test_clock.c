/* test_clock.c — the serialized-barrier clock: description, CPU numbers, monotonicity and the
 * tick-to-ns conversion against CLOCK_MONOTONIC_RAW measured side by side. */
#define _GNU_SOURCE
#include "check.h"
#include "perfvar.h"
#include "perfvar_clock.h"

#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

static uint64_t raw_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A (ticks, ns) pair: the ns read bracketed by two tick reads; the narrowest of 64 tries, so a
 * preemption between the reads cannot skew it. *width gets the bracket width in ticks. */
static void paired(uint64_t *ticks, uint64_t *ns, uint64_t *width)
{
    *width = UINT64_MAX;
    for (int i = 0; i < 64; i++) {
        uint64_t a = perfvar_clock_read();
        uint64_t n = raw_ns();
        uint64_t b = perfvar_clock_read();
        if (b - a < *width) {
            *width = b - a;
            *ticks = a + (b - a) / 2;
            *ns = n;
        }
    }
}

static void check_info(void)
{
    perfvar_clock_info ci, again;
    CHECK(perfvar_clock_info_get(NULL) == PERFVAR_ERR_INVALID_ARG);
    CHECK(perfvar_clock_info_get(&ci) == PERFVAR_OK);
    CHECK(memchr(ci.name, 0, sizeof ci.name) != NULL);
    CHECK(memchr(ci.hz_method, 0, sizeof ci.hz_method) != NULL);
    printf("clock %s: %.6f MHz (%s, rel. error %.2e), serialized %d, cpu id %d\n", ci.name, ci.hz / 1e6,
           ci.hz_method, ci.hz_rel_error, ci.serialized, ci.has_cpu_id);
    CHECKF(ci.hz > 1e7 && ci.hz < 1e11, "hz = %g", ci.hz);
    CHECK(ci.name[0] != 0);
    CHECK(strcmp(ci.name, PERFVAR_CLOCK_NATIVE_NAME) == 0);
    CHECK(ci.hz_method[0] != 0);
    CHECKF(ci.hz_rel_error >= 0 && ci.hz_rel_error < 1e-3, "hz_rel_error = %g", ci.hz_rel_error);
#if defined(__x86_64__)
    CHECK(ci.serialized == 1);
    CHECK(ci.has_cpu_id == 1);
#endif
    /* Initialised once: a second call describes the same clock. */
    CHECK(perfvar_clock_info_get(&again) == PERFVAR_OK);
    CHECK(memcmp(&ci, &again, sizeof ci) == 0);

    CHECK(perfvar_ticks_to_ns(0) == 0.0);
    double one_s = perfvar_ticks_to_ns((uint64_t)ci.hz);
    CHECKF(fabs(one_s - 1e9) < 1e3, "ticks_to_ns(hz) = %.1f ns", one_s);
}

static void check_now(void)
{
    uint64_t t = 0;
    int cpu = -7;
    CHECK(perfvar_clock_now(NULL, NULL) == PERFVAR_ERR_INVALID_ARG);
    CHECK(perfvar_clock_now(NULL, &cpu) == PERFVAR_ERR_INVALID_ARG);
    CHECK(perfvar_clock_now(&t, NULL) == PERFVAR_OK);
    CHECK(t != 0);
    CHECK(perfvar_clock_now(&t, &cpu) == PERFVAR_OK);
#if defined(__x86_64__)
    CHECK(cpu >= 0);
#else
    CHECK(cpu == -1);
#endif
}

static void check_cpu_numbers(void)
{
#if defined(__x86_64__)
    int here = sched_getcpu();
    CHECK(here >= 0);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(here, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("sched_setaffinity");
        CHECK(!"could not pin the thread");
        return;
    }
    int same = 0, last_cpu = -1;
    for (int i = 0; i < 1000; i++) {
        int cpu = -1;
        perfvar_clock_read_cpu(&cpu);
        int os = sched_getcpu();
        same += cpu == os;
        last_cpu = cpu;
    }
    printf("pinned to cpu %d: %d of 1000 reads name it\n", here, same);
    CHECKF(same >= 990, "only %d of 1000 reads named the cpu sched_getcpu() reports", same);
    CHECK(last_cpu == here);
    uint64_t t;
    int cpu = -1;
    CHECK(perfvar_clock_now(&t, &cpu) == PERFVAR_OK);
    CHECK(cpu == here);
#endif
}

static void check_monotonic(void)
{
    int decreases = 0;
    uint64_t prev = perfvar_clock_read();
    for (int i = 0; i < 100000; i++) {
        uint64_t cur = perfvar_clock_read();
        decreases += cur < prev;
        prev = cur;
    }
    CHECKF(decreases == 0, "%d decreasing reads of perfvar_clock_read", decreases);
    decreases = 0;
    uint64_t t;
    perfvar_clock_now(&prev, NULL);
    for (int i = 0; i < 100000; i++) {
        perfvar_clock_now(&t, NULL);
        decreases += t < prev;
        prev = t;
    }
    CHECKF(decreases == 0, "%d decreasing reads of perfvar_clock_now", decreases);
}

/* ~50 ms of busy waiting timed by both clocks; the conversion must agree within 1%. The interval is
 * bracketed by narrow (ticks, ns) pairs, so a preemption can only lengthen both clocks' interval. */
static void check_conversion(void)
{
    double best = INFINITY;
    for (int attempt = 0; attempt < 3 && best >= 0.01; attempt++) {
        uint64_t t0, n0, w0, t1, n1, w1;
        paired(&t0, &n0, &w0);
        do {
            paired(&t1, &n1, &w1);
        } while (n1 - n0 < 50000000u);
        double ns_by_ticks = perfvar_ticks_to_ns(t1 - t0);
        double ns_by_raw = (double)(n1 - n0);
        double rel = fabs(ns_by_ticks / ns_by_raw - 1.0);
        printf("50 ms interval: %.0f ns by ticks, %.0f ns by CLOCK_MONOTONIC_RAW, rel. diff %.2e "
               "(brackets %.0f / %.0f ns)\n",
               ns_by_ticks, ns_by_raw, rel, perfvar_ticks_to_ns(w0), perfvar_ticks_to_ns(w1));
        if (rel < best) best = rel;
    }
    CHECKF(best < 0.01, "ticks_to_ns disagrees with CLOCK_MONOTONIC_RAW by %.3f%%", best * 100);
}

int main(void)
{
    check_info();
    check_now();
    check_cpu_numbers(); /* pins the thread: the checks below then cannot migrate */
    check_monotonic();
    check_conversion();
    return check_result();
}
