/* test_regions.c — region registry, start/stop misuse, nesting depth, statistics, two threads on one
 * region, and perfvar_strerror. */
#define _GNU_SOURCE
#include "check.h"
#include "perfvar.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void spin(int n)
{
    volatile int x = 0;
    for (int i = 0; i < n; i++) x += i;
}

static perfvar_region_stats stats_of(int h)
{
    perfvar_region_stats s;
    memset(&s, 0xff, sizeof s);
    CHECK(perfvar_region_stats_get(h, &s) == PERFVAR_OK);
    return s;
}

static void check_register(void)
{
    int h1 = -1, h2 = -1, h3 = -1, h = 12345;
    CHECK(perfvar_region_register("solver", &h1) == PERFVAR_OK);
    CHECK(h1 >= 0);
    CHECK(perfvar_region_register("solver", &h2) == PERFVAR_OK);
    CHECK(h1 == h2);
    CHECK(perfvar_region_register("halo", &h3) == PERFVAR_OK);
    CHECK(h3 >= 0 && h3 != h1);
    CHECK(perfvar_region_register("solver ", &h) == PERFVAR_OK); /* C names are exact */
    CHECK(h != h1 && h != h3);

    h = 12345;
    CHECK(perfvar_region_register(NULL, &h) == PERFVAR_ERR_INVALID_ARG);
    CHECK(perfvar_region_register("", &h) == PERFVAR_ERR_INVALID_ARG);
    CHECK(perfvar_region_register("x", NULL) == PERFVAR_ERR_INVALID_ARG);
    CHECK(h == 12345);

    char name[PERFVAR_NAME_MAX + 1];
    memset(name, 'n', sizeof name);
    name[PERFVAR_NAME_MAX] = 0; /* PERFVAR_NAME_MAX bytes: no room for the NUL */
    CHECK(perfvar_region_register(name, &h) == PERFVAR_ERR_NAME_TOO_LONG);
    CHECK(h == 12345);
    name[PERFVAR_NAME_MAX - 1] = 0; /* PERFVAR_NAME_MAX - 1 bytes: the longest valid name */
    CHECK(perfvar_region_register(name, &h) == PERFVAR_OK);
    CHECK(h >= 0 && h != h1 && h != h3);
    int again = -1;
    CHECK(perfvar_region_register(name, &again) == PERFVAR_OK);
    CHECK(again == h);
    name[PERFVAR_NAME_MAX - 2] = 'm'; /* differs only in the last byte */
    CHECK(perfvar_region_register(name, &again) == PERFVAR_OK);
    CHECK(again != h);
}

static void check_unknown_handles(void)
{
    int h;
    CHECK(perfvar_region_register("unknown-test", &h) == PERFVAR_OK);
    const int bad[] = {-1, -2, INT_MIN, INT_MAX, PERFVAR_MAX_REGIONS, h + 1000};
    perfvar_region_stats s;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECKF(perfvar_start(bad[i]) == PERFVAR_ERR_UNKNOWN_HANDLE, "start(%d)", bad[i]);
        CHECKF(perfvar_stop(bad[i]) == PERFVAR_ERR_UNKNOWN_HANDLE, "stop(%d)", bad[i]);
        CHECKF(perfvar_region_stats_get(bad[i], &s) == PERFVAR_ERR_UNKNOWN_HANDLE, "stats(%d)", bad[i]);
    }
    CHECK(perfvar_region_stats_get(h, NULL) == PERFVAR_ERR_INVALID_ARG);
    /* An unknown handle inside a started region leaves that region running. */
    CHECK(perfvar_start(h) == PERFVAR_OK);
    CHECK(perfvar_stop(-1) == PERFVAR_ERR_UNKNOWN_HANDLE);
    CHECK(perfvar_stop(h) == PERFVAR_OK);
    CHECK(stats_of(h).count == 1);
}

