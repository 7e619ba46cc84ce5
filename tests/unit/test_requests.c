/* test_requests.c — non-blocking operations paired by handle when records are converted
 * (records.h): one forked rank whose two threads start requests on one thread and complete them on
 * the other, with handles that MPI hands out again, and a start whose request was freed. The
 * converted trace is read back with otf2-print; each completion must name its own start's request
 * id and carry the status's (or, without one, the posted receive's) sender, tag and size.
 *
 * Ticks are ns (a 1 GHz clock). Thread 0 (T0) and thread 1 (T1):
 *   T0 Irecv  [200, 210]  handle H, from MPI_ANY_SOURCE, tag 7         request 1 of T0
 *   T0 Isend  [220, 230]  handle S, to 0, tag 3                         request 2
 *   T0 Irecv  [350, 450]  handle H again: MPI returned it after T1 freed it in its Waitall (entered
 *                         at 400), from 0, tag 9, 16 bytes              request 3
 *   T1 Waitall [400, 500] completes H (status: from 0, tag 7, 8 bytes) and S
 *   T0 Isend  [520, 530]  handle F, to 0, tag 4                         request 4 (then freed)
 *   T0 Isend  [540, 550]  handle F again, to 0, tag 5                   request 5
 *   T1 Wait   [700, 800]  completes H, no status decoded
 *   T1 Wait   [820, 830]  completes F
 *   T1 Wait   [840, 850]  completes handle U, which no traced call started
 *
 * Usage: unit_requests DIR (created). Needs otf2-print (skipped with status 77 without it). */
#include "check.h"
#include "recorder/recorder.h"
#include "recover/comm_fork.h"
#include "trace/convert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { R_INIT, R_ISEND, R_IRECV, R_WAITALL, R_WAIT, R_FINALIZE, NREGIONS };
enum { SITE_INIT, SITE_ISEND, SITE_IRECV, SITE_WAITALL, SITE_WAIT, SITE_FINALIZE };
#define H 0x7f0000001000ull
#define S 0x7f0000002000ull
#define F 0x7f0000003000ull
#define U 0x7f0000004000ull
#define ID(thread, n) ((((uint64_t)(thread) + 1) << 40) | (n))

static void defs(const char *dir)
{
    static const char *names[NREGIONS] = {"MPI_Init", "MPI_Isend", "MPI_Irecv", "MPI_Waitall",
                                          "MPI_Wait", "MPI_Finalize"};
    static const unsigned events[NREGIONS] = {PV_REC_EV_NONE, PV_REC_EV_ISEND, PV_REC_EV_IRECV,
                                              PV_REC_EV_NONE, PV_REC_EV_NONE, PV_REC_EV_NONE};
    CHECK(pv_rec_defs_open(dir, 0) == 0);
    pv_rec_defs_line(PV_DEFS_RANK, 0, 1);
    pv_rec_defs_line(PV_DEFS_HOST, "requests");
    pv_rec_defs_line(PV_DEFS_CLOCK, 1e9);
    pv_rec_defs_line(PV_DEFS_SYNC, 0ULL, 0LL, 0.0);
    pv_rec_defs_line(PV_DEFS_REALTIME, 1700000000000000000ULL, 0ULL);
    for (int i = 0; i < NREGIONS; i++)
        pv_rec_defs_line(PV_DEFS_REGION, i, OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI,
                         events[i], names[i]);
    for (int i = 0; i < NREGIONS; i++) {
        char name[64], label[64];
        snprintf(name, sizeof name, "%s@/requests+0x%x", names[i], 0x10 * (i + 1));
        snprintf(label, sizeof label, "%s@requests+0x%x", names[i], 0x10 * (i + 1));
        pv_rec_defs_line(PV_DEFS_SITE, i, i, -1, name, label);
    }
    pv_rec_defs_close();
}

static void call(pv_rec_stream *s, int site, uint64_t t0, uint64_t t1, uint16_t x, uint64_t request)
{
    pv_rec_unit *u = pv_rec_call_begin(s, (uint32_t)site, t0, 0);
    u->x = x;
    if (request) pv_rec_request(s, request);
    pv_rec_call_end(s, u, t0, t1, 0);
}

static uint16_t msg(pv_rec_stream *s, int peer, int tag, uint64_t bytes)
{
    return pv_rec_fact(s, PV_REC_FACT_MSG, 0, 0, (uint32_t)peer, (uint32_t)tag, bytes, 0);
}

/* A Wait* at [t0, t1] completing handles[i] with status facts facts[i] (0: none). */
static void wait(pv_rec_stream *s, int site, uint64_t t0, uint64_t t1, int n, const uint64_t *handles,
                 const uint16_t *facts)
{
    pv_rec_unit *u = pv_rec_call_begin(s, (uint32_t)site, t0, 0);
    for (int i = 0; i < n; i++) pv_rec_complete(s, handles[i], facts[i]);
    pv_rec_call_end(s, u, t0, t1, 0);
}

