/*
 * requests.h — a rank's non-blocking operations that have started and not yet completed, while its
 * records are converted, found by their MPI handle (internal; MPI-free). records.h says how starts
 * and completions are paired: the caller gives them in time order over the rank's threads.
 *
 * Not thread-safe: one converter owns it.
 */
#ifndef PV_TRACE_REQUESTS_H
#define PV_TRACE_REQUESTS_H
#include <stdint.h>

#include "../core/u64map.h"
#include "../recorder/recorder.h"

/* What a start left for its completion. */
typedef struct pv_pending_request {
    uint64_t id;          /* PV_REC_REQUEST_ID of the start */
    unsigned ev;          /* the start's event role, PV_REC_EV_ISEND / IRECV / ICOLL */
    int has_x;
    pv_rec_fact_def x;    /* the start's fact: the message sent, the receive posted, the collective */
} pv_pending_request;

typedef struct pv_requests {
    pv_u64map by_handle;  /* handle key -> index into items (val.a) */
    pv_pending_request *items;
    uint32_t *free_items; /* indexes of items not in use */
    uint32_t n, cap, nfree;
} pv_requests;

/* A start of handle: replaces the start still pending under the same handle (one that was never seen
 * to complete: freed with MPI_Request_free, or completed untraced). 0, or -1 when out of memory. */
int pv_requests_start(pv_requests *q, uint64_t handle, const pv_pending_request *p);
/* A completion of handle: 1 and the start it completes in *out (no longer pending), 0 if none is. */
int pv_requests_complete(pv_requests *q, uint64_t handle, pv_pending_request *out);
/* Starts still pending. */
static inline uint32_t pv_requests_pending(const pv_requests *q) { return (uint32_t)q->by_handle.n; }
void pv_requests_free(pv_requests *q);

#endif