static void check_misuse(void)
{
    int a, b, c;
    CHECK(perfvar_region_register("misuse.A", &a) == PERFVAR_OK);
    CHECK(perfvar_region_register("misuse.B", &b) == PERFVAR_OK);
    CHECK(perfvar_region_register("misuse.C", &c) == PERFVAR_OK);

    perfvar_region_stats s = stats_of(a);
    CHECK(s.count == 0 && s.total_ns == 0 && s.min_ns == 0 && s.max_ns == 0);

    CHECK(perfvar_stop(a) == PERFVAR_ERR_NOT_STARTED);
    CHECK(perfvar_start(a) == PERFVAR_OK);
    CHECK(perfvar_start(b) == PERFVAR_OK);
    CHECK(perfvar_stop(a) == PERFVAR_ERR_NESTING);    /* A is started but not innermost */
    CHECK(perfvar_stop(c) == PERFVAR_ERR_NOT_STARTED); /* C is not started at all */
    CHECK(perfvar_stop(b) == PERFVAR_OK);              /* the misuse changed nothing */
    CHECK(perfvar_stop(a) == PERFVAR_OK);
    CHECK(perfvar_stop(a) == PERFVAR_ERR_NOT_STARTED);
    CHECK(perfvar_stop(b) == PERFVAR_ERR_NOT_STARTED);
    CHECK(stats_of(a).count == 1);
    CHECK(stats_of(b).count == 1);
    CHECK(stats_of(c).count == 0);

    /* The same region may nest in itself (recursion). */
    CHECK(perfvar_start(c) == PERFVAR_OK);
    CHECK(perfvar_start(c) == PERFVAR_OK);
    CHECK(perfvar_stop(c) == PERFVAR_OK);
    CHECK(perfvar_stop(c) == PERFVAR_OK);
    CHECK(perfvar_stop(c) == PERFVAR_ERR_NOT_STARTED);
    CHECK(stats_of(c).count == 2);
}

static void check_depth(void)
{
    int h[PERFVAR_MAX_DEPTH + 1];
    char name[32];
    for (int i = 0; i <= PERFVAR_MAX_DEPTH; i++) {
        snprintf(name, sizeof name, "depth.%d", i);
        CHECK(perfvar_region_register(name, &h[i]) == PERFVAR_OK);
    }
    int ok = 0;
    for (int i = 0; i < PERFVAR_MAX_DEPTH; i++) ok += perfvar_start(h[i]) == PERFVAR_OK;
    CHECK(ok == PERFVAR_MAX_DEPTH);
    CHECK(perfvar_start(h[PERFVAR_MAX_DEPTH]) == PERFVAR_ERR_TOO_MANY);
    CHECK(perfvar_start(h[0]) == PERFVAR_ERR_TOO_MANY);
    CHECK(perfvar_stop(h[PERFVAR_MAX_DEPTH]) == PERFVAR_ERR_NOT_STARTED);
    CHECK(perfvar_stop(h[0]) == PERFVAR_ERR_NESTING);
    ok = 0;
    for (int i = PERFVAR_MAX_DEPTH - 1; i >= 0; i--) ok += perfvar_stop(h[i]) == PERFVAR_OK;
    CHECK(ok == PERFVAR_MAX_DEPTH);
    CHECK(perfvar_stop(h[0]) == PERFVAR_ERR_NOT_STARTED);
    for (int i = 0; i < PERFVAR_MAX_DEPTH; i++) CHECKF(stats_of(h[i]).count == 1, "depth.%d", i);
    CHECK(stats_of(h[PERFVAR_MAX_DEPTH]).count == 0);
    /* Full depth is usable again. */
    ok = 0;
    for (int i = 0; i < PERFVAR_MAX_DEPTH; i++) ok += perfvar_start(h[i]) == PERFVAR_OK;
    for (int i = PERFVAR_MAX_DEPTH - 1; i >= 0; i--) ok += perfvar_stop(h[i]) == PERFVAR_OK;
    CHECK(ok == 2 * PERFVAR_MAX_DEPTH);
}

static void check_stats(void)
{
    int h;
    CHECK(perfvar_region_register("stats", &h) == PERFVAR_OK);
    for (int i = 0; i < 100; i++) {
        CHECK(perfvar_start(h) == PERFVAR_OK);
        spin(100 + 50 * i);
        CHECK(perfvar_stop(h) == PERFVAR_OK);
    }
    perfvar_region_stats s = stats_of(h);
    printf("stats: count %llu, total %.0f ns, min %.0f ns, max %.0f ns\n", (unsigned long long)s.count,
           s.total_ns, s.min_ns, s.max_ns);
    CHECK(s.count == 100);
    /* The shortest pair may read 0 ticks on a coarse counter (Armv8 generic timer under qemu:
     * 16 ns steps), but the spins add up to more than one step. */
    CHECK(s.min_ns >= 0);
    CHECK(s.max_ns > 0 && s.total_ns > 0);
    CHECK(s.min_ns <= s.max_ns);
    CHECK(s.total_ns >= (double)s.count * s.min_ns * (1 - 1e-12));
    CHECK(s.total_ns <= (double)s.count * s.max_ns * (1 + 1e-12));
}

typedef struct worker_arg {
    int handle;
    int failures;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *w = p;
    for (int i = 0; i < 10000; i++) {
        w->failures += perfvar_start(w->handle) != PERFVAR_OK;
        w->failures += perfvar_stop(w->handle) != PERFVAR_OK;
    }
    return NULL;
}

