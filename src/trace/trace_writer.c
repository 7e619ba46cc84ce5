/* trace_writer.c — archive opening, locations, bounded OTF2 buffers and event records; see trace.h. */
#include "trace_internal.h"
#include "perfvar.h"

#include <otf2/OTF2_Pthread_Locks.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pv_trace_state pv_trace;

#define CHUNK_EVENTS (1u << 20)
/* Bytes of event chunks a reader of every location may fill. */
#define READER_EVENTS_BUDGET ((uint64_t)4 << 30)

/* The events' chunk size: OTF2's default of 1 MiB up to 4096 ranks, then halved as the ranks
 * double, down to OTF2's minimum (256 KiB). A reader of every location at once (otf2-print,
 * OTF2's global event reader) fills one chunk per location: 16384 ranks in 1 MiB chunks made
 * otf2-print grow past 16 GiB; in 256 KiB, 4 GiB. Counted by ranks (one location each, the usual
 * case). A location still buffers buffer_mb MiB before it flushes, in more, smaller chunks. */
static uint64_t events_chunk_bytes(int ranks)
{
    uint64_t chunk = CHUNK_EVENTS, n = ranks > 0 ? (uint64_t)ranks : 1;
    while (chunk > OTF2_CHUNK_SIZE_MIN && chunk * n > READER_EVENTS_BUDGET) chunk /= 2;
    return chunk;
}

/* The definitions' chunk size: a chunk must hold the largest definition, a group of every rank
 * (at most 9 bytes a member, OTF2's compressed integers), and every reader fills one chunk per
 * location it opens (4096 ranks read with OTF2's default of 4 MiB cleared 16 GiB). So: the
 * smallest power of two from OTF2's minimum that holds 16 bytes a rank, up to its maximum. */
static uint64_t defs_chunk_bytes(int ranks)
{
    uint64_t need = 16u * (uint64_t)(ranks > 0 ? ranks : 1), chunk = OTF2_CHUNK_SIZE_MIN;
    while (chunk < need && chunk < OTF2_CHUNK_SIZE_MAX) chunk *= 2;
    return chunk;
}

/* The location whose event buffer this thread is flushing: OTF2 calls post_flush right after
 * pre_flush, on the same thread, without saying which writer it is for. */
static _Thread_local pv_trace_loc *t_flushing;

/* Flush callbacks: always flush when a buffer is full. A mid-run flush happens inside an event
 * write, on the location's own thread; the BufferFlush event OTF2 then records gets that location's
 * last timestamp already written, so it never breaks the location's time order. */
static OTF2_FlushType pre_flush(void *u, OTF2_FileType ft, OTF2_LocationRef loc, void *writer,
                                bool final)
{
    (void)u, (void)loc;
    if (ft == OTF2_FILETYPE_EVENTS && !final) { /* buffer full, mid-run */
        void *l = NULL;
        if (writer) OTF2_EvtWriter_GetUserData(writer, &l);
        t_flushing = l;
        if (t_flushing) t_flushing->stats.flushes++;
    }
    return OTF2_FLUSH;
}

static OTF2_TimeStamp post_flush(void *u, OTF2_FileType ft, OTF2_LocationRef loc)
{
    (void)u, (void)ft, (void)loc;
    return t_flushing ? t_flushing->last_t : 0;
}

static OTF2_FlushCallbacks flush_callbacks = {.otf2_pre_flush = pre_flush,
                                              .otf2_post_flush = post_flush};

/* Memory callbacks: chunks are kept per buffer in a small list; an event buffer that reached its
 * chunk limit gets NULL, which makes OTF2 flush it to disk and free all its chunks. Each buffer
 * belongs to one writer, so its list is only touched by the thread using that writer. */
typedef struct chunk_list {
    size_t n, cap;
    void **chunks;
} chunk_list;

static void *mem_allocate(void *u, OTF2_FileType ft, OTF2_LocationRef loc, void **per_buffer,
                          uint64_t size)
{
    (void)u, (void)loc;
    chunk_list *l = *per_buffer;
    if (!l) {
        l = *per_buffer = calloc(1, sizeof *l);
        if (!l) return NULL;
    }
    if (ft == OTF2_FILETYPE_EVENTS && l->n >= pv_trace.chunk_limit) return NULL;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        void **c = realloc(l->chunks, cap * sizeof *c);
        if (!c) return NULL;
        l->chunks = c, l->cap = cap;
    }
    void *chunk = malloc(size);
    if (chunk) l->chunks[l->n++] = chunk;
    return chunk;
}

