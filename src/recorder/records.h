/*
 * records.h — perfvar's record format: what one traced thread leaves on disk (internal; read back by
 * replay.h; tests/bench/bench_recorder.py reads the header and the end of the data).
 *
 * One file per traced thread, DIR/perfvar/records/rank-<R>.thread-<T>.pvr: a 4096-byte header page
 * (pv_rec_header), then 16-byte units, little-endian, written in order by that thread alone. Units
 * are grouped: a CALL unit, then the units that belong to it (SPAN64, PROBE, NESTED, CPU_OUT,
 * FACT, REQUEST, COMPLETE, METRIC), then the next TIME or CALL unit. A unit whose tag is 0 ends the data (the file is
 * extended ahead of the writer and reads as zeros), so a reader finds the end of a thread that died
 * without any count having been written. Ticks are the rank's clock (perfvar_clock.h).
 *
 * A traced MPI call (or user timer start/stop) is one CALL unit: its entry read ends the thread's
 * compute segment, its exit read starts the next one, so the segment is implied by the previous
 * call's exit and this call's entry and is never written.
 *
 * Message facts (communicator, peer, tag, bytes) are written once per thread and referred to: a
 * FACT unit pair defines slot s of the thread's facts table (PV_REC_FACT_SLOTS slots, replaced when
 * a different fact hashes to the same slot), and CALL / COMPLETE units carry slot numbers. A reader
 * replays the FACT units in order to know what each reference means at that point: a COMPLETE's
 * slot where the COMPLETE unit stands, a CALL's x and y after the call's last unit (a writer never
 * replaces the slots the open CALL refers to).
 *
 * What a CALL's facts mean depends on its region's event role (PV_REC_EV_*, given per region in the
 * definitions file): where the message or collective events go, at the call's entry or its exit.
 *
 * Counters (PERFVAR_METRICS, src/metrics) are read at the entry of a call whose compute segment
 * lasted at least PERFVAR_METRICS_MIN_US, right after its entry read: a METRIC unit follows the CALL
 * with the number n of values and the entry ticks of the call at which the previous read was made
 * (the first read: the ticks at which the thread started counting), then ceil(n / 2) raw units of
 * two uint64 deltas each, in the order of the rank's `metric` definitions: what each event counted
 * from the previous read to this one, so the interval a delta covers runs from that call's entry
 * (its segment's end) to this call's entry.
 *
 * Requests are matched by their MPI handle, when the records are read, not while they are made: a
 * call that starts a non-blocking operation (Isend, Irecv, Imrecv, I-collectives) is followed by a
 * REQUEST unit with the handle it returned, and is the operation's start for the thread's n-th
 * REQUEST unit (id PV_REC_REQUEST_ID(thread, n), n from 1); a Wait/Test that completes a request
 * writes a COMPLETE unit with the handle as it was before the call. The start's facts (its call's x)
 * say what the operation was; the completion adds what only the status knows (source, tag, size).
 * A reader goes through the threads of a rank in time order, starts at their call's exit and
 * completions at their call's entry, and pairs each completion with the latest start of the same
 * handle: MPI hands a handle out again only once the request it named is complete, so an operation
 * may also complete on another thread. A handle no start is pending for (a request started
 * untraced) is left out.
 */
#ifndef PV_RECORDS_H
#define PV_RECORDS_H
#include <stdint.h>

#define PV_REC_MAGIC "PVREC01\n"
#define PV_REC_VERSION 2u
#define PV_REC_HEADER_BYTES 4096u
#define PV_REC_UNIT_BYTES 16u

/* tag: CALL units carry site + 1 (1 .. PV_REC_MAX_SITE + 1); the kinds below are the rest. */
#define PV_REC_END 0x0000u      /* no unit: the data ends here */
#define PV_REC_MAX_SITE 0xFEFEu
#define PV_REC_TIME 0xFFFFu     /* ab = the absolute entry ticks of the next CALL (its gap is 0) */
#define PV_REC_SPAN64 0xFFFEu   /* ab = the real span of the CALL before (its b is 0xFFFFFFFE) */
#define PV_REC_PROBE 0xFFFDu    /* a fixed-work probe run at the CALL's entry: a = ticks from entry to
                                   the probe's start, b = its length, cpu = CPU at its start, x = at its
                                   end. The call's region starts where the probe ends. */
#define PV_REC_NESTED 0xFFFCu   /* static region x inside the CALL (the calibration inside MPI_Init):
                                   a = ticks from entry to its start, b = its length */
#define PV_REC_CPU_OUT 0xFFFBu  /* cpu = the CPU at the CALL's exit, where it differs from its entry */
#define PV_REC_FACT 0xFFFAu     /* first unit of a fact definition; the second unit is raw */
#define PV_REC_COMPLETE 0xFFF9u /* ab = the handle of a request the CALL completed (as it was before the
                                   call); x = a STATUS fact of its status, 0 where none was decoded */
#define PV_REC_SKIP 0xFFF8u     /* a = number of units after this one to skip (end of a window) */
#define PV_REC_REQUEST 0xFFF7u  /* ab = the handle of the request the CALL started */
#define PV_REC_METRIC 0xFFF6u   /* counter deltas read at the CALL's entry: ab = entry ticks of the
                                   previous read's CALL, x = n values; ceil(n / 2) raw units follow */
