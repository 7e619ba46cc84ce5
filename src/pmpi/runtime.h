/*
 * runtime.h — the protocol between generated MPI wrappers and perfvar's MPI runtime (internal).
 *
 * Every wrapped call, from C or from a Fortran entry point, does:
 *     pv_call pv_c;
 *     int t = pv_call_enter(&pv_c, PV_FN_x, __builtin_return_address(0));
 *     if (t == 0) return PMPI_x(...);                        // inside another call: not counted
 *     if (t < 0) { rc = PMPI_x(...); pv_untraced_end(); return rc; }  // counted, not traced
 *     pv_args pv_a = PV_ARGS_INIT; ...fill what the call carries...
 *     pv_call_prepare(&pv_c, &pv_a);    // C: substitutes ignored statuses, copies request handles
 *     rc = PMPI_x(...);                 // statuses passed as pv_a.status / pv_a.statuses
 *     pv_call_leave(&pv_c, &pv_a, rc);
 * The generator leaves out the steps that have no work for the function's kind (gen_wrappers.py
 * PREPARE_KINDS, LEAVE_KINDS): a call that records nothing but itself (no pv_args) ends with
 * pv_call_end(&pv_c) after the PMPI call; a Wait/Test of one request takes the short path of
 * pv_messages_completed, and an Isend-like call, an Irecv, and a Waitall/Testall of at most
 * PV_INLINE_REQUESTS requests take their own (pv_messages_isend_end, _irecv_end, _all_begin/_end,
 * from Fortran _fall_begin/_end): the common calls of a halo exchange record what they carry with
 * no pv_args to fill.
 * pv_call_enter counts every call made by the application (per function, any thread) and traces it
 * only when its group is one of PERFVAR_BOUNDARIES.
 * A traced call reads the clock twice, and both reads are serialized: pv_call_enter reads it first
 * (ending the compute segment that ran since the previous traced call returned) and begins the
 * call's CALL record (src/recorder), runs the thread's fixed-work probe when one is due
 * (PERFVAR_PROBE: otherwise one compare of that read against the thread's deadline); pv_call_leave
 * adds the call's message and collective facts, then reads the clock last, when the application
 * resumes, and ends the record. The segment between two calls is never written: it is the span
 * from one record's exit to the next one's entry. Records become OTF2 events at MPI_Finalize.
 *
 * A thread-local depth guard makes a call that passes through two layers (MPICH: Fortran entry point
 * -> C MPI_x) be recorded once, at the outer layer, and keeps perfvar's own PMPI traffic out.
 * Every thread that makes MPI calls is traced on its own: its own compute segments (from its previous
 * call to its next one) and its own OTF2 location, created on its first call (threads.h). All these
 * functions are thread-safe in that sense; a pv_call belongs to the thread that entered it.
 * A wrapper never changes the return code or the arguments the MPI library sees, except that a
 * caller's MPI_STATUS(ES)_IGNORE is replaced by perfvar's own status storage (every binding) so receives
 * report their real source.
 */
#ifndef PV_MPI_RUNTIME_H
#define PV_MPI_RUNTIME_H
#include <mpi.h>
#include <stdint.h>
#include <string.h>

#include "../recorder/records.h"
#include "pv_mpi_functions.h" /* generated: enum pv_fn, pv_fn_info[] */

#define PV_NONE (-32768) /* an integer argument the call does not have */
#define PV_INLINE_REQUESTS 16
/* Room for one Fortran status in MPI_Fint, at least MPI_STATUS_SIZE of any MPI (Open MPI 6, MPICH 5). */
#define PV_F_STATUS_FINTS 16

typedef struct pv_args {
    int dest, source, tag, sendtag, recvtag, root;
    MPI_Comm comm;
    int64_t bytes, send_bytes, recv_bytes; /* -1: unknown */
    MPI_Request *request;                  /* Irecv/Imrecv: the new request (after the call) */
    MPI_Message *message;                  /* Mprobe/Improbe: the matched message (after the call) */
    MPI_Message message_before;            /* Mrecv/Imrecv: the message received */
    int *flag;                             /* Improbe: whether a message was matched */
    int nreq;                              /* Wait/Waitall: requests to complete */
    MPI_Request *requests;                 /* C binding */
    const MPI_Fint *frequests;             /* Fortran bindings (handles are integers in all three) */
    MPI_Status *status, *statuses;         /* C binding; NULL from Fortran (not decoded yet) */
    unsigned char has_status, has_statuses; /* C binding: status / array_of_statuses are the
                                              caller's arguments (possibly MPI_STATUS(ES)_IGNORE) */
} pv_args;

#define PV_ARGS_INIT                                                                              \
    {PV_NONE, PV_NONE, PV_NONE, PV_NONE, PV_NONE, PV_NONE, MPI_COMM_NULL, -1, -1, -1, NULL,         \
     NULL, MPI_MESSAGE_NULL, NULL, 0, NULL, NULL, NULL, NULL, 0, 0}

