/*
 * trace.h — the OTF2 trace writer (internal). No MPI here: collective steps go through the
 * pv_trace_comm callbacks the MPI layer supplies (as OTF2 itself keeps MPI out of its core).
 *
 * One process = one OTF2 location (id = rank), written by the thread that opened the trace; all event
 * functions must be called from that thread (they are not thread-safe). Timestamps are clock ticks;
 * a timestamp smaller than the previous one is raised to it and counted (OTF2 would drop the event).
 * Events are buffered by OTF2 in 1 MiB chunks, at most `buffer_mb` MiB, then flushed to disk.
 * Every failed write is counted as lost and reported by pv_trace_close.
 */
#ifndef PV_TRACE_H
#define PV_TRACE_H
#include <otf2/otf2.h>
#include <stdint.h>

typedef struct pv_trace_comm {
    void *ctx;
    int rank, size;
    /* Gather nbytes from every rank to rank 0: rank 0 gets a malloc'd concatenation in *all and a
     * malloc'd per-rank byte count array in *counts (both NULL on other ranks). 0 on success. */
    int (*gatherv)(void *ctx, const void *buf, int nbytes, char **all, int **counts);
    /* Rank 0 sends counts[r] bytes of `all` (concatenated) to each rank r; each receives nbytes. */
    int (*scatterv)(void *ctx, const char *all, const int *counts, void *buf, int nbytes);
    /* Element-wise reduction over all ranks of n uint64: op 0 = min, 1 = max. */
    int (*allreduce_u64)(void *ctx, uint64_t *vals, int n, int op);
    /* Install OTF2 collective callbacks on the archive. */
    int (*set_otf2_collectives)(void *ctx, OTF2_Archive *archive);
} pv_trace_comm;

typedef struct pv_static_region {
    const char *name;
    OTF2_RegionRole role;
    OTF2_Paradigm paradigm;
} pv_static_region;

/* Clock correction of this rank to rank 0's clock: global = local + offset (ticks), measured at
 * two local times. */
typedef struct pv_trace_clock_sync {
    uint64_t t_begin, t_end;
    int64_t offset_begin, offset_end;
    double stddev_begin, stddev_end; /* ticks */
} pv_trace_clock_sync;

typedef struct pv_trace_stats {
    uint64_t events_written, events_lost, timestamps_raised;
    uint64_t flushes; /* event buffer written to disk because it was full (not the final write) */
} pv_trace_stats;

/* Open DIR/traces.otf2 (collective). The static regions get the global ids 0..nstatic-1 on every rank.
 * Returns 0 or a negative PERFVAR_ERR_* (then nothing else may be called). */
int pv_trace_open(const char *dir, unsigned buffer_mb, const pv_static_region *regions, int nstatic,
                  const pv_trace_comm *comm);

/* Define a region of this rank, identified across ranks by its canonical name; returns its local id
 * (dense after the static ones), or UINT32_MAX when out of memory. */
uint32_t pv_trace_region_define(const char *canonical, const char *display, OTF2_RegionRole role,
                                OTF2_Paradigm paradigm);

/* Events. cpu < 0: no `cpu` attribute. peer/root are ranks in MPI_COMM_WORLD (the trace's comm 0). */
void pv_trace_enter(uint64_t t, uint32_t region, int cpu);
void pv_trace_leave(uint64_t t, uint32_t region, int cpu);
void pv_trace_send(uint64_t t, uint32_t peer, uint32_t tag, uint64_t bytes);
void pv_trace_recv(uint64_t t, uint32_t peer, uint32_t tag, uint64_t bytes);
void pv_trace_collective_begin(uint64_t t);
void pv_trace_collective_end(uint64_t t, OTF2_CollectiveOp op, uint32_t root, uint64_t sent,
                             uint64_t received);

/* Unify definitions, write global (rank 0) and local definitions, close the archive (collective).
 * hz: timer resolution of the trace (rank 0's value is used); host: this rank's host name;
 * realtime_ns / realtime_ticks: a CLOCK_REALTIME reading paired with a clock reading (rank 0's used).
 * Fills *stats. Returns 0 or a negative PERFVAR_ERR_*. */
int pv_trace_close(double hz, const char *host, const pv_trace_clock_sync *sync, uint64_t realtime_ns,
                   uint64_t realtime_ticks, pv_trace_stats *stats);

#endif
