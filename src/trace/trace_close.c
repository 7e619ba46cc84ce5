/* trace_close.c — definition unification and archive closing; see trace.h.
 *
 * Every rank sends rank 0 its host name, its locations (thread index, event count), its run-time
 * regions (by canonical name) and its communicators (by their members' world ranks); rank 0 gives
 * each distinct canonical name and each distinct member list one global id, returns each rank its
 * local->global maps, and writes the global definitions. The threads of a rank share its
 * regions, so each rank writes the same mapping table and clock offsets into the local definition
 * file of each of its locations (written even when empty: readers expect one per location).
 * Counters (PERFVAR_METRICS) may differ between ranks (an event one node's kernel refuses): each
 * counter name is one MetricMember, each distinct list of them one MetricClass, and a rank's
 * events name its class through OTF2_MAPPING_METRIC. */
#include "trace_internal.h"
#include "perfvar.h"

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

static int serialise_local(bytes *b, const char *host)
{
    uint32_t nlocs = (uint32_t)pv_trace.nlocs, ndyn = (uint32_t)pv_trace.ndyn;
    if (put_str(b, host) || put(b, &nlocs, sizeof nlocs)) return -1;
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

static int write_global_defs(unify *u, const rank_report *reps, int nranks, double hz,
                             uint64_t offset, uint64_t length, uint64_t realtime)
{
    OTF2_GlobalDefWriter *w = OTF2_Archive_GetGlobalDefWriter(pv_trace.archive);
    if (!w) return -1;
    strtab *s = &u->strings;
    /* Intern every remaining string first, so all strings are written before any reference. */
    uint32_t s_mpi = strtab_id(s, "MPI"), s_cpu = strtab_id(s, "cpu");
    uint32_t s_cpu_desc = strtab_id(s, "CPU the clock was read on (IA32_TSC_AUX)");
    uint32_t s_machine = strtab_id(s, "machine"), s_node = strtab_id(s, "node");
    uint32_t s_world = strtab_id(s, "MPI_COMM_WORLD");
    uint32_t nmembers = u->metric_names.n;
    uint32_t *s_metric = calloc(3 * (size_t)nmembers + 1, sizeof *s_metric);
    for (uint32_t m = 0; s_metric && m < nmembers; m++) {
        const char *unit = u->metric_unit[m];
        s_metric[m] = strtab_id(s, u->metric_names.strs[m]);
        s_metric[nmembers + m] = strtab_id(s, u->metric_desc[m]);
        s_metric[2 * nmembers + m] = strtab_id(s, !strcmp(unit, "ns") ? "s" : unit[0] ? unit : "#");
    }
    uint32_t ncomms = u->comm_keys.n;
    char (*comm_names)[32] = calloc(ncomms + 1, sizeof *comm_names);
    uint32_t *s_comm = calloc(ncomms + 1, sizeof *s_comm);
    for (uint32_t i = 0; comm_names && s_comm && i < ncomms; i++) {
        snprintf(comm_names[i], sizeof comm_names[i], "MPI communicator %u", i + 1);
        s_comm[i] = strtab_id(s, comm_names[i]);
    }
    uint32_t nthreads = 1; /* thread names: "Master thread" (0), "Thread k" */
    for (int r = 0; r < nranks; r++)
        for (uint32_t i = 0; i < reps[r].nlocs; i++) {
            uint32_t k;
            memcpy(&k, reps[r].locs + i * LOC_RECORD, sizeof k);
            if (k >= nthreads) nthreads = k + 1;
        }
    uint32_t *s_host = calloc((size_t)nranks, sizeof *s_host);
    uint32_t *s_group = calloc((size_t)nranks, sizeof *s_group);
    char (*group_names)[32] = calloc((size_t)nranks, sizeof *group_names);
    uint64_t *members = calloc((size_t)nranks, sizeof *members);
    char (*thread_names)[32] = calloc(nthreads, sizeof *thread_names);
    uint32_t *s_thread = calloc(nthreads, sizeof *s_thread);
    uint32_t *node_of_string = NULL;
    int rc = -1;
    if (!s_host || !s_group || !group_names || !members || !thread_names || !s_thread ||
        !comm_names || !s_comm || !s_metric)
        goto out;
    for (uint32_t k = 0; k < nthreads; k++) {
        if (k)
            snprintf(thread_names[k], sizeof thread_names[k], "Thread %u", k);
        else
            snprintf(thread_names[k], sizeof thread_names[k], "Master thread");
        s_thread[k] = strtab_id(s, thread_names[k]);
    }
    for (int r = 0; r < nranks; r++) {
        s_host[r] = strtab_id(s, reps[r].host);
        snprintf(group_names[r], sizeof group_names[r], "MPI Rank %d", r);
        s_group[r] = strtab_id(s, group_names[r]);
        members[r] = PV_LOCATION_ID(r, 0); /* messages and collectives: the master thread */
    }
    node_of_string = calloc(s->n, sizeof *node_of_string); /* system tree node of a host string */
    if (!node_of_string) goto out;
    uint32_t s_empty = 0;

    OTF2_GlobalDefWriter_WriteClockProperties(w, (uint64_t)(hz + 0.5), offset, length, realtime);
    for (uint32_t i = 0; i < s->n; i++) OTF2_GlobalDefWriter_WriteString(w, i, s->strs[i]);
    OTF2_GlobalDefWriter_WriteParadigm(w, OTF2_PARADIGM_MPI, s_mpi, OTF2_PARADIGM_CLASS_PROCESS);
    OTF2_GlobalDefWriter_WriteAttribute(w, PV_ATTR_CPU, s_cpu, s_cpu_desc, OTF2_TYPE_UINT32);
    OTF2_GlobalDefWriter_WriteSystemTreeNode(w, 0, s_machine, s_machine,
                                             OTF2_UNDEFINED_SYSTEM_TREE_NODE);
    uint32_t nnodes = 0;
    for (int r = 0; r < nranks; r++) { /* one node per distinct host, in rank order */
        if (node_of_string[s_host[r]]) continue;
        node_of_string[s_host[r]] = ++nnodes;
        OTF2_GlobalDefWriter_WriteSystemTreeNode(w, nnodes, s_host[r], s_node, 0);
    }
    for (int r = 0; r < nranks; r++)
        OTF2_GlobalDefWriter_WriteLocationGroup(w, (uint32_t)r, s_group[r],
                                                OTF2_LOCATION_GROUP_TYPE_PROCESS,
                                                node_of_string[s_host[r]],
                                                OTF2_UNDEFINED_LOCATION_GROUP);
    for (int r = 0; r < nranks; r++)
        for (uint32_t i = 0; i < reps[r].nlocs; i++) {
            uint32_t k;
            uint64_t nevents;
            memcpy(&k, reps[r].locs + i * LOC_RECORD, sizeof k);
            memcpy(&nevents, reps[r].locs + i * LOC_RECORD + sizeof k, sizeof nevents);
            OTF2_GlobalDefWriter_WriteLocation(w, PV_LOCATION_ID(r, k), s_thread[k],
                                               OTF2_LOCATION_TYPE_CPU_THREAD, nevents, (uint32_t)r);
        }
    for (uint32_t i = 0; i < u->nregions; i++) {
        const global_region *g = &u->regions[i];
        OTF2_GlobalDefWriter_WriteRegion(w, i, g->name, g->canonical, s_empty, g->role, g->paradigm,
                                         OTF2_REGION_FLAG_NONE, s_empty, 0, 0);
    }
    write_metric_defs(w, u, s_metric, s_metric + nmembers, s_metric + 2 * nmembers);
    /* Communication locations first, then MPI_COMM_WORLD's group: peers are world ranks. */
    OTF2_GlobalDefWriter_WriteGroup(w, 0, s_empty, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                    OTF2_GROUP_FLAG_NONE, (uint32_t)nranks, members);
    OTF2_GlobalDefWriter_WriteGroup(w, 1, s_world, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                    OTF2_GROUP_FLAG_NONE, (uint32_t)nranks, members);
    OTF2_GlobalDefWriter_WriteComm(w, PV_COMM_WORLD, s_world, 1, OTF2_UNDEFINED_COMM,
                                   OTF2_COMM_FLAG_NONE);
    /* The other communicators: group 2 + i holds the world ranks of comm 1 + i, in its rank order. */
    for (uint32_t i = 0; i < ncomms; i++) {
        const char *key = u->keys[i];
        uint32_t n = (uint32_t)strtoul(key, NULL, 10);
        uint64_t *m = malloc((n ? n : 1) * sizeof *m);
        if (!m) goto out;
        const char *p = strchr(key, ':') + 1;
        for (uint32_t j = 0; j < n; j++, p++) m[j] = strtoull(p, (char **)&p, 10);
        OTF2_GlobalDefWriter_WriteGroup(w, 2 + i, s_comm[i], OTF2_GROUP_TYPE_COMM_GROUP,
                                        OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, n, m);
        OTF2_GlobalDefWriter_WriteComm(w, 1 + i, s_comm[i], 2 + i, OTF2_UNDEFINED_COMM,
                                       OTF2_COMM_FLAG_NONE);
        free(m);
    }
    rc = 0;
out:
    free(s_host), free(s_group), free(group_names), free(members), free(node_of_string);
    free(thread_names), free(s_thread), free(comm_names), free(s_comm), free(s_metric);
    return rc;
}

/* Rank 0's part: returns the concatenated maps (per rank: uint64 per dynamic region, then per
 * communicator). */
static int unify_and_write(const char *all, const int *counts, int nranks, double hz,
                           uint64_t offset, uint64_t length, uint64_t realtime, char **maps,
                           int **map_counts)
{
    unify u = {0};
    rank_report *reps = calloc((size_t)nranks, sizeof *reps);
    int *mc = calloc((size_t)nranks, sizeof *mc);
    bytes out = {0};
    int rc = -1;
    if (!reps || !mc || strtab_id(&u.strings, "") != 0) goto out;
    for (int i = 0; i < pv_trace.nstatic; i++) {
        const pv_static_region *r = &pv_trace.statics[i];
        if (add_region(&u, r->name, r->name, r->role, r->paradigm) != (uint32_t)i) goto out;
    }
    const char *p = all;
    for (int r = 0; r < nranks; r++) {
        parse_report(p, &reps[r]);
        const char *d = reps[r].dyn;
        size_t before = out.n;
        for (uint32_t i = 0; i < reps[r].ndyn; i++) {
            OTF2_RegionRole role = (unsigned char)d[0];
            OTF2_Paradigm paradigm = (unsigned char)d[1];
            const char *canonical = d + 2, *display = canonical + strlen(canonical) + 1;
            d = display + strlen(display) + 1;
            uint64_t g = add_region(&u, display, canonical, role, paradigm);
            if (g == UINT32_MAX || put(&out, &g, sizeof g)) goto out;
        }
        const char *c = reps[r].comms;
        for (uint32_t i = 0; i < reps[r].ncomms; i++) {
            uint32_t n;
            memcpy(&n, c, sizeof n);
            uint64_t g = add_comm(&u, c + sizeof n, n);
            if (g == UINT32_MAX || put(&out, &g, sizeof g)) goto out;
            c += sizeof n + (size_t)n * sizeof(uint32_t);
        }
        uint64_t metric_class = add_metric_class(&u, &reps[r]);
        if ((reps[r].nmetrics && metric_class == UINT64_MAX) ||
            put(&out, &metric_class, sizeof metric_class))
            goto out;
        mc[r] = (int)(out.n - before);
        p += counts[r];
    }
    if (write_global_defs(&u, reps, nranks, hz, offset, length, realtime)) goto out;
    *maps = out.p, *map_counts = mc;
    out.p = NULL, mc = NULL;
    rc = 0;
out:
    free(out.p), free(mc), free(reps), free(u.regions), free(u.canon_to_region);
    for (uint32_t i = 0; i < u.comm_keys.n && u.keys; i++) free(u.keys[i]);
    free(u.keys);
    for (uint32_t i = 0; i < u.class_keys.n && u.class_key; i++) free(u.class_key[i]);
    free(u.class_key), free(u.metric_unit), free(u.metric_desc);
    strtab_free(&u.strings);
    strtab_free(&u.comm_keys);
    strtab_free(&u.metric_names);
    strtab_free(&u.class_keys);
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

int pv_trace_close(double hz, const char *host, const pv_trace_clock_sync *sync, uint64_t realtime_ns,
                   uint64_t realtime_ticks, pv_trace_stats *stats)
{
    const pv_trace_comm *c = &pv_trace.comm;
    int rc = 0;
    /* Every location's buffer is written here, by this thread: the others have made their last
     * event call (see trace.h). Time range on rank 0's clock: [min first, max last] over the
     * locations of all ranks, clock-corrected. */
    uint64_t range[2] = {UINT64_MAX, UINT64_MAX};
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
    uint64_t rt[2] = {c->rank == 0 ? realtime_ns : UINT64_MAX,
                      c->rank == 0 ? realtime_ticks : UINT64_MAX}; /* rank 0's, by min */
    if (c->allreduce_u64(c->ctx, range, 2, 0) || c->allreduce_u64(c->ctx, rt, 2, 0)) rc = -1;
    uint64_t offset = range[0] == UINT64_MAX ? 0 : range[0];
    uint64_t last = UINT64_MAX - range[1];
    uint64_t length = last >= offset ? last - offset + 1 : 0;
    uint64_t realtime = (uint64_t)((double)rt[0] + ((double)offset - (double)rt[1]) * 1e9 / hz);

    bytes local = {0};
    if (serialise_local(&local, host)) rc = -1;
    char *all = NULL, *maps = NULL;
    int *counts = NULL, *map_counts = NULL;
    if (c->gatherv(c->ctx, local.p, (int)local.n, &all, &counts)) rc = -1;
    if (c->rank == 0 && all &&
        unify_and_write(all, counts, c->size, hz, offset, length, realtime, &maps, &map_counts))
        rc = -1;
    int nmap = pv_trace.ndyn + pv_trace.ncomms + 1; /* regions, communicators, metric class */
    uint64_t *dyn_map = calloc((size_t)nmap + 1, sizeof *dyn_map);
    if (!dyn_map || c->scatterv(c->ctx, maps, map_counts, dyn_map, nmap * (int)sizeof *dyn_map))
        rc = -1;
    if (OTF2_Archive_OpenDefFiles(pv_trace.archive) != OTF2_SUCCESS) rc = -1;
    else {
        for (int i = 0; i < pv_trace.nlocs; i++)
            if (dyn_map && write_local_defs(pv_trace.locs[i], dyn_map, sync)) rc = -1;
        if (OTF2_Archive_CloseDefFiles(pv_trace.archive) != OTF2_SUCCESS) rc = -1;
    }
    if (OTF2_Archive_Close(pv_trace.archive) != OTF2_SUCCESS) rc = -1;
    pv_trace.archive = NULL;

    free(local.p), free(all), free(counts), free(maps), free(map_counts), free(dyn_map);
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
    return rc ? PERFVAR_ERR_IO : PERFVAR_OK;
}
