/* test_clock_probe.c — the capability probe runs without crashing where counters are missing or
 * trapped, gives a reason for every "no", and any frequency the machine states agrees with the one
 * measured against CLOCK_MONOTONIC_RAW (within 0.1 %, measured side by side). */
#include "check.h"
#include "clock/clock.h"
#include "clock/probe.h"

#include <math.h>
#include <string.h>

int main(void)
{
    pv_clock_caps c;
    pv_clock_probe(&c);
    pv_clock_probe(&c); /* twice: the signal guard restores the previous handlers */
    printf("rdtscp %d, invariant TSC %d, CPUID 0x15 %.0f Hz, hypervisor '%s' %.0f Hz, kernel %.3f Hz "
           "(%s), cycles %d (%s)\n",
           c.rdtscp, c.invariant_tsc, c.cpuid_tsc_hz, c.hypervisor, c.hypervisor_tsc_hz,
           c.kernel_tsc_hz, c.kernel_tsc_why, c.cycles, c.cycles_why);
    CHECK(c.cycles || strlen(c.cycles_why) > 0);
#if defined(__x86_64__)
    CHECK(c.rdtscp); /* perfvar's wall clock needs it; every x86-64 CPU of the last 15 years has it */
    CHECK(c.kernel_tsc_hz > 0 || strlen(c.kernel_tsc_why) > 0);
    const perfvar_clock_info *info = pv_clock_init();
    double measured = pv_clock_measured_hz();
    CHECK(measured > 1e7);
    double stated[3] = {c.cpuid_tsc_hz, c.hypervisor_tsc_hz, c.kernel_tsc_hz};
    for (int i = 0; i < 3; i++)
        if (stated[i] > 0) CHECKF(fabs(stated[i] / measured - 1) < 1e-3, "stated %.0f Hz vs measured %.0f Hz", stated[i], measured);
    CHECKF(strlen(info->hz_method) > 0, "no method for %.0f Hz", info->hz);
#elif defined(__aarch64__)
    CHECK(strlen(c.kernel_tsc_why) > 0);
#endif
    return check_result();
}
