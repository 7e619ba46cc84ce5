/*
 * calib.h — first-cut calibration of the timer on the calling core, per cache state (paper §5.4).
 *
 * Measures, with the serialized-barrier clock:
 *   t_e,std  (timer_overhead_ns) the minimal cost of a back-to-back clock read pair (filter_cost),
 *            and the clock's granularity (the step it reads in, resolution.h); once, caches warm;
 *   then, for each cache state (flush 0, 4xL1, 4xL2, 4xL3: 4 x the cache size from sysfs, written
 *   one store per 64-byte line before every sample, as the paper flushes):
 *   t_min    the shortest ADD chain whose samples have CV < epsilon, confirmed p times (Algorithm 1),
 *            and whose median is at least granularity / epsilon (one clock step within epsilon);
 *   t_diff   the smallest extra ADD count whose samples overlap (Algorithm 2 overlap: fraction of the
 *            longer chain's samples below the shorter chain's maximum) < alpha for q pairs above t_min.
 *   and, when the CPU-cycle counter can be read (perfvar_clock.h), t_e,std, t_min and t_diff of
 *   flush 0 once more with that counter, in cycles (paper §4.1's second clock).
 * The C side cannot run the paper's isolation-forest filter_os; it trims samples above
 * median + max(3 IQR, 3 clock steps) instead, so its t_min / t_diff are ESTIMATES that steer the
 * search. Times in ns (wall clock) or cycles (the cycle counter's pass); budgets in wall ms.
 *
 * Budget: when the cycle counter is readable, its pass gets the last 10 % of budget_ms and what
 * the wall clock's states leave; they get the rest. Flush 0 runs first with up to 40 % of
 * budget_ms (what it leaves unused rolls over); each further state then gets an equal share of
 * what remains. A flushed state starts its searches from flush 0's t_min / t_diff, and bisects
 * t_diff to 1/8 of its value (flush 0: to one ADD). Before a flushed state allocates, its
 * p x N flushes are checked against its share at an optimistic 64 GB/s, then with one flush
 * timed. Quick mode skips a state that does not fit. Full mode first reduces N so that the least
 * complete search (p + 2 + 2q distributions) fits, down to PV_CALIB_MIN_FLUSHED_N, and says so in
 * the note (n_requested keeps the N asked for); below that the state is skipped too. A skipped
 * state gives the reason in its note and allocates nothing more.
 * Status per state: "complete" (both found within its share), "partial" (the search stopped
 * before both were found: share spent, or no difference up to t_min separated the distributions),
 * "skipped" or "off". The budget is checked every 64 samples, every sample when flushing or
 * timing chains of 2^16 ADDs or more.
 * Memory: the flush buffer (up to 4 x L3) exists only while pv_calib_run runs.
 * Not thread-safe (run it on one thread; it pins nothing: it measures the core it runs on).
 */
#ifndef PV_CALIB_H
#define PV_CALIB_H
#include <stdint.h>

typedef enum { PV_CALIB_OFF = 0, PV_CALIB_QUICK = 1, PV_CALIB_FULL = 2 } pv_calib_mode;

#define PV_CALIB_NSTATES 4 /* flush 0, 4xL1, 4xL2, 4xL3; index = cache level */

/* Full mode never reduces a flushed state's N below this: fewer samples would not estimate a CV. */
#define PV_CALIB_MIN_FLUSHED_N 50

typedef struct pv_calib_params {
    pv_calib_mode mode;
    double budget_ms;      /* wall-time budget for the whole calibration, all states */
    int n_samples;         /* N: samples per distribution, flush 0 */
    int n_samples_flushed; /* N in the flushed states (each sample costs a flush) */
    int nstates;           /* cache states to calibrate: 1 (flush 0 only) .. PV_CALIB_NSTATES */
    int p_confirm;         /* p: confirmations of CV < epsilon */
    int q_pairs;           /* q: pairs that must all overlap < alpha */
    double epsilon;        /* CV threshold (paper: 0.01) */
    double alpha;          /* overlap threshold (paper: 0.05) */
} pv_calib_params;

/* One distribution the search measured, kept raw (overhead removed, nothing trimmed) so the
 * statistics can be redone with the paper's filter_os elsewhere (perfvar analyze). */
typedef enum { PV_DIST_TMIN = 0, PV_DIST_PAIR_SHORT = 1, PV_DIST_PAIR_LONG = 2 } pv_dist_kind;

typedef struct pv_calib_dist {
    pv_dist_kind kind;
    uint64_t adds;      /* chain length measured */
    uint64_t base, d;   /* t_diff pairs: base chain and step (0 for t_min distributions) */
    int pair;           /* t_diff pairs: i of (base + (i-1) d, base + i d); t_min: confirmation */
    int n;
    float *samples;     /* n samples, in their state's unit (ns; the cycle counter's: cycles) */
    int state;          /* cache state index (pv_calib_result.states), or PV_CALIB_CYCLES_TAG */
} pv_calib_dist;

/* pv_calib_dist.state of the cycle counter's distributions (samples in cycles). */
#define PV_CALIB_CYCLES_TAG PV_CALIB_NSTATES

