/* bench_mpi_calls.c — what perfvar adds to an MPI call, as a ratio to the same call made
 * uninstrumented in the same run (not a timed test: it prints, it asserts nothing about time).
 *
 * Linked with perfvar's MPI layer: MPI_x goes through perfvar's wrapper (traced: it ends a compute
 * segment and writes Enter/Leave and message records), PMPI_x skips it. Added ns = traced - plain.
 * Method, so that a noisy shared host hits every series alike:
 *   - every measure is timed per block (CLOCK_MONOTONIC around the whole block, / calls), never per
 *     call, so the clock's own cost and resolution vanish in the block;
 *   - one round = one block of every series; within a round the traced and plain block of a measure
 *     are adjacent and their order flips every round (a drift or a slow phase cannot favour one);
 *   - the figure is the median over rounds of the per-call ns; one warm-up round is discarded.
 *     The median also leaves out the rare block in which perfvar flushed its trace buffer (OTF2:
 *     ~13 ms once per 16 MiB, i.e. per ~3 x 10^5 traced MPI_Test calls; ~45 ns a call spread out)
 *     and the blocks the host took the vCPU away for a time slice (4-12 ms, often, on a loaded
 *     host): a mean over blocks is dominated by the latter, so it is not printed. The driver prints
 *     how often the buffer was flushed or its window moved.
 * Series (two ranks; figures are rank 0's):
 *   fenced pair: two back-to-back perfvar_clock_read() (perfvar_clock.h: rdtscp;lfence on x86-64,
 *     isb;mrs cntvct_el0;isb on Armv8), the floor a wrapper's entry and exit reads cannot go under:
 *     the unit the driver (bench_recorder.py) divides the added ns by;
 *   MPI_Test on MPI_REQUEST_NULL and on an inactive persistent request (both return at once, so
 *     the wrapper is nearly all of the traced time), each from one call site reached by one call
 *     path (every series is run from one statement of main), so at call-path depth > 1
 *     (PERFVAR_CALLPATH) perfvar reuses the path it learned: the common case;
 *   MPI_Test on MPI_REQUEST_NULL from one call site reached alternately by two call paths: at
 *     depth > 1 perfvar unwinds the stack on every call of such a site (src/pmpi/sites.c), so
 *     this series is the cost of unwinding at the run's depth (ctest bench.mpi_calls.callpath*
 *     runs it at depths 1..4; at depth 1 it is a plain call site), with the unwinder the run
 *     used (libunwind, or libgcc where libunwind is absent: printed);
 *   a 0-byte Isend/Irecv/Waitall exchange between the two ranks (per exchange);
 *   MPI_Allreduce of one double (per step).
 * Output: the human lines, and one `bench-row` line per measure for the driver to parse.
 *
 * Count mode, for trace bytes per call: `only test N` makes N traced MPI_Test calls on the inactive
 * request per rank and nothing else traced but Init/Finalize; `only allreduce N` makes N traced
 * Allreduce steps; `only ping N` makes N exchanges (3 traced calls each). The driver runs N and 0 and divides the difference of the trace sizes.
 * Usage: mpiexec -n 2 bench_mpi_calls [calls per block = 2000] [rounds = 101]
 *        mpiexec -n 2 bench_mpi_calls only test|allreduce|ping N
 */
#include <mpi.h>
#include <perfvar_clock.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_time.h"

typedef int (*test_fn)(MPI_Request *, int *, MPI_Status *);
typedef int (*isend_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
typedef int (*irecv_fn)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
typedef int (*waitall_fn)(int, MPI_Request *, MPI_Status *);
typedef int (*allreduce_fn)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);

/* The reads' results go somewhere the compiler cannot drop (the asm is volatile anyway). */
static volatile uint64_t sink;

/* ns per pair of fenced clock reads. */
static double fenced_block(int n)
{
    uint64_t acc = 0;
    double t0 = bench_now_ns();
    for (int i = 0; i < n; i++) {
        uint64_t a = perfvar_clock_read();
        acc += perfvar_clock_read() - a;
    }
    double t = (bench_now_ns() - t0) / n;
    sink += acc;
    return t;
}

/* ns per MPI_Test; req is a copy, so MPI_REQUEST_NULL and an inactive request stay as they are.
 * Inlined into each caller, so that each series has its own call site. */
static inline __attribute__((always_inline)) double test_block(test_fn test, MPI_Request req, int n)
{
    int flag;
    double t0 = bench_now_ns();
    for (int i = 0; i < n; i++) test(&req, &flag, MPI_STATUS_IGNORE);
    return (bench_now_ns() - t0) / n;
}

