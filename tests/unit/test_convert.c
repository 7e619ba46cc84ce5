/* test_convert.c — the recorder and the OTF2 writer, without MPI: two forked "ranks" record a small
 * run with the recorder's own functions at ticks the test chooses (a 1 GHz clock: ticks are ns),
 * convert it with pv_convert_rank over the forked communicator, and leave a golden trace in DIR for
 * the Python reader's test (tests/python/test_golden_trace.py) with what it must read in
 * DIR/golden.json. Checked here: the conversion's own figures (calls, segments, events, messages),
 * a records file read back unit by unit, a call that never returned (closed at the signal's
 * time), a longer run whose event files span several chunks (DIR/long), and counters
 * (PERFVAR_METRICS) that differ between the ranks (DIR/metrics, with what the readers must find
 * in DIR/metrics/expected.json for tests/python/test_reader_metrics.py).
 *
 * Usage: unit_convert DIR (created; must not exist yet as an archive). */
#include "check.h"
#include "recorder/recorder.h"
#include "recorder/replay.h"
#include "recover/comm_fork.h"
#include "trace/convert.h"
#include "pv_spec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { R_INIT, R_SEND, R_RECV, R_ALLREDUCE, R_FINALIZE, R_CALIB, R_PROBE, NREGIONS };
enum { STEPS = 10, LONG_STEPS = 30000 };

/* Open rank's definitions file with what every rank of these runs says first: a 1 GHz clock,
 * no offset, host "golden". */
static void open_defs(const char *dir, int rank)
{
    CHECK(pv_rec_defs_open(dir, (uint32_t)rank) == 0);
    pv_rec_defs_line(PV_DEFS_RANK, rank, 2);
    pv_rec_defs_line(PV_DEFS_HOST, "golden");
    pv_rec_defs_line(PV_DEFS_CLOCK, 1e9);
    pv_rec_defs_line(PV_DEFS_SYNC, 0ULL, 0LL, 0.0);
    pv_rec_defs_line(PV_DEFS_REALTIME, 1700000000000000000ULL, 0ULL);
}

/* The run of one rank: Init, then STEPS x (compute, Allreduce, compute, Send or Recv), Finalize.
 * Returns the end tick. Segment k of step i lasts 1000 + 100 i + 50 rank (+ 300 for the second). */
