/* bench_mpi_calls.c — what perfvar adds to an MPI call, as a ratio to the same call made
 * uninstrumented in the same run (not a timed test: it prints, it asserts nothing about time).
 *
 * Linked with perfvar's MPI layer: MPI_x goes through perfvar's wrapper (traced: it ends a compute
 * segment and writes Enter/Leave and message records), PMPI_x skips it. Blocks of the two alternate so
 * host noise hits both alike; the figure is the median over blocks of the per-call time (ns, from
 * CLOCK_MONOTONIC around each block). Two ranks:
 *   MPI_Test on a request that has already completed (the cheapest traced call), and
 *   a 0-byte Isend/Irecv/Waitall ping between the two ranks (per exchange).
 * Usage: mpiexec -n 2 bench_mpi_calls [calls per block] [blocks]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*test_fn)(MPI_Request *, int *, MPI_Status *);
typedef int (*isend_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
typedef int (*irecv_fn)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
typedef int (*waitall_fn)(int, MPI_Request *, MPI_Status *);

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ns per MPI_Test on a completed (persistent, inactive) request. */
static double test_block(test_fn test, MPI_Request req, int n)
{
    int flag;
    double t0 = now_ns();
    for (int i = 0; i < n; i++) test(&req, &flag, MPI_STATUS_IGNORE);
    return (now_ns() - t0) / n;
}

/* ns per 0-byte exchange with the other rank. */
static double ping_block(isend_fn isend, irecv_fn irecv, waitall_fn waitall, int peer, int n)
{
    MPI_Request r[2];
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_ns();
    for (int i = 0; i < n; i++) {
        irecv(NULL, 0, MPI_BYTE, peer, 5, MPI_COMM_WORLD, &r[0]);
        isend(NULL, 0, MPI_BYTE, peer, 5, MPI_COMM_WORLD, &r[1]);
        waitall(2, r, MPI_STATUSES_IGNORE);
    }
    return (now_ns() - t0) / n;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20000, blocks = argc > 2 ? atoi(argv[2]) : 21;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || n < 1 || blocks < 1) {
        if (rank == 0) fprintf(stderr, "usage: mpiexec -n 2 bench_mpi_calls [calls] [blocks]\n");
        MPI_Finalize();
        return 2;
    }
    /* An inactive persistent request: MPI_Test completes at once and leaves it as it is. */
    MPI_Request done;
    PMPI_Recv_init(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &done);
    double *tw = malloc(blocks * sizeof *tw), *tp = malloc(blocks * sizeof *tp);
    double *pw = malloc(blocks * sizeof *pw), *pp = malloc(blocks * sizeof *pp);
    test_block(PMPI_Test, done, n); /* warm-up */
    ping_block(PMPI_Isend, PMPI_Irecv, PMPI_Waitall, 1 - rank, n / 10 + 1);
    for (int b = 0; b < blocks; b++) {
        tw[b] = test_block(MPI_Test, done, n);
        tp[b] = test_block(PMPI_Test, done, n);
        pw[b] = ping_block(MPI_Isend, MPI_Irecv, MPI_Waitall, 1 - rank, n / 10 + 1);
        pp[b] = ping_block(PMPI_Isend, PMPI_Irecv, PMPI_Waitall, 1 - rank, n / 10 + 1);
    }
    double mtw = median(tw, blocks), mtp = median(tp, blocks);
    double mpw = median(pw, blocks), mpp = median(pp, blocks);
    if (rank == 0) {
        printf("bench_mpi_calls: %d blocks, medians of per-call time (ns) per block, rank 0\n", blocks);
        printf("  MPI_Test (completed request):   traced %8.1f ns   uninstrumented %8.1f ns   "
               "added %7.1f ns   ratio = %.2f\n", mtw, mtp, mtw - mtp, mtw / mtp);
        printf("  0-byte Isend/Irecv/Waitall ping: traced %8.1f ns   uninstrumented %8.1f ns   "
               "added %7.1f ns   ratio = %.2f\n", mpw, mpp, mpw - mpp, mpw / mpp);
    }
    PMPI_Request_free(&done);
    free(tw), free(tp), free(pw), free(pp);
    MPI_Finalize();
    return 0;
}