static void mem_free_all(void *u, OTF2_FileType ft, OTF2_LocationRef loc, void **per_buffer,
                         bool final)
{
    (void)u, (void)ft, (void)loc;
    chunk_list *l = *per_buffer;
    if (!l) return;
    for (size_t i = 0; i < l->n; i++) free(l->chunks[i]);
    l->n = 0;
    if (final) {
        free(l->chunks);
        free(l);
        *per_buffer = NULL;
    }
}

static OTF2_MemoryCallbacks memory_callbacks = {.otf2_allocate = mem_allocate,
                                                .otf2_free_all = mem_free_all};

/* OTF2 prints each error on stderr, three lines for one reused directory. While the archive is
 * opened the first one is kept instead, for perfvar's own single message (pv_trace_open_error). */
static char open_error[256];

static OTF2_ErrorCode keep_first_error(void *data, const char *file, uint64_t line, const char *function,
                                       OTF2_ErrorCode code, const char *fmt, va_list va)
{
    (void)data, (void)file, (void)line, (void)function;
    if (!open_error[0]) {
        int n = snprintf(open_error, sizeof open_error, "%s: ", OTF2_Error_GetDescription(code));
        if (n > 0 && (size_t)n < sizeof open_error) vsnprintf(open_error + n, sizeof open_error - (size_t)n, fmt, va);
    }
    return code;
}

const char *pv_trace_open_error(void) { return open_error; }

static int open_archive(const char *dir);

int pv_trace_open(const char *dir, unsigned buffer_mb, const pv_static_region *regions, int nstatic,
                  const pv_trace_comm *comm)
{
    memset(&pv_trace, 0, sizeof pv_trace);
    pthread_mutex_init(&pv_trace.lock, NULL);
    pv_trace.comm = *comm;
    pv_trace.statics = regions;
    pv_trace.nstatic = nstatic;
    pv_trace.chunk_limit =
        (buffer_mb ? buffer_mb : 1) * (CHUNK_EVENTS / events_chunk_bytes(comm->size));
    open_error[0] = 0;
    OTF2_ErrorCallback before = OTF2_Error_RegisterCallback(keep_first_error, NULL);
    int rc = open_archive(dir);
    OTF2_Error_RegisterCallback(before, NULL); /* later errors print as OTF2 prints them */
    return rc;
}

static int open_archive(const char *dir)
{
    const pv_trace_comm *comm = &pv_trace.comm;
    pv_trace.archive =
        OTF2_Archive_Open(dir, "traces", OTF2_FILEMODE_WRITE, events_chunk_bytes(comm->size),
                          defs_chunk_bytes(comm->size), OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!pv_trace.archive) return PERFVAR_ERR_IO;
    /* OTF2's own locks: threads create their event writers, and flush them, concurrently. */
    if (OTF2_Pthread_Archive_SetLockingCallbacks(pv_trace.archive, NULL) != OTF2_SUCCESS ||
        OTF2_Archive_SetFlushCallbacks(pv_trace.archive, &flush_callbacks, NULL) != OTF2_SUCCESS ||
        OTF2_Archive_SetMemoryCallbacks(pv_trace.archive, &memory_callbacks, NULL) != OTF2_SUCCESS ||
        comm->set_otf2_collectives(comm->ctx, pv_trace.archive) != 0 ||
        OTF2_Archive_OpenEvtFiles(pv_trace.archive) != OTF2_SUCCESS) {
        /* Not closed: OTF2 3.0's OTF2_Archive_Close crashes on an archive whose event files could
         * not be opened (e.g. DIR/traces/ exists already), and the run must go on uninstrumented. */
        pv_trace.archive = NULL;
        return PERFVAR_ERR_IO;
    }
    return PERFVAR_OK;
}

