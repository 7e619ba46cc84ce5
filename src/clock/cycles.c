/* cycles.c — the CPU-cycle counter's per-thread set-up; see cycles.h and perfvar_clock.h. */
#define _GNU_SOURCE
#include "cycles.h"
#include "clock.h"
#include "perfvar.h"
#include "perfvar_clock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/perf_event.h>
#endif

#if defined(__x86_64__)
#include <stddef.h>
/* perfvar_clock.h mirrors the head of the kernel's page: the offsets must be the kernel's. */
_Static_assert(offsetof(perfvar_cycles_page, lock) == offsetof(struct perf_event_mmap_page, lock), "lock");
_Static_assert(offsetof(perfvar_cycles_page, index) == offsetof(struct perf_event_mmap_page, index), "index");
_Static_assert(offsetof(perfvar_cycles_page, offset) == offsetof(struct perf_event_mmap_page, offset), "offset");
_Static_assert(offsetof(perfvar_cycles_page, capabilities) == offsetof(struct perf_event_mmap_page, capabilities),
               "capabilities");
_Static_assert(offsetof(perfvar_cycles_page, pmc_width) == offsetof(struct perf_event_mmap_page, pmc_width),
               "pmc_width");
#endif

#if defined(__linux__)
int pv_perf_open(uint32_t type, uint64_t config, int pinned)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = type;
    a.config = config;
    a.pinned = pinned ? 1 : 0;
    a.exclude_kernel = 1; /* user mode only: what a user-level read can be allowed to see */
    a.exclude_hv = 1;
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}
#else
int pv_perf_open(uint32_t type, uint64_t config, int pinned)
{
    (void)type, (void)config, (void)pinned;
    errno = ENOSYS;
    return -1;
}
#endif

void pv_cycles_event_close(pv_cycles_event *ev)
{
    if (ev->page) munmap(ev->page, (size_t)sysconf(_SC_PAGESIZE));
    if (ev->fd >= 0) close(ev->fd);
    ev->page = NULL;
    ev->fd = -1;
}

int pv_cycles_event_open(pv_cycles_event *ev, char *why, size_t why_len)
{
    ev->fd = -1;
    ev->page = NULL;
#if defined(__x86_64__)
    ev->fd = pv_perf_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 1);
    if (ev->fd < 0) {
        int e = errno;
        snprintf(why, why_len, "no hardware cycles event (perf_event_open: %s%s)", strerror(e),
                 e == ENOENT ? ": no PMU, e.g. a VM without PMU passthrough"
                 : e == EACCES || e == EPERM ? ": see /proc/sys/kernel/perf_event_paranoid"
                                             : "");
        return -1;
    }
    void *p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, ev->fd, 0);
    if (p == MAP_FAILED) {
        snprintf(why, why_len, "perf mmap: %s", strerror(errno));
        pv_cycles_event_close(ev);
        return -1;
    }
    ev->page = p;
    const struct perf_event_mmap_page *pc = p;
    if (!pc->cap_user_rdpmc || !pc->index) {
        snprintf(why, why_len, "user rdpmc not allowed (cap_user_rdpmc = %d, index = %u; see "
                 "/sys/devices/cpu/rdpmc)", (int)pc->cap_user_rdpmc, pc->index);
        return -1;
    }
    return 0;
#else
    snprintf(why, why_len, "no perf_event rdpmc path on this architecture");
    return -1;
#endif
}

/* ---- perfvar_cycles_open: one event per thread that asks ---- */
static _Thread_local pv_cycles_event tl_event = {-1, NULL};
static _Thread_local int tl_open;

int pv_cycles_thread_open(void) { return tl_open; }

int perfvar_cycles_open(const perfvar_cycles_page **page, char *why, int why_len)
{
    char local[160];
    if (page) *page = NULL;
    if (why && why_len > 0) why[0] = 0;
    pv_clock_init(); /* runs the probe once: it decides whether any thread can read the counter */
    const pv_clock_caps *caps = pv_clock_caps_get();
    if (!caps->cycles) {
        if (why && why_len > 0) snprintf(why, (size_t)why_len, "%s", caps->cycles_why);
        return PERFVAR_ERR_UNAVAILABLE;
    }
#if defined(__x86_64__)
    if (!tl_open) {
        if (pv_cycles_event_open(&tl_event, local, sizeof local) != 0) {
            pv_cycles_event_close(&tl_event);
            if (why && why_len > 0) snprintf(why, (size_t)why_len, "this thread: %s", local);
            return PERFVAR_ERR_UNAVAILABLE;
        }
        tl_open = 1;
    }
    if (page) *page = (const perfvar_cycles_page *)tl_event.page;
#else
    (void)local;
#endif
    return PERFVAR_OK;
}

void perfvar_cycles_close(void)
{
    if (!tl_open) return;
    pv_cycles_event_close(&tl_event);
    tl_open = 0;
}
