/* replay.c — decoding a records file; see replay.h. */
#include "replay.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int pv_rec_reader_open(pv_rec_reader *r, const char *path, char *why, size_t len)
{
    memset(r, 0, sizeof *r);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        snprintf(why, len, "cannot open %s", path);
        if (fd >= 0) close(fd);
        return -1;
    }
    if ((size_t)st.st_size < sizeof r->header) {
        snprintf(why, len, "%s: too short for a records header", path);
        close(fd);
        return -1;
    }
    r->map_bytes = (size_t)st.st_size;
    r->map = mmap(NULL, r->map_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    /* Read once, front to back: let the kernel read ahead and drop what was read. */
    if (r->map != MAP_FAILED) madvise(r->map, r->map_bytes, MADV_SEQUENTIAL);
    if (r->map == MAP_FAILED) {
        r->map = NULL;
        snprintf(why, len, "cannot map %s", path);
        return -1;
    }
    memcpy(&r->header, r->map, sizeof r->header);
    if (memcmp(r->header.magic, PV_REC_MAGIC, 8) || r->header.version != PV_REC_VERSION ||
        r->header.unit_bytes != PV_REC_UNIT_BYTES) {
        snprintf(why, len, "%s: not a perfvar records file of version %u", path, PV_REC_VERSION);
        pv_rec_reader_close(r);
        return -1;
    }
    size_t n = r->map_bytes > PV_REC_HEADER_BYTES
                   ? (r->map_bytes - PV_REC_HEADER_BYTES) / PV_REC_UNIT_BYTES : 0;
    r->units = r->at = (const pv_rec_unit *)((const char *)r->map + PV_REC_HEADER_BYTES);
    r->end = r->units + n;
    r->dropped = r->map;
    return 0;
}

void pv_rec_reader_close(pv_rec_reader *r)
{
    if (r->map) munmap(r->map, r->map_bytes);
    free(r->completed);
    memset(r, 0, sizeof *r);
}

static int fact_of(pv_rec_reader *r, uint16_t slot, pv_rec_fact_def *out)
{
    if (!slot || slot >= PV_REC_FACT_SLOTS || !(r->fact_used[slot / 64] >> (slot % 64) & 1)) return 0;
    *out = r->facts[slot];
    return 1;
}

/* A FACT unit pair at u (its second unit raw) defines its slot for what follows. */
static void define_fact(pv_rec_reader *r, const pv_rec_unit *u)
{
    uint16_t slot = u->cpu;
    if (!slot || slot >= PV_REC_FACT_SLOTS) return;
    pv_rec_fact_def *f = &r->facts[slot];
    f->kind_op = u->x, f->comm = u->y, f->peer = u->a, f->tag = u->b;
    memcpy(&f->bytes, u + 1, 8);
    memcpy(&f->bytes2, (const char *)(u + 1) + 8, 8);
    r->fact_used[slot / 64] |= 1ull << (slot % 64);
}

/* The 64-bit value a unit carries in a (low half) and b (high half): pv_rec_put_ab's. */
static uint64_t ab(const pv_rec_unit *u) { return (uint64_t)u->a | (uint64_t)u->b << 32; }

static int cpu_of(uint16_t v)
{
    v &= PV_REC_CPU_MASK;
    return v == PV_REC_CPU_UNKNOWN ? -1 : v;
}

/* Skip units that do not begin a call (SKIP, TIME) until the next CALL; NULL at the end. */
static const pv_rec_unit *next_call_unit(pv_rec_reader *r)
{
    while (r->at < r->end) {
        const pv_rec_unit *u = r->at;
        if (u->tag == PV_REC_END) return NULL;
        if (u->tag == PV_REC_SKIP) {
            r->at += 1 + (size_t)u->a;
        } else if (u->tag == PV_REC_TIME) {
            r->next_entry = ab(u);
            r->at++;
        } else if (u->tag == PV_REC_FACT) { /* a fact outside a call: still defines its slot */
            if (r->at + 1 >= r->end) return NULL;
            define_fact(r, u);
            r->at += 2;
        } else if (u->tag == PV_REC_METRIC) { /* of a call we did not see begin: with its raw units */
            r->at += 1 + ((size_t)u->x + 1) / 2;
        } else if (u->tag >= PV_REC_MIN_KIND) { /* a unit of a call we did not see begin */
            r->at++;
        } else {
            return u;
        }
    }
    return NULL;
}

static int add_completion(pv_rec_reader *r, pv_rec_call *c, const pv_rec_completion *done)
{
    if (c->ncompleted == r->completed_cap) {
        size_t cap = r->completed_cap ? 2 * r->completed_cap : 16;
        pv_rec_completion *n = realloc(r->completed, cap * sizeof *n);
        if (!n) return -1;
        r->completed = n, r->completed_cap = cap;
    }
    r->completed[c->ncompleted++] = *done;
    c->completed = r->completed;
    return 0;
}