static uint64_t record_rank(const char *dir, int rank, FILE *golden, int steps)
{
    static const char *names[NREGIONS] = {"MPI_Init", "MPI_Send", "MPI_Recv", "MPI_Allreduce",
                                          "MPI_Finalize", "perfvar calibration", PV_TRACE_PROBE_REGION};
    static const int roles[NREGIONS] = {OTF2_REGION_ROLE_FUNCTION, OTF2_REGION_ROLE_POINT2POINT,
                                        OTF2_REGION_ROLE_POINT2POINT, OTF2_REGION_ROLE_COLL_ALL2ALL,
                                        OTF2_REGION_ROLE_FUNCTION, OTF2_REGION_ROLE_ARTIFICIAL,
                                        OTF2_REGION_ROLE_ARTIFICIAL};
    static const unsigned events[NREGIONS] = {PV_REC_EV_NONE, PV_REC_EV_SEND, PV_REC_EV_RECV,
                                              PV_REC_EV_COLL, PV_REC_EV_NONE, PV_REC_EV_NONE,
                                              PV_REC_EV_NONE};
    open_defs(dir, rank);
    for (int i = 0; i < NREGIONS; i++)
        pv_rec_defs_line(PV_DEFS_REGION, i, roles[i],
                         i < R_CALIB ? OTF2_PARADIGM_MPI : OTF2_PARADIGM_MEASUREMENT_SYSTEM, events[i],
                         names[i]);
    int p2p = rank == 0 ? R_SEND : R_RECV;
    /* Sites are named alike on both ranks where the call is the same. */
    char p2p_name[64], p2p_label[64];
    snprintf(p2p_name, sizeof p2p_name, "%s@/golden+0x30", names[p2p]);
    snprintf(p2p_label, sizeof p2p_label, "%s@golden+0x30", names[p2p]);
    pv_rec_defs_line(PV_DEFS_SITE, 0, R_INIT, -1, "MPI_Init@/golden+0x10", "MPI_Init@golden+0x10");
    pv_rec_defs_line(PV_DEFS_SITE, 1, R_ALLREDUCE, -1, "MPI_Allreduce@/golden+0x20",
                     "MPI_Allreduce@golden+0x20");
    pv_rec_defs_line(PV_DEFS_SITE, 2, p2p, -1, p2p_name, p2p_label);
    pv_rec_defs_line(PV_DEFS_SITE, 3, R_FINALIZE, -1, "MPI_Finalize@/golden+0x40",
                     "MPI_Finalize@golden+0x40");

    pv_rec_stream *s = pv_rec_open(dir, (uint32_t)rank, 0, 64 << 10);
    CHECK(s != NULL);
    uint64_t t = 1000;
    pv_rec_unit *u = pv_rec_call_begin(s, 0, t, rank);
    pv_rec_inner(s, PV_REC_NESTED, t, t + 100, t + 600, -1, R_CALIB);
    pv_rec_call_end(s, u, t, t + 1000, rank);
    t += 1000;
    int prev = 0;
    for (int i = 0; i < steps; i++) {
        uint64_t seg = 1000 + 100 * (uint64_t)(i % 100) + 50 * (uint64_t)rank;
        fprintf(golden, "%s\n  {\"rank\": %d, \"from\": %d, \"to\": 1, \"start_ns\": %llu, \"ns\": %llu}",
                prev == 0 && i == 0 ? "" : ",", rank, prev, (unsigned long long)t, (unsigned long long)seg);
        t += seg;
        u = pv_rec_call_begin(s, 1, t, rank);
        u->x = pv_rec_fact(s, PV_REC_FACT_COLL, OTF2_COLLECTIVE_OP_ALLREDUCE, 0, 0xFFFFFFFFu, 0, 16, 16);
        pv_rec_call_end(s, u, t, t + 500, rank);
        t += 500;
        fprintf(golden, ",\n  {\"rank\": %d, \"from\": 1, \"to\": 2, \"start_ns\": %llu, \"ns\": %llu}", rank,
                (unsigned long long)t, (unsigned long long)(seg + 300));
        t += seg + 300;
        u = pv_rec_call_begin(s, 2, t, rank);
        u->x = pv_rec_fact(s, PV_REC_FACT_MSG, 0, 0, (uint32_t)(1 - rank), 7, 64, 0);
        pv_rec_call_end(s, u, t, t + 200, rank);
        t += 200;
        prev = 2;
    }
    fprintf(golden, ",\n  {\"rank\": %d, \"from\": 2, \"to\": 3, \"start_ns\": %llu, \"ns\": 400}", rank,
            (unsigned long long)t);
    t += 400;
    u = pv_rec_call_begin(s, 3, t, rank);
    pv_rec_call_end(s, u, t, t + 300, rank);
    t += 300;
    CHECK(pv_rec_close(s, t) == 0);
    pv_rec_defs_close();
    return t;
}

/* The records file read back: the calls and their times as written. */
static void check_replay(const char *dir)
{
    char path[4400], why[256];
    snprintf(path, sizeof path, "%s/perfvar/records/rank-1.thread-0.pvr", dir);
    pv_rec_reader r;
    CHECK(pv_rec_reader_open(&r, path, why, sizeof why) == 0);
    CHECK(r.header.state == PV_REC_CLOSED);
    pv_rec_call c;
    int n = 0;
    while (pv_rec_reader_next(&r, &c)) {
        if (n == 0) CHECK(c.t_entry == 1000 && c.t_exit == 2000 && c.ninner == 1 && c.inner[0].t1 == 1600);
        if (n == 1) CHECK(c.site == 1 && c.t_entry == 2000 + 1050 && c.has_x && c.x.bytes == 16);
        if (n == 2) CHECK(c.site == 2 && c.has_x && c.x.peer == 0 && c.x.tag == 7 && c.x.bytes == 64);
        CHECK(!c.open && c.cpu_in == 1 && c.cpu_out == 1);
        n++;
    }
    CHECK(n == 2 + 2 * STEPS);
    pv_rec_reader_close(&r);
}

