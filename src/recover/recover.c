/*
 * perfvar-recover DIR — the OTF2 archive of a job that died before MPI_Finalize, from its records.
 *
 * A traced job leaves, per rank, DIR/perfvar/records/rank-R.defs and a records file per thread
 * (src/recorder). When the job ends normally its MPI_Finalize converts them into DIR/traces.otf2;
 * when it is killed (a batch system's SIGTERM at the wall-time limit, kill -9, MPI_Abort, a crash)
 * the records are on disk up to the moment of death and this tool converts them: one process per
 * rank, forked here and joined by a socket communicator (src/recover/comm_fork.h), each running the
 * same conversion MPI_Finalize runs (src/trace/convert.h). Nothing here needs MPI.
 *
 * It writes DIR/perfvar/ended-rank-R.json per rank: how each thread's records ended (closed at
 * MPI_Finalize, a signal, killed without a word, recording stopped by a full disk) and when (seconds
 * from the rank's start and as a UTC time), which `perfvar analyze` reads to say which ranks ended
 * early. An existing archive is replaced (it is made from the same records), unless every rank
 * finished normally (then there is nothing to recover: exit 0, unless --force; a clean finish has
 * removed the records unless PERFVAR_KEEP_RECORDS=1 was set, and --force then has none to use).
 *
 * Exit status: 0 recovered (or nothing to do), 1 conversion failed, 2 usage or DIR has no records.
 */
#define _GNU_SOURCE
#include "../recorder/defs_lines.h"
#include "../recorder/records.h"
#include "comm_fork.h"
#include "../trace/convert.h"
#include "perfvar.h"
#include "pv_spec.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *state_name(uint32_t state)
{
    switch (state) {
    case PV_REC_CLOSED: return "closed";
    case PV_REC_SIGNAL: return "signal";
    case PV_REC_FAILED: return "failed";
    default: return "running"; /* the process died without a word */
    }
}

/* Who sent the signal that ended a thread (records.h PV_REC_SENT_*). */
static const char *sender_name(uint32_t sender)
{
    switch (sender) {
    case PV_REC_SENT_PARENT: return "launcher";
    case PV_REC_SENT_OTHER: return "other";
    case PV_REC_SENT_FAULT: return "fault";
    default: return "";
    }
}

/* The rank line of rank 0's definitions (defs_lines.h): the job's size, or -1. */
static int job_size(const char *dir)
{
    char path[4400], line[256];
    snprintf(path, sizeof path, "%s/perfvar/records/rank-0.defs", dir);
    FILE *f = fopen(path, "r");
    int rank, size = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, PV_DEFS_RANK, &rank, &size) == 2) break;
    if (f) fclose(f);
    return size;
}

static int exists(const char *dir, const char *fmt, int rank)
{
    char name[256], path[4400];
    struct stat st;
    snprintf(name, sizeof name, fmt, rank);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

/* The job's size from rank 0's rank-0.json ("nranks"), for a directory whose records were removed
 * after a clean finish; -1 when it says none. Keys: src/spec/contracts.py's, as rank_meta.c writes
 * them. */
static int meta_size(const char *dir)
{
    char path[4400], line[512];
    snprintf(path, sizeof path, "%s/perfvar/rank-0.json", dir);
    FILE *f = fopen(path, "r");
    int size = -1;
    while (f && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "\"" PV_RJN_NRANKS "\":");
        if (p && sscanf(p, PV_RJ_NRANKS "%d", &size) == 1) break;
    }
    if (f) fclose(f);
    return size;
}

/* 1 if rank-R.json of every rank says its trace was written at MPI_Finalize. */
static int all_complete(const char *dir, int size)
{
    for (int r = 0; r < size; r++) {
        char path[4400], buf[65536];
        snprintf(path, sizeof path, "%s/perfvar/rank-%d.json", dir, r);
        FILE *f = fopen(path, "r");
        if (!f) return 0;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        if (!strstr(buf, PV_RJ_COMPLETE "true")) return 0;
    }
    return exists(dir, "traces.otf2", 0);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* Remove a partial archive left by a conversion that did not finish. */
static void remove_archive(const char *dir)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/traces", dir);
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    snprintf(path, sizeof path, "%s/traces.otf2", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/traces.def", dir);
    unlink(path);
}

/* DIR/perfvar/ended-rank-R.json: how the rank's threads ended. */
static int write_ended(const char *dir, int rank, const pv_convert_result *r, const char *why)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/perfvar/ended-rank-%d.json", dir, rank);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "{\n  " PV_ENDJ_RANK "%d,\n  " PV_ENDJ_RECOVERED "%s,\n  " PV_ENDJ_ERROR "\"", rank,
            why[0] ? "false" : "true");
    for (const char *p = why; *p; p++) fprintf(f, *p == '"' || *p == '\\' ? "\\%c" : "%c", *p);
    fprintf(f, "\",\n  " PV_ENDJ_THREADS "[");
    for (int i = 0; i < r->nthreads; i++) {
        const pv_convert_thread *t = &r->threads[i];
        double end_s = r->hz > 0 && t->t_last >= r->t_start ? (double)(t->t_last - r->t_start) / r->hz : 0;
        fprintf(f,
                "%s\n    {" PV_ENDJ_THREAD_THREAD "%u, " PV_ENDJ_THREAD_STATE "\"%s\", " PV_ENDJ_THREAD_SIGNAL
                "%d, " PV_ENDJ_THREAD_SENT_BY "\"%s\", " PV_ENDJ_THREAD_IN_MPI_CALL "%s, " PV_ENDJ_THREAD_END_S
                "%.6f, " PV_ENDJ_THREAD_END_UTC_NS "%.0f, " PV_ENDJ_THREAD_SILENCE_S "%.6f, "
                PV_ENDJ_THREAD_CALLS "%llu, " PV_ENDJ_THREAD_SEGMENTS "%llu, " PV_ENDJ_THREAD_LOST_RECORDS "%llu}",
                i ? "," : "", t->thread, state_name(t->state), t->signal, sender_name(t->sender),
                t->ended_in_call ? "true" : "false",
                end_s, (double)r->realtime_ns + end_s * 1e9,
                r->hz > 0 ? (double)t->silence_recent / r->hz : 0.0,
                (unsigned long long)t->calls,
                (unsigned long long)t->segments, (unsigned long long)t->lost_units);
    }
    fprintf(f, "%s]\n}\n", r->nthreads ? "\n  " : "");
    return fclose(f) == 0 ? 0 : -1;
}

