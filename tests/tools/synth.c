/*
 * perfvar-synth — synthetic N-rank perfvar traces for tests and benchmarks, written by perfvar's
 * own recorder (src/recorder) and converted into OTF2 by its own writer (src/trace/convert.c), as
 * MPI_Finalize would. Built with the tests, not installed. tests/tools/synth.py drives it and writes
 * the run and rank metadata (the JSON files under perfvar/) and the ground truth (synthetic.json).
 *
 *   perfvar-synth --out DIR --ranks N --segments S [--seed X] [--plan FILE] [--results FILE]
 *                 [--cores-per-node C] [--sockets-per-node S] [--buffer-mb M] [--record-kb K]
 *                 [--busy B]
 *
 * The modelled program is a halo-exchange stencil. Each step of each rank makes four MPI calls:
 * MPI_Isend (to rank + 1), MPI_Irecv (from rank - 1), MPI_Waitall, MPI_Allreduce, so its compute
 * segments fall into four classes (call-site pairs): pack (Allreduce -> Isend, ~12 us), post
 * (Isend -> Irecv, ~0.4 us), compute (Irecv -> Waitall, ~180 us), update (Waitall -> Allreduce,
 * ~35 us). A segment's duration is its class's base x the rank's factor x a log-normal sample,
 * plus OS-noise interruptions that come at a rate per second of compute: short ones (10-60 us,
 * ~20/s) and scheduler slices (~4 ms, ~0.5/s). Time advances consistently over the job: a Waitall
 * returns no earlier than the left neighbour's Isend plus a latency, and every Allreduce returns
 * after the last rank entered it. Rank r runs on host r / C ("synth-nNNNN"), CPU r % C, which is
 * core cpu % (C/S) of socket cpu / (C/S) (S sockets a node: 2 by default when C is even, else 1).
 *
 * Anomalies come from the plan file (one per line, fields separated by blanks; '#' comments):
 *   slow RANK CLASS FACTOR               the rank's CLASS (0..3) segments take FACTOR x as long
 *   core RANK FACTOR                     every class of the rank (a slow core)
 *   noisy RANK RATE_PER_S DURATION_NS    extra interruptions of ~DURATION_NS (a shared CPU)
 *   phase RANK CLASS FACTOR FROM TO      CLASS x FACTOR in steps [FROM, TO) x steps (fractions)
 *
 * The results file (tab-separated, key=value after a leading kind) says what was made:
 *   class   index, name, base_ns, sigma, key (the canonical segment name in the trace)
 *   run     hz, origin_ticks (the trace's first timestamp), realtime_ns/realtime_ticks, steps,
 *           generate_s, convert_s, records_bytes
 *   phase   rank, class, step_from, step_to, start_ticks, end_ticks (first slowed segment's start,
 *           last one's end)
 *   rank    rank, host, cpu, calls, segments, events, lost, raised, flushes, convert_ms (one line
 *           per rank, appended by its conversion process)
 *
 * How: the records of all ranks are written first, by this one process, step by step over the
 * ranks (each rank a file-backed stream of --record-kb KiB: bounded memory whatever the length),
 * then one process per rank is forked (comm_fork.h) and each converts its rank through the trace
 * writer's collectives, exactly as perfvar-recover does. Deterministic: the same options give the
 * same records and archive (each rank draws from its own generator seeded by --seed and its rank).
 * At most --busy conversion processes (default 4 a CPU) work at once; the others wait in a
 * collective holding a few hundred KiB. Unbounded, every rank writes at once and each holds its
 * OTF2 buffers meanwhile: 16384 ranks grew past 16 GiB and still growing, where bounded they keep
 * the job's memory to the waiting processes' (docs/measurements.md). Every rank still has its own
 * process alive until the end: the writer's closing collectives need all of them, and a rank's
 * writer state (its archive, its local definitions) lives in its process.
 *
 * Exit status: 0 written, 1 failed (a message says why), 2 usage.
 * Single-threaded (the conversion runs in forked processes, one thread each).
 */