/* DIR/long: the same run over LONG_STEPS steps, several 1 MiB OTF2 chunks per location, for the
 * reader's test of an event file cut short (tests/python/test_reader_cut.py). */
static void write_long(const char *parent)
{
    char dir[4400], meta[4500];
    snprintf(dir, sizeof dir, "%s/long", parent);
    snprintf(meta, sizeof meta, "%s/perfvar", dir);
    mkdir(dir, 0755);
    mkdir(meta, 0755);
    FILE *sink = fopen("/dev/null", "w");
    pv_trace_comm comm;
    int rank = pv_fork_comm_start(2, &comm);
    CHECK(rank >= 0);
    record_rank(dir, rank, sink, LONG_STEPS);
    pv_convert_result res;
    char why[512];
    CHECK(pv_convert_rank(dir, rank, &comm, 1, &res, why, sizeof why) == 0);
    CHECK(res.threads[0].segments == 1 + 2 * LONG_STEPS && res.stats.flushes > 0);
    pv_convert_free(&res);
    fclose(sink);
    CHECK(pv_fork_comm_finish(&comm, check_failures ? 1 : 0) == 0);
}

/* A thread that died inside a call: the call is closed at the signal's time, in a trace of its own. */
static void check_dead_call(const char *parent)
{
    char dir[4400];
    snprintf(dir, sizeof dir, "%s/dead", parent);
    FILE *sink = fopen("/dev/null", "w");
    mkdir(dir, 0755);
    char meta[4500];
    snprintf(meta, sizeof meta, "%s/perfvar", dir);
    mkdir(meta, 0755);
    pv_trace_comm comm;
    int rank = pv_fork_comm_start(2, &comm);
    CHECK(rank >= 0);
    uint64_t end = record_rank(dir, rank, sink, STEPS);
    /* Reopen rank 1's records as if its run went on: one call begun, then a signal. */
    if (rank == 1) {
        char path[4500];
        snprintf(path, sizeof path, "%s/perfvar/records/rank-1.thread-0.pvr", dir);
        pv_rec_reader r;
        char why[256];
        CHECK(pv_rec_reader_open(&r, path, why, sizeof why) == 0);
        pv_rec_reader_close(&r);
        pv_rec_stream *s = pv_rec_open(dir, 1, 1, 64 << 10); /* a second thread, which dies */
        pv_rec_unit *u = pv_rec_call_begin(s, 1, end + 100, 1);
        (void)u;
        pv_rec_mark_signal(s, 15, PV_REC_SENT_OTHER, end + 900);
        /* Not closed: the process "died"; unmapped at exit, the file keeps what was stored. */
    }
    pv_convert_result res;
    char why[512];
    int rc = pv_convert_rank(dir, rank, &comm, 1, &res, why, sizeof why);
    CHECK(rc == 0);
    if (rank == 1) {
        CHECK(res.nthreads == 2);
        CHECK(res.threads[1].state == PV_REC_SIGNAL && res.threads[1].signal == 15 &&
              res.threads[1].sender == PV_REC_SENT_OTHER);
        CHECK(res.threads[1].ended_in_call && res.threads[1].t_last == end + 900);
    }
    pv_convert_free(&res);
    fclose(sink);
    CHECK(pv_fork_comm_finish(&comm, check_failures ? 1 : 0) == 0);
}

/* DIR/metrics: rank 0 counts two counters, rank 1 one of them (as on a node whose kernel refuses
 * the other); the Allreduce of every odd step reads them. Each read's deltas: counter k of the
 * rank counted 10^k (i + 1) + rank in step i's read. */
enum { METRIC_STEPS = 6 };
static const char *const metric_names[2][2] = {{"perf::TASK-CLOCK", "perf::PAGE-FAULTS"},
                                               {"perf::PAGE-FAULTS", NULL}};

