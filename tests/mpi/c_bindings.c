/* c_bindings.c — the calls of f_bindings.F90 from C (same per-rank counts, F_CALLS in
 * tests/CMakeLists.txt): MPI_ANY_SOURCE with MPI_STATUS_IGNORE, MPI_STATUSES_IGNORE, MPI_IN_PLACE,
 * MPI_BOTTOM with an absolute-address datatype, Comm_set_name/get_name, local queries. Prints a
 * checksum; exits 1 if any MPI result is wrong. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

/* gcc 12 takes MPICH's MPI_STATUSES_IGNORE ((MPI_Status *)1) for a zero-size array. */
#pragma GCC diagnostic ignored "-Wstringop-overflow"

#define CHECK(cond, what)                                                                         \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            fprintf(stderr, "c_bindings: wrong result: %s\n", what);                              \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                         \
        }                                                                                         \
    } while (0)

int main(int argc, char **argv)
{
    int rank, nranks, namelen, got, sum, bc[3] = {0, 0, 0};
    char name[MPI_MAX_OBJECT_NAME];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Comm_set_name(MPI_COMM_WORLD, "perfvar world");
    MPI_Comm_get_name(MPI_COMM_WORLD, name, &namelen);
    CHECK(namelen == 13 && strcmp(name, "perfvar world") == 0, "Comm_get_name");
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    double check = 0;
    for (int i = 1; i <= 3; i++) {
        int sendv = 100 * rank + i, recvv = -1;
        MPI_Request req[2];
        MPI_Irecv(&recvv, 1, MPI_INT, MPI_ANY_SOURCE, i, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(&sendv, 1, MPI_INT, right, i, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        CHECK(recvv == 100 * left + i, "Irecv");
        check += recvv;
    }
    MPI_Sendrecv(&rank, 1, MPI_INT, right, 9, &got, 1, MPI_INT, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    CHECK(got == left, "Sendrecv");
    int partner = rank ^ 1; /* pairs (0,1), (2,3): an even number of ranks */
    if (rank % 2 == 0) {
        MPI_Send(&rank, 1, MPI_INT, partner, 11, MPI_COMM_WORLD);
        MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&rank, 1, MPI_INT, partner, 11, MPI_COMM_WORLD);
    }
    CHECK(got == partner, "Recv");
    sum = rank + 1;
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == nranks * (nranks + 1) / 2, "Allreduce");
    if (rank == 0) bc[0] = 7, bc[1] = 8, bc[2] = 9;
    MPI_Aint disp;
    MPI_Get_address(bc, &disp);
    int blen = 3;
    MPI_Datatype type = MPI_INT, dtype;
    MPI_Type_create_struct(1, &blen, &disp, &type, &dtype);
    MPI_Type_commit(&dtype);
    MPI_Bcast(MPI_BOTTOM, 1, dtype, 0, MPI_COMM_WORLD);
    MPI_Type_free(&dtype);
    CHECK(bc[2] == 9, "Bcast");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("checksum %12.1f %6d\n", check + sum + bc[0], got);
    MPI_Finalize();
    return 0;
}
