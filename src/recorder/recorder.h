/*
 * recorder.h — per-thread record streams in file-backed buffers, and the rank's definitions file
 * (internal; MPI-free, OTF2-free). Format: records.h.
 *
 * A stream is one traced thread's records file. Its units are written with plain stores into a
 * window of the file mapped MAP_SHARED (buffer_bytes long): the pages belong to the file, so what
 * was stored survives kill -9, a crash or MPI_Abort. When the window is full it moves on along the
 * file (the kernel writes the full one out; the memory is reused): a thread's memory stays within
 * buffer_bytes. The file is allocated ahead of the window (fallocate), so a full disk is seen there,
 * not as SIGBUS in a store: the stream then stops recording (state PV_REC_FAILED) and counts what it
 * could not write.
 *
 * Thread-safety: a stream is written by its own thread only (pv_rec_call_* / pv_rec_add_*);
 * pv_rec_mark_signal may run in a signal handler on any thread (async-signal-safe: stores only).
 * pv_rec_close runs once the thread has made its last record. The definitions functions are
 * thread-safe (one lock; called outside the hot path).
 *
 * The definitions file, DIR/perfvar/records/rank-<R>.defs, is text, one definition per line,
 * tab-separated, appended as definitions are made (so it is complete up to a crash):
 *   rank R S                      this rank and the job's size
 *   host NAME
 *   clock HZ                      ticks per second of the records' clock
 *   sync T OFFSET STDDEV          clock offset to rank 0 measured at local ticks T (global = local +
 *                                 OFFSET); a second sync line may follow at the end
 *   realtime NS TICKS             a CLOCK_REALTIME reading paired with a clock reading
 *   region ID ROLE PARADIGM EVENTS NAME
 *                                 static region ID (MPI functions, then perfvar's own), its OTF2 role
 *                                 and paradigm, its event role (PV_REC_EV_*)
 *   site ID REGION HANDLE NAME LABEL
 *                                 call site ID: a call of static region REGION (HANDLE = -1), or a
 *                                 user timer start (REGION = -1) / stop (REGION = -2) of HANDLE
 *   user HANDLE NAME              user timer region HANDLE's name
 *   comm ID N R0 ... RN-1         communicator ID (> 0) by its members' ranks in the job
 *   metric I NAME UNIT DESCRIPTION
 *                                 counter I (0, 1, ... in the order of a METRIC unit's values): its
 *                                 PAPI event name, unit ("" for a count) and description
 * Names contain no tab or newline (they are replaced by spaces).
 */
#ifndef PV_RECORDER_H
#define PV_RECORDER_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "defs_lines.h"
#include "records.h"

/* A fact as the stream's table holds it (the two FACT units' content). */
typedef struct pv_rec_fact_def {
    uint32_t kind_op, comm, peer, tag;
    uint64_t bytes, bytes2;
} pv_rec_fact_def;

typedef struct pv_rec_stream {
    pv_rec_unit *cur, *end;   /* the next unit to write, the end of the mapped window */
    pv_rec_unit *open;        /* the CALL begun and not yet ended, or NULL */
    uint64_t last_exit;       /* ticks of the previous CALL's exit (0 before the first) */
    uint32_t thread;
    int fd;
    int pinned;               /* an older window is kept mapped for the open CALL */
    pv_rec_header *header;    /* the mapped header page */
    pv_rec_unit *window;      /* start of the mapped window (NULL once failed) */
    size_t window_units;
    uint64_t window_index;    /* which window of the file is mapped */
    void *private_state;      /* stream.c's */
    uint64_t fact_defs;       /* fact definitions written so far (pv_rec_fact_memo) */
    uint64_t fact_used[PV_REC_FACT_SLOTS / 64];
    pv_rec_fact_def facts[PV_REC_FACT_SLOTS];
    pv_rec_unit scratch[8];   /* where stores go once the stream has failed */
} pv_rec_stream;