pv_trace_loc *pv_trace_location(uint32_t thread)
{
    pv_trace_loc *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->thread = thread;
    l->last_cpu = -1;
    l->id = PV_LOCATION_ID(pv_trace.comm.rank, thread);
    pthread_mutex_lock(&pv_trace.lock);
    if (pv_trace.nlocs == pv_trace.locs_cap) {
        int cap = pv_trace.locs_cap ? 2 * pv_trace.locs_cap : 8;
        pv_trace_loc **a = realloc(pv_trace.locs, (size_t)cap * sizeof *a);
        if (a) pv_trace.locs = a, pv_trace.locs_cap = cap;
    }
    if (pv_trace.nlocs < pv_trace.locs_cap) {
        l->evt = OTF2_Archive_GetEvtWriter(pv_trace.archive, l->id);
        l->attrs = OTF2_AttributeList_New();
    }
    if (l->evt && l->attrs && OTF2_EvtWriter_SetUserData(l->evt, l) == OTF2_SUCCESS) {
        pv_trace.locs[pv_trace.nlocs++] = l;
    } else {
        /* A writer we cannot keep is closed again: pv_trace_close must not meet it. */
        if (l->evt) OTF2_Archive_CloseEvtWriter(pv_trace.archive, l->evt);
        if (l->attrs) OTF2_AttributeList_Delete(l->attrs);
        free(l);
        l = NULL;
    }
    pthread_mutex_unlock(&pv_trace.lock);
    return l;
}

uint32_t pv_trace_region_define(const char *canonical, const char *display, OTF2_RegionRole role,
                                OTF2_Paradigm paradigm)
{
    char *c = strdup(canonical), *d = strdup(display);
    uint32_t id = UINT32_MAX;
    pthread_mutex_lock(&pv_trace.lock);
    if (c && d && pv_trace.ndyn == pv_trace.dyn_cap) {
        int cap = pv_trace.dyn_cap ? 2 * pv_trace.dyn_cap : 64;
        pv_local_region *r = realloc(pv_trace.dyn, (size_t)cap * sizeof *r);
        if (r) pv_trace.dyn = r, pv_trace.dyn_cap = cap;
    }
    if (c && d && pv_trace.ndyn < pv_trace.dyn_cap) {
        pv_trace.dyn[pv_trace.ndyn] = (pv_local_region){c, d, role, paradigm};
        id = (uint32_t)(pv_trace.nstatic + pv_trace.ndyn++);
    }
    pthread_mutex_unlock(&pv_trace.lock);
    if (id == UINT32_MAX) free(c), free(d);
    return id;
}

uint32_t pv_trace_comm_define(const uint32_t *world_ranks, uint32_t n)
{
    uint32_t *m = malloc((n ? n : 1) * sizeof *m);
    uint32_t id = UINT32_MAX;
    if (!m) return id;
    memcpy(m, world_ranks, n * sizeof *m);
    pthread_mutex_lock(&pv_trace.lock);
    if (pv_trace.ncomms == pv_trace.comms_cap) {
        int cap = pv_trace.comms_cap ? 2 * pv_trace.comms_cap : 16;
        pv_local_comm *c = realloc(pv_trace.comms, (size_t)cap * sizeof *c);
        if (c) pv_trace.comms = c, pv_trace.comms_cap = cap;
    }
    if (pv_trace.ncomms < pv_trace.comms_cap) {
        pv_trace.comms[pv_trace.ncomms] = (pv_local_comm){n, m};
        id = (uint32_t)++pv_trace.ncomms;
    }
    pthread_mutex_unlock(&pv_trace.lock);
    if (id == UINT32_MAX) free(m);
    return id;
}

void pv_trace_location_info(const pv_trace_loc *l, uint64_t *id, pv_trace_stats *stats)
{
    *id = l->id;
    *stats = l->stats;
}

/* Keep per-location time order; returns the timestamp to write. */
static uint64_t ordered(pv_trace_loc *l, uint64_t t)
{
    if (!l->have_first) {
        l->first_t = l->last_t = t;
        l->have_first = 1;
    }
    if (t < l->last_t) {
        l->stats.timestamps_raised++;
        t = l->last_t;
    }
    l->last_t = t;
    return t;
}

static void check(pv_trace_loc *l, OTF2_ErrorCode rc)
{
    if (rc != OTF2_SUCCESS) l->stats.events_lost++, l->refused = 1;
}

