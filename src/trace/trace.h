/*
 * trace.h — the OTF2 trace writer (internal). No MPI here: collective steps go through the
 * pv_trace_comm callbacks the MPI layer supplies (as OTF2 itself keeps MPI out of its core).
 *
 * One OTF2 location per traced thread of a process, all in the rank's location group: location k of
 * a rank is created by pv_trace_location(k) (k = 0: the thread that started tracing, location id =
 * rank; k > 0: id = (k << 32) | rank, Score-P's numbering). Timestamps are clock ticks; on each
 * location a timestamp smaller than the previous one is raised to it and counted (OTF2 would drop the
 * event). Events are buffered by OTF2 per location in 1 MiB chunks (smaller beyond 4096 ranks,
 * down to 256 KiB: trace_writer.c), at most `buffer_mb` MiB per location, then flushed to disk.
 * Every failed write is counted as lost and reported by pv_trace_close.
 *
 * Thread-safety: a location's event functions (pv_trace_enter ... pv_trace_collective_end) must be
 * called by one thread at a time, normally the thread it was created for (OTF2 event writers are not
 * thread-safe); different locations may be written concurrently. pv_trace_location and
 * pv_trace_region_define are thread-safe. pv_trace_open and pv_trace_close are not: close must run
 * after every other thread's last event call (the application's threads have joined, as MPI requires
 * of them before MPI_Finalize), and writes every location's buffer.
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

/* Where a rank ran in its host, for the system tree (machine > node > socket > core): its socket
 * (package) and core (the OS's numbers, src/topology), each -1 where its CPUs span several or it is
 * not known. Its location group hangs under the deepest level known. */
typedef struct pv_trace_place {
    int package, core;
} pv_trace_place;

typedef struct pv_trace_stats {
    uint64_t events_written, events_lost, timestamps_raised;
    uint64_t flushes; /* event buffer written to disk because it was full (not the final write) */
} pv_trace_stats;

/* One location (a thread's event stream); opaque. */
typedef struct pv_trace_loc pv_trace_loc;

/* Open DIR/traces.otf2 (collective). The static regions get the global ids 0..nstatic-1 on every rank.
 * Returns 0 or a negative PERFVAR_ERR_* (then nothing else may be called). */
int pv_trace_open(const char *dir, unsigned buffer_mb, const pv_static_region *regions, int nstatic,
                  const pv_trace_comm *comm);

/* The first error OTF2 reported while the last pv_trace_open ran, in words ("" if none); OTF2 does
 * not print it then, so the caller's one message can say it. Not thread-safe, like pv_trace_open. */
const char *pv_trace_open_error(void);

/* Create location `thread` of this rank (each index once; 0 first). Thread-safe. NULL on failure
 * (out of memory, OTF2 error). */
pv_trace_loc *pv_trace_location(uint32_t thread);

/* Define a region of this rank, identified across ranks by its canonical name; returns its local id
 * (dense after the static ones, shared by all locations of the rank), or UINT32_MAX when out of
 * memory. Thread-safe. */
uint32_t pv_trace_region_define(const char *canonical, const char *display, OTF2_RegionRole role,
                                OTF2_Paradigm paradigm);

/* Define a communicator of this rank other than MPI_COMM_WORLD by its members' ranks in
 * MPI_COMM_WORLD (in its own rank order); returns its local id (> 0; MPI_COMM_WORLD is 0), or
 * UINT32_MAX when out of memory. Communicators with the same members on the ranks that define them
 * become one communicator of the trace. Thread-safe. */
uint32_t pv_trace_comm_define(const uint32_t *world_ranks, uint32_t n);

/* The counters this rank's locations record (PERFVAR_METRICS), in the order of pv_trace_metric's
 * values: PAPI event name, unit ("" for a count, "ns" for nanoseconds) and description of each.
 * They are the rank's one metric class; ranks with the same counters share one in the trace, and
 * each counter (by name) is one MetricMember whatever rank records it. Call once, before any
 * pv_trace_metric; n 0: none. 0, or -1 out of memory. Not thread-safe. */
