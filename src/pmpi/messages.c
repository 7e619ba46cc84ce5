/* messages.c — message and collective facts of traced calls, which the trace's conversion turns
 * into OTF2 events (the call's region says which: pv_messages_event_role, records.h PV_REC_EV_*).
 *
 * Blocking calls: MpiSend at the entry of Send/Sendrecv, MpiRecv when Recv/Sendrecv return (source,
 * tag and size from the status, which perfvar supplies when the caller ignores it),
 * MpiCollectiveBegin/End around blocking collectives.
 * Non-blocking operations: the call that starts one records what it is (the message sent, the
 * receive as posted, the collective) and the handle MPI returned; a Wait/Test call that completes a
 * request (sets its handle to MPI_REQUEST_NULL) records the handle it had and, where the call has
 * one, its status (source, tag, size). Nothing is looked up while the application runs: the
 * conversion pairs completions with starts by handle (records.h), and writes MpiIsend ...
 * MpiIsendComplete, MpiIrecvRequest ... MpiIrecv (with the status's source, tag and size),
 * NonBlockingCollectiveRequest ... NonBlockingCollectiveComplete. A receive's status is the call's
 * single status (Wait, Test, Waitany, Testany: one request completes) or the matching element of
 * array_of_statuses (Waitall, Testall); Waitsome/Testsome statuses are not decoded (the Irecv's source
 * and tag are used, so an MPI_ANY_SOURCE receive completed there is recorded without its sender).
 * A message matched by MPI_Mprobe/Improbe is received by the MPI_Mrecv (or, like an Irecv, by the
 * completion of the MPI_Imrecv) that takes it, with the probe's source and tag: matched messages are
 * kept in a map (one per process: another thread may receive the message) from the probe to the
 * receive. A request given to MPI_Request_free is never recorded as complete.
 *
 * Facts are made on their communicator (comms.c; inter-communicators are not recorded), with
 * peers and roots as ranks in it, in the calling thread's records. */
#include "messages.h"
#include "call_end.h"
#include "comms.h"
#include "threads.h"
#include "../core/u64map.h"
#include "../recorder/recorder.h"

#include <pthread.h>
#include <string.h>

/* ---- matched messages (Mprobe -> Mrecv/Imrecv): messages.h ---- */
static pthread_mutex_t matched_lock = PTHREAD_MUTEX_INITIALIZER; /* only at MPI_THREAD_MULTIPLE */
static int matched_locked; /* the map is locked: MPI_THREAD_MULTIPLE (pv_messages_matched_init) */
static pv_u64map matched; /* message_key(handle) -> pack(pv_matched) */

void pv_messages_matched_init(int thread_level) { matched_locked = thread_level == MPI_THREAD_MULTIPLE; }

static pv_u64val pack(const pv_matched *m)
{
    return (pv_u64val){(int64_t)m->comm, m->source, m->tag, m->bytes};
}

static pv_matched unpack(pv_u64val v)
{
    return (pv_matched){(uint32_t)v.a, (int32_t)v.b, (int32_t)v.c, v.d};
}

/* 1 if the map must be locked (then it is): MPI_THREAD_MULTIPLE. Below that level MPI calls, ours
 * inside them included, are serialised by the application. */
static int matched_lock_if_needed(void)
{
    int locked = matched_locked;
    if (locked) pthread_mutex_lock(&matched_lock);
    return locked;
}

static void matched_unlock(int locked)
{
    if (locked) pthread_mutex_unlock(&matched_lock);
}

/* The bits of a handle of n bytes (a pointer in Open MPI, an int in MPICH). */
static uint64_t bits_of(const void *handle, size_t n)
{
    uint64_t k = 0;
    memcpy(&k, handle, n < sizeof k ? n : sizeof k);
    return k;
}

/* Never 0 (the map's empty key), whatever MPI_MESSAGE_NULL is. */
static uint64_t message_key(MPI_Message m) { return bits_of(&m, sizeof m) ^ 0xc2b2ae3d27d4eb4full; }

/* A request handle's bits, as records carry them. */
static uint64_t handle_bits(MPI_Request r) { return bits_of(&r, sizeof r); }

int pv_messages_matched_put(MPI_Message m, const pv_matched *facts)
{
    int locked = matched_lock_if_needed();
    int rc = pv_u64map_put(&matched, message_key(m), pack(facts));
    matched_unlock(locked);
    return rc;
}

