/* trace_close.c — definition unification and archive closing; see trace.h.
 *
 * Every rank sends rank 0 its host name and place in it (socket, core), its locations (thread index, event count), its run-time
 * regions (by canonical name) and its communicators (by their members' world ranks); rank 0 gives
 * each distinct canonical name and each distinct member list one global id, returns each rank its
 * local->global maps, and writes the global definitions. The threads of a rank share its
 * regions, so each rank writes the same mapping table and clock offsets into the local definition
 * file of each of its locations (written even when empty: readers expect one per location).
 * Counters (PERFVAR_METRICS) may differ between ranks (an event one node's kernel refuses): each
 * counter name is one MetricMember, each distinct list of them one MetricClass, and a rank's
 * events name its class through OTF2_MAPPING_METRIC. */
#include "trace_internal.h"
#include "../core/u64map.h"
#include "perfvar.h"
#include "pv_spec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a growable byte buffer for (de)serialising ---- */
typedef struct bytes {
    char *p;
    size_t n, cap;
} bytes;

static int put(bytes *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return -1;
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
    return 0;
}

static int put_str(bytes *b, const char *s) { return put(b, s, strlen(s) + 1); }

/* ---- rank 0: string table with de-duplication (open addressing, FNV-1a) ---- */
typedef struct strtab {
    const char **strs;
    uint32_t n, cap;  /* strings */
    uint32_t *slots;  /* hash slots: index + 1, 0 = empty */
    uint32_t nslots;
} strtab;

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

static int strtab_grow(strtab *t)
{
    uint32_t nslots = t->nslots ? 2 * t->nslots : 1024;
    uint32_t *slots = calloc(nslots, sizeof *slots);
    if (!slots) return -1;
    for (uint32_t i = 0; i < t->n; i++) {
        uint32_t j = (uint32_t)(fnv1a(t->strs[i]) & (nslots - 1));
        while (slots[j]) j = (j + 1) & (nslots - 1);
        slots[j] = i + 1;
    }
    free(t->slots);
    t->slots = slots, t->nslots = nslots;
    return 0;
}

/* Id of s (interning a pointer to it, which must outlive the table); UINT32_MAX on no memory. */
static uint32_t strtab_id(strtab *t, const char *s)
{
    if (2 * (t->n + 1) > t->nslots && strtab_grow(t)) return UINT32_MAX;
    uint32_t j = (uint32_t)(fnv1a(s) & (t->nslots - 1));
    while (t->slots[j]) {
        if (strcmp(t->strs[t->slots[j] - 1], s) == 0) return t->slots[j] - 1;
        j = (j + 1) & (t->nslots - 1);
    }
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? 2 * t->cap : 256;
        const char **strs = realloc(t->strs, cap * sizeof *strs);
        if (!strs) return UINT32_MAX;
        t->strs = strs, t->cap = cap;
    }
    t->strs[t->n] = s;
    t->slots[j] = t->n + 1;
    return t->n++;
}

static void strtab_free(strtab *t)
{
    free(t->strs);
    free(t->slots);
}

/* ---- rank 0: what every rank reported ---- */
typedef struct rank_report {
    const char *host;
    int32_t package, core; /* pv_trace_place */
    uint32_t nlocs;
    const char *locs; /* nlocs records: thread u32, events u64 */
    uint32_t ndyn;
    const char *dyn;  /* ndyn records: role u8, paradigm u8, canonical\0, display\0 */
    uint32_t ncomms;
    const char *comms; /* ncomms records: n u32, world ranks u32[n] (unaligned) */
    uint32_t nmetrics;
    const char *metrics; /* nmetrics records: name\0, unit\0, description\0 */
} rank_report;

#define LOC_RECORD (sizeof(uint32_t) + sizeof(uint64_t))

typedef struct global_region {
    uint32_t name, canonical;
    OTF2_RegionRole role;
    OTF2_Paradigm paradigm;
} global_region;

static int serialise_local(bytes *b, const char *host, const pv_trace_place *place)
{
    uint32_t nlocs = (uint32_t)pv_trace.nlocs, ndyn = (uint32_t)pv_trace.ndyn;
    int32_t where[2] = {place->package, place->core};
    if (put_str(b, host) || put(b, where, sizeof where) || put(b, &nlocs, sizeof nlocs)) return -1;
    for (int i = 0; i < pv_trace.nlocs; i++) {
        const pv_trace_loc *l = pv_trace.locs[i];
        if (put(b, &l->thread, sizeof l->thread) ||
            put(b, &l->stats.events_written, sizeof l->stats.events_written))
            return -1;
    }
    if (put(b, &ndyn, sizeof ndyn)) return -1;
    for (int i = 0; i < pv_trace.ndyn; i++) {
        const pv_local_region *r = &pv_trace.dyn[i];
        unsigned char rp[2] = {(unsigned char)r->role, (unsigned char)r->paradigm};
        if (put(b, rp, 2) || put_str(b, r->canonical) || put_str(b, r->display)) return -1;
    }
    uint32_t ncomms = (uint32_t)pv_trace.ncomms;
    if (put(b, &ncomms, sizeof ncomms)) return -1;
    for (int i = 0; i < pv_trace.ncomms; i++) {
        const pv_local_comm *c = &pv_trace.comms[i];
        if (put(b, &c->n, sizeof c->n) || put(b, c->world_ranks, c->n * sizeof *c->world_ranks))
            return -1;
    }
    uint32_t nmetrics = (uint32_t)pv_trace.nmetrics;
    if (put(b, &nmetrics, sizeof nmetrics)) return -1;
    for (int i = 0; i < 3 * pv_trace.nmetrics; i++)
        if (put_str(b, pv_trace.metric_text[i])) return -1;
    return 0;
}