#define _GNU_SOURCE
#include "../../src/recorder/recorder.h"
#include "../../src/recover/comm_fork.h"
#include "../../src/trace/convert.h"
#include "perfvar.h"
#include "pv_spec.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the modelled program ---- */
enum { CLS_PACK, CLS_POST, CLS_COMPUTE, CLS_UPDATE, NCLS };
static const double cls_base_ns[NCLS] = {12000.0, 400.0, 180000.0, 35000.0};
static const double cls_sigma[NCLS] = {0.03, 0.06, 0.015, 0.025}; /* log-normal sigma per sample */
static const char *const cls_name[NCLS] = {"pack", "post", "compute", "update"};

/* Static regions, as the PMPI layer defines them (role and event role of src/wrapgen/mpi_groups.py):
 * the MPI functions the program calls, then perfvar's own two. */
enum { R_INIT, R_FINALIZE, R_ISEND, R_IRECV, R_WAITALL, R_ALLREDUCE, R_CALIB, R_PROBE, NREG };
static const struct {
    const char *name;
    OTF2_RegionRole role;
    OTF2_Paradigm paradigm;
    unsigned events;
} regions[NREG] = {
    {"MPI_Init", OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_MPI, PV_REC_EV_NONE},
    {"MPI_Finalize", OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_MPI, PV_REC_EV_NONE},
    {"MPI_Isend", OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI, PV_REC_EV_ISEND},
    {"MPI_Irecv", OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI, PV_REC_EV_IRECV},
    {"MPI_Waitall", OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_MPI, PV_REC_EV_NONE},
    {"MPI_Allreduce", OTF2_REGION_ROLE_COLL_ALL2ALL, OTF2_PARADIGM_MPI, PV_REC_EV_COLL},
    {"perfvar calibration", OTF2_REGION_ROLE_ARTIFICIAL, OTF2_PARADIGM_MEASUREMENT_SYSTEM,
     PV_REC_EV_NONE},
    {PV_TRACE_PROBE_REGION, OTF2_REGION_ROLE_ARTIFICIAL, OTF2_PARADIGM_MEASUREMENT_SYSTEM, PV_REC_EV_NONE},
};

/* Call sites: return addresses in the modelled executable (offsets from its load bias). */
#define APP "/opt/synth/bin/stencil3d"
enum { S_INIT, S_ISEND, S_IRECV, S_WAITALL, S_ALLREDUCE, S_FINALIZE, NSITES };
static const struct {
    int region;
    unsigned offset;
} sites[NSITES] = {{R_INIT, 0x1a47}, {R_ISEND, 0x2b1c}, {R_IRECV, 0x2b61},
                   {R_WAITALL, 0x2c08}, {R_ALLREDUCE, 0x2d8d}, {R_FINALIZE, 0x1f25}};
/* Each class's segment: from the exit of one call site to the entry of the next. */
static const int cls_sites[NCLS][2] = {
    {S_ALLREDUCE, S_ISEND}, {S_ISEND, S_IRECV}, {S_IRECV, S_WAITALL}, {S_WAITALL, S_ALLREDUCE}};

#define HZ 2445405985.758        /* ticks per second (a 2.4 GHz TSC) */
#define T_START 4200000000000ull /* ticks at the job's start (~29 min of uptime) */
#define REALTIME_NS 1795521600000000000ull /* 2026-11-24T12:00:00Z */
#define HALO_BYTES 65536u
/* Request handles as an MPI hands them out again once complete (an Open MPI request's address). */
#define SEND_HANDLE 0x7f3a5c0012c0ull
#define RECV_HANDLE 0x7f3a5c001400ull
#define OS_SHORT_PER_S 20.0  /* short interruptions (interrupts, kernel threads) per second */
#define OS_SLICE_PER_S 0.5   /* ~4 ms scheduler slices per second (another runnable task) */

/* ---- deterministic random numbers: xoshiro256+ per rank, seeded by splitmix64 ---- */
typedef struct rng {
    uint64_t s[4];
    int have_spare;
    double spare;
} rng;

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void rng_seed(rng *g, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed * 0x2545f4914f6cdd1dull ^ (stream + 1) * 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 4; i++) g->s[i] = splitmix(&x);
    g->have_spare = 0;
}

static double uniform(rng *g) /* [0, 1) */
{
    uint64_t *s = g->s, r = s[0] + s[3], t = s[1] << 17;
    s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3], s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return (double)(r >> 11) * 0x1.0p-53;
}

