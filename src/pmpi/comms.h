/*
 * comms.h — the communicators messages and collectives are recorded on (comms.c; internal to
 * src/pmpi).
 *
 * Communicator 0 is MPI_COMM_WORLD; any other intra-communicator gets the next id (1, 2, ...) on
 * the first record made on it, and a line in the rank's definitions file (PV_DEFS_COMM: its members'
 * ranks in MPI_COMM_WORLD) before the id is returned. Ids fit the records' 16 bits.
 *
 * State: the number of ids handed out (under comms.c's own lock), and, set once by pv_comms_init
 * and read-only after, this process's rank in MPI_COMM_WORLD and its size (pv_comms_world) and the
 * MPI attribute keyval that caches a communicator's id on the communicator itself, so
 * MPI_Comm_free forgets it. Needs a running MPI (attributes, groups).
 */
#ifndef PV_MPI_COMMS_H
#define PV_MPI_COMMS_H
#include <mpi.h>
#include <stdint.h>

/* Communicator 0: this process's rank in MPI_COMM_WORLD and its size (pv_comms_init). Read inline
 * by pv_comm_lookup, the common case of every recorded message. */
typedef struct pv_comm_world {
    int rank, size;
} pv_comm_world;
extern pv_comm_world pv_comms_world;

/* Keep MPI_COMM_WORLD's rank and size (world_rank, world_size), and create the attribute keyval;
 * without it (MPI refused) only MPI_COMM_WORLD is recorded. Call once, after MPI's initialisation
 * and before any lookup (pv_start). */
void pv_comms_init(int world_rank, int world_size);

/* The communicator id of comm (other than MPI_COMM_WORLD), its size and this process's rank in it:
 * 1, or 0 when messages on comm are not recorded (MPI_COMM_NULL, an inter-communicator, a
 * communicator with members outside MPI_COMM_WORLD, more than 65535 communicators, no memory, the
 * definitions file cannot be written). Thread-safe (MPI attribute calls are; two threads meeting a
 * new communicator at once may both define it, which the trace's unification merges). */
int pv_comm_lookup_other(MPI_Comm comm, uint32_t *id, int *size, int *rank);

/* As pv_comm_lookup_other, for any communicator: MPI_COMM_WORLD, the common case, inline. */
static inline int pv_comm_lookup(MPI_Comm comm, uint32_t *id, int *size, int *rank)
{
    if (comm != MPI_COMM_WORLD) return pv_comm_lookup_other(comm, id, size, rank);
    *id = 0, *size = pv_comms_world.size, *rank = pv_comms_world.rank;
    return 1;
}

#endif