static void parse_report(const char *p, rank_report *r)
{
    r->host = p;
    p += strlen(p) + 1;
    memcpy(&r->package, p, sizeof r->package);
    memcpy(&r->core, p + sizeof r->package, sizeof r->core);
    p += sizeof r->package + sizeof r->core;
    memcpy(&r->nlocs, p, sizeof r->nlocs);
    r->locs = p + sizeof r->nlocs;
    p = r->locs + (size_t)r->nlocs * LOC_RECORD;
    memcpy(&r->ndyn, p, sizeof r->ndyn);
    r->dyn = p + sizeof r->ndyn;
    p = r->dyn;
    for (uint32_t i = 0; i < r->ndyn; i++) { /* role, paradigm, canonical\0, display\0 */
        p += 2;
        p += strlen(p) + 1;
        p += strlen(p) + 1;
    }
    memcpy(&r->ncomms, p, sizeof r->ncomms);
    r->comms = p + sizeof r->ncomms;
    p = r->comms;
    for (uint32_t i = 0; i < r->ncomms; i++) {
        uint32_t n;
        memcpy(&n, p, sizeof n);
        p += sizeof n + (size_t)n * sizeof(uint32_t);
    }
    memcpy(&r->nmetrics, p, sizeof r->nmetrics);
    r->metrics = p + sizeof r->nmetrics;
}

/* Rank 0: build global regions and per-rank maps (concatenated uint64 arrays, byte counts in
 * map_counts), then write the global definitions. */
typedef struct unify {
    strtab strings;
    global_region *regions;
    uint32_t nregions, cap;
    uint32_t *canon_to_region; /* by canonical string id, UINT32_MAX = none */
    uint32_t canon_cap;
    strtab comm_keys;          /* "w0,w1,...": global comm id = 1 + key id (0 = MPI_COMM_WORLD) */
    char **keys;               /* the key strings (owned), by key id */
    uint32_t nkeys_cap;
    strtab metric_names;       /* global MetricMember id = name id */
    const char **metric_unit, **metric_desc; /* by member id: from the first rank that has it */
    strtab class_keys;         /* "m0,m1,...": global MetricClass id = key id */
    char **class_key;          /* the key strings (owned), by class id */
} unify;

/* Global id of the communicator whose members (world ranks, unaligned) are m[0..n); UINT32_MAX on
 * no memory. */
static uint32_t add_comm(unify *u, const char *m, uint32_t n)
{
    if (u->comm_keys.n == u->nkeys_cap) { /* room for a new key first: every id has its string */
        uint32_t cap = u->nkeys_cap ? 2 * u->nkeys_cap : 16;
        char **keys = realloc(u->keys, cap * sizeof *keys);
        if (!keys) return UINT32_MAX;
        u->keys = keys, u->nkeys_cap = cap;
    }
    char *key = malloc((size_t)n * 11 + 12), *k = key;
    if (!key) return UINT32_MAX;
    k += sprintf(k, "%u:", n);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r;
        memcpy(&r, m + i * sizeof r, sizeof r);
        k += sprintf(k, i ? ",%u" : "%u", r);
    }
    uint32_t before = u->comm_keys.n, id = strtab_id(&u->comm_keys, key);
    if (id == UINT32_MAX || id < before) { /* no memory, or known: the table holds another copy */
        free(key);
        return id == UINT32_MAX ? id : id + 1;
    }
    u->keys[id] = key;
    return id + 1;
}

static uint32_t add_region(unify *u, const char *name, const char *canonical, OTF2_RegionRole role,
                           OTF2_Paradigm paradigm)
{
    uint32_t cn = strtab_id(&u->strings, canonical), nm = strtab_id(&u->strings, name);
    if (cn == UINT32_MAX || nm == UINT32_MAX) return UINT32_MAX;
    if (cn >= u->canon_cap) {
        uint32_t cap = u->canon_cap ? u->canon_cap : 256;
        while (cap <= cn) cap *= 2;
        uint32_t *c = realloc(u->canon_to_region, cap * sizeof *c);
        if (!c) return UINT32_MAX;
        for (uint32_t i = u->canon_cap; i < cap; i++) c[i] = UINT32_MAX;
        u->canon_to_region = c, u->canon_cap = cap;
    }
    if (u->canon_to_region[cn] != UINT32_MAX) return u->canon_to_region[cn];
    if (u->nregions == u->cap) {
        uint32_t cap = u->cap ? 2 * u->cap : 256;
        global_region *g = realloc(u->regions, cap * sizeof *g);
        if (!g) return UINT32_MAX;
        u->regions = g, u->cap = cap;
    }
    u->regions[u->nregions] = (global_region){nm, cn, role, paradigm};
    u->canon_to_region[cn] = u->nregions;
    return u->nregions++;
}

/* The global MetricClass of a rank's counters (report r), made of one MetricMember per counter name;
 * UINT64_MAX for a rank without counters or out of memory. */
static uint64_t add_metric_class(unify *u, const rank_report *r)
{
    if (!r->nmetrics) return UINT64_MAX;
    char *key = malloc((size_t)r->nmetrics * 11 + 1), *k = key;
    if (!key) return UINT64_MAX;
    k[0] = 0;
    const char *p = r->metrics;
    for (uint32_t i = 0; i < r->nmetrics; i++) {
        const char *name = p, *unit = name + strlen(name) + 1, *desc = unit + strlen(unit) + 1;
        p = desc + strlen(desc) + 1;
        uint32_t before = u->metric_names.n, m = strtab_id(&u->metric_names, name);
        if (m == UINT32_MAX) goto fail;
        if (m >= before) { /* a new member: keep its unit and description */
            const char **un = realloc(u->metric_unit, (m + 1) * sizeof *un);
            if (un) u->metric_unit = un;
            const char **de = realloc(u->metric_desc, (m + 1) * sizeof *de);
            if (de) u->metric_desc = de;
            if (!un || !de) goto fail;
            un[m] = unit, de[m] = desc;
        }
        k += sprintf(k, i ? ",%u" : "%u", m);
    }
    uint32_t before = u->class_keys.n, id = strtab_id(&u->class_keys, key);
    if (id == UINT32_MAX) goto fail;
    if (id < before) { /* known: the table holds another copy */
        free(key);
        return id;
    }
    char **keys = realloc(u->class_key, (id + 1) * sizeof *keys);
    if (!keys) goto fail;
    u->class_key = keys, keys[id] = key;
    return id;
fail:
    free(key);
    return UINT64_MAX;
}

