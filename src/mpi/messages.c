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
 * Only MPI_COMM_WORLD is defined in the trace yet, so messages and collectives on other
 * communicators are not recorded (their MPI regions and segments are). Sends are recorded at the
 * entry of Send/Isend/Sendrecv; receives at completion (Recv, Sendrecv, or the Wait* completing an
 * Irecv), with source, tag and size from the status when there is one, else from the Irecv's
 * arguments. */
#include "state.h"

#include <string.h>

static int on_world(MPI_Comm comm) { return comm == MPI_COMM_WORLD; }

static void send_record(uint64_t t, const pv_args *a, int64_t bytes)
{
    if (!on_world(a->comm) || a->dest == MPI_PROC_NULL || a->dest < 0) return;
    int tag = a->sendtag != PV_NONE ? a->sendtag : a->tag;
    pv_trace_send(t, (uint32_t)a->dest, (uint32_t)tag, bytes > 0 ? (uint64_t)bytes : 0);
}

/* A completed receive: the status (may be NULL) wins over what the call was given. */
static void recv_record(uint64_t t, int source, int tag, int64_t bytes, const MPI_Status *st)
{
    if (st) {
        int count;
        source = st->MPI_SOURCE;
        tag = st->MPI_TAG;
        if (PMPI_Get_count(st, MPI_BYTE, &count) == MPI_SUCCESS && count != MPI_UNDEFINED)
            bytes = count;
    }
    if (source < 0 || source == MPI_PROC_NULL || tag < 0) return; /* ANY_SOURCE/TAG, unknown */
    pv_trace_recv(t, (uint32_t)source, (uint32_t)tag, bytes > 0 ? (uint64_t)bytes : 0);
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

void pv_messages_prepare(int fn, uint64_t t_entry, pv_args *a)
{
    switch (pv_fn_info[fn].kind) {
    case PV_KIND_SEND:
    case PV_KIND_ISEND: send_record(t_entry, a, a->bytes); break;
    case PV_KIND_SENDRECV: send_record(t_entry, a, a->send_bytes); break;
    case PV_KIND_COLLECTIVE:
        if (on_world(a->comm)) pv_trace_collective_begin(t_entry);
        break;
    default: break;
    }
}

static void collective_end(int fn, uint64_t t, const pv_args *a)
{
    uint64_t n = (uint64_t)pv_rt.size;
    uint64_t b = a->bytes > 0 ? (uint64_t)a->bytes : 0;
    uint64_t s = a->send_bytes > 0 ? (uint64_t)a->send_bytes : 0;
    uint64_t r = a->recv_bytes > 0 ? (uint64_t)a->recv_bytes : 0;
    uint64_t sent = 0, received = 0;
    uint32_t root = a->root != PV_NONE ? (uint32_t)a->root : OTF2_UNDEFINED_UINT32;
    int is_root = a->root == pv_rt.rank;
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
    pv_trace_collective_end(t, pv_fn_info[fn].op, root, sent, received);
}

void pv_messages_leave(int fn, uint64_t t, const pv_args *a, const MPI_Request *keys, int rc)
{
    if (rc != MPI_SUCCESS) return;
    switch (pv_fn_info[fn].kind) {
    case PV_KIND_RECV:
    case PV_KIND_SENDRECV:
        if (on_world(a->comm))
            recv_record(t, a->source, a->recvtag != PV_NONE ? a->recvtag : a->tag,
                        a->recv_bytes >= 0 ? a->recv_bytes : a->bytes,
                        a->has_status ? a->status : NULL);
        break;
    case PV_KIND_IRECV:
        if (on_world(a->comm) && a->source != MPI_PROC_NULL && a->request) {
            pv_u64val v = {(int64_t)(uint32_t)a->source | ((int64_t)a->tag << 32), a->bytes};
            pv_u64map_put(&pv_rt.requests, request_key(*a->request), v);
        }
        break;
    case PV_KIND_MPROBE: /* the message is bound to this receiver now; it is received by Mrecv */
        if (on_world(a->comm) && a->message && *a->message != MPI_MESSAGE_NULL &&
            *a->message != MPI_MESSAGE_NO_PROC && (!a->flag || *a->flag) && a->has_status) {
            int count;
            int64_t bytes = PMPI_Get_count(a->status, MPI_BYTE, &count) == MPI_SUCCESS &&
                                    count != MPI_UNDEFINED ? count : -1;
            pv_u64val v = {(int64_t)(uint32_t)a->status->MPI_SOURCE |
                               ((int64_t)a->status->MPI_TAG << 32), bytes};
            pv_u64map_put(&pv_rt.requests, message_key(*a->message), v);
        }
        break;
    case PV_KIND_MRECV:
    case PV_KIND_IMRECV: {
        pv_u64val v;
        if (!pv_u64map_take(&pv_rt.requests, message_key(a->message_before), &v)) break;
        if (pv_fn_info[fn].kind == PV_KIND_MRECV)
            recv_record(t, (int32_t)(v.a & 0xffffffff), (int32_t)(v.a >> 32), v.b,
                        a->has_status ? a->status : NULL);
        else if (a->request) /* completed by a Wait/Test, like an Irecv */
            pv_u64map_put(&pv_rt.requests, request_key(*a->request), v);
        break;
    }
    case PV_KIND_WAIT: {
        MPI_Fint fnull = a->frequests ? PMPI_Request_c2f(MPI_REQUEST_NULL) : 0;
        for (int i = 0; i < a->nreq; i++) {
            pv_u64val v;
            int done = a->requests ? a->requests[i] == MPI_REQUEST_NULL : a->frequests[i] == fnull;
            if (!done || !pv_u64map_take(&pv_rt.requests, request_key(keys[i]), &v)) continue;
            const MPI_Status *st = a->has_statuses ? (a->statuses != MPI_STATUSES_IGNORE ? &a->statuses[i] : NULL)
                                                   : (a->has_status ? a->status : NULL);
            recv_record(t, (int32_t)(v.a & 0xffffffff), (int32_t)(v.a >> 32), v.b, st);
        }
        break;
    }
    case PV_KIND_COLLECTIVE:
        if (on_world(a->comm)) collective_end(fn, t, a);
        break;
    default: break;
    }
}
