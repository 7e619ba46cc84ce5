/*
 * perfvar_calib.h — measurement kernels for calibrating timers (paper §5.4), for tools such as
 * `perfvar calibrate`, which drive them from Python through the shared library.
 *
 * One sample = read timer; run a chain of `adds` dependent ADDs; read timer; then write the whole
 * cache-flush buffer of `flush_bytes` (one store per 64-byte line), so the next sample starts with
 * the caches in that state (paper Fig. 1). Results are in ns (TSC-based timers are converted at the
 * clock rate perfvar measured), except PERFVAR_TIMER_CYCLES and PERFVAR_TIMER_PAPI_READ, whose
 * results are CPU cycles
 * (perfvar_timer_unit says which). Timers that are not available here return
 * PERFVAR_ERR_UNAVAILABLE and perfvar_timer_available says why. Not thread-safe (one shared flush
 * buffer; the cycle counter is opened for the calling thread).
 */
#ifndef PERFVAR_CALIB_H
#define PERFVAR_CALIB_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum perfvar_timer {
    PERFVAR_TIMER_BARRIER = 0,        /* perfvar's clock: rdtscp; lfence (Armv8: isb; cntvct),
                                         or what PERFVAR_CLOCK selected */
    PERFVAR_TIMER_RDTSC = 1,          /* plain rdtsc, no fences (x86-64; needs the TSC rate) */
    PERFVAR_TIMER_CLOCK_GETTIME = 2,  /* clock_gettime(CLOCK_MONOTONIC) */
    PERFVAR_TIMER_PAPI_REAL_NSEC = 3, /* PAPI_get_real_nsec (libpapi loaded at run time) */
    PERFVAR_TIMER_PAPI_REAL_CYC = 4,  /* PAPI_get_real_cyc, converted to ns */
    PERFVAR_TIMER_MPI_WTIME = 5,      /* MPI_Wtime of the MPI library this process initialised */
    PERFVAR_TIMER_CYCLES = 6,         /* the CPU-cycle counter, in cycles (perfvar_clock.h:
                                         lfence; rdpmc; lfence / isb; mrs pmccntr_el0; isb) */
    PERFVAR_TIMER_PAPI_READ = 7,      /* PAPI_read of an event set counting PAPI_TOT_CYC, in cycles
                                         (needs a PMU PAPI can use; libpapi loaded at run time) */
    PERFVAR_TIMER_COUNT
};

/* Short name of a timer ("barrier", "rdtsc", "clock_gettime", "papi_real_nsec", "papi_real_cyc",
 * "mpi_wtime", "cycles", "papi_read"), or NULL for an unknown one. Thread-safe. */
const char *perfvar_timer_name(int timer);

/* Unit of a timer's samples: "cycles" for PERFVAR_TIMER_CYCLES and PERFVAR_TIMER_PAPI_READ, "ns"
 * for the others, NULL for an
 * unknown timer. Thread-safe. */
const char *perfvar_timer_unit(int timer);

/* PERFVAR_OK if `timer` can be read here; else PERFVAR_ERR_UNAVAILABLE (or INVALID_ARG) with the
 * reason in why (may be NULL). The first PAPI query loads and initialises libpapi; the first
 * papi_read query also creates and starts its event set (PAPI_TOT_CYC) on the calling thread, which
 * is the one papi_read samples must be taken on. MPI_Wtime needs an MPI library already loaded and
 * initialised in this process (e.g. by mpi4py). */
int perfvar_timer_available(int timer, char *why, int why_len);

/* Take n samples into out_ns[0..n-1] (ns, or cycles for PERFVAR_TIMER_CYCLES; see above). adds: chain length (0 = timer cost only);
 * flush_bytes: 0 for none. Errors: INVALID_ARG, UNAVAILABLE, NO_MEMORY. */
int perfvar_calib_sample(int timer, uint64_t adds, uint64_t flush_bytes, int n, double *out_ns);

/* The step `timer` reads in (ns, or cycles as perfvar_timer_unit says), into *out: the widest gap
 * between the values n samples take around chains of 0, 1, ... 255 ADDs (the central 90 %), which a
 * clock that moves in coarse steps leaves and a fine one does not; 0 when they show a single value.
 * The start-up calibration measures its clock's the same way (rank-N.json clock_granularity_ns).
 * Errors: INVALID_ARG (n < 2), UNAVAILABLE, NO_MEMORY. Not thread-safe (see above). */
int perfvar_calib_resolution(int timer, int n, double *out);

/* Size in bytes of the data or unified cache of `level` (1, 2, 3) of CPU 0 from sysfs, or 0 when
 * unknown. Thread-safe. */
uint64_t perfvar_cache_size(int level);

/* The layout of perfvar_clock_info (perfvar.h) as compiled, for the Python side's copy of it
 * (perfvar.kernels._ClockInfo): "perfvar_clock_info" gives its size in bytes,
 * "perfvar_clock_info.hz" a field's offset, "perfvar_clock_info.#" its number of fields; -1 for a
 * name it does not know. Thread-safe. */
long perfvar_clock_info_layout(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* PERFVAR_CALIB_H */
