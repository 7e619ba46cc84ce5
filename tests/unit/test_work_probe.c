/* test_work_probe.c — the fixed-work probe's schedule (src/calib/work_probe.h): the period in ticks,
 * the deadline and its saturation, "off" never due, K from the calibration or the default, and a
 * thread's calls driven through the same steps as pv_call_enter to check which of them probe.
 * No duration is asserted: the one probe run only checks its reads are ordered. */
#include "check.h"
#include "calib/work_probe.h"
#include "perfvar.h"

#include <string.h>

static void check_period_ticks(void)
{
    CHECK(pv_work_probe_period_ticks(0, 2.4) == 0); /* off */
    CHECK(pv_work_probe_period_ticks(10, 2.4) == 24000000u);
    CHECK(pv_work_probe_period_ticks(1, 1.0) == 1000000u); /* CLOCK_MONOTONIC_RAW: ns */
    CHECK(pv_work_probe_period_ticks(60000, 3.0) == 180000000000u);
    CHECK(pv_work_probe_period_ticks(3, 2.4454058) == 7336217u); /* rounded to the nearest tick */
    CHECK(pv_work_probe_period_ticks(1, 1e-12) == 1);              /* never 0 when on */
    CHECK(pv_work_probe_period_ticks(PV_WORK_PROBE_DEFAULT_MS, 2.0) == 20000000u);
}

static void check_deadline(void)
{
    const uint64_t never = PV_WORK_PROBE_NEVER;
    CHECK(pv_work_probe_deadline(12345, 0) == never); /* off */
    CHECK(pv_work_probe_deadline(100, 50) == 150);
    CHECK(pv_work_probe_deadline(0, 1) == 1);
    CHECK(pv_work_probe_deadline(never - 10, 50) == never); /* saturates, never wraps to the past */
    CHECK(pv_work_probe_deadline(never - 50, 50) == never);
    CHECK(pv_work_probe_deadline(never - 51, 50) == never - 1);
    CHECK(pv_work_probe_deadline(1, never) == never);

    CHECK(!pv_work_probe_due(149, 150));
    CHECK(pv_work_probe_due(150, 150)); /* at the deadline: due */
    CHECK(pv_work_probe_due(151, 150));
    CHECK(!pv_work_probe_due(never - 1, never)); /* off: not due at any real clock reading */
    CHECK(!pv_work_probe_due(0, never));
}

/* A thread traced from tick `start` makes calls at ticks calls[0..n-1]; a probe that is due starts
 * `lag` ticks after the entry read (the segment's events are written first). Marks probed[i],
 * stores the probes' starts in begins[] and returns how many ran. The same steps as
 * src/pmpi/runtime.c. */
static int simulate(uint64_t start, uint64_t period, const uint64_t *calls, int n, uint64_t lag,
                    int *probed, uint64_t *begins)
{
    uint64_t deadline = pv_work_probe_deadline(start, period); /* threads.c: thread_new */
    int count = 0;
    for (int i = 0; i < n; i++) {
        probed[i] = pv_work_probe_due(calls[i], deadline);
        if (!probed[i]) continue;
        uint64_t begin = calls[i] + lag;
        begins[count++] = begin;
        deadline = pv_work_probe_deadline(begin, period); /* runtime.c: work_probe */
    }
    return count;
}

static void check_schedule(void)
{
    enum { N = 40 };
    uint64_t calls[N], begins[N];
    int probed[N];
    /* A call every 30 ticks, period 100: first due at 100, so the call at 120 probes (begin 123),
     * then the first call at or after 223 (240), and so on: every 4th call, 120 ticks apart. */
    for (int i = 0; i < N; i++) calls[i] = 30 * (uint64_t)i;
    int count = simulate(0, 100, calls, N, 3, probed, begins);
    CHECKF(count == 9, "%d probes", count);
    for (int i = 0; i < N; i++) CHECKF(probed[i] == (i >= 4 && i % 4 == 0), "call %d probed %d", i, probed[i]);
    for (int i = 1; i < count; i++) CHECK(begins[i] - begins[i - 1] >= 100);

    /* A long compute phase (no call for 10 periods) gives one probe at the next call, not a burst
     * of the ones it missed. */
    uint64_t gap[6] = {50, 99, 101, 1500, 1510, 1620};
    int p6[6];
    uint64_t b6[6];
    count = simulate(0, 100, gap, 6, 0, p6, b6);
    CHECK(count == 3);
    CHECK(!p6[0] && !p6[1] && p6[2] && p6[3] && !p6[4] && p6[5]);

    /* Off: no probe, whatever the times. */
    count = simulate(0, 0, gap, 6, 0, p6, b6);
    CHECK(count == 0);
    uint64_t late[2] = {UINT64_MAX / 2, UINT64_MAX - 2};
    count = simulate(0, 0, late, 2, 0, p6, b6);
    CHECK(count == 0);
    /* A thread that starts being traced late gets its first probe one period after that. */
    uint64_t later[3] = {1000, 1099, 1100};
    count = simulate(1000, 100, later, 3, 0, p6, b6);
    CHECK(count == 1 && !p6[0] && !p6[1] && p6[2]);
}

static void check_run(void)
{
    pv_clock_init();
    pv_work_probe_sample s = {0, 0, -2, -2};
    pv_work_probe_run(PV_WORK_PROBE_ADDS, &s);
    CHECK(s.t_end >= s.t_begin && s.t_begin > 0);
    CHECK(s.cpu_begin >= -1 && s.cpu_end >= -1); /* set: a CPU, or -1 where the clock names none */
#if defined(__x86_64__)
    if (!pv_clock_monotonic) CHECK(s.cpu_begin >= 0 && s.cpu_end >= 0);
#endif
    pv_work_probe_run(0, &s); /* an empty chain is still two ordered reads */
    CHECK(s.t_end >= s.t_begin);
}

int main(void)
{
    check_period_ticks();
    check_deadline();
    check_schedule();
    check_run();
    return check_result();
}