struct pv_thread;

typedef struct pv_call {
    int fn;
    struct pv_thread *thread; /* the calling thread's state */
    void *site;       /* Init: the caller's return address */
    int site_id;      /* traced calls: the call site's id (sites.c) */
    pv_rec_unit *unit; /* traced calls: the CALL record, NULL if it could not be made */
    uint64_t t_entry;
    int cpu_entry;
    MPI_Status own_status;
    MPI_Status own_statuses[PV_INLINE_REQUESTS];
    /* Storage for more than PV_INLINE_REQUESTS requests, freed by pv_call_leave: only a Wait*
     * (always prepared) allocates it, after pv_call_prepare has cleared the three. */
    MPI_Status *heap_statuses;
    MPI_Request keys[PV_INLINE_REQUESTS]; /* a Wait*'s request handles as they were before the call */
    MPI_Request *heap_keys;
    MPI_Fint own_fstatuses[PV_INLINE_REQUESTS * PV_F_STATUS_FINTS]; /* Fortran binding */
    MPI_Fint *heap_fstatuses;
} pv_call;

/* The Fortran binding an entry point belongs to: mpif.h / use mpi (INTEGER handles and statuses),
 * use mpi_f08 (TYPE(MPI_x) handles, TYPE(MPI_Status)), and use mpi_f08 routines whose choice buffers
 * arrive as Fortran 2018 C descriptors (MPICH's _f08ts_ entry points). */
typedef enum { PV_FB_F77, PV_FB_F08, PV_FB_F08_DESC } pv_fbinding;

/* fortran_args.c — Fortran statuses: the argument to pass on (perfvar's own storage where the
 * caller passed MPI_STATUS(ES)_IGNORE, so the real source and tag are known), then, after the call,
 * the statuses decoded read-only into a->status / a->statuses. The sentinels and the status layout
 * are the MPI flavour's and the binding's. */
void *pv_f_status_arg(pv_call *c, void *status, pv_fbinding b);
void pv_f_status_done(pv_call *c, pv_args *a, const void *status_arg, pv_fbinding b);
void *pv_f_statuses_arg(pv_call *c, void *statuses, int n, pv_fbinding b);
void pv_f_statuses_done(pv_call *c, pv_args *a, const void *statuses_arg, int n, pv_fbinding b);
/* Status i of a Fortran array of statuses (the argument passed on) decoded into *st; NULL when the
 * array is MPI_STATUSES_IGNORE or the status cannot be decoded. */
const MPI_Status *pv_f_status_at(const void *statuses_arg, int i, pv_fbinding b, MPI_Status *st);
/* Fortran MPI_IN_PLACE of binding b (read-only detection, the argument is passed on unchanged). */
int pv_f_is_in_place(const void *buf, pv_fbinding b);

/* 1: record this call (the guard is taken); -1: counted only (its group is not traced, perfvar is
 * not active, or another thread): the guard is taken, release it with pv_untraced_end after the
 * PMPI call; 0: an inner layer of a call already seen, or perfvar's own: pass it straight on. */
int pv_call_enter(pv_call *c, int fn, void *site);
/* The library's own thread-locals, in the initial-exec model: one %fs-relative load, no
 * __tls_get_addr call per function (measured: a third of the wrappers' instructions on the
 * MPI_Test path). The layer is loaded at program start (linked, or LD_PRELOAD), never dlopen'ed,
 * so its thread-locals are in the static TLS block. */
#define PV_HIDDEN __attribute__((visibility("hidden"), tls_model("initial-exec")))
extern _Thread_local int pv_depth PV_HIDDEN; /* the guard: > 0 inside a wrapped call */
static inline void pv_untraced_end(void) { pv_depth--; }
void pv_call_prepare(pv_call *c, pv_args *a);
/* The short path of a Wait/Test of one request (MPI_Wait, MPI_Test), without pv_args: it keeps the
 * handle, gives MPI a status of its own where the caller ignores it, and when the handle changed
 * (the request completed) records that with the status (NULL: none decoded) before pv_call_end. */
void pv_messages_completed(pv_call *c, MPI_Request before, const MPI_Status *status);
/* The short paths of wrappers (C; Fortran too for pv_messages_isend_end / _irecv_end, with the C
 * handles converted), which end the call (pv_call_end included) without pv_args:
 * pv_messages_isend_end / pv_messages_irecv_end after an Isend-like call (peer = dest) or an Irecv
 * (peer = source, MPI_ANY_SOURCE kept as posted) that returned rc and *request; and for a Waitall or
 * Testall of n <= PV_INLINE_REQUESTS requests, pv_messages_all_begin before the PMPI call (keeps the
 * handles, returns the statuses to pass: perfvar's own where the caller ignores them) and
 * pv_messages_all_end after it (records the requests whose handle changed: completed). */
