/* clock.c — clock frequency determination; see clock.h. */
#define _GNU_SOURCE
#include "clock.h"
#include "perfvar_clock.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int pv_clock_monotonic;
static perfvar_clock_info g_info;
static pv_clock_caps g_caps;
static double g_measured_hz, g_measured_rel_error;
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
    g_measured_rel_error = (double)(w0 + w1) / (double)(t1 - t0);
}
#endif

void pv_clock_pick_hz(const pv_clock_caps *caps, double measured_hz, double measured_rel_error,
                      perfvar_clock_info *info)
{
    double stated[3] = {caps->cpuid_tsc_hz, caps->hypervisor_tsc_hz, caps->kernel_tsc_hz};
    static const char *const source[3] = {"CPUID 0x15", "hypervisor CPUID 0x40000010",
                                          "kernel perf_event time_mult/time_shift"};
    for (int i = 0; i < 3; i++) {
        if (stated[i] <= 0) continue;
        info->hz = stated[i];
        info->hz_rel_error = 0; /* as stated; rank-N.json compares it with the measured rate */
        snprintf(info->hz_method, sizeof info->hz_method, "%s", source[i]);
        return;
    }
    /* The nominal base frequency is close to the TSC's on CPUs whose TSC runs at it, but not
     * exact: its error is its distance from the measured rate, plus the measurement's. A nominal
     * value further off than PV_CLOCK_NOMINAL_AGREEMENT is not this TSC's rate. */
    double nominal = caps->cpuid_base_mhz * 1e6;
    if (nominal > 0 && measured_hz > 0) {
        double off = fabs(nominal / measured_hz - 1);
        if (off <= PV_CLOCK_NOMINAL_AGREEMENT) {
            info->hz = nominal;
            info->hz_rel_error = off + measured_rel_error;
            snprintf(info->hz_method, sizeof info->hz_method, "CPUID 0x16 base frequency (nominal)");
            return;
        }
    }
    info->hz = measured_hz;
    info->hz_rel_error = measured_rel_error;
    snprintf(info->hz_method, sizeof info->hz_method, "measured vs CLOCK_MONOTONIC_RAW");
}

uint64_t pv_clock_monotonic_read(int *cpu)
{
    if (cpu) *cpu = sched_getcpu();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Why the native clock cannot serve (NULL: it can). *forceable: PERFVAR_CLOCK naming it may
 * still have it (a TSC without a constant rate still counts; a missing instruction does not). */
static const char *native_unavailable(const pv_clock_caps *caps, int *forceable)
{
    *forceable = 0;
#if defined(__x86_64__)
    if (!caps->rdtscp) return "this CPU has no rdtscp";
    if (!caps->invariant_tsc && !caps->tsc_stable_by[0]) {
        *forceable = 1;
        return "no invariant TSC, nor a hypervisor stating it stable";
    }
    return NULL;
#elif defined(__aarch64__)
    (void)caps;
    return NULL;
#else
    (void)caps;
    return "no serialized clock on this architecture";
#endif
}

/* PERFVAR_CLOCK=want names no clock usable here: the note says why and what is used instead;
 * 1 when that is clock_monotonic_raw (the native clock is missing too). */
static int choose_instead(const char *want, const char *native_missing, char *note, int note_len)
{
    int known = !strcmp(want, "tsc") || !strcmp(want, "cntvct");
    const char *why = !known ? "not a clock perfvar knows (auto, tsc, cntvct, clock_monotonic_raw)"
                      : !strcmp(want, PERFVAR_CLOCK_NATIVE_NAME) ? native_missing
                                                                  : "not this architecture's clock";
    int fallback = native_missing != NULL;
    snprintf(note, (size_t)note_len, "PERFVAR_CLOCK=%.32s is not available here (%s); using %s%s%s", want,
             why, fallback ? "clock_monotonic_raw" : PERFVAR_CLOCK_NATIVE_NAME,
             fallback && why != native_missing ? ": " : "", fallback && why != native_missing ? native_missing : "");
    return fallback;
}

int pv_clock_choose(const pv_clock_caps *caps, const char *want, char *note, int note_len)
{
    int forceable;
    const char *native_missing = native_unavailable(caps, &forceable);
    note[0] = 0;
    if (want && !strcmp(want, "clock_monotonic_raw")) return 1;
    if (want && !strcmp(want, PERFVAR_CLOCK_NATIVE_NAME) && (!native_missing || forceable)) {
        if (native_missing)
            snprintf(note, (size_t)note_len, "PERFVAR_CLOCK=%s used although %s", want, native_missing);
        return 0;
    }
    if (want && *want && strcmp(want, "auto")) return choose_instead(want, native_missing, note, note_len);
    if (native_missing && strcmp(PERFVAR_CLOCK_NATIVE_NAME, "clock_monotonic_raw"))
        snprintf(note, (size_t)note_len, "%s not used: %s; using clock_monotonic_raw%s",
                 PERFVAR_CLOCK_NATIVE_NAME, native_missing,
                 forceable ? " (PERFVAR_CLOCK=" PERFVAR_CLOCK_NATIVE_NAME " forces it)" : "");
    return native_missing != NULL;
}

static void clock_init_once(void)
{
    memset(&g_info, 0, sizeof g_info);
    pv_clock_probe(&g_caps);
    if (pv_clock_choose(&g_caps, getenv("PERFVAR_CLOCK"), g_info.note, (int)sizeof g_info.note)) {
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
    pv_clock_pick_hz(&g_caps, g_measured_hz, g_measured_rel_error, &g_info);
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

double pv_clock_measured_rel_error(void) { return g_measured_rel_error; }

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