#define PV_CALIB_MAX_DISTS 512
#define PV_CALIB_MAX_KEPT_SAMPLES (1 << 20) /* 4 MiB of floats per rank, whatever the mode */

/* The result of one cache state (or of the cycle counter's pass). Times are in `unit`: "ns" for
 * the wall clock's states, "cycles" for the cycle counter's, which is never converted to time. */
typedef struct pv_calib_state {
    const char *label;         /* "0", "4xL1", "4xL2", "4xL3"; "0" for the cycle counter's pass */
    const char *unit;          /* "ns" or "cycles" */
    uint64_t flush_bytes;      /* bytes written before each sample: 4 x the cache size */
    int n_samples;             /* N of its distributions */
    int n_requested;           /* the N asked for: larger when full mode reduced it to fit the share */
    const char *status;        /* "complete", "partial", "skipped", "off" (see above) */
    char note[240];            /* why skipped or partial, and whether N was reduced; "" otherwise */
    double t_min;              /* median duration of the t_min chain, overhead removed */
    double t_diff;             /* t_diff_adds * per_add */
    double per_add;            /* measured slope of duration over chain length, unit per ADD */
    uint64_t t_min_adds, t_diff_adds;
    double t_min_cv;           /* CV measured at t_min */
    double t_diff_overlap;     /* worst overlap of the accepted t_diff pairs */
    double budget_ms;          /* this state's share of the budget (wall ms) */
    double elapsed_ms;
    double flush_ms;           /* one flush, timed (0 when not flushing or skipped before) */
    int ndists, dists_dropped; /* distributions kept, and not kept for lack of room */
} pv_calib_state;

/* The cycle counter's pass (paper §4.1's second clock): flush 0 only, after the wall-clock states. */
typedef struct pv_calib_cycles {
    int available;             /* the counter could be read on this thread */
    char why[200];             /* why not, when not available */
    const char *counter;       /* "rdpmc", "pmccntr", or "substitute" (tests) */
    double timer_overhead;     /* t_e,std of a cycle-counter read pair, cycles */
    double granularity;        /* the step the counter reads in (resolution.h), cycles */
    pv_calib_state state;      /* unit "cycles"; status "off" when not available */
} pv_calib_cycles;

typedef struct pv_calib_result {
    /* Flush 0, as before cache states existed (states[0] repeated; elapsed_ms = all states). */
    const char *status;        /* "complete", "partial" (see above) or "off" */
    double timer_overhead_ns;  /* t_e,std */
    double granularity_ns;     /* the step the clock reads in (resolution.h) */
    double t_min_ns, t_diff_ns, ns_per_add;
    uint64_t t_min_adds, t_diff_adds;
    double t_min_cv, t_diff_overlap;
    double elapsed_ms;         /* the whole calibration */
    int cpu_start, cpu_end;    /* CPU at start and end (-1 unknown) */
    pv_calib_state states[PV_CALIB_NSTATES];
    int nstates;               /* states reported (attempted or skipped) */
    pv_calib_cycles cycles;
    pv_calib_dist *dists;      /* every distribution measured, at most PV_CALIB_MAX_DISTS */
    int ndists, dists_dropped; /* kept, and not kept for lack of room */
    long kept_samples;         /* samples held in dists */
} pv_calib_result;

/* Parameters of a mode (quick: 400 ms budget, N=300 / 100 flushed, p=5, q=5; full: 120 s,
 * N=10000 both, p=30, q=80; 4 states). */
void pv_calib_defaults(pv_calib_params *p, pv_calib_mode mode);

/* Run the calibration. Returns 0, or PERFVAR_ERR_NO_MEMORY (result then says status "off").
 * The result owns r->dists: release them with pv_calib_free. */
int pv_calib_run(const pv_calib_params *p, pv_calib_result *r);
void pv_calib_free(pv_calib_result *r);

/* Tests only: the memory (bytes) a flush buffer may take is this divided by the online CPUs,
 * instead of /proc/meminfo's MemAvailable (0: back to that). Not thread-safe. */
void pv_calib_set_available_memory(double bytes);

/* Tests only: make the cycle counter's pass read `counter` (in its own units; NULL: the real
 * counter) so it can be exercised where no PMU exists. Not thread-safe. */
void pv_calib_set_cycles_substitute(uint64_t (*counter)(void));

/* The cycle counter's pass (calib_cycles.c): opens the counter on the calling thread (closing it
 * afterwards unless it was already open), measures flush 0 in cycles until `deadline` (pv_now
 * ticks) from flush 0's wall-clock results as hints, into r->cycles. `s` is the wall-clock
 * search's scratch. Returns 0 or PERFVAR_ERR_NO_MEMORY. */
struct pv_search;
int pv_calib_cycles_run(struct pv_search *s, pv_calib_result *r, uint64_t deadline);

/* Whether the cycle counter's pass will run on this thread (the probe, or a substitute, says the
 * counter is readable); sets r->cycles.available/why/counter. */
int pv_calib_cycles_possible(pv_calib_result *r);

#endif