/* Open DIR/perfvar/records/rank-<rank>.thread-<thread>.pvr (the directory must exist) with a
 * window of buffer_bytes (rounded to pages, at least 64 KiB). NULL and errno on failure. */
pv_rec_stream *pv_rec_open(const char *dir, uint32_t rank, uint32_t thread, size_t buffer_bytes);

/* Write the header (state PV_REC_CLOSED, t_end, units), unmap, close the file and free s. Returns
 * 0, or -1 when the stream had failed (header.lost_units says how much was lost). */
int pv_rec_close(pv_rec_stream *s, uint64_t t_end);

/* Signal handler side: mark the stream as ended by sig at t (state, signal, t_end), sent by sender
 * (PV_REC_SENT_*). */
void pv_rec_mark_signal(pv_rec_stream *s, int sig, uint32_t sender, uint64_t t);

/* Move to the next window; returns s->cur. Out of line: the hot path only compares pointers. */
pv_rec_unit *pv_rec_refill(pv_rec_stream *s);
/* Unmap a window that was kept for the CALL that has just ended. */
void pv_rec_release_pinned(pv_rec_stream *s);

/* ---- the hot path ---- */

/* Room for a CALL and the units its entry may add (TIME before it, PROBE or NESTED after). */
#define PV_REC_ENTRY_UNITS 4

/* Begin a CALL at site with entry read t (cpu: CPU at entry, < 0 unknown); returns the unit, which
 * stays valid (mapped) until pv_rec_call_end. A TIME unit goes first when the gap does not fit. */
static inline pv_rec_unit *pv_rec_call_begin(pv_rec_stream *s, uint32_t site, uint64_t t, int cpu)
{
    pv_rec_unit *u = s->cur;
    if (__builtin_expect(s->end - u < PV_REC_ENTRY_UNITS, 0)) u = pv_rec_refill(s);
    uint64_t gap = t - s->last_exit;
    if (__builtin_expect(gap >= PV_REC_GAP_MAX, 0)) {
        u->a = (uint32_t)t, u->b = (uint32_t)(t >> 32);
        u->tag = PV_REC_TIME, u->cpu = 0, u->x = u->y = 0;
        u++;
        gap = 0;
    }
    u->a = (uint32_t)gap;
    u->b = PV_REC_SPAN_OPEN;
    u->cpu = cpu >= 0 && cpu < (int)PV_REC_CPU_MASK ? (uint16_t)cpu : (uint16_t)PV_REC_CPU_UNKNOWN;
    u->x = u->y = 0;
    u->tag = (uint16_t)(site + 1);
    s->cur = u + 1;
    s->open = u;
    return u;
}

/* Append a unit belonging to the current CALL (after pv_rec_call_begin, before or after its end). */
static inline pv_rec_unit *pv_rec_add(pv_rec_stream *s)
{
    pv_rec_unit *u = s->cur;
    if (__builtin_expect(u == s->end, 0)) u = pv_rec_refill(s);
    s->cur = u + 1;
    return u;
}

/* End the CALL begun as u at t_entry, with exit read t (cpu: CPU at exit). The units of the call
 * (facts, completions) are added before this, since the exit read starts the next segment; u stays
 * mapped meanwhile however many they are. */
static inline void pv_rec_call_end(pv_rec_stream *s, pv_rec_unit *u, uint64_t t_entry, uint64_t t,
                                   int cpu)
{
    uint64_t span = t - t_entry;
    uint16_t c = cpu >= 0 && cpu < (int)PV_REC_CPU_MASK ? (uint16_t)cpu : (uint16_t)PV_REC_CPU_UNKNOWN;
    int moved = c != (u->cpu & PV_REC_CPU_MASK);
    s->last_exit = t;
    s->open = NULL;
    if (__builtin_expect(span >= PV_REC_SPAN_WIDE, 0)) {
        u->b = PV_REC_SPAN_WIDE;
        pv_rec_unit *w = pv_rec_add(s);
        w->a = (uint32_t)span, w->b = (uint32_t)(span >> 32), w->cpu = 0, w->x = w->y = 0;
        w->tag = PV_REC_SPAN64;
    } else {
        u->b = (uint32_t)span;
    }
    if (__builtin_expect(s->pinned, 0)) pv_rec_release_pinned(s);
    if (__builtin_expect(moved, 0)) {
        pv_rec_unit *w = pv_rec_add(s);
        w->a = w->b = 0, w->cpu = c, w->x = w->y = 0;
        w->tag = PV_REC_CPU_OUT;
    }
}

