/* convert.c — a rank's records into OTF2 events; see convert.h. */
#define _GNU_SOURCE
#include "convert.h"
#include "../core/u64map.h"
#include "../recorder/replay.h"
#include "../recorder/defs_lines.h"
#include "perfvar.h"
#include "pv_spec.h"
#include "requests.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

/* ---- the definitions file ---- */
typedef struct site_def {
    int region;      /* static region, or -1 user start / -2 user stop */
    int handle;      /* user timer handle */
    char *name, *label;
} site_def;

typedef struct rank_defs {
    int rank, size;
    char host[256];
    pv_trace_place place;    /* -1, -1 without a place line (an older writer's) */
    double hz;
    pv_trace_clock_sync sync;
    int nsync;
    uint64_t realtime_ns, realtime_ticks;
    pv_static_region *regions;
    unsigned char *events;   /* event role per static region */
    int nregions, probe_region; /* probe_region: PV_TRACE_PROBE_REGION's, -1 if none */
    site_def *sites;
    int nsites;
    char **user_names;       /* by handle */
    int nuser;
    uint32_t *comm_ids;      /* definitions id -> trace communicator id (0: world) */
    int ncomms;
    const char *metric_name[PV_TRACE_METRICS_MAX], *metric_unit[PV_TRACE_METRICS_MAX],
        *metric_desc[PV_TRACE_METRICS_MAX]; /* counter i of METRIC units (PERFVAR_METRICS) */
    int nmetrics;
    char *text;              /* the file, split into lines and fields in place */
    char **lines;
    int nlines;
} rank_defs;

static int grow(void *pp, int *cap, int need, size_t elem)
{
    if (need < *cap) return 0;
    int n = *cap ? 2 * *cap : 64;
    while (n <= need) n *= 2;
    void *p = realloc(*(void **)pp, (size_t)n * elem);
    if (!p) return -1;
    memset((char *)p + (size_t)*cap * elem, 0, (size_t)(n - *cap) * elem);
    *(void **)pp = p;
    *cap = n;
    return 0;
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (len < cap) break;
        char *b = realloc(buf, 2 * cap + 1);
        if (!b) free(buf);
        buf = b, cap *= 2;
    }
    fclose(f);
    if (buf) buf[len] = 0, *n = len;
    return buf;
}

/* Split line into at most max tab-separated fields; the last one keeps its tabs. */
static int fields(char *line, char **f, int max)
{
    int n = 0;
    f[n++] = line;
    for (char *p = line; *p && n < max; p++)
        if (*p == '\t') *p = 0, f[n++] = p + 1;
    return n;
}

typedef struct caps {
    int regions, events, sites, user, comms;
} caps;

/* One definitions line split into its fields (f[0] is its kind), and the room grown so far. */
typedef struct defs_line {
    char *f[8];
    int n;
    caps *cap;
} defs_line;

static int parse_rank(rank_defs *d, const defs_line *l)
{
    d->rank = atoi(l->f[1]), d->size = atoi(l->f[2]);
    return 0;
}

static int parse_host(rank_defs *d, const defs_line *l)
{
    snprintf(d->host, sizeof d->host, "%s", l->f[1]);
    return 0;
}

static int parse_place(rank_defs *d, const defs_line *l)
{
    d->place.package = atoi(l->f[1]), d->place.core = atoi(l->f[2]);
    return 0;
}

static int parse_clock(rank_defs *d, const defs_line *l)
{
    d->hz = strtod(l->f[1], NULL);
    return 0;
}

/* The first sync line is the offset at the start, any later one the offset at the end. */
static int parse_sync(rank_defs *d, const defs_line *l)
{
    uint64_t t = strtoull(l->f[1], NULL, 10);
    int64_t off = strtoll(l->f[2], NULL, 10);
    double sd = strtod(l->f[3], NULL);
    if (d->nsync++ == 0) {
        d->sync = (pv_trace_clock_sync){t, t, off, off, sd, sd};
    } else {
        d->sync.t_end = t, d->sync.offset_end = off, d->sync.stddev_end = sd;
    }
    return 0;
}

static int parse_realtime(rank_defs *d, const defs_line *l)
{
    d->realtime_ns = strtoull(l->f[1], NULL, 10), d->realtime_ticks = strtoull(l->f[2], NULL, 10);
    return 0;
}