static void record(const char *dir)
{
    defs(dir);
    pv_rec_stream *t0 = pv_rec_open(dir, 0, 0, 64 << 10), *t1 = pv_rec_open(dir, 0, 1, 64 << 10);
    CHECK(t0 && t1);
    if (!t0 || !t1) return;
    call(t0, SITE_INIT, 10, 100, 0, 0);
    call(t0, SITE_IRECV, 200, 210, msg(t0, -1, 7, 8), H);
    call(t0, SITE_ISEND, 220, 230, msg(t0, 0, 3, 4), S);
    call(t0, SITE_IRECV, 350, 450, msg(t0, 0, 9, 16), H);
    call(t0, SITE_ISEND, 520, 530, msg(t0, 0, 4, 4), F);
    call(t0, SITE_ISEND, 540, 550, msg(t0, 0, 5, 4), F);
    call(t0, SITE_FINALIZE, 900, 1000, 0, 0);
    uint16_t st = pv_rec_fact(t1, PV_REC_FACT_STATUS, 0, 0, 0, 7, 8, 0);
    uint16_t sent = pv_rec_fact(t1, PV_REC_FACT_STATUS, 0, 0, 0, 3, 4, 0);
    wait(t1, SITE_WAITALL, 400, 500, 2, (uint64_t[]){H, S}, (uint16_t[]){st, sent});
    wait(t1, SITE_WAIT, 700, 800, 1, (uint64_t[]){H}, (uint16_t[]){0});
    wait(t1, SITE_WAIT, 820, 830, 1, (uint64_t[]){F}, (uint16_t[]){0});
    wait(t1, SITE_WAIT, 840, 850, 1, (uint64_t[]){U}, (uint16_t[]){0});
    CHECK(pv_rec_close(t0, 1000) == 0);
    CHECK(pv_rec_close(t1, 850) == 0);
}

/* otf2-print's lines of event kind `kind` (the first word), in the order printed, into out. */
static int events(const char *dir, const char *kind, char out[][512], int max)
{
    char cmd[4500];
    snprintf(cmd, sizeof cmd, "otf2-print '%s/traces.otf2'", dir);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char line[512];
    int n = 0;
    size_t k = strlen(kind);
    while (fgets(line, sizeof line, p))
        if (!strncmp(line, kind, k) && line[k] == ' ' && n < max) snprintf(out[n++], 512, "%s", line);
    return pclose(p) == 0 ? n : -1;
}

static int has(const char *line, const char *what) { return strstr(line, what) != NULL; }

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: unit_requests DIR\n");
        return 2;
    }
    if (system("otf2-print --version > /dev/null 2>&1") != 0) SKIP("no otf2-print");
    const char *dir = argv[1];
    char cmd[4500];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s/perfvar'", dir, dir);
    CHECK(system(cmd) == 0);
    pv_trace_comm comm;
    int rank = pv_fork_comm_start(1, &comm);
    CHECK(rank == 0);
    record(dir);
    pv_convert_result res;
    char why[512];
    int rc = pv_convert_rank(dir, 0, &comm, 1, &res, why, sizeof why);
    if (rc) fprintf(stderr, "convert: %s\n", why);
    CHECK(rc == 0 && res.nthreads == 2);
    pv_convert_free(&res);
    CHECK(pv_fork_comm_finish(&comm, check_failures ? 1 : 0) == 0);

    char irecv[8][512], isend_done[8][512], requested[8][512], isend[8][512], id[64];
    CHECK(events(dir, "MPI_IRECV_REQUEST", requested, 8) == 2);
    CHECK(events(dir, "MPI_ISEND", isend, 8) == 3);
    int n = events(dir, "MPI_IRECV", irecv, 8);
    CHECKF(n == 2, "%d MpiIrecv events", n);
    if (n == 2) {
        snprintf(id, sizeof id, "Request: %llu", (unsigned long long)ID(0, 1));
        CHECKF(has(irecv[0], "Sender: 0") && has(irecv[0], "Tag: 7") && has(irecv[0], "Length: 8") &&
                   has(irecv[0], id), "first receive (the status's sender): %s", irecv[0]);
        snprintf(id, sizeof id, "Request: %llu", (unsigned long long)ID(0, 3));
        CHECKF(has(irecv[1], "Sender: 0") && has(irecv[1], "Tag: 9") && has(irecv[1], "Length: 16") &&
                   has(irecv[1], id), "second receive (as posted): %s", irecv[1]);
    }
    n = events(dir, "MPI_ISEND_COMPLETE", isend_done, 8);
    CHECKF(n == 2, "%d MpiIsendComplete events", n);
    if (n == 2) {
        snprintf(id, sizeof id, "Request: %llu\n", (unsigned long long)ID(0, 2));
        CHECKF(has(isend_done[0], id), "first send completed: %s", isend_done[0]);
        snprintf(id, sizeof id, "Request: %llu\n", (unsigned long long)ID(0, 5));
        CHECKF(has(isend_done[1], id), "the freed handle's second send completed: %s", isend_done[1]);
    }
    return check_result();
}