/* MetricMember and MetricClass definitions; s_name etc.: the member strings' ids. PAPI's "ns" (the
 * task clock) becomes unit "s" with exponent -9, a count unit "#" (Score-P's). */
static int write_metric_defs(OTF2_GlobalDefWriter *w, const unify *u, const uint32_t *s_name,
                             const uint32_t *s_desc, const uint32_t *s_unit)
{
    for (uint32_t m = 0; m < u->metric_names.n; m++)
        OTF2_GlobalDefWriter_WriteMetricMember(w, m, s_name[m], s_desc[m], OTF2_METRIC_TYPE_PAPI,
                                               OTF2_METRIC_ACCUMULATED_START, OTF2_TYPE_UINT64,
                                               OTF2_BASE_DECIMAL,
                                               strcmp(u->metric_unit[m], "ns") ? 0 : -9, s_unit[m]);
    for (uint32_t c = 0; c < u->class_keys.n; c++) {
        OTF2_MetricMemberRef members[PV_TRACE_METRICS_MAX];
        uint8_t n = 0;
        for (const char *p = u->class_key[c]; *p && n < PV_TRACE_METRICS_MAX; p += *p == ',')
            members[n++] = (OTF2_MetricMemberRef)strtoul(p, (char **)&p, 10);
        /* Written at some region boundaries (segment ends long enough), not at all of them. */
        OTF2_GlobalDefWriter_WriteMetricClass(w, c, n, members, OTF2_METRIC_SYNCHRONOUS,
                                              OTF2_RECORDER_KIND_CPU);
    }
    return 0;
}

/* The clock properties of the trace: ticks per second, and its time range on rank 0's clock. */
typedef struct trace_clock {
    double hz;
    uint64_t offset, length; /* ticks */
    uint64_t realtime;       /* ns since the epoch at offset */
} trace_clock;

/* String 0 is "" (unify_and_write interns it first). */
#define S_EMPTY 0u

/* The strings the global definitions refer to, by their ids in unify.strings, and the names made
 * for them here (the string table points into those until the definitions are written). */
typedef struct def_strings {
    uint32_t mpi, cpu, cpu_desc, machine, node, socket, core, world;
    uint32_t *metric;               /* by member: names, then descriptions, then units (3 n) */
    char (*comm_names)[32];         /* by communicator - 1 */
    uint32_t *comm;
    uint32_t nthreads;              /* the most threads a rank has */
    char (*thread_names)[32];       /* by thread index: "Master thread" (0), "Thread k" */
    uint32_t *thread;
    char (*group_names)[32];        /* by rank: "MPI Rank r" */
    uint32_t *group, *host;
    uint64_t *members;              /* by rank: the location of its master thread */
    uint32_t *node_of_string;       /* system tree node of a host string + 1 (0: none yet) */
    int32_t npackages, ncores;      /* the highest package and core number + 1 */
    char (*socket_names)[24];       /* by package number: "socket p" */
    char (*core_names)[24];         /* by core number: "core c" */
    uint32_t *socket_name, *core_name; /* their string ids (interned where a rank has them) */
} def_strings;

static void def_strings_free(def_strings *ds)
{
    free(ds->metric), free(ds->comm_names), free(ds->comm), free(ds->thread_names), free(ds->thread);
    free(ds->group_names), free(ds->group), free(ds->host), free(ds->members), free(ds->node_of_string);
    free(ds->socket_names), free(ds->core_names), free(ds->socket_name), free(ds->core_name);
}

/* The counters' names, descriptions and units: PAPI's "ns" (the task clock) becomes "s" (its
 * exponent -9 is in the MetricMember), no unit "#" (a count, Score-P's). */
static int intern_metric_strings(unify *u, def_strings *ds)
{
    uint32_t nmembers = u->metric_names.n;
    ds->metric = calloc(3 * (size_t)nmembers + 1, sizeof *ds->metric);
    if (!ds->metric) return -1;
    for (uint32_t m = 0; m < nmembers; m++) {
        const char *unit = u->metric_unit[m];
        ds->metric[m] = strtab_id(&u->strings, u->metric_names.strs[m]);
        ds->metric[nmembers + m] = strtab_id(&u->strings, u->metric_desc[m]);
        ds->metric[2 * nmembers + m] =
            strtab_id(&u->strings, !strcmp(unit, "ns") ? "s" : unit[0] ? unit : "#");
    }
    return 0;
}

static int intern_comm_names(unify *u, def_strings *ds)
{
    uint32_t ncomms = u->comm_keys.n;
    ds->comm_names = calloc(ncomms + 1, sizeof *ds->comm_names);
    ds->comm = calloc(ncomms + 1, sizeof *ds->comm);
    if (!ds->comm_names || !ds->comm) return -1;
    for (uint32_t i = 0; i < ncomms; i++) {
        snprintf(ds->comm_names[i], sizeof ds->comm_names[i], "MPI communicator %u", i + 1);
        ds->comm[i] = strtab_id(&u->strings, ds->comm_names[i]);
    }
    return 0;
}

/* Thread index of the i-th location of report r. */
static uint32_t location_thread(const rank_report *r, uint32_t i)
{
    uint32_t k;
    memcpy(&k, r->locs + i * LOC_RECORD, sizeof k);
    return k;
}

