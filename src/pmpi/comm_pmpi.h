/*
 * comm_pmpi.h — the trace writer's collective operations over PMPI on MPI_COMM_WORLD
 * (comm_pmpi.c; internal to src/pmpi). PMPI only: perfvar's own communication never appears as
 * the application's.
 */
#ifndef PV_COMM_PMPI_H
#define PV_COMM_PMPI_H

#include "../trace/trace.h"

/* Fill *comm for this rank (``rank`` of ``size`` in MPI_COMM_WORLD): its operations read the rank
 * and size from *comm itself, which must outlive their use (the conversion that takes it). Every
 * rank calls them together, from one thread. */
void pv_comm_pmpi(pv_trace_comm *comm, int rank, int size);

#endif
