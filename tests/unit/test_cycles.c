/* test_cycles.c — the CPU-cycle counter: where the probe finds it readable, reads through
 * perfvar_cycles_read are monotonic and a chain of dependent ADDs costs about one cycle per ADD
 * (measured side by side, no time asserted); where it is not (a VM without PMU, qemu-user trapping
 * pmccntr_el0), every entry point says so with the probe's reason and nothing crashes. Also the
 * pieces of the x86-64 seqlock read that can be checked without a PMU. */
#define _GNU_SOURCE
#include "check.h"
#include "calib/add_chain.h"
#include "clock/clock.h"
#include "clock/cycles.h"
#include "clock/perf_event.h"
#include "perfvar.h"
#include "perfvar_calib.h"
#include "perfvar_clock.h"

#include <string.h>
#if defined(__x86_64__)
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

static void check_sign_extension(void)
{
#if defined(__x86_64__)
    /* A 48-bit counter that wrapped past 2^47 is negative: the kernel's offset compensates. */
    CHECK(perfvar_cycles_sign_extend(0x7fffffffffffull, 48) == 0x7fffffffffffll);
    CHECK(perfvar_cycles_sign_extend(0xffffffffffffull, 48) == -1);
    CHECK(perfvar_cycles_sign_extend(0x800000000000ull, 48) == -(1ll << 47));
    CHECK(perfvar_cycles_sign_extend(0x123ull, 0) == 0x123); /* no width: as read */
    CHECK(perfvar_cycles_sign_extend(~0ull, 64) == -1);
#endif
}

/* The seqlock loop on a real kernel page whose event has no hardware counter (index 0): it must
 * return the page's offset without executing rdpmc (which would trap here). */
static void check_seqlock_without_counter(void)
{
#if defined(__x86_64__)
    int fd = pv_perf_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, 0);
    if (fd < 0) {
        printf("software perf event not available: seqlock check skipped\n");
        return;
    }
    long psz = sysconf(_SC_PAGESIZE);
    const struct perf_event_mmap_page *p = mmap(NULL, (size_t)psz, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        close(fd);
        printf("perf mmap failed: seqlock check skipped\n");
        return;
    }
    printf("software event page: index %u, cap_user_rdpmc %d, pmc_width %u\n", p->index,
           (int)p->cap_user_rdpmc, (unsigned)p->pmc_width);
    if (p->index == 0 || !p->cap_user_rdpmc) {
        uint64_t v = perfvar_cycles_read((const perfvar_cycles_page *)p);
        CHECK(v == (uint64_t)p->offset);
    }
    munmap((void *)p, (size_t)psz);
    close(fd);
#endif
}

static void check_unavailable(const pv_clock_caps *caps)
{
    char why[256] = "x";
    const perfvar_cycles_page *page = (const perfvar_cycles_page *)&why;
    CHECK(perfvar_cycles_open(&page, why, sizeof why) == PERFVAR_ERR_UNAVAILABLE);
    CHECK(page == NULL);
    printf("cycle counter unavailable: %s\n", why);
    CHECKF(why[0] && strcmp(why, caps->cycles_why) == 0, "reason '%s' vs probe '%s'", why, caps->cycles_why);
    CHECK(perfvar_cycles_open(NULL, NULL, 0) == PERFVAR_ERR_UNAVAILABLE); /* NULLs accepted */
    char twhy[256] = "";
    CHECK(perfvar_timer_available(PERFVAR_TIMER_CYCLES, twhy, sizeof twhy) == PERFVAR_ERR_UNAVAILABLE);
    CHECKF(strcmp(twhy, why) == 0, "timer reason '%s'", twhy);
    double out[4] = {-1, -1, -1, -1};
    CHECK(perfvar_calib_sample(PERFVAR_TIMER_CYCLES, 100, 0, 4, out) == PERFVAR_ERR_UNAVAILABLE);
    CHECK(out[0] == -1 && out[3] == -1); /* untouched */
    perfvar_cycles_close(); /* nothing open: a no-op */
}

