/* comm_pmpi.c — the trace writer's collective operations, over PMPI on MPI_COMM_WORLD
 * (comm_pmpi.h). PMPI only: perfvar's own communication must never appear as the application's. */
#include "comm_pmpi.h"

#include <mpi.h>

#define OTF2_MPI_USE_PMPI
#include <otf2/OTF2_MPI_Collectives.h>
#include <stdlib.h>

static int gatherv(void *ctx, const void *buf, int nbytes, char **all, int **counts)
{
    const pv_trace_comm *comm = ctx;
    int rank = comm->rank, size = comm->size;
    int *cnt = NULL, *displ = NULL;
    char *recv = NULL;
    *all = NULL, *counts = NULL;
    if (rank == 0) {
        cnt = malloc((size_t)size * sizeof *cnt);
        displ = malloc((size_t)size * sizeof *displ);
    }
    if (PMPI_Gather(&nbytes, 1, MPI_INT, cnt, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS) return -1;
    if (rank == 0) {
        long total = 0;
        for (int r = 0; r < size; r++) displ[r] = (int)total, total += cnt[r];
        recv = malloc((size_t)total + 1);
    }
    int rc = PMPI_Gatherv(buf, nbytes, MPI_BYTE, recv, cnt, displ, MPI_BYTE, 0, MPI_COMM_WORLD);
    free(displ);
    if (rank == 0) *all = recv, *counts = cnt;
    return rc == MPI_SUCCESS ? 0 : -1;
}

static int scatterv(void *ctx, const char *all, const int *counts, void *buf, int nbytes)
{
    const pv_trace_comm *comm = ctx;
    int *displ = NULL;
    if (comm->rank == 0) {
        displ = malloc((size_t)comm->size * sizeof *displ);
        for (int r = 0, d = 0; r < comm->size; r++) displ[r] = d, d += counts[r];
    }
    int rc = PMPI_Scatterv(all, counts, displ, MPI_BYTE, buf, nbytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    free(displ);
    return rc == MPI_SUCCESS ? 0 : -1;
}

static int allreduce_u64(void *ctx, uint64_t *vals, int n, int op)
{
    (void)ctx;
    return PMPI_Allreduce(MPI_IN_PLACE, vals, n, MPI_UINT64_T, op ? MPI_MAX : MPI_MIN,
                          MPI_COMM_WORLD) == MPI_SUCCESS
               ? 0
               : -1;
}

static int set_collectives(void *ctx, OTF2_Archive *archive)
{
    (void)ctx;
    return OTF2_MPI_Archive_SetCollectiveCallbacks(archive, MPI_COMM_WORLD, MPI_COMM_NULL) ==
                   OTF2_SUCCESS
               ? 0
               : -1;
}

void pv_comm_pmpi(pv_trace_comm *comm, int rank, int size)
{
    comm->ctx = comm; /* the operations read the rank and size from it */
    comm->rank = rank;
    comm->size = size;
    comm->gatherv = gatherv;
    comm->scatterv = scatterv;
    comm->allreduce_u64 = allreduce_u64;
    comm->set_otf2_collectives = set_collectives;
}