int pv_messages_matched_take(MPI_Message m, pv_matched *facts)
{
    pv_u64val v;
    int locked = matched_lock_if_needed();
    int found = pv_u64map_take(&matched, message_key(m), &v);
    matched_unlock(locked);
    if (found) *facts = unpack(v);
    return found;
}

/* The trace communicator of comm, if its messages are recorded (and fit a fact's 16 bits). */
static inline int recorded_comm(MPI_Comm comm, uint32_t *id, int *size, int *rank)
{
    return pv_comm_lookup(comm, id, size, rank) && *id <= 0xffff;
}

static int comm_of(const pv_args *a, uint32_t *id, int *size, int *rank)
{
    return recorded_comm(a->comm, id, size, rank);
}

/* Whether a status's or a receive's source and tag name a sender: not MPI_ANY_SOURCE, MPI_ANY_TAG,
 * MPI_PROC_NULL or unknown. */
static inline int names_sender(int source, int tag)
{
    return !(source < 0 || source == MPI_PROC_NULL || tag < 0);
}

/* ---- facts ---- */
static pv_rec_stream *rec_of(const pv_call *c) { return c->thread->rec; }

/* The message fact of the call's own site (the memo of its position 0). */
static uint16_t site_msg_fact(pv_call *c, uint32_t comm, int peer, int tag, int64_t bytes)
{
    return pv_rec_fact_memoized(rec_of(c), pv_fact_memo_of(c->thread, c->site_id, 0), PV_REC_FACT_MSG,
                                0, comm, (uint32_t)peer, (uint32_t)tag, bytes > 0 ? (uint64_t)bytes : 0, 0);
}

static uint16_t msg_fact(pv_call *c, uint32_t comm, int peer, int tag, int64_t bytes)
{
    return pv_rec_fact(rec_of(c), PV_REC_FACT_MSG, 0, comm, (uint32_t)peer, (uint32_t)tag,
                       bytes > 0 ? (uint64_t)bytes : 0, 0);
}

static uint16_t coll_fact(pv_call *c, int op, uint32_t comm, uint32_t root, uint64_t sent,
                          uint64_t received)
{
    return pv_rec_fact(rec_of(c), PV_REC_FACT_COLL, (uint32_t)op, comm, root, 0, sent, received);
}

static int send_target(const pv_args *a, uint32_t *comm, int *tag)
{
    int size, rank;
    *tag = a->sendtag != PV_NONE ? a->sendtag : a->tag;
    return a->dest != MPI_PROC_NULL && a->dest >= 0 && comm_of(a, comm, &size, &rank);
}

/* The call's x: the message it sends. */
static void send_record(pv_call *c, const pv_args *a, int64_t bytes)
{
    uint32_t comm;
    int tag;
    if (send_target(a, &comm, &tag)) c->unit->x = msg_fact(c, comm, a->dest, tag, bytes);
}

/* A status's byte count from the library's own fields, -1 for a library whose fields are not known.
 * It is what MPI_Get_count(status, MPI_BYTE) returns, without a call into the library. */
static inline int64_t status_count_field(const MPI_Status *st)
{
#if defined(OPEN_MPI)
    return (int64_t)st->_ucount;
#elif defined(MPICH)
    /* MPICH keeps the count's high bits above the cancelled flag (bit 0). */
    return (int64_t)((uint64_t)((unsigned)st->count_hi_and_cancelled >> 1) << 32 | (unsigned)st->count_lo);
#else
    (void)st;
    return -1;
#endif
}

static int status_fields_ok; /* pv_messages_init: status_count_field agrees with MPI_Get_elements_x */

void pv_messages_init(void)
{
    static const MPI_Count sizes[] = {0, 1, 4096, 123456789, ((MPI_Count)1 << 31) + 5, ((MPI_Count)1 << 40) + 3};
    int ok = 1;
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int cancelled = 0; cancelled < 2; cancelled++) {
            MPI_Status st;
            memset(&st, 0, sizeof st);
            MPI_Count count = -1;
            ok &= PMPI_Status_set_elements_x(&st, MPI_BYTE, sizes[i]) == MPI_SUCCESS &&
                  PMPI_Status_set_cancelled(&st, cancelled) == MPI_SUCCESS &&
                  PMPI_Get_elements_x(&st, MPI_BYTE, &count) == MPI_SUCCESS && count == sizes[i] &&
                  status_count_field(&st) == sizes[i];
        }
    status_fields_ok = ok;
}

int pv_messages_status_fields(void) { return status_fields_ok; }

