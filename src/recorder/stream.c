/* stream.c — record streams: file-backed windows, moving on when full, facts; see recorder.h. */
#define _GNU_SOURCE
#include "recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Mapped windows: the current one and the one before it. A CALL begun near the end of a window
 * may still be ended after the writer moved on; the previous window stays mapped until the next
 * move, and past that while it holds the open CALL (then unmapped when that call ends). */
typedef struct window_state {
    pv_rec_unit *prev;        /* previous window, or NULL */
    pv_rec_unit *pinned;      /* an older window kept for the open CALL, or NULL (s->pinned) */
} window_state;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

static off_t window_offset(const pv_rec_stream *s, uint64_t index)
{
    return (off_t)PV_REC_HEADER_BYTES + (off_t)(index * s->window_units * PV_REC_UNIT_BYTES);
}

/* Allocate and map window `index` of the file; NULL on failure (errno). */
static pv_rec_unit *map_window(pv_rec_stream *s, uint64_t index)
{
    size_t bytes = s->window_units * PV_REC_UNIT_BYTES;
    off_t off = window_offset(s, index);
    void *p;
#ifdef MADV_POPULATE_WRITE
    /* The file grows sparse and the window's pages are made writable now, in one call: the
     * filesystem reserves their blocks here, so a full disk is an error of this call (not SIGBUS
     * in a store later), and no store of a measured call takes a write fault. Reserving on a hole
     * (delayed allocation) costs far less than converting fallocate's unwritten extents page by
     * page. */
    if (ftruncate(s->fd, off + (off_t)bytes)) return NULL;
    p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, off);
    if (p == MAP_FAILED) return NULL;
    if (madvise(p, bytes, MADV_POPULATE_WRITE) == 0) return p;
    int e = errno;
    munmap(p, bytes);
    if (e != EINVAL) { /* EINVAL: a kernel before 5.14; otherwise the disk is full */
        errno = e == EFAULT ? ENOSPC : e;
        return NULL;
    }
#endif
    /* Blocks are reserved now, so a full disk is an error here and not SIGBUS in a store later. */
    int rc = posix_fallocate(s->fd, off, (off_t)bytes);
    if (rc) {
        errno = rc;
        return NULL;
    }
    p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, off);
    if (p == MAP_FAILED) return NULL;
    for (size_t i = 0; i < bytes; i += 4096) ((volatile char *)p)[i] = 0;
    return p;
}

static window_state *wstate(pv_rec_stream *s) { return (window_state *)s->private_state; }

static void unmap(pv_rec_stream *s, pv_rec_unit *w)
{
    if (w) munmap(w, s->window_units * PV_REC_UNIT_BYTES);
}

/* Stop recording: what the thread stores from now on goes to scratch and is counted as lost. */
static pv_rec_unit *fail(pv_rec_stream *s)
{
    s->header->state = PV_REC_FAILED;
    s->cur = s->scratch;
    s->end = s->scratch + sizeof s->scratch / sizeof s->scratch[0];
    return s->cur;
}

pv_rec_unit *pv_rec_refill(pv_rec_stream *s)
{
    if (!s->window) { /* failed before: the units stored in scratch are lost */
        s->header->lost_units += (uint64_t)(s->cur - s->scratch);
        s->cur = s->scratch;
        return s->cur;
    }
    uint64_t t0 = mono_ns();
    /* The rest of this window is skipped by readers. */
    if (s->cur < s->end) {
        s->cur->a = (uint32_t)(s->end - s->cur - 1), s->cur->b = 0;
        s->cur->cpu = 0, s->cur->x = s->cur->y = 0;
        s->cur->tag = PV_REC_SKIP;
    }
    s->header->units += (uint64_t)(s->end - s->window);
    window_state *w = wstate(s);
    pv_rec_unit *next = map_window(s, s->window_index + 1);
    if (!next) {
        unmap(s, w->prev), w->prev = NULL;
        /* The window holding an open CALL stays mapped until that call ends. */
        if (s->open && s->open >= s->window && s->open < s->end) {
            unmap(s, w->pinned);
            w->pinned = s->window;
            s->pinned = 1;
        } else {
            unmap(s, s->window);
        }
        s->window = NULL;
        return fail(s);
    }
    if (w->prev) {
        if (s->open && s->open >= w->prev && s->open < w->prev + s->window_units) {
            unmap(s, w->pinned);
            w->pinned = w->prev;
            s->pinned = 1;
        } else {
            unmap(s, w->prev);
        }
    }
    w->prev = s->window;
    s->window = next;
    s->window_index++;
    s->cur = next;
    s->end = next + s->window_units;
    s->header->windows++;
    s->header->window_ns += mono_ns() - t0;
    return s->cur;
}

void pv_rec_release_pinned(pv_rec_stream *s)
{
    window_state *w = wstate(s);
    unmap(s, w->pinned);
    w->pinned = NULL;
    s->pinned = 0;
}

