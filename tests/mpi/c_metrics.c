/* c_metrics.c — compute segments for the counters (PERFVAR_METRICS): long ones that end with a read,
 * short ones that leave their counts to the next read.
 *
 * Each of STEPS steps: a segment of about 3 ms (well over the default PERFVAR_METRICS_MIN_US) that
 * spins on the clock, touches fresh pages (page faults) and yields once (a context switch where
 * another thread wants the CPU), ended by an MPI_Allreduce; then 20 MPI_Test calls on
 * MPI_REQUEST_NULL, whose segments last nanoseconds. Prints "checksum N" (the same with and without
 * perfvar).
 * Usage: mpiexec -n 2 c_metrics [steps = 20]
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int steps = argc > 1 ? atoi(argv[1]) : 20, rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long sum = 0;
    for (int s = 0; s < steps; s++) {
        char *pages = malloc(64 << 12);
        if (pages) memset(pages, s, 64 << 12), sum += pages[4096], free(pages);
        sched_yield();
        for (double until = now_s() + 3e-3; now_s() < until;) {
        }
        long step = rank + s, total = 0;
        MPI_Allreduce(&step, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        sum += total;
        for (int i = 0; i < 20; i++) {
            MPI_Request req = MPI_REQUEST_NULL;
            int flag;
            MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        }
    }
    if (rank == 0) printf("checksum %ld\n", sum);
    MPI_Finalize();
    return 0;
}