static int intern_thread_names(strtab *s, const rank_report *reps, int nranks, def_strings *ds)
{
    ds->nthreads = 1;
    for (int r = 0; r < nranks; r++)
        for (uint32_t i = 0; i < reps[r].nlocs; i++) {
            uint32_t k = location_thread(&reps[r], i);
            if (k >= ds->nthreads) ds->nthreads = k + 1;
        }
    ds->thread_names = calloc(ds->nthreads, sizeof *ds->thread_names);
    ds->thread = calloc(ds->nthreads, sizeof *ds->thread);
    if (!ds->thread_names || !ds->thread) return -1;
    for (uint32_t k = 0; k < ds->nthreads; k++) {
        if (k)
            snprintf(ds->thread_names[k], sizeof ds->thread_names[k], "Thread %u", k);
        else
            snprintf(ds->thread_names[k], sizeof ds->thread_names[k], "Master thread");
        ds->thread[k] = strtab_id(s, ds->thread_names[k]);
    }
    return 0;
}

static int intern_rank_strings(strtab *s, const rank_report *reps, int nranks, def_strings *ds)
{
    ds->host = calloc((size_t)nranks, sizeof *ds->host);
    ds->group = calloc((size_t)nranks, sizeof *ds->group);
    ds->group_names = calloc((size_t)nranks, sizeof *ds->group_names);
    ds->members = calloc((size_t)nranks, sizeof *ds->members);
    if (!ds->host || !ds->group || !ds->group_names || !ds->members) return -1;
    for (int r = 0; r < nranks; r++) {
        ds->host[r] = strtab_id(s, reps[r].host);
        snprintf(ds->group_names[r], sizeof ds->group_names[r], "MPI Rank %d", r);
        ds->group[r] = strtab_id(s, ds->group_names[r]);
        ds->members[r] = PV_LOCATION_ID(r, 0); /* messages and collectives: the master thread */
    }
    return 0;
}

/* A place's numbers, as the tree uses them: a core without its package is no place (-1). */
#define PLACE_MAX 65536 /* beyond: not a package or core number (a corrupt report) */
static int32_t place_package(const rank_report *r)
{
    return r->package >= 0 && r->package < PLACE_MAX ? r->package : -1;
}
static int32_t place_core(const rank_report *r)
{
    return place_package(r) >= 0 && r->core >= 0 && r->core < PLACE_MAX ? r->core : -1;
}

/* "socket p" and "core c" for the numbers the ranks ran on. */
static int intern_place_names(strtab *s, const rank_report *reps, int nranks, def_strings *ds)
{
    ds->npackages = ds->ncores = 0;
    for (int r = 0; r < nranks; r++) {
        if (place_package(&reps[r]) >= ds->npackages) ds->npackages = place_package(&reps[r]) + 1;
        if (place_core(&reps[r]) >= ds->ncores) ds->ncores = place_core(&reps[r]) + 1;
    }
    ds->socket_names = calloc((size_t)ds->npackages + 1, sizeof *ds->socket_names);
    ds->core_names = calloc((size_t)ds->ncores + 1, sizeof *ds->core_names);
    ds->socket_name = calloc((size_t)ds->npackages + 1, sizeof *ds->socket_name);
    ds->core_name = calloc((size_t)ds->ncores + 1, sizeof *ds->core_name);
    if (!ds->socket_names || !ds->core_names || !ds->socket_name || !ds->core_name) return -1;
    for (int r = 0; r < nranks; r++) {
        int32_t p = place_package(&reps[r]), c = place_core(&reps[r]);
        if (p >= 0 && !ds->socket_names[p][0]) {
            snprintf(ds->socket_names[p], sizeof ds->socket_names[p], "socket %d", (int)p);
            ds->socket_name[p] = strtab_id(s, ds->socket_names[p]);
        }
        if (c >= 0 && !ds->core_names[c][0]) {
            snprintf(ds->core_names[c], sizeof ds->core_names[c], "core %d", (int)c);
            ds->core_name[c] = strtab_id(s, ds->core_names[c]);
        }
    }
    return 0;
}

/* Intern every remaining string first, so all strings are written before any reference (the
 * order here is the order of their ids). -1 when out of memory. */
static int intern_def_strings(unify *u, const rank_report *reps, int nranks, def_strings *ds)
{
    strtab *s = &u->strings;
    ds->mpi = strtab_id(s, "MPI"), ds->cpu = strtab_id(s, PV_TRACE_CPU_ATTRIBUTE);
    ds->cpu_desc = strtab_id(s, "CPU the clock was read on (IA32_TSC_AUX)");
    ds->machine = strtab_id(s, "machine"), ds->node = strtab_id(s, "node");
    ds->socket = strtab_id(s, "socket"), ds->core = strtab_id(s, "core");
    ds->world = strtab_id(s, "MPI_COMM_WORLD");
    if (intern_metric_strings(u, ds) || intern_comm_names(u, ds) ||
        intern_thread_names(s, reps, nranks, ds) || intern_rank_strings(s, reps, nranks, ds) ||
        intern_place_names(s, reps, nranks, ds))
        return -1;
    ds->node_of_string = calloc(s->n, sizeof *ds->node_of_string);
    return ds->node_of_string ? 0 : -1;
}

/* A system tree node, with its OTF2 domain (Score-P's classes and domains: "machine" MACHINE,
 * "node" SHARED_MEMORY, "socket" SOCKET, "core" CORE); its id is the next one. */
static uint32_t tree_node(OTF2_GlobalDefWriter *w, uint32_t *n, uint32_t name, uint32_t cls,
                          uint32_t parent, OTF2_SystemTreeDomain domain)
{
    uint32_t id = (*n)++;
    OTF2_GlobalDefWriter_WriteSystemTreeNode(w, id, name, cls, parent);
    OTF2_GlobalDefWriter_WriteSystemTreeNodeDomain(w, id, domain);
    return id;
}