/* Give back the pages read so far, in steps of DROP_STEP: the file is read once, front to back, and
 * its pages would otherwise stay resident (counted in the process's RSS) until the end. */
#define DROP_STEP ((size_t)8 << 20)
static void drop_read(pv_rec_reader *r)
{
    const char *at = (const char *)r->at;
    if ((size_t)(at - r->dropped) < 2 * DROP_STEP) return;
    size_t len = ((size_t)(at - r->dropped) - DROP_STEP) / DROP_STEP * DROP_STEP;
    madvise((void *)r->dropped, len, MADV_DONTNEED);
    r->dropped += len;
}

/* A metric unit of call c at v, with its raw units: the counts into c, r->at past them; 1, or 0
 * when the file ends inside them. */
static inline int read_metrics(pv_rec_reader *r, pv_rec_call *c, const pv_rec_unit *v)
{
    size_t raw = ((size_t)v->x + 1) / 2;
    if (raw > (size_t)(r->end - r->at - 1)) return 0; /* cut by the end of the file */
    c->nmetrics = v->x < PV_REC_METRIC_MAX ? v->x : (int)PV_REC_METRIC_MAX;
    c->metric_since = ab(v);
    memcpy(c->metrics, v + 1, (size_t)c->nmetrics * sizeof *c->metrics);
    r->at += raw; /* its raw units */
    return 1;
}

/* A probe or a nested region inside call c (the first four are kept). */
static inline void add_inner(pv_rec_call *c, const pv_rec_unit *v)
{
    if (c->ninner >= 4) return;
    pv_rec_inner_span *in = &c->inner[c->ninner++];
    in->kind = v->tag;
    in->region = v->tag == PV_REC_NESTED ? v->x : 0;
    in->t0 = c->t_entry + v->a;
    in->t1 = in->t0 + v->b;
    in->cpu0 = cpu_of(v->cpu);
    in->cpu1 = v->tag == PV_REC_PROBE ? cpu_of(v->x) : in->cpu0;
}

/* One unit v of call c after its first (r->at is v; units it owns are skipped past, the caller
 * steps over v itself): 1 to go on, 0 at a cut (the call ends here), -1 when out of memory. */
static inline int read_call_unit(pv_rec_reader *r, pv_rec_call *c, const pv_rec_unit *v, uint64_t *span)
{
    switch (v->tag) {
    case PV_REC_SKIP: /* the call's units go on in the next window */
        r->at += v->a;
        return 1;
    case PV_REC_FACT:
        if (r->at + 1 >= r->end) return 0;
        define_fact(r, v);
        r->at++; /* its raw second unit */
        return 1;
    case PV_REC_METRIC: return read_metrics(r, c, v);
    case PV_REC_SPAN64: *span = ab(v); return 1;
    case PV_REC_CPU_OUT: c->cpu_out = cpu_of(v->cpu); return 1;
    case PV_REC_PROBE:
    case PV_REC_NESTED: add_inner(c, v); return 1;
    case PV_REC_REQUEST:
        c->request_id = PV_REC_REQUEST_ID(r->header.thread, ++r->requests);
        c->request_handle = ab(v);
        return 1;
    case PV_REC_COMPLETE: {
        pv_rec_completion done = {ab(v), 0, {0}};
        done.has_status = fact_of(r, v->x, &done.status) && (done.status.kind_op & 0xff) == PV_REC_FACT_STATUS;
        return add_completion(r, c, &done) ? -1 : 1;
    }
    default: return 1;
    }
}

int pv_rec_reader_next(pv_rec_reader *r, pv_rec_call *c)
{
    if (__builtin_expect((size_t)((const char *)r->at - r->dropped) >= 2 * DROP_STEP, 0)) drop_read(r);
    const pv_rec_unit *u = next_call_unit(r);
    if (!u) return 0;
    memset(c, 0, sizeof *c);
    c->completed = r->completed;
    c->site = (uint32_t)u->tag - 1;
    c->t_entry = r->next_entry ? r->next_entry : r->last_exit + u->a;
    r->next_entry = 0;
    c->cpu_in = c->cpu_out = cpu_of(u->cpu);
    uint64_t span = u->b;
    c->open = u->b == PV_REC_SPAN_OPEN;
    uint16_t fx = u->x, fy = u->y;
    r->at++;
    for (; r->at < r->end; r->at++) {
        const pv_rec_unit *v = r->at;
        if (v->tag == PV_REC_END || v->tag < PV_REC_MIN_KIND || v->tag == PV_REC_TIME)
            break; /* the next call */
        int st = read_call_unit(r, c, v, &span);
        if (st < 0) return 0;
        if (st == 0) break;
    }
    c->has_x = fact_of(r, fx, &c->x);
    c->has_y = fact_of(r, fy, &c->y);
    if (c->open) span = 0;
    c->t_exit = c->t_entry + span;
    r->last_exit = c->t_exit;
    return 1;
}
