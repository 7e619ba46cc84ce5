/* c_threads.c — an MPI_THREAD_MULTIPLE program: every rank runs NTHREADS pthreads that all call MPI
 * at once on MPI_COMM_WORLD, each with its own tags. perfvar must trace each thread on its own
 * location with its own compute segments, and lose or mix up no message.
 *
 * Ranks are paired (0<->1, 2<->3, ...; an even number is needed). Each thread t does `--iters N`
 * times (default 100): a compute block inside the user timer region "thread_compute", one
 * MPI_Sendrecv (tag 100 + t), then MPI_Irecv + MPI_Isend + MPI_Waitall (tag 200 + t), and checks
 * every value it received. Every other iteration the Irecv comes before the Isend, otherwise after,
 * so the request map sees both orders. The main thread makes MPI_Barrier before and after the
 * threads, then MPI_Allreduce of the checksum, and prints "checksum X" (the same with and without
 * perfvar).
 * Per rank: Init_thread 1, Barrier 2, Allreduce 1, Finalize 1 on the main thread; on each of the
 * NTHREADS threads: Sendrecv N, Irecv N, Isend N, Waitall N, thread_compute N.
 * Exit code 2 when MPI does not provide MPI_THREAD_MULTIPLE, 1 on a wrong value received. */
#include <mpi.h>
#include <perfvar.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 4

static int rank, peer, iters = 100, region = -1;
static double thread_sums[NTHREADS];
static int errors[NTHREADS];

/* Some floating-point work whose result depends on its input (the compiler cannot drop it). */
static double compute(double x, int n)
{
    for (int i = 0; i < n; i++) x = x * 0.999999 + 1e-6 * i;
    return x;
}

static double expected(int from_rank, int t, int i, int kind)
{
    return from_rank * 1e6 + t * 1e4 + i * 10 + kind;
}

static void *worker(void *arg)
{
    int t = (int)(long)arg;
    double sum = 0, x = rank + t;
    for (int i = 0; i < iters; i++) {
        perfvar_start(region);
        x = compute(x, 2000 + 500 * t);
        perfvar_stop(region);

        double out = expected(rank, t, i, 1), in = -1;
        MPI_Sendrecv(&out, 1, MPI_DOUBLE, peer, 100 + t, &in, 1, MPI_DOUBLE, peer, 100 + t,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (in != expected(peer, t, i, 1)) errors[t]++;
        sum += in;

        double out2 = expected(rank, t, i, 2), in2 = -1;
        MPI_Request req[2];
        if (i % 2) {
            MPI_Irecv(&in2, 1, MPI_DOUBLE, peer, 200 + t, MPI_COMM_WORLD, &req[0]);
            MPI_Isend(&out2, 1, MPI_DOUBLE, peer, 200 + t, MPI_COMM_WORLD, &req[1]);
        } else {
            MPI_Isend(&out2, 1, MPI_DOUBLE, peer, 200 + t, MPI_COMM_WORLD, &req[1]);
            MPI_Irecv(&in2, 1, MPI_DOUBLE, peer, 200 + t, MPI_COMM_WORLD, &req[0]);
        }
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        if (in2 != expected(peer, t, i, 2)) errors[t]++;
        sum += in2;
    }
    thread_sums[t] = sum + (x > 0 ? 0 : 1); /* x is used, its value is not part of the result */
    return NULL;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    int provided, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided != MPI_THREAD_MULTIPLE || size % 2) {
        if (rank == 0)
            fprintf(stderr, "c_threads: needs MPI_THREAD_MULTIPLE (got %d) and an even number of "
                            "ranks (got %d)\n", provided, size);
        MPI_Finalize();
        return 2;
    }
    peer = rank ^ 1;
    perfvar_region_register("thread_compute", &region);

    MPI_Barrier(MPI_COMM_WORLD);
    pthread_t th[NTHREADS];
    for (long t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
    MPI_Barrier(MPI_COMM_WORLD);

    double local = 0, total = 0;
    int bad = 0;
    for (int t = 0; t < NTHREADS; t++) local += thread_sums[t], bad += errors[t];
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (bad) fprintf(stderr, "c_threads: rank %d received %d wrong values\n", rank, bad);
    if (rank == 0) printf("c_threads: checksum %.6e\n", total);
    MPI_Finalize();
    return bad ? 1 : 0;
}