#define PV_REC_MIN_KIND 0xFFF6u
#define PV_REC_METRIC_MAX 16u   /* values a METRIC unit carries at most (a reader's bound) */

/* CALL unit fields. b while the call has not returned: */
#define PV_REC_SPAN_OPEN 0xFFFFFFFFu
#define PV_REC_SPAN_WIDE 0xFFFFFFFEu /* the span follows in a SPAN64 unit */
#define PV_REC_GAP_MAX 0xFFFFFFFFu   /* larger gaps are written as a TIME unit before the CALL */
/* cpu field: bits 0..11 the CPU at entry (PV_REC_CPU_UNKNOWN: not known). */
#define PV_REC_CPU_MASK 0x0FFFu
#define PV_REC_CPU_UNKNOWN 0x0FFFu

/* Fact slots: 1 .. PV_REC_FACT_SLOTS - 1 (0 = no fact). */
#define PV_REC_FACT_SLOTS 4096u
/* Fact kinds (first FACT unit, x & 0xff); op = x >> 8 (OTF2_CollectiveOp, collectives). */
#define PV_REC_FACT_MSG 1u  /* a = peer, b = tag, y = comm; second unit: bytes, 0 */
#define PV_REC_FACT_COLL 2u /* a = root (0xFFFFFFFF: none), b = 0, y = comm; second: sent, received */
#define PV_REC_FACT_STATUS 3u /* a completed receive's status: a = source, b = tag, y = 0; second: bytes,
                                 1 if the size was not known (then 0) */

/* Event roles of a region (definitions file): which events a CALL of it stands for. */
#define PV_REC_EV_NONE 0u     /* no message events */
#define PV_REC_EV_SEND 1u     /* x: a message sent at entry */
#define PV_REC_EV_ISEND 2u    /* with a request: x sent at entry as that request */
#define PV_REC_EV_RECV 3u     /* x: a message received at exit */
#define PV_REC_EV_SENDRECV 4u /* x sent at entry, y received at exit */
#define PV_REC_EV_IRECV 5u    /* with a request: a receive request posted at exit; x = the receive as
                                 posted (source and tag may be MPI_ANY_*: negative) */
#define PV_REC_EV_COLL 6u     /* x (a COLL fact): a collective from entry to exit */
#define PV_REC_EV_ICOLL 7u    /* with a request: a non-blocking collective requested at entry; x (a
                                 COLL fact) what it moves, recorded at its completion */

#define PV_REC_REQUEST_ID(thread, n) (((uint64_t)(thread) + 1) << 40 | (uint64_t)(n))

typedef struct pv_rec_unit {
    uint32_t a, b;  /* CALL: a = gap ticks since the previous CALL's exit, b = span ticks */
    uint16_t tag;   /* site + 1, or a kind */
    uint16_t cpu;   /* CALL: see PV_REC_CPU_* */
    uint16_t x, y;  /* CALL: fact of the call (send side, receive, collective), and the receive side
                       of a Sendrecv; 0 = none */
} pv_rec_unit;

/* How a thread's records ended (pv_rec_header.state). */
#define PV_REC_RUNNING 0u /* still running, or the process died without a word (kill -9, crash) */
#define PV_REC_CLOSED 1u  /* closed at MPI_Finalize */
#define PV_REC_SIGNAL 2u  /* a fatal signal arrived (header.signal) at header.t_end */
#define PV_REC_FAILED 3u  /* recording stopped: the file could not grow (header.lost_units lost) */

/* Who sent the signal that ended a thread (pv_rec_header.sender). A launcher (mpiexec, its proxy,
 * the batch system's step daemon) is the ranks' parent process, and takes the other ranks down when
 * one dies: a signal from the parent is a consequence, one from elsewhere or a fault is a cause. */
#define PV_REC_SENT_UNKNOWN 0u /* not known */
#define PV_REC_SENT_PARENT 1u  /* sent by the process's parent: its launcher */
#define PV_REC_SENT_OTHER 2u   /* sent by another process (a user, a batch system, the process itself) */
#define PV_REC_SENT_FAULT 3u   /* made by the kernel for a fault of the process (SIGSEGV, SIGBUS...) */

typedef struct pv_rec_header {
    char magic[8];
    uint32_t version, unit_bytes;
    uint32_t rank, thread;
    uint32_t state;      /* PV_REC_*; written last on close, by the signal handler, or on failure */
    int32_t signal;
    uint64_t t_end;      /* ticks: when it was closed or the signal arrived */
    uint64_t units;      /* units written (valid once closed; otherwise read up to PV_REC_END) */
    uint64_t lost_units; /* units not written because the file could not grow */
    uint64_t windows;    /* times the mapped window moved on (a full buffer written out) */
    uint64_t window_ns;  /* time spent moving it, ns */
    uint32_t sender;     /* state PV_REC_SIGNAL: who sent the signal (PV_REC_SENT_*) */
} pv_rec_header;

_Static_assert(sizeof(pv_rec_unit) == PV_REC_UNIT_BYTES, "a record unit is 16 bytes");
_Static_assert(sizeof(pv_rec_header) <= PV_REC_HEADER_BYTES, "the header fits its page");

#endif
