/* c_callpath.c — one MPI helper routine reached from two kernels, as real codes call MPI from
 * their own communication routines: kernel_a and kernel_b each do some work, then call helper(),
 * whose MPI_Barrier is the only MPI call of the loop. At call-path depth 1 (PERFVAR_CALLPATH=1)
 * the barrier is one call site, so the two kernels' work is one segment class; at depth >= 2 its
 * site carries the kernel that called the helper, and each kernel's work is a class of its own
 * (tests/tools/check_callpath.py counts them). noipa keeps the compiler from inlining or merging
 * the routines into one call path.
 * Usage: mpiexec -n 2 c_callpath [steps = 40]; prints "checksum X". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static volatile double sink;

static volatile int calls;

/* The stores after the calls keep them from being tail calls (jumps: the return address would be
 * the caller's caller's). */
static __attribute__((noipa)) void helper(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    calls++;
}

static __attribute__((noipa)) double work(int n)
{
    double x = 0;
    for (int i = 1; i <= n; i++) x += 1.0 / i;
    return x;
}

static __attribute__((noipa)) void kernel_a(void)
{
    sink += work(20000);
    helper();
    calls++;
}

static __attribute__((noipa)) void kernel_b(void)
{
    sink += work(60000);
    helper();
    calls++;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int steps = argc > 1 ? atoi(argv[1]) : 40, rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < steps; i++) {
        kernel_a();
        kernel_b();
    }
    double sum, mine = sink;
    PMPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("checksum %.6f\n", sum);
    MPI_Finalize();
    return 0;
}
