/* test_calib_search.c — the C search for t_min on a shared host, driven by a scripted counter.
 *
 * The search reads a substitute counter whose durations depend only on the distribution being
 * drawn, not on the chain: each distribution is scripted "P" (tight: CV 0.001) or "F" (spread:
 * CV 0.2), so every pass/fail the search sees, and so the chain lengths it chooses (logged with
 * each distribution), are the script's, whatever the machine does.
 *  1. A confirmation that fails after the length has passed is noise, not imprecision: the search
 *     measures the same length again instead of doubling it, and finds t_min there.
 *  2. After PV_TMIN_RETRIES (2) such retries it doubles: a length that keeps failing is imprecise.
 *  3. A first distribution that fails doubles at once, as before.
 *  4. Precise from the first chain: t_min is found, however short (the bisection stops at 1 ADD).
 *  5. A chain is not precise while one clock step is more than epsilon of its median, however
 *     alike its readings: on a counter read in steps of 24 units, chains read 1000, 2000, 4000 ...
 *     units with CV 0 give t_min at the first median >= 24 / epsilon, not at the first chain.
 *  6. The bisection ends where a failing length and the passing one next to it leave nothing
 *     between them, also below 16 ADDs: 9 imprecise and 10 precise give t_min 10 at once, not 9
 *     measured again until the refinement's half of the budget is spent.
 * No wall-clock bound is asserted. */
#include "check.h"
#include "calib/search.h"
#include "clock/clock.h"
#include "perfvar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 20, P = 3 };

static const char *script; /* one letter per distribution; past its end every one passes */
static uint64_t reads, now;

/* Samples come in read pairs (start, end) and N samples make a distribution. */
static uint64_t scripted_counter(void)
{
    uint64_t r = reads++;
    if (r % 2 == 0) return now;
    uint64_t dist = r / (2 * N), i = (r / 2) % N;
    int fail = dist < strlen(script) && script[dist] == 'F';
    uint64_t duration = fail ? (i % 2 ? 1200 : 800) : (i % 2 ? 1001 : 999);
    return now += duration;
}

/* The chain lengths of the first `count` t_min distributions of the run. */
static int lengths(const pv_calib_result *r, uint64_t *out, int count)
{
    int got = 0;
    for (int d = 0; d < r->ndists && got < count; d++)
        if (r->dists[d].kind == PV_DIST_TMIN) out[got++] = r->dists[d].adds;
    return got;
}

/* Every sample of distribution d lasts 1000 * 2^d units: CV 0, the median doubling each time. */
static uint64_t doubling_counter(void)
{
    uint64_t r = reads++;
    if (r % 2 == 0) return now;
    uint64_t dist = r / (2 * N);
    return now += 1000u << (dist < 20 ? dist : 20);
}

static void run_on(uint64_t (*counter)(void), double granularity, const char *s, pv_calib_result *r,
                   pv_calib_state *st)
{
    static double buf[N], sorted[N], a0[N];
    static pv_calib_params p;
    pv_calib_defaults(&p, PV_CALIB_QUICK);
    p.n_samples = N, p.p_confirm = P, p.q_pairs = 1;
    memset(r, 0, sizeof *r);
    memset(st, 0, sizeof *st);
    script = s, reads = 0, now = 1000000;
    pv_search search = {.p = &p, .r = r, .st = st, .tag = 0, .counter = PV_SEARCH_SUBSTITUTE,
                        .substitute = counter, .buf = buf, .sorted = sorted, .a0 = a0,
                        .overhead = 0, .granularity = granularity, .n = N};
    search.deadline = pv_now() + (uint64_t)(pv_clock_ticks_per_ns() * 5e9); /* 5 s: never reached */
    pv_search_state(&search, 0, 0);
}

static void run(const char *s, pv_calib_result *r, pv_calib_state *st)
{
    run_on(scripted_counter, 1, s, r, st);
}

static void print_lengths(const char *what, const uint64_t *k, int n, const pv_calib_state *st)
{
    printf("%-34s t_min %6llu ADDs, lengths:", what, (unsigned long long)st->t_min_adds);
    for (int i = 0; i < n; i++) printf(" %llu", (unsigned long long)k[i]);
    printf("\n");
}