/* The child of parent named by number (a package or core) in children: found, or written next. */
static uint32_t tree_child(OTF2_GlobalDefWriter *w, uint32_t *n, pv_u64map *children,
                           uint32_t parent, int32_t number, uint32_t name, uint32_t cls,
                           OTF2_SystemTreeDomain domain, int *oom)
{
    uint64_t key = ((uint64_t)parent << 32 | (uint32_t)number) + 1; /* keys are non-zero */
    pv_u64val *v = pv_u64map_find(children, key);
    if (v) return (uint32_t)v->a;
    uint32_t id = tree_node(w, n, name, cls, parent, domain);
    if (pv_u64map_put(children, key, (pv_u64val){.a = id})) *oom = 1;
    return id;
}

/* machine > node (one per distinct host) > socket > core, ids in the order of the first rank on
 * each (so a parent always precedes its children), then one location group per rank under the
 * deepest level its place gives: its core, else its socket (CPUs on several cores of it), else
 * its node (on several sockets, or the place unknown). -1 when out of memory (then ranks whose
 * level could not be recorded hang under their node). */
static int write_system_tree(OTF2_GlobalDefWriter *w, def_strings *ds, const rank_report *reps,
                             int nranks)
{
    uint32_t n = 0;
    tree_node(w, &n, ds->machine, ds->machine, OTF2_UNDEFINED_SYSTEM_TREE_NODE,
              OTF2_SYSTEM_TREE_DOMAIN_MACHINE);
    pv_u64map sockets = {0}, cores = {0};
    uint32_t *parent = malloc((size_t)nranks * sizeof *parent);
    int oom = !parent;
    for (int r = 0; r < nranks; r++) {
        uint32_t *node = &ds->node_of_string[ds->host[r]];
        if (!*node)
            *node = 1 + tree_node(w, &n, ds->host[r], ds->node, 0,
                                  OTF2_SYSTEM_TREE_DOMAIN_SHARED_MEMORY);
        uint32_t at = *node - 1;
        int32_t p = place_package(&reps[r]), c = place_core(&reps[r]);
        if (p >= 0 && parent)
            at = tree_child(w, &n, &sockets, at, p, ds->socket_name[p], ds->socket,
                            OTF2_SYSTEM_TREE_DOMAIN_SOCKET, &oom);
        if (c >= 0 && parent)
            at = tree_child(w, &n, &cores, at, c, ds->core_name[c], ds->core,
                            OTF2_SYSTEM_TREE_DOMAIN_CORE, &oom);
        if (parent) parent[r] = at;
    }
    for (int r = 0; r < nranks; r++)
        OTF2_GlobalDefWriter_WriteLocationGroup(
            w, (uint32_t)r, ds->group[r], OTF2_LOCATION_GROUP_TYPE_PROCESS,
            parent ? parent[r] : ds->node_of_string[ds->host[r]] - 1, OTF2_UNDEFINED_LOCATION_GROUP);
    free(parent);
    pv_u64map_free(&sockets), pv_u64map_free(&cores);
    return oom ? -1 : 0;
}

/* One location per thread of each rank, with the number of events it holds. */
static void write_locations(OTF2_GlobalDefWriter *w, const def_strings *ds, const rank_report *reps,
                            int nranks)
{
    for (int r = 0; r < nranks; r++)
        for (uint32_t i = 0; i < reps[r].nlocs; i++) {
            uint32_t k = location_thread(&reps[r], i);
            uint64_t nevents;
            memcpy(&nevents, reps[r].locs + i * LOC_RECORD + sizeof k, sizeof nevents);
            OTF2_GlobalDefWriter_WriteLocation(w, PV_LOCATION_ID(r, k), ds->thread[k],
                                               OTF2_LOCATION_TYPE_CPU_THREAD, nevents, (uint32_t)r);
        }
}

static void write_regions(OTF2_GlobalDefWriter *w, const unify *u)
{
    for (uint32_t i = 0; i < u->nregions; i++) {
        const global_region *g = &u->regions[i];
        OTF2_GlobalDefWriter_WriteRegion(w, i, g->name, g->canonical, S_EMPTY, g->role, g->paradigm,
                                         OTF2_REGION_FLAG_NONE, S_EMPTY, 0, 0);
    }
}

/* The groups and communicators; -1 when out of memory (after some of them were written). */
static int write_comms(OTF2_GlobalDefWriter *w, const unify *u, const def_strings *ds, int nranks)
{
    /* Communication locations first, then MPI_COMM_WORLD's group: peers are world ranks. */
    OTF2_GlobalDefWriter_WriteGroup(w, 0, S_EMPTY, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                    OTF2_GROUP_FLAG_NONE, (uint32_t)nranks, ds->members);
    OTF2_GlobalDefWriter_WriteGroup(w, 1, ds->world, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                    OTF2_GROUP_FLAG_NONE, (uint32_t)nranks, ds->members);
    OTF2_GlobalDefWriter_WriteComm(w, PV_COMM_WORLD, ds->world, 1, OTF2_UNDEFINED_COMM,
                                   OTF2_COMM_FLAG_NONE);
    /* The other communicators: group 2 + i holds the world ranks of comm 1 + i, in its rank order. */
    for (uint32_t i = 0; i < u->comm_keys.n; i++) {
        const char *key = u->keys[i];
        uint32_t n = (uint32_t)strtoul(key, NULL, 10);
        uint64_t *m = malloc((n ? n : 1) * sizeof *m);
        if (!m) return -1;
        const char *p = strchr(key, ':') + 1;
        for (uint32_t j = 0; j < n; j++, p++) m[j] = strtoull(p, (char **)&p, 10);
        OTF2_GlobalDefWriter_WriteGroup(w, 2 + i, ds->comm[i], OTF2_GROUP_TYPE_COMM_GROUP,
                                        OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, n, m);
        OTF2_GlobalDefWriter_WriteComm(w, 1 + i, ds->comm[i], 2 + i, OTF2_UNDEFINED_COMM,
                                       OTF2_COMM_FLAG_NONE);
        free(m);
    }
    return 0;
}

