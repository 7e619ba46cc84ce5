/* cycles.c — the CPU-cycle counter's per-thread set-up for user-level reads; see cycles.h and
 * perfvar_clock.h. */
#define _GNU_SOURCE
#include "cycles.h"
#include "clock.h"
#include "perf_event.h"
#include "perfvar.h"
#include "perfvar_clock.h"

#include <stdio.h>

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