/* A status's size in bytes, -1 when MPI does not say. */
static int64_t status_bytes(const MPI_Status *st)
{
    if (__builtin_expect(status_fields_ok, 1)) return status_count_field(st);
    int count;
    return PMPI_Get_count(st, MPI_BYTE, &count) == MPI_SUCCESS && count != MPI_UNDEFINED ? count : -1;
}

/* The status (may be NULL) wins over what the receive was given; 0 if nothing can be recorded. */
static int received(const MPI_Status *st, int *source, int *tag, int64_t *bytes)
{
    if (st) {
        int64_t n = status_bytes(st);
        *source = st->MPI_SOURCE;
        *tag = st->MPI_TAG;
        if (n >= 0) *bytes = n;
    }
    return names_sender(*source, *tag);
}

/* The message the call received: its fact's slot, 0 if it cannot be recorded. */
static uint16_t recv_record(pv_call *c, uint32_t comm, int source, int tag, int64_t bytes,
                            const MPI_Status *st)
{
    return received(st, &source, &tag, &bytes) ? msg_fact(c, comm, source, tag, bytes) : 0;
}

/* Bytes a collective sends and receives on this rank (0 where the arguments do not say). */
static void collective_bytes(int fn, const pv_args *a, int size, int rank, uint64_t *sent,
                             uint64_t *recvd)
{
    uint64_t n = (uint64_t)size;
    uint64_t b = a->bytes > 0 ? (uint64_t)a->bytes : 0;
    uint64_t s = a->send_bytes > 0 ? (uint64_t)a->send_bytes : 0;
    uint64_t r = a->recv_bytes > 0 ? (uint64_t)a->recv_bytes : 0;
    int is_root = a->root == rank;
    *sent = 0, *recvd = 0;
    switch (pv_fn_info[fn].op) {
    case OTF2_COLLECTIVE_OP_BCAST: *sent = is_root ? b * n : 0, *recvd = b; break;
    case OTF2_COLLECTIVE_OP_REDUCE: *sent = b, *recvd = is_root ? b * n : 0; break;
    case OTF2_COLLECTIVE_OP_ALLREDUCE: *sent = b * n, *recvd = b * n; break;
    case OTF2_COLLECTIVE_OP_SCAN:
    case OTF2_COLLECTIVE_OP_EXSCAN: *sent = b, *recvd = b; break;
    case OTF2_COLLECTIVE_OP_ALLGATHER:
    case OTF2_COLLECTIVE_OP_ALLTOALL: /* in place: the receive side's count */
        *sent = (a->send_bytes >= 0 ? s : r) * n, *recvd = r * n;
        break;
    case OTF2_COLLECTIVE_OP_GATHER: *sent = a->send_bytes >= 0 ? s : r, *recvd = is_root ? r * n : 0; break;
    case OTF2_COLLECTIVE_OP_SCATTER: *sent = is_root ? s * n : 0, *recvd = r; break;
    default: break; /* vector variants, Reduce_scatter, Barrier: no byte counts */
    }
}

static uint32_t root_of(const pv_args *a)
{
    return a->root != PV_NONE && a->root >= 0 ? (uint32_t)a->root : OTF2_UNDEFINED_UINT32;
}

/* ---- Wait / Test ---- */
/* The STATUS fact of the status (may be NULL) of the i-th request a Wait/Test completed, through the
 * call site's memo of position i; 0 if it names no sender: what its receive got, if it was one (a
 * send's status is recorded too, and left unread: which kind of request a handle was is known only
 * when the records are read). */
static inline uint16_t status_fact(pv_call *c, const MPI_Status *st, int i)
{
    if (!st || !names_sender(st->MPI_SOURCE, st->MPI_TAG)) return 0;
    int64_t bytes = status_bytes(st);
    return pv_rec_fact_memoized(rec_of(c), pv_fact_memo_of(c->thread, c->site_id, i), PV_REC_FACT_STATUS,
                                0, 0, (uint32_t)st->MPI_SOURCE, (uint32_t)st->MPI_TAG,
                                bytes >= 0 ? (uint64_t)bytes : 0, bytes < 0);
}

/* Every request the Wait* or Test* completed: a non-persistent request's handle is set to
 * MPI_REQUEST_NULL (Fortran: its Fortran value) when it completes; Test*, Waitany and Waitsome
 * complete only some. */
