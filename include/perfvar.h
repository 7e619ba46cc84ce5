/*
 * perfvar.h — public C API of perfvar: serialized-barrier timers with integer region handles.
 *
 * Usage:
 *     int h;
 *     perfvar_region_register("solver", &h);   // once, outside the hot path
 *     perfvar_start(h); ... perfvar_stop(h);    // hot path: one fenced clock read each
 *
 * Every function returns a status code: PERFVAR_OK (0) or a negative PERFVAR_ERR_* value;
 * perfvar_strerror() turns it into text. Outputs go through pointer arguments.
 * Times are in nanoseconds unless a name says otherwise ("_ticks" = raw clock ticks).
 * Timers may be used without MPI; when the perfvar MPI layer is active, start/stop also appear as
 * USER regions in the OTF2 trace.
 */
#ifndef PERFVAR_H
#define PERFVAR_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PERFVAR_VERSION_MAJOR 0
#define PERFVAR_VERSION_MINOR 1
#define PERFVAR_VERSION_PATCH 0

/* Status codes. Stable values: they cross into Fortran as plain integers. */
enum perfvar_status {
    PERFVAR_OK = 0,
    PERFVAR_ERR_INVALID_ARG = -1,     /* NULL pointer, empty name, ... */
    PERFVAR_ERR_UNKNOWN_HANDLE = -2,  /* handle never returned by perfvar_region_register */
    PERFVAR_ERR_NOT_STARTED = -3,     /* stop without a matching start on this thread */
    PERFVAR_ERR_NESTING = -4,         /* stop of a region that is not the innermost started one */
    PERFVAR_ERR_TOO_MANY = -5,        /* region table or nesting depth exhausted */
    PERFVAR_ERR_NAME_TOO_LONG = -6,   /* region name longer than PERFVAR_NAME_MAX - 1 bytes */
    PERFVAR_ERR_NO_MEMORY = -7,
    PERFVAR_ERR_UNAVAILABLE = -8,     /* requested clock or feature not available here */
    PERFVAR_ERR_IO = -9,              /* a file could not be written */
    PERFVAR_ERR_CONFIG = -10          /* a PERFVAR_* environment variable has a bad value */
};

#define PERFVAR_NAME_MAX 256       /* bytes, including the terminating NUL */
#define PERFVAR_MAX_REGIONS 4096   /* user regions per process */
#define PERFVAR_MAX_DEPTH 64       /* nesting depth of started regions per thread */

/* Text for a status code; never NULL. Thread-safe, async-signal-safe. */
const char *perfvar_strerror(int status);

/*
 * Register a region name and return its handle in *handle (>= 0). Registering the same name again
 * returns the same handle. Thread-safe (takes a lock; keep it out of hot loops).
 * Errors: INVALID_ARG (NULL/empty name), NAME_TOO_LONG, TOO_MANY.
 */
int perfvar_region_register(const char *name, int *handle);

/*
 * Start / stop the region `handle` on the calling thread, reading the serialized-barrier clock.
 * Regions nest; stop must name the innermost started region of this thread. Misuse returns a status
 * and leaves all state unchanged. Thread-safe (per-thread state, lock-free), not async-signal-safe.
 * Errors: UNKNOWN_HANDLE, TOO_MANY (depth > PERFVAR_MAX_DEPTH), NOT_STARTED, NESTING.
 */
int perfvar_start(int handle);
int perfvar_stop(int handle);

/* Accumulated statistics of one region over all threads (completed start/stop pairs). */
typedef struct perfvar_region_stats {
    uint64_t count;     /* completed pairs */
    double total_ns;    /* sum of durations, ns */
    double min_ns;      /* shortest pair, ns (0 if count == 0) */
    double max_ns;      /* longest pair, ns */
} perfvar_region_stats;

/* Copy the statistics of `handle` into *out. Thread-safe; values may be mid-update under
 * concurrent stops. Errors: INVALID_ARG, UNKNOWN_HANDLE. */
int perfvar_region_stats_get(int handle, perfvar_region_stats *out);

/* What clock the timers use and how its frequency was obtained. */
typedef struct perfvar_clock_info {
    char name[32];          /* "tsc", "cntvct", "clock_monotonic_raw" */
    char hz_method[64];     /* how hz was obtained, e.g. "measured vs CLOCK_MONOTONIC_RAW" */
    double hz;              /* ticks per second */
    double hz_rel_error;    /* estimated relative error of hz (0 when exact) */
    int serialized;         /* 1 if reads are fenced against out-of-order execution */
    int has_cpu_id;         /* 1 if each read also reports the CPU number */
    char note[160];         /* "" or why the clock PERFVAR_CLOCK asked for is not the one used */
} perfvar_clock_info;

/* Initialise the clock if needed (first call measures the frequency, ~20 ms) and describe it.
 * Thread-safe. Errors: INVALID_ARG. */
int perfvar_clock_info_get(perfvar_clock_info *out);

/* Read the clock perfvar uses (PERFVAR_CLOCK): ticks in *ticks, CPU number in *cpu (may be NULL;
 * -1 if unknown). Thread-safe, async-signal-safe once the clock is initialised. Errors: INVALID_ARG. */
int perfvar_clock_now(uint64_t *ticks, int *cpu);

/* Convert a tick difference to nanoseconds with the calibrated frequency. Thread-safe. */
double perfvar_ticks_to_ns(uint64_t ticks);

#ifdef __cplusplus
}
#endif
#endif /* PERFVAR_H */
