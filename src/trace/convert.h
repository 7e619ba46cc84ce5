/*
 * convert.h — one rank's records into the OTF2 archive (internal; MPI-free).
 *
 * The recorder leaves, per rank, a definitions file and one records file per traced thread
 * (src/recorder/records.h, recorder.h). pv_convert_rank reads them back and writes the rank's part
 * of DIR/traces.otf2 through the trace writer (trace.h): per call, the compute segment that the
 * previous call's exit and this call's entry imply (a region named by the two call sites, with the
 * CPU at either end: the `cpu` attribute where it changed), the fixed-work probe if one ran, the
 * MPI or user region and the message and collective events the call's facts stand for; where the
 * call read the counters (PERFVAR_METRICS), a Metric event of their running totals at its entry,
 * after the segment's Leave (and one of zeros at the thread's first call, where they started). It runs at
 * MPI_Finalize with the job's communicator, and after a job died from `perfvar-recover` with a
 * forked one (comm_fork.h).
 *
 * A thread whose records end inside a call (it died there) gets that call's region closed at the
 * last time known of it (the fatal signal's, else the call's entry), and its user regions still open
 * closed there too, so the trace stays well nested.
 *
 * Not thread-safe (the trace writer's open/close are not); collective over comm like pv_trace_open.
 */
#ifndef PV_CONVERT_H
#define PV_CONVERT_H
#include <stdint.h>

#include "trace.h"

#define PV_CONVERT_MAX_CPUS 4096

/* How one traced thread's records ended and what they held. */
typedef struct pv_convert_thread {
    uint32_t thread;
    uint64_t location;       /* its OTF2 location id */
    uint64_t calls;          /* traced calls (and user timer starts/stops) recorded */
    uint64_t segments;       /* compute segments written */
    uint64_t probes, probe_ticks; /* fixed-work probes and the ticks they measured */
    uint64_t metric_reads;   /* counter reads (PERFVAR_METRICS) written as Metric events */
    uint64_t events;         /* OTF2 events written on its location */
    uint32_t state;          /* PV_REC_RUNNING / CLOSED / SIGNAL / FAILED (records.h) */
    int signal;              /* state SIGNAL: which */
    uint32_t sender;         /* state SIGNAL: who sent it (PV_REC_SENT_*) */
    int ended_in_call;       /* its last call had not returned */
    uint64_t t_last;         /* ticks: the last time its records know of */
    uint64_t silence_recent; /* ticks: the longest it went without a record in its last few
                                thousand: a thread that died without a word ended within about
                                this much after t_last */
    uint64_t lost_units;     /* units it could not record (full disk) */
    uint64_t windows, window_ns; /* buffer moves on, and the time they took (ns) */
} pv_convert_thread;

typedef struct pv_convert_result {
    int nthreads;
    pv_convert_thread *threads;   /* malloc'd, thread order; pv_convert_free */
    unsigned char cpus_seen[PV_CONVERT_MAX_CPUS / 8];
    pv_trace_stats stats;         /* sums over the rank's locations */
    double hz;                    /* the records' clock (definitions file) */
    uint64_t t_start;             /* ticks: the rank's start, paired with */
    uint64_t realtime_ns;         /* CLOCK_REALTIME then (ns since the epoch) */
} pv_convert_result;

/* Convert rank `rank` of DIR (its records under DIR/perfvar/records) into DIR/traces.otf2, buffering
 * at most buffer_mb MiB per location. Collective over comm (every rank of the job calls it, with the
 * same static regions in its definitions file). Returns 0 or a negative PERFVAR_ERR_*; a reason in
 * why (len bytes) when it fails. *out is filled in either case as far as it got. */
int pv_convert_rank(const char *dir, int rank, const pv_trace_comm *comm, unsigned buffer_mb,
                    pv_convert_result *out, char *why, size_t len);
void pv_convert_free(pv_convert_result *r);

#endif