/* Once OTF2 refused an event (its buffer could not be written out: a full disk), the location
 * writes no more and counts what it drops: OTF2 3.0 crashes in a writer whose flush failed. */
static int refused(pv_trace_loc *l)
{
    if (l->refused) l->stats.events_lost++;
    return l->refused;
}

/* The `cpu` attribute for an event standing for a read on cpu, or NULL where the location's last
 * one still holds: a thread mostly stays on its CPU, and the attribute on both ends of every
 * segment (11 bytes a call) would otherwise be a quarter of a call's events. */
static OTF2_AttributeList *cpu_attr(pv_trace_loc *l, int cpu)
{
    if (cpu == PV_TRACE_NO_CPU) return NULL;
    if (cpu < 0) cpu = -1;
    if (cpu == l->last_cpu) return NULL;
    l->last_cpu = cpu;
    OTF2_AttributeList_AddUint32(l->attrs, PV_ATTR_CPU, cpu < 0 ? PV_CPU_UNKNOWN_VALUE : (uint32_t)cpu);
    return l->attrs;
}

/* The id region (rank-local) has in l's events, given on its first use: a location uses a few
 * regions of the hundreds the rank defines (every MPI function), and ids below 256 take one byte
 * less in each Enter and Leave than the static MPI regions' own (OTF2's compressed integers).
 * UINT32_MAX when out of memory. */
static uint32_t event_region(pv_trace_loc *l, uint32_t region)
{
    if (region < l->nevent_id && l->event_id[region]) return l->event_id[region] - 1;
    if (region >= UINT32_MAX / 2) return UINT32_MAX; /* no rank defines that many */
    if (region >= l->nevent_id) {
        uint32_t n = l->nevent_id ? l->nevent_id : 64;
        while (n <= region) n *= 2;
        uint32_t *grown = realloc(l->event_id, n * sizeof *grown);
        if (!grown) return UINT32_MAX;
        memset(grown + l->nevent_id, 0, (n - l->nevent_id) * sizeof *grown);
        l->event_id = grown, l->nevent_id = n;
    }
    if (l->nused == l->used_cap) {
        uint32_t cap = l->used_cap ? 2 * l->used_cap : 16;
        uint32_t *grown = realloc(l->region_of, cap * sizeof *grown);
        if (!grown) return UINT32_MAX;
        l->region_of = grown, l->used_cap = cap;
    }
    l->region_of[l->nused] = region;
    l->event_id[region] = ++l->nused;
    return l->nused - 1;
}

void pv_trace_enter(pv_trace_loc *l, uint64_t t, uint32_t region, int cpu)
{
    if (refused(l)) return;
    uint32_t id = event_region(l, region);
    if (id == UINT32_MAX) { /* out of memory: stop here rather than leave an Enter unmatched */
        check(l, OTF2_ERROR_MEM_ALLOC_FAILED);
        return;
    }
    t = ordered(l, t);
    check(l, OTF2_EvtWriter_Enter(l->evt, cpu_attr(l, cpu), t, id));
}

void pv_trace_leave(pv_trace_loc *l, uint64_t t, uint32_t region, int cpu)
{
    if (refused(l)) return;
    uint32_t id = event_region(l, region);
    if (id == UINT32_MAX) {
        check(l, OTF2_ERROR_MEM_ALLOC_FAILED);
        return;
    }
    t = ordered(l, t);
    check(l, OTF2_EvtWriter_Leave(l->evt, cpu_attr(l, cpu), t, id));
}

void pv_trace_send(pv_trace_loc *l, uint64_t t, uint32_t comm, uint32_t peer, uint32_t tag,
                   uint64_t bytes)
{
    if (refused(l)) return;
    t = ordered(l, t);
    check(l, OTF2_EvtWriter_MpiSend(l->evt, NULL, t, peer, comm, tag, bytes));
}

void pv_trace_recv(pv_trace_loc *l, uint64_t t, uint32_t comm, uint32_t peer, uint32_t tag,
                   uint64_t bytes)
{
    if (refused(l)) return;
    t = ordered(l, t);
    check(l, OTF2_EvtWriter_MpiRecv(l->evt, NULL, t, peer, comm, tag, bytes));
}

void pv_trace_collective_begin(pv_trace_loc *l, uint64_t t)
{
    if (refused(l)) return;
    t = ordered(l, t);
    check(l, OTF2_EvtWriter_MpiCollectiveBegin(l->evt, NULL, t));
}

