/* bench_mpi_calls.c — what perfvar adds to one traced MPI call on the single-threaded path, measured
 * side by side in one run: the traced call (MPI_x, through perfvar's wrapper) against the same call
 * made through PMPI_x (never traced), in interleaved blocks; the median block gives ns per call.
 *
 *   wait_null: MPI_Wait on MPI_REQUEST_NULL (a traced call that does no MPI work: the floor of the
 *              wrapper protocol, segment and request-map lookup included);
 *   ping0:     a 0-byte Irecv + Isend + Waitall between rank pairs (0<->1, ...), 3 traced calls.
 *
 * Printed per kind: PMPI and traced medians, the added time (median of the per-round differences,
 * with p10..p90) and the ratio traced / PMPI.
 * Run with an even number of ranks under perfvar (relinked with perfvar::mpi or perfvar-run).
 * A benchmark, not a test: it asserts nothing about time. Rank 0 prints the table.
 * Usage: bench_mpi_calls [calls_per_block=2000] [rounds=21] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { WAIT_NULL, PING0, NKINDS };
static const char *const names[NKINDS] = {"wait_null (1 call)", "ping0 (Irecv+Isend+Waitall)"};

static double block_ns(int kind, int traced, int n, int peer)
{
    char b = 0;
    MPI_Request r[2];
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = PMPI_Wtime();
    for (int i = 0; i < n; i++) {
        if (kind == WAIT_NULL) {
            MPI_Request null = MPI_REQUEST_NULL;
            if (traced)
                MPI_Wait(&null, MPI_STATUS_IGNORE);
            else
                PMPI_Wait(&null, MPI_STATUS_IGNORE);
        } else if (traced) {
            MPI_Irecv(&b, 0, MPI_CHAR, peer, 5, MPI_COMM_WORLD, &r[0]);
            MPI_Isend(&b, 0, MPI_CHAR, peer, 5, MPI_COMM_WORLD, &r[1]);
            MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        } else {
            PMPI_Irecv(&b, 0, MPI_CHAR, peer, 5, MPI_COMM_WORLD, &r[0]);
            PMPI_Isend(&b, 0, MPI_CHAR, peer, 5, MPI_COMM_WORLD, &r[1]);
            PMPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        }
    }
    return (PMPI_Wtime() - t0) * 1e9 / n;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = argc > 1 ? atoi(argv[1]) : 2000, rounds = argc > 2 ? atoi(argv[2]) : 21;
    if (n < 1 || rounds < 1 || size % 2) {
        if (rank == 0) fprintf(stderr, "usage: mpiexec -n EVEN bench_mpi_calls [n>0] [rounds>0]\n");
        MPI_Finalize();
        return 2;
    }
    int peer = rank ^ 1;
    double *per[NKINDS][2];
    for (int k = 0; k < NKINDS; k++)
        for (int t = 0; t < 2; t++) per[k][t] = malloc((size_t)rounds * sizeof(double));
    for (int k = 0; k < NKINDS; k++) /* warm-up: sites and segments defined, buffers touched */
        for (int t = 0; t < 2; t++) block_ns(k, t, n, peer);
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < NKINDS; k++)
            for (int t = 0; t < 2; t++) per[k][t][r] = block_ns(k, t, n, peer);
    if (rank == 0) {
        printf("bench_mpi_calls: %d ranks, %d rounds of %d iterations, interleaved; ns per iteration\n",
               size, rounds, n);
        printf("%-30s %12s %12s %12s %16s %8s\n", "kind", "PMPI median", "traced med.", "added",
               "p10..p90 added", "ratio");
        for (int k = 0; k < NKINDS; k++) {
            double added[rounds];
            for (int r = 0; r < rounds; r++) added[r] = per[k][1][r] - per[k][0][r];
            for (int t = 0; t < 2; t++) qsort(per[k][t], (size_t)rounds, sizeof(double), cmp);
            qsort(added, (size_t)rounds, sizeof(double), cmp);
            printf("%-30s %12.1f %12.1f %12.1f %7.1f..%-7.1f %8.2f\n", names[k], per[k][0][rounds / 2],
                   per[k][1][rounds / 2], added[rounds / 2], added[rounds / 10],
                   added[rounds - 1 - rounds / 10], per[k][1][rounds / 2] / per[k][0][rounds / 2]);
        }
    }
    MPI_Finalize();
    return 0;
}
