/* test_add_chain.c — pv_add_chain and pv_add_lanes run exactly n ADDs: their return values for
 * awkward n, their disassembly (the chain: 256 unrolled `add %rsi,%rax` on x86-64, `add x0, x0,
 * x4` on Armv8; the lanes: 64 of each lane's ADD, in turn), and the chain's duration growing with
 * n and its pace: no faster than one ADD per cycle of the fastest core there is.
 *
 *   test_add_chain                        values and timing
 *   test_add_chain --disasm OBJDUMP LIB   count the ADDs of both kernels in LIB (77 = skipped)
 */
#define _GNU_SOURCE
#include "check.h"
#include "calib/add_chain.h"
#include "calib/add_lanes.h"
#include "perfvar.h"
#include "perfvar_clock.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_values(const char *name, uint64_t (*kernel)(uint64_t))
{
    const uint64_t ns[] = {0, 1, 2, 3, 4, 127, 128, 255, 256, 257, 511, 512, 513, 1000, 4096, 65537};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        uint64_t got = kernel(ns[i]);
        CHECKF(got == ns[i], "%s(%llu) = %llu", name, (unsigned long long)ns[i], (unsigned long long)got);
    }
    for (uint64_t n = 0; n <= 1024; n++) {
        uint64_t got = kernel(n);
        if (got != n) {
            CHECKF(got == n, "%s(%llu) = %llu", name, (unsigned long long)n, (unsigned long long)got);
            break;
        }
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Median durations of 201 runs of 1000 and 100000 ADDs, measured interleaved. */
static void check_timing(void)
{
    enum { RUNS = 201 };
    static uint64_t small[RUNS], large[RUNS];
    for (int i = 0; i < 8; i++) pv_add_chain(100000); /* warm-up */
    for (int i = 0; i < RUNS; i++) {
        uint64_t t0 = perfvar_clock_read();
        pv_add_chain(1000);
        uint64_t t1 = perfvar_clock_read();
        pv_add_chain(100000);
        uint64_t t2 = perfvar_clock_read();
        small[i] = t1 - t0;
        large[i] = t2 - t1;
    }
    qsort(small, RUNS, sizeof small[0], cmp_u64);
    qsort(large, RUNS, sizeof large[0], cmp_u64);
    double ms = perfvar_ticks_to_ns(small[RUNS / 2]), ml = perfvar_ticks_to_ns(large[RUNS / 2]);
    printf("median pv_add_chain(1000) %.0f ns, pv_add_chain(100000) %.0f ns, ratio %.1f\n", ms, ml,
           ml / ms);
    CHECKF(ml > 10 * ms, "100000 ADDs took only %.1fx as long as 1000", ml / ms);
    /* A dependent ADD takes at least one cycle and no core runs above 6.5 GHz. A faster chain was
     * not executed as a chain: Intel's Golden Cove-class renamers fold `add $imm` chains at about
     * six per cycle (0.07 ns per ADD on a 2.3 GHz Xeon), which left the first kernel's duration to
     * the front end, bimodal and never below CV 0.01. */
    double ns_per_add = (ml - ms) / (100000 - 1000);
    printf("%.3f ns per ADD (%.2f GHz if one per cycle)\n", ns_per_add, 1 / ns_per_add);
    CHECKF(ns_per_add >= 1 / 6.5, "%.3f ns per ADD: faster than one per cycle at 6.5 GHz", ns_per_add);
}

#if defined(__x86_64__) || defined(__aarch64__)
/* Collapse runs of blanks and tabs to one space and trim both ends. */
static void squeeze(char *s)
{
    char *w = s;
    int blank = 1;
    for (char *r = s; *r; r++) {
        if (*r == ' ' || *r == '\t' || *r == '\n' || *r == '\r') {
            if (!blank) *w++ = ' ';
            blank = 1;
        } else {
            *w++ = *r;
            blank = 0;
        }
    }
    if (w > s && w[-1] == ' ') w--;
    *w = 0;
}
#endif

/* Each kernel's ADDs as objdump prints them (blanks squeezed), one per lane, and the size of an
 * ADD's encoding (x86-64: 3 bytes, which the computed entry jump assumes; A64: always 4). */
#if defined(__x86_64__)
static const char *const CHAIN_ADDS[] = {"add %rsi,%rax"};
static const char *const LANE_ADDS[] = {"add %rsi,%rax", "add %rsi,%r9", "add %rsi,%r10", "add %rsi,%r11"};
#define ADD_SIZE 8 /* "48 01 f0": three bytes as printed */
#elif defined(__aarch64__)
static const char *const CHAIN_ADDS[] = {"add x0, x0, x4"};
static const char *const LANE_ADDS[] = {"add x0, x0, x4", "add x5, x5, x4", "add x6, x6, x4", "add x7, x7, x4"};
#define ADD_SIZE 8 /* "8b040000" */
#endif

#if defined(ADD_SIZE)
enum { MAX_LANES = 4 };

/* What objdump shows of one kernel: its ADDs of each lane (and how many of them have the
 * expected size), the other ADDs and the returns. */
typedef struct kernel_disasm {
    int found, adds[MAX_LANES], sized[MAX_LANES], other_adds, rets;
} kernel_disasm;

/* Reads `objdump -d lib` and counts, in the function `symbol`, its lanes' ADDs (texts). */
static int read_kernel(const char *objdump, const char *lib, const char *symbol, const char *const *texts,
                       int lanes, kernel_disasm *k)
{
    memset(k, 0, sizeof *k);
    char cmd[8192], header[256];
    snprintf(cmd, sizeof cmd, "'%s' -d '%s'", objdump, lib);
    snprintf(header, sizeof header, "<%s>:", symbol);
    FILE *p = popen(cmd, "r");
    if (!p) {
        perror("popen");
        return -1;
    }
    char line[1024];
    int inside = 0;
    while (fgets(line, sizeof line, p)) {
        if (strstr(line, header)) {
            inside = k->found = 1;
            continue;
        }
        if (!inside) continue;
        if (line[0] == '\n' || strstr(line, ">:")) { /* blank line or the next symbol */
            inside = 0;
            continue;
        }
        /* x86-64: "  addr:\t48 01 f0             \tadd    %rsi,%rax"
         * aarch64: "  addr:\t8b040000 \tadd\tx0, x0, x4" */
        char *t1 = strchr(line, '\t');
        char *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        if (!t2) continue;
        *t2 = 0;
        char *bytes = t1 + 1, *insn = t2 + 1;
        squeeze(bytes);
        squeeze(insn);
        int lane = -1;
        for (int i = 0; i < lanes; i++)
            if (strcmp(insn, texts[i]) == 0) lane = i;
        if (lane >= 0) {
            k->adds[lane]++;
            k->sized[lane] += strlen(bytes) == ADD_SIZE;
        } else if (strncmp(insn, "add", 3) == 0) {
            k->other_adds++;
        }
        k->rets += strncmp(insn, "ret", 3) == 0;
    }
    return pclose(p);
}

/* One kernel's disassembly: 256 ADDs a pass, 256 / lanes of each lane's, every one of the size
 * the entry jump assumes; `sums` other ADDs (the lanes added up at the end) and one return. */
static void check_kernel(const char *objdump, const char *lib, const char *symbol, const char *const *texts,
                         int lanes, int sums)
{
    kernel_disasm k;
    int status = read_kernel(objdump, lib, symbol, texts, lanes, &k);
    CHECKF(status == 0, "'%s -d %s' exited with status %d", objdump, lib, status);
    CHECKF(k.found, "no <%s> in the disassembly of %s", symbol, lib);
    for (int i = 0; i < lanes; i++) {
        printf("%s: %d x %s (%d of %d characters as bytes)\n", symbol, k.adds[i], texts[i], k.sized[i],
               ADD_SIZE);
        CHECKF(k.adds[i] == 256 / lanes, "%s: %d x %s", symbol, k.adds[i], texts[i]);
        CHECKF(k.sized[i] == 256 / lanes, "%s: %d of %s sized for the entry jump", symbol, k.sized[i],
               texts[i]);
    }
    printf("%s: %d other add, %d ret\n", symbol, k.other_adds, k.rets);
    CHECK(k.other_adds == sums);
    CHECK(k.rets == 1);
}
#endif

static int check_disassembly(const char *objdump, const char *lib)
{
#if !defined(ADD_SIZE)
    (void)objdump, (void)lib;
    SKIP("no assembly kernel on this architecture (generic C kernels)");
#else
    if (!objdump[0] || strstr(objdump, "NOTFOUND")) SKIP("no objdump");
    check_kernel(objdump, lib, "pv_add_chain", CHAIN_ADDS, 1, 0);
    check_kernel(objdump, lib, "pv_add_lanes", LANE_ADDS, PV_ADD_LANES, PV_ADD_LANES - 1);
    return check_result();
#endif
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--disasm") == 0) {
        if (argc != 4) {
            fprintf(stderr, "usage: %s --disasm OBJDUMP LIB\n", argv[0]);
            return 2;
        }
        return check_disassembly(argv[2], argv[3]);
    }
    check_values("pv_add_chain", pv_add_chain);
    check_values("pv_add_lanes", pv_add_lanes);
    check_timing();
    return check_result();
}
