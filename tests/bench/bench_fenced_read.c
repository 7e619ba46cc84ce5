/* bench_fenced_read.c — which fenced TSC read perfvar_clock.h uses, measured side by side in one run
 * (issue 3, item 1: "choose between lfence;rdtscp;lfence and alternatives by measurement").
 *
 * Candidates (each orders the read after all earlier instructions and before all later ones, given
 * the notes in include/perfvar_clock.h):
 *   perfvar_clock_read          perfvar's read, inline from perfvar_clock.h: rdtscp;lfence (names
 *                               the CPU through IA32_TSC_AUX; rdtscp waits for earlier instructions)
 *   lfence;rdtscp;lfence        perfvar's read before this benchmark chose (names the CPU)
 *   lfence;rdtsc;lfence         Intel SDM; AMD only with LFENCE dispatch-serializing (no CPU)
 *   mfence;lfence;rdtsc;lfence  also waits for earlier stores to be globally visible (no CPU)
 * References, NOT candidates (they lack one side of the ordering): rdtsc alone, rdtscp alone.
 *
 * Cost: (a) the tick difference of two back-to-back reads (what t_e,std, the timer overhead, is
 * made of), many samples, median and p99; (b) a block of back-to-back reads timed with
 * CLOCK_MONOTONIC_RAW, ns per read, median and p99 over rounds. Variants are interleaved.
 * Ordering: the ticks a read pair captures around a dependent chain of 256 IMULs (~768 core
 * cycles) minus those of an empty pair. A read that lets the chain overlap it captures less.
 * Printed: ratios of each to perfvar's read, and the CPUID facts the choice depends on.
 * A benchmark, not a test: it asserts nothing about time (exit 0 unless it cannot run).
 * Usage: bench_fenced_read [samples=20000] [rounds=31] */
#include <perfvar_clock.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <cpuid.h>

#define READ_FN(fn, text, ...)                                                                  \
    static inline uint64_t fn(void)                                                             \
    {                                                                                           \
        uint32_t lo, hi;                                                                        \
        __asm__ volatile(text : "=a"(lo), "=d"(hi)__VA_ARGS__ : : "memory");                    \
        return ((uint64_t)hi << 32) | lo;                                                       \
    }
#define AUX , "=c"(aux_sink)
static uint32_t aux_sink;
static inline uint64_t r_perfvar(void) { return perfvar_clock_read(); }
READ_FN(r_lfence_rdtscp_lfence, "lfence\n\trdtscp\n\tlfence", AUX)
READ_FN(r_lfence_rdtsc_lfence, "lfence\n\trdtsc\n\tlfence")
READ_FN(r_mfence_lfence_rdtsc_lfence, "mfence\n\tlfence\n\trdtsc\n\tlfence")
READ_FN(r_rdtsc, "rdtsc")
READ_FN(r_rdtscp, "rdtscp", AUX)

enum { NVARIANTS = 6 }; /* the first 4 are candidates */
static const char *const names[NVARIANTS] = {
    "perfvar (" PERFVAR_CLOCK_FENCED_READ ")", "lfence;rdtscp;lfence", "lfence;rdtsc;lfence",
    "mfence;lfence;rdtsc;lfence", "rdtsc (ref.)",  "rdtscp (ref.)"};

static volatile uint64_t sink;

/* Each variant's code is inlined into its own copy of these loops (no call between the reads). */
#define FOR_VARIANT(v, BODY)                                                                    \
    switch (v) {                                                                                \
    case 0: { uint64_t (*const rd)(void) = r_perfvar; BODY; } break;                           \
    case 1: { uint64_t (*const rd)(void) = r_lfence_rdtscp_lfence; BODY; } break;              \
    case 2: { uint64_t (*const rd)(void) = r_lfence_rdtsc_lfence; BODY; } break;               \
    case 3: { uint64_t (*const rd)(void) = r_mfence_lfence_rdtsc_lfence; BODY; } break;        \
    case 4: { uint64_t (*const rd)(void) = r_rdtsc; BODY; } break;                             \
    default: { uint64_t (*const rd)(void) = r_rdtscp; BODY; } break;                           \
    }

static inline uint64_t imul_chain(uint64_t x)
{
    __asm__ volatile(".rept 256\n\timul %0, %0\n\t.endr" : "+r"(x)::"memory");
    return x;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    int i = (int)(q * (n - 1) + 0.5);
    return v[i];
}

/* TSC ticks per ns over ~20 ms, against CLOCK_MONOTONIC_RAW (only to print ns). */
static double ticks_per_ns(void)
{
    double n0 = now_ns();
    uint64_t t0 = r_perfvar();
    while (now_ns() - n0 < 2e7) {}
    double n1 = now_ns();
    uint64_t t1 = r_perfvar();
    return (double)(t1 - t0) / (n1 - n0);
}

