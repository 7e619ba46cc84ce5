/* c_mpi.c — an MPI program linked with perfvar::mpi from an installed perfvar. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, v = 1, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("c_mpi: sum %d\n", sum);
    MPI_Finalize();
    return 0;
}