static void wait_leave(pv_call *c, const pv_args *a)
{
    const MPI_Request *before = c->heap_keys ? c->heap_keys : c->keys;
    for (int i = 0; i < a->nreq; i++) {
        if (before[i] == MPI_REQUEST_NULL) continue;
        MPI_Request now = a->requests ? a->requests[i] : PMPI_Request_f2c(a->frequests[i]);
        if (now == before[i]) continue;
        const MPI_Status *st = a->has_statuses ? (a->statuses != MPI_STATUSES_IGNORE ? &a->statuses[i] : NULL)
                                               : (a->has_status ? a->status : NULL);
        pv_rec_complete(rec_of(c), handle_bits(before[i]), status_fact(c, st, i));
    }
}

void pv_messages_completed(pv_call *c, MPI_Request before, const MPI_Status *status)
{
    pv_rec_complete(rec_of(c), handle_bits(before), status_fact(c, status, 0));
}

/* Waitall / Testall of at most PV_INLINE_REQUESTS requests (pv_messages_all_begin kept the
 * handles in c->keys): the same records as wait_leave, without pv_args. */
void pv_messages_all_end(pv_call *c, int n, const MPI_Request *requests, const MPI_Status *statuses)
{
    for (int i = 0; i < n; i++) {
        MPI_Request before = c->keys[i];
        if (before == MPI_REQUEST_NULL || requests[i] == before) continue;
        pv_rec_complete(rec_of(c), handle_bits(before),
                        status_fact(c, statuses != MPI_STATUSES_IGNORE ? &statuses[i] : NULL, i));
    }
    pv_call_end_inline(c);
}

/* The Fortran short path gives MPI perfvar's own statuses for up to PV_INLINE_REQUESTS requests where
 * the caller ignores them: pv_f_statuses_arg must find room in the call, not allocate. */
_Static_assert(sizeof(((pv_call *)0)->own_fstatuses) >= PV_INLINE_REQUESTS * (sizeof(MPI_Status) + sizeof(MPI_Fint)),
               "PV_INLINE_REQUESTS Fortran statuses of any binding fit in pv_call");

void pv_messages_fall_begin(pv_call *c, int n, const MPI_Fint *requests, MPI_Fint *before)
{
    for (int i = 0; i < n; i++) {
        before[i] = requests[i];
        c->keys[i] = requests[i] == pv_f_request_null ? MPI_REQUEST_NULL : PMPI_Request_f2c(requests[i]);
    }
}

void pv_messages_fall_end(pv_call *c, int n, const MPI_Fint *before, const MPI_Fint *requests,
                          const void *statuses_arg, pv_fbinding b)
{
    for (int i = 0; i < n; i++) {
        if (before[i] == pv_f_request_null || requests[i] == before[i]) continue;
        MPI_Status st;
        const MPI_Status *s = pv_f_status_at(statuses_arg, i, b, &st);
        pv_rec_complete(rec_of(c), handle_bits(c->keys[i]), status_fact(c, s, i));
    }
    pv_call_end_inline(c);
}

/* Isend (recv 0) or Irecv (recv 1): the message sent, or the receive as posted (a negative source
 * is MPI_ANY_SOURCE, which the completion's status replaces), as the call's x, and the request's
 * handle; then the call's end. */
static inline void p2p_started(pv_call *c, int recv, int peer, int tag, int64_t bytes, MPI_Comm comm,
                               const MPI_Request *request, int rc)
{
    uint32_t id;
    int size, rank;
    if (rc == MPI_SUCCESS && peer != MPI_PROC_NULL && (recv || peer >= 0) && request &&
        *request != MPI_REQUEST_NULL && recorded_comm(comm, &id, &size, &rank)) {
        c->unit->x = site_msg_fact(c, id, peer, tag, bytes);
        pv_rec_request(rec_of(c), handle_bits(*request));
    }
    pv_call_end_inline(c);
}

void pv_messages_isend_end(pv_call *c, int peer, int tag, int64_t bytes, MPI_Comm comm,
                           const MPI_Request *request, int rc)
{
    p2p_started(c, 0, peer, tag, bytes, comm, request, rc);
}

void pv_messages_irecv_end(pv_call *c, int peer, int tag, int64_t bytes, MPI_Comm comm,
                           const MPI_Request *request, int rc)
{
    p2p_started(c, 1, peer, tag, bytes, comm, request, rc);
}

/* The request the call started, if it returned one: a REQUEST unit after its fact x. */
static void started(pv_call *c, const pv_args *a, uint16_t x)
{
    if (!a->request || *a->request == MPI_REQUEST_NULL) return;
    c->unit->x = x;
    pv_rec_request(rec_of(c), handle_bits(*a->request));
}