int main(void)
{
    pv_calib_result r;
    pv_calib_state st;
    uint64_t k[16] = {0};

    /* 64, 128, 256 imprecise; 512 passes, then a noisy confirmation: 512 again, confirmed. */
    run("FFFPF", &r, &st);
    int n = lengths(&r, k, 9);
    print_lengths("noise after a pass:", k, n, &st);
    CHECK(n == 9);
    CHECK(k[0] == 64 && k[1] == 128 && k[2] == 256 && k[3] == 512 && k[4] == 512);
    CHECKF(k[5] == 512 && k[6] == 512 && k[7] == 512, "retried at %llu", (unsigned long long)k[5]);
    CHECKF(st.t_min_adds > 256 && st.t_min_adds <= 512, "t_min %llu", (unsigned long long)st.t_min_adds);
    pv_calib_free(&r);

    /* 512 fails after a pass three times: after two retries the search doubles to 1024. */
    run("FFFPFPFPF", &r, &st);
    n = lengths(&r, k, 10);
    print_lengths("keeps failing after passes:", k, n, &st);
    CHECK(n == 10);
    for (int i = 3; i < 9; i++) CHECKF(k[i] == 512, "distribution %d at %llu", i, (unsigned long long)k[i]);
    CHECKF(k[9] == 1024, "after the retries: %llu", (unsigned long long)k[9]);
    CHECKF(st.t_min_adds > 512 && st.t_min_adds <= 1024, "t_min %llu", (unsigned long long)st.t_min_adds);
    pv_calib_free(&r);

    /* A length whose first distribution fails is imprecise: doubled at once. */
    run("FFFF", &r, &st);
    n = lengths(&r, k, 5);
    print_lengths("first distribution fails:", k, n, &st);
    CHECK(n == 5 && k[3] == 512 && k[4] == 1024);
    CHECKF(st.t_min_adds > 512 && st.t_min_adds <= 1024, "t_min %llu", (unsigned long long)st.t_min_adds);
    pv_calib_free(&r);

    /* Every distribution precise from the first: the bisection below 64 ADDs stops at 1 ADD, and
     * t_min is found (0 would mean none). */
    run("", &r, &st);
    CHECKF(st.t_min_adds >= 1 && st.t_min_adds <= 64, "t_min %llu", (unsigned long long)st.t_min_adds);
    pv_calib_free(&r);

    /* Steps of 24 units, epsilon 0.01: 1000 and 2000 units are within a step of 2.4 % and 1.2 %,
     * not precise whatever their CV; 4000 (at 256 ADDs) is the first that is. */
    run_on(doubling_counter, 24, "", &r, &st);
    n = lengths(&r, k, 3);
    print_lengths("clock steps of 24 units:", k, n, &st);
    CHECK(n == 3 && k[0] == 64 && k[1] == 128 && k[2] == 256);
    CHECKF(st.t_min_adds > 128 && st.t_min_adds <= 256, "t_min %llu", (unsigned long long)st.t_min_adds);
    CHECKF(st.t_min * 0.01 >= 24, "t_min %.0f units, one step is more than 1 %% of it", st.t_min);
    pv_calib_free(&r);

    /* 64, 32 and 16 precise, 8 not, 12 and 10 precise, 9 not: nothing is left between 9 and 10.
     * Every distribution after these fails, so a search that measured 9 again would show it. */
    uint64_t all[64] = {0};
    run("PPPPPPPPPFPPPPPPF"
        "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF",
        &r, &st);
    n = lengths(&r, all, 64);
    print_lengths("bisection down to one ADD apart:", all, n < 20 ? n : 20, &st);
    CHECKF(n == 17 && all[15] == 10 && all[16] == 9, "%d t_min distributions", n);
    CHECKF(st.t_min_adds == 10, "t_min %llu", (unsigned long long)st.t_min_adds);
    CHECKF(strstr(st.note, "refined for half") == NULL, "note: %s", st.note);
    pv_calib_free(&r);
    return check_result();
}