void pv_messages_isend_end(pv_call *c, int peer, int tag, int64_t bytes, MPI_Comm comm,
                           const MPI_Request *request, int rc);
void pv_messages_irecv_end(pv_call *c, int peer, int tag, int64_t bytes, MPI_Comm comm,
                           const MPI_Request *request, int rc);
static inline MPI_Status *pv_messages_all_begin(pv_call *c, int n, const MPI_Request *requests,
                                                MPI_Status *statuses)
{
    for (int i = 0; i < n; i++) c->keys[i] = requests[i];
    return statuses == MPI_STATUSES_IGNORE ? c->own_statuses : statuses;
}
void pv_messages_all_end(pv_call *c, int n, const MPI_Request *requests, const MPI_Status *statuses);
/* The same from Fortran: pv_messages_fall_begin keeps the Fortran handles in before[n] and their C
 * handles; pv_messages_fall_end records the requests whose Fortran handle changed, with their
 * statuses (statuses_arg: what the call was given, pv_f_statuses_arg), and ends the call. */
void pv_messages_fall_begin(pv_call *c, int n, const MPI_Fint *requests, MPI_Fint *before);
void pv_messages_fall_end(pv_call *c, int n, const MPI_Fint *before, const MPI_Fint *requests,
                          const void *statuses_arg, pv_fbinding b);
void pv_call_leave(pv_call *c, pv_args *a, int rc);
/* The end of every traced call (pv_call_leave ends with it): releases the guard, then the exit read. */
void pv_call_end(pv_call *c);
/* MPI_REQUEST_NULL as a Fortran handle (set at the start): a Fortran Wait/Test of a null request
 * is told without converting the handle. */
extern MPI_Fint pv_f_request_null;
/* MPI_COMM_WORLD as a Fortran handle (set at the start), and a Fortran communicator in C: the
 * common one without a call into the library. */
extern MPI_Fint pv_f_comm_world;
static inline MPI_Comm pv_f_comm(MPI_Fint comm) { return comm == pv_f_comm_world ? MPI_COMM_WORLD : PMPI_Comm_f2c(comm); }

/* MPI_Init / MPI_Init_thread: begin before PMPI_Init*, end after it (starts perfvar when rc is
 * MPI_SUCCESS). MPI_Finalize: pv_call_enter and, when it traces, pv_finalize_begin (its CALL is
 * ended when the trace is closed: lifecycle.c, which keeps it) before PMPI_Finalize,
 * pv_finalize_end after it (the trace itself is closed from an MPI_COMM_SELF attribute callback
 * inside PMPI_Finalize, whichever binding called it). */
void pv_init_begin(pv_call *c, int fn, void *site);
void pv_init_end(pv_call *c, int rc);
void pv_finalize_begin(pv_call *c);
void pv_finalize_end(pv_call *c);

/* The sizes of the predefined datatypes this thread used last, direct-mapped by handle (per thread:
 * no lock). Only those: a predefined handle is never freed, so it never comes back as another type,
 * whereas a derived type's handle may be freed and reused for a type of another size, so its size
 * is asked every time. */
typedef struct pv_type_size {
    MPI_Datatype type;
    int64_t size_1; /* size + 1; 0: empty */
} pv_type_size;
#define PV_TYPE_CACHE_BITS 2
extern _Thread_local pv_type_size pv_type_cache[1 << PV_TYPE_CACHE_BITS] PV_HIDDEN;
/* pv_bytes without the cache; caches the size in slot when datatype is predefined. */
int64_t pv_bytes_miss(MPI_Count count, MPI_Datatype datatype, pv_type_size *slot);

/* Bytes of count elements of datatype; -1 when unknown (MPI_DATATYPE_NULL, count < 0). */
static inline int64_t pv_bytes(MPI_Count count, MPI_Datatype datatype)
{
    uint64_t h = 0; /* the handle's bits: a pointer (Open MPI), an int (MPICH) */
    memcpy(&h, &datatype, sizeof datatype < sizeof h ? sizeof datatype : sizeof h);
    pv_type_size *slot = &pv_type_cache[(h * 0x9e3779b97f4a7c15ull) >> (64 - PV_TYPE_CACHE_BITS)];
    if (slot->size_1 && slot->type == datatype && count >= 0) return (int64_t)count * (slot->size_1 - 1);
    return pv_bytes_miss(count, datatype, slot);
}

/* Where perfvar_start/stop report to the MPI layer (src/timer's region sink), set by the start: a
 * user timer start/stop of a traced thread is a segment boundary, recorded as a CALL at its site. */
struct pv_region_sink;
extern const struct pv_region_sink pv_user_sink;

/* Calls the application made, per function, that were not traced (any thread; atomic): rank-N.json
 * adds each traced thread's own count (pv_thread.calls) to these. */
extern uint64_t pv_calls[PV_FN_COUNT];

#endif
