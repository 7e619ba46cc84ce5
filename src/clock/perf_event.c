/* perf_event.c — the CPU-cycle perf event of the calling thread and its mmap page; see
 * perf_event.h. */
#define _GNU_SOURCE
#include "perf_event.h"
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
