/*
 * replay.h — reading a records file back, one call at a time (internal; MPI-free). Format: records.h.
 *
 * The reader maps the file read-only and decodes each CALL with its units into absolute ticks,
 * resolved facts and completions. It stops at the first PV_REC_END unit (a thread that died leaves
 * the rest of its file zero) or at the end of the file. What it has read is given back to the
 * kernel as it goes, so reading a file of any size keeps a few MiB resident. Not thread-safe: one
 * reader per thread.
 */
#ifndef PV_REPLAY_H
#define PV_REPLAY_H
#include <stddef.h>
#include <stdint.h>

#include "recorder.h"

typedef struct pv_rec_completion {
    uint64_t handle;        /* the request's handle before the call (records.h) */
    int has_status;
    pv_rec_fact_def status; /* a PV_REC_FACT_STATUS */
} pv_rec_completion;

typedef struct pv_rec_inner_span {
    uint16_t kind;          /* PV_REC_PROBE or PV_REC_NESTED */
    uint16_t region;        /* NESTED: static region id */
    uint64_t t0, t1;
    int cpu0, cpu1;         /* -1: unknown */
} pv_rec_inner_span;

typedef struct pv_rec_call {
    uint32_t site;          /* site id (the tag minus one) */
    uint64_t t_entry, t_exit; /* ticks; t_exit = t_entry when open */
    int open;               /* the call had not returned when the records end */
    int cpu_in, cpu_out;    /* -1: unknown */
    uint64_t request_id;    /* 0 unless the call started a request: PV_REC_REQUEST_ID */
    uint64_t request_handle; /* then its handle */
    int has_x, has_y;
    pv_rec_fact_def x, y;   /* the call's facts */
    int ninner;
    pv_rec_inner_span inner[4];
    size_t ncompleted;
    pv_rec_completion *completed; /* owned by the reader, valid until the next call */
    int nmetrics;           /* counter deltas read at the call's entry (METRIC unit); 0: none */
    uint64_t metric_since;  /* entry ticks of the call of the previous read (or the counting start) */
    uint64_t metrics[PV_REC_METRIC_MAX];
} pv_rec_call;

typedef struct pv_rec_reader {
    pv_rec_header header;   /* a copy */
    const pv_rec_unit *units, *end, *at;
    void *map;
    size_t map_bytes;
    uint64_t last_exit, requests;
    uint64_t next_entry;    /* from a TIME unit, 0 if none pending */
    pv_rec_fact_def facts[PV_REC_FACT_SLOTS];
    uint64_t fact_used[PV_REC_FACT_SLOTS / 64];
    pv_rec_completion *completed;
    size_t completed_cap;
    const char *dropped;    /* the mapping before this was given back (MADV_DONTNEED) */
} pv_rec_reader;

/* Open path; 0, or -1 with a reason in why (len bytes) when it is not a records file. */
int pv_rec_reader_open(pv_rec_reader *r, const char *path, char *why, size_t len);
/* The next call: 1, or 0 at the end of the records. */
int pv_rec_reader_next(pv_rec_reader *r, pv_rec_call *c);
void pv_rec_reader_close(pv_rec_reader *r);

#endif
