/* test_comm_fork.c — the forked communicator (src/recover/comm_fork.h) with 4 ranks: gatherv of
 * unequal and of socket-buffer-exceeding payloads, scatterv back, allreduce min/max; the OTF2
 * callbacks called directly (roots other than 0, which OTF2 itself never uses, local communicators,
 * bad types); a child that exits early and a rank 0 that quits early give errors, not hangs; and a
 * real OTF2 archive written by the 4 ranks, read back by otf2-print when it is on PATH. Bounded:
 * 9 ranks with at most 2 children working between collectives, counted in shared memory, and a
 * child that dies holding its slot, which must not starve the ranks of the same slot.
 *
 * Each scenario forks its own ranks; a child reports its checks by its exit status, which rank 0's
 * pv_fork_comm_finish counts. alarm() turns a hang into a failure (alarms are not inherited by
 * fork, so every rank sets its own). */
#define _GNU_SOURCE
#include "check.h"
#include "recover/comm_fork.h"

#include <dlfcn.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define N 4

/* The callbacks comm_fork installs, caught on their way to OTF2 (this definition wins over
 * libotf2's for the executable): the test calls them directly, and a NULL archive stops here. */
static const OTF2_CollectiveCallbacks *cb;
static void *cb_data;
static OTF2_CollectiveContext *cb_global, *cb_local;

OTF2_ErrorCode OTF2_Archive_SetCollectiveCallbacks(OTF2_Archive *a, const OTF2_CollectiveCallbacks *c,
                                                   void *data, OTF2_CollectiveContext *global,
                                                   OTF2_CollectiveContext *local)
{
    cb = c, cb_data = data, cb_global = global, cb_local = local;
    if (!a) return OTF2_SUCCESS;
    OTF2_ErrorCode (*real)(OTF2_Archive *, const OTF2_CollectiveCallbacks *, void *,
                           OTF2_CollectiveContext *, OTF2_CollectiveContext *);
    *(void **)&real = dlsym(RTLD_NEXT, "OTF2_Archive_SetCollectiveCallbacks");
    return real ? real(a, c, data, global, local) : OTF2_ERROR_INVALID;
}

static int start(pv_trace_comm *c)
{
    int rank = pv_fork_comm_start(N, c);
    CHECK(rank >= 0);
    if (rank >= 0) alarm(5);
    CHECK(rank < 0 || (c->rank == rank && c->size == N));
    return rank;
}

/* Children leave here with their verdict; rank 0 checks theirs (`expect` children failed). */
static void end_ranks(pv_trace_comm *c, int expect)
{
    int failed = pv_fork_comm_finish(c, check_failures != 0);
    CHECKF(failed == expect, "%d child rank(s) failed, %d expected", failed, expect);
    alarm(0);
}

static void test_collectives(void)
{
    pv_trace_comm c;
    int rank = start(&c);
    if (rank < 0) return;

    /* gatherv: rank r gives 3r+1 bytes of 'a'+r */
    char mine[16], back[16] = {0};
    int len = 3 * rank + 1;
    memset(mine, 'a' + rank, (size_t)len);
    char *all = (char *)1;
    int *counts = (int *)1;
    CHECK(c.gatherv(c.ctx, mine, len, &all, &counts) == 0);
    if (rank == 0) {
        char *p = all;
        for (int r = 0; r < N; r++) {
            CHECKF(counts[r] == 3 * r + 1, "counts[%d] = %d", r, counts[r]);
            for (int i = 0; i < counts[r]; i++, p++) {
                CHECK(*p == 'a' + r);
                *p = (char)('A' + r);
            }
        }
    } else {
        CHECK(all == NULL && counts == NULL);
    }
    /* scatterv back, changed on the way: each rank gets its own part */
    CHECK(c.scatterv(c.ctx, all, counts, back, len) == 0);
    for (int i = 0; i < len; i++) CHECK(back[i] == 'A' + rank);
    free(all), free(counts);

    /* far more than a socket buffer holds: the sends and reads come in pieces */
    int big = (1 << 20) + rank;
    unsigned char *b = malloc((size_t)big);
    for (int i = 0; i < big; i++) b[i] = (unsigned char)(i * 7 + rank);
    CHECK(c.gatherv(c.ctx, b, big, &all, &counts) == 0);
    if (rank == 0 && all) {
        const unsigned char *p = (const unsigned char *)all;
        int bad = 0;
        for (int r = 0; r < N; r++) {
            CHECK(counts[r] == (1 << 20) + r);
            for (int i = 0; i < counts[r]; i++) bad += *p++ != (unsigned char)(i * 7 + r);
        }
        CHECKF(bad == 0, "%d bytes differ", bad);
    }
    free(all), free(counts), free(b);

    uint64_t v[2] = {10 * (uint64_t)rank + 5, UINT64_MAX - (uint64_t)rank};
    CHECK(c.allreduce_u64(c.ctx, v, 2, 0) == 0);
    CHECK(v[0] == 5 && v[1] == UINT64_MAX - (N - 1));
    v[0] = 10 * (uint64_t)rank + 5, v[1] = UINT64_MAX - (uint64_t)rank;
    CHECK(c.allreduce_u64(c.ctx, v, 2, 1) == 0);
    CHECK(v[0] == 10 * (N - 1) + 5 && v[1] == UINT64_MAX);

    /* rank 0 without data (as pv_trace_close after a failed unification): every rank fails it */
    CHECK(c.scatterv(c.ctx, NULL, NULL, back, len) == -1);
    /* a failure mark leaves the links in step */
    v[0] = (uint64_t)rank;
    CHECK(c.allreduce_u64(c.ctx, v, 1, 1) == 0 && v[0] == N - 1);
    end_ranks(&c, 0);
}