/* The 64-bit value a unit carries in a (low half) and b (high half). */
static inline void pv_rec_put_ab(pv_rec_unit *u, uint64_t v) { u->a = (uint32_t)v, u->b = (uint32_t)(v >> 32); }

/* A unit of the current CALL that names a request by its handle (its bits): kind PV_REC_REQUEST or
 * PV_REC_COMPLETE, with x. */
static inline void pv_rec_handle_unit(pv_rec_stream *s, uint16_t kind, uint64_t handle, uint16_t x)
{
    pv_rec_unit *w = pv_rec_add(s);
    pv_rec_put_ab(w, handle);
    w->cpu = 0, w->x = x, w->y = 0;
    w->tag = kind;
}

/* A REQUEST unit: the current CALL started the request whose handle (its bits) is handle. */
static inline void pv_rec_request(pv_rec_stream *s, uint64_t handle)
{
    pv_rec_handle_unit(s, PV_REC_REQUEST, handle, 0);
}

/* The slot fact f goes to first (1 .. PV_REC_FACT_SLOTS - 1). Its fields as four words, each
 * multiplied by its own odd constant (independent multiplies, no chain) and summed: a change in any
 * bit of a field reaches the sum's high half, which is scaled into the range by a multiply rather
 * than a division. */
static inline uint16_t pv_rec_fact_home(const pv_rec_fact_def *f)
{
    uint64_t h = ((uint64_t)f->kind_op << 32 | f->comm) * 0x9e3779b97f4a7c15ull +
                 ((uint64_t)f->peer << 32 | f->tag) * 0xc2b2ae3d27d4eb4full +
                 f->bytes * 0x165667b19e3779f9ull + f->bytes2 * 0xff51afd7ed558ccdull;
    return (uint16_t)(1 + ((h >> 32) * (PV_REC_FACT_SLOTS - 1) >> 32));
}

/* Out of line: put f in slot (or the next one the open CALL does not refer to) and write its FACT
 * unit pair; the slot. */
uint16_t pv_rec_fact_define(pv_rec_stream *s, const pv_rec_fact_def *f, uint16_t slot);

/* A message, collective or status fact; the slot that holds it (1 .. PV_REC_FACT_SLOTS - 1), written
 * as a FACT unit pair first when the slot held something else (never one the open CALL's x or y
 * refers to). Inline: most facts are already in their home slot. */
static inline uint16_t pv_rec_fact_of(pv_rec_stream *s, const pv_rec_fact_def *f)
{
    uint16_t slot = pv_rec_fact_home(f);
    if (s->fact_used[slot / 64] >> (slot % 64) & 1 && !memcmp(&s->facts[slot], f, sizeof *f))
        return slot;
    return pv_rec_fact_define(s, f, slot);
}

/* pv_rec_fact_of the fact of these fields; kind: PV_REC_FACT_*, op: a collective's operation. */
static inline uint16_t pv_rec_fact(pv_rec_stream *s, uint32_t kind, uint32_t op, uint32_t comm,
                                   uint32_t peer, uint32_t tag, uint64_t bytes, uint64_t bytes2)
{
    pv_rec_fact_def f = {kind | op << 8, comm, peer, tag, bytes, bytes2};
    return pv_rec_fact_of(s, &f);
}