int main(int argc, char **argv)
{
    int ns = argc > 1 ? atoi(argv[1]) : 20000, rounds = argc > 2 ? atoi(argv[2]) : 31;
    if (ns < 10 || rounds < 3) {
        fprintf(stderr, "usage: bench_fenced_read [samples>=10] [rounds>=3]\n");
        return 2;
    }
    unsigned a, b, c, d;
    int rdtscp = __get_cpuid(0x80000001, &a, &b, &c, &d) && ((d >> 27) & 1);
    if (!rdtscp) {
        printf("bench_fenced_read: this CPU has no rdtscp; nothing to compare\n");
        return 0;
    }
    char vendor[13] = "";
    __cpuid(0, a, b, c, d);
    memcpy(vendor, &b, 4), memcpy(vendor + 4, &d, 4), memcpy(vendor + 8, &c, 4);
    int lfence_serializing = -1; /* AMD: CPUID 0x80000021 EAX[2] LfenceAlwaysSerializing */
    if (__get_cpuid_max(0x80000000, NULL) >= 0x80000021) {
        __cpuid(0x80000021, a, b, c, d);
        lfence_serializing = (a >> 2) & 1;
    }
    double tpn = ticks_per_ns();

    int pairs = ns / rounds > 0 ? ns / rounds : 1;
    double *pair[NVARIANTS], *block[NVARIANTS], *chain[NVARIANTS], *empty[NVARIANTS];
    for (int v = 0; v < NVARIANTS; v++) {
        pair[v] = malloc((size_t)pairs * rounds * sizeof(double));
        chain[v] = malloc((size_t)pairs * rounds * sizeof(double));
        empty[v] = malloc((size_t)pairs * rounds * sizeof(double));
        block[v] = malloc((size_t)rounds * sizeof(double));
        if (!pair[v] || !chain[v] || !empty[v] || !block[v]) return 1;
    }
    const int per_block = 1000;
    uint64_t x = 3;
    for (int r = -1; r < rounds; r++) { /* round -1: warm-up, discarded */
        for (int v = 0; v < NVARIANTS; v++) {
            int base = r < 0 ? 0 : r * pairs;
            FOR_VARIANT(v, {
                for (int i = 0; i < pairs; i++) {
                    uint64_t t0 = rd();
                    uint64_t t1 = rd();
                    pair[v][base + i] = (double)(t1 - t0);
                }
                for (int i = 0; i < pairs; i++) {
                    uint64_t t0 = rd();
                    x = imul_chain(x);
                    uint64_t t1 = rd();
                    uint64_t t2 = rd();
                    uint64_t t3 = rd();
                    chain[v][base + i] = (double)(t1 - t0);
                    empty[v][base + i] = (double)(t3 - t2);
                }
                double n0 = now_ns();
                uint64_t acc = 0;
                for (int i = 0; i < per_block; i++) acc += rd();
                sink = acc;
                if (r >= 0) block[v][r] = (now_ns() - n0) / per_block;
            });
        }
    }
    sink = x;

    int n = pairs * rounds;
    double pmed[NVARIANTS], p99[NVARIANTS], bmed[NVARIANTS], b99[NVARIANTS], cap[NVARIANTS];
    for (int v = 0; v < NVARIANTS; v++) {
        pmed[v] = quantile(pair[v], n, 0.5) / tpn;
        p99[v] = quantile(pair[v], n, 0.99) / tpn;
        bmed[v] = quantile(block[v], rounds, 0.5);
        b99[v] = quantile(block[v], rounds, 0.99);
        cap[v] = (quantile(chain[v], n, 0.5) - quantile(empty[v], n, 0.5)) / tpn;
    }
    printf("bench_fenced_read: %s, TSC %.6f GHz, LFENCE dispatch-serializing (CPUID 0x80000021 "
           "EAX[2]): %s; %d rounds x %d samples per variant, interleaved\n",
           vendor, tpn, lfence_serializing < 0 ? "not reported" : lfence_serializing ? "yes" : "no",
           rounds, pairs);
    printf("%-30s %9s %9s %6s  %9s %9s %6s  %11s %6s\n", "read", "pair med", "pair p99", "ratio",
           "read med", "read p99", "ratio", "256 IMUL ns", "ratio");
    for (int v = 0; v < NVARIANTS; v++)
        printf("%-30s %9.1f %9.1f %6.2f  %9.1f %9.1f %6.2f  %11.1f %6.2f\n", names[v], pmed[v], p99[v],
               pmed[v] / pmed[0], bmed[v], b99[v], bmed[v] / bmed[0], cap[v],
               cap[0] > 0 ? cap[v] / cap[0] : 0.0);
    printf("pair: ns between two back-to-back reads; read: ns per read in a block of %d; 256 IMUL: "
           "ns captured around a dependent chain minus an empty pair (less = the chain overlapped "
           "the reads). Ratios to perfvar's read, same run.\n",
           per_block);
    printf("chosen %s: %.1f ns per read; lfence;rdtscp;lfence = %.2fx, lfence;rdtsc;lfence = %.2fx, "
           "mfence;lfence;rdtsc;lfence = %.2fx (block medians)\n",
           PERFVAR_CLOCK_FENCED_READ, bmed[0], bmed[1] / bmed[0], bmed[2] / bmed[0], bmed[3] / bmed[0]);
    for (int v = 0; v < NVARIANTS; v++) free(pair[v]), free(chain[v]), free(empty[v]), free(block[v]);
    return 0;
}
#else
int main(void)
{
    printf("bench_fenced_read: not x86-64: no alternative reads to compare here\n"
           "chosen %s\n",
           PERFVAR_CLOCK_FENCED_READ);
    return 0;
}
#endif
