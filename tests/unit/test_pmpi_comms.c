/* test_pmpi_comms.c — communicator ids (src/pmpi/comms.c) in a singleton MPI (PMPI_Init, no
 * mpiexec; only PMPI_* calls, so the layer this test links stays off): MPI_COMM_WORLD is 0; any
 * other intra-communicator gets the next id on its first lookup, with one definitions line of its
 * members' world ranks, and the same id after; a freed communicator is forgotten (a new one on a
 * reused handle gets a new id); MPI_COMM_NULL is not recorded; threads meeting new communicators at
 * once get distinct, dense ids. */
#include "pmpi_fixture.h"
#include "comms.h"

#include <pthread.h>

static int ncomm_lines(void) { return fixture_defs("comm", NULL, NULL, 0); }

/* The comm line of id: "comm <id> <n> <ranks>"; 1 if there is exactly one and it reads members. */
static int comm_line_is(int id, const char *members)
{
    static int ids[1024];
    static char lines[1024][512];
    char want[512];
    int n = fixture_defs("comm", ids, lines, 1024), found = 0;
    snprintf(want, sizeof want, "comm\t%d\t%s", id, members);
    for (int i = 0; i < n && i < 1024; i++) found += ids[i] == id && !strcmp(lines[i], want);
    return found == 1 && n <= 1024;
}

#define NTHREADS 4
#define PER_THREAD 100
static MPI_Comm comms[NTHREADS][PER_THREAD];
static uint32_t ids[NTHREADS][PER_THREAD];
static pthread_barrier_t all_here;

static void *look_up(void *arg)
{
    int me = (int)(intptr_t)arg, size, rank;
    pthread_barrier_wait(&all_here);
    for (int j = 0; j < PER_THREAD; j++)
        if (!pv_comm_lookup(comms[me][j], &ids[me][j], &size, &rank)) ids[me][j] = UINT32_MAX;
    return NULL;
}

static void concurrent(int first_id)
{
    for (int i = 0; i < NTHREADS; i++)
        for (int j = 0; j < PER_THREAD; j++) PMPI_Comm_dup(MPI_COMM_SELF, &comms[i][j]);
    int before = ncomm_lines();
    pthread_t th[NTHREADS];
    pthread_barrier_init(&all_here, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++) pthread_create(&th[i], NULL, look_up, (void *)(intptr_t)i);
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    unsigned char seen[NTHREADS * PER_THREAD] = {0};
    int dense = 1;
    for (int i = 0; i < NTHREADS; i++)
        for (int j = 0; j < PER_THREAD; j++) {
            int k = (int)ids[i][j] - first_id;
            dense &= k >= 0 && k < NTHREADS * PER_THREAD && !seen[k]++;
        }
    CHECKF(dense, "ids not %d..%d once each", first_id, first_id + NTHREADS * PER_THREAD - 1);
    CHECK(ncomm_lines() == before + NTHREADS * PER_THREAD);
    for (int i = 0; i < NTHREADS; i++)
        for (int j = 0; j < PER_THREAD; j++) PMPI_Comm_free(&comms[i][j]);
}

int main(int argc, char **argv)
{
    int provided = MPI_THREAD_SINGLE;
    if (PMPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        SKIP("no singleton MPI");
    fixture_open("comms");
    int world_rank, world_size;
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    pv_comms_init(world_rank, world_size);

    uint32_t id = 99;
    int size = -1, rank = -1;
    CHECK(pv_comm_lookup(MPI_COMM_WORLD, &id, &size, &rank) == 1 && id == 0 && size == 1 && rank == 0);
    CHECK(ncomm_lines() == 0); /* MPI_COMM_WORLD needs no line */
    CHECK(pv_comm_lookup(MPI_COMM_NULL, &id, &size, &rank) == 0);

    /* MPI_COMM_SELF: the next id, one line, the same id after. */
    CHECK(pv_comm_lookup(MPI_COMM_SELF, &id, &size, &rank) == 1 && id == 1 && size == 1 && rank == 0);
    CHECK(comm_line_is(1, "1\t0"));
    for (int i = 0; i < 3; i++) CHECK(pv_comm_lookup(MPI_COMM_SELF, &id, &size, &rank) == 1 && id == 1);
    CHECK(ncomm_lines() == 1);

    /* A duplicate of MPI_COMM_WORLD is another communicator. */
    MPI_Comm dup;
    PMPI_Comm_dup(MPI_COMM_WORLD, &dup);
    CHECK(pv_comm_lookup(dup, &id, &size, &rank) == 1 && id == 2 && comm_line_is(2, "1\t0"));
    /* Freed, it is forgotten: a new communicator (perhaps on the same handle) gets a new id. */
    PMPI_Comm_free(&dup);
    PMPI_Comm_dup(MPI_COMM_WORLD, &dup);
    CHECK(pv_comm_lookup(dup, &id, &size, &rank) == 1 && id == 3 && ncomm_lines() == 3);
    PMPI_Comm_free(&dup);

    if (provided == MPI_THREAD_MULTIPLE) concurrent(4);
    else printf("MPI_THREAD_MULTIPLE not provided: concurrent lookups not tested\n");

    fixture_close();
    PMPI_Finalize();
    return check_result();
}
