/* test_pmpi_sites.c — call sites (src/pmpi/sites.c) without MPI: a site id is given once per
 * (function, return address), whichever thread asks first and however many ask at once, with one
 * definitions line written before it is returned; the thread's cache answers the same id; user
 * timer sites are distinct from MPI sites and start from stop; at call-path depth 2 one return
 * address reached from two callers is two sites. */
#include "pmpi_fixture.h"
#include "sites.h"

#include <pthread.h>
#include <stdint.h>

/* Return addresses: code addresses of this program (their labels name it), spaced apart. */
int main(void);
#define RA(i) ((void *)((uintptr_t)&main + 16u * (unsigned)(i)))

static pv_thread *thread_new(int index)
{
    pv_thread *t = calloc(1, sizeof *t);
    if (!t) exit(1);
    t->index = index;
    t->callpath = fixture_rt.cfg.callpath; /* as pv_thread_attach copies it */
    return t;
}

static int nsite_lines(void) { return fixture_defs("site", NULL, NULL, 0); }

/* The site line of id: region and user handle; 0, or -1 when there is not exactly one. */
static int site_line(int id, int *region, int *handle, char *name, size_t len)
{
    static int ids[4096];
    static char lines[4096][512];
    int n = fixture_defs("site", ids, lines, 4096), found = -1;
    for (int i = 0; i < n && i < 4096; i++) {
        if (ids[i] != id) continue;
        if (found >= 0) return -1;
        found = i;
    }
    if (found < 0) return -1;
    char nm[512];
    if (sscanf(lines[found], "site\t%*d\t%d\t%d\t%511[^\t]", region, handle, nm) != 3) return -1;
    snprintf(name, len, "%s", nm);
    return 0;
}

static void depth1_once_and_cached(void)
{
    pv_thread *t = thread_new(0), *u = thread_new(1);
    int before = nsite_lines();
    int a = pv_site_id(t, t->site_cache, 0, RA(1));
    CHECK(a >= 0);
    CHECK(nsite_lines() == before + 1);
    /* The thread's slot answers it now, with no further definition. */
    pv_site_slot *slot = pv_site_slot_of(t->site_cache, 0, RA(1));
    CHECK(slot->ra == (uintptr_t)RA(1) && slot->fn == 0 && slot->id == a && slot->left > 0);
    uint32_t left = slot->left;
    for (int i = 0; i < 1000; i++) CHECK(pv_site_id(t, t->site_cache, 0, RA(1)) == a);
    CHECK(slot->left == left - 1000); /* served from the slot, not the miss path (which refills) */
    /* An evicted slot: the thread's own map answers the same id. */
    memset(slot, 0, sizeof *slot);
    CHECK(pv_site_id(t, t->site_cache, 0, RA(1)) == a);
    CHECK(slot->id == a && slot->left > 0);
    /* Another thread: the shared map's id, not a second definition. */
    CHECK(pv_site_id(u, u->site_cache, 0, RA(1)) == a);
    CHECK(nsite_lines() == before + 1);
    /* Another address, another function: other sites. */
    int b = pv_site_id(t, t->site_cache, 0, RA(2)), c = pv_site_id(t, t->site_cache, 1, RA(1));
    CHECK(b >= 0 && c >= 0 && b != a && c != a && b != c);
    CHECK(pv_site_id(u, u->site_cache, 1, RA(1)) == c);
    CHECK(nsite_lines() == before + 3);
    /* Each definition as its id says: region, no user handle, named by the function. */
    int region = -9, handle = -9;
    char name[512];
    CHECK(site_line(c, &region, &handle, name, sizeof name) == 0);
    CHECK(region == 1 && handle == -1);
    CHECKF(!strncmp(name, pv_fn_info[1].name, strlen(pv_fn_info[1].name)) &&
               name[strlen(pv_fn_info[1].name)] == '@', "name %s", name);
    char label[512];
    CHECK(pv_site_label(c, label, sizeof label) == 0 && strstr(label, "pmpi_sites") != NULL);
    CHECK(pv_site_label(1 << 20, label, sizeof label) == -1);
    free(t), free(u);
}