/* A fact a caller made before, kept by the caller (e.g. one per call site), with the slot it was
 * in: while the stream has written no fact definition since (fact_defs unchanged), every slot still
 * holds what it held, so the same fact is in the same slot, found without hashing. */
typedef struct pv_rec_fact_memo {
    pv_rec_fact_def f;
    uint64_t defs;  /* the stream's fact_defs when slot held f */
    uint16_t slot;  /* 0: empty */
} pv_rec_fact_memo;

/* pv_rec_fact through memo m: the memo's slot when it holds the same fact and the stream has
 * defined none since, else pv_rec_fact's, which the memo then keeps. */
static inline uint16_t pv_rec_fact_memoized(pv_rec_stream *s, pv_rec_fact_memo *m, uint32_t kind,
                                            uint32_t op, uint32_t comm, uint32_t peer, uint32_t tag,
                                            uint64_t bytes, uint64_t bytes2)
{
    pv_rec_fact_def f = {kind | op << 8, comm, peer, tag, bytes, bytes2};
    if (__builtin_expect(m->slot && m->defs == s->fact_defs && !memcmp(&m->f, &f, sizeof f), 1))
        return m->slot;
    uint16_t slot = pv_rec_fact_of(s, &f);
    m->f = f, m->defs = s->fact_defs, m->slot = slot;
    return slot;
}

/* A COMPLETE unit for the current CALL: it completed the request whose handle was handle, with the
 * slot of its STATUS fact (0: none). */
static inline void pv_rec_complete(pv_rec_stream *s, uint64_t handle, uint16_t status_fact)
{
    pv_rec_handle_unit(s, PV_REC_COMPLETE, handle, status_fact);
}

/* A PROBE or NESTED unit for the current CALL (entry ticks t_entry): kind PV_REC_PROBE (x = CPU at
 * the end) or PV_REC_NESTED (x = static region), from t0 to t1. */
static inline void pv_rec_inner(pv_rec_stream *s, uint16_t kind, uint64_t t_entry, uint64_t t0,
                                uint64_t t1, int cpu, uint16_t x)
{
    pv_rec_unit *w = pv_rec_add(s);
    w->a = (uint32_t)(t0 - t_entry), w->b = (uint32_t)(t1 - t0);
    w->cpu = cpu >= 0 && cpu < (int)PV_REC_CPU_MASK ? (uint16_t)cpu : (uint16_t)PV_REC_CPU_UNKNOWN;
    w->x = x, w->y = 0;
    w->tag = kind;
}

/* A METRIC unit for the current CALL and its n values (n <= PV_REC_METRIC_MAX): the deltas read
 * at its entry, counted since the read at the CALL whose entry was t_prev (records.h). Out of
 * line: it follows a counter read, which costs a thousand times more. */
void pv_rec_metric(pv_rec_stream *s, uint64_t t_prev, const uint64_t *values, unsigned n);

/* ---- definitions (thread-safe) ---- */

/* Create DIR/perfvar/records/ and open the rank's definitions file (truncated). 0, or -1 and errno. */
int pv_rec_defs_open(const char *dir, uint32_t rank);
/* Append one line: printf-style, fmt one of defs_lines.h's PV_DEFS_<KIND>, '\n' added. Tabs and
 * newlines in string arguments must have been replaced (pv_rec_defs_clean). 0 or -1. */
int pv_rec_defs_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Copy src into dst (len bytes) with tabs and newlines made spaces. */
void pv_rec_defs_clean(char *dst, size_t len, const char *src);
void pv_rec_defs_close(void);

/* Remove rank's records (its threads' records files, then its definitions file) from
 * DIR/perfvar/records, once they are no longer needed: the archive holds them whole. Files already
 * absent are no error. 0, or -1 (errno) when a file could not be removed. Not to be called while
 * the rank records (after pv_rec_close of every stream and pv_rec_defs_close). */
int pv_rec_remove_rank(const char *dir, uint32_t rank);

#endif
