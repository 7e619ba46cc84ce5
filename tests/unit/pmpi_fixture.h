/*
 * pmpi_fixture.h — what the unit tests of src/pmpi share, without mpiexec: a scratch trace
 * directory with the rank's definitions file open, as pv_start leaves them, and the runtime the
 * tested files are given (fixture_rt: that directory, rank 0 of 1, depth-1 call sites, 1 MiB
 * record buffers), and the definitions file's lines read back.
 * The tests link the build's MPI layer, whose pv_* functions are exported; nothing here calls MPI.
 */
#ifndef PV_TEST_PMPI_FIXTURE_H
#define PV_TEST_PMPI_FIXTURE_H
#define _GNU_SOURCE
#include "check.h"
#include "lifecycle.h"
#include "threads.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char fixture_dir[128];
static pv_runtime fixture_rt; /* what pv_start would hand the files under test */

/* Make the scratch directory and open its definitions file; exits (status 1) when it cannot. */
static inline void fixture_open(const char *name)
{
    char meta[256];
    snprintf(fixture_dir, sizeof fixture_dir, "/tmp/pv_unit_%s.XXXXXX", name);
    snprintf(meta, sizeof meta, "%s/perfvar", mkdtemp(fixture_dir) ? fixture_dir : "");
    if (!fixture_dir[0] || mkdir(meta, 0755) || pv_rec_defs_open(fixture_dir, 0)) {
        fprintf(stderr, "cannot make the scratch trace directory %s\n", fixture_dir);
        exit(1);
    }
    snprintf(fixture_rt.dir, sizeof fixture_rt.dir, "%s", fixture_dir);
    fixture_rt.rank = 0, fixture_rt.size = 1;
    fixture_rt.cfg.boundaries = PV_BOUNDARIES_DEFAULT;
    fixture_rt.cfg.callpath = 1;
    fixture_rt.cfg.buffer_mb = 1;
}

/* The definitions lines of one kind ("site", "comm", ...): their number (-1: no file); the first
 * max of them into ids[] (their first field) and lines[] (without the newline, cut at 511 bytes),
 * each when not NULL. */
static inline int fixture_defs(const char *kind, int *ids, char (*lines)[512], int max)
{
    char path[300], line[8192];
    snprintf(path, sizeof path, "%s/perfvar/records/rank-0.defs", fixture_dir);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t k = strlen(kind);
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, kind, k) || line[k] != '\t') continue;
        line[strcspn(line, "\n")] = 0;
        if (n < max) {
            if (ids) ids[n] = atoi(line + k + 1);
            if (lines) snprintf(lines[n], 512, "%.511s", line);
        }
        n++;
    }
    fclose(f);
    return n;
}

static inline int fixture_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* Close the definitions file and remove the scratch directory (kept when a check failed). */
static inline void fixture_close(void)
{
    pv_rec_defs_close();
    if (check_failures) fprintf(stderr, "kept %s\n", fixture_dir);
    else nftw(fixture_dir, fixture_rm, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
