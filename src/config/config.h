/*
 * config.h — perfvar's run-time configuration from PERFVAR_* environment variables (internal).
 *
 *   PERFVAR_OUTPUT=DIR                    trace directory (default perfvar-YYYYmmdd-HHMMSS[-N])
 *   PERFVAR_CALIBRATION=quick|full|off    start-up calibration mode (default quick)
 *   PERFVAR_CALIBRATION_BUDGET_MS=N       1..3600000, overrides the mode's budget
 *   PERFVAR_CALIBRATION_N=N               10..1000000, samples per distribution at flush 0
 *                                         (quick 300, full 10000)
 *   PERFVAR_CALIBRATION_N_FLUSHED=N       10..1000000, the same in flushed states (quick 100,
 *                                         full 10000)
 *   PERFVAR_CALIBRATION_P=N               1..1000, confirmations of CV < epsilon (quick 5, full 30)
 *   PERFVAR_CALIBRATION_Q=N               1..1000, t_diff pairs that must separate (quick 5, full 80)
 *   PERFVAR_CALIBRATION_EPSILON=X         0 < X < 1, the CV threshold of t_min (0.01)
 *   PERFVAR_CALIBRATION_ALPHA=X           0 < X < 1, the overlap threshold of t_diff (0.05)
 *   PERFVAR_CALIBRATION_STATES=N          1..4, cache states calibrated: flush 0, 4xL1, 4xL2, 4xL3
 *                                         in that order (4)
 *                                         (each overrides its mode's value; the paper's are full's)
 *   PERFVAR_BUFFER_MB=N                   1..65536, event memory per traced thread before a flush
 *                                         (default 16)
 *   PERFVAR_CLOCK_SYNC=auto|pingpong|none inter-rank clock offsets (auto: ping-pong only for ranks on
 *                                         another host than rank 0, whose TSC is not shared)
 *   PERFVAR_VERBOSE=0|1|2                 messages on stderr (default 0: warnings only)
 *   PERFVAR_CLOCK=auto|tsc|cntvct|clock_monotonic_raw   the clock (validated here, applied by
 *                                         src/clock: an unavailable one is replaced and noted)
 *   PERFVAR_BOUNDARIES=GROUP,...|all      the MPI function groups whose calls end a compute segment
 *                                         and are traced (default: all but local), of those
 *                                         src/spec/contracts.py names (MPI_GROUPS); calls of
 *                                         other groups are only counted
 *   PERFVAR_PROBE=off|on|N                fixed-work probes (src/calib/work_probe.h): off, on
 *                                         (every 10 ms, the default) or every N ms, N 1..60000,
 *                                         per traced thread at the entry of a traced MPI call
 *   PERFVAR_INJECT=rank=R,pct=X[,to=S][,from=S][,after=T][,until=T][,longer=M]
 *                                         validation aid (src/pmpi/inject.h): rank R adds work of X %
 *                                         (0 < X <= 1000) of each matching segment's own duration,
 *                                         in segments whose closing call site's name ("MPI_Fn@module
 *                                         +0xoffset") contains S (to) and whose opening one's contains
 *                                         S (from), between T and T seconds of the trace's time
 *                                         (from its origin, the first rank's MPI_Init; default: the
 *                                         whole run), that ran longer than M ms (default
 *                                         any); unset: off
 *   PERFVAR_CALLPATH=N                    1..16, frames that name a call site: the MPI call's
 *                                         return address and those of N - 1 callers above it
 *                                         (default PV_CALLPATH_DEFAULT; 1: the return address only)
 *   PERFVAR_KEEP_RECORDS=0|1              1: keep the raw records (DIR/perfvar/records) after a clean
 *                                         finish; 0 (default): remove them once the archive is
 *                                         written and checked (they are always kept when a rank
 *                                         died or the conversion failed: perfvar-recover needs them)
 *   PERFVAR_METRICS=none|EVENT,...        PAPI events counted per traced thread (src/metrics): none,
 *                                         or a comma list of PAPI preset or native names; unset:
 *                                         the software events the machine can count
 *                                         (PV_METRICS_DEFAULT)
 *   PERFVAR_METRICS_MIN_US=N              0..10000000, the shortest compute segment (us) whose end
 *                                         reads the counters (default PV_METRICS_MIN_US_DEFAULT)
 *   PERFVAR_PRELOAD_LIB, PERFVAR_MPI      used by the perfvar-run launcher; accepted, not read here
 * Any other PERFVAR_* name, or a value outside the accepted set, is a configuration error: the caller
 * prints the message and runs uninstrumented. Not thread-safe (call once at start-up).
 */
#ifndef PV_CONFIG_H
#define PV_CONFIG_H
#include "../calib/calib.h"
#include "pv_spec.h"

typedef enum { PV_SYNC_AUTO, PV_SYNC_PINGPONG, PV_SYNC_NONE } pv_sync_mode;

