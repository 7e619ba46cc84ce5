/* twin.c -- validation benchmark for perfvar: two identical compute segments per step, with an
 * optional slowdown injected on one rank (tools/validate.py drives it; twin.f90 is the same in
 * Fortran, with the same options and output).
 *
 * Each step is   compute(W) ; MPI_Allreduce(1 double) ; compute(W) ; MPI_Barrier
 * so segment class A is "MPI_Barrier -> MPI_Allreduce" and B "MPI_Allreduce -> MPI_Barrier".
 * One extra MPI_Barrier, at the same call site, opens step 0, so that the k-th A sample of a
 * rank is step k.
 * W (kernel iterations) is measured on rank 0 before the loop so that one segment takes about
 * --segment-us microseconds, and broadcast, so every rank does the same work.
 *
 * Options: --steps N, --segment-us U, --slow-rank R (-1: none), --slow-segment A|B|all,
 * --slow-pct P (the slowed segments do round(W*(1+P/100)) iterations), --phase F0 F1 (slowdown only
 * in steps [ceil(F0*N), ceil(F1*N)); default 0 1). Prints "twin: steps=N W=... checksum=..." on
 * rank 0; the checksum does not depend on W, the injection or perfvar. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NX 8
#define CALIB_REPS 301
#define MIN_WORK 100 /* the kernel reaches its fixed point within ~60 iterations */

enum { SEG_A = 1, SEG_B = 2 };
enum { P_QUIT, P_STEPS, P_SLOW_RANK, P_SLOW_SEG, P_SLOW_PCT, P_F0, P_F1, P_WORK, P_US, NPARAM };

static double x[NX], c[NX];

/* Latency-bound: NX independent mul+add chains in registers, no memory traffic, so its cost per
 * iteration is fixed. x converges to 2c (normal numbers, never subnormal) and stays there, which
 * keeps the checksum independent of W while the compiler still has to do every iteration. */
static void __attribute__((noinline)) compute(long w)
{
    double v[NX];
    memcpy(v, x, sizeof v);
    for (long i = 0; i < w; i++)
        for (int j = 0; j < NX; j++) v[j] = v[j] * 0.5 + c[j];
    memcpy(x, v, sizeof v);
}

static int cmp_double(const void *a, const void *b)
{
    double d = *(const double *)a - *(const double *)b;
    return (d > 0) - (d < 0);
}

static double median_seconds(long w)
{
    double t[CALIB_REPS];
    for (int r = 0; r < CALIB_REPS; r++) {
        double t0 = MPI_Wtime();
        compute(w);
        t[r] = MPI_Wtime() - t0;
    }
    qsort(t, CALIB_REPS, sizeof t[0], cmp_double);
    return t[CALIB_REPS / 2];
}

/* MPI_Wtime only (not an MPI call perfvar traces), so calibration adds no segment of class A/B. */
static long calibrate_work(double seconds)
{
    long w = 1000;
    median_seconds(w); /* warm-up: clock ramp, page faults */
    for (int pass = 0; pass < 2; pass++)
        w = lround((double)w * seconds / median_seconds(w));
    return w < MIN_WORK ? MIN_WORK : w;
}

static int parse(int argc, char **argv, double *p)
{
    p[P_STEPS] = 3000;
    p[P_US] = 22;
    p[P_SLOW_RANK] = -1;
    p[P_SLOW_SEG] = SEG_A;
    p[P_SLOW_PCT] = 0;
    p[P_F0] = 0;
    p[P_F1] = 1;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        int more = argc - i - 1;
        if (!strcmp(o, "--steps") && more >= 1)
            p[P_STEPS] = atol(argv[++i]);
        else if (!strcmp(o, "--segment-us") && more >= 1)
            p[P_US] = atof(argv[++i]);
        else if (!strcmp(o, "--slow-rank") && more >= 1)
            p[P_SLOW_RANK] = atoi(argv[++i]);
        else if (!strcmp(o, "--slow-pct") && more >= 1)
            p[P_SLOW_PCT] = atof(argv[++i]);
        else if (!strcmp(o, "--slow-segment") && more >= 1) {
            const char *s = argv[++i];
            p[P_SLOW_SEG] = !strcmp(s, "A") ? SEG_A : !strcmp(s, "B") ? SEG_B
                          : !strcmp(s, "all") ? SEG_A | SEG_B : 0;
            if (p[P_SLOW_SEG] == 0) return fprintf(stderr, "twin: --slow-segment A|B|all\n"), 1;
        } else if (!strcmp(o, "--phase") && more >= 2) {
            p[P_F0] = atof(argv[++i]);
            p[P_F1] = atof(argv[++i]);
        } else {
            fprintf(stderr, "usage: twin [--steps N] [--segment-us U] [--slow-rank R] "
                            "[--slow-segment A|B|all] [--slow-pct P] [--phase F0 F1]\n");
            return 1;
        }
    }
    if (p[P_STEPS] < 1 || p[P_US] <= 0 || p[P_SLOW_PCT] < 0 || p[P_F0] > p[P_F1])
        return fprintf(stderr, "twin: invalid option value\n"), 1;
    return 0;
}

int main(int argc, char **argv)
{
    int rank, size;
    double p[NPARAM] = {0};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int j = 0; j < NX; j++) {
        x[j] = 1.0 + j;
        c[j] = 0.25 * (j + 1);
    }
    if (rank == 0) {
        p[P_QUIT] = parse(argc, argv, p);
        if (!p[P_QUIT]) p[P_WORK] = (double)calibrate_work(p[P_US] * 1e-6);
    }
    /* One broadcast of doubles (integers are exact in them), as twin.f90 does. */
    MPI_Bcast(p, NPARAM, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (p[P_QUIT]) {
        MPI_Finalize();
        return 2;
    }
    long nsteps = (long)p[P_STEPS], w = (long)p[P_WORK];
    long lo = (long)ceil(p[P_F0] * (double)nsteps), hi = (long)ceil(p[P_F1] * (double)nsteps);
    long w_slow = lround((double)w * (1.0 + p[P_SLOW_PCT] / 100.0));
    int slowed = rank == (int)p[P_SLOW_RANK] ? (int)p[P_SLOW_SEG] : 0;
    if (rank == 0 && p[P_SLOW_RANK] >= 0)
        printf("twin: rank %d does W=%ld instead of %ld in segment %s, steps %ld..%ld\n",
               (int)p[P_SLOW_RANK], w_slow, w,
               (int)p[P_SLOW_SEG] == SEG_A ? "A" : (int)p[P_SLOW_SEG] == SEG_B ? "B" : "all", lo,
               hi);

    double acc = 0;
    for (long s = 0; s <= nsteps; s++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (s == nsteps) break;
        int in_phase = s >= lo && s < hi;
        compute(in_phase && (slowed & SEG_A) ? w_slow : w);
        double local = 0, global;
        for (int j = 0; j < NX; j++) local += x[j];
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        acc += global;
        compute(in_phase && (slowed & SEG_B) ? w_slow : w);
    }
    if (rank == 0) printf("twin: steps=%ld W=%ld checksum=%.17E\n", nsteps, w, acc);
    MPI_Finalize();
    return 0;
}