static void *stop_elsewhere(void *p)
{
    /* Stacks are per thread: a region started on another thread is not started here. */
    int h = *(int *)p;
    return (void *)(intptr_t)perfvar_stop(h);
}

static void check_threads(void)
{
    int h;
    CHECK(perfvar_region_register("threads", &h) == PERFVAR_OK);
    worker_arg w[2] = {{h, 0}, {h, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&t[i], NULL, worker, &w[i]) == 0);
    for (int i = 0; i < 2; i++) CHECK(pthread_join(t[i], NULL) == 0);
    CHECK(w[0].failures == 0 && w[1].failures == 0);
    perfvar_region_stats s = stats_of(h);
    CHECKF(s.count == 20000, "count %llu", (unsigned long long)s.count);
    CHECK(s.min_ns <= s.max_ns);
    CHECK(s.total_ns >= (double)s.count * s.min_ns * (1 - 1e-12));

    int o;
    CHECK(perfvar_region_register("other-thread", &o) == PERFVAR_OK);
    CHECK(perfvar_start(o) == PERFVAR_OK);
    pthread_t u;
    void *rc = NULL;
    CHECK(pthread_create(&u, NULL, stop_elsewhere, &o) == 0);
    CHECK(pthread_join(u, &rc) == 0);
    CHECK((int)(intptr_t)rc == PERFVAR_ERR_NOT_STARTED);
    CHECK(perfvar_stop(o) == PERFVAR_OK);
}

static void check_strerror(void)
{
    const int codes[] = {PERFVAR_OK,
                         PERFVAR_ERR_INVALID_ARG,
                         PERFVAR_ERR_UNKNOWN_HANDLE,
                         PERFVAR_ERR_NOT_STARTED,
                         PERFVAR_ERR_NESTING,
                         PERFVAR_ERR_TOO_MANY,
                         PERFVAR_ERR_NAME_TOO_LONG,
                         PERFVAR_ERR_NO_MEMORY,
                         PERFVAR_ERR_UNAVAILABLE,
                         PERFVAR_ERR_IO,
                         PERFVAR_ERR_CONFIG};
    enum { N = sizeof codes / sizeof codes[0] };
    const char *text[N];
    const char *unknown = perfvar_strerror(-11);
    CHECK(unknown && unknown[0]);
    for (int i = 0; i < N; i++) {
        CHECK(codes[i] == -i); /* stable values: they cross into Fortran */
        text[i] = perfvar_strerror(codes[i]);
        CHECKF(text[i] && text[i][0], "code %d", codes[i]);
        if (!text[i]) continue;
        CHECKF(strcmp(text[i], unknown) != 0, "code %d has the fallback text", codes[i]);
        for (int j = 0; j < i; j++)
            CHECKF(!text[j] || strcmp(text[i], text[j]) != 0, "codes %d and %d share \"%s\"", codes[i],
                   codes[j], text[i]);
    }
    const int others[] = {1, 42, -12, -100, INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        const char *t = perfvar_strerror(others[i]);
        CHECKF(t && t[0] && strcmp(t, unknown) == 0, "code %d", others[i]);
    }
}

/* Last: fills the region table. */
static void check_table_full(void)
{
    int h, last = -1, err = PERFVAR_OK, registered = 0;
    char name[32];
    for (int i = 0; i < PERFVAR_MAX_REGIONS + 10 && err == PERFVAR_OK; i++) {
        snprintf(name, sizeof name, "fill.%d", i);
        err = perfvar_region_register(name, &h);
        if (err == PERFVAR_OK) last = h, registered++;
    }
    CHECKF(err == PERFVAR_ERR_TOO_MANY, "after %d registrations: %d", registered, err);
    CHECK(last == PERFVAR_MAX_REGIONS - 1);
    /* Existing names are still found, and their handles still work. */
    CHECK(perfvar_region_register("fill.0", &h) == PERFVAR_OK);
    CHECK(perfvar_region_register("solver", &h) == PERFVAR_OK);
    CHECK(perfvar_start(last) == PERFVAR_OK);
    CHECK(perfvar_stop(last) == PERFVAR_OK);
    CHECK(perfvar_start(PERFVAR_MAX_REGIONS) == PERFVAR_ERR_UNKNOWN_HANDLE);
}

int main(void)
{
    check_register();
    check_unknown_handles();
    check_misuse();
    check_depth();
    check_stats();
    check_threads();
    check_strerror();
    check_table_full();
    return check_result();
}
