/*
 * perfvar_clock.h — inline serialized-barrier clock reads (paper §4.1).
 *
 * x86-64:  lfence; rdtscp; lfence   — TSC ticks; ECX returns IA32_TSC_AUX, which Linux sets to
 *                                      (node << 12) | cpu, so every read also names its CPU.
 *          The leading lfence keeps earlier instructions from drifting past the read, the trailing one
 *          keeps later instructions (the measured work) from starting before it.
 * Armv8:   isb; mrs cntvct_el0; isb  — generic timer ticks, frequency in cntfrq_el0. No CPU number.
 * Other:   clock_gettime(CLOCK_MONOTONIC_RAW) in ns.
 *
 * All functions here are inline, thread-safe and async-signal-safe. Ticks are converted to ns with
 * perfvar_ticks_to_ns() (perfvar.h) once the library measured the frequency.
 */
#ifndef PERFVAR_CLOCK_H
#define PERFVAR_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__)
#define PERFVAR_CLOCK_NATIVE_NAME "tsc"
static inline uint64_t perfvar_clock_read_cpu(int *cpu)
{
    uint32_t lo, hi, aux;
    __asm__ volatile("lfence\n\trdtscp\n\tlfence" : "=a"(lo), "=d"(hi), "=c"(aux)::"memory");
    if (cpu) *cpu = (int)(aux & 0xfffu);
    return ((uint64_t)hi << 32) | lo;
}
#elif defined(__aarch64__)
#define PERFVAR_CLOCK_NATIVE_NAME "cntvct"
static inline uint64_t perfvar_clock_read_cpu(int *cpu)
{
    uint64_t v;
    __asm__ volatile("isb\n\tmrs %0, cntvct_el0\n\tisb" : "=r"(v)::"memory");
    if (cpu) *cpu = -1;
    return v;
}
static inline uint64_t perfvar_clock_native_hz(void)
{
    uint64_t f;
    __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(f));
    return f;
}
#else
#define PERFVAR_CLOCK_NATIVE_NAME "clock_monotonic_raw"
static inline uint64_t perfvar_clock_read_cpu(int *cpu)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    if (cpu) *cpu = -1;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif

/* Read without reporting the CPU. */
static inline uint64_t perfvar_clock_read(void) { return perfvar_clock_read_cpu((int *)0); }

#endif /* PERFVAR_CLOCK_H */
