/*
 * defs_lines.h — the lines of a rank's definitions file (perfvar/records/rank-R.defs), in one
 * table: what the MPI layer writes (pv_rec_defs_line(PV_DEFS_<KIND>, ...), recorder.h) and what
 * the converter parses (src/trace/convert.c, by PV_DEFS_LINE_KINDS). A line is its kind, then its
 * fields, separated by tabs; strings in it have had their tabs and newlines replaced
 * (pv_rec_defs_clean). A reader skips a kind it does not know (a newer writer's). Constants
 * only; thread-safe.
 */
#ifndef PERFVAR_DEFS_LINES_H
#define PERFVAR_DEFS_LINES_H

/* The printf format of each kind: its name up to the first tab, then its fields. */
#define PV_DEFS_RANK "rank\t%d\t%d"                    /* world rank, world size */
#define PV_DEFS_HOST "host\t%s"                        /* host name */
#define PV_DEFS_PLACE "place\t%d\t%d"                  /* where the rank ran in its host: its
                                                        * socket (package) and core, each -1
                                                        * where its CPUs span several or it is
                                                        * not known (the system tree's level) */
#define PV_DEFS_CLOCK "clock\t%.3f"                    /* timer ticks per second */
#define PV_DEFS_SYNC "sync\t%llu\t%lld\t%.6g"          /* ticks, offset to rank 0 (ticks), its sd;
                                                        * the first at the start, a later one at the
                                                        * end */
#define PV_DEFS_REALTIME "realtime\t%llu\t%llu"        /* ns since the epoch, ticks at that moment */
#define PV_DEFS_REGION "region\t%d\t%d\t%d\t%u\t%s"    /* id (dense, in order), OTF2 role, OTF2
                                                        * paradigm, event kinds it records, name */
#define PV_DEFS_SITE "site\t%d\t%d\t%d\t%s\t%s"        /* id, region, user handle or -1, name, label */
#define PV_DEFS_USER "user\t%d\t%s"                    /* user timer handle, its name */
#define PV_DEFS_METRIC "metric\t%d\t%s\t%s\t%s"        /* index (dense, in order), name, unit,
                                                        * description */
#define PV_DEFS_COMM "comm\t%d\t%d\t%s"                /* id (from 1), members N, the N world ranks
                                                        * separated by tabs */

/* X(KIND, parser, fields a line needs at least (with its kind), fields it is split into at most:
 * the last keeps its tabs). A communicator's members stay in one field. */
#define PV_DEFS_LINE_KINDS(X) \
    X(RANK, rank, 3, 7)        \
    X(HOST, host, 2, 7)        \
    X(PLACE, place, 3, 7)      \
    X(CLOCK, clock, 2, 7)      \
    X(SYNC, sync, 4, 7)        \
    X(REALTIME, realtime, 3, 7) \
    X(REGION, region, 6, 7)    \
    X(SITE, site, 6, 7)        \
    X(USER, user, 3, 7)        \
    X(METRIC, metric, 5, 7)    \
    X(COMM, comm, 3, 4)

#endif
