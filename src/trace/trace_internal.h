/* trace_internal.h — state shared by trace_writer.c (events) and trace_close.c (definitions). */
#ifndef PV_TRACE_INTERNAL_H
#define PV_TRACE_INTERNAL_H
#include "trace.h"

#include <pthread.h>

typedef struct pv_local_region {
    char *canonical, *display;
    OTF2_RegionRole role;
    OTF2_Paradigm paradigm;
} pv_local_region;

/* A communicator other than MPI_COMM_WORLD: its members' ranks in MPI_COMM_WORLD, in its rank
 * order. Communicators with the same members are one communicator in the trace. */
typedef struct pv_local_comm {
    uint32_t n;
    uint32_t *world_ranks;
} pv_local_comm;

/* Written by the location's own thread only (events), read by pv_trace_close after it joined. */
struct pv_trace_loc {
    OTF2_EvtWriter *evt;
    OTF2_AttributeList *attrs;
    uint64_t id;              /* OTF2 location id */
    uint32_t thread;          /* index in the rank, 0 = the thread that started tracing */
    uint64_t first_t, last_t; /* first and last timestamp written */
    int have_first;
    int refused;              /* OTF2 refused an event: the rest are counted lost, not written */
    int last_cpu;             /* the `cpu` last written on this location (-1: none, or unknown) */
    uint32_t *event_id;       /* rank-local region id -> its id in this location's events + 1
                                 (0: not used yet), grown on demand */
    uint32_t nevent_id;       /* entries of event_id */
    uint32_t *region_of;      /* id in this location's events -> rank-local region id */
    uint32_t nused, used_cap; /* regions this location has used, and room in region_of */
    pv_trace_stats stats;     /* events_written is set by pv_trace_close */
};

typedef struct pv_trace_state {
    OTF2_Archive *archive;
    pv_trace_comm comm;
    const pv_static_region *statics;
    int nstatic;
    size_t chunk_limit;       /* event chunks allowed per location before a flush */
    pthread_mutex_t lock;     /* dyn and locs */
    pv_local_region *dyn;     /* regions defined at run time, local id = nstatic + index */
    int ndyn, dyn_cap;
    pv_trace_loc **locs;      /* by creation order; pointers stay valid until the process ends */
    int nlocs, locs_cap;
    pv_local_comm *comms;     /* local comm id = 1 + index (0 = MPI_COMM_WORLD); under lock */
    int ncomms, comms_cap;
    int nmetrics;             /* the rank's counters (pv_trace_metrics_define): local metric class 0 */
    char **metric_text;       /* per counter: its name, unit and description, 3 strings each */
} pv_trace_state;

extern pv_trace_state pv_trace;

/* OTF2 location id of thread k of a rank. */
#define PV_LOCATION_ID(rank, k) (((uint64_t)(k) << 32) | (uint64_t)(uint32_t)(rank))

/* Attribute id of `cpu` (UINT32) and the communicator id of MPI_COMM_WORLD in every trace.
 * PV_CPU_UNKNOWN_VALUE: the `cpu` value that says the CPU is unknown from that event on. */
#define PV_ATTR_CPU 0
#define PV_CPU_UNKNOWN_VALUE UINT32_MAX
#define PV_COMM_WORLD 0
/* The rank's metric class in its event files (mapped to the global one, OTF2_MAPPING_METRIC). */
#define PV_METRIC_CLASS_LOCAL 0

#endif