static void check_available(void)
{
    char why[256] = "";
    const perfvar_cycles_page *page = NULL;
    CHECKF(perfvar_cycles_open(&page, why, sizeof why) == PERFVAR_OK, "%s", why);
#if defined(__x86_64__)
    CHECK(page != NULL);
#endif
    const perfvar_cycles_page *again = NULL;
    CHECK(perfvar_cycles_open(&again, NULL, 0) == PERFVAR_OK && again == page); /* once per thread */
    int decreases = 0;
    uint64_t prev = perfvar_cycles_read(page);
    for (int i = 0; i < 100000; i++) {
        uint64_t cur = perfvar_cycles_read(page);
        decreases += cur < prev;
        prev = cur;
    }
    CHECKF(decreases == 0, "%d decreasing reads", decreases);
    /* Dependent ADDs retire one per cycle on any out-of-order core: the best of a few 10^6-ADD
     * chains must cost between 0.8 and 2 cycles per ADD (the fences add a few hundred). */
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 20; i++) {
        uint64_t t0 = perfvar_cycles_read(page);
        pv_add_chain(1000000);
        uint64_t d = perfvar_cycles_read(page) - t0;
        if (d < best) best = d;
    }
    printf("10^6 dependent ADDs: %llu cycles (best of 20)\n", (unsigned long long)best);
    CHECKF(best > 800000 && best < 2000000, "%llu cycles", (unsigned long long)best);
    double out[64];
    CHECK(perfvar_calib_sample(PERFVAR_TIMER_CYCLES, 1000, 0, 64, out) == PERFVAR_OK);
    CHECK(out[0] >= 0);
    perfvar_cycles_close();
}

/* papi_read: cycles of a PAPI_TOT_CYC event set where PAPI has a PMU; elsewhere unavailable with
 * PAPI's reason, and sampling refuses. */
static void check_papi_read(void)
{
    CHECK(strcmp(perfvar_timer_name(PERFVAR_TIMER_PAPI_READ), "papi_read") == 0);
    CHECK(strcmp(perfvar_timer_unit(PERFVAR_TIMER_PAPI_READ), "cycles") == 0);
    char why[256];
    double out[64];
    int rc = perfvar_timer_available(PERFVAR_TIMER_PAPI_READ, why, sizeof why);
    printf("papi_read: %s\n", rc == PERFVAR_OK ? "available" : why);
    if (rc == PERFVAR_OK) {
        CHECK(perfvar_calib_sample(PERFVAR_TIMER_PAPI_READ, 1000, 0, 64, out) == PERFVAR_OK);
        CHECK(out[0] > 0);
    } else {
        CHECK(rc == PERFVAR_ERR_UNAVAILABLE && why[0]);
        CHECK(perfvar_calib_sample(PERFVAR_TIMER_PAPI_READ, 1000, 0, 64, out) == PERFVAR_ERR_UNAVAILABLE);
    }
}

int main(void)
{
    check_papi_read();
    check_sign_extension();
    check_seqlock_without_counter();
    CHECK(strcmp(perfvar_timer_name(PERFVAR_TIMER_CYCLES), "cycles") == 0);
    CHECK(strcmp(perfvar_timer_unit(PERFVAR_TIMER_CYCLES), "cycles") == 0);
    CHECK(strcmp(perfvar_timer_unit(PERFVAR_TIMER_BARRIER), "ns") == 0);
    CHECK(perfvar_timer_unit(PERFVAR_TIMER_COUNT) == NULL);
    pv_clock_init();
    const pv_clock_caps *caps = pv_clock_caps_get();
    printf("%s: probe says cycles %d (%s)\n", PERFVAR_CYCLES_NAME, caps->cycles, caps->cycles_why);
    if (caps->cycles)
        check_available();
    else
        check_unavailable(caps);
    return check_result();
}