static double normal(rng *g) /* Marsaglia's polar method */
{
    if (g->have_spare) return g->have_spare = 0, g->spare;
    double u, v, q;
    do {
        u = 2 * uniform(g) - 1, v = 2 * uniform(g) - 1;
        q = u * u + v * v;
    } while (q >= 1 || q == 0);
    double f = sqrt(-2 * log(q) / q);
    g->spare = v * f, g->have_spare = 1;
    return u * f;
}

/* ---- the plan ---- */
typedef struct rank_model {
    double factor[NCLS];     /* static per-class factor: jitter, slow class, slow core */
    double noisy_rate, noisy_ns;
    int phase_cls;           /* -1: none */
    double phase_factor;
    long phase_from, phase_to;
} rank_model;

typedef struct rank_state {
    pv_rec_stream *s;
    rng g;
    uint64_t t;              /* ticks: the exit of the last call */
    pv_rec_unit *open;       /* the CALL begun and not yet ended */
    uint64_t open_entry;
    uint64_t isend_entry;
    uint64_t first;          /* ticks: MPI_Init's entry */
    uint64_t phase_start, phase_end;
} rank_state;

static int nranks, cores = 64, sockets = 2;
static long steps;
static rank_model *model;
static rank_state *st;
static double ticks_per_ns;

static uint64_t ticks(double ns) { return (uint64_t)llround(ns * ticks_per_ns); }

/* One segment of class c of rank r at step k, in ns: base x factors x log-normal, plus the
 * interruptions that fall into it (at most one of each kind: their rates are far below one per
 * segment). */
static double draw(int r, int c, long k)
{
    rank_model *m = &model[r];
    rng *g = &st[r].g;
    double d = cls_base_ns[c] * m->factor[c] * exp(cls_sigma[c] * normal(g));
    if (c == m->phase_cls && k >= m->phase_from && k < m->phase_to) d *= m->phase_factor;
    double s = d * 1e-9;
    if (uniform(g) < OS_SHORT_PER_S * s) d += 10000.0 + 50000.0 * uniform(g);
    if (uniform(g) < OS_SLICE_PER_S * s) d += 4e6 * (0.9 + 0.2 * uniform(g));
    if (m->noisy_rate > 0 && uniform(g) < m->noisy_rate * s) d += m->noisy_ns * (0.9 + 0.2 * uniform(g));
    return d;
}

/* Where rank r's slowed phase starts and ends (ticks): the first slowed segment's start, the last
 * one's end. */
static void note_phase(int r, int c, long k, uint64_t start, uint64_t end)
{
    const rank_model *m = &model[r];
    if (c != m->phase_cls) return;
    if (k == m->phase_from) st[r].phase_start = start;
    if (k == m->phase_to - 1) st[r].phase_end = end;
}

/* A call's own span (ns): base x a log-normal of sigma 0.1 (MPI's fast path varies). */
static double span(rng *g, double base_ns) { return base_ns * exp(0.1 * normal(g)); }

static int cpu_of(int r) { return r % cores; }

/* Identical cores differ a little: a static per-rank factor of sd 0.03 %, well below the
 * slow-segment floor (0.2 %), so that only the injected anomalies are anomalies. */
static void init_models(void)
{
    for (int r = 0; r < nranks; r++) {
        rank_model *m = &model[r];
        rng g;
        rng_seed(&g, 0x5157ull, (uint64_t)r);
        for (int c = 0; c < NCLS; c++) m->factor[c] = 1.0 + 0.0003 * fmax(-3.0, fmin(3.0, normal(&g)));
        m->phase_cls = -1;
    }
}

/* One rule per kind of plan line: apply the line's fields to the rank's model, or return -1 if
 * they are not valid for that kind. */
static int plan_slow(rank_model *m, const char *line)
{
    int c;
    double x;
    if (sscanf(line, "%*s %*d %d %lf", &c, &x) != 2 || c < 0 || c >= NCLS || !(x > 0)) return -1;
    m->factor[c] *= x;
    return 0;
}

static int plan_core(rank_model *m, const char *line)
{
    double x;
    if (sscanf(line, "%*s %*d %lf", &x) != 1 || !(x > 0)) return -1;
    for (int c = 0; c < NCLS; c++) m->factor[c] *= x;
    return 0;
}