#define OK(call) CHECK((call) == OTF2_CALLBACK_SUCCESS)

static void test_otf2_callbacks(void)
{
    pv_trace_comm c;
    int rank = start(&c);
    if (rank < 0) return;
    CHECK(c.set_otf2_collectives(c.ctx, NULL) == 0);
    CHECK(cb && cb_global && !cb_local); /* no local communicator, as comm_pmpi.c */
    if (!cb) exit(1);
    CHECK(cb->otf2_release && cb->otf2_create_local_comm && cb->otf2_free_local_comm);
    void *u = cb_data;
    OTF2_CollectiveContext *g = cb_global;
    uint32_t size = 0, rk = 99;
    OK(cb->otf2_get_size(u, g, &size));
    OK(cb->otf2_get_rank(u, g, &rk));
    CHECK(size == N && rk == (uint32_t)rank);
    OK(cb->otf2_barrier(u, g));

    const uint32_t roots[] = {0, 2, 3};
    for (int k = 0; k < 3; k++) {
        uint32_t root = roots[k];
        int me = (uint32_t)rank == root;
        double d[3] = {0};
        if (me) d[0] = 1.5, d[1] = -2, d[2] = 1e300;
        OK(cb->otf2_bcast(u, g, d, 3, OTF2_TYPE_DOUBLE, root));
        CHECK(d[0] == 1.5 && d[1] == -2 && d[2] == 1e300);

        int32_t in2[2] = {rank, -rank}, out2[2 * N] = {0};
        OK(cb->otf2_gather(u, g, in2, out2, 2, OTF2_TYPE_INT32, root));
        for (int r = 0; me && r < N; r++) CHECK(out2[2 * r] == r && out2[2 * r + 1] == -r);

        uint64_t inv[N], outv[N * (N + 1) / 2] = {0};
        uint32_t nout[N];
        for (int r = 0; r < N; r++) nout[r] = (uint32_t)r + 1, inv[r] = (uint64_t)(rank * 100 + r);
        OK(cb->otf2_gatherv(u, g, inv, (uint32_t)rank + 1, outv, me ? nout : NULL, OTF2_TYPE_UINT64,
                            root));
        for (int r = 0, j = 0; me && r < N; r++)
            for (int i = 0; i <= r; i++, j++) CHECK(outv[j] == (uint64_t)r * 100 + (uint64_t)i);

        int8_t sin[2 * N], sout[2] = {0};
        for (int i = 0; i < 2 * N; i++) sin[i] = (int8_t)(me ? i - 3 : 0);
        OK(cb->otf2_scatter(u, g, me ? sin : NULL, sout, 2, OTF2_TYPE_INT8, root));
        CHECK(sout[0] == 2 * rank - 3 && sout[1] == 2 * rank - 2);

        float fin[N * (N + 3) / 2 + 1], fout[N + 2] = {0}; /* rank r gets r+2 floats r + i/4 */
        uint32_t nin[N];
        for (int r = 0, j = 0; r < N; r++) {
            nin[r] = (uint32_t)r + 2;
            for (int i = 0; i < r + 2; i++) fin[j++] = (float)r + (float)i / 4;
        }
        OK(cb->otf2_scatterv(u, g, me ? fin : NULL, me ? nin : NULL, fout, (uint32_t)rank + 2,
                             OTF2_TYPE_FLOAT, root));
        for (int i = 0; i < rank + 2; i++) CHECK(fout[i] == (float)rank + (float)i / 4);
    }
    /* the same error on every rank, and no message left behind */
    char s[4] = {0};
    CHECK(cb->otf2_bcast(u, g, s, 4, OTF2_TYPE_STRING, 0) == OTF2_CALLBACK_ERROR);
    CHECK(cb->otf2_bcast(u, g, s, 4, OTF2_TYPE_UINT8, N) == OTF2_CALLBACK_ERROR);

    /* local communicators: one file is the world, one rank per file copies; others unsupported */
    OTF2_CollectiveContext *l = NULL;
    OK(cb->otf2_create_local_comm(u, &l, g, (uint32_t)rank, N, (uint32_t)rank, N, 0, 1));
    CHECK(l == g);
    OK(cb->otf2_free_local_comm(u, l));
    OK(cb->otf2_create_local_comm(u, &l, g, (uint32_t)rank, N, 0, 1, (uint32_t)rank, N));
    if (l) {
        OK(cb->otf2_get_size(u, l, &size));
        OK(cb->otf2_get_rank(u, l, &rk));
        CHECK(size == 1 && rk == 0);
        int16_t x = (int16_t)rank, y = -1;
        OK(cb->otf2_gather(u, l, &x, &y, 1, OTF2_TYPE_INT16, 0));
        CHECK(y == rank);
        OK(cb->otf2_barrier(u, l));
        OK(cb->otf2_free_local_comm(u, l));
    }
    CHECK(cb->otf2_create_local_comm(u, &l, g, (uint32_t)rank, N, (uint32_t)rank % 2, 2,
                                     (uint32_t)rank / 2, 2) == OTF2_CALLBACK_ERROR);
    OK(cb->otf2_barrier(u, g));
    cb->otf2_release(u, g, NULL);
    end_ranks(&c, 0);
}

