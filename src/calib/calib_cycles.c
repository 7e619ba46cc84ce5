/* calib_cycles.c — the start-up calibration's pass on the CPU-cycle counter; see calib.h. */
#include "calib.h"
#include "perfvar.h"
#include "perfvar_clock.h"
#include "search.h"
#include "../clock/clock.h"
#include "../clock/cycles.h"

#include <stdio.h>
#include <string.h>

static uint64_t (*substitute)(void);

void pv_calib_set_cycles_substitute(uint64_t (*counter)(void)) { substitute = counter; }

int pv_calib_cycles_possible(pv_calib_result *r)
{
    pv_calib_cycles *c = &r->cycles;
    c->state.status = "off";
    if (substitute) {
        c->available = 1, c->counter = "substitute";
        return 1;
    }
    const pv_clock_caps *caps = pv_clock_caps_get();
    c->available = caps->cycles;
    c->counter = PERFVAR_CYCLES_NAME;
    if (!caps->cycles) snprintf(c->why, sizeof c->why, "%s", caps->cycles_why);
    return c->available;
}

int pv_calib_cycles_run(pv_search *s, pv_calib_result *r, uint64_t deadline)
{
    pv_calib_cycles *c = &r->cycles;
    pv_calib_state *st = &c->state;
    const pv_calib_params *p = s->p;
    int opened_here = 0;
    s->counter = PV_SEARCH_SUBSTITUTE, s->substitute = substitute;
    if (!substitute) {
        /* The application may have opened the counter on this thread already: keep it open then. */
        opened_here = !pv_cycles_thread_open();
        if (perfvar_cycles_open(&s->cycles_page, c->why, (int)sizeof c->why) != PERFVAR_OK) {
            c->available = 0;
            s->counter = PV_SEARCH_WALL;
            return PERFVAR_OK;
        }
        s->counter = PV_SEARCH_CYCLES;
    }
    uint64_t now = pv_now();
    st->label = "0", st->unit = "cycles";
    st->n_samples = st->n_requested = p->n_samples;
    st->budget_ms = now < deadline ? perfvar_ticks_to_ns(deadline - now) / 1e6 : 0;
    s->st = st, s->tag = PV_CALIB_CYCLES_TAG, s->n = p->n_samples, s->flush_bytes = 0;
    s->deadline = deadline;
    pv_search_timer_cost(s, 4 * p->n_samples);
    c->timer_overhead = s->overhead, c->granularity = s->granularity;
    /* Chain lengths do not depend on the clock: the wall clock's flush-0 results are the hints. */
    pv_search_state(s, r->states[0].t_min_adds, r->states[0].t_diff_adds);
    st->elapsed_ms = perfvar_ticks_to_ns(pv_now() - now) / 1e6;
    if (opened_here) perfvar_cycles_close();
    s->counter = PV_SEARCH_WALL, s->substitute = NULL, s->cycles_page = NULL;
    return PERFVAR_OK;
}