static int parse_region(rank_defs *d, const defs_line *l)
{
    char *const *f = l->f;
    int id = atoi(f[1]);
    if (id < 0 || id != d->nregions) return -1; /* static regions are dense, in order */
    if (grow(&d->regions, &l->cap->regions, id, sizeof *d->regions) ||
        grow(&d->events, &l->cap->events, id, sizeof *d->events))
        return -1;
    if (!strcmp(f[5], PV_TRACE_PROBE_REGION)) d->probe_region = id;
    d->regions[id] = (pv_static_region){f[5], (OTF2_RegionRole)atoi(f[2]), (OTF2_Paradigm)atoi(f[3])};
    d->events[id] = (unsigned char)atoi(f[4]);
    d->nregions++;
    return 0;
}

static int parse_site(rank_defs *d, const defs_line *l)
{
    char *const *f = l->f;
    int id = atoi(f[1]);
    if (id < 0 || grow(&d->sites, &l->cap->sites, id, sizeof *d->sites)) return -1;
    d->sites[id] = (site_def){atoi(f[2]), atoi(f[3]), f[4], f[5]};
    if (id >= d->nsites) d->nsites = id + 1;
    return 0;
}

static int parse_user(rank_defs *d, const defs_line *l)
{
    int h = atoi(l->f[1]);
    if (h < 0 || grow(&d->user_names, &l->cap->user, h, sizeof *d->user_names)) return -1;
    d->user_names[h] = l->f[2];
    if (h >= d->nuser) d->nuser = h + 1;
    return 0;
}

static int parse_metric(rank_defs *d, const defs_line *l)
{
    int i = atoi(l->f[1]);
    if (i != d->nmetrics || i >= PV_TRACE_METRICS_MAX) return -1; /* dense, in order */
    d->metric_name[i] = l->f[2], d->metric_unit[i] = l->f[3], d->metric_desc[i] = l->f[4];
    d->nmetrics++;
    return 0;
}

/* A communicator, defined in the open trace as it is read (defs_parse). */
static int parse_comm(rank_defs *d, const defs_line *l)
{
    int id = atoi(l->f[1]);
    if (id <= 0 || grow(&d->comm_ids, &l->cap->comms, id, sizeof *d->comm_ids)) return -1;
    /* f[2] = N, then the members (the last field keeps its tabs) */
    uint32_t m = (uint32_t)strtoul(l->f[2], NULL, 10);
    uint32_t *ranks = malloc((m ? m : 1) * sizeof *ranks);
    if (!ranks) return -1;
    char *p = l->n > 3 ? l->f[3] : (char *)"";
    for (uint32_t i = 0; i < m; i++) ranks[i] = (uint32_t)strtoul(p, &p, 10);
    d->comm_ids[id] = pv_trace_comm_define(ranks, m);
    free(ranks);
    if (id >= d->ncomms) d->ncomms = id + 1;
    return 0;
}

/* The kinds of definitions lines (defs_lines.h): the format whose name (up to its first tab) is the
 * kind, the fields a line needs (fewer: the line is skipped), how many it is split into (the last
 * keeps its tabs), and its parser. */
static const struct line_kind {
    const char *format;
    int min_fields, max_fields;
    int (*parse)(rank_defs *d, const defs_line *l);
} line_kinds[] = {
#define PV_LINE_KIND(KIND, kind, least, most) {PV_DEFS_##KIND, least, most, parse_##kind},
    PV_DEFS_LINE_KINDS(PV_LINE_KIND)
#undef PV_LINE_KIND
};

/* The kind of line (up to its first tab), NULL if unknown. */
static const struct line_kind *line_kind_of(const char *line)
{
    size_t len = strcspn(line, "\t");
    for (size_t i = 0; i < sizeof line_kinds / sizeof *line_kinds; i++) {
        const char *format = line_kinds[i].format;
        if (strcspn(format, "\t") == len && !strncmp(line, format, len)) return &line_kinds[i];
    }
    return NULL;
}

/* Parse one definitions line into d; -1 if it is malformed (or out of memory). */
static int parse_line(rank_defs *d, char *line, caps *cap)
{
    const struct line_kind *k = line_kind_of(line);
    if (!k) return 0; /* unknown kinds: a newer writer's, skipped */
    defs_line l = {.cap = cap};
    l.n = fields(line, l.f, k->max_fields);
    return l.n >= k->min_fields ? k->parse(d, &l) : 0;
}

