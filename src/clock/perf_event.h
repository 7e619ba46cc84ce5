/*
 * perf_event.h — the CPU-cycle perf event a thread reads at user level, opened and mapped
 * (internal; below the probe and the clock, calls neither).
 *
 * The read itself is inline in include/perfvar_clock.h (perfvar_cycles_read). On x86-64 it needs a
 * perf_event PERF_COUNT_HW_CPU_CYCLES on the calling thread, pinned (so it never leaves its counter
 * while the thread runs) and counting user mode only, whose mmap page the kernel allows rdpmc on.
 * The probe (probe.c) opens one once to decide whether the counter is readable; cycles.c opens one
 * per thread that asks.
 */
#ifndef PV_CLOCK_PERF_EVENT_H
#define PV_CLOCK_PERF_EVENT_H
#include <stddef.h>
#include <stdint.h>
typedef struct pv_cycles_event {
    int fd;       /* -1 when not open */
    void *page;   /* the event's mmap page (struct perf_event_mmap_page), NULL when not mapped */
} pv_cycles_event;

/* perf_event_open(type, config) on the calling thread, any CPU, user mode only; pinned if asked.
 * Returns the fd or -1 (errno set). Thread-safe. x86-64 and Armv8 Linux. */
int pv_perf_open(uint32_t type, uint64_t config, int pinned);

/* Open the calling thread's cycles event and map its page. Returns 0 when the kernel allows user
 * rdpmc on it (cap_user_rdpmc and a counter index), else -1 with the reason in why. ev->page is
 * set whenever the page was mapped, even if rdpmc is not allowed (its time fields are still
 * useful); release with pv_cycles_event_close. Thread-safe; x86-64 only (elsewhere: -1). */
int pv_cycles_event_open(pv_cycles_event *ev, char *why, size_t why_len);
void pv_cycles_event_close(pv_cycles_event *ev);

#endif
