/* messages.c — MpiSend/MpiRecv and collective records for traced calls.
 *
 * A message matched by MPI_Mprobe/Improbe is recorded as received by the MPI_Mrecv (or, through its
 * request, the Wait/Test completing the MPI_Imrecv) that takes it, with the probe's source and tag.
 *
 * A receive started by MPI_Irecv is recorded by the Wait or Test call that completes it: a request
 * handle the call set to MPI_REQUEST_NULL. Its status is the call's single status (Wait, Test,
 * Waitany, Testany: one request completes) or the matching element of array_of_statuses
 * (Waitall, Testall); Waitsome/Testsome statuses are not decoded (the Irecv's source and tag are used,
 * so an MPI_ANY_SOURCE receive completed there is not recorded).
 *
 * Messages and collectives are recorded on their communicator (comms.c; inter-communicators are
 * not recorded), with peers and roots as ranks in it. Sends are recorded at the entry of
 * Send/Isend/Sendrecv; receives at completion (Recv, Sendrecv, or the Wait* completing an
 * Irecv), with source, tag and size from the status when there is one, else from the Irecv's
 * arguments. Records go to the calling thread's location.
 *
 * Pending receives (Irecv -> the Wait* that completes it) are in one map per process, because a
 * request may be completed by another thread than the one that started it. Under
 * MPI_THREAD_MULTIPLE the map is locked; below that level MPI calls (ours inside them included) are
 * already serialised. A Wait* takes its requests' entries out before calling MPI: once MPI completes
 * a request it may hand the same handle to another thread's Irecv at once, whose entry must not be
 * mistaken for ours. */
#include "state.h"

#include <string.h>

/* A pending receive's bytes (48 bits, all ones = unknown) and trace communicator (16 bits), packed
 * into the request map's second value; communicators beyond 65535 per rank are not recorded. */
#define PV_BYTES_MASK ((UINT64_C(1) << 48) - 1)
static int64_t pack_bytes(int64_t bytes, uint32_t comm)
{
    return (int64_t)(((uint64_t)comm << 48) | ((uint64_t)bytes & PV_BYTES_MASK));
}
static int64_t unpack_bytes(int64_t v)
{
    uint64_t b = (uint64_t)v & PV_BYTES_MASK;
    return b == PV_BYTES_MASK ? -1 : (int64_t)b;
}
static uint32_t unpack_comm(int64_t v) { return (uint32_t)((uint64_t)v >> 48); }

/* The trace communicator of a, if its messages are recorded (and fit the request map's packing). */
static int comm_of(const pv_args *a, uint32_t *id, int *size, int *rank)
{
    return pv_comm_lookup(a->comm, id, size, rank) && *id <= 0xffff;
}

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

static void send_record(pv_trace_loc *l, uint64_t t, const pv_args *a, int64_t bytes)
{
    uint32_t comm;
    int size, rank;
    if (a->dest == MPI_PROC_NULL || a->dest < 0 || !comm_of(a, &comm, &size, &rank)) return;
    int tag = a->sendtag != PV_NONE ? a->sendtag : a->tag;
    pv_trace_send(l, t, comm, (uint32_t)a->dest, (uint32_t)tag, bytes > 0 ? (uint64_t)bytes : 0);
}

/* A completed receive: the status (may be NULL) wins over what the call was given. */
static void recv_record(pv_trace_loc *l, uint64_t t, uint32_t comm, int source, int tag,
                        int64_t bytes, const MPI_Status *st)
{
    if (st) {
        int count;
        source = st->MPI_SOURCE;
        tag = st->MPI_TAG;
        if (PMPI_Get_count(st, MPI_BYTE, &count) == MPI_SUCCESS && count != MPI_UNDEFINED)
            bytes = count;
    }
    if (source < 0 || source == MPI_PROC_NULL || tag < 0) return; /* ANY_SOURCE/TAG, unknown */
    pv_trace_recv(l, t, comm, (uint32_t)source, (uint32_t)tag, bytes > 0 ? (uint64_t)bytes : 0);
}

