/*
 * perfvar_clock.h — inline serialized-barrier clock reads (paper §4.1).
 *
 * x86-64:  rdtscp; lfence          — TSC ticks; ECX returns IA32_TSC_AUX, which Linux sets to
 *                                      (node << 12) | cpu, so every read also names its CPU.
 * Armv8:   isb; mrs cntvct_el0; isb  — generic timer ticks, frequency in cntfrq_el0. No CPU number.
 * Other:   clock_gettime(CLOCK_MONOTONIC_RAW) in ns.
 *
 * Why rdtscp; lfence (the paper's Table 3 "rdtscp + lfence"): rdtscp waits until all earlier
 * instructions have executed and earlier loads are globally visible (Intel SDM; AMD APM: older
 * instructions retire first) but lets later ones start; the trailing lfence stops them (no later
 * instruction begins before it completes), so the measured work cannot start before the read,
 * and ECX names the CPU. A leading lfence adds nothing rdtscp does not already wait for;
 * lfence; rdtsc; lfence orders alike only where LFENCE is dispatch-serializing (all Intel; AMD
 * with MSR C001_1029[1], CPUID 0x80000021 EAX[2]) and names no CPU; mfence also waits for earlier
 * stores, more than a barrier clock needs. tests/bench/bench_fenced_read (ctest
 * bench.fenced_read) times the four on the machine at hand; docs/measurements.md has the figures
 * that chose this one.
 *
 * The clock reads here are inline, thread-safe and async-signal-safe. Ticks are converted to ns with
 * perfvar_ticks_to_ns() (perfvar.h) once the library measured the frequency. The CPU-cycle counter
 * follows below (perfvar_cycles_*).
 */
#ifndef PERFVAR_CLOCK_H
#define PERFVAR_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__)
#define PERFVAR_CLOCK_NATIVE_NAME "tsc"
#define PERFVAR_CLOCK_FENCED_READ "rdtscp;lfence" /* the instructions perfvar_clock_read_cpu runs */
static inline uint64_t perfvar_clock_read_cpu(int *cpu)
{
    uint32_t lo, hi, aux;
    __asm__ volatile("rdtscp\n\tlfence" : "=a"(lo), "=d"(hi), "=c"(aux)::"memory");
    if (cpu) *cpu = (int)(aux & 0xfffu);
    return ((uint64_t)hi << 32) | lo;
}
#elif defined(__aarch64__)
#define PERFVAR_CLOCK_NATIVE_NAME "cntvct"
#define PERFVAR_CLOCK_FENCED_READ "isb;mrs cntvct_el0;isb"
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
#define PERFVAR_CLOCK_FENCED_READ "clock_gettime"
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

/*
 * The CPU-cycle counter (paper §4.1's second clock): core cycles, NOT time. The core's frequency
 * may change (turbo, power states), so cycles are never converted to ns; they measure the work a
 * core did, not how long it took.
 *
 * x86-64:  lfence; rdpmc; lfence on the hardware counter of a perf_event PERF_COUNT_HW_CPU_CYCLES
 *          (pinned, user mode only) that the calling thread opened with perfvar_cycles_open. The
 *          value is read with the kernel's seqlock protocol over the event's mmap page
 *          (linux/perf_event.h, struct perf_event_mmap_page): lock, index - 1 = the counter,
 *          offset + the counter sign-extended from pmc_width bits, retried if lock changed.
 *          The counter counts the opening thread only: read it on that thread.
 * Armv8:   isb; mrs pmccntr_el0; isb, where the kernel enables EL0 access (PMUSERENR_EL0);
 *          page is unused (NULL).
 * Other:   no cycle counter; perfvar_cycles_open says so.
 *
 * perfvar_cycles_read is inline, thread-safe for the thread that opened the page, async-signal-
 * safe. Call it only with a page perfvar_cycles_open returned (a counter the probe found readable);
 * elsewhere the instruction traps (SIGSEGV/SIGILL).
 */
#if defined(__x86_64__)
#define PERFVAR_CYCLES_NAME "rdpmc"
/* The head of struct perf_event_mmap_page (a stable kernel ABI), mirrored so that this header
 * needs no Linux header and compiles as strict ISO C; src/clock/cycles.c checks the offsets. */
typedef struct perfvar_cycles_page {
    uint32_t version, compat_version;
    uint32_t lock;          /* seqlock: changes while the kernel updates the page */
    uint32_t index;         /* hardware counter + 1; 0: not on a counter now */
    int64_t offset;         /* added to the counter's value */
    uint64_t time_enabled, time_running;
    uint64_t capabilities;  /* bit 2: cap_user_rdpmc */
    uint16_t pmc_width;     /* bits the counter implements */
} perfvar_cycles_page;

/* A pmc_width-bit counter value as a signed 64-bit number (the kernel's protocol). */
static inline int64_t perfvar_cycles_sign_extend(uint64_t raw, unsigned width)
{
    if (width == 0 || width >= 64) return (int64_t)raw;
    return (int64_t)(raw << (64 - width)) >> (64 - width);
}

static inline uint64_t perfvar_cycles_read(const perfvar_cycles_page *page)
{
    const volatile perfvar_cycles_page *pc = page;
    uint32_t seq, idx;
    uint64_t count;
    do {
        seq = pc->lock;
        __asm__ volatile("" ::: "memory"); /* the fields are read after the lock */
        idx = pc->index;
        count = (uint64_t)pc->offset;
        if (idx && (pc->capabilities & 4u)) {
            uint32_t lo, hi;
            __asm__ volatile("lfence\n\trdpmc\n\tlfence" : "=a"(lo), "=d"(hi) : "c"(idx - 1) : "memory");
            count += (uint64_t)perfvar_cycles_sign_extend(((uint64_t)hi << 32) | lo, pc->pmc_width);
        }
        __asm__ volatile("" ::: "memory"); /* ... and before the lock is read again */
    } while (pc->lock != seq);
    return count;
}
#elif defined(__aarch64__)
#define PERFVAR_CYCLES_NAME "pmccntr"
typedef struct perfvar_cycles_page { int unused; } perfvar_cycles_page;
static inline uint64_t perfvar_cycles_read(const perfvar_cycles_page *page)
{
    uint64_t v;
    (void)page;
    __asm__ volatile("isb\n\tmrs %0, pmccntr_el0\n\tisb" : "=r"(v)::"memory");
    return v;
}
#else
#define PERFVAR_CYCLES_NAME "none"
typedef struct perfvar_cycles_page { int unused; } perfvar_cycles_page;
static inline uint64_t perfvar_cycles_read(const perfvar_cycles_page *page)
{
    (void)page;
    return 0;
}
#endif

#ifdef __cplusplus
extern "C" {
#endif
/*
 * Make the CPU-cycle counter readable by the calling thread: *page gets what perfvar_cycles_read
 * needs (x86-64: the thread's perf_event mmap page, opened once per thread and kept until
 * perfvar_cycles_close; Armv8: NULL). Returns 0, or PERFVAR_ERR_UNAVAILABLE (-8, perfvar.h) with
 * the reason in why (may be NULL) when the machine has no readable counter (no PMU in a VM, user
 * rdpmc not allowed, pmccntr_el0 trapped: the capability probe's finding) or the event cannot be
 * opened on this thread. Thread-safe (per-thread state); not async-signal-safe.
 */
int perfvar_cycles_open(const perfvar_cycles_page **page, char *why, int why_len);

/* Release the calling thread's counter (no-op when it has none). Thread-safe. */
void perfvar_cycles_close(void);
#ifdef __cplusplus
}
#endif

#endif /* PERFVAR_CLOCK_H */
