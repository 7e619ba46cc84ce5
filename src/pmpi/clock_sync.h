/*
 * clock_sync.h — each rank's clock offset to rank 0's (clock_sync.c; internal to src/pmpi).
 *
 * Collective over MPI_COMM_WORLD (PMPI, so it records nothing): every rank calls it, from the
 * thread that starts or stops perfvar, never concurrently with another collective of perfvar's.
 */
#ifndef PV_CLOCK_SYNC_H
#define PV_CLOCK_SYNC_H

#include <stdint.h>

#include "../config/config.h"

/* This rank's (``rank`` of ``size`` in MPI_COMM_WORLD) offset to rank 0's clock, in timer ticks:
 * measured by ping-pongs where ``mode`` asks for it (PV_SYNC_AUTO: ranks not on rank 0's host,
 * named ``host`` here), else 0. *t: this rank's clock when it was taken, *stddev its uncertainty
 * (ticks, half the shortest round trip). */
void pv_clock_sync(int rank, int size, pv_sync_mode mode, const char *host, uint64_t *t,
                   int64_t *offset, double *stddev);

#endif
