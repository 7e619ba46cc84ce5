/*
 * read.h — the trace reader's event loop in C: compute-segment and probe samples of a perfvar OTF2
 * archive, for postproc/perfvar/reader_native.py (ctypes). No MPI, no libperfvar: only OTF2.
 *
 * What it reads is specified by postproc/perfvar/reader_otf2.py (the Python reader it speeds up
 * and must match record for record): per location, Enter/Leave are matched with a stack; a matched
 * pair of a segment region gives one sample, of the probe region one probe row, of a
 * perfvar:user region a count; a Metric event of a class the caller named (counter totals,
 * PERFVAR_METRICS) gives one metric row of the deltas since the location's previous one, for the
 * segments that ended in between. The caller classifies the regions and metric classes (from the
 * global definitions it has read) and says which attribute is the CPU; this code only walks
 * events.
 *
 * Units: timestamps and durations in timer ticks as OTF2 stores them (after the clock offsets of
 * the location's local definitions); duration_ns = ticks * ns_per_tick as the caller gives it;
 * context bytes in bytes (-1 = no MPI record since the previous segment); CPU numbers (-1 =
 * unknown).
 *
 * Thread-safety: one perfvar_read handle must be used by one thread at a time (OTF2 readers are
 * not thread-safe); distinct handles may be used concurrently. No function is async-signal-safe.
 * OTF2 prints its own error messages on stderr (file descriptor 2); the caller captures them.
 *
 * Every function returns PERFVAR_OK (0) or a negative PERFVAR_ERR_* (include/perfvar.h); an OTF2
 * failure is returned through the otf2_status outputs as OTF2's own error code.
 */
#ifndef PERFVAR_READ_H
#define PERFVAR_READ_H

#include <stddef.h>
#include <stdint.h>

/* Region kinds, as perfvar_read_open takes them: >= 0 is a segment index. */
#define PERFVAR_READ_REGION_OTHER (-1) /* MPI and anything else: only stacked */
#define PERFVAR_READ_REGION_USER (-2)  /* perfvar:user:..., counted */
#define PERFVAR_READ_REGION_PROBE (-3) /* perfvar:probe, one probe row per pair */

/* The structs below are also in src/spec/contracts.py, from which the Python side's ctypes and
 * numpy copies are made: layout.c does not compile when one here is laid out otherwise. */

/* One segment sample, laid out as reader_otf2.SAMPLE_DTYPE (packed, 44 bytes). */
typedef struct __attribute__((packed)) perfvar_read_sample {
    int32_t segment;
    int32_t rank;
    int32_t thread;
    uint64_t start_ticks;
    double duration_ns;
    int32_t cpu_enter;
    int32_t cpu_leave;
    int64_t context_bytes;
} perfvar_read_sample;

/* One probe row, laid out as reader_otf2.PROBE_DTYPE (packed, 28 bytes). */
typedef struct __attribute__((packed)) perfvar_read_probe {
    int32_t rank;
    int32_t thread;
    uint64_t start_ticks;
    double duration_ns;
    int32_t cpu;
} perfvar_read_probe;

/* One counter read, laid out as reader_otf2.METRIC_DTYPE (packed, 168 bytes): the counters' totals
 * at a Metric event minus those at the location's previous one, covering its segments FIRST ..
 * SAMPLE (indexes among the location's own samples, in reading order; SAMPLE is the segment whose
 * end the event follows). A location's first Metric event (the counters' start) and one after
 * which no segment ended (its counts are left to the next) give no row. */
#define PERFVAR_READ_METRICS_MAX 16 /* counter columns at most */
typedef struct __attribute__((packed)) perfvar_read_metric {
    int32_t rank;
    int32_t thread;
    int64_t sample;
    int64_t first;
    uint64_t time_ticks;  /* the Metric event's timestamp */
    uint64_t since_ticks; /* the previous one's: the interval's start */
    double values[PERFVAR_READ_METRICS_MAX]; /* the delta of each counter column, NaN for columns
                                                 the event's class does not have */
} perfvar_read_metric;

/* What reading one location's events gave. Its rows are appended to the handle's arrays (rows
 * FIRST_SAMPLE .. FIRST_SAMPLE + NSAMPLES - 1, and likewise the probes), which perfvar_read_take
 * hands over once every location is read: one array per kind for the whole read, no copy. */
typedef struct perfvar_read_result {
    int evt_reader; /* 1 if OTF2 gave an event reader for the location, 0 if not (then nothing else
                       is set) */
    int otf2_status;     /* OTF2_ErrorCode of OTF2_Reader_ReadAllLocalEvents, 0 = success */
    int out_of_memory;   /* 1 if a sample could not be stored (samples are then incomplete) */
    uint64_t events_read; /* events OTF2 delivered, whatever it returned */
    int64_t user_regions;     /* matched perfvar:user pairs */
    int64_t unclosed;         /* Enters left behind when a Leave unwound the stack past them */
    int64_t unmatched_leaves; /* Leaves without an Enter on the stack */
    int64_t open_at_end;      /* Enters still on the stack when the events ended */
    int64_t first_sample; /* index of the location's first sample in the handle's array */
    int64_t nsamples;
    int64_t first_probe;
    int64_t nprobes;
    int overrun; /* 1 if an event came past the count the definitions announce: OTF2 was decoding a
                    buffer it did not fill (a file cut inside a chunk); the read stopped there and
                    nothing else in the result may be trusted */
    int64_t first_metric; /* the location's metric rows, as its samples */
    int64_t nmetrics;
} perfvar_read_result;

