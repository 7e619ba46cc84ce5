/* c_pmpi_init.c — initialises and finalises MPI behind perfvar's back (PMPI_Init, PMPI_Finalize),
 * as a binding perfvar does not wrap would. perfvar must start lazily at the first traced call and
 * still write the trace from inside MPI_Finalize. Per rank: Barrier 1, Allreduce 1. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, v = 1, sum = 0;
    PMPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("c_pmpi_init: sum %d\n", sum);
    PMPI_Finalize();
    return 0;
}
