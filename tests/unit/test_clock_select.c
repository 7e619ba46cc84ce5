/* test_clock_select.c — PERFVAR_CLOCK (run by ctest with different values; argv[1] says which):
 *   fallback     PERFVAR_CLOCK=clock_monotonic_raw: that clock, 1 GHz exact, CPU numbers, monotonic
 *   unavailable  PERFVAR_CLOCK names the other architecture's clock: the native one, with a note
 *   unknown      PERFVAR_CLOCK=bogus: the native one, with a note naming the accepted values */
#include "check.h"
#include "clock/clock.h"

#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    perfvar_clock_info info;
    CHECK(perfvar_clock_info_get(&info) == PERFVAR_OK);
    printf("clock %s, %.0f Hz (%s), note '%s'\n", info.name, info.hz, info.hz_method, info.note);
    if (!strcmp(mode, "fallback")) {
        CHECK(!strcmp(info.name, "clock_monotonic_raw"));
        CHECK(info.hz == 1e9 && info.note[0] == 0);
        uint64_t prev = 0, t;
        int cpu = -2;
        for (int i = 0; i < 10000; i++) {
            CHECK(perfvar_clock_now(&t, &cpu) == PERFVAR_OK);
            CHECK(t >= prev);
            prev = t;
        }
        CHECK(cpu >= 0);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
        double now = (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
        CHECK(perfvar_ticks_to_ns(prev) <= now && now - perfvar_ticks_to_ns(prev) < 1e9);
    } else if (!strcmp(mode, "unavailable")) {
        CHECK(!strcmp(info.name, PERFVAR_CLOCK_NATIVE_NAME));
        CHECK(strstr(info.note, "is not available here") != NULL);
    } else if (!strcmp(mode, "unknown")) {
        CHECK(!strcmp(info.name, PERFVAR_CLOCK_NATIVE_NAME));
        CHECK(strstr(info.note, "auto, tsc, cntvct, clock_monotonic_raw") != NULL);
    } else {
        CHECKF(0, "unknown mode '%s'", mode);
    }
    return check_result();
}
