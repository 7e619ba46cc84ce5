/* comms.c — the communicators messages and collectives are recorded on.
 *
 * MPI_COMM_WORLD is communicator 0. Any other intra-communicator gets the next id on the first
 * record made on it, and a line in the rank's definitions file: its members' ranks in
 * MPI_COMM_WORLD, read locally (PMPI_Comm_group + PMPI_Group_translate_ranks, no communication).
 * What perfvar knows of it is cached as an MPI attribute of the communicator, so MPI_Comm_free
 * forgets it (the delete callback) and a later communicator reusing the handle is looked up afresh.
 * Inter-communicators are not recorded (their peers are ranks of the remote group). Thread-safe:
 * MPI attribute calls are, and ids are handed out under this file's lock; two threads meeting a new
 * communicator at once may both define it, which the trace's unification merges (same members).
 */
#include "comms.h"
#include "../recorder/recorder.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

pv_comm_world pv_comms_world; /* pv_comms_init */
static int comm_key = MPI_KEYVAL_INVALID; /* the attribute caching a pv_comm_info: pv_comms_init */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int ncomms; /* ids handed out after MPI_COMM_WORLD's 0, under lock */

typedef struct pv_comm_info {
    uint32_t id; /* trace communicator, UINT32_MAX: not recorded */
    int size, rank;
} pv_comm_info;

static int delete_info(MPI_Comm comm, int key, void *value, void *extra)
{
    (void)comm, (void)key, (void)extra;
    free(value);
    return MPI_SUCCESS;
}

void pv_comms_init(int world_rank, int world_size)
{
    pv_comms_world = (pv_comm_world){world_rank, world_size};
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_info, &comm_key, NULL) !=
        MPI_SUCCESS)
        comm_key = MPI_KEYVAL_INVALID;
}

/* Write the definition of a communicator of n members (their ranks in MPI_COMM_WORLD); its id, or
 * UINT32_MAX when it cannot be (records carry ids of 16 bits). */
static uint32_t comm_define(const int *wranks, int n)
{
    size_t len = (size_t)n * 12 + 1;
    char *list = malloc(len);
    uint32_t id = UINT32_MAX;
    if (!list) return id;
    size_t at = 0;
    for (int i = 0; i < n; i++) at += (size_t)snprintf(list + at, len - at, "%s%d", i ? "\t" : "", wranks[i]);
    list[at] = 0;
    pthread_mutex_lock(&lock);
    if (ncomms < 0xffff && pv_rec_defs_line(PV_DEFS_COMM, ncomms + 1, n, list) == 0)
        id = (uint32_t)++ncomms;
    pthread_mutex_unlock(&lock);
    free(list);
    return id;
}

/* Define comm (an intra-communicator); UINT32_MAX when it cannot be. */
static uint32_t define(MPI_Comm comm, int size)
{
    MPI_Group group, world;
    uint32_t id = UINT32_MAX;
    int *ranks = malloc((size_t)size * sizeof *ranks), *wranks = malloc((size_t)size * sizeof *wranks);
    if (ranks && wranks && PMPI_Comm_group(comm, &group) == MPI_SUCCESS) {
        if (PMPI_Comm_group(MPI_COMM_WORLD, &world) == MPI_SUCCESS) {
            for (int i = 0; i < size; i++) ranks[i] = i;
            if (PMPI_Group_translate_ranks(group, size, ranks, world, wranks) == MPI_SUCCESS) {
                int ok = 1;
                for (int i = 0; i < size; i++) ok &= wranks[i] >= 0; /* MPI_UNDEFINED: spawned */
                if (ok) id = comm_define(wranks, size);
            }
            PMPI_Group_free(&world);
        }
        PMPI_Group_free(&group);
    }
    free(ranks), free(wranks);
    return id;
}

int pv_comm_lookup_other(MPI_Comm comm, uint32_t *id, int *size, int *rank)
{
    if (comm == MPI_COMM_NULL || comm_key == MPI_KEYVAL_INVALID) return 0;
    pv_comm_info *info = NULL;
    int found = 0;
    if (PMPI_Comm_get_attr(comm, comm_key, &info, &found) != MPI_SUCCESS) return 0;
    if (!found) {
        int inter = 0;
        if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || !(info = malloc(sizeof *info)))
            return 0;
        info->id = UINT32_MAX;
        if (!inter && PMPI_Comm_size(comm, &info->size) == MPI_SUCCESS &&
            PMPI_Comm_rank(comm, &info->rank) == MPI_SUCCESS)
            info->id = define(comm, info->size);
        if (PMPI_Comm_set_attr(comm, comm_key, info) != MPI_SUCCESS) {
            free(info);
            return 0;
        }
    }
    if (info->id == UINT32_MAX) return 0;
    *id = info->id, *size = info->size, *rank = info->rank;
    return 1;
}