static void usage(FILE *to)
{
    fprintf(to, "usage: perfvar-recover [--force] [--buffer-mb N] DIR\n"
                "Rebuild DIR/traces.otf2 from the records a traced job left in DIR/perfvar/records\n"
                "(after it was killed or crashed) and write DIR/perfvar/ended-rank-N.json.\n");
}

/* The command line: 0, -1 for --help (printed), or 2 (usage printed on stderr). */
static int parse_args(int argc, char **argv, int *force, unsigned *buffer_mb, const char **dir)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--force")) *force = 1;
        else if (!strcmp(argv[i], "--buffer-mb") && i + 1 < argc) *buffer_mb = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return usage(stdout), -1;
        else if (!*dir && argv[i][0] != '-') *dir = argv[i];
        else return usage(stderr), 2;
    }
    return *dir && *buffer_mb ? 0 : (usage(stderr), 2);
}

/* Whether dir's records can be converted (the job's size into *size), else the exit status
 * (0: nothing to recover, 2: no records or a rank left none), with its message printed. */
static int check_records(const char *dir, int force, int *size)
{
    *size = job_size(dir);
    /* A clean finish removes the records (unless PERFVAR_KEEP_RECORDS=1): nothing to recover. */
    if (*size <= 0 && meta_size(dir) > 0 && all_complete(dir, meta_size(dir))) {
        printf("perfvar-recover: %s: every rank wrote its trace at MPI_Finalize (its records were "
               "removed then); nothing to recover\n", dir);
        return 0;
    }
    if (*size <= 0) {
        fprintf(stderr, "perfvar-recover: %s has no perfvar records (%s/perfvar/records/rank-0.defs)\n",
                dir, dir);
        return 2;
    }
    int missing = 0;
    for (int r = 0; r < *size; r++)
        if (!exists(dir, "perfvar/records/rank-%d.defs", r)) {
            fprintf(stderr, "perfvar-recover: rank %d of %d left no records (it died before perfvar "
                            "started)\n", r, *size);
            missing++;
        }
    if (missing) return 2;
    if (!force && all_complete(dir, *size)) {
        printf("perfvar-recover: %s: every rank wrote its trace at MPI_Finalize; nothing to recover\n", dir);
        return 0;
    }
    return -1;
}

/* Converts one rank's records (this process is that rank of the forked job); its status. */
static int convert_one(const char *dir, int rank, pv_trace_comm *comm, unsigned buffer_mb)
{
    pv_convert_result res;
    char why[1024];
    int rc = pv_convert_rank(dir, rank, comm, buffer_mb, &res, why, sizeof why);
    if (rc != PERFVAR_OK && !why[0]) snprintf(why, sizeof why, "%s", perfvar_strerror(rc));
    if (rc != PERFVAR_OK) fprintf(stderr, "perfvar-recover: rank %d: %s\n", rank, why);
    if (write_ended(dir, rank, &res, rc == PERFVAR_OK ? "" : why))
        fprintf(stderr, "perfvar-recover: cannot write %s/perfvar/ended-rank-%d.json\n", dir, rank);
    pv_convert_free(&res);
    return rc;
}

int main(int argc, char **argv)
{
    int force = 0, size;
    unsigned buffer_mb = 16;
    const char *dir = NULL;
    int st = parse_args(argc, argv, &force, &buffer_mb, &dir);
    if (st) return st < 0 ? 0 : st;
    st = check_records(dir, force, &size);
    if (st >= 0) return st;
    remove_archive(dir);
    fflush(NULL);
    pv_trace_comm comm;
    int rank = pv_fork_comm_start(size, &comm);
    if (rank < 0) {
        fprintf(stderr, "perfvar-recover: cannot start %d processes: %s\n", size, strerror(errno));
        return 1;
    }
    int rc = convert_one(dir, rank, &comm, buffer_mb);
    /* Only rank 0 (this process) returns from finish: the children exit with their status. */
    int failed = pv_fork_comm_finish(&comm, rc == PERFVAR_OK ? 0 : 1) + (rc != PERFVAR_OK);
    if (failed) {
        fprintf(stderr, "perfvar-recover: %s: %d of %d ranks could not be converted\n", dir, failed, size);
        return 1;
    }
    printf("perfvar-recover: %s: the trace of %d ranks rebuilt from their records\n", dir, size);
    return 0;
}
