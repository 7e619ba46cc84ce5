/* c_calls.c — calls every MPI function perfvar wraps, from C, including MPI_ANY_SOURCE with
 * MPI_STATUS_IGNORE, MPI_STATUSES_IGNORE, MPI_IN_PLACE; prints a checksum of the results so a run
 * with perfvar can be compared with one without. `--exit-code N` returns N after MPI_Finalize (the
 * application's exit code must survive perfvar). `--thread` uses MPI_Init_thread.
 * Per rank it makes: Bcast 1, Barrier 2, Send 1, Recv 1, Isend 2, Irecv 2, Wait 1, Waitall 1,
 * Sendrecv 1, Reduce 1, Allreduce 2, Allgather 1. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int exit_code = 0, thread = 0, provided;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--exit-code") && i + 1 < argc) exit_code = atoi(argv[++i]);
        if (!strcmp(argv[i], "--thread")) thread = 1;
    }
    if (thread)
        MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    else
        MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double check = 0;

    int param = rank == 0 ? 42 : 0;
    MPI_Bcast(&param, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Ring with blocking calls: the receive names no source and ignores the status. */
    double out = rank + 0.5, in = -1;
    if (rank % 2 == 0) {
        MPI_Send(&out, 1, MPI_DOUBLE, right, 7, MPI_COMM_WORLD);
        MPI_Recv(&in, 1, MPI_DOUBLE, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(&in, 1, MPI_DOUBLE, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&out, 1, MPI_DOUBLE, right, 7, MPI_COMM_WORLD);
    }
    check += in;

    /* Non-blocking halo: one Wait with an ignored status, one Waitall with ignored statuses. */
    double halo[2] = {0, 0}, mine[2] = {rank * 2.0, rank * 3.0};
    MPI_Request req[4];
    MPI_Irecv(&halo[0], 1, MPI_DOUBLE, left, 11, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(&halo[1], 1, MPI_DOUBLE, MPI_ANY_SOURCE, 12, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(&mine[0], 1, MPI_DOUBLE, right, 11, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(&mine[1], 1, MPI_DOUBLE, left, 12, MPI_COMM_WORLD, &req[3]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_Waitall(3, &req[1], MPI_STATUSES_IGNORE);
    check += halo[0] + halo[1];

    double sr = -1;
    MPI_Sendrecv(&out, 1, MPI_DOUBLE, right, 13, &sr, 1, MPI_DOUBLE, left, 13, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    check += sr;

    double sum = 0, v = rank + 1.0;
    MPI_Reduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    check += v;
    int *all = malloc((size_t)size * sizeof *all);
    all[rank] = rank * rank;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++) check += all[r];
    free(all);
    MPI_Allreduce(MPI_IN_PLACE, &check, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("c_calls: ranks %d param %d reduce %.1f checksum %.6f\n", size, param, sum, check);
    MPI_Finalize();
    return exit_code;
}