/* Rank 2 exits at once (status 3: counted as failed): rank 0 reads EOF on its link and fails the
 * collective for every rank. */
static void test_child_dies(void)
{
    pv_trace_comm c;
    int rank = start(&c);
    if (rank < 0) return;
    if (rank == 2) pv_fork_comm_finish(&c, 3);
    char one = 'x', *all = NULL;
    int *counts = NULL;
    CHECK(c.gatherv(c.ctx, &one, 1, &all, &counts) == -1);
    CHECK(all == NULL && counts == NULL);
    uint64_t v = 1;
    CHECK(c.allreduce_u64(c.ctx, &v, 1, 0) == -1); /* the dead link stays failed */
    end_ranks(&c, 1);
}

/* Bounded comms: NB ranks, at most BUSY children working at once. */
#define NB 9
#define BUSY 2

/* Counted in memory the ranks share: children working now, and the most seen at once. */
typedef struct busy_count {
    int now, most;
} busy_count;

/* A child's work between two collectives: long enough (5 ms) that children let run together
 * would overlap. */
static void work(busy_count *b)
{
    int now = __atomic_add_fetch(&b->now, 1, __ATOMIC_SEQ_CST);
    int most = __atomic_load_n(&b->most, __ATOMIC_SEQ_CST);
    while (now > most && !__atomic_compare_exchange_n(&b->most, &most, now, 0, __ATOMIC_SEQ_CST,
                                                      __ATOMIC_SEQ_CST)) {
    }
    usleep(5000);
    __atomic_sub_fetch(&b->now, 1, __ATOMIC_SEQ_CST);
}

static void test_bounded(void)
{
    busy_count *b =
        mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(b != MAP_FAILED);
    if (b == MAP_FAILED) return;
    *b = (busy_count){0, 0};
    pv_trace_comm c;
    int rank = pv_fork_comm_start_bounded(NB, BUSY, &c);
    CHECK(rank >= 0);
    if (rank < 0) return;
    alarm(10);
    for (int round = 0; round < 3; round++) {
        if (rank) work(b);
        uint64_t v = (uint64_t)rank + (uint64_t)round;
        CHECK(c.allreduce_u64(c.ctx, &v, 1, 1) == 0);
        CHECKF(v == NB - 1 + (uint64_t)round, "round %d: max %llu", round, (unsigned long long)v);
        char one = (char)('a' + rank), *all = NULL;
        int *counts = NULL;
        CHECK(c.gatherv(c.ctx, &one, 1, &all, &counts) == 0);
        for (int r = 0; rank == 0 && all && r < NB; r++) CHECK(counts[r] == 1 && all[r] == 'a' + r);
        free(all), free(counts);
    }
    if (rank == 0) {
        CHECKF(b->most >= 1 && b->most <= BUSY, "%d children worked at once, at most %d allowed",
               b->most, BUSY);
    }
    end_ranks(&c, 0);
    munmap(b, sizeof *b);
}