static void user_sites_distinct(void)
{
    pv_thread *t = thread_new(0), *u = thread_new(1);
    int mpi = pv_site_id(t, t->site_cache, 0, RA(5));
    int start = pv_site_user(t, 3, 0, "solve", RA(5)), stop = pv_site_user(t, 3, 1, "solve", RA(5));
    int other = pv_site_user(t, 4, 0, "halo", RA(5));
    CHECK(start >= 0 && stop >= 0 && other >= 0);
    CHECK(start != stop && start != mpi && stop != mpi && other != start && other != stop && other != mpi);
    int before = nsite_lines();
    CHECK(pv_site_user(t, 3, 0, "solve", RA(5)) == start);
    CHECK(pv_site_user(u, 3, 1, "solve", RA(5)) == stop);
    CHECK(nsite_lines() == before);
    int region = 0, handle = 0;
    char name[512];
    CHECK(site_line(start, &region, &handle, name, sizeof name) == 0);
    CHECK(region == -1 && handle == 3 && !strncmp(name, "perfvar_start(solve)@", 21));
    CHECK(site_line(stop, &region, &handle, name, sizeof name) == 0);
    CHECK(region == -2 && handle == 3 && !strncmp(name, "perfvar_stop(solve)@", 20));
    /* '@' and ';' separate the parts of a segment key: never in a region's name. */
    int odd = pv_site_user(t, 5, 0, "a@b;c", RA(5));
    CHECK(site_line(odd, &region, &handle, name, sizeof name) == 0);
    CHECK(!strncmp(name, "perfvar_start(a_b_c)@", 21));
    free(t), free(u);
}

/* ---- many threads at once: each (function, address) is defined once, all agree on its id ---- */
#define NTHREADS 4
#define NKEYS 4000
#define MAXLINES 16384
static int seen[NTHREADS][NKEYS];
static pthread_barrier_t all_here;

static void *ask_all(void *arg)
{
    int me = (int)(intptr_t)arg;
    pv_thread *t = thread_new(me);
    pthread_barrier_wait(&all_here);
    /* All in the same order, so they meet on each new site at about the same time. */
    for (int k = 0; k < NKEYS; k++) seen[me][k] = pv_site_id(t, t->site_cache, 2 + k % 3, RA(100 + k));
    free(t);
    return NULL;
}

static void concurrent_once(void)
{
    int before = nsite_lines();
    pthread_t th[NTHREADS];
    pthread_barrier_init(&all_here, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++) pthread_create(&th[i], NULL, ask_all, (void *)(intptr_t)i);
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    int agree = 1;
    for (int k = 0; k < NKEYS; k++)
        for (int i = 1; i < NTHREADS; i++) agree &= seen[i][k] == seen[0][k] && seen[0][k] >= 0;
    CHECK(agree);
    CHECKF(nsite_lines() == before + NKEYS, "%d lines for %d sites", nsite_lines() - before, NKEYS);
    /* Ids are dense, from 0, each defined once. */
    static int ids[MAXLINES];
    static unsigned char count[MAXLINES];
    int n = fixture_defs("site", ids, NULL, MAXLINES), dense = n > 0 && n <= MAXLINES;
    for (int i = 0; dense && i < n; i++) dense = ids[i] >= 0 && ids[i] < n && !count[ids[i]]++;
    CHECKF(dense, "%d site lines, ids not 0..n-1 once each", n);
}

/* ---- call paths (depth 2): a site is its return address and its caller's ---- */
static pv_thread *path_thread;
static volatile int sink;

__attribute__((noinline)) static int mpi_call(void)
{
    int id = pv_site_id(path_thread, path_thread->site_cache, 0, __builtin_return_address(0));
    sink = id; /* no tail call: this frame stays between the unwinder and helper */
    return id;
}
__attribute__((noinline)) static int helper(void)
{
    int id = mpi_call(); /* the one return address both kernels share */
    sink = id;
    return id;
}
__attribute__((noinline)) static int kernel_a(void)
{
    int id = helper();
    sink = id;
    return id;
}
__attribute__((noinline)) static int kernel_b(void) /* not kernel_a's code, or the two are folded */
{
    int id = helper();
    sink = id + 1;
    return id;
}

static void depth2_paths(void)
{
    path_thread = thread_new(0);
    path_thread->callpath = 2;
    int a = kernel_a(), b = kernel_b();
    CHECK(a >= 0 && b >= 0 && a != b);
    /* Learning, then checks: the same path keeps its id, call after call, from either kernel. */
    int same = 1;
    for (int i = 0; i < 300; i++) same &= kernel_a() == a && kernel_b() == b;
    CHECK(same);
    char la[512], lb[512];
    CHECK(pv_site_label(a, la, sizeof la) == 0 && pv_site_label(b, lb, sizeof lb) == 0);
    CHECKF(strchr(la, '<') && strchr(lb, '<') && strcmp(la, lb), "labels %s / %s", la, lb);
    /* At depth 1 both kernels' calls are one site. */
    pv_thread *flat = thread_new(1);
    path_thread = flat;
    CHECK(kernel_a() == kernel_b());
    free(flat);
}

int main(void)
{
    fixture_open("sites");
    depth1_once_and_cached();
    user_sites_distinct();
    concurrent_once();
    depth2_paths();
    fixture_close();
    return check_result();
}