/* MPI function groups: PV_GROUP_<NAME>, in the order of src/spec/contracts.py (MPI_GROUPS), the
 * table src/wrapgen/mpi_groups.py classifies MPI functions into and the Python package reads too.
 * pv_group_names: their names, NULL-terminated. */
#define PV_GROUP_ENUM_(E, NAME, TRACED) PV_GROUP_##E,
typedef enum { PV_SPEC_MPI_GROUPS(PV_GROUP_ENUM_) PV_GROUP_COUNT } pv_mpi_group;
extern const char *const pv_group_names[PV_GROUP_COUNT + 1];
/* The groups traced when PERFVAR_BOUNDARIES is unset: those the spec marks so (all but local). */
#define PV_GROUP_DEFAULT_BIT_(E, NAME, TRACED) | ((TRACED) ? 1u << PV_GROUP_##E : 0u)
#define PV_BOUNDARIES_DEFAULT (0u PV_SPEC_MPI_GROUPS(PV_GROUP_DEFAULT_BIT_))

/* PERFVAR_INJECT, the validation aid's extra work (src/pmpi/inject.h); pct 0: off. */
#define PV_INJECT_MATCH_MAX 128
typedef struct pv_inject_spec {
    int rank;                        /* the rank that does the extra work */
    double pct;                      /* % of the segment's own duration, 0 < pct <= 1000; 0: off */
    char to[PV_INJECT_MATCH_MAX];    /* substring of the closing site's name; empty: any */
    char from[PV_INJECT_MATCH_MAX];  /* substring of the opening site's name; empty: any */
    double after_s, until_s;         /* window, s of trace time; until_s 0: to the end */
    double longer_ms;                /* only segments that ran longer than this, ms; 0: any */
} pv_inject_spec;

/* PERFVAR_CALLPATH: its bounds and default (chosen on CloverLeaf: the depth at which each of its
 * kernels between two halo exchanges is a class of its own, see docs/tracing.md). */
#define PV_CALLPATH_MAX 16
#define PV_CALLPATH_DEFAULT 4
/* A numeric macro as a string literal, for messages that state a bound (PV_STR(PV_CALLPATH_MAX)). */
#define PV_STR_(x) #x
#define PV_STR(x) PV_STR_(x)

/* PERFVAR_METRICS_MIN_US: a read at the end of every segment just over the threshold costs at most
 * 1 % of the run. The read of the four default software events, measured on a 2-vCPU KVM guest:
 * 1.2-1.5 us back to back, 3-4 us (90th percentile) after 200 us of other work
 * (tests/bench/bench_metrics_read.c), 5.8 us when both ranks of the per-call benchmark read at
 * every call (tests/bench/bench_recorder.py); the largest, 5.8 us / 1 % = 580 us, rounded up to
 * 1 ms (docs/tracing.md). */
#define PV_METRICS_MIN_US_DEFAULT 1000
#define PV_METRICS_MIN_US_MAX 10000000
#define PV_METRICS_SPEC_MAX 1024

typedef struct pv_config {
    char output[4096];          /* empty: use the timestamped default */
    pv_calib_mode calibration;
    double calibration_budget_ms; /* 0: the mode's default */
    /* PERFVAR_CALIBRATION_*: 0 = the mode's default (pv_calib_defaults) */
    int calib_n, calib_n_flushed, calib_p, calib_q, calib_states;
    double calib_epsilon, calib_alpha;
    unsigned buffer_mb;
    pv_sync_mode clock_sync;
    int verbose;
    unsigned boundaries;        /* bit (1 << pv_mpi_group) set: that group's calls are traced */
    unsigned probe_ms;          /* fixed-work probe period (ms); 0: off */
    int callpath;               /* frames per call site, 1..PV_CALLPATH_MAX (PERFVAR_CALLPATH) */
    pv_inject_spec inject;      /* PERFVAR_INJECT; inject.pct 0: off */
    int keep_records;           /* PERFVAR_KEEP_RECORDS: 1 keeps perfvar/records after a clean finish */
    char metrics[PV_METRICS_SPEC_MAX]; /* PERFVAR_METRICS as given; empty: unset (the default set) */
    unsigned metrics_min_us;    /* PERFVAR_METRICS_MIN_US */
} pv_config;

/* Fill *cfg from the environment. Returns 0, or PERFVAR_ERR_CONFIG with one line in msg naming the
 * variable and what it accepts. */
int pv_config_load(pv_config *cfg, char *msg, int msg_len);

/* Override the mode's calibration parameters *p (from pv_calib_defaults) with those cfg sets
 * (PERFVAR_CALIBRATION_BUDGET_MS and PERFVAR_CALIBRATION_{N,N_FLUSHED,P,Q,EPSILON,ALPHA,STATES}).
 * Pure, thread-safe. */
void pv_config_apply_calib(const pv_config *cfg, pv_calib_params *p);

#endif