/* Rank 1 dies in its slot (slot 0, which ranks 3, 5, 7 share): the kernel frees the slot, so they
 * reach the collective and all see the failure instead of waiting for ever. */
static void test_bounded_child_dies(void)
{
    pv_trace_comm c;
    int rank = pv_fork_comm_start_bounded(NB, BUSY, &c);
    CHECK(rank >= 0);
    if (rank < 0) return;
    alarm(10);
    if (rank == 1) _exit(0);
    uint64_t v = 1;
    CHECK(c.allreduce_u64(c.ctx, &v, 1, 0) == -1);
    CHECK(c.allreduce_u64(c.ctx, &v, 1, 0) == -1);
    end_ranks(&c, 0);
}

/* Rank 0 finishes at once: the children waiting on it read EOF, even while rank 3, which is busy
 * (it waits for ranks 1 and 2 to exit: EOF on a pipe), has not ended. */
static void test_root_quits(void)
{
    int busy[2];
    CHECK(pipe(busy) == 0);
    pv_trace_comm c;
    int rank = start(&c);
    if (rank < 0) return;
    close(busy[rank == N - 1]);
    if (rank == 0) {
        close(busy[1]);
        end_ranks(&c, 0);
        return;
    }
    char byte;
    while (rank == N - 1 && read(busy[0], &byte, 1) != 0) continue;
    char one = 'x', *all = NULL;
    int *counts = NULL;
    CHECK(c.gatherv(c.ctx, &one, 1, &all, &counts) == -1);
    uint64_t v = 1;
    CHECK(c.allreduce_u64(c.ctx, &v, 1, 0) == -1);
    end_ranks(&c, 0);
}

static OTF2_FlushType pre_flush(void *u, OTF2_FileType t, OTF2_LocationRef l, void *d, bool final)
{
    (void)u, (void)t, (void)l, (void)d, (void)final;
    return OTF2_FLUSH;
}
static OTF2_TimeStamp post_flush(void *u, OTF2_FileType t, OTF2_LocationRef l)
{
    (void)u, (void)t, (void)l;
    return 0;
}
static const OTF2_FlushCallbacks flush_callbacks = {pre_flush, post_flush};

/* Rank 0's global definitions: regions main (0) and work (1), one process and thread per rank. */
static void write_global_defs(OTF2_Archive *a, const int *nevents, uint64_t first, uint64_t last)
{
    OTF2_GlobalDefWriter *w = OTF2_Archive_GetGlobalDefWriter(a);
    CHECK(w != NULL);
    if (!w) return;
    const char *str[] = {"", "main", "work", "node", "rank 0", "rank 1", "rank 2", "rank 3"};
    for (uint32_t i = 0; i < 8; i++) CHECK(OTF2_GlobalDefWriter_WriteString(w, i, str[i]) == OTF2_SUCCESS);
    CHECK(OTF2_GlobalDefWriter_WriteClockProperties(w, 1000000000, first, last - first + 1,
                                                     OTF2_UNDEFINED_TIMESTAMP) == OTF2_SUCCESS);
    for (uint32_t i = 0; i < 2; i++)
        CHECK(OTF2_GlobalDefWriter_WriteRegion(w, i, 1 + i, 1 + i, 0, OTF2_REGION_ROLE_FUNCTION,
                                               OTF2_PARADIGM_USER, OTF2_REGION_FLAG_NONE, 0, 0, 0) ==
              OTF2_SUCCESS);
    CHECK(OTF2_GlobalDefWriter_WriteSystemTreeNode(w, 0, 3, 3, OTF2_UNDEFINED_SYSTEM_TREE_NODE) ==
          OTF2_SUCCESS);
    for (uint32_t r = 0; r < N; r++) {
        CHECK(OTF2_GlobalDefWriter_WriteLocationGroup(w, r, 4 + r, OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                                      OTF2_UNDEFINED_LOCATION_GROUP) == OTF2_SUCCESS);
        CHECK(OTF2_GlobalDefWriter_WriteLocation(w, r, 4 + r, OTF2_LOCATION_TYPE_CPU_THREAD,
                                                 (uint64_t)nevents[r], r) == OTF2_SUCCESS);
    }
}