pv_rec_stream *pv_rec_open(const char *dir, uint32_t rank, uint32_t thread, size_t buffer_bytes)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/perfvar/records/rank-%u.thread-%u.pvr", dir, rank, thread);
    pv_rec_stream *s = calloc(1, sizeof *s);
    window_state *w = calloc(1, sizeof *w);
    if (!s || !w) {
        free(s), free(w);
        errno = ENOMEM;
        return NULL;
    }
    s->private_state = w;
    s->thread = thread;
    s->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (s->fd < 0) goto fail;
    /* Two windows are mapped at a time: each is half the buffer, whole pages, at least 32 KiB. */
    size_t page = page_size();
    size_t half = buffer_bytes / 2 / page * page;
    if (half < 32768) half = 32768;
    s->window_units = half / PV_REC_UNIT_BYTES;
    int rc = posix_fallocate(s->fd, 0, PV_REC_HEADER_BYTES);
    if (rc) {
        errno = rc;
        goto fail;
    }
    void *h = mmap(NULL, PV_REC_HEADER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
    if (h == MAP_FAILED) goto fail;
    s->header = h;
    memcpy(s->header->magic, PV_REC_MAGIC, 8);
    s->header->version = PV_REC_VERSION;
    s->header->unit_bytes = PV_REC_UNIT_BYTES;
    s->header->rank = rank;
    s->header->thread = thread;
    s->header->state = PV_REC_RUNNING;
    s->window = map_window(s, 0);
    if (!s->window) goto fail;
    s->cur = s->window;
    s->end = s->window + s->window_units;
    return s;
fail:;
    int e = errno;
    if (s->header) munmap(s->header, PV_REC_HEADER_BYTES);
    if (s->fd >= 0) close(s->fd);
    free(w), free(s);
    errno = e;
    return NULL;
}

void pv_rec_mark_signal(pv_rec_stream *s, int sig, uint32_t sender, uint64_t t)
{
    if (!s || !s->header || s->header->state != PV_REC_RUNNING) return;
    s->header->signal = sig;
    s->header->sender = sender;
    s->header->t_end = t;
    __atomic_store_n(&s->header->state, PV_REC_SIGNAL, __ATOMIC_RELEASE);
}

int pv_rec_close(pv_rec_stream *s, uint64_t t_end)
{
    window_state *w = wstate(s);
    int failed = !s->window;
    if (failed) s->header->lost_units += (uint64_t)(s->cur - s->scratch);
    else s->header->units += (uint64_t)(s->cur - s->window);
    unmap(s, s->window), unmap(s, w->prev), unmap(s, w->pinned);
    s->header->t_end = t_end;
    if (!failed) __atomic_store_n(&s->header->state, PV_REC_CLOSED, __ATOMIC_RELEASE);
    munmap(s->header, PV_REC_HEADER_BYTES);
    close(s->fd);
    free(w), free(s);
    return failed ? -1 : 0;
}

/* ---- facts ---- */
uint16_t pv_rec_fact_define(pv_rec_stream *s, const pv_rec_fact_def *f, uint16_t slot)
{
    pv_rec_fact_def *have = &s->facts[slot];
    /* The open call's own facts are read after its last unit: their slots must keep them. */
    while (s->open && (slot == s->open->x || slot == s->open->y)) {
        slot = (uint16_t)(slot % (PV_REC_FACT_SLOTS - 1) + 1);
        have = &s->facts[slot];
        if (s->fact_used[slot / 64] >> (slot % 64) & 1 && !memcmp(have, f, sizeof *f)) return slot;
    }
    *have = *f;
    s->fact_used[slot / 64] |= 1ull << (slot % 64);
    s->fact_defs++;
    pv_rec_unit *u = pv_rec_add(s);
    u->a = f->peer, u->b = f->tag, u->cpu = slot, u->x = (uint16_t)f->kind_op, u->y = (uint16_t)f->comm;
    u->tag = PV_REC_FACT;
    pv_rec_unit *v = pv_rec_add(s);
    memcpy(v, &f->bytes, 8);
    memcpy((char *)v + 8, &f->bytes2, 8);
    return slot;
}

void pv_rec_metric(pv_rec_stream *s, uint64_t t_prev, const uint64_t *values, unsigned n)
{
    pv_rec_unit *u = pv_rec_add(s);
    pv_rec_put_ab(u, t_prev);
    u->cpu = 0, u->x = (uint16_t)n, u->y = 0;
    u->tag = PV_REC_METRIC;
    for (unsigned i = 0; i < n; i += 2) {
        uint64_t pair[2] = {values[i], i + 1 < n ? values[i + 1] : 0};
        memcpy(pv_rec_add(s), pair, sizeof pair); /* raw: the reader knows it follows */
    }
}
