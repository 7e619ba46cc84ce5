/*
 * read.c — the event loop of the native trace reader (read.h): OTF2 event callbacks that match
 * Enter/Leave per location and store samples in arrays that grow by doubling.
 *
 * Every rule here mirrors postproc/perfvar/reader_otf2.py (_LocationScanner); tests/python/
 * test_reader_native.py compares the two on every trace the reader tests make.
 */
#define _GNU_SOURCE /* mremap */
#include "read/read.h"

#include <otf2/otf2.h>
#include <perfvar.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* One open Enter: the region, its time, and what a matching Leave needs. */
typedef struct frame {
    uint32_t region;
    int32_t cpu;
    uint64_t time;
    int64_t context;
} frame;

struct perfvar_read {
    OTF2_Reader *reader;
    int def_files;
    /* Region kinds: a dense table by reference when the references are compact (they are: OTF2
     * writers number regions 0, 1, ...), else sorted pairs searched by bisection. */
    int32_t *kind_by_ref;
    uint32_t nkind_by_ref;
    uint32_t *sorted_refs;
    int32_t *sorted_kinds;
    size_t nsorted;
    OTF2_Type cpu_type;
    OTF2_AttributeRef cpu_ref;
    double ns_per_tick;
    /* State of the location being read. */
    int32_t rank, thread;
    int64_t moved; /* bytes the MPI records since the last segment Enter carried, -1 = none */
    int32_t last_cpu; /* the CPU the location's last event with a cpu attribute gave, -1 = none */
    frame *stack;
    size_t depth, stack_cap;
    /* Rows of every location read since the last perfvar_read_take, in reading order; the rows
     * of the location being read start at first_sample and first_probe. */
    perfvar_read_sample *samples;
    size_t nsamples, samples_cap, first_sample;
    perfvar_read_probe *probes;
    size_t nprobes, probes_cap, first_probe;
    /* Counters: the classes that give metric rows, their members' columns (set_metrics). */
    uint32_t *metric_classes;
    int32_t *metric_columns;
    size_t nmetric_classes;
    perfvar_read_metric *metrics;
    size_t nmetrics, metrics_cap, first_metric;
    int have_base;           /* the location's first Metric event was met */
    uint64_t base[PERFVAR_READ_METRICS_MAX]; /* the totals of its last one, */
    uint64_t base_time;      /* its time, */
    size_t base_samples;     /* and the location's samples then */
    perfvar_read_result *result;
    uint64_t announced; /* events the definitions announce for the location being read, 0 = unknown */
};

static int32_t region_kind(const perfvar_read *r, uint32_t region)
{
    if (r->kind_by_ref) return region < r->nkind_by_ref ? r->kind_by_ref[region] : PERFVAR_READ_REGION_OTHER;
    size_t lo = 0, hi = r->nsorted;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->sorted_refs[mid] < region)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->nsorted && r->sorted_refs[lo] == region ? r->sorted_kinds[lo]
                                                           : PERFVAR_READ_REGION_OTHER;
}

/* The CPU an Enter/Leave's own cpu attribute names into *cpu; 0 when it has none (or one that is
 * not a number). The Python reader reads a UINT32 attribute with OTF2_AttributeList_GetUint32
 * (which fails on another type) and any other declared type through its value, converted with
 * int(): integers as they are, floating point truncated towards zero, NaN and infinities and
 * references none. 0xFFFFFFFF (unknown from here on) becomes -1. */