void pv_trace_isend(pv_trace_loc *l, uint64_t t, uint32_t comm, uint32_t peer, uint32_t tag,
                    uint64_t bytes, uint64_t id)
{
    if (refused(l)) return;
    t = ordered(l, t);
    check(l, OTF2_EvtWriter_MpiIsend(l->evt, NULL, t, peer, comm, tag, bytes, id));
}

void pv_trace_isend_complete(pv_trace_loc *l, uint64_t t, uint64_t id)
{
    if (refused(l)) return;
    t = ordered(l, t);
    check(l, OTF2_EvtWriter_MpiIsendComplete(l->evt, NULL, t, id));
}

void pv_trace_irecv_request(pv_trace_loc *l, uint64_t t, uint64_t id)
{
    if (refused(l)) return;
    t = ordered(l, t);
    check(l, OTF2_EvtWriter_MpiIrecvRequest(l->evt, NULL, t, id));
}

void pv_trace_irecv(pv_trace_loc *l, uint64_t t, uint32_t comm, uint32_t peer, uint32_t tag,
                    uint64_t bytes, uint64_t id)
{
    if (refused(l)) return;
    t = ordered(l, t);
    check(l, OTF2_EvtWriter_MpiIrecv(l->evt, NULL, t, peer, comm, tag, bytes, id));
}

void pv_trace_icollective_request(pv_trace_loc *l, uint64_t t, uint64_t id)
{
    if (refused(l)) return;
    t = ordered(l, t);
    check(l, OTF2_EvtWriter_NonBlockingCollectiveRequest(l->evt, NULL, t, id));
}

void pv_trace_icollective_complete(pv_trace_loc *l, uint64_t t, uint32_t comm,
                                   OTF2_CollectiveOp op, uint32_t root, uint64_t sent,
                                   uint64_t received, uint64_t id)
{
    if (refused(l)) return;
    t = ordered(l, t);
    check(l, OTF2_EvtWriter_NonBlockingCollectiveComplete(l->evt, NULL, t, op, comm, root, sent,
                                                          received, id));
}

void pv_trace_collective_end(pv_trace_loc *l, uint64_t t, uint32_t comm, OTF2_CollectiveOp op,
                             uint32_t root, uint64_t sent, uint64_t received)
{
    if (refused(l)) return;
    t = ordered(l, t);
    check(l, OTF2_EvtWriter_MpiCollectiveEnd(l->evt, NULL, t, op, comm, root, sent, received));
}

int pv_trace_metrics_define(int n, const char *const *names, const char *const *units,
                            const char *const *descriptions)
{
    if (n <= 0) return 0;
    if (n > PV_TRACE_METRICS_MAX) n = PV_TRACE_METRICS_MAX;
    char **text = calloc((size_t)n * 3, sizeof *text);
    if (!text) return -1;
    for (int i = 0; i < n; i++) {
        text[3 * i] = strdup(names[i]), text[3 * i + 1] = strdup(units[i]);
        text[3 * i + 2] = strdup(descriptions[i]);
        if (!text[3 * i] || !text[3 * i + 1] || !text[3 * i + 2]) {
            for (int j = 0; j < 3 * n; j++) free(text[j]);
            free(text);
            return -1;
        }
    }
    pv_trace.metric_text = text, pv_trace.nmetrics = n;
    return 0;
}

void pv_trace_metric(pv_trace_loc *l, uint64_t t, const uint64_t *totals)
{
    if (refused(l) || pv_trace.nmetrics <= 0) return;
    OTF2_Type types[PV_TRACE_METRICS_MAX];
    OTF2_MetricValue values[PV_TRACE_METRICS_MAX];
    int n = pv_trace.nmetrics < PV_TRACE_METRICS_MAX ? pv_trace.nmetrics : PV_TRACE_METRICS_MAX;
    for (int i = 0; i < n; i++) types[i] = OTF2_TYPE_UINT64, values[i].unsigned_int = totals[i];
    t = ordered(l, t);
    check(l, OTF2_EvtWriter_Metric(l->evt, NULL, t, PV_METRIC_CLASS_LOCAL, (uint8_t)n, types, values));
}
