/* test_add_chain.c — pv_add_chain runs exactly n ADDs: its return value for awkward n, its
 * disassembly (256 unrolled `add %rsi,%rax` on x86-64, `add x0, x0, x4` on Armv8), its duration
 * growing with n, and its pace: no faster than one ADD per cycle of the fastest core there is.
 *
 *   test_add_chain                        values and timing
 *   test_add_chain --disasm OBJDUMP LIB   count the ADDs in pv_add_chain of LIB (77 = skipped)
 */
#define _GNU_SOURCE
#include "check.h"
#include "calib/add_chain.h"
#include "perfvar.h"
#include "perfvar_clock.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_values(void)
{
    const uint64_t ns[] = {0, 1, 2, 3, 4, 127, 128, 255, 256, 257, 511, 512, 513, 1000, 4096, 65537};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        uint64_t got = pv_add_chain(ns[i]);
        CHECKF(got == ns[i], "pv_add_chain(%llu) = %llu", (unsigned long long)ns[i],
               (unsigned long long)got);
    }
    for (uint64_t n = 0; n <= 1024; n++) {
        uint64_t got = pv_add_chain(n);
        if (got != n) {
            CHECKF(got == n, "pv_add_chain(%llu) = %llu", (unsigned long long)n, (unsigned long long)got);
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

/* The kernel's ADD as objdump prints it (blanks squeezed) and its fixed-size encoding. */
#if defined(__x86_64__)
#define ADD_TEXT "add %rsi,%rax"
#define ADD_BYTES "48 01 f0"
#elif defined(__aarch64__)
#define ADD_TEXT "add x0, x0, x4"
#define ADD_BYTES "8b040000"
#endif

static int check_disassembly(const char *objdump, const char *lib)
{
#if !defined(ADD_TEXT)
    (void)objdump, (void)lib;
    SKIP("no assembly kernel on this architecture (generic C chain)");
#else
    if (!objdump[0] || strstr(objdump, "NOTFOUND")) SKIP("no objdump");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' -d '%s'", objdump, lib);
    FILE *p = popen(cmd, "r");
    if (!p) {
        perror("popen");
        CHECK(!"could not run objdump");
        return check_result();
    }
    char line[1024];
    int inside = 0, found = 0, adds = 0, adds_encoded = 0, other_adds = 0, rets = 0;
    while (fgets(line, sizeof line, p)) {
        if (strstr(line, "<pv_add_chain>:")) {
            inside = found = 1;
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
        if (strcmp(insn, ADD_TEXT) == 0) {
            adds++;
            adds_encoded += strcmp(bytes, ADD_BYTES) == 0;
        } else if (strncmp(insn, "add", 3) == 0) {
            other_adds++;
        }
        rets += strncmp(insn, "ret", 3) == 0;
    }
    int status = pclose(p);
    CHECKF(status == 0, "'%s' exited with status %d", cmd, status);
    CHECKF(found, "no <pv_add_chain> in the disassembly of %s", lib);
    printf("pv_add_chain: %d x %s (%d encoded %s), %d other add, %d ret\n", adds, ADD_TEXT,
           adds_encoded, ADD_BYTES, other_adds, rets);
    CHECK(adds == 256);
    CHECK(adds_encoded == 256); /* the computed entry jump assumes this size per ADD */
    CHECK(other_adds == 0);
    CHECK(rets == 1);
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
    check_values();
    check_timing();
    return check_result();
}