static int given_cpu(const perfvar_read *r, const OTF2_AttributeList *attributes, int32_t *cpu)
{
    if (r->cpu_type == OTF2_TYPE_NONE || attributes == NULL) return 0;
    /* Most events have none (perfvar writes it where the CPU changed): asking OTF2 for an absent
     * attribute makes it print an error, a line on stderr per event. */
    if (OTF2_AttributeList_GetNumberOfElements(attributes) == 0 ||
        !OTF2_AttributeList_TestAttributeByID(attributes, r->cpu_ref))
        return 0;
    if (r->cpu_type == OTF2_TYPE_UINT32) {
        uint32_t v;
        if (OTF2_AttributeList_GetUint32(attributes, r->cpu_ref, &v) != OTF2_SUCCESS) return 0;
        *cpu = (int32_t)v; /* UINT32_MAX: -1 */
        return 1;
    }
    OTF2_Type type;
    OTF2_AttributeValue v;
    if (OTF2_AttributeList_GetAttributeByID(attributes, r->cpu_ref, &type, &v) != OTF2_SUCCESS)
        return 0;
    switch (type) {
    case OTF2_TYPE_UINT8: *cpu = (int32_t)v.uint8; return 1;
    case OTF2_TYPE_UINT16: *cpu = (int32_t)v.uint16; return 1;
    case OTF2_TYPE_UINT32: *cpu = (int32_t)v.uint32; return 1;
    case OTF2_TYPE_UINT64: *cpu = (int32_t)v.uint64; return 1;
    case OTF2_TYPE_INT8: *cpu = (int32_t)v.int8; return 1;
    case OTF2_TYPE_INT16: *cpu = (int32_t)v.int16; return 1;
    case OTF2_TYPE_INT32: *cpu = v.int32; return 1;
    case OTF2_TYPE_INT64: *cpu = (int32_t)v.int64; return 1;
    case OTF2_TYPE_FLOAT:
        if (!isfinite(v.float32)) return 0;
        *cpu = (int32_t)v.float32;
        return 1;
    case OTF2_TYPE_DOUBLE:
        if (!isfinite(v.float64)) return 0;
        *cpu = (int32_t)v.float64;
        return 1;
    default: return 0;
    }
}

/* The CPU of a segment, probe or user timer Enter/Leave: its own cpu attribute, which becomes the
 * location's last, or the last one when it has none (perfvar writes it only where it changed). */
static int32_t event_cpu(perfvar_read *r, const OTF2_AttributeList *attributes)
{
    int32_t cpu;
    if (given_cpu(r, attributes, &cpu)) r->last_cpu = cpu;
    return r->last_cpu;
}

/* Grow *buf (elements of size elem) to hold one more than n; 0 on success. Doubling keeps the
 * amortized cost per event constant; the buffers are kept across locations. */
static int reserve(void **buf, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap) return 0;
    size_t want = *cap ? 2 * *cap : 1024;
    void *p = realloc(*buf, want * elem);
    if (!p) return -1;
    *buf = p;
    *cap = want;
    return 0;
}

/* The row arrays, which end up as the caller's arrays whatever their size: anonymous mappings
 * grown by remapping, so that growing never copies rows (a heap block may be copied on every
 * doubling), with transparent huge pages asked for, so that filling them takes few page faults. */
static size_t mapped_bytes(size_t rows, size_t elem)
{
    size_t page = 2u << 20; /* a huge page; the mapping is rounded to it */
    return (rows * elem + page - 1) / page * page;
}

static int reserve_rows(void **buf, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap) return 0;
    size_t want = *cap ? 2 * *cap : mapped_bytes(1, elem) / elem;
    size_t old_bytes = mapped_bytes(*cap, elem), new_bytes = mapped_bytes(want, elem);
    void *p = *buf ? mremap(*buf, old_bytes, new_bytes, MREMAP_MAYMOVE)
                   : mmap(NULL, new_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -1;
    (void)madvise(p, new_bytes, MADV_HUGEPAGE); /* a hint: refused where THP is off */
    *buf = p;
    *cap = want;
    return 0;
}

static void unmap_rows(void *buf, size_t cap, size_t elem)
{
    if (buf) (void)munmap(buf, mapped_bytes(cap, elem));
}

/* An event past the announced count: OTF2 3.0 decodes the stale part of a chunk buffer a cut file
 * did not fill, possibly without end (until memory runs out). Stop and say so. */
static int past_end(perfvar_read *r, uint64_t position)
{
    if (r->announced && position > r->announced) {
        r->result->overrun = 1;
        return 1;
    }
    return 0;
}

