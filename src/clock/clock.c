/* clock.c — clock frequency determination; see clock.h. */
#define _GNU_SOURCE
#include "clock.h"
#include "perfvar_clock.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int pv_clock_monotonic;
static perfvar_clock_info g_info;
static pv_clock_caps g_caps;
static double g_measured_hz;
static double g_ticks_per_ns;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;


#if defined(__x86_64__)
/* One (ticks, ns) pair: the ns read is bracketed by two tick reads; the narrowest bracket out of a
 * few tries wins, and its half-width (ticks) bounds the pairing error. */
static void paired_read(uint64_t *ticks, uint64_t *ns, uint64_t *half_width)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 16; i++) {
        uint64_t a = perfvar_clock_read();
        uint64_t n = pv_clock_monotonic_read(NULL);
        uint64_t b = perfvar_clock_read();
        if (b - a < best) {
            best = b - a;
            *ticks = a + (b - a) / 2;
            *ns = n;
        }
    }
    *half_width = best / 2 + 1;
}

/* Measure the TSC rate over ~20 ms of CLOCK_MONOTONIC_RAW. The relative error is the sum of both
 * pairing errors over the interval. Spinning (not sleeping) keeps the core awake and the VM scheduled. */
static void measure_tsc_hz(void)
{
    uint64_t t0, n0, w0, t1, n1, w1;
    paired_read(&t0, &n0, &w0);
    do {
        paired_read(&t1, &n1, &w1);
    } while (n1 - n0 < 20000000u);
    g_measured_hz = (double)(t1 - t0) * 1e9 / (double)(n1 - n0);
    double stated[3] = {g_caps.cpuid_tsc_hz, g_caps.hypervisor_tsc_hz, g_caps.kernel_tsc_hz};
    static const char *const source[3] = {"CPUID 0x15", "hypervisor CPUID 0x40000010",
                                          "kernel perf_event time_mult/time_shift"};
    for (int i = 0; i < 3; i++) {
        if (stated[i] <= 0) continue;
        g_info.hz = stated[i];
        g_info.hz_rel_error = 0; /* as stated; pv_clock_measured_hz() cross-checks it */
        snprintf(g_info.hz_method, sizeof g_info.hz_method, "%s", source[i]);
        return;
    }
    g_info.hz = g_measured_hz;
    g_info.hz_rel_error = (double)(w0 + w1) / (double)(t1 - t0);
    snprintf(g_info.hz_method, sizeof g_info.hz_method, "measured vs CLOCK_MONOTONIC_RAW");
}
#endif

uint64_t pv_clock_monotonic_read(int *cpu)
{
    if (cpu) *cpu = sched_getcpu();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whether the native clock can serve: x86-64 needs rdtscp. */
static const char *native_unavailable(void)
{
#if defined(__x86_64__)
    return g_caps.rdtscp ? NULL : "this CPU has no rdtscp";
#elif defined(__aarch64__)
    return NULL;
#else
    return "no serialized clock on this architecture";
#endif
}

/* PERFVAR_CLOCK: 1 to use CLOCK_MONOTONIC_RAW; fills g_info.note when the request is not met. */
static int choose_monotonic(void)
{
    const char *want = getenv("PERFVAR_CLOCK");
    const char *native_missing = native_unavailable();
    if (!want || !*want || !strcmp(want, "auto")) return native_missing != NULL;
    if (!strcmp(want, "clock_monotonic_raw")) return 1;
    if (!strcmp(want, PERFVAR_CLOCK_NATIVE_NAME) && !native_missing) return 0;
    const char *why = native_missing ? native_missing
                      : (!strcmp(want, "tsc") || !strcmp(want, "cntvct"))
                          ? "not this architecture's clock"
                          : "not a clock perfvar knows (auto, tsc, cntvct, clock_monotonic_raw)";
    int fallback = native_missing != NULL;
    snprintf(g_info.note, sizeof g_info.note, "PERFVAR_CLOCK=%.32s is not available here (%s); using %s",
             want, why, fallback ? "clock_monotonic_raw" : PERFVAR_CLOCK_NATIVE_NAME);
    return fallback;
}

static void clock_init_once(void)
{
    memset(&g_info, 0, sizeof g_info);
    pv_clock_probe(&g_caps);
    if (choose_monotonic()) {
        pv_clock_monotonic = 1;
        snprintf(g_info.name, sizeof g_info.name, "clock_monotonic_raw");
        snprintf(g_info.hz_method, sizeof g_info.hz_method, "clock_gettime ns");
        g_info.hz = 1e9;
        g_info.has_cpu_id = 1; /* sched_getcpu */
        g_ticks_per_ns = 1.0;
        return;
    }
    snprintf(g_info.name, sizeof g_info.name, "%s", PERFVAR_CLOCK_NATIVE_NAME);
#if defined(__x86_64__)
    measure_tsc_hz();
    g_info.serialized = 1;
    g_info.has_cpu_id = g_caps.rdtscp;
#elif defined(__aarch64__)
    g_info.hz = (double)perfvar_clock_native_hz();
    g_info.hz_rel_error = 0.0;
    snprintf(g_info.hz_method, sizeof g_info.hz_method, "cntfrq_el0");
    g_info.serialized = 1;
#else
    g_info.hz = 1e9;
    snprintf(g_info.hz_method, sizeof g_info.hz_method, "clock_gettime ns");
#endif
    g_ticks_per_ns = g_info.hz / 1e9;
}

const pv_clock_caps *pv_clock_caps_get(void) { return &g_caps; }

double pv_clock_measured_hz(void) { return g_measured_hz; }

const perfvar_clock_info *pv_clock_init(void)
{
    pthread_once(&g_once, clock_init_once);
    return &g_info;
}

double pv_clock_ticks_per_ns(void)
{
    pthread_once(&g_once, clock_init_once); /* an atomic load once initialised */
    return g_ticks_per_ns;
}

int perfvar_clock_info_get(perfvar_clock_info *out)
{
    if (!out) return PERFVAR_ERR_INVALID_ARG;
    *out = *pv_clock_init();
    return PERFVAR_OK;
}

int perfvar_clock_now(uint64_t *ticks, int *cpu)
{
    if (!ticks) return PERFVAR_ERR_INVALID_ARG;
    pv_clock_init();
    *ticks = pv_now_cpu(cpu);
    return PERFVAR_OK;
}

double perfvar_ticks_to_ns(uint64_t ticks)
{
    return (double)ticks / pv_clock_ticks_per_ns();
}