static void record_metrics_rank(const char *dir, int rank, FILE *expected)
{
    open_defs(dir, rank);
    pv_rec_defs_line(PV_DEFS_REGION, 0, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_MPI, 0u, "MPI_Init");
    pv_rec_defs_line(PV_DEFS_REGION, 1, OTF2_REGION_ROLE_COLL_ALL2ALL, OTF2_PARADIGM_MPI, 0u,
                     "MPI_Allreduce");
    pv_rec_defs_line(PV_DEFS_SITE, 0, 0, -1, "MPI_Init@/m+0x10", "MPI_Init@m+0x10");
    pv_rec_defs_line(PV_DEFS_SITE, 1, 1, -1, "MPI_Allreduce@/m+0x20", "MPI_Allreduce@m+0x20");
    int n = rank == 0 ? 2 : 1;
    for (int k = 0; k < n; k++)
        pv_rec_defs_line(PV_DEFS_METRIC, k, metric_names[rank][k], k == 0 && rank == 0 ? "ns" : "",
                         "test counter");
    pv_rec_stream *s = pv_rec_open(dir, (uint32_t)rank, 0, 64 << 10);
    CHECK(s != NULL);
    uint64_t t = 1000, since = 1000;
    pv_rec_unit *u = pv_rec_call_begin(s, 0, t, rank);
    pv_rec_call_end(s, u, t, t + 1000, rank);
    t += 1000;
    int first = 0;
    for (int i = 0; i < METRIC_STEPS; i++) {
        t += 1000 + 100 * (uint64_t)i;
        u = pv_rec_call_begin(s, 1, t, rank);
        if (i % 2) { /* segment i (Init's exit is segment 0's start) ends with a read */
            uint64_t v[2];
            fprintf(expected, "%s\n  {\"rank\": %d, \"sample\": %d, \"first\": %d, \"values\": {",
                    ftell(expected) > 2 ? "," : "", rank, i, first);
            for (int k = 0; k < n; k++) {
                v[k] = (uint64_t)(k ? 10 : 1) * (uint64_t)(i + 1) + (uint64_t)rank;
                fprintf(expected, "%s\"%s\": %llu", k ? ", " : "", metric_names[rank][k],
                        (unsigned long long)v[k]);
            }
            fprintf(expected, "}}");
            pv_rec_metric(s, since, v, (unsigned)n);
            since = t, first = i + 1;
        }
        pv_rec_call_end(s, u, t, t + 500, rank);
        t += 500;
    }
    CHECK(pv_rec_close(s, t) == 0);
    pv_rec_defs_close();
}

/* The METRIC units read back as written, and the conversion's Metric events: zeros, then one per
 * read. */
