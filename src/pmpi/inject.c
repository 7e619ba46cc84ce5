/* inject.c — PERFVAR_INJECT, the validation aid's extra work; see inject.h. */
#define _GNU_SOURCE
#include "inject.h"
#include "lifecycle.h"
#include "sites.h"
#include "threads.h"
#include "../calib/add_chain.h"
#include "../clock/clock.h"
#include "../core/message.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PV_INJECT_SEEN = 1, PV_INJECT_TO = 2, PV_INJECT_FROM = 4 };

/* ADDs per tick of the chain on this core: the fastest of a few runs of ~1M ADDs (the fastest is
 * the one the fewest interruptions disturbed). */
static double measure_adds_per_tick(void)
{
    const uint64_t n = 1u << 20;
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t t0 = pv_now();
        pv_add_chain(n);
        uint64_t dt = pv_now() - t0;
        if (dt && dt < best) best = dt;
    }
    return best == UINT64_MAX ? 1.0 : (double)n / (double)best;
}

void pv_inject_thread_init(pv_thread *t, const pv_runtime *rt, uint64_t now)
{
    const pv_inject_spec *spec = &rt->cfg.inject;
    pv_inject_thread *in = &t->inject;
    memset(in, 0, sizeof *in);
    in->prev_site = -1;
    in->spec = spec;
    in->verbose = rt->cfg.verbose;
    if (!(spec->pct > 0) || spec->rank != rt->rank) return;
    double tpn = pv_clock_ticks_per_ns();
    /* From the trace's origin, not from the thread's creation: the first thread is made after the
     * start-up calibration, and a window in the trace's seconds is the one a user reads there. */
    uint64_t from = rt->start_ticks ? rt->start_ticks : now;
    in->window_begin = from + (uint64_t)llround(spec->after_s * 1e9 * tpn);
    in->window_end = spec->until_s > 0 ? from + (uint64_t)llround(spec->until_s * 1e9 * tpn) : UINT64_MAX;
    in->longer_ticks = (uint64_t)llround(spec->longer_ms * 1e6 * tpn);
    in->adds_per_tick = measure_adds_per_tick();
    in->probe_deadline = t->probe_deadline;
    t->probe_deadline = 0; /* every traced call takes the cold path, which injects */
    in->on = 1;
    /* A validation run says so: its trace is not the program's own behaviour. */
    pv_message(0, "PERFVAR_INJECT: a thread adds %.4g %% of the segments closed by '%s' and opened "
               "by '%s' (empty: any) longer than %.4g ms; %.3g ADDs per ns", spec->pct, spec->to,
               spec->from, spec->longer_ms, in->adds_per_tick * tpn);
}

/* The match bits of site_id, decided on the thread's first sight of it; 0 when out of memory. */
static unsigned site_match(pv_inject_thread *in, int site_id)
{
    if (site_id >= in->nsites) {
        int n = in->nsites ? in->nsites : 64;
        while (n <= site_id) n *= 2;
        unsigned char *m = realloc(in->match, (size_t)n);
        if (!m) return 0;
        memset(m + in->nsites, 0, (size_t)(n - in->nsites));
        in->match = m, in->nsites = n;
    }
    unsigned char *bits = &in->match[site_id];
    if (!*bits) {
        const pv_inject_spec *spec = in->spec;
        char name[8192] = "?";
        pv_site_label(site_id, name, sizeof name);
        *bits = PV_INJECT_SEEN;
        if (!spec->to[0] || strstr(name, spec->to)) *bits |= PV_INJECT_TO;
        if (!spec->from[0] || strstr(name, spec->from)) *bits |= PV_INJECT_FROM;
        if (in->verbose >= 2)
            pv_message(0, "PERFVAR_INJECT: site %d %s:%s%s", site_id, name,
                       *bits & PV_INJECT_TO ? " closes" : "", *bits & PV_INJECT_FROM ? " opens" : "");
    }
    return *bits;
}

uint64_t pv_inject_run(pv_thread *t, int site_id, uint64_t t_entry, int *cpu)
{
    pv_inject_thread *in = &t->inject;
    unsigned to = site_match(in, site_id);
    int prev = in->prev_site;
    in->prev_site = site_id;
    uint64_t start = t->rec ? t->rec->last_exit : 0; /* the previous call's exit: the segment's start */
    if (!(to & PV_INJECT_TO) || prev < 0 || prev >= in->nsites || !(in->match[prev] & PV_INJECT_FROM) ||
        !start || t_entry <= start || t_entry - start <= in->longer_ticks || t_entry < in->window_begin ||
        t_entry >= in->window_end)
        return t_entry;
    double extra = in->spec->pct / 100.0 * (double)(t_entry - start);
    uint64_t adds = (uint64_t)llround(extra * in->adds_per_tick);
    if (!adds) return t_entry;
    pv_add_chain(adds);
    return pv_now_cpu(cpu); /* the call's entry, after the extra work */
}