static int plan_noisy(rank_model *m, const char *line)
{
    double x, y;
    if (sscanf(line, "%*s %*d %lf %lf", &x, &y) != 2 || !(x >= 0) || !(y > 0)) return -1;
    m->noisy_rate = x, m->noisy_ns = y;
    return 0;
}

static int plan_phase(rank_model *m, const char *line)
{
    int c;
    double x, from, to;
    if (sscanf(line, "%*s %*d %d %lf %lf %lf", &c, &x, &from, &to) != 4 || c < 0 || c >= NCLS ||
        !(x > 0) || !(0 <= from && from < to && to <= 1))
        return -1;
    m->phase_cls = c, m->phase_factor = x;
    m->phase_from = (long)(from * (double)steps);
    m->phase_to = (long)(to * (double)steps);
    return 0;
}

static const struct {
    const char *kind;
    int (*apply)(rank_model *m, const char *line);
} plan_rules[] = {{"slow", plan_slow}, {"core", plan_core}, {"noisy", plan_noisy}, {"phase", plan_phase}};

/* Apply one plan line ("KIND RANK FIELDS..."); -1 if it is not a plan line. */
static int apply_plan_line(const char *line)
{
    char kind[32];
    int r;
    if (sscanf(line, "%31s %d", kind, &r) != 2 || r < 0 || r >= nranks) return -1;
    for (size_t i = 0; i < sizeof plan_rules / sizeof plan_rules[0]; i++)
        if (!strcmp(kind, plan_rules[i].kind)) return plan_rules[i].apply(&model[r], line);
    return -1;
}

static int blank_or_comment(const char *line)
{
    return line[strspn(line, " \t\r\n")] == 0 || line[strspn(line, " \t")] == '#';
}

/* The models of all ranks: jitter, then the plan's anomalies (none without a plan). Returns 0, or
 * -1 with a message at the first line that is not a plan line. */
static int read_plan(const char *path)
{
    init_models();
    if (!path) return 0;
    FILE *f = fopen(path, "r");
    if (!f) return fprintf(stderr, "perfvar-synth: %s: %s\n", path, strerror(errno)), -1;
    char line[512];
    int bad = 0, n = 0;
    while (!bad && fgets(line, sizeof line, f)) {
        n++;
        if (blank_or_comment(line)) continue;
        bad = apply_plan_line(line) != 0;
        if (bad) fprintf(stderr, "perfvar-synth: %s:%d: not a plan line: %s", path, n, line);
    }
    fclose(f);
    return bad ? -1 : 0;
}

/* ---- records ---- */
static void call(rank_state *s, int site, uint64_t entry, uint64_t exit_, int cpu)
{
    pv_rec_unit *u = pv_rec_call_begin(s->s, (uint32_t)site, entry, cpu);
    pv_rec_call_end(s->s, u, entry, exit_, cpu);
    s->t = exit_;
}