static void check_metrics(const char *parent)
{
    char dir[4400], meta[4500], part[4600];
    snprintf(dir, sizeof dir, "%s/metrics", parent);
    snprintf(meta, sizeof meta, "%s/perfvar", dir);
    mkdir(dir, 0755);
    mkdir(meta, 0755);
    pv_trace_comm comm;
    int rank = pv_fork_comm_start(2, &comm);
    CHECK(rank >= 0);
    snprintf(part, sizeof part, "%s/expected.rank%d.part", dir, rank);
    FILE *expected = fopen(part, "w");
    CHECK(expected != NULL);
    fputs("  ", expected); /* ftell > 2: a row before */
    record_metrics_rank(dir, rank, expected);
    fclose(expected);
    pv_convert_result res;
    char why[512];
    CHECK(pv_convert_rank(dir, rank, &comm, 1, &res, why, sizeof why) == 0);
    CHECK(res.threads[0].metric_reads == METRIC_STEPS / 2);
    /* Per call and segment: Enter/Leave; the Allreduces carry no facts here; Metric events. */
    CHECK(res.threads[0].events == 2 * (1 + METRIC_STEPS) + 2 * METRIC_STEPS + 1 + METRIC_STEPS / 2);
    pv_convert_free(&res);
    CHECK(pv_fork_comm_finish(&comm, check_failures ? 1 : 0) == 0);

    char path[4600];
    snprintf(path, sizeof path, "%s/perfvar/records/rank-0.thread-0.pvr", dir);
    pv_rec_reader r;
    CHECK(pv_rec_reader_open(&r, path, why, sizeof why) == 0);
    pv_rec_call c;
    int calls = 0, reads = 0;
    uint64_t since = 1000;
    while (pv_rec_reader_next(&r, &c)) {
        if (c.nmetrics) {
            CHECK(c.nmetrics == 2 && c.metric_since == since);
            CHECK(c.metrics[0] == (uint64_t)calls && c.metrics[1] == 10 * (uint64_t)calls);
            since = c.t_entry, reads++;
        }
        calls++;
    }
    CHECK(calls == 1 + METRIC_STEPS && reads == METRIC_STEPS / 2);
    pv_rec_reader_close(&r);

    snprintf(path, sizeof path, "%s/expected.json", dir);
    FILE *out = fopen(path, "w");
    CHECK(out != NULL);
    fprintf(out, "{\"reads\": [");
    for (int k = 0; k < 2; k++) {
        char buf[8192];
        snprintf(part, sizeof part, "%s/expected.rank%d.part", dir, k);
        FILE *in = fopen(part, "r");
        CHECK(in != NULL);
        size_t n = fread(buf, 1, sizeof buf, in);
        fclose(in);
        remove(part);
        fprintf(out, "%s%.*s", k ? "," : "", (int)(n > 2 ? n - 2 : 0), buf + 2);
    }
    fprintf(out, "\n]}\n");
    fclose(out);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: unit_convert DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    char cmd[4500];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s/perfvar'", dir, dir);
    CHECK(system(cmd) == 0);
    char golden_path[4500];
    snprintf(golden_path, sizeof golden_path, "%s/golden.rank%%d.part", dir);

    pv_trace_comm comm;
    int rank = pv_fork_comm_start(2, &comm);
    CHECK(rank >= 0);
    char mine[4500];
    snprintf(mine, sizeof mine, golden_path, rank);
    FILE *golden = fopen(mine, "w");
    CHECK(golden != NULL);
    record_rank(dir, rank, golden, STEPS);
    fclose(golden);
    pv_convert_result res;
    char why[512];
    int rc = pv_convert_rank(dir, rank, &comm, 1, &res, why, sizeof why);
    if (rc) fprintf(stderr, "rank %d: %s\n", rank, why);
    CHECK(rc == 0);
    CHECK(res.nthreads == 1 && res.threads[0].state == PV_REC_CLOSED);
    CHECK(res.threads[0].calls == 2 + 2 * STEPS);
    CHECK(res.threads[0].segments == 1 + 2 * STEPS);
    /* Per call: its region's Enter/Leave; per segment: Enter/Leave; Init: the calibration inside;
     * per Allreduce: collective begin/end; per Send/Recv: one message event. */
    CHECK(res.threads[0].events == 2 * (2 + 2 * STEPS) + 2 * (1 + 2 * STEPS) + 2 + 2 * STEPS + STEPS);
    CHECK(res.stats.events_lost == 0);
    CHECK(res.cpus_seen[0] == (rank ? 2 : 1));
    pv_convert_free(&res);
    int failed = pv_fork_comm_finish(&comm, check_failures ? 1 : 0);
    CHECK(failed == 0);

    /* golden.json: both ranks' segments, as the Python reader must read them. */
    char path[4500];
    snprintf(path, sizeof path, "%s/golden.json", dir);
    FILE *out = fopen(path, "w");
    fprintf(out, "{\"timer_resolution_hz\": 1000000000, \"sites\": [\"MPI_Init@/golden+0x10\", "
                 "\"MPI_Allreduce@/golden+0x20\", \"P2P@/golden+0x30\", \"MPI_Finalize@/golden+0x40\"],\n"
                 " \"segments\": [");
    for (int r = 0; r < 2; r++) {
        snprintf(mine, sizeof mine, golden_path, r);
        FILE *in = fopen(mine, "r");
        CHECK(in != NULL);
        char buf[8192];
        size_t n = fread(buf, 1, sizeof buf, in);
        fclose(in);
        remove(mine);
        fprintf(out, "%s%.*s", r ? "," : "", (int)n, buf);
    }
    fprintf(out, "\n]}\n");
    fclose(out);

    check_replay(dir);
    check_dead_call(dir);
    write_long(dir);
    check_metrics(dir);
    return check_result();
}
