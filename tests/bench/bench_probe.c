/* bench_probe.c — the program loop tests/bench/bench_probe.py runs with PERFVAR_PROBE=off and =on
 * side by side (not a timed test: nothing about time is asserted).
 *
 * A bulk-synchronous loop as simulation codes have: per iteration a fixed compute kernel (a
 * dependent multiply-add chain over a small array, about 20 us on a 2-3 GHz core) and one
 * MPI_Allreduce of one double, so a traced call, where probes run, comes every ~20 us. The same
 * work in every run: the iteration count is fixed, never adapted to time.
 * Prints one line on rank 0:
 *   bench_probe: iterations N, loop_ns L0 L1 ..., checksum C
 * with each rank's loop time (CLOCK_MONOTONIC between two barriers, ns); the checksum is the
 * same with probes on and off, with and without perfvar.
 * Usage: mpiexec -n N bench_probe [iterations]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* The compute segment: 64 passes of a dependent update over 256 doubles (L1-resident). */
static double compute(double *a, int n, double x)
{
    for (int pass = 0; pass < 64; pass++)
        for (int i = 0; i < n; i++) x = a[i] = 0.5 * a[i] + 0.25 * x + 1e-3;
    return x;
}

int main(int argc, char **argv)
{
    long iterations = argc > 1 ? atol(argv[1]) : 40000;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (iterations < 1) {
        if (rank == 0) fprintf(stderr, "usage: mpiexec -n N bench_probe [iterations]\n");
        MPI_Finalize();
        return 2;
    }
    enum { N = 256 };
    double a[N], x = rank + 1.0, sum = 0;
    for (int i = 0; i < N; i++) a[i] = i * 1e-3;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_ns();
    for (long it = 0; it < iterations; it++) {
        x = compute(a, N, x);
        double local = x, global;
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        sum += global;
        x = global / size;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double loop = now_ns() - t0;
    double *all = malloc((size_t)size * sizeof *all);
    PMPI_Gather(&loop, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); /* not the loop's */
    if (rank == 0) {
        printf("bench_probe: iterations %ld, loop_ns", iterations);
        for (int r = 0; r < size; r++) printf(" %.0f", all[r]);
        printf(", checksum %.12e\n", sum);
    }
    free(all);
    MPI_Finalize();
    return 0;
}
