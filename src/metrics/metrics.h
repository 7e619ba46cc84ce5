/*
 * metrics.h — counters per compute segment through PAPI (PERFVAR_METRICS; internal, MPI-free).
 *
 * The process chooses its events once (pv_metrics_init): those of PERFVAR_METRICS, or by default the
 * kernel's software events PV_METRICS_DEFAULT, keeping each one PAPI can open on this machine; an
 * event that cannot be opened is named, with PAPI's reason, in one line the caller prints (not for
 * the default events, which are only the ones the machine has). Every traced thread then counts them
 * in its own event set (pv_metrics_thread_start), and its calls read them when the compute segment
 * they end lasted at least PERFVAR_METRICS_MIN_US: PAPI_read gives totals since the start, the
 * thread keeps the last ones and hands back deltas, so a segment too short to be read leaves its
 * counts to the next read's interval and no count is lost.
 *
 * Units: what each PAPI event counts (events, or ns for perf::TASK-CLOCK), as 64-bit deltas. Costs:
 * pv_metrics_read is one PAPI_read (about 1.3 us for the four default software events on a 2-vCPU
 * KVM guest: tests/bench/bench_metrics_read.c measures it), everything else is start-up work.
 *
 * Built without PAPI (PERFVAR_HAVE_PAPI undefined) every function exists and opens nothing.
 *
 * Thread-safety: pv_metrics_init once, before any thread starts counting (not thread-safe);
 * pv_metrics_count / _name / _unit / _description afterwards from any thread (read-only state); a
 * pv_metrics_thread is used by its own thread only. None is async-signal-safe.
 */
#ifndef PV_METRICS_H
#define PV_METRICS_H
#include <stddef.h>
#include <stdint.h>

#define PV_METRICS_MAX 8          /* events one process counts at most */
#define PV_METRICS_NAME_MAX 64    /* bytes of an event name, with its terminating 0 */
/* The default set: the kernel's software events, which PAPI's perf_event component opens without
 * a PMU (virtual machines included) where perf_event_paranoid allows counting one's own threads. */
#define PV_METRICS_DEFAULT "perf::TASK-CLOCK,perf::CONTEXT-SWITCHES,perf::CPU-MIGRATIONS,perf::PAGE-FAULTS"

/* Choose the process's events. spec: a comma list of PAPI event names (presets and native), NULL for
 * the default set, "none" for none. why (len bytes) receives one line naming each event that could
 * not be opened and PAPI's reason (empty when all opened, or when spec is NULL: the default set
 * keeps what the machine has); also when PAPI itself cannot start. Returns the number of events
 * kept, 0..PV_METRICS_MAX. */
int pv_metrics_init(const char *spec, char *why, size_t len);

/* The events kept by pv_metrics_init, i in 0..pv_metrics_count()-1: PAPI's name, its unit ("" when
 * PAPI gives none: a count) and its description. */
int pv_metrics_count(void);
const char *pv_metrics_name(int i);
const char *pv_metrics_unit(int i);
const char *pv_metrics_description(int i);

/* One thread's counters: its PAPI event set and the totals of its last read. */
typedef struct pv_metrics_thread {
    int eventset;                   /* PAPI's; -1: not counting */
    long long last[PV_METRICS_MAX]; /* totals at the last read */
} pv_metrics_thread;

/* Start counting the process's events on the calling thread. 0, or -1 (no events, or PAPI refused:
 * m->eventset stays -1 and pv_metrics_read returns 0). */
int pv_metrics_thread_start(pv_metrics_thread *m);

/* Read the calling thread's counters: delta[i] = what event i counted since the previous read (or
 * since pv_metrics_thread_start). Returns the number of values, 0 when the thread is not counting or
 * the read failed (then the counts go to the next read's interval). */
int pv_metrics_read(pv_metrics_thread *m, uint64_t delta[PV_METRICS_MAX]);

/* Stop counting on the calling thread and free its event set. */
void pv_metrics_thread_stop(pv_metrics_thread *m);

#endif