#define PV_TRACE_METRICS_MAX 16 /* counters a rank records at most */
int pv_trace_metrics_define(int n, const char *const *names, const char *const *units,
                            const char *const *descriptions);

/* A Metric event on location l at t: the running totals of the rank's counters since the thread
 * started counting (OTF2_METRIC_ACCUMULATED_START, as Score-P writes PAPI counters), one per
 * counter pv_trace_metrics_define gave. */
void pv_trace_metric(pv_trace_loc *l, uint64_t t, const uint64_t *totals);

/* Events on location l. region: a rank-local region id (static or pv_trace_region_define's); the
 * event file numbers the regions a location uses in the order it first uses them (small ids are
 * the shortest in OTF2's compressed integers), and its mapping table gives their global ids.
 * cpu: the CPU of the clock read the event stands for (-1: unknown), or PV_TRACE_NO_CPU for an
 * event that stands for none (MPI regions). The `cpu` attribute is written only where it differs
 * from the last one written on the location (docs/trace-format.md: readers carry it forward), so
 * a thread that stays on its CPU pays it once. comm: a local communicator id (0 =
 * MPI_COMM_WORLD); peer and root are ranks in that communicator. */
#define PV_TRACE_NO_CPU (-2)
void pv_trace_enter(pv_trace_loc *l, uint64_t t, uint32_t region, int cpu);
void pv_trace_leave(pv_trace_loc *l, uint64_t t, uint32_t region, int cpu);
void pv_trace_send(pv_trace_loc *l, uint64_t t, uint32_t comm, uint32_t peer, uint32_t tag,
                   uint64_t bytes);
void pv_trace_recv(pv_trace_loc *l, uint64_t t, uint32_t comm, uint32_t peer, uint32_t tag,
                   uint64_t bytes);
void pv_trace_collective_begin(pv_trace_loc *l, uint64_t t);
/* Non-blocking operations, tied to their completion by a request id unique among the rank's
 * pending requests: Isend ... its completion; the receive request ... the completed receive; the
 * non-blocking collective's request ... its completion. */
void pv_trace_isend(pv_trace_loc *l, uint64_t t, uint32_t comm, uint32_t peer, uint32_t tag,
                    uint64_t bytes, uint64_t id);
void pv_trace_isend_complete(pv_trace_loc *l, uint64_t t, uint64_t id);
void pv_trace_irecv_request(pv_trace_loc *l, uint64_t t, uint64_t id);
void pv_trace_irecv(pv_trace_loc *l, uint64_t t, uint32_t comm, uint32_t peer, uint32_t tag,
                    uint64_t bytes, uint64_t id);
void pv_trace_icollective_request(pv_trace_loc *l, uint64_t t, uint64_t id);
void pv_trace_icollective_complete(pv_trace_loc *l, uint64_t t, uint32_t comm,
                                   OTF2_CollectiveOp op, uint32_t root, uint64_t sent,
                                   uint64_t received, uint64_t id);
void pv_trace_collective_end(pv_trace_loc *l, uint64_t t, uint32_t comm, OTF2_CollectiveOp op,
                             uint32_t root, uint64_t sent, uint64_t received);

/* Unify definitions, write global (rank 0) and local definitions of every location, close the
 * archive (collective). hz: timer resolution of the trace (rank 0's value is used); host: this rank's
 * host name; place: where it ran in it; realtime_ns / realtime_ticks: a CLOCK_REALTIME reading paired with a clock reading
 * (rank 0's used). Fills *stats with the sums over this rank's locations. Returns 0 or a negative
 * PERFVAR_ERR_*. */
int pv_trace_close(double hz, const char *host, const pv_trace_place *place,
                   const pv_trace_clock_sync *sync, uint64_t realtime_ns, uint64_t realtime_ticks,
                   pv_trace_stats *stats);

/* After pv_trace_close: location l's OTF2 id and its own statistics. */
void pv_trace_location_info(const pv_trace_loc *l, uint64_t *id, pv_trace_stats *stats);

#endif
