/* trace_writer.c — archive opening, bounded OTF2 buffers and event records; see trace.h. */
#include "trace_internal.h"
#include "perfvar.h"

#include <stdlib.h>
#include <string.h>

pv_trace_state pv_trace;

#define CHUNK_EVENTS (1u << 20)
#define CHUNK_DEFS (4u << 20)

/* Flush callbacks: always flush when a buffer is full. The BufferFlush event OTF2 then records gets
 * the last timestamp already written, so it never breaks the per-location time order. */
static OTF2_FlushType pre_flush(void *u, OTF2_FileType ft, OTF2_LocationRef loc, void *cb, bool final)
{
    (void)u, (void)loc, (void)cb;
    if (ft == OTF2_FILETYPE_EVENTS && !final) pv_trace.stats.flushes++; /* buffer full, mid-run */
    return OTF2_FLUSH;
}

static OTF2_TimeStamp post_flush(void *u, OTF2_FileType ft, OTF2_LocationRef loc)
{
    (void)u, (void)ft, (void)loc;
    return pv_trace.last_t;
}

static OTF2_FlushCallbacks flush_callbacks = {.otf2_pre_flush = pre_flush,
                                              .otf2_post_flush = post_flush};

/* Memory callbacks: chunks are kept per buffer in a small list; an event buffer that reached its
 * chunk limit gets NULL, which makes OTF2 flush it to disk and free all its chunks. */
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

int pv_trace_open(const char *dir, unsigned buffer_mb, const pv_static_region *regions, int nstatic,
                  const pv_trace_comm *comm)
{
    memset(&pv_trace, 0, sizeof pv_trace);
    pv_trace.comm = *comm;
    pv_trace.statics = regions;
    pv_trace.nstatic = nstatic;
    pv_trace.chunk_limit = buffer_mb ? buffer_mb : 1;
    pv_trace.archive = OTF2_Archive_Open(dir, "traces", OTF2_FILEMODE_WRITE, CHUNK_EVENTS, CHUNK_DEFS,
                                         OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!pv_trace.archive) return PERFVAR_ERR_IO;
    if (OTF2_Archive_SetFlushCallbacks(pv_trace.archive, &flush_callbacks, NULL) != OTF2_SUCCESS ||
        OTF2_Archive_SetMemoryCallbacks(pv_trace.archive, &memory_callbacks, NULL) != OTF2_SUCCESS ||
        comm->set_otf2_collectives(comm->ctx, pv_trace.archive) != 0 ||
        OTF2_Archive_OpenEvtFiles(pv_trace.archive) != OTF2_SUCCESS) {
        /* Not closed: OTF2 3.0's OTF2_Archive_Close crashes on an archive whose event files could
         * not be opened (e.g. DIR/traces/ exists already), and the run must go on uninstrumented. */
        pv_trace.archive = NULL;
        return PERFVAR_ERR_IO;
    }
    pv_trace.evt = OTF2_Archive_GetEvtWriter(pv_trace.archive, (OTF2_LocationRef)comm->rank);
    pv_trace.attrs = OTF2_AttributeList_New();
    if (!pv_trace.evt || !pv_trace.attrs) return PERFVAR_ERR_IO;
    return PERFVAR_OK;
}

uint32_t pv_trace_region_define(const char *canonical, const char *display, OTF2_RegionRole role,
                                OTF2_Paradigm paradigm)
{
    if (pv_trace.ndyn == pv_trace.dyn_cap) {
        int cap = pv_trace.dyn_cap ? 2 * pv_trace.dyn_cap : 64;
        pv_local_region *d = realloc(pv_trace.dyn, (size_t)cap * sizeof *d);
        if (!d) return UINT32_MAX;
        pv_trace.dyn = d, pv_trace.dyn_cap = cap;
    }
    pv_local_region *r = &pv_trace.dyn[pv_trace.ndyn];
    r->canonical = strdup(canonical);
    r->display = strdup(display);
    if (!r->canonical || !r->display) {
        free(r->canonical), free(r->display);
        return UINT32_MAX;
    }
    r->role = role;
    r->paradigm = paradigm;
    return (uint32_t)(pv_trace.nstatic + pv_trace.ndyn++);
}

/* Keep per-location time order; returns the timestamp to write. */
static uint64_t ordered(uint64_t t)
{
    if (!pv_trace.have_first) {
        pv_trace.first_t = pv_trace.last_t = t;
        pv_trace.have_first = 1;
    }
    if (t < pv_trace.last_t) {
        pv_trace.stats.timestamps_raised++;
        t = pv_trace.last_t;
    }
    pv_trace.last_t = t;
    return t;
}

static void check(OTF2_ErrorCode rc)
{
    if (rc != OTF2_SUCCESS) pv_trace.stats.events_lost++;
}

static OTF2_AttributeList *cpu_attr(int cpu)
{
    if (cpu < 0) return NULL;
    OTF2_AttributeList_AddUint32(pv_trace.attrs, PV_ATTR_CPU, (uint32_t)cpu);
    return pv_trace.attrs;
}

void pv_trace_enter(uint64_t t, uint32_t region, int cpu)
{
    t = ordered(t);
    check(OTF2_EvtWriter_Enter(pv_trace.evt, cpu_attr(cpu), t, region));
}

void pv_trace_leave(uint64_t t, uint32_t region, int cpu)
{
    t = ordered(t);
    check(OTF2_EvtWriter_Leave(pv_trace.evt, cpu_attr(cpu), t, region));
}

void pv_trace_send(uint64_t t, uint32_t peer, uint32_t tag, uint64_t bytes)
{
    t = ordered(t);
    check(OTF2_EvtWriter_MpiSend(pv_trace.evt, NULL, t, peer, PV_COMM_WORLD, tag, bytes));
}

void pv_trace_recv(uint64_t t, uint32_t peer, uint32_t tag, uint64_t bytes)
{
    t = ordered(t);
    check(OTF2_EvtWriter_MpiRecv(pv_trace.evt, NULL, t, peer, PV_COMM_WORLD, tag, bytes));
}

void pv_trace_collective_begin(uint64_t t)
{
    t = ordered(t);
    check(OTF2_EvtWriter_MpiCollectiveBegin(pv_trace.evt, NULL, t));
}

void pv_trace_collective_end(uint64_t t, OTF2_CollectiveOp op, uint32_t root, uint64_t sent,
                             uint64_t received)
{
    t = ordered(t);
    check(OTF2_EvtWriter_MpiCollectiveEnd(pv_trace.evt, NULL, t, op, PV_COMM_WORLD, root, sent,
                                          received));
}
