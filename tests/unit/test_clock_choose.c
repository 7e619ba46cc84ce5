/* test_clock_choose.c — the clock decision from made-up capabilities (pv_clock_choose) and the TSC
 * frequency source (pv_clock_pick_hz): a TSC nobody states constant is not used unless
 * PERFVAR_CLOCK=tsc forces it, and the note says so; CPUID 0x16's nominal frequency serves when
 * nothing states the rate, with its distance from the measured rate as its error. */
#include "check.h"
#include "clock/clock.h"

#include <math.h>
#include <string.h>

static char note[160];

static int choose(const pv_clock_caps *c, const char *want)
{
    memset(note, 'x', sizeof note - 1);
    note[sizeof note - 1] = 0;
    int mono = pv_clock_choose(c, want, note, (int)sizeof note);
    printf("want %-20s -> %s, note '%s'\n", want ? want : "(unset)", mono ? "clock_monotonic_raw" : "native", note);
    return mono;
}

static void check_choose(void)
{
    pv_clock_caps c;
    memset(&c, 0, sizeof c);
    c.rdtscp = 1;
#if defined(__x86_64__)
    c.invariant_tsc = 1;
    strcpy(c.tsc_stable_by, "CPUID invariant TSC");
    CHECK(choose(&c, NULL) == 0 && note[0] == 0);
    CHECK(choose(&c, "auto") == 0 && note[0] == 0);
    CHECK(choose(&c, "tsc") == 0 && note[0] == 0);

    /* No invariant TSC, nobody states it stable: the fallback, said, unless forced. */
    c.invariant_tsc = 0;
    c.tsc_stable_by[0] = 0;
    CHECK(choose(&c, NULL) == 1);
    CHECK(strstr(note, "no invariant TSC") && strstr(note, "using clock_monotonic_raw"));
    CHECK(strstr(note, "PERFVAR_CLOCK=tsc forces it") != NULL);
    CHECK(choose(&c, "auto") == 1 && strstr(note, "no invariant TSC"));
    CHECK(choose(&c, "tsc") == 0);
    CHECK(strstr(note, "PERFVAR_CLOCK=tsc used although no invariant TSC") != NULL);
    CHECK(choose(&c, "clock_monotonic_raw") == 1 && note[0] == 0);
    CHECK(choose(&c, "cntvct") == 1);
    CHECK(strstr(note, "not this architecture's clock") && strstr(note, "no invariant TSC"));
    CHECK(choose(&c, "bogus") == 1 && strstr(note, "auto, tsc, cntvct, clock_monotonic_raw"));

    /* A hypervisor's statement stands in for the CPUID flag. */
    strcpy(c.tsc_stable_by, "KVM stable-clock bit (CPUID 0x40000001)");
    CHECK(choose(&c, NULL) == 0 && note[0] == 0);

    /* No rdtscp: nothing forces the TSC. */
    c.rdtscp = 0;
    CHECK(choose(&c, NULL) == 1 && strstr(note, "no rdtscp"));
    CHECK(choose(&c, "tsc") == 1 && strstr(note, "is not available here (this CPU has no rdtscp)"));
#elif defined(__aarch64__)
    CHECK(choose(&c, NULL) == 0 && note[0] == 0);
    CHECK(choose(&c, "cntvct") == 0 && note[0] == 0);
    CHECK(choose(&c, "tsc") == 0 && strstr(note, "not this architecture's clock"));
    CHECK(choose(&c, "clock_monotonic_raw") == 1 && note[0] == 0);
#endif
}

static void check_pick_hz(void)
{
    pv_clock_caps c;
    perfvar_clock_info info;
    const double measured = 2.4452e9, err = 2e-6;

    memset(&c, 0, sizeof c);
    c.kernel_tsc_hz = 2.445e9;
    c.cpuid_base_mhz = 2400;
    pv_clock_pick_hz(&c, measured, err, &info);
    CHECK(info.hz == 2.445e9 && info.hz_rel_error == 0 && strstr(info.hz_method, "kernel"));
    c.cpuid_tsc_hz = 2.4e9; /* CPUID 0x15 first */
    pv_clock_pick_hz(&c, measured, err, &info);
    CHECK(info.hz == 2.4e9 && !strcmp(info.hz_method, "CPUID 0x15"));

    /* Only the nominal base frequency: used, its error its distance from the measured rate. */
    memset(&c, 0, sizeof c);
    c.cpuid_base_mhz = 2445;
    pv_clock_pick_hz(&c, measured, err, &info);
    CHECK(info.hz == 2.445e9 && strstr(info.hz_method, "CPUID 0x16"));
    CHECKF(fabs(info.hz_rel_error - (fabs(2.445e9 / measured - 1) + err)) < 1e-12, "error %g", info.hz_rel_error);
    /* ... unless it is not this TSC's rate. */
    c.cpuid_base_mhz = 3000;
    pv_clock_pick_hz(&c, measured, err, &info);
    CHECK(info.hz == measured && info.hz_rel_error == err && strstr(info.hz_method, "measured"));

    memset(&c, 0, sizeof c);
    pv_clock_pick_hz(&c, measured, err, &info);
    CHECK(info.hz == measured && info.hz_rel_error == err && strstr(info.hz_method, "measured"));
}

int main(void)
{
    check_choose();
    check_pick_hz();
    return check_result();
}
