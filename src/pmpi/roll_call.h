/*
 * roll_call.h — is every rank of MPI_COMM_WORLD under perfvar? (roll_call.c; internal to
 * src/pmpi). Asked by point-to-point messages before any collective of perfvar's; called once, by
 * the thread that starts perfvar, on every traced rank.
 */
#ifndef PV_ROLL_CALL_H
#define PV_ROLL_CALL_H

#define PV_ROLL_CALL_S 10.0 /* s rank 0 waits for the others to call */
#define PV_ANSWER_S 30.0    /* s the others wait for rank 0's answer */

/* 1 if every rank did call (this is ``rank`` of ``size`` in MPI_COMM_WORLD), else 0. Rank 0 lists
 * the ranks that did not call in missing (room for ``size``), *n_missing of them; the others set
 * *answered = 0 when no answer came. */
int pv_roll_call(int rank, int size, int *missing, int *n_missing, int *answered);

#endif