/* One MPI_Test call site reached by two call paths (via_a, via_b); noipa keeps the compiler from
 * merging or inlining them into one path. */
static __attribute__((noipa)) void test_once(test_fn test)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int flag;
    test(&req, &flag, MPI_STATUS_IGNORE);
}
static __attribute__((noipa)) void via_a(test_fn test) { test_once(test); }
static __attribute__((noipa)) void via_b(test_fn test) { test_once(test); }

/* ns per MPI_Test at a site whose call path alternates between two. */
static double paths_block(test_fn test, int n)
{
    double t0 = bench_now_ns();
    for (int i = 0; i < n; i++) (i & 1 ? via_a : via_b)(test);
    return (bench_now_ns() - t0) / n;
}

/* ns per 0-byte exchange with the other rank; the barrier lines the ranks up so neither block
 * starts by waiting for the peer to finish its previous one. */
static double ping_block(isend_fn isend, irecv_fn irecv, waitall_fn waitall, int peer, int n)
{
    MPI_Request r[2];
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = bench_now_ns();
    for (int i = 0; i < n; i++) {
        irecv(NULL, 0, MPI_BYTE, peer, 5, MPI_COMM_WORLD, &r[0]);
        isend(NULL, 0, MPI_BYTE, peer, 5, MPI_COMM_WORLD, &r[1]);
        waitall(2, r, MPI_STATUSES_IGNORE);
    }
    return (bench_now_ns() - t0) / n;
}

/* ns per Allreduce step of one double. */
static double allreduce_block(allreduce_fn allreduce, int n)
{
    double x = 1.0, y;
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = bench_now_ns();
    for (int i = 0; i < n; i++) allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return (bench_now_ns() - t0) / n;
}

/* Which unwinder the run's call paths used: perfvar loads libunwind on the first call path it
 * unwinds (src/pmpi/sites.c), so after the series it is mapped into this process or it is not. */
static const char *unwinder_used(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f)) found = strstr(line, "/libunwind.so") != NULL;
    if (f) fclose(f);
    return found ? "libunwind" : "libgcc (libunwind not loaded)";
}

/* Series: a traced one at even index, its plain twin right after it. */
enum { T_NULL, P_NULL, T_INACT, P_INACT, T_PING, P_PING, T_ALLRED, P_ALLRED, T_PATHS, P_PATHS, FENCED,
       NSERIES };
static const char *const key[] = {"test_null", "", "test_inactive", "", "ping", "", "allreduce", "",
                                  "test_two_paths"};
static const char *const label[] = {"MPI_Test (MPI_REQUEST_NULL):", "", "MPI_Test (inactive persistent):",
                                    "", "0-byte Isend/Irecv/Waitall ping:", "", "MPI_Allreduce (1 double):",
                                    "", "MPI_Test (MPI_REQUEST_NULL), one site, two call paths:"};

static double run_series(int s, MPI_Request inactive, int peer, int n, int n_comm)
{
    switch (s) {
    case T_NULL: return test_block(MPI_Test, MPI_REQUEST_NULL, n);
    case P_NULL: return test_block(PMPI_Test, MPI_REQUEST_NULL, n);
    case T_INACT: return test_block(MPI_Test, inactive, n);
    case P_INACT: return test_block(PMPI_Test, inactive, n);
    case T_PING: return ping_block(MPI_Isend, MPI_Irecv, MPI_Waitall, peer, n_comm);
    case P_PING: return ping_block(PMPI_Isend, PMPI_Irecv, PMPI_Waitall, peer, n_comm);
    case T_ALLRED: return allreduce_block(MPI_Allreduce, n_comm);
    case P_ALLRED: return allreduce_block(PMPI_Allreduce, n_comm);
    case T_PATHS: return paths_block(MPI_Test, n);
    case P_PATHS: return paths_block(PMPI_Test, n);
    default: return fenced_block(n);
    }
}

/* Count mode: exactly n traced calls of one kind per rank, so trace bytes / calls is clean. */
static int only(const char *kind, int n, int rank, MPI_Request inactive)
{
    if (!strcmp(kind, "test")) {
        test_block(MPI_Test, inactive, n);
    } else if (!strcmp(kind, "allreduce")) {
        allreduce_block(MPI_Allreduce, n);
    } else if (!strcmp(kind, "ping")) {
        ping_block(MPI_Isend, MPI_Irecv, MPI_Waitall, 1 - rank, n);
    } else {
        if (rank == 0) fprintf(stderr, "bench_mpi_calls: only test|allreduce|ping N\n");
        return 2;
    }
    if (rank == 0) printf("bench-count kind=%s calls_per_rank=%d ranks=2\n", kind, n);
    return 0;
}