/* Rank 0: the global definitions, in the order OTF2 readers expect (OTF2-NOTES: clock, strings,
 * paradigm and attribute, system tree, locations, regions, metrics, groups and communicators). */
static int write_global_defs(unify *u, const rank_report *reps, int nranks, const trace_clock *clk)
{
    OTF2_GlobalDefWriter *w = OTF2_Archive_GetGlobalDefWriter(pv_trace.archive);
    if (!w) return -1;
    def_strings ds = {0};
    int rc = -1;
    if (intern_def_strings(u, reps, nranks, &ds) == 0) {
        uint32_t nmembers = u->metric_names.n;
        OTF2_GlobalDefWriter_WriteClockProperties(w, (uint64_t)(clk->hz + 0.5), clk->offset,
                                                  clk->length, clk->realtime);
        for (uint32_t i = 0; i < u->strings.n; i++)
            OTF2_GlobalDefWriter_WriteString(w, i, u->strings.strs[i]);
        OTF2_GlobalDefWriter_WriteParadigm(w, OTF2_PARADIGM_MPI, ds.mpi, OTF2_PARADIGM_CLASS_PROCESS);
        OTF2_GlobalDefWriter_WriteAttribute(w, PV_ATTR_CPU, ds.cpu, ds.cpu_desc, OTF2_TYPE_UINT32);
        int tree = write_system_tree(w, &ds, reps, nranks);
        write_locations(w, &ds, reps, nranks);
        write_regions(w, u);
        write_metric_defs(w, u, ds.metric, ds.metric + nmembers, ds.metric + 2 * nmembers);
        rc = write_comms(w, u, &ds, nranks) | tree;
    }
    def_strings_free(&ds);
    return rc;
}

/* The static regions, which keep their ids 0..nstatic-1 globally; -1 if one does not. */
static int add_static_regions(unify *u)
{
    for (int i = 0; i < pv_trace.nstatic; i++) {
        const pv_static_region *r = &pv_trace.statics[i];
        if (add_region(u, r->name, r->name, r->role, r->paradigm) != (uint32_t)i) return -1;
    }
    return 0;
}

/* The global id of each of rank r's run-time regions, appended to out. */
static int map_rank_regions(unify *u, const rank_report *r, bytes *out)
{
    const char *d = r->dyn;
    for (uint32_t i = 0; i < r->ndyn; i++) {
        OTF2_RegionRole role = (unsigned char)d[0];
        OTF2_Paradigm paradigm = (unsigned char)d[1];
        const char *canonical = d + 2, *display = canonical + strlen(canonical) + 1;
        d = display + strlen(display) + 1;
        uint64_t g = add_region(u, display, canonical, role, paradigm);
        if (g == UINT32_MAX || put(out, &g, sizeof g)) return -1;
    }
    return 0;
}

/* The global id of each of rank r's communicators, appended to out. */
static int map_rank_comms(unify *u, const rank_report *r, bytes *out)
{
    const char *c = r->comms;
    for (uint32_t i = 0; i < r->ncomms; i++) {
        uint32_t n;
        memcpy(&n, c, sizeof n);
        uint64_t g = add_comm(u, c + sizeof n, n);
        if (g == UINT32_MAX || put(out, &g, sizeof g)) return -1;
        c += sizeof n + (size_t)n * sizeof(uint32_t);
    }
    return 0;
}

/* Rank r's map, appended to out: its regions, its communicators, its metric class. */
static int map_rank(unify *u, const rank_report *r, bytes *out)
{
    if (map_rank_regions(u, r, out) || map_rank_comms(u, r, out)) return -1;
    uint64_t metric_class = add_metric_class(u, r);
    if ((r->nmetrics && metric_class == UINT64_MAX) || put(out, &metric_class, sizeof metric_class))
        return -1;
    return 0;
}

static void unify_free(unify *u)
{
    free(u->regions), free(u->canon_to_region);
    for (uint32_t i = 0; i < u->comm_keys.n && u->keys; i++) free(u->keys[i]);
    free(u->keys);
    for (uint32_t i = 0; i < u->class_keys.n && u->class_key; i++) free(u->class_key[i]);
    free(u->class_key), free(u->metric_unit), free(u->metric_desc);
    strtab_free(&u->strings);
    strtab_free(&u->comm_keys);
    strtab_free(&u->metric_names);
    strtab_free(&u->class_keys);
}

/* Rank 0's part: unify the reports of all ranks (all, counts[r] bytes each) and write the global
 * definitions. Returns the concatenated maps (per rank: uint64 per run-time region, then per
 * communicator, then its metric class) in *maps and their byte counts per rank in *map_counts
 * (both malloc'd); -1 on failure. */
static int unify_and_write(const char *all, const int *counts, int nranks, const trace_clock *clk,
                           char **maps, int **map_counts)
{
    unify u = {0};
    rank_report *reps = calloc((size_t)nranks, sizeof *reps);
    int *mc = calloc((size_t)nranks, sizeof *mc);
    bytes out = {0};
    int rc = -1;
    if (!reps || !mc || strtab_id(&u.strings, "") != 0 || add_static_regions(&u)) goto out;
    const char *p = all;
    for (int r = 0; r < nranks; r++) {
        parse_report(p, &reps[r]);
        size_t before = out.n;
        if (map_rank(&u, &reps[r], &out)) goto out;
        mc[r] = (int)(out.n - before);
        p += counts[r];
    }
    if (write_global_defs(&u, reps, nranks, clk)) goto out;
    *maps = out.p, *map_counts = mc;
    out.p = NULL, mc = NULL;
    rc = 0;
out:
    free(out.p), free(mc), free(reps);
    unify_free(&u);
    return rc;
}

