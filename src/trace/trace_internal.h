/* trace_internal.h — state shared by trace_writer.c (events) and trace_close.c (definitions). */
#ifndef PV_TRACE_INTERNAL_H
#define PV_TRACE_INTERNAL_H
#include "trace.h"

typedef struct pv_local_region {
    char *canonical, *display;
    OTF2_RegionRole role;
    OTF2_Paradigm paradigm;
} pv_local_region;

typedef struct pv_trace_state {
    OTF2_Archive *archive;
    OTF2_EvtWriter *evt;
    OTF2_AttributeList *attrs;
    pv_trace_comm comm;
    const pv_static_region *statics;
    int nstatic;
    pv_local_region *dyn; /* regions defined at run time, local id = nstatic + index */
    int ndyn, dyn_cap;
    uint64_t first_t, last_t; /* first and last timestamp written */
    int have_first;
    size_t chunk_limit;       /* event chunks allowed before a flush */
    pv_trace_stats stats;
} pv_trace_state;

extern pv_trace_state pv_trace;

/* Attribute id of `cpu` (UINT32) and the communicator id of MPI_COMM_WORLD in every trace. */
#define PV_ATTR_CPU 0
#define PV_COMM_WORLD 0

#endif