static uint64_t request_key(MPI_Request r)
{
    uint64_t k = 0;
    memcpy(&k, &r, sizeof r < sizeof k ? sizeof r : sizeof k);
    return k ^ 0x9e3779b97f4a7c15ull; /* never 0, whatever MPI_REQUEST_NULL is */
}

/* Matched messages (Mprobe -> Mrecv/Imrecv) share the request map under another key space. */
static uint64_t message_key(MPI_Message m)
{
    uint64_t k = 0;
    memcpy(&k, &m, sizeof m < sizeof k ? sizeof m : sizeof k);
    return k ^ 0xc2b2ae3d27d4eb4full;
}

static pv_req_slot *slots_of(pv_call *c) { return c->heap_slots ? c->heap_slots : c->slots; }

/* Take the pending receives of a Wait*'s requests out of the map into its slots. Not inlined: it
 * would make every call's pv_messages_prepare save more registers (measured with callgrind). */
static __attribute__((noinline)) void take_pending(pv_call *c, const pv_args *a)
{
    pv_req_slot *s = slots_of(c);
    int locked = requests_lock();
    for (int i = 0; i < a->nreq; i++) {
        pv_u64val v = {0, 0};
        s[i].pending = pv_u64map_take(&pv_rt.requests, request_key(s[i].key), &v);
        s[i].what = v.a, s[i].bytes = v.b;
    }
    requests_unlock(locked);
}

void pv_messages_prepare(pv_call *c, pv_args *a)
{
    pv_trace_loc *l = c->thread->loc;
    uint32_t comm;
    int size, rank;
    switch (pv_fn_info[c->fn].kind) {
    case PV_KIND_SEND:
    case PV_KIND_ISEND: send_record(l, c->t_entry, a, a->bytes); break;
    case PV_KIND_SENDRECV: send_record(l, c->t_entry, a, a->send_bytes); break;
    case PV_KIND_COLLECTIVE:
        if (comm_of(a, &comm, &size, &rank)) pv_trace_collective_begin(l, c->t_entry);
        break;
    case PV_KIND_WAIT: take_pending(c, a); break;
    default: break;
    }
}

/* Did the Wait* or Test* complete request i? A completed non-persistent request's handle is set to
 * MPI_REQUEST_NULL (Fortran: its Fortran value); Test*, Waitany and Waitsome complete only some. */
static int completed(const pv_args *a, const pv_req_slot *s, int i)
{
    MPI_Request now = a->requests ? a->requests[i] : PMPI_Request_f2c(a->frequests[i]);
    return now != s[i].key;
}

static void wait_leave(pv_call *c, uint64_t t, const pv_args *a)
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
        recv_record(c->thread->loc, t, unpack_comm(s[i].bytes), (int32_t)(s[i].what & 0xffffffff),
                    (int32_t)(s[i].what >> 32), unpack_bytes(s[i].bytes), st);
    }
    if (!put_back) return;
    /* Still pending (the call failed before completing them): a later Wait* will. */
    int locked = requests_lock();
    for (int i = 0; i < a->nreq; i++)
        if (s[i].pending && !completed(a, s, i))
            pv_u64map_put(&pv_rt.requests, request_key(s[i].key), (pv_u64val){s[i].what, s[i].bytes});
    requests_unlock(locked);
}

static void collective_end(pv_trace_loc *l, int fn, uint64_t t, const pv_args *a, uint32_t comm,
                           int size, int rank)
{
    uint64_t n = (uint64_t)size;
    uint64_t b = a->bytes > 0 ? (uint64_t)a->bytes : 0;
    uint64_t s = a->send_bytes > 0 ? (uint64_t)a->send_bytes : 0;
    uint64_t r = a->recv_bytes > 0 ? (uint64_t)a->recv_bytes : 0;
    uint64_t sent = 0, received = 0;
    uint32_t root = a->root != PV_NONE ? (uint32_t)a->root : OTF2_UNDEFINED_UINT32;
    int is_root = a->root == rank;
    switch (pv_fn_info[fn].op) {
    case OTF2_COLLECTIVE_OP_BCAST: sent = is_root ? b * n : 0, received = b; break;
    case OTF2_COLLECTIVE_OP_REDUCE: sent = b, received = is_root ? b * n : 0; break;
    case OTF2_COLLECTIVE_OP_ALLREDUCE: sent = b * n, received = b * n; break;
    case OTF2_COLLECTIVE_OP_SCAN:
    case OTF2_COLLECTIVE_OP_EXSCAN: sent = b, received = b; break;
    case OTF2_COLLECTIVE_OP_ALLGATHER:
    case OTF2_COLLECTIVE_OP_ALLTOALL: /* in place: the receive side's count */
        sent = (a->send_bytes >= 0 ? s : r) * n, received = r * n;
        break;
    case OTF2_COLLECTIVE_OP_GATHER: sent = a->send_bytes >= 0 ? s : r, received = is_root ? r * n : 0; break;
    case OTF2_COLLECTIVE_OP_SCATTER: sent = is_root ? s * n : 0, received = r; break;
    default: break; /* vector variants, Reduce_scatter, Barrier: no byte counts */
    }
    pv_trace_collective_end(l, t, comm, pv_fn_info[fn].op, root, sent, received);
}