/* ---- the call protocol ---- */
void pv_messages_prepare(pv_call *c, pv_args *a)
{
    switch (pv_fn_info[c->fn].kind) {
    case PV_KIND_SEND: send_record(c, a, a->bytes); break;
    case PV_KIND_SENDRECV: send_record(c, a, a->send_bytes); break;
    default: break;
    }
}

/* Recv or Sendrecv: the message received as the call's x (Recv) or y (Sendrecv). */
static void recv_leave(pv_call *c, const pv_args *a, int fn)
{
    uint32_t comm;
    int size, rank;
    if (!comm_of(a, &comm, &size, &rank)) return;
    uint16_t f = recv_record(c, comm, a->source, a->recvtag != PV_NONE ? a->recvtag : a->tag,
                             a->recv_bytes >= 0 ? a->recv_bytes : a->bytes, a->has_status ? a->status : NULL);
    if (pv_fn_info[fn].kind == PV_KIND_RECV) c->unit->x = f;
    else c->unit->y = f;
}

/* A blocking collective's fact as the call's x, or a nonblocking one's with its request. */
static void collective_leave(pv_call *c, const pv_args *a, int fn)
{
    uint32_t comm;
    int size, rank;
    if (!comm_of(a, &comm, &size, &rank)) return;
    uint64_t sent, recvd;
    collective_bytes(fn, a, size, rank, &sent, &recvd);
    uint16_t f = coll_fact(c, pv_fn_info[fn].op, comm, root_of(a), sent, recvd);
    if (pv_fn_info[fn].kind == PV_KIND_ICOLLECTIVE) started(c, a, f);
    else c->unit->x = f;
}

/* Mprobe: the message is bound to this receiver now; it is received by Mrecv, which finds it. */
static void mprobe_leave(const pv_args *a)
{
    uint32_t comm;
    int size, rank;
    if (a->message && *a->message != MPI_MESSAGE_NULL && *a->message != MPI_MESSAGE_NO_PROC &&
        (!a->flag || *a->flag) && a->has_status && comm_of(a, &comm, &size, &rank)) {
        pv_matched m = {comm, a->status->MPI_SOURCE, a->status->MPI_TAG, status_bytes(a->status)};
        pv_messages_matched_put(*a->message, &m);
    }
}

/* Mrecv (the message received as x) or Imrecv (completed by a Wait/Test, like an Irecv). */
static void mrecv_leave(pv_call *c, const pv_args *a, int fn)
{
    pv_matched m;
    if (!pv_messages_matched_take(a->message_before, &m)) return;
    if (pv_fn_info[fn].kind == PV_KIND_MRECV)
        c->unit->x = recv_record(c, m.comm, m.source, m.tag, m.bytes, a->has_status ? a->status : NULL);
    else
        started(c, a, msg_fact(c, m.comm, m.source, m.tag, m.bytes));
}

void pv_messages_leave(pv_call *c, const pv_args *a, int rc)
{
    int fn = c->fn;
    if (pv_fn_info[fn].kind == PV_KIND_WAIT) {
        wait_leave(c, a); /* also when it failed: requests it completed are complete */
        return;
    }
    if (rc != MPI_SUCCESS) return;
    switch (pv_fn_info[fn].kind) {
    case PV_KIND_RECV:
    case PV_KIND_SENDRECV: recv_leave(c, a, fn); break;
    /* ISEND, IRECV: every such call takes its short path (p2p_started). */
    case PV_KIND_ICOLLECTIVE:
    case PV_KIND_COLLECTIVE: collective_leave(c, a, fn); break;
    case PV_KIND_MPROBE: mprobe_leave(a); break;
    case PV_KIND_MRECV:
    case PV_KIND_IMRECV: mrecv_leave(c, a, fn); break;
    default: break;
    }
}

unsigned pv_messages_event_role(int fn)
{
    switch (pv_fn_info[fn].kind) {
    case PV_KIND_SEND: return PV_REC_EV_SEND;
    case PV_KIND_ISEND: return PV_REC_EV_ISEND;
    case PV_KIND_RECV:
    case PV_KIND_MRECV: return PV_REC_EV_RECV;
    case PV_KIND_SENDRECV: return PV_REC_EV_SENDRECV;
    case PV_KIND_IRECV:
    case PV_KIND_IMRECV: return PV_REC_EV_IRECV;
    case PV_KIND_COLLECTIVE: return PV_REC_EV_COLL;
    case PV_KIND_ICOLLECTIVE: return PV_REC_EV_ICOLL;
    default: return PV_REC_EV_NONE;
    }
}