static int write_defs(const char *dir, int r, uint64_t t_end)
{
    char host[64];
    snprintf(host, sizeof host, "synth-n%04d", r / cores);
    if (pv_rec_defs_open(dir, (uint32_t)r)) return -1;
    int bad = pv_rec_defs_line(PV_DEFS_RANK, r, nranks);
    bad |= pv_rec_defs_line(PV_DEFS_HOST, host);
    int per_socket = cores / sockets;
    bad |= pv_rec_defs_line(PV_DEFS_PLACE, cpu_of(r) / per_socket, cpu_of(r) % per_socket);
    bad |= pv_rec_defs_line(PV_DEFS_CLOCK, HZ);
    bad |= pv_rec_defs_line(PV_DEFS_SYNC, (unsigned long long)st[r].first, 0LL, 0.0);
    bad |= pv_rec_defs_line(PV_DEFS_REALTIME, (unsigned long long)REALTIME_NS,
                            (unsigned long long)T_START);
    for (int i = 0; i < NREG; i++)
        bad |= pv_rec_defs_line(PV_DEFS_REGION, i, (int)regions[i].role,
                                (int)regions[i].paradigm, regions[i].events, regions[i].name);
    for (int i = 0; i < NSITES; i++) {
        const char *what = regions[sites[i].region].name;
        char name[256], label[256];
        snprintf(name, sizeof name, "%s@%s+0x%x", what, APP, sites[i].offset);
        snprintf(label, sizeof label, "%s@%s+0x%x", what, strrchr(APP, '/') + 1, sites[i].offset);
        bad |= pv_rec_defs_line(PV_DEFS_SITE, i, sites[i].region, -1, name, label);
    }
    bad |= pv_rec_defs_line(PV_DEFS_SYNC, (unsigned long long)t_end, 0LL, 0.0);
    pv_rec_defs_close();
    return bad ? -1 : 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Every rank's records, step by step over the ranks. Returns 0 or -1 (message printed). */
static int generate(const char *dir, uint64_t seed, size_t record_bytes)
{
    double allreduce_ns = 3000.0 + 1500.0 * log2((double)nranks + 1);
    uint64_t init_end = 0;
    for (int r = 0; r < nranks; r++) {
        rank_state *s = &st[r];
        rng_seed(&s->g, seed, (uint64_t)r);
        s->s = pv_rec_open(dir, (uint32_t)r, 0, record_bytes);
        if (!s->s) {
            fprintf(stderr, "perfvar-synth: rank %d's records in %s/perfvar/records: %s\n", r, dir,
                    strerror(errno));
            return -1;
        }
        /* MPI_Init: the launcher starts ranks within ~2 ms; the calibration runs inside it. */
        s->first = T_START + ticks(2e6 * uniform(&s->g));
        s->open_entry = s->first;
        s->open = pv_rec_call_begin(s->s, S_INIT, s->first, -1);
        uint64_t c0 = s->first + ticks(span(&s->g, 3e6));
        uint64_t c1 = c0 + ticks(span(&s->g, 200e6));
        pv_rec_inner(s->s, PV_REC_NESTED, s->first, c0, c1, -1, R_CALIB);
        if (c1 > init_end) init_end = c1;
    }
    for (int r = 0; r < nranks; r++) { /* MPI_Init ends together, in its closing barrier */
        rank_state *s = &st[r];
        uint64_t exit_ = init_end + ticks(span(&s->g, 20000.0));
        pv_rec_call_end(s->s, s->open, s->open_entry, exit_, cpu_of(r));
        s->t = exit_;
    }
    for (long k = 0; k < steps; k++) {
        /* Pass 1: pack, Isend, post, Irecv, compute, Waitall's entry. */
        for (int r = 0; r < nranks; r++) {
            rank_state *s = &st[r];
            int cpu = cpu_of(r);
            uint64_t t = s->t + ticks(draw(r, CLS_PACK, k));
            note_phase(r, CLS_PACK, k, s->t, t);
            s->isend_entry = t;
            pv_rec_unit *u = pv_rec_call_begin(s->s, S_ISEND, t, cpu);
            u->x = pv_rec_fact(s->s, PV_REC_FACT_MSG, 0, 0, (uint32_t)((r + 1) % nranks), 17, HALO_BYTES, 0);
            pv_rec_request(s->s, SEND_HANDLE);
            uint64_t exit_ = t + ticks(span(&s->g, 1200.0));
            pv_rec_call_end(s->s, u, t, exit_, cpu);
            t = exit_ + ticks(draw(r, CLS_POST, k));
            note_phase(r, CLS_POST, k, exit_, t);
            u = pv_rec_call_begin(s->s, S_IRECV, t, cpu);
            u->x = pv_rec_fact(s->s, PV_REC_FACT_MSG, 0, 0, (uint32_t)((r + nranks - 1) % nranks), 17,
                               HALO_BYTES, 0);
            pv_rec_request(s->s, RECV_HANDLE);
            exit_ = t + ticks(span(&s->g, 600.0));
            pv_rec_call_end(s->s, u, t, exit_, cpu);
            t = exit_ + ticks(draw(r, CLS_COMPUTE, k));
            note_phase(r, CLS_COMPUTE, k, exit_, t);
            s->open_entry = t;
            s->open = pv_rec_call_begin(s->s, S_WAITALL, t, cpu);
        }
        /* Pass 2: Waitall returns once the left neighbour's message is in; update; Allreduce. */
        uint64_t last_in = 0;
        for (int r = 0; r < nranks; r++) {
            rank_state *s = &st[r];
            int cpu = cpu_of(r), left = (r + nranks - 1) % nranks;
            /* Both statuses recorded, as the wrappers do (a send's is not read back). */
            uint16_t f = pv_rec_fact(s->s, PV_REC_FACT_STATUS, 0, 0, (uint32_t)r, 17, HALO_BYTES, 0);
            pv_rec_complete(s->s, SEND_HANDLE, f);
            f = pv_rec_fact(s->s, PV_REC_FACT_STATUS, 0, 0, (uint32_t)left, 17, HALO_BYTES, 0);
            pv_rec_complete(s->s, RECV_HANDLE, f);
            uint64_t own = s->open_entry + ticks(span(&s->g, 800.0));
            uint64_t arrive = st[left].isend_entry + ticks(span(&s->g, 2000.0 + HALO_BYTES / 10.0));
            uint64_t exit_ = own > arrive ? own : arrive;
            pv_rec_call_end(s->s, s->open, s->open_entry, exit_, cpu);
            uint64_t t = exit_ + ticks(draw(r, CLS_UPDATE, k));
            note_phase(r, CLS_UPDATE, k, exit_, t);
            s->open_entry = t;
            s->open = pv_rec_call_begin(s->s, S_ALLREDUCE, t, cpu);
            s->open->x = pv_rec_fact(s->s, PV_REC_FACT_COLL, OTF2_COLLECTIVE_OP_ALLREDUCE, 0,
                                     0xFFFFFFFFu, 0, 8, 8);
            if (t > last_in) last_in = t;
        }
        /* Pass 3: the Allreduce returns after the last rank entered it. */
        for (int r = 0; r < nranks; r++) {
            rank_state *s = &st[r];
            uint64_t exit_ = last_in + ticks(span(&s->g, allreduce_ns));
            pv_rec_call_end(s->s, s->open, s->open_entry, exit_, cpu_of(r));
            s->t = exit_;
        }
    }
    int bad = 0;
    for (int r = 0; r < nranks; r++) {
        rank_state *s = &st[r];
        uint64_t t = s->t + ticks(span(&s->g, 15000.0));
        call(s, S_FINALIZE, t, t + ticks(span(&s->g, 400000.0)), cpu_of(r));
        if (pv_rec_close(s->s, s->t) || write_defs(dir, r, s->t)) {
            fprintf(stderr, "perfvar-synth: rank %d's records in %s: %s\n", r, dir, strerror(errno));
            bad = 1;
        }
        s->s = NULL;
    }
    return bad ? -1 : 0;
}

/* Bytes of records on disk (blocks in use: the files are allocated ahead of the writer). */
static unsigned long long records_bytes(const char *dir)
{
    unsigned long long n = 0;
    for (int r = 0; r < nranks; r++) {
        char path[4400];
        struct stat sb;
        snprintf(path, sizeof path, "%s/perfvar/records/rank-%d.thread-0.pvr", dir, r);
        if (!stat(path, &sb)) n += (unsigned long long)sb.st_blocks * 512u;
    }
    return n;
}

/* Append one line to the results file: one write with O_APPEND, so the conversion processes'
 * lines never interleave. */
static void result_line(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void result_line(const char *path, const char *fmt, ...)
{
    if (!path) return;
    char *line = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&line, fmt, ap);
    va_end(ap);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (n > 0 && fd >= 0 && write(fd, line, (size_t)n) != n)
        fprintf(stderr, "perfvar-synth: cannot write %s\n", path);
    if (fd >= 0) close(fd);
    free(line);
}

static void usage(FILE *to)
{
    fprintf(to, "usage: perfvar-synth --out DIR --ranks N --segments S [--seed X] [--plan FILE]\n"
                "                     [--results FILE] [--cores-per-node C] [--sockets-per-node S]\n"
                "                     [--buffer-mb M] [--record-kb K] [--busy B]\n"
                "Write a synthetic perfvar trace of N ranks with about S compute segments each\n"
                "(records, then DIR/traces.otf2 through perfvar's own writer).\n");
}

/* The command line. */
typedef struct options {
    const char *dir, *plan, *results;
    int ranks, cores, sockets; /* sockets 0: 2 when cores is even, else 1 */
    long segments;
    unsigned long long seed;
    unsigned buffer_mb, record_kb;
    int busy; /* conversion processes working at once; 0: 4 a CPU */
} options;

/* Set option a to v; -1 if a is not an option. */
static int set_option(options *o, const char *a, const char *v)
{
    if (!strcmp(a, "--out")) o->dir = v;
    else if (!strcmp(a, "--ranks")) o->ranks = atoi(v);
    else if (!strcmp(a, "--segments")) o->segments = atol(v);
    else if (!strcmp(a, "--seed")) o->seed = strtoull(v, NULL, 0);
    else if (!strcmp(a, "--plan")) o->plan = v;
    else if (!strcmp(a, "--results")) o->results = v;
    else if (!strcmp(a, "--cores-per-node")) o->cores = atoi(v);
    else if (!strcmp(a, "--sockets-per-node")) o->sockets = atoi(v);
    else if (!strcmp(a, "--buffer-mb")) o->buffer_mb = (unsigned)atoi(v);
    else if (!strcmp(a, "--record-kb")) o->record_kb = (unsigned)atoi(v);
    else if (!strcmp(a, "--busy")) o->busy = atoi(v);
    else return -1;
    return 0;
}

/* 4 segments a step; at least 2 steps. CPUs must fit the records' 12-bit CPU field. */
static int options_valid(const options *o)
{
    return o->dir && o->ranks >= 1 && o->segments / NCLS >= 2 && o->cores >= 1 &&
           o->cores <= (int)PV_REC_CPU_MASK && o->sockets >= 1 && o->cores % o->sockets == 0 &&
           o->buffer_mb && o->record_kb >= 64 && o->busy >= 0;
}

/* Read the command line into *o and the model's globals (nranks, cores, steps). Returns -1 to go
 * on, else the exit status: 0 after --help, 2 on a usage error (the usage printed either way). */
static int parse_args(int argc, char **argv, options *o)
{
    *o = (options){.cores = 64, .seed = 1, .buffer_mb = 1, .record_kb = 128};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout), 0;
        if (!v || set_option(o, a, v)) return usage(stderr), 2;
        i++;
    }
    if (!o->sockets) o->sockets = o->cores % 2 ? 1 : 2;
    if (!o->busy) { /* a few a CPU: they keep the CPUs busy while some wait on the disk */
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        o->busy = 4 * (int)(cpus > 0 ? cpus : 1);
    }
    nranks = o->ranks, cores = o->cores, sockets = o->sockets, steps = o->segments / NCLS;
    if (!options_valid(o)) return usage(stderr), 2;
    return -1;
}

