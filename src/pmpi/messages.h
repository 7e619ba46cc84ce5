/*
 * messages.h — message and collective facts of traced calls (messages.c; internal to src/pmpi).
 *
 * State: the messages matched by MPI_Mprobe/MPI_Improbe and not yet received, one map per process
 * (another thread may receive the message), from the message handle to what the probe saw. It
 * belongs to messages.c: under its own lock when MPI provides MPI_THREAD_MULTIPLE (the thread
 * level given to pv_messages_matched_init); at lower levels MPI calls are serialised by the
 * application (one thread, or its own locks), and these accesses, made inside them, with the calls.
 */
#ifndef PV_MPI_MESSAGES_H
#define PV_MPI_MESSAGES_H
#include <mpi.h>
#include <stdint.h>

#include "runtime.h"

/* Message and collective facts of the calling thread's open CALL (see runtime.h for the call
 * protocol). prepare records what a blocking send sends at the call's entry; leave records what
 * the call received, started (a request's handle) and completed (the handles a Wait* had before the
 * call, kept by pv_call_prepare, that it set to MPI_REQUEST_NULL). */
void pv_messages_prepare(pv_call *c, pv_args *a);
void pv_messages_leave(pv_call *c, const pv_args *a, int rc);
/* Whether a status's byte count can be read from the MPI library's own status fields, checked
 * against MPI_Get_elements_x on statuses it set, once at the start (pv_start); otherwise
 * MPI_Get_count is called per receive. */
void pv_messages_init(void);
int pv_messages_status_fields(void); /* 1: read from the fields; 0: MPI_Get_count */
/* The event role (PV_REC_EV_*) of a call of MPI function fn: what its facts stand for. */
unsigned pv_messages_event_role(int fn);

/* What a probe matched: the message's communicator in the trace, its source and tag as ranks and
 * tags in it, its size. */
typedef struct pv_matched {
    uint32_t comm;  /* trace communicator (< 65536) */
    int32_t source, tag;
    int64_t bytes;  /* -1 unknown */
} pv_matched;

/* How the matched messages are shared: locked when thread_level (the MPI_THREAD_* MPI provides)
 * is MPI_THREAD_MULTIPLE. Call once, at the start, before any traced call; no MPI call. */
void pv_messages_matched_init(int thread_level);
/* Keep what a probe matched as message m (not MPI_MESSAGE_NULL or MPI_MESSAGE_NO_PROC) until the
 * receive that takes it; a second match of the same handle replaces the first. 0, or -1 when out
 * of memory (then its receive is not recorded as one). Thread-safe as above; no MPI call. */
int pv_messages_matched_put(MPI_Message m, const pv_matched *facts);
/* Take back what was kept for message m into *facts and forget it: 1, or 0 when nothing was
 * kept (never matched, or taken already). Thread-safe as above; no MPI call. */
int pv_messages_matched_take(MPI_Message m, pv_matched *facts);

#endif
