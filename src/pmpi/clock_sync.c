/* clock_sync.c — offsets of each rank's clock to rank 0's (Score-P's scheme): rank 0 and a rank
 * exchange 10 ping-pongs; the offset is taken at the middle of the shortest round trip, and half that
 * round trip is its uncertainty. Ranks on rank 0's host share its TSC, so in `auto` mode they get
 * offset 0 instead of a measured one whose only content would be noise. */
#include "clock_sync.h"
#include "../clock/clock.h"

#include <mpi.h>

#include <stdlib.h>
#include <string.h>

#define PINGPONGS 10
#define TAG 0x7e5f

void pv_clock_sync(int rank, int size, pv_sync_mode mode, const char *host, uint64_t *t,
                   int64_t *offset, double *stddev)
{
    char host0[256];
    strncpy(host0, host, sizeof host0 - 1);
    host0[sizeof host0 - 1] = 0;
    PMPI_Bcast(host0, sizeof host0, MPI_CHAR, 0, MPI_COMM_WORLD);
    int need = mode == PV_SYNC_PINGPONG || (mode == PV_SYNC_AUTO && strcmp(host0, host) != 0);
    int *needs = rank == 0 ? calloc((size_t)size, sizeof *needs) : NULL;
    PMPI_Gather(&need, 1, MPI_INT, needs, 1, MPI_INT, 0, MPI_COMM_WORLD);
    *t = pv_now();
    *offset = 0;
    *stddev = 0;
    if (rank == 0) {
        for (int r = 1; r < size; r++) {
            if (!needs[r]) continue;
            uint64_t best = UINT64_MAX, remote;
            int64_t result[2] = {0, 0};
            for (int i = 0; i < PINGPONGS; i++) {
                uint64_t t0 = pv_now();
                PMPI_Send(&t0, 1, MPI_UINT64_T, r, TAG, MPI_COMM_WORLD);
                PMPI_Recv(&remote, 1, MPI_UINT64_T, r, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                uint64_t t1 = pv_now();
                if (t1 - t0 < best) {
                    best = t1 - t0;
                    result[0] = (int64_t)(t0 + (t1 - t0) / 2) - (int64_t)remote;
                    result[1] = (int64_t)(best / 2);
                }
            }
            PMPI_Send(result, 2, MPI_INT64_T, r, TAG, MPI_COMM_WORLD);
        }
        free(needs);
    } else if (need) {
        for (int i = 0; i < PINGPONGS; i++) {
            uint64_t ping;
            PMPI_Recv(&ping, 1, MPI_UINT64_T, 0, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            *t = pv_now();
            PMPI_Send(t, 1, MPI_UINT64_T, 0, TAG, MPI_COMM_WORLD);
        }
        int64_t result[2];
        PMPI_Recv(result, 2, MPI_INT64_T, 0, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        *offset = result[0];
        *stddev = (double)result[1];
    }
}
