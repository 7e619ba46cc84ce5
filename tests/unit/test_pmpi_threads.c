/* test_pmpi_threads.c — which threads are traced (src/pmpi/threads.c) without MPI: a thread's
 * state is created once, on its first attach, with its own records file and the next index; the
 * walk sees every traced thread once, in index order, while others attach; a thread that cannot
 * be traced is counted per call and takes no index. */
#include "pmpi_fixture.h"
#include "threads.h"
#include "clock/clock.h"

#include <pthread.h>
#include <stdint.h>

#define NTHREADS 32
static pv_thread *first_of[NTHREADS], *second_of[NTHREADS];
static pthread_barrier_t all_here;

static void *attach_twice(void *arg)
{
    int i = (int)(intptr_t)arg;
    pthread_barrier_wait(&all_here); /* all attach at once */
    first_of[i] = pv_thread_attach();
    second_of[i] = pv_thread_attach();
    return NULL;
}

/* The walk's threads: their number; each pointer into seen[] (up to max); -1 if out of order. */
static int walk(pv_thread **seen, int max)
{
    int n = 0;
    for (pv_thread *t = pv_threads_head(); t; t = pv_threads_next(t)) {
        if (t->index != n) return -1;
        if (n < max) seen[n] = t;
        n++;
    }
    return n;
}

static int records_file_exists(int index)
{
    char path[400];
    snprintf(path, sizeof path, "%s/perfvar/records/rank-0.thread-%d.pvr", fixture_dir, index);
    return access(path, F_OK) == 0;
}

static void *attach_refused(void *arg)
{
    pv_thread **out = arg;
    for (int i = 0; i < 3; i++) out[i] = pv_thread_attach();
    return NULL;
}

static void *attach_once(void *arg)
{
    *(pv_thread **)arg = pv_thread_attach();
    return NULL;
}

/* Walks the list again and again while the main thread's peers attach: never a torn list. */
static volatile int walking;
static int walk_errors;
static void *walker(void *arg)
{
    (void)arg;
    while (walking) walk_errors += walk(NULL, 0) < 1;
    return NULL;
}

int main(void)
{
    fixture_open("threads");
    CHECK(pv_threads_head() == NULL);
    pv_thread *t0 = pv_thread_first(&fixture_rt);
    CHECK(t0 && t0->index == 0 && t0->rec && records_file_exists(0));
    CHECK(pv_thread_attach() == t0); /* the starting thread is attached already */
    CHECK(pv_threads_head() == t0 && pv_threads_next(t0) == NULL);

    pthread_t th[NTHREADS], w;
    pthread_barrier_init(&all_here, NULL, NTHREADS);
    walking = 1;
    pthread_create(&w, NULL, walker, NULL);
    for (int i = 0; i < NTHREADS; i++) pthread_create(&th[i], NULL, attach_twice, (void *)(intptr_t)i);
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    walking = 0;
    pthread_join(w, NULL);
    CHECK(walk_errors == 0);

    /* Created once per thread: the second attach is the first's state. */
    for (int i = 0; i < NTHREADS; i++)
        CHECKF(first_of[i] && second_of[i] == first_of[i], "thread %d: %p then %p", i,
               (void *)first_of[i], (void *)second_of[i]);
    /* The walk: thread 0 and each attached thread once, indices 0..NTHREADS, each with its file. */
    pv_thread *seen[NTHREADS + 8];
    int n = walk(seen, NTHREADS + 8);
    CHECKF(n == NTHREADS + 1, "walk saw %d threads (-1: out of order)", n);
    for (int i = 0; i < NTHREADS; i++) {
        int found = 0;
        for (int j = 0; j < n && j < NTHREADS + 8; j++) found += seen[j] == first_of[i];
        CHECKF(found == 1, "thread %d seen %d times", i, found);
    }
    for (int i = 0; i <= NTHREADS; i++)
        CHECKF(records_file_exists(i), "no records file for thread %d", i);
    CHECK(pv_threads_untraced_calls() == 0);

    /* A thread whose records file cannot be made: NULL each time, each call counted, no index. */
    char dir[sizeof fixture_rt.dir];
    memcpy(dir, fixture_rt.dir, sizeof dir);
    snprintf(fixture_rt.dir, sizeof fixture_rt.dir, "%s/no/such/dir", fixture_dir);
    pv_thread *refused[3] = {t0, t0, t0};
    pthread_t r;
    pthread_create(&r, NULL, attach_refused, refused);
    pthread_join(r, NULL);
    CHECK(!refused[0] && !refused[1] && !refused[2]);
    unsigned long long untraced = pv_threads_untraced_calls();
    CHECKF(untraced == 3, "%llu untraced calls", untraced);
    memcpy(fixture_rt.dir, dir, sizeof dir);
    pv_thread *late = NULL;
    pthread_create(&r, NULL, attach_once, &late);
    pthread_join(r, NULL);
    CHECK(late && late->index == NTHREADS + 1 && records_file_exists(NTHREADS + 1));
    CHECK(walk(NULL, 0) == NTHREADS + 2);

    uint64_t now = pv_now();
    for (pv_thread *t = pv_threads_head(); t; t = pv_threads_next(t)) pv_rec_close(t->rec, now);
    fixture_close();
    return check_result();
}