void pv_messages_leave(pv_call *c, uint64_t t, const pv_args *a, int rc)
{
    pv_trace_loc *l = c->thread->loc;
    int fn = c->fn;
    if (pv_fn_info[fn].kind == PV_KIND_WAIT) {
        wait_leave(c, t, a); /* also when it failed: what it took out goes back */
        return;
    }
    if (rc != MPI_SUCCESS) return;
    uint32_t comm;
    int size, rank;
    switch (pv_fn_info[fn].kind) {
    case PV_KIND_RECV:
    case PV_KIND_SENDRECV:
        if (comm_of(a, &comm, &size, &rank))
            recv_record(l, t, comm, a->source, a->recvtag != PV_NONE ? a->recvtag : a->tag,
                        a->recv_bytes >= 0 ? a->recv_bytes : a->bytes,
                        a->has_status ? a->status : NULL);
        break;
    case PV_KIND_IRECV:
        if (a->source != MPI_PROC_NULL && a->request && comm_of(a, &comm, &size, &rank)) {
            pv_u64val v = {(int64_t)(uint32_t)a->source | ((int64_t)a->tag << 32),
                           pack_bytes(a->bytes, comm)};
            int locked = requests_lock();
            pv_u64map_put(&pv_rt.requests, request_key(*a->request), v);
            requests_unlock(locked);
        }
        break;
    case PV_KIND_MPROBE: /* the message is bound to this receiver now; it is received by Mrecv */
        if (a->message && *a->message != MPI_MESSAGE_NULL && *a->message != MPI_MESSAGE_NO_PROC &&
            (!a->flag || *a->flag) && a->has_status && comm_of(a, &comm, &size, &rank)) {
            int count;
            int64_t bytes = PMPI_Get_count(a->status, MPI_BYTE, &count) == MPI_SUCCESS &&
                                    count != MPI_UNDEFINED ? count : -1;
            pv_u64val v = {(int64_t)(uint32_t)a->status->MPI_SOURCE |
                               ((int64_t)a->status->MPI_TAG << 32), pack_bytes(bytes, comm)};
            int locked = requests_lock();
            pv_u64map_put(&pv_rt.requests, message_key(*a->message), v);
            requests_unlock(locked);
        }
        break;
    case PV_KIND_MRECV:
    case PV_KIND_IMRECV: {
        pv_u64val v;
        int locked = requests_lock();
        int found = pv_u64map_take(&pv_rt.requests, message_key(a->message_before), &v);
        if (found && pv_fn_info[fn].kind == PV_KIND_IMRECV && a->request) /* completed by a Wait */
            pv_u64map_put(&pv_rt.requests, request_key(*a->request), v);
        requests_unlock(locked);
        if (found && pv_fn_info[fn].kind == PV_KIND_MRECV)
            recv_record(l, t, unpack_comm(v.b), (int32_t)(v.a & 0xffffffff), (int32_t)(v.a >> 32),
                        unpack_bytes(v.b), a->has_status ? a->status : NULL);
        break;
    }
    case PV_KIND_COLLECTIVE:
        if (comm_of(a, &comm, &size, &rank)) collective_end(l, fn, t, a, comm, size, rank);
        break;
    default: break;
    }
}