/* OTF2_MAPPING_COMM: local comm 0 (MPI_COMM_WORLD) -> 0, local 1 + i -> comm_map[i]. */
static int write_comm_mapping(OTF2_DefWriter *w, const uint64_t *comm_map)
{
    int identity = 1;
    for (int i = 0; i < pv_trace.ncomms; i++) identity &= comm_map[i] == (uint64_t)(i + 1);
    if (identity) return 0;
    size_t n = (size_t)pv_trace.ncomms + 1;
    uint64_t *map = malloc(n * sizeof *map);
    if (!map) return -1;
    map[0] = PV_COMM_WORLD;
    memcpy(map + 1, comm_map, (size_t)pv_trace.ncomms * sizeof *map);
    OTF2_IdMap *idmap = OTF2_IdMap_CreateFromUint64Array(n, map, true);
    free(map);
    if (!idmap) return -1;
    OTF2_DefWriter_WriteMappingTable(w, OTF2_MAPPING_COMM, idmap);
    OTF2_IdMap_Free(idmap);
    return 0;
}

/* OTF2_MAPPING_REGION of location l: the id each region has in l's events (given in the order of
 * first use, trace_writer.c) -> its global id (static regions keep theirs; dyn_map: the rank's
 * run-time regions'). */
static int write_region_mapping(OTF2_DefWriter *w, const pv_trace_loc *l, const uint64_t *dyn_map)
{
    int identity = 1;
    uint64_t *map = malloc((l->nused ? l->nused : 1) * sizeof *map);
    if (!map) return -1;
    for (uint32_t i = 0; i < l->nused; i++) {
        uint32_t r = l->region_of[i];
        map[i] = r < (uint32_t)pv_trace.nstatic ? r : dyn_map[r - (uint32_t)pv_trace.nstatic];
        identity &= map[i] == i;
    }
    int rc = 0;
    if (!identity) { /* an identity map needs no table (and OTF2 would not make one) */
        OTF2_IdMap *idmap = OTF2_IdMap_CreateFromUint64Array(l->nused, map, true);
        if (idmap) {
            OTF2_DefWriter_WriteMappingTable(w, OTF2_MAPPING_REGION, idmap);
            OTF2_IdMap_Free(idmap);
        } else {
            rc = -1;
        }
    }
    free(map);
    return rc;
}

/* OTF2_MAPPING_METRIC: the rank's metric class (PV_METRIC_CLASS_LOCAL) -> its global one. */
static int write_metric_mapping(OTF2_DefWriter *w, uint64_t global_class)
{
    if (!pv_trace.nmetrics || global_class == PV_METRIC_CLASS_LOCAL) return 0;
    uint64_t map[1] = {global_class};
    OTF2_IdMap *idmap = OTF2_IdMap_CreateFromUint64Array(1, map, true);
    if (!idmap) return -1;
    OTF2_DefWriter_WriteMappingTable(w, OTF2_MAPPING_METRIC, idmap);
    OTF2_IdMap_Free(idmap);
    return 0;
}

static int write_local_defs(const pv_trace_loc *l, const uint64_t *dyn_map,
                            const pv_trace_clock_sync *sync)
{
    OTF2_DefWriter *w = OTF2_Archive_GetDefWriter(pv_trace.archive, l->id);
    if (!w) return -1;
    if (write_comm_mapping(w, dyn_map + pv_trace.ndyn)) return -1;
    if (write_metric_mapping(w, dyn_map[pv_trace.ndyn + pv_trace.ncomms])) return -1;
    if (write_region_mapping(w, l, dyn_map)) return -1;
    OTF2_DefWriter_WriteClockOffset(w, sync->t_begin, sync->offset_begin, sync->stddev_begin);
    OTF2_DefWriter_WriteClockOffset(w, sync->t_end, sync->offset_end, sync->stddev_end);
    return OTF2_Archive_CloseDefWriter(pv_trace.archive, w) == OTF2_SUCCESS ? 0 : -1;
}

/* A local timestamp on rank 0's clock, as OTF2 readers correct it: the offset interpolated linearly
 * between the two ClockOffset records, and extrapolated with the same slope outside them. */
static uint64_t corrected(const pv_trace_clock_sync *s, uint64_t t)
{
    double slope = s->t_end != s->t_begin ? (double)(s->offset_end - s->offset_begin) /
                                                ((double)s->t_end - (double)s->t_begin)
                                          : 0.0;
    double diff = (double)t - (double)s->t_begin;
    return t + (uint64_t)(s->offset_begin + (int64_t)rint(slope * diff));
}

/* Close every location's event writer (its buffer is written here, by this thread: the others
 * have made their last event call, see trace.h) and the event files. Sums the locations' figures
 * into *stats and widens range (min first, UINT64_MAX - max last) by their clock-corrected times.
 * -1 if OTF2 failed to close one. */
static int close_event_files(const pv_trace_clock_sync *sync, uint64_t range[2], pv_trace_stats *stats)
{
    int rc = 0;
    *stats = (pv_trace_stats){0};
    for (int i = 0; i < pv_trace.nlocs; i++) {
        pv_trace_loc *l = pv_trace.locs[i];
        OTF2_EvtWriter_GetNumberOfEvents(l->evt, &l->stats.events_written);
        if (OTF2_Archive_CloseEvtWriter(pv_trace.archive, l->evt) != OTF2_SUCCESS) rc = -1;
        OTF2_AttributeList_Delete(l->attrs);
        l->evt = NULL, l->attrs = NULL;
        if (l->have_first) {
            uint64_t first = corrected(sync, l->first_t), last = corrected(sync, l->last_t);
            if (first < range[0]) range[0] = first;
            if (UINT64_MAX - last < range[1]) range[1] = UINT64_MAX - last;
        }
        stats->events_written += l->stats.events_written;
        stats->events_lost += l->stats.events_lost;
        stats->timestamps_raised += l->stats.timestamps_raised;
        stats->flushes += l->stats.flushes;
    }
    if (OTF2_Archive_CloseEvtFiles(pv_trace.archive) != OTF2_SUCCESS) rc = -1;
    return rc;
}

