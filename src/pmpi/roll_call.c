/* roll_call.c — is every rank of MPI_COMM_WORLD under perfvar? Asked by point-to-point messages
 * before perfvar's first collective, because a rank that is not (an MPMD job that runs perfvar-run
 * on some of its programs only: `mpiexec -n 1 perfvar-run ./a : -n 1 ./b`) would meet perfvar's
 * start-up collectives with the application's own first collective on MPI_COMM_WORLD, and MPI
 * aborts the job (MPI_ERR_TRUNCATE) or hangs. Collectives match by order, messages by tag, so only
 * messages can ask.
 *
 * Each rank other than 0 sends rank 0 one message and waits for its answer; rank 0 collects them
 * and answers each rank that called: 1 if every rank did within PV_ROLL_CALL_S, else 0. A rank not
 * under perfvar never calls or answers. Rank 0 then waits out PV_ROLL_CALL_S and answers 0; a
 * traced rank whose rank 0 is not traced gets no answer and gives up after PV_ANSWER_S, longer
 * than PV_ROLL_CALL_S so that a rank 0 only slower to leave MPI_Init (which synchronises the
 * ranks, so never by seconds) still answers in time. Either way every traced rank runs
 * uninstrumented and the application runs on. A job whose ranks are all traced pays one message
 * each way.
 *
 * Limit: the call to an untraced rank 0 stays pending in MPI; an application there that receives
 * with MPI_ANY_TAG from MPI_ANY_SOURCE before any other message could take it. */
#include "roll_call.h"

#include <mpi.h>

#include <stdlib.h>
#include <time.h>

#define TAG 0x7e5e

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Completes req, or cancels it once `until` has passed: 1 if it completed. */
static int wait_until(MPI_Request *req, double until)
{
    int done = 0;
    while (PMPI_Test(req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done && now_s() < until) {
        struct timespec pause = {0, 100000}; /* 0.1 ms: a wait of seconds need not spin a core */
        nanosleep(&pause, NULL);
    }
    if (!done) {
        PMPI_Cancel(req);
        PMPI_Request_free(req);
    }
    return done;
}

/* Rank 0: the ranks that called, in missing[0..*n_missing) those that did not. */
static int collect(int size, int *missing, int *n_missing)
{
    char *called = calloc((size_t)size, 1);
    if (!called) return 0;
    double until = now_s() + PV_ROLL_CALL_S;
    int n = 1, one;
    while (n < size) {
        MPI_Request req;
        MPI_Status st;
        PMPI_Irecv(&one, 1, MPI_INT, MPI_ANY_SOURCE, TAG, MPI_COMM_WORLD, &req);
        int done = 0;
        while (PMPI_Test(&req, &done, &st) == MPI_SUCCESS && !done && now_s() < until) {
            struct timespec pause = {0, 100000};
            nanosleep(&pause, NULL);
        }
        if (!done) {
            PMPI_Cancel(&req);
            /* A cancelled receive completes; one that matched meanwhile counts. */
            PMPI_Wait(&req, &st);
            int cancelled = 0;
            PMPI_Test_cancelled(&st, &cancelled);
            if (cancelled) break;
        }
        int r = st.MPI_SOURCE;
        if (r > 0 && r < size && !called[r]) called[r] = 1, n++;
    }
    int all = n == size;
    *n_missing = 0;
    for (int r = 1; r < size; r++) {
        if (!called[r]) {
            missing[(*n_missing)++] = r;
            continue;
        }
        PMPI_Send(&all, 1, MPI_INT, r, TAG, MPI_COMM_WORLD);
    }
    free(called);
    return all;
}

int pv_roll_call(int rank, int size, int *missing, int *n_missing, int *answered)
{
    *n_missing = 0, *answered = 1;
    if (size == 1) return 1;
    if (rank == 0) return collect(size, missing, n_missing);
    int one = 1, all = 0;
    MPI_Request call, answer;
    PMPI_Isend(&one, 1, MPI_INT, 0, TAG, MPI_COMM_WORLD, &call);
    PMPI_Irecv(&all, 1, MPI_INT, 0, TAG, MPI_COMM_WORLD, &answer);
    double until = now_s() + PV_ANSWER_S;
    *answered = wait_until(&answer, until);
    /* Sent eagerly in practice; an untraced rank 0 may never take it: then it is left to MPI. */
    int sent = 0;
    PMPI_Test(&call, &sent, MPI_STATUS_IGNORE);
    if (!sent) PMPI_Request_free(&call);
    return *answered && all;
}