/* DIR, DIR/perfvar and DIR/perfvar/records. Returns 0, or -1 (message printed). */
static int make_dirs(const char *dir)
{
    char path[4400];
    const char *sub[] = {"", "/perfvar", "/perfvar/records"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s%s", dir, sub[i]);
        if (mkdir(path, 0755) && errno != EEXIST) {
            fprintf(stderr, "perfvar-synth: cannot create %s: %s\n", path, strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* The results' phase lines (one per rank with a slowed phase); returns the trace's first
 * timestamp (ticks). */
static uint64_t report_phases(const char *results)
{
    uint64_t origin = UINT64_MAX;
    for (int r = 0; r < nranks; r++) {
        rank_model *m = &model[r];
        if (st[r].first < origin) origin = st[r].first;
        if (m->phase_cls >= 0)
            result_line(results, "phase\trank=%d\tclass=%d\tstep_from=%ld\tstep_to=%ld\tstart_ticks=%llu"
                        "\tend_ticks=%llu\n", r, m->phase_cls, m->phase_from, m->phase_to,
                        (unsigned long long)st[r].phase_start, (unsigned long long)st[r].phase_end);
    }
    return origin;
}

/* The results' class lines. */
static void report_classes(const char *results)
{
    for (int c = 0; c < NCLS; c++) {
        int a = cls_sites[c][0], b = cls_sites[c][1];
        result_line(results, "class\tindex=%d\tname=%s\tbase_ns=%.1f\tsigma=%.3f\tkey="
                    PV_TRACE_SEGMENT_PREFIX "%s@%s+0x%x" PV_TRACE_SITE_SEPARATOR "%s@%s+0x%x\n", c, cls_name[c], cls_base_ns[c], cls_sigma[c],
                    regions[sites[a].region].name, APP, sites[a].offset, regions[sites[b].region].name,
                    APP, sites[b].offset);
    }
}

/* The results' line of one converted rank; c0: when its conversion began (now_s). */
static void report_rank(const char *results, int rank, const pv_convert_result *res, double c0)
{
    const pv_convert_thread *th = &res->threads[0];
    result_line(results, "rank\trank=%d\thost=synth-n%04d\tcpu=%d\tcalls=%llu\tsegments=%llu"
                "\tevents=%llu\tlost=%llu\traised=%llu\tflushes=%llu\tconvert_ms=%.1f\n",
                rank, rank / cores, rank % cores, (unsigned long long)th->calls,
                (unsigned long long)th->segments, (unsigned long long)th->events,
                (unsigned long long)res->stats.events_lost,
                (unsigned long long)res->stats.timestamps_raised,
                (unsigned long long)res->stats.flushes, 1e3 * (now_s() - c0));
}

/* The conversion: one process per rank, as perfvar-recover runs it, at most busy of them working
 * at once. Returns in rank 0 only (the others exit in pv_fork_comm_finish): the number of ranks
 * that could not be converted, or -1 if the processes could not start (message printed). */
static int convert_ranks(const char *dir, unsigned buffer_mb, int busy, const char *results)
{
    fflush(NULL);
    pv_trace_comm comm;
    int rank = pv_fork_comm_start_bounded(nranks, busy, &comm);
    if (rank < 0) {
        fprintf(stderr, "perfvar-synth: cannot start %d processes: %s\n", nranks, strerror(errno));
        return -1;
    }
    pv_convert_result res;
    char why[1024];
    double c0 = now_s();
    int rc = pv_convert_rank(dir, rank, &comm, buffer_mb, &res, why, sizeof why);
    if (rc != PERFVAR_OK)
        fprintf(stderr, "perfvar-synth: rank %d: %s\n", rank, why[0] ? why : perfvar_strerror(rc));
    if (rc == PERFVAR_OK && res.nthreads) report_rank(results, rank, &res, c0);
    pv_convert_free(&res);
    return pv_fork_comm_finish(&comm, rc == PERFVAR_OK ? 0 : 1) + (rc != PERFVAR_OK);
}

int main(int argc, char **argv)
{
    options o;
    int status = parse_args(argc, argv, &o);
    if (status >= 0) return status;
    ticks_per_ns = HZ / 1e9;
    if (make_dirs(o.dir)) return 1;
    model = calloc((size_t)nranks, sizeof *model);
    st = calloc((size_t)nranks, sizeof *st);
    if (!model || !st) return fprintf(stderr, "perfvar-synth: out of memory\n"), 1;
    if (read_plan(o.plan)) return 2;
    if (o.results) unlink(o.results);

    double t0 = now_s();
    if (generate(o.dir, o.seed, (size_t)o.record_kb << 10)) return 1;
    double gen_s = now_s() - t0;
    uint64_t origin = report_phases(o.results);
    report_classes(o.results);
    unsigned long long rec_bytes = records_bytes(o.dir);
    free(st), free(model);
    st = NULL, model = NULL;

    t0 = now_s();
    int failed = convert_ranks(o.dir, o.buffer_mb, o.busy, o.results);
    if (failed < 0) return 1;
    double conv_s = now_s() - t0;
    result_line(o.results, "run\thz=%.3f\torigin_ticks=%llu\trealtime_ns=%llu\trealtime_ticks=%llu"
                "\tsteps=%ld\tgenerate_s=%.3f\tconvert_s=%.3f\trecords_bytes=%llu\n", HZ,
                (unsigned long long)origin, (unsigned long long)REALTIME_NS,
                (unsigned long long)T_START, steps, gen_s, conv_s, rec_bytes);
    if (failed) {
        fprintf(stderr, "perfvar-synth: %s: %d of %d ranks could not be converted\n", o.dir, failed,
                nranks);
        return 1;
    }
    printf("perfvar-synth: %s: %d ranks x %ld steps (%ld segments each): records %.1f s, OTF2 %.1f s\n",
           o.dir, nranks, steps, NCLS * steps + 1, gen_s, conv_s);
    return 0;
}