/* Collective: the trace's clock properties. Its time range on rank 0's clock is [min first,
 * max last] over the locations of all ranks (range: this rank's, as close_event_files leaves it);
 * its realtime is rank 0's start (realtime_ns at realtime_ticks) carried to the range's start.
 * *clk is filled in any case; -1 if the communicator failed. */
static int global_clock(double hz, uint64_t range[2], uint64_t realtime_ns, uint64_t realtime_ticks,
                        trace_clock *clk)
{
    const pv_trace_comm *c = &pv_trace.comm;
    int rc = 0;
    uint64_t rt[2] = {c->rank == 0 ? realtime_ns : UINT64_MAX,
                      c->rank == 0 ? realtime_ticks : UINT64_MAX}; /* rank 0's, by min */
    if (c->allreduce_u64(c->ctx, range, 2, 0) || c->allreduce_u64(c->ctx, rt, 2, 0)) rc = -1;
    clk->hz = hz;
    clk->offset = range[0] == UINT64_MAX ? 0 : range[0];
    uint64_t last = UINT64_MAX - range[1];
    clk->length = last >= clk->offset ? last - clk->offset + 1 : 0;
    clk->realtime = (uint64_t)((double)rt[0] + ((double)clk->offset - (double)rt[1]) * 1e9 / hz);
    return rc;
}

/* Collective: every rank's report to rank 0, which unifies them and writes the global definitions,
 * and each rank's map back into *dyn_map (malloc'd; its run-time regions, then its communicators,
 * then its metric class: global ids). Every rank takes part in each collective step even after a
 * failure; -1 if any step failed here. */
static int unify_definitions(const char *host, const pv_trace_place *place, const trace_clock *clk,
                             uint64_t **dyn_map)
{
    const pv_trace_comm *c = &pv_trace.comm;
    int rc = 0;
    bytes local = {0};
    if (serialise_local(&local, host, place)) rc = -1;
    char *all = NULL, *maps = NULL;
    int *counts = NULL, *map_counts = NULL;
    if (c->gatherv(c->ctx, local.p, (int)local.n, &all, &counts)) rc = -1;
    if (c->rank == 0 && all && unify_and_write(all, counts, c->size, clk, &maps, &map_counts)) rc = -1;
    int nmap = pv_trace.ndyn + pv_trace.ncomms + 1; /* regions, communicators, metric class */
    *dyn_map = calloc((size_t)nmap + 1, sizeof **dyn_map);
    if (!*dyn_map || c->scatterv(c->ctx, maps, map_counts, *dyn_map, nmap * (int)sizeof **dyn_map))
        rc = -1;
    free(local.p), free(all), free(counts), free(maps), free(map_counts);
    return rc;
}

/* The local definitions of every location of the rank (dyn_map NULL: none is written, the files
 * are still opened and closed); -1 on failure. */
static int write_local_def_files(const uint64_t *dyn_map, const pv_trace_clock_sync *sync)
{
    if (OTF2_Archive_OpenDefFiles(pv_trace.archive) != OTF2_SUCCESS) return -1;
    int rc = 0;
    for (int i = 0; i < pv_trace.nlocs; i++)
        if (dyn_map && write_local_defs(pv_trace.locs[i], dyn_map, sync)) rc = -1;
    if (OTF2_Archive_CloseDefFiles(pv_trace.archive) != OTF2_SUCCESS) rc = -1;
    return rc;
}

/* Free what the rank defined for this archive (the locations stay, for pv_trace_location_info). */
static void free_local_definitions(void)
{
    for (int i = 0; i < pv_trace.nlocs; i++) {
        pv_trace_loc *l = pv_trace.locs[i];
        free(l->event_id), free(l->region_of);
        l->event_id = l->region_of = NULL;
        l->nevent_id = l->nused = l->used_cap = 0;
    }
    for (int i = 0; i < pv_trace.ndyn; i++) free(pv_trace.dyn[i].canonical), free(pv_trace.dyn[i].display);
    free(pv_trace.dyn);
    pv_trace.dyn = NULL, pv_trace.ndyn = pv_trace.dyn_cap = 0;
    for (int i = 0; i < pv_trace.ncomms; i++) free(pv_trace.comms[i].world_ranks);
    free(pv_trace.comms);
    pv_trace.comms = NULL, pv_trace.ncomms = pv_trace.comms_cap = 0;
    for (int i = 0; i < 3 * pv_trace.nmetrics; i++) free(pv_trace.metric_text[i]);
    free(pv_trace.metric_text);
    pv_trace.metric_text = NULL, pv_trace.nmetrics = 0;
}

/* See trace.h. Every step runs whatever happened in the ones before: the collective ones must
 * be reached by every rank. */
int pv_trace_close(double hz, const char *host, const pv_trace_place *place,
                   const pv_trace_clock_sync *sync, uint64_t realtime_ns, uint64_t realtime_ticks,
                   pv_trace_stats *stats)
{
    int rc = 0;
    uint64_t range[2] = {UINT64_MAX, UINT64_MAX};
    if (close_event_files(sync, range, stats)) rc = -1;
    trace_clock clk;
    if (global_clock(hz, range, realtime_ns, realtime_ticks, &clk)) rc = -1;
    uint64_t *dyn_map = NULL;
    if (unify_definitions(host, place, &clk, &dyn_map)) rc = -1;
    if (write_local_def_files(dyn_map, sync)) rc = -1;
    if (OTF2_Archive_Close(pv_trace.archive) != OTF2_SUCCESS) rc = -1;
    pv_trace.archive = NULL;
    free(dyn_map);
    free_local_definitions();
    return rc ? PERFVAR_ERR_IO : PERFVAR_OK;
}