static int defs_read(const char *dir, int rank, rank_defs *d, char *why, size_t len)
{
    char path[4400];
    size_t n = 0;
    snprintf(path, sizeof path, "%s/perfvar/records/rank-%d.defs", dir, rank);
    memset(d, 0, sizeof *d);
    d->rank = -1, d->probe_region = -1;
    d->place = (pv_trace_place){-1, -1};
    if (!(d->text = slurp(path, &n))) {
        snprintf(why, len, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    int cap = 0;
    /* Whole lines only: a last line without its newline was cut by a crash and is dropped. */
    for (char *line = d->text, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = 0;
        if (grow(&d->lines, &cap, d->nlines, sizeof *d->lines)) {
            snprintf(why, len, "out of memory");
            return -1;
        }
        d->lines[d->nlines++] = line;
    }
    return 0;
}

/* Definitions other than communicators (want_comms 0), then, once the trace is open, the
 * communicators (want_comms 1), which are defined in it as they are read. */
static int defs_parse(rank_defs *d, int want_comms, caps *cap, char *why, size_t len)
{
    for (int i = 0; i < d->nlines; i++) {
        char *line = d->lines[i];
        int is_comm = line_kind_of(line) == line_kind_of(PV_DEFS_COMM);
        if (is_comm == want_comms && parse_line(d, line, cap)) {
            snprintf(why, len, "rank %d: malformed definition '%.60s'", d->rank, line);
            return -1;
        }
    }
    return 0;
}

static void defs_free(rank_defs *d)
{
    free(d->regions), free(d->events), free(d->sites), free(d->user_names), free(d->comm_ids);
    free(d->lines), free(d->text);
}

/* ---- regions made from sites ---- */
typedef struct converter {
    rank_defs *d;
    pv_u64map segments;      /* (from + 1) << 32 | (to + 1) -> region */
    uint32_t *user_regions;  /* handle -> region + 1 */
    pv_trace_loc **locs;     /* by thread */
    pv_convert_result *out;
    pv_requests requests;    /* operations started and not yet completed, over the rank's threads */
} converter;

static uint32_t segment_region(converter *cv, int from, int to)
{
    rank_defs *d = cv->d;
    if (from < 0 || to < 0 || from >= d->nsites || to >= d->nsites || !d->sites[from].name ||
        !d->sites[to].name)
        return UINT32_MAX;
    uint64_t key = (uint64_t)(from + 1) << 32 | (uint64_t)(to + 1);
    pv_u64val *v = pv_u64map_find(&cv->segments, key);
    if (v) return (uint32_t)v->a;
    char *canonical = NULL, *display = NULL;
    uint32_t region = UINT32_MAX;
    if (asprintf(&canonical, PV_TRACE_SEGMENT_PREFIX "%s" PV_TRACE_SITE_SEPARATOR "%s",
                 d->sites[from].name, d->sites[to].name) >= 0 &&
        asprintf(&display, "%s -> %s", d->sites[from].label, d->sites[to].label) >= 0)
        region = pv_trace_region_define(canonical, display, OTF2_REGION_ROLE_CODE, OTF2_PARADIGM_USER);
    free(canonical), free(display);
    if (region != UINT32_MAX) pv_u64map_put(&cv->segments, key, (pv_u64val){.a = region});
    return region;
}

static uint32_t user_region(converter *cv, int handle)
{
    rank_defs *d = cv->d;
    if (handle < 0 || handle >= d->nuser || !d->user_names[handle]) return UINT32_MAX;
    if (!cv->user_regions) cv->user_regions = calloc((size_t)d->nuser, sizeof *cv->user_regions);
    if (!cv->user_regions) return UINT32_MAX;
    if (cv->user_regions[handle]) return cv->user_regions[handle] - 1;
    char *canonical = NULL;
    uint32_t r = UINT32_MAX;
    if (asprintf(&canonical, PV_TRACE_USER_PREFIX "%s", d->user_names[handle]) >= 0)
        r = pv_trace_region_define(canonical, d->user_names[handle], OTF2_REGION_ROLE_FUNCTION,
                                   OTF2_PARADIGM_USER);
    free(canonical);
    if (r != UINT32_MAX) cv->user_regions[handle] = r + 1;
    return r;
}

static void note_cpu(converter *cv, int cpu)
{
    if (cpu >= 0 && cpu < PV_CONVERT_MAX_CPUS) cv->out->cpus_seen[cpu / 8] |= (unsigned char)(1u << (cpu % 8));
}

static uint32_t comm_of(const converter *cv, uint32_t defs_comm)
{
    if (defs_comm == 0) return 0;
    if ((int)defs_comm >= cv->d->ncomms || !cv->d->comm_ids[defs_comm]) return UINT32_MAX;
    return cv->d->comm_ids[defs_comm];
}

/* ---- one call's events ---- */
static void entry_events(converter *cv, pv_trace_loc *l, const pv_rec_call *c, unsigned ev, uint64_t t)
{
    const pv_rec_fact_def *x = &c->x;
    uint32_t comm = c->has_x ? comm_of(cv, x->comm) : UINT32_MAX;
    switch (ev) {
    case PV_REC_EV_SEND:
    case PV_REC_EV_SENDRECV:
        if (comm != UINT32_MAX) pv_trace_send(l, t, comm, x->peer, x->tag, x->bytes);
        break;
    case PV_REC_EV_ISEND:
        if (comm != UINT32_MAX && c->request_id)
            pv_trace_isend(l, t, comm, x->peer, x->tag, x->bytes, c->request_id);
        break;
    case PV_REC_EV_COLL:
        if (comm != UINT32_MAX) pv_trace_collective_begin(l, t);
        break;
    case PV_REC_EV_ICOLL:
        if (c->request_id) pv_trace_icollective_request(l, t, c->request_id);
        break;
    default: break;
    }
}

/* A completed receive: the status's source, tag and size where it has them, else the receive's as
 * posted (neither MPI_ANY_SOURCE nor MPI_ANY_TAG, which are negative); 0 if the sender is unknown
 * (a receive from MPI_ANY_SOURCE completed where statuses are not decoded). */
static int received(const pv_pending_request *p, const pv_rec_completion *k, uint32_t *peer,
                    uint32_t *tag, uint64_t *bytes)
{
    const pv_rec_fact_def *st = &k->status;
    *peer = k->has_status ? st->peer : p->x.peer;
    *tag = k->has_status ? st->tag : p->x.tag;
    *bytes = k->has_status && !st->bytes2 ? st->bytes : p->x.bytes;
    return (int32_t)*peer >= 0 && (int32_t)*tag >= 0;
}

/* The completions of call c, each paired with the start of its handle. */
static void completion_events(converter *cv, pv_trace_loc *l, const pv_rec_call *c, uint64_t t)
{
    for (size_t i = 0; i < c->ncompleted; i++) {
        const pv_rec_completion *k = &c->completed[i];
        pv_pending_request p;
        if (!pv_requests_complete(&cv->requests, k->handle, &p)) continue; /* started untraced */
        uint32_t comm = p.has_x ? comm_of(cv, p.x.comm) : UINT32_MAX, peer, tag;
        uint64_t bytes;
        if (p.ev == PV_REC_EV_ISEND) {
            pv_trace_isend_complete(l, t, p.id);
        } else if (p.ev == PV_REC_EV_IRECV && comm != UINT32_MAX && received(&p, k, &peer, &tag, &bytes)) {
            pv_trace_irecv(l, t, comm, peer, tag, bytes, p.id);
        } else if (p.ev == PV_REC_EV_ICOLL && comm != UINT32_MAX) {
            pv_trace_icollective_complete(l, t, comm, (OTF2_CollectiveOp)(p.x.kind_op >> 8), p.x.peer,
                                          p.x.bytes, p.x.bytes2, p.id);
        }
    }
}

/* A call that started a request: what its completion needs, under its handle. */
static void request_started(converter *cv, const pv_rec_call *c, unsigned ev)
{
    if (!c->request_id || (ev != PV_REC_EV_ISEND && ev != PV_REC_EV_IRECV && ev != PV_REC_EV_ICOLL)) return;
    pv_pending_request p = {c->request_id, ev, c->has_x, c->x};
    pv_requests_start(&cv->requests, c->request_handle, &p); /* out of memory: it stays uncompleted */
}

static void exit_events(converter *cv, pv_trace_loc *l, const pv_rec_call *c, unsigned ev, uint64_t t)
{
    completion_events(cv, l, c, t);
    const pv_rec_fact_def *x = ev == PV_REC_EV_SENDRECV ? &c->y : &c->x;
    int has = ev == PV_REC_EV_SENDRECV ? c->has_y : c->has_x;
    uint32_t comm = has ? comm_of(cv, x->comm) : UINT32_MAX;
    switch (ev) {
    case PV_REC_EV_RECV:
    case PV_REC_EV_SENDRECV:
        if (comm != UINT32_MAX) pv_trace_recv(l, t, comm, x->peer, x->tag, x->bytes);
        break;
    case PV_REC_EV_IRECV:
        if (c->request_id) pv_trace_irecv_request(l, t, c->request_id);
        break;
    case PV_REC_EV_COLL:
        if (comm != UINT32_MAX)
            pv_trace_collective_end(l, t, comm, (OTF2_CollectiveOp)(x->kind_op >> 8), x->peer, x->bytes,
                                    x->bytes2);
        break;
    default: break;
    }
}

/* A thread's recent silences: ticks between two consecutive times its records know (a call's entry
 * after the previous exit, its exit after its entry), the last RECENT of them. How long it went
 * without a record near its end bounds when a thread that died without a word really ended. */
#define RECENT 4096
typedef struct silences {
    uint64_t last[RECENT];
    uint64_t n;
} silences;

static void note_silence(silences *s, uint64_t ticks) { s->last[s->n++ % RECENT] = ticks; }

static uint64_t longest_recent(const silences *s)
{
    uint64_t m = 0;
    for (uint64_t i = 0; i < s->n && i < RECENT; i++)
        if (s->last[i] > m) m = s->last[i];
    return m;
}

/* One thread's records being replayed onto its location: the reader, the call read ahead, and what
 * the previous calls left open. */
typedef struct thread_replay {
    pv_rec_reader r;
    int reading;            /* r is open */
    pv_rec_call c;          /* the next call, when has_call */
    int has_call;
    pv_trace_loc *l;
    pv_convert_thread *th;
    int prev_site, prev_cpu;
    uint64_t prev_exit, t_last;
    uint32_t open_user[64];
    int nopen;
    silences quiet;
    uint64_t metric_totals[PV_TRACE_METRICS_MAX]; /* the counters' running totals on this thread */
} thread_replay;

static void read_ahead(thread_replay *tr)
{
    tr->has_call = tr->reading && pv_rec_reader_next(&tr->r, &tr->c);
}

/* When the next call of tr acts on the requests of the rank (records.h): a start at its exit, any
 * other call (a completion) at its entry. */
static uint64_t request_time(const thread_replay *tr)
{
    return tr->c.request_id && !tr->c.open ? tr->c.t_exit : tr->c.t_entry;
}

/* Count tr's next call and the silences before and during it. */
static void count_call(thread_replay *tr)
{
    const pv_rec_call *c = &tr->c;
    tr->th->calls++;
    if (tr->th->calls > 1 && c->t_entry >= tr->prev_exit)
        note_silence(&tr->quiet, c->t_entry - tr->prev_exit);
    if (!c->open) note_silence(&tr->quiet, c->t_exit - c->t_entry);
}

/* The compute segment from the previous boundary call's exit to this call's entry; 1 if written. */
static int write_segment(converter *cv, thread_replay *tr)
{
    const pv_rec_call *c = &tr->c;
    if (tr->prev_site < 0) return 0;
    uint32_t seg = segment_region(cv, tr->prev_site, (int)c->site);
    if (seg == UINT32_MAX) return 0;
    pv_trace_enter(tr->l, tr->prev_exit, seg, tr->prev_cpu);
    pv_trace_leave(tr->l, c->t_entry, seg, c->cpu_in);
    tr->th->segments++;
    return 1;
}

/* Add the counters the call read to the thread's totals; write them where the call ended a segment. */
static void add_metrics(converter *cv, thread_replay *tr, int segment)
{
    const pv_rec_call *c = &tr->c;
    if (!c->nmetrics || c->nmetrics != cv->d->nmetrics) return;
    for (int i = 0; i < c->nmetrics; i++) tr->metric_totals[i] += c->metrics[i];
    /* At the end of the segment it read; a read that ended none (after perfvar's own
     * region) is only added up: the next event's totals include it. */
    if (segment) {
        pv_trace_metric(tr->l, c->t_entry, tr->metric_totals);
        tr->th->metric_reads++;
    }
}

/* The fixed-work probes the call ran; returns when the last one ended (the call's entry if none):
 * where the call's own region starts. */
static uint64_t write_probes(converter *cv, thread_replay *tr)
{
    const rank_defs *d = cv->d;
    const pv_rec_call *c = &tr->c;
    uint64_t t_region = c->t_entry;
    for (int i = 0; i < c->ninner; i++) {
        const pv_rec_inner_span *in = &c->inner[i];
        if (in->kind != PV_REC_PROBE || d->probe_region < 0) continue;
        pv_trace_enter(tr->l, in->t0, (uint32_t)d->probe_region, in->cpu0);
        pv_trace_leave(tr->l, in->t1, (uint32_t)d->probe_region, in->cpu1);
        note_cpu(cv, in->cpu0), note_cpu(cv, in->cpu1);
        tr->th->probes++;
        tr->th->probe_ticks += in->t1 - in->t0;
        t_region = in->t1;
    }
    return t_region;
}

/* When the call ended: its exit, or, for a call the thread died in, the last time known (then the
 * thread is marked as ended inside a call). */
static uint64_t call_end(thread_replay *tr, uint64_t t_region)
{
    pv_convert_thread *th = tr->th;
    if (!tr->c.open) return tr->c.t_exit;
    th->ended_in_call = 1;
    return th->state == PV_REC_SIGNAL && th->t_last > t_region ? th->t_last : t_region;
}

/* Forget the innermost open user region ur (it was left). */
static void pop_user_region(thread_replay *tr, uint32_t ur)
{
    for (int i = tr->nopen - 1; i >= 0; i--)
        if (tr->open_user[i] == ur) {
            memmove(tr->open_user + i, tr->open_user + i + 1,
                    (size_t)(tr->nopen - i - 1) * sizeof *tr->open_user);
            tr->nopen--;
            return;
        }
}

/* A user timer's start (site region -1) or stop (-2): its region entered or left. */
static void write_user_timer(converter *cv, thread_replay *tr, const site_def *s)
{
    const pv_rec_call *c = &tr->c;
    uint32_t ur = user_region(cv, s->handle);
    if (ur == UINT32_MAX) return;
    if (s->region == -1) {
        pv_trace_enter(tr->l, c->t_entry, ur, c->cpu_in);
        if (tr->nopen < 64) tr->open_user[tr->nopen++] = ur;
    } else {
        pv_trace_leave(tr->l, c->t_entry, ur, c->cpu_in);
        pop_user_region(tr, ur);
    }
}

/* The regions perfvar entered inside the call (PV_REC_NESTED spans). */
static void write_nested(converter *cv, pv_trace_loc *l, const pv_rec_call *c)
{
    for (int i = 0; i < c->ninner; i++) {
        const pv_rec_inner_span *in = &c->inner[i];
        if (in->kind != PV_REC_NESTED || in->region >= cv->d->nregions) continue;
        pv_trace_enter(l, in->t0, in->region, PV_TRACE_NO_CPU);
        pv_trace_leave(l, in->t1, in->region, PV_TRACE_NO_CPU);
    }
}

/* A call of a static region (an MPI function or perfvar's own) from t_region to t_exit, with its
 * message and collective events; a call that did not return neither completes nor starts requests. */
static void write_static_call(converter *cv, thread_replay *tr, int region, uint64_t t_region,
                              uint64_t t_exit)
{
    const pv_rec_call *c = &tr->c;
    unsigned ev = cv->d->events[region];
    pv_trace_enter(tr->l, t_region, (uint32_t)region, PV_TRACE_NO_CPU);
    entry_events(cv, tr->l, c, ev, t_region);
    write_nested(cv, tr->l, c);
    if (!c->open) {
        exit_events(cv, tr->l, c, ev, t_exit);
        request_started(cv, c, ev);
    }
    pv_trace_leave(tr->l, t_exit, (uint32_t)region, PV_TRACE_NO_CPU);
}

/* Write the events of tr's next call onto its location. */
static void replay_call(converter *cv, thread_replay *tr)
{
    rank_defs *d = cv->d;
    const pv_rec_call *c = &tr->c;
    count_call(tr);
    if ((int)c->site >= d->nsites) return; /* its definition was lost with the process */
    const site_def *s = &d->sites[c->site];
    note_cpu(cv, c->cpu_in), note_cpu(cv, c->cpu_out);
    /* Counters run from the thread's start: their totals are 0 at its first call. */
    if (tr->th->calls == 1 && d->nmetrics) pv_trace_metric(tr->l, c->t_entry, tr->metric_totals);
    add_metrics(cv, tr, write_segment(cv, tr));
    uint64_t t_region = write_probes(cv, tr);
    uint64_t t_exit = call_end(tr, t_region);
    if (s->region < 0)
        write_user_timer(cv, tr, s);
    else if (s->region < d->nregions)
        write_static_call(cv, tr, s->region, t_region, t_exit);
    /* Segments are delimited by MPI calls and user timers, not by perfvar's own regions. */
    int boundary = s->region < 0 || d->regions[s->region].paradigm == OTF2_PARADIGM_MPI;
    tr->prev_site = boundary ? (int)c->site : -1;
    tr->prev_exit = t_exit, tr->prev_cpu = c->cpu_out;
    tr->t_last = t_exit;
}

/* tr's records have ended: what its thread's result says of the end. */
static void end_thread(thread_replay *tr)
{
    pv_convert_thread *th = tr->th;
    if (th->state != PV_REC_SIGNAL || th->t_last < tr->t_last) th->t_last = tr->t_last;
    th->silence_recent = longest_recent(&tr->quiet);
    while (tr->nopen > 0)
        pv_trace_leave(tr->l, th->t_last, tr->open_user[--tr->nopen], PV_TRACE_NO_CPU);
}

/* Open every records file of the rank, one location each (thread order); *n of them. */
static int open_threads(converter *cv, const char *dir, int rank, thread_replay **out, uint32_t *n,
                        char *why, size_t len)
{
    pv_convert_result *res = cv->out;
    thread_replay *trs = NULL;
    *out = NULL, *n = 0;
    for (uint32_t t = 0;; t++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/perfvar/records/rank-%d.thread-%u.pvr", dir, rank, t);
        struct stat st;
        if (stat(path, &st)) break;
        pv_convert_thread *grown = realloc(res->threads, (t + 1) * sizeof *grown);
        if (grown) res->threads = grown;
        pv_trace_loc **locs = realloc(cv->locs, (t + 1) * sizeof *locs);
        if (locs) cv->locs = locs;
        thread_replay *more = realloc(trs, (t + 1) * sizeof *more);
        if (more) trs = *out = more;
        if (!grown || !locs || !more) return PERFVAR_ERR_NO_MEMORY;
        pv_convert_thread *th = &res->threads[t];
        memset(th, 0, sizeof *th);
        th->thread = t;
        res->nthreads = (int)t + 1;
        thread_replay *tr = &trs[t];
        memset(tr, 0, sizeof *tr);
        *n = t + 1;
        tr->prev_site = tr->prev_cpu = -1;
        tr->l = cv->locs[t] = pv_trace_location(t);
        if (!tr->l) return PERFVAR_ERR_NO_MEMORY;
        if (pv_rec_reader_open(&tr->r, path, why, len)) continue; /* an empty location */
        tr->reading = 1;
        th->state = tr->r.header.state, th->signal = tr->r.header.signal;
        th->sender = tr->r.header.sender;
        th->t_last = tr->r.header.state == PV_REC_SIGNAL ? tr->r.header.t_end : 0;
        th->lost_units = tr->r.header.lost_units;
        th->windows = tr->r.header.windows, th->window_ns = tr->r.header.window_ns;
    }
    for (uint32_t t = 0; t < *n; t++) trs[t].th = &res->threads[t]; /* where res->threads ended up */
    return PERFVAR_OK;
}

/* Replay the rank's threads together, the next call always from the thread whose call acts on the
 * requests first (request_time), so that a request completed on another thread than the one that
 * started it is paired with its start. Each location still gets its own calls in order. */
static int convert_threads(converter *cv, const char *dir, int rank, char *why, size_t len)
{
    thread_replay *trs;
    uint32_t n;
    int rc = open_threads(cv, dir, rank, &trs, &n, why, len);
    for (uint32_t t = 0; rc == PERFVAR_OK && t < n; t++) read_ahead(&trs[t]);
    for (;;) {
        thread_replay *next = NULL;
        for (uint32_t t = 0; rc == PERFVAR_OK && t < n; t++)
            if (trs[t].has_call && (!next || request_time(&trs[t]) < request_time(next))) next = &trs[t];
        if (!next) break;
        replay_call(cv, next);
        read_ahead(next);
    }
    for (uint32_t t = 0; t < n; t++) {
        if (rc == PERFVAR_OK) end_thread(&trs[t]);
        if (trs[t].reading) pv_rec_reader_close(&trs[t].r);
    }
    free(trs);
    return rc;
}

/* Bytes the rank's part of the archive may take: OTF2 writes about 2 to 3.5 bytes for each byte
 * of records (a call's 16 B become two Enter/Leave pairs, 30 B, or 58 B on a thread that moves
 * between CPUs at every call); 6 leaves room for messages, plus the definitions. */
static uint64_t archive_estimate(const char *dir, int rank)
{
    uint64_t bytes = 1u << 20;
    for (uint32_t t = 0;; t++) {
        char path[4400];
        struct stat st;
        snprintf(path, sizeof path, "%s/perfvar/records/rank-%d.thread-%u.pvr", dir, rank, t);
        if (stat(path, &st)) break;
        /* Blocks in use, not the length: the file is allocated ahead of the writer. */
        bytes += (uint64_t)st.st_blocks * 512u * 6u;
    }
    return bytes;
}

/* Room to write in dir: its filesystem's free space, and no more than the process's file size
 * limit (RLIMIT_FSIZE, per file: an archive's event file per location is most of it). */
static uint64_t free_bytes(const char *dir)
{
    struct statvfs fs;
    struct rlimit lim;
    uint64_t room = statvfs(dir, &fs) ? UINT64_MAX : (uint64_t)fs.f_bavail * fs.f_frsize;
    if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < room)
        room = lim.rlim_cur;
    return room;
}

/* Read and check rank's definitions (all but its communicators); 1 if they can be converted, else 0
 * with the reason in why. */
static int defs_load(const char *dir, int rank, rank_defs *d, caps *cap, char *why, size_t len)
{
    int ok = defs_read(dir, rank, d, why, len) == 0 && defs_parse(d, 0, cap, why, len) == 0 &&
             d->nregions > 0 && d->hz > 0;
    if (ok && d->rank != rank) {
        snprintf(why, len, "rank %d: its definitions say rank %d", rank, d->rank);
        ok = 0;
    } else if (!ok && !why[0]) {
        snprintf(why, len, "rank %d: its definitions have no regions or no clock", rank);
    }
    return ok;
}

/* Collective: whether every rank can convert (ok: this one can) and the archive fits in dir; 0 if
 * so, else -1 with the reason in why. Room is judged by the largest rank's records on the
 * filesystem they share (OTF2 3.0 crashes when a write fails mid-archive, so a conversion that
 * cannot fit is not started: the records stay, for perfvar-recover once there is room). */
static int agree_to_convert(const char *dir, int rank, const pv_trace_comm *comm, int ok, char *why,
                            size_t len)
{
    uint64_t need[2] = {ok ? archive_estimate(dir, rank) : 0, 0};
    uint64_t all_ok = (uint64_t)ok;
    if (comm->allreduce_u64(comm->ctx, &all_ok, 1, 0) || !all_ok ||
        comm->allreduce_u64(comm->ctx, need, 1, 1)) {
        if (ok) snprintf(why, len, "another rank's records cannot be read");
        return -1;
    }
    uint64_t room = free_bytes(dir), total = need[0] * (uint64_t)comm->size;
    if (room < total) {
        snprintf(why, len, "not enough room in %s for the OTF2 archive (about %llu MiB needed, %llu MiB "
                 "free); the records are kept: run perfvar-recover %s where there is room", dir,
                 (unsigned long long)(total >> 20), (unsigned long long)(room >> 20), dir);
        return -1;
    }
    return 0;
}

/* A rank that died measured its clock offset once: it holds to the end of its records (OTF2
 * wants its two offsets at different times). */
static void hold_last_offset(rank_defs *d, const pv_convert_result *out)
{
    if (d->nsync != 1) return;
    uint64_t last = d->sync.t_begin + 1;
    for (int t = 0; t < out->nthreads; t++)
        if (out->threads[t].t_last > last) last = out->threads[t].t_last;
    d->sync.t_end = last;
}

/* Location ids and event counts, which exist once the trace is closed. */
static void note_locations(const converter *cv, pv_convert_result *out)
{
    for (int t = 0; t < out->nthreads; t++) {
        pv_trace_stats st;
        if (!cv->locs || !cv->locs[t]) continue;
        pv_trace_location_info(cv->locs[t], &out->threads[t].location, &st);
        out->threads[t].events = st.events_written;
    }
}

static void converter_free(converter *cv)
{
    free(cv->locs);
    pv_requests_free(&cv->requests);
    pv_u64map_free(&cv->segments);
    free(cv->user_regions);
}

/* With the archive open: the communicators, the counters and the threads' events. */
static int convert_open_rank(converter *cv, const char *dir, int rank, caps *cap, char *why, size_t len)
{
    rank_defs *d = cv->d;
    int rc = PERFVAR_OK;
    if (defs_parse(d, 1, cap, why, len)) rc = PERFVAR_ERR_IO;
    if (pv_trace_metrics_define(d->nmetrics, d->metric_name, d->metric_unit, d->metric_desc))
        rc = PERFVAR_ERR_NO_MEMORY;
    int rc2 = convert_threads(cv, dir, rank, why, len);
    return rc == PERFVAR_OK ? rc2 : rc;
}

int pv_convert_rank(const char *dir, int rank, const pv_trace_comm *comm, unsigned buffer_mb,
                    pv_convert_result *out, char *why, size_t len)
{
    memset(out, 0, sizeof *out);
    why[0] = 0;
    rank_defs d;
    caps cap = {0};
    int ok = defs_load(dir, rank, &d, &cap, why, len);
    if (agree_to_convert(dir, rank, comm, ok, why, len)) {
        defs_free(&d);
        return PERFVAR_ERR_IO;
    }
    out->hz = d.hz;
    out->t_start = d.realtime_ticks, out->realtime_ns = d.realtime_ns;
    int rc = pv_trace_open(dir, buffer_mb, d.regions, d.nregions, comm);
    if (rc != PERFVAR_OK) {
        snprintf(why, len, "cannot create the OTF2 archive: %s", pv_trace_open_error());
        defs_free(&d);
        return rc;
    }
    converter cv = {.d = &d, .out = out};
    rc = convert_open_rank(&cv, dir, rank, &cap, why, len);
    hold_last_offset(&d, out);
    /* Closing is collective: every rank closes, whatever happened to it. */
    int rc3 = pv_trace_close(d.hz, d.host, &d.place, &d.sync, d.realtime_ns, d.realtime_ticks, &out->stats);
    if (rc == PERFVAR_OK) rc = rc3;
    note_locations(&cv, out);
    converter_free(&cv);
    defs_free(&d);
    return rc;
}

void pv_convert_free(pv_convert_result *r)
{
    free(r->threads);
    memset(r, 0, sizeof *r);
}
