/* messages.c — message and collective facts of traced calls, which the trace's conversion turns
 * into OTF2 events (the call's region says which: pv_messages_event_role, records.h PV_REC_EV_*).
 *
 * Blocking calls: MpiSend at the entry of Send/Sendrecv, MpiRecv when Recv/Sendrecv return (source,
 * tag and size from the status, which perfvar supplies when the caller ignores it),
 * MpiCollectiveBegin/End around blocking collectives.
 * Non-blocking calls are tracked to completion with a request id (the recorder's, unique per rank):
 * MpiIsend at the Isend and MpiIsendComplete at the Wait/Test that completes it; MpiIrecvRequest at
 * the Irecv and MpiIrecv (with the status's source, tag and size) at its completion;
 * NonBlockingCollectiveRequest at an I-collective and NonBlockingCollectiveComplete at its
 * completion. A Wait/Test call completes a
 * request when it sets its handle to MPI_REQUEST_NULL. A receive's status is the call's single
 * status (Wait, Test, Waitany, Testany: one request completes) or the matching element of
 * array_of_statuses (Waitall, Testall); Waitsome/Testsome statuses are not decoded (the Irecv's source
 * and tag are used, so an MPI_ANY_SOURCE receive completed there is recorded without its sender).
 * A message matched by MPI_Mprobe/Improbe is received by the MPI_Mrecv (or, like an Irecv, by the
 * completion of the MPI_Imrecv) that takes it, with the probe's source and tag. A request given to
 * MPI_Request_free is forgotten: it is never recorded as complete.
 *
 * Facts are made on their communicator (comms.c; inter-communicators are not recorded), with
 * peers and roots as ranks in it, in the calling thread's records.
 *
 * Pending operations (request -> what completes it records) are in one map per process, because a
 * request may be completed by another thread than the one that started it. Under
 * MPI_THREAD_MULTIPLE the map is locked; below that level MPI calls (ours inside them included) are
 * already serialised. A Wait* takes its requests' entries out before calling MPI: once MPI completes
 * a request it may hand the same handle to another thread's Irecv at once, whose entry must not be
 * mistaken for ours. */
#include "state.h"

#include <string.h>

/* ---- pending operations, as request-map values ---- */
enum { PENDING_RECV = 1, PENDING_SEND, PENDING_COLL };

typedef struct pending {
    int kind;         /* PENDING_* */
    int op;           /* collectives: OTF2_CollectiveOp */
    uint32_t comm;    /* trace communicator (< 65536) */
    int32_t peer;     /* receive: source (may be MPI_ANY_SOURCE); collective: root or -1 */
    int32_t tag;      /* receive: tag (may be MPI_ANY_TAG) */
    uint64_t id;      /* the trace's request id */
    int64_t bytes;    /* receive: posted size (-1 unknown); collective: bytes sent */
    int64_t received; /* collective: bytes received */
} pending;

static pv_u64val pack(const pending *p)
{
    return (pv_u64val){
        (int64_t)((uint64_t)p->kind | (uint64_t)(p->op & 0xff) << 8 | (uint64_t)p->comm << 16 |
                  (uint64_t)(uint32_t)p->peer << 32),
        (int64_t)p->id, p->bytes, p->kind == PENDING_COLL ? p->received : p->tag};
}

static pending unpack(pv_u64val v)
{
    uint64_t a = (uint64_t)v.a;
    pending p = {(int)(a & 0xff), (int)(a >> 8 & 0xff), (uint32_t)(a >> 16 & 0xffff),
                 (int32_t)(uint32_t)(a >> 32), 0, (uint64_t)v.b, v.c, 0};
    if (p.kind == PENDING_COLL)
        p.received = v.d;
    else
        p.tag = (int32_t)v.d;
    return p;
}

int pv_nothing_pending;

/* The one place that decides pv_nothing_pending: after every change of the map (under its lock
 * where there is one), and at the start. Never set under MPI_THREAD_MULTIPLE: another thread's
 * Irecv may add an entry while a Wait runs. */
static void requests_changed(void)
{
    pv_nothing_pending = pv_rt.thread_level != MPI_THREAD_MULTIPLE && pv_rt.requests.n == 0;
}

void pv_messages_init(void) { requests_changed(); }

/* 1 if the request map must be locked (then it is): MPI_THREAD_MULTIPLE. */
static int requests_lock(void)
{
    int locked = pv_rt.thread_level == MPI_THREAD_MULTIPLE;
    if (locked) pthread_mutex_lock(&pv_rt.requests_lock);
    return locked;
}

static void requests_unlock(int locked)
{
    if (locked) pthread_mutex_unlock(&pv_rt.requests_lock);
}