typedef struct perfvar_read perfvar_read; /* one open archive */

/* Open the archive ANCHOR (DIR/traces.otf2) for reading the events of the NLOCATIONS locations
 * LOCATIONS (OTF2 location ids). REGION_REFS[i] has kind REGION_KINDS[i] (see above); regions not
 * listed are PERFVAR_READ_REGION_OTHER. CPU_ATTR_TYPE is the OTF2_Type of the attribute named
 * "cpu", or 0 (OTF2_TYPE_NONE) when there is none, CPU_ATTR_REF its reference. NS_PER_TICK: 1e9 /
 * the timer resolution. On success *OUT is the handle. Errors: PERFVAR_ERR_INVALID_ARG,
 * PERFVAR_ERR_NO_MEMORY, PERFVAR_ERR_IO when OTF2 failed (*OTF2_STATUS says why; *STAGE is 1 when
 * the archive could not be opened, 2 when its event files could not be). *DEF_FILES is 1 if the
 * local definition files could be opened (they are optional). */
int perfvar_read_open(const char *anchor, const uint64_t *locations, size_t nlocations,
                      const uint32_t *region_refs, const int32_t *region_kinds, size_t nregions,
                      int cpu_attr_type, uint32_t cpu_attr_ref, double ns_per_tick,
                      perfvar_read **out, int *otf2_status, int *stage, int *def_files);

/* The metric classes whose Metric events give metric rows: CLASS_REFS[i] (OTF2 metric class
 * references, global) has its member j in column COLUMNS[i * PERFVAR_READ_METRICS_MAX + j] (0 ..
 * PERFVAR_READ_METRICS_MAX - 1; -1 past its members). Events of other classes, or with a value
 * that is not UINT64, are skipped. Without this call no Metric event is looked at. Errors:
 * PERFVAR_ERR_INVALID_ARG, PERFVAR_ERR_NO_MEMORY. */
int perfvar_read_set_metrics(perfvar_read *r, const uint32_t *class_refs, const int32_t *columns,
                             size_t nclasses);

/* Read the local definitions (mapping tables, clock offsets) of LOCATION, if it has any: their
 * absence or failure is not an error (durations do not need them). */
int perfvar_read_local_defs(perfvar_read *r, uint64_t location);

/* Read all events of LOCATION (one of those given to perfvar_read_open), rank RANK and thread
 * THREAD written into every row, into *RESULT. ANNOUNCED: the events the definitions announce for
 * it (0 = unknown): reading stops at the first event past it (RESULT->overrun). Returns PERFVAR_OK
 * also when OTF2 failed (RESULT->evt_reader, RESULT->otf2_status say how), PERFVAR_ERR_INVALID_ARG
 * on NULL arguments. */
int perfvar_read_events(perfvar_read *r, uint64_t location, int32_t rank, int32_t thread,
                        uint64_t announced, perfvar_read_result *result);

/* Forget the rows of the location read last (one the caller does not keep: its read failed). */
int perfvar_read_drop(perfvar_read *r);

/* Hand over the rows read since the last take: *SAMPLES (*NSAMPLES rows) and *PROBES (*NPROBES
 * rows), in reading order, each NULL when empty. The caller owns them and frees them with
 * perfvar_read_free; the handle starts new arrays. */
int perfvar_read_take(perfvar_read *r, perfvar_read_sample **samples, int64_t *nsamples,
                      perfvar_read_probe **probes, int64_t *nprobes);

/* Hand over the metric rows read since the last perfvar_read_take_metrics, as perfvar_read_take
 * does the samples (perfvar_read_metric_size for perfvar_read_free). */
int perfvar_read_take_metrics(perfvar_read *r, perfvar_read_metric **rows, int64_t *nrows);

/* Free an array perfvar_read_take handed over, with the row count it gave and the row's size
 * (perfvar_read_sample_size or perfvar_read_probe_size). NULL is accepted. Thread-safe. */
void perfvar_read_free(void *rows, int64_t nrows, size_t row_size);

/* Close the event (and definition) files and the archive, free the handle and any rows not
 * taken. NULL is accepted. */
int perfvar_read_close(perfvar_read *r);

/* sizeof(perfvar_read_sample), sizeof(perfvar_read_probe): the caller checks its dtypes against
 * them. Thread-safe. */
size_t perfvar_read_sample_size(void);
size_t perfvar_read_probe_size(void);
size_t perfvar_read_metric_size(void);

/* The layout of the structs above as compiled, for the Python side's copies of them
 * (reader_native._Result, reader_otf2.SAMPLE_DTYPE, PROBE_DTYPE and METRIC_DTYPE):
 * "perfvar_read_result" (or _sample, _probe, _metric) gives its size in bytes, "perfvar_read_result.events_read" a field's offset,
 * "perfvar_read_result.#" its number of fields; -1 for a name it does not know. Thread-safe. */
long perfvar_read_layout(const char *name);

#endif
