/*
 * cycles.h — the CPU-cycle counter of each thread that asks (internal side of
 * perfvar_cycles_open / perfvar_cycles_close in perfvar_clock.h).
 *
 * perfvar_cycles_open first initialises the clock, whose probe decides once whether any thread
 * can read the counter, then opens the calling thread's event (perf_event.h).
 */
#ifndef PV_CLOCK_CYCLES_H
#define PV_CLOCK_CYCLES_H
/* Whether perfvar_cycles_open has opened the calling thread's counter (and it is not closed). */
int pv_cycles_thread_open(void);

#endif
