/* regions.c — region registry and per-thread start/stop stacks behind perfvar.h. */
#include "perfvar.h"
#include "region_sink.h"
#include "../clock/clock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

typedef struct region {
    char name[PERFVAR_NAME_MAX];
    _Atomic uint64_t count;
    _Atomic uint64_t total_ticks;
    _Atomic uint64_t min_ticks;
    _Atomic uint64_t max_ticks;
} region;

static region g_regions[PERFVAR_MAX_REGIONS];
static _Atomic int g_nregions;
static pthread_mutex_t g_register_lock = PTHREAD_MUTEX_INITIALIZER;
static const pv_region_sink *_Atomic g_sink;

typedef struct frame {
    int handle;
    uint64_t start;
} frame;

static _Thread_local frame t_stack[PERFVAR_MAX_DEPTH];
static _Thread_local int t_depth;

void pv_regions_set_sink(const pv_region_sink *sink) { atomic_store(&g_sink, sink); }

static int valid_handle(int h) { return h >= 0 && h < atomic_load(&g_nregions); }

const char *pv_region_name(int handle)
{
    return valid_handle(handle) ? g_regions[handle].name : NULL;
}

int perfvar_region_register(const char *name, int *handle)
{
    if (!name || !handle || !name[0]) return PERFVAR_ERR_INVALID_ARG;
    if (strlen(name) >= PERFVAR_NAME_MAX) return PERFVAR_ERR_NAME_TOO_LONG;
    pv_clock_init(); /* so the first start does not pay for the frequency measurement */
    pthread_mutex_lock(&g_register_lock);
    int n = atomic_load(&g_nregions);
    for (int i = 0; i < n; i++) {
        if (strcmp(g_regions[i].name, name) == 0) {
            pthread_mutex_unlock(&g_register_lock);
            *handle = i;
            return PERFVAR_OK;
        }
    }
    if (n == PERFVAR_MAX_REGIONS) {
        pthread_mutex_unlock(&g_register_lock);
        return PERFVAR_ERR_TOO_MANY;
    }
    strcpy(g_regions[n].name, name);
    atomic_store(&g_regions[n].min_ticks, UINT64_MAX);
    atomic_store(&g_nregions, n + 1); /* publish after the name is complete */
    pthread_mutex_unlock(&g_register_lock);
    *handle = n;
    return PERFVAR_OK;
}

int perfvar_start(int handle)
{
    if (!valid_handle(handle)) return PERFVAR_ERR_UNKNOWN_HANDLE;
    if (t_depth == PERFVAR_MAX_DEPTH) return PERFVAR_ERR_TOO_MANY;
    int cpu;
    uint64_t now = pv_now_cpu(&cpu);
    t_stack[t_depth].handle = handle;
    t_stack[t_depth].start = now;
    t_depth++;
    const pv_region_sink *sink = atomic_load_explicit(&g_sink, memory_order_acquire);
    if (sink) sink->enter(handle, now, cpu, __builtin_return_address(0));
    return PERFVAR_OK;
}

static void atomic_min(_Atomic uint64_t *v, uint64_t x)
{
    uint64_t cur = atomic_load(v);
    while (x < cur && !atomic_compare_exchange_weak(v, &cur, x)) {
    }
}

static void atomic_max(_Atomic uint64_t *v, uint64_t x)
{
    uint64_t cur = atomic_load(v);
    while (x > cur && !atomic_compare_exchange_weak(v, &cur, x)) {
    }
}

int perfvar_stop(int handle)
{
    int cpu;
    uint64_t now = pv_now_cpu(&cpu); /* first: the check below is not part of the work */
    if (!valid_handle(handle)) return PERFVAR_ERR_UNKNOWN_HANDLE;
    if (t_depth == 0) return PERFVAR_ERR_NOT_STARTED;
    if (t_stack[t_depth - 1].handle != handle) {
        for (int i = t_depth - 2; i >= 0; i--)
            if (t_stack[i].handle == handle) return PERFVAR_ERR_NESTING;
        return PERFVAR_ERR_NOT_STARTED;
    }
    t_depth--;
    uint64_t d = now - t_stack[t_depth].start;
    region *r = &g_regions[handle];
    atomic_fetch_add_explicit(&r->count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->total_ticks, d, memory_order_relaxed);
    atomic_min(&r->min_ticks, d);
    atomic_max(&r->max_ticks, d);
    const pv_region_sink *sink = atomic_load_explicit(&g_sink, memory_order_acquire);
    if (sink) sink->leave(handle, now, cpu, __builtin_return_address(0));
    return PERFVAR_OK;
}

int perfvar_region_stats_get(int handle, perfvar_region_stats *out)
{
    if (!out) return PERFVAR_ERR_INVALID_ARG;
    if (!valid_handle(handle)) return PERFVAR_ERR_UNKNOWN_HANDLE;
    region *r = &g_regions[handle];
    out->count = atomic_load(&r->count);
    out->total_ns = perfvar_ticks_to_ns(atomic_load(&r->total_ticks));
    out->min_ns = out->count ? perfvar_ticks_to_ns(atomic_load(&r->min_ticks)) : 0.0;
    out->max_ns = perfvar_ticks_to_ns(atomic_load(&r->max_ticks));
    return PERFVAR_OK;
}