static OTF2_CallbackCode on_enter(OTF2_LocationRef location, OTF2_TimeStamp time, uint64_t position,
                                  void *user, OTF2_AttributeList *attributes, OTF2_RegionRef region)
{
    (void)location;
    perfvar_read *r = user;
    if (past_end(r, position)) return OTF2_CALLBACK_INTERRUPT;
    if (reserve((void **)&r->stack, &r->stack_cap, r->depth, sizeof(frame))) {
        r->result->out_of_memory = 1;
        return OTF2_CALLBACK_INTERRUPT;
    }
    frame *f = &r->stack[r->depth++];
    int32_t kind = region_kind(r, region);
    f->region = region;
    f->time = time;
    f->cpu = -1;
    f->context = -1;
    if (kind >= 0) {
        f->cpu = event_cpu(r, attributes);
        f->context = r->moved;
        r->moved = -1; /* the MPI call before the next segment starts after this one */
    } else if (kind == PERFVAR_READ_REGION_PROBE) {
        f->cpu = event_cpu(r, attributes);
    } else if (kind == PERFVAR_READ_REGION_USER) {
        (void)event_cpu(r, attributes); /* it may say where the CPU changed */
    }
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_leave(OTF2_LocationRef location, OTF2_TimeStamp time, uint64_t position,
                                  void *user, OTF2_AttributeList *attributes, OTF2_RegionRef region)
{
    (void)location;
    perfvar_read *r = user;
    if (past_end(r, position)) return OTF2_CALLBACK_INTERRUPT;
    int32_t kind = region_kind(r, region);
    /* Read first: a Leave without its Enter may still say where the CPU changed. */
    int carries = kind >= 0 || kind == PERFVAR_READ_REGION_USER || kind == PERFVAR_READ_REGION_PROBE;
    int32_t cpu_leave = carries ? event_cpu(r, attributes) : -1;
    if (r->depth == 0 || r->stack[r->depth - 1].region != region) {
        /* Unwind to the matching Enter; anything above it was never left. */
        size_t d = r->depth;
        while (d > 0 && r->stack[d - 1].region != region) d--;
        if (d == 0) {
            r->result->unmatched_leaves++;
            return OTF2_CALLBACK_SUCCESS;
        }
        r->result->unclosed += (int64_t)(r->depth - d);
        r->depth = d;
    }
    frame f = r->stack[--r->depth];
    /* Signed: a Leave stamped before its Enter gives a negative duration, as in Python. */
    double ticks = (double)(int64_t)(time - f.time);
    if (kind >= 0) {
        if (reserve_rows((void **)&r->samples, &r->samples_cap, r->nsamples,
                         sizeof(perfvar_read_sample))) {
            r->result->out_of_memory = 1;
            return OTF2_CALLBACK_INTERRUPT;
        }
        perfvar_read_sample *s = &r->samples[r->nsamples++];
        s->segment = kind;
        s->rank = r->rank;
        s->thread = r->thread;
        s->start_ticks = f.time;
        s->duration_ns = ticks * r->ns_per_tick;
        s->cpu_enter = f.cpu;
        s->cpu_leave = cpu_leave;
        s->context_bytes = f.context;
    } else if (kind == PERFVAR_READ_REGION_USER) {
        r->result->user_regions++;
    } else if (kind == PERFVAR_READ_REGION_PROBE) {
        if (reserve_rows((void **)&r->probes, &r->probes_cap, r->nprobes,
                         sizeof(perfvar_read_probe))) {
            r->result->out_of_memory = 1;
            return OTF2_CALLBACK_INTERRUPT;
        }
        perfvar_read_probe *p = &r->probes[r->nprobes++];
        p->rank = r->rank;
        p->thread = r->thread;
        p->start_ticks = f.time;
        p->duration_ns = ticks * r->ns_per_tick;
        p->cpu = cpu_leave == f.cpu ? f.cpu : -1; /* a probe that migrated belongs to no core */
    }
    return OTF2_CALLBACK_SUCCESS;
}

static void moved(perfvar_read *r, uint64_t nbytes)
{
    r->moved = (r->moved < 0 ? 0 : r->moved) + (int64_t)nbytes;
}

static OTF2_CallbackCode on_send(OTF2_LocationRef l, OTF2_TimeStamp t, uint64_t p, void *user,
                                 OTF2_AttributeList *a, uint32_t peer, OTF2_CommRef comm, uint32_t tag,
                                 uint64_t length)
{
    (void)l, (void)t, (void)a, (void)peer, (void)comm, (void)tag;
    if (past_end(user, p)) return OTF2_CALLBACK_INTERRUPT;
    moved(user, length);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_isend(OTF2_LocationRef l, OTF2_TimeStamp t, uint64_t p, void *user,
                                  OTF2_AttributeList *a, uint32_t peer, OTF2_CommRef comm, uint32_t tag,
                                  uint64_t length, uint64_t request)
{
    (void)request;
    return on_send(l, t, p, user, a, peer, comm, tag, length);
}

static OTF2_CallbackCode on_collective(OTF2_LocationRef l, OTF2_TimeStamp t, uint64_t p, void *user,
                                       OTF2_AttributeList *a, OTF2_CollectiveOp op, OTF2_CommRef comm,
                                       uint32_t root, uint64_t sent, uint64_t received)
{
    (void)l, (void)t, (void)a, (void)op, (void)comm, (void)root;
    if (past_end(user, p)) return OTF2_CALLBACK_INTERRUPT;
    moved(user, sent + received);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_nb_collective(OTF2_LocationRef l, OTF2_TimeStamp t, uint64_t p,
                                          void *user, OTF2_AttributeList *a, OTF2_CollectiveOp op,
                                          OTF2_CommRef comm, uint32_t root, uint64_t sent,
                                          uint64_t received, uint64_t request)
{
    (void)request;
    return on_collective(l, t, p, user, a, op, comm, root, sent, received);
}

/* A Metric event: a row of the deltas since the location's previous one (read.h). */
static OTF2_CallbackCode on_metric(OTF2_LocationRef l, OTF2_TimeStamp t, uint64_t p, void *user,
                                   OTF2_AttributeList *a, OTF2_MetricRef metric, uint8_t n,
                                   const OTF2_Type *types, const OTF2_MetricValue *values)
{
    (void)l, (void)a;
    perfvar_read *r = user;
    if (past_end(r, p)) return OTF2_CALLBACK_INTERRUPT;
    size_t c = 0;
    while (c < r->nmetric_classes && r->metric_classes[c] != metric) c++;
    if (c == r->nmetric_classes || n > PERFVAR_READ_METRICS_MAX) return OTF2_CALLBACK_SUCCESS;
    for (uint8_t i = 0; i < n; i++)
        if (types[i] != OTF2_TYPE_UINT64) return OTF2_CALLBACK_SUCCESS;
    size_t nseg = r->nsamples - r->first_sample;
    if (r->have_base && nseg == r->base_samples) return OTF2_CALLBACK_SUCCESS; /* to the next */
    if (r->have_base) {
        if (reserve_rows((void **)&r->metrics, &r->metrics_cap, r->nmetrics,
                         sizeof(perfvar_read_metric))) {
            r->result->out_of_memory = 1;
            return OTF2_CALLBACK_INTERRUPT;
        }
        perfvar_read_metric *m = &r->metrics[r->nmetrics++];
        m->rank = r->rank, m->thread = r->thread;
        m->sample = (int64_t)nseg - 1, m->first = (int64_t)r->base_samples;
        m->time_ticks = t, m->since_ticks = r->base_time;
        for (int j = 0; j < PERFVAR_READ_METRICS_MAX; j++) m->values[j] = NAN;
        const int32_t *col = &r->metric_columns[c * PERFVAR_READ_METRICS_MAX];
        for (uint8_t i = 0; i < n; i++)
            if (col[i] >= 0 && col[i] < PERFVAR_READ_METRICS_MAX)
                m->values[col[i]] = (double)(values[i].unsigned_int - r->base[i]);
    }
    for (uint8_t i = 0; i < n; i++) r->base[i] = values[i].unsigned_int;
    r->have_base = 1, r->base_time = t, r->base_samples = nseg;
    return OTF2_CALLBACK_SUCCESS;
}

int perfvar_read_set_metrics(perfvar_read *r, const uint32_t *class_refs, const int32_t *columns,
                             size_t nclasses)
{
    if (!r || (nclasses && (!class_refs || !columns))) return PERFVAR_ERR_INVALID_ARG;
    free(r->metric_classes), free(r->metric_columns);
    r->metric_classes = NULL, r->metric_columns = NULL, r->nmetric_classes = 0;
    if (!nclasses) return PERFVAR_OK;
    r->metric_classes = malloc(nclasses * sizeof *r->metric_classes);
    r->metric_columns = malloc(nclasses * PERFVAR_READ_METRICS_MAX * sizeof *r->metric_columns);
    if (!r->metric_classes || !r->metric_columns) return PERFVAR_ERR_NO_MEMORY;
    memcpy(r->metric_classes, class_refs, nclasses * sizeof *r->metric_classes);
    memcpy(r->metric_columns, columns, nclasses * PERFVAR_READ_METRICS_MAX * sizeof *columns);
    r->nmetric_classes = nclasses;
    return PERFVAR_OK;
}

typedef struct region_pair {
    uint32_t ref;
    int32_t kind;
} region_pair;

static int cmp_region_pair(const void *a, const void *b)
{
    uint32_t x = ((const region_pair *)a)->ref, y = ((const region_pair *)b)->ref;
    return (x > y) - (x < y);
}

/* The region kinds as a dense table, or sorted for bisection when the references are sparse. */
static int set_regions(perfvar_read *r, const uint32_t *refs, const int32_t *kinds, size_t n)
{
    uint32_t max = 0;
    for (size_t i = 0; i < n; i++) max = refs[i] > max ? refs[i] : max;
    if (n == 0) return PERFVAR_OK;
    /* Dense when the table costs at most a few times the list of references. */
    if ((uint64_t)max < 4 * (uint64_t)n + 4096) {
        r->nkind_by_ref = max + 1;
        r->kind_by_ref = malloc(r->nkind_by_ref * sizeof(int32_t));
        if (!r->kind_by_ref) return PERFVAR_ERR_NO_MEMORY;
        for (uint32_t i = 0; i < r->nkind_by_ref; i++) r->kind_by_ref[i] = PERFVAR_READ_REGION_OTHER;
        for (size_t i = 0; i < n; i++) r->kind_by_ref[refs[i]] = kinds[i];
        return PERFVAR_OK;
    }
    region_pair *pairs = malloc(n * sizeof(region_pair));
    r->sorted_refs = malloc(n * sizeof(uint32_t));
    r->sorted_kinds = malloc(n * sizeof(int32_t));
    if (!pairs || !r->sorted_refs || !r->sorted_kinds) {
        free(pairs);
        return PERFVAR_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < n; i++) pairs[i] = (region_pair){refs[i], kinds[i]};
    qsort(pairs, n, sizeof(region_pair), cmp_region_pair);
    for (size_t i = 0; i < n; i++) {
        r->sorted_refs[i] = pairs[i].ref;
        r->sorted_kinds[i] = pairs[i].kind;
    }
    r->nsorted = n;
    free(pairs);
    return PERFVAR_OK;
}

int perfvar_read_open(const char *anchor, const uint64_t *locations, size_t nlocations,
                      const uint32_t *region_refs, const int32_t *region_kinds, size_t nregions,
                      int cpu_attr_type, uint32_t cpu_attr_ref, double ns_per_tick,
                      perfvar_read **out, int *otf2_status, int *stage, int *def_files)
{
    if (!anchor || !out || !otf2_status || !stage || !def_files || (nlocations && !locations) ||
        (nregions && (!region_refs || !region_kinds)))
        return PERFVAR_ERR_INVALID_ARG;
    *out = NULL;
    *otf2_status = OTF2_SUCCESS;
    *stage = 0;
    *def_files = 0;
    perfvar_read *r = calloc(1, sizeof *r);
    if (!r) return PERFVAR_ERR_NO_MEMORY;
    r->cpu_type = (OTF2_Type)cpu_attr_type;
    r->cpu_ref = cpu_attr_ref;
    r->ns_per_tick = ns_per_tick;
    int rc = set_regions(r, region_refs, region_kinds, nregions);
    if (rc != PERFVAR_OK) {
        perfvar_read_close(r);
        return rc;
    }
    r->reader = OTF2_Reader_Open(anchor);
    if (!r->reader) {
        *otf2_status = OTF2_ERROR_INVALID;
        *stage = 1;
        perfvar_read_close(r);
        return PERFVAR_ERR_IO;
    }
    OTF2_ErrorCode st = OTF2_Reader_SetSerialCollectiveCallbacks(r->reader);
    for (size_t i = 0; st == OTF2_SUCCESS && i < nlocations; i++)
        st = OTF2_Reader_SelectLocation(r->reader, locations[i]);
    if (st != OTF2_SUCCESS) {
        *otf2_status = st;
        *stage = 1;
        perfvar_read_close(r);
        return PERFVAR_ERR_IO;
    }
    /* Local definitions (mapping tables, clock offsets) are optional: a trace may have none. */
    r->def_files = OTF2_Reader_OpenDefFiles(r->reader) == OTF2_SUCCESS;
    *def_files = r->def_files;
    st = OTF2_Reader_OpenEvtFiles(r->reader);
    if (st != OTF2_SUCCESS) {
        *otf2_status = st;
        *stage = 2;
        perfvar_read_close(r);
        return PERFVAR_ERR_IO;
    }
    *out = r;
    return PERFVAR_OK;
}

int perfvar_read_local_defs(perfvar_read *r, uint64_t location)
{
    if (!r) return PERFVAR_ERR_INVALID_ARG;
    OTF2_DefReader *defs = OTF2_Reader_GetDefReader(r->reader, location);
    if (defs) {
        uint64_t n;
        (void)OTF2_Reader_ReadAllLocalDefinitions(r->reader, defs, &n);
        (void)OTF2_Reader_CloseDefReader(r->reader, defs);
    }
    return PERFVAR_OK;
}

int perfvar_read_events(perfvar_read *r, uint64_t location, int32_t rank, int32_t thread,
                        uint64_t announced, perfvar_read_result *result)
{
    if (!r || !result) return PERFVAR_ERR_INVALID_ARG;
    memset(result, 0, sizeof *result);
    r->rank = rank;
    r->thread = thread;
    r->announced = announced;
    r->moved = -1;
    r->last_cpu = -1;
    r->depth = 0;
    r->first_sample = r->nsamples;
    r->first_probe = r->nprobes;
    r->first_metric = r->nmetrics;
    r->have_base = 0;
    r->result = result;
    OTF2_EvtReader *evt = OTF2_Reader_GetEvtReader(r->reader, location);
    if (!evt) return PERFVAR_OK;
    result->evt_reader = 1;
    OTF2_EvtReaderCallbacks *cb = OTF2_EvtReaderCallbacks_New();
    if (!cb) {
        (void)OTF2_Reader_CloseEvtReader(r->reader, evt);
        return PERFVAR_ERR_NO_MEMORY;
    }
    OTF2_EvtReaderCallbacks_SetEnterCallback(cb, on_enter);
    OTF2_EvtReaderCallbacks_SetLeaveCallback(cb, on_leave);
    OTF2_EvtReaderCallbacks_SetMpiSendCallback(cb, on_send);
    OTF2_EvtReaderCallbacks_SetMpiRecvCallback(cb, on_send);
    OTF2_EvtReaderCallbacks_SetMpiIsendCallback(cb, on_isend);
    OTF2_EvtReaderCallbacks_SetMpiIrecvCallback(cb, on_isend);
    OTF2_EvtReaderCallbacks_SetMpiCollectiveEndCallback(cb, on_collective);
    OTF2_EvtReaderCallbacks_SetNonBlockingCollectiveCompleteCallback(cb, on_nb_collective);
    /* Only when the trace has counters: a trace without them reads at the same rate as before. */
    if (r->nmetric_classes) OTF2_EvtReaderCallbacks_SetMetricCallback(cb, on_metric);
    OTF2_ErrorCode st = OTF2_Reader_RegisterEvtCallbacks(r->reader, evt, cb, r);
    OTF2_EvtReaderCallbacks_Delete(cb);
    uint64_t n = 0;
    /* Not OTF2_Reader_ReadAllLocalEvents: OTF2 3.0 loops forever in it on an event file cut at a
     * chunk boundary, where asking for a finite count returns "This is no chunk header!". */
    if (st == OTF2_SUCCESS) st = OTF2_Reader_ReadLocalEvents(r->reader, evt, UINT64_MAX - 1, &n);
    result->otf2_status = st;
    result->events_read = n;
    (void)OTF2_Reader_CloseEvtReader(r->reader, evt);
    result->open_at_end = (int64_t)r->depth;
    result->first_sample = (int64_t)r->first_sample;
    result->nsamples = (int64_t)(r->nsamples - r->first_sample);
    result->first_probe = (int64_t)r->first_probe;
    result->nprobes = (int64_t)(r->nprobes - r->first_probe);
    result->first_metric = (int64_t)r->first_metric;
    result->nmetrics = (int64_t)(r->nmetrics - r->first_metric);
    r->result = NULL;
    return PERFVAR_OK;
}

/* The mapping BUF (CAP rows) cut to N rows, for perfvar_read_take; NULL when N is 0. */
static void *handed_over(void *buf, size_t cap, size_t n, size_t elem)
{
    if (!buf) return NULL;
    if (n == 0) {
        unmap_rows(buf, cap, elem);
        return NULL;
    }
    size_t keep = mapped_bytes(n, elem), have = mapped_bytes(cap, elem);
    if (keep < have) (void)munmap((char *)buf + keep, have - keep);
    return buf;
}

int perfvar_read_drop(perfvar_read *r)
{
    if (!r) return PERFVAR_ERR_INVALID_ARG;
    r->nsamples = r->first_sample;
    r->nprobes = r->first_probe;
    r->nmetrics = r->first_metric;
    return PERFVAR_OK;
}

int perfvar_read_take_metrics(perfvar_read *r, perfvar_read_metric **rows, int64_t *nrows)
{
    if (!r || !rows || !nrows) return PERFVAR_ERR_INVALID_ARG;
    *rows = handed_over(r->metrics, r->metrics_cap, r->nmetrics, sizeof(perfvar_read_metric));
    *nrows = *rows ? (int64_t)r->nmetrics : 0;
    r->metrics = NULL;
    r->nmetrics = r->metrics_cap = r->first_metric = 0;
    return PERFVAR_OK;
}

int perfvar_read_take(perfvar_read *r, perfvar_read_sample **samples, int64_t *nsamples,
                      perfvar_read_probe **probes, int64_t *nprobes)
{
    if (!r || !samples || !nsamples || !probes || !nprobes) return PERFVAR_ERR_INVALID_ARG;
    /* Handed over at the size perfvar_read_free is told: the rows, rounded as mapped_bytes. */
    *samples = handed_over(r->samples, r->samples_cap, r->nsamples, sizeof(perfvar_read_sample));
    *nsamples = *samples ? (int64_t)r->nsamples : 0;
    *probes = handed_over(r->probes, r->probes_cap, r->nprobes, sizeof(perfvar_read_probe));
    *nprobes = *probes ? (int64_t)r->nprobes : 0;
    r->samples = NULL;
    r->probes = NULL;
    r->nsamples = r->samples_cap = r->first_sample = 0;
    r->nprobes = r->probes_cap = r->first_probe = 0;
    return PERFVAR_OK;
}

void perfvar_read_free(void *rows, int64_t nrows, size_t row_size)
{
    if (rows) unmap_rows(rows, (size_t)nrows, row_size);
}

int perfvar_read_close(perfvar_read *r)
{
    if (!r) return PERFVAR_OK;
    if (r->reader) {
        (void)OTF2_Reader_CloseEvtFiles(r->reader);
        if (r->def_files) (void)OTF2_Reader_CloseDefFiles(r->reader);
        (void)OTF2_Reader_Close(r->reader);
    }
    free(r->kind_by_ref);
    free(r->sorted_refs);
    free(r->sorted_kinds);
    free(r->stack);
    unmap_rows(r->samples, r->samples_cap, sizeof(perfvar_read_sample));
    unmap_rows(r->probes, r->probes_cap, sizeof(perfvar_read_probe));
    unmap_rows(r->metrics, r->metrics_cap, sizeof(perfvar_read_metric));
    free(r->metric_classes), free(r->metric_columns);
    free(r);
    return PERFVAR_OK;
}

size_t perfvar_read_sample_size(void) { return sizeof(perfvar_read_sample); }
size_t perfvar_read_probe_size(void) { return sizeof(perfvar_read_probe); }
size_t perfvar_read_metric_size(void) { return sizeof(perfvar_read_metric); }