/* Each rank one location: main around rank+1 calls of work. OTF2 itself runs its collectives
 * (archive creation, file opening, closing) through comm_fork's callbacks. */
static void test_archive(const char *dir)
{
    pv_trace_comm c;
    int rank = start(&c);
    if (rank < 0) return;
    OTF2_Archive *a = OTF2_Archive_Open(dir, "traces", OTF2_FILEMODE_WRITE, 1 << 20, 4 << 20,
                                        OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    CHECK(a != NULL);
    if (!a) exit(1);
    CHECK(OTF2_Archive_SetFlushCallbacks(a, &flush_callbacks, NULL) == OTF2_SUCCESS);
    CHECK(c.set_otf2_collectives(c.ctx, a) == 0);
    CHECK(OTF2_Archive_OpenEvtFiles(a) == OTF2_SUCCESS);
    OTF2_EvtWriter *w = OTF2_Archive_GetEvtWriter(a, (OTF2_LocationRef)rank);
    CHECK(w != NULL);
    uint64_t t = 1000 + 10 * (uint64_t)rank, first = t;
    CHECK(OTF2_EvtWriter_Enter(w, NULL, t++, 0) == OTF2_SUCCESS);
    for (int i = 0; i <= rank; i++) {
        CHECK(OTF2_EvtWriter_Enter(w, NULL, t++, 1) == OTF2_SUCCESS);
        CHECK(OTF2_EvtWriter_Leave(w, NULL, t++, 1) == OTF2_SUCCESS);
    }
    CHECK(OTF2_EvtWriter_Leave(w, NULL, t, 0) == OTF2_SUCCESS);
    uint64_t nev = 0;
    OTF2_EvtWriter_GetNumberOfEvents(w, &nev);
    CHECK(nev == 2 * (uint64_t)rank + 4);
    CHECK(OTF2_Archive_CloseEvtWriter(a, w) == OTF2_SUCCESS);
    CHECK(OTF2_Archive_CloseEvtFiles(a) == OTF2_SUCCESS);

    /* the time range and the event counts, the way pv_trace_close collects them */
    uint64_t range[2] = {first, UINT64_MAX - t};
    CHECK(c.allreduce_u64(c.ctx, range, 2, 0) == 0);
    int n = (int)nev, *counts = NULL;
    char *all = NULL;
    CHECK(c.gatherv(c.ctx, &n, sizeof n, &all, &counts) == 0);
    if (rank == 0 && all) write_global_defs(a, (const int *)all, range[0], UINT64_MAX - range[1]);
    free(all), free(counts);

    CHECK(OTF2_Archive_OpenDefFiles(a) == OTF2_SUCCESS);
    OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(a, (OTF2_LocationRef)rank);
    CHECK(dw != NULL);
    CHECK(OTF2_Archive_CloseDefWriter(a, dw) == OTF2_SUCCESS);
    CHECK(OTF2_Archive_CloseDefFiles(a) == OTF2_SUCCESS);
    CHECK(OTF2_Archive_Close(a) == OTF2_SUCCESS);
    end_ranks(&c, 0);
}

static void check_with_otf2_print(const char *dir)
{
    if (system("command -v otf2-print >/dev/null 2>&1") != 0) {
        printf("otf2-print not on PATH: the archive is not read back\n");
        return;
    }
    char cmd[512], line[512];
    snprintf(cmd, sizeof cmd, "otf2-print '%s/traces.otf2' 2>&1", dir);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    if (!p) return;
    int enter[N] = {0}, leave = 0, loc;
    while (fgets(line, sizeof line, p)) {
        if (sscanf(line, "ENTER %d", &loc) == 1 && loc >= 0 && loc < N) enter[loc]++;
        leave += strncmp(line, "LEAVE ", 6) == 0;
        if (strstr(line, "rror")) fprintf(stderr, "otf2-print: %s", line);
    }
    int st = pclose(p);
    CHECKF(st == 0, "otf2-print exit status %d", st);
    for (int r = 0; r < N; r++) CHECKF(enter[r] == r + 2, "location %d: %d ENTER", r, enter[r]);
    CHECKF(leave == 2 + 3 + 4 + 5, "%d LEAVE", leave);
}

static int rm_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb, (void)type, (void)ftw;
    return remove(path);
}

int main(void)
{
    test_collectives();
    test_otf2_callbacks();
    test_child_dies();
    test_root_quits();
    test_bounded();
    test_bounded_child_dies();

    char dir[] = "/tmp/perfvar-comm-fork-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    test_archive(dir);
    check_with_otf2_print(dir);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return check_result();
}