static uint64_t handle_key(const void *h, size_t n, uint64_t salt)
{
    uint64_t k = 0;
    memcpy(&k, h, n < sizeof k ? n : sizeof k);
    return k ^ salt; /* never 0, whatever MPI_REQUEST_NULL is */
}
static uint64_t request_key(MPI_Request r) { return handle_key(&r, sizeof r, 0x9e3779b97f4a7c15ull); }
/* Matched messages (Mprobe -> Mrecv/Imrecv) share the request map under another key space. */
static uint64_t message_key(MPI_Message m) { return handle_key(&m, sizeof m, 0xc2b2ae3d27d4eb4full); }

static void put_pending(uint64_t key, const pending *p)
{
    int locked = requests_lock();
    pv_u64map_put(&pv_rt.requests, key, pack(p));
    requests_changed();
    requests_unlock(locked);
}

/* The trace communicator of a, if its messages are recorded (and fit a pending entry). */
static int comm_of(const pv_args *a, uint32_t *id, int *size, int *rank)
{
    return pv_comm_lookup(a->comm, id, size, rank) && *id <= 0xffff;
}

/* ---- facts ---- */
static pv_rec_stream *rec_of(const pv_call *c) { return c->thread->rec; }

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

/* The status (may be NULL) wins over what the receive was given; 0 if nothing can be recorded. */
static int received(const MPI_Status *st, int *source, int *tag, int64_t *bytes)
{
    if (st) {
        int count;
        *source = st->MPI_SOURCE;
        *tag = st->MPI_TAG;
        if (PMPI_Get_count(st, MPI_BYTE, &count) == MPI_SUCCESS && count != MPI_UNDEFINED)
            *bytes = count;
    }
    return !(*source < 0 || *source == MPI_PROC_NULL || *tag < 0); /* ANY_SOURCE/TAG, unknown */
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
static pv_req_slot *slots_of(pv_call *c) { return c->heap_slots ? c->heap_slots : c->slots; }

/* Take the pending operations of a Wait*'s requests out of the map into its slots. Not inlined: it
 * would make every call's pv_messages_prepare save more registers (measured with callgrind). */
static __attribute__((noinline)) void take_pending(pv_call *c, const pv_args *a)
{
    pv_req_slot *s = slots_of(c);
    int locked = requests_lock();
    for (int i = 0; i < a->nreq; i++)
        s[i].pending = pv_u64map_take(&pv_rt.requests, request_key(s[i].key), &s[i].val);
    requests_changed();
    requests_unlock(locked);
}

/* Did the Wait* or Test* complete request i? A completed non-persistent request's handle is set to
 * MPI_REQUEST_NULL (Fortran: its Fortran value); Test*, Waitany and Waitsome complete only some. */
static int completed(const pv_args *a, const pv_req_slot *s, int i)
{
    MPI_Request now = a->requests ? a->requests[i] : PMPI_Request_f2c(a->frequests[i]);
    return now != s[i].key;
}

static void complete(pv_call *c, const pending *p, const MPI_Status *st)
{
    switch (p->kind) {
    case PENDING_SEND: pv_rec_complete(rec_of(c), p->id, PV_REC_DONE_SEND, 0); break;
    case PENDING_RECV: {
        /* Unknown sender (Waitsome with MPI_ANY_SOURCE): the request stays without completion
         * in the trace rather than with a made-up sender. */
        uint16_t f = recv_record(c, p->comm, p->peer, p->tag, p->bytes, st);
        if (f) pv_rec_complete(rec_of(c), p->id, PV_REC_DONE_RECV, f);
        break;
    }
    case PENDING_COLL: {
        uint16_t f = coll_fact(c, p->op, p->comm, p->peer >= 0 ? (uint32_t)p->peer : OTF2_UNDEFINED_UINT32,
                               (uint64_t)p->bytes, (uint64_t)p->received);
        pv_rec_complete(rec_of(c), p->id, PV_REC_DONE_COLL, f);
        break;
    }
    default: break;
    }
}

static void wait_leave(pv_call *c, const pv_args *a)
{
    pv_req_slot *s = slots_of(c);
    int put_back = 0;
    for (int i = 0; i < a->nreq; i++) {
        if (!s[i].pending) continue;
        if (!completed(a, s, i)) {
            put_back = 1;
            continue;
        }
        const MPI_Status *st = a->has_statuses ? (a->statuses != MPI_STATUSES_IGNORE ? &a->statuses[i] : NULL)
                                               : (a->has_status ? a->status : NULL);
        pending p = unpack(s[i].val);
        complete(c, &p, st);
    }
    if (!put_back) return;
    /* Still pending (not completed by this call): a later Wait* or Test* will. */
    int locked = requests_lock();
    for (int i = 0; i < a->nreq; i++)
        if (s[i].pending && !completed(a, s, i))
            pv_u64map_put(&pv_rt.requests, request_key(s[i].key), s[i].val);
    requests_changed();
    requests_unlock(locked);
}

/* ---- the call protocol ---- */
void pv_messages_prepare(pv_call *c, pv_args *a)
{
    uint32_t comm;
    int size, rank, tag;
    switch (pv_fn_info[c->fn].kind) {
    case PV_KIND_SEND: send_record(c, a, a->bytes); break;
    case PV_KIND_ISEND:
        c->request_id = 0;
        if (send_target(a, &comm, &tag)) {
            c->request_id = pv_rec_call_request(rec_of(c), c->unit);
            c->unit->x = msg_fact(c, comm, a->dest, tag, a->bytes);
        }
        break;
    case PV_KIND_SENDRECV: send_record(c, a, a->send_bytes); break;
    case PV_KIND_ICOLLECTIVE:
        c->request_id = 0;
        if (comm_of(a, &comm, &size, &rank)) c->request_id = pv_rec_call_request(rec_of(c), c->unit);
        break;
    case PV_KIND_WAIT:
    case PV_KIND_REQUEST_FREE: take_pending(c, a); break; /* Request_free: dropped */
    default: break;
    }
}

void pv_messages_leave(pv_call *c, const pv_args *a, int rc)
{
    int fn = c->fn;
    if (pv_fn_info[fn].kind == PV_KIND_WAIT) {
        wait_leave(c, a); /* also when it failed: what it took out goes back */
        return;
    }
    if (rc != MPI_SUCCESS) return;
    uint32_t comm;
    int size, rank;
    switch (pv_fn_info[fn].kind) {
    case PV_KIND_RECV:
    case PV_KIND_SENDRECV:
        if (comm_of(a, &comm, &size, &rank)) {
            uint16_t f = recv_record(c, comm, a->source, a->recvtag != PV_NONE ? a->recvtag : a->tag,
                                     a->recv_bytes >= 0 ? a->recv_bytes : a->bytes,
                                     a->has_status ? a->status : NULL);
            if (pv_fn_info[fn].kind == PV_KIND_RECV) c->unit->x = f;
            else c->unit->y = f;
        }
        break;
    case PV_KIND_ISEND:
        if (c->request_id && a->request && *a->request != MPI_REQUEST_NULL) {
            pending p = {PENDING_SEND, 0, 0, -1, 0, c->request_id, 0, 0};
            put_pending(request_key(*a->request), &p);
        }
        break;
    case PV_KIND_IRECV:
        if (a->source != MPI_PROC_NULL && a->request && *a->request != MPI_REQUEST_NULL &&
            comm_of(a, &comm, &size, &rank)) {
            pending p = {PENDING_RECV, 0, comm, a->source, a->tag,
                         pv_rec_call_request(rec_of(c), c->unit), a->bytes, 0};
            put_pending(request_key(*a->request), &p);
        }
        break;
    case PV_KIND_ICOLLECTIVE:
        if (c->request_id && a->request && comm_of(a, &comm, &size, &rank)) {
            uint64_t sent, recvd;
            collective_bytes(fn, a, size, rank, &sent, &recvd);
            uint32_t root = root_of(a);
            pending p = {PENDING_COLL, pv_fn_info[fn].op, comm,
                         root == OTF2_UNDEFINED_UINT32 ? -1 : (int32_t)root, 0, c->request_id,
                         (int64_t)sent, (int64_t)recvd};
            put_pending(request_key(*a->request), &p);
        }
        break;
    case PV_KIND_MPROBE: /* the message is bound to this receiver now; it is received by Mrecv */
        if (a->message && *a->message != MPI_MESSAGE_NULL && *a->message != MPI_MESSAGE_NO_PROC &&
            (!a->flag || *a->flag) && a->has_status && comm_of(a, &comm, &size, &rank)) {
            int count;
            int64_t bytes = PMPI_Get_count(a->status, MPI_BYTE, &count) == MPI_SUCCESS &&
                                    count != MPI_UNDEFINED ? count : -1;
            pending p = {PENDING_RECV, 0, comm, a->status->MPI_SOURCE, a->status->MPI_TAG, 0, bytes, 0};
            put_pending(message_key(*a->message), &p);
        }
        break;
    case PV_KIND_MRECV:
    case PV_KIND_IMRECV: {
        pv_u64val v;
        int locked = requests_lock();
        int found = pv_u64map_take(&pv_rt.requests, message_key(a->message_before), &v);
        requests_changed();
        requests_unlock(locked);
        if (!found) break;
        pending p = unpack(v);
        if (pv_fn_info[fn].kind == PV_KIND_MRECV) {
            c->unit->x = recv_record(c, p.comm, p.peer, p.tag, p.bytes, a->has_status ? a->status : NULL);
        } else if (a->request && *a->request != MPI_REQUEST_NULL) { /* completed by a Wait/Test */
            p.id = pv_rec_call_request(rec_of(c), c->unit);
            put_pending(request_key(*a->request), &p);
        }
        break;
    }
    case PV_KIND_COLLECTIVE:
        if (comm_of(a, &comm, &size, &rank)) {
            uint64_t sent, recvd;
            collective_bytes(fn, a, size, rank, &sent, &recvd);
            c->unit->x = coll_fact(c, pv_fn_info[fn].op, comm, root_of(a), sent, recvd);
        }
        break;
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
