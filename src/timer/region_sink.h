/*
 * region_sink.h — how the MPI layer sees user timer regions (internal).
 *
 * The timer core knows nothing about traces. A layer that records a trace installs a sink; each
 * successful perfvar_start/perfvar_stop then calls it on the calling thread with the clock reading
 * (ticks) and CPU of that start/stop, and the return address into its caller (the call site).
 * Installing is not thread-safe: do it before threads use timers.
 */
#ifndef PV_REGION_SINK_H
#define PV_REGION_SINK_H
#include <stdint.h>

typedef struct pv_region_sink {
    void (*enter)(int handle, uint64_t ticks, int cpu, void *site);
    void (*leave)(int handle, uint64_t ticks, int cpu, void *site);
} pv_region_sink;

/* Install (or with NULL remove) the sink. */
void pv_regions_set_sink(const pv_region_sink *sink);

/* Name registered for `handle`, or NULL if unknown. Thread-safe. */
const char *pv_region_name(int handle);

#endif