int main(int argc, char **argv)
{
    int count_mode = argc > 1 && !strcmp(argv[1], "only");
    int n = count_mode ? (argc > 3 ? atoi(argv[3]) : -1) : argc > 1 ? atoi(argv[1]) : 2000;
    int rounds = !count_mode && argc > 2 ? atoi(argv[2]) : 101;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || n < (count_mode ? 0 : 1) || rounds < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiexec -n 2 bench_mpi_calls [calls] [rounds]\n"
                            "       mpiexec -n 2 bench_mpi_calls only test|allreduce|ping N\n");
        MPI_Finalize();
        return 2;
    }
    /* An inactive persistent request: MPI_Test completes at once and leaves it as it is. Made and
     * freed through PMPI so that count mode traces nothing but the calls counted. */
    MPI_Request inactive;
    PMPI_Recv_init(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &inactive);
    int rc = 0;
    if (count_mode) {
        rc = only(argv[2], n, rank, inactive);
    } else {
        /* Exchanges and Allreduce steps take ~100x a local Test: fewer per block, similar block time. */
        int n_comm = n / 10 + 1, peer = 1 - rank;
        double *t[NSERIES];
        for (int s = 0; s < NSERIES; s++) t[s] = malloc((size_t)rounds * sizeof **t);
        /* Round -1 is the warm-up. Every series runs from the one run_series call below, so each
         * traced call site has one call path. */
        for (int b = -1; b < rounds; b++) {
            int seq[NSERIES], k = 0;
            seq[k++] = FENCED;
            for (int s = 0; s < FENCED; s += 2) { /* traced first in even rounds, plain first in odd */
                seq[k++] = s + (b & 1);
                seq[k++] = s + !(b & 1);
            }
            for (k = 0; k < NSERIES; k++) {
                double v = run_series(seq[k], inactive, peer, n, n_comm);
                if (b >= 0) t[seq[k]][b] = v;
            }
        }
        double m[NSERIES];
        for (int s = 0; s < NSERIES; s++) m[s] = bench_median(t[s], rounds);
        if (rank == 0) {
            printf("bench_mpi_calls: %d rounds (+1 warm-up), traced/plain order alternating; per block "
                   "%d calls (Test, fenced pair), %d exchanges/steps (ping, Allreduce); medians of "
                   "per-call ns over rounds, rank 0\n", rounds, n, n_comm);
            const char *depth = getenv("PERFVAR_CALLPATH");
            printf("  call-path depth (PERFVAR_CALLPATH): %s; unwinder: %s\n",
                   depth ? depth : "perfvar's default",
                   depth && atoi(depth) == 1 ? "none at depth 1" : unwinder_used());
            printf("  fenced pair (2 x %s):  %8.1f ns\n", PERFVAR_CLOCK_FENCED_READ, m[FENCED]);
            printf("bench-row measure=fenced_pair ns=%.2f rounds=%d per_block=%d read=%s\n", m[FENCED],
                   rounds, n, PERFVAR_CLOCK_FENCED_READ);
            for (int s = 0; s < FENCED; s += 2) {
                /* "ping: traced ... ratio = " is what ctest bench.mpi_calls.* looks for. */
                printf("  %s traced %8.1f ns   uninstrumented %8.1f ns   added %7.1f ns   ratio = %.2f\n",
                       label[s], m[s], m[s + 1], m[s] - m[s + 1], m[s] / m[s + 1]);
                printf("bench-row measure=%s traced_ns=%.2f plain_ns=%.2f rounds=%d per_block=%d\n",
                       key[s], m[s], m[s + 1], rounds, s < T_PING || s == T_PATHS ? n : n_comm);
                if (s == T_PATHS)
                    printf("  call path unwound every call: added %.1f ns = %.2f fenced pairs; reused "
                           "path (MPI_Test above): added %.1f ns = %.2f fenced pairs\n",
                           m[s] - m[s + 1], (m[s] - m[s + 1]) / m[FENCED], m[T_NULL] - m[P_NULL],
                           (m[T_NULL] - m[P_NULL]) / m[FENCED]);
            }
        }
        for (int s = 0; s < NSERIES; s++) free(t[s]);
    }
    PMPI_Request_free(&inactive);
    MPI_Finalize();
    return rc;
}
