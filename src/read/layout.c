/* layout.c — the layout of read.h's structs as compiled, for the Python side to check its own
 * copies against (tests/python/test_layouts.py). See read.h. */
#include "read/read.h"

#include <stddef.h>
#include <string.h>

/* Every field, in declaration order: a field renamed or removed no longer compiles, one added
 * shows in the struct's size. */
#define PV_FIELDS_RESULT(X)                                                                        \
    X(perfvar_read_result, evt_reader) X(perfvar_read_result, otf2_status)                         \
    X(perfvar_read_result, out_of_memory) X(perfvar_read_result, events_read)                      \
    X(perfvar_read_result, user_regions) X(perfvar_read_result, unclosed)                          \
    X(perfvar_read_result, unmatched_leaves) X(perfvar_read_result, open_at_end)                   \
    X(perfvar_read_result, first_sample) X(perfvar_read_result, nsamples)                          \
    X(perfvar_read_result, first_probe) X(perfvar_read_result, nprobes)                            \
    X(perfvar_read_result, overrun) X(perfvar_read_result, first_metric)                         \
    X(perfvar_read_result, nmetrics)
#define PV_FIELDS_SAMPLE(X)                                                                        \
    X(perfvar_read_sample, segment) X(perfvar_read_sample, rank) X(perfvar_read_sample, thread)    \
    X(perfvar_read_sample, start_ticks) X(perfvar_read_sample, duration_ns)                        \
    X(perfvar_read_sample, cpu_enter) X(perfvar_read_sample, cpu_leave)                            \
    X(perfvar_read_sample, context_bytes)
#define PV_FIELDS_PROBE(X)                                                                         \
    X(perfvar_read_probe, rank) X(perfvar_read_probe, thread) X(perfvar_read_probe, start_ticks)   \
    X(perfvar_read_probe, duration_ns) X(perfvar_read_probe, cpu)

#define PV_FIELDS_METRIC(X)                                                                        \
    X(perfvar_read_metric, rank) X(perfvar_read_metric, thread) X(perfvar_read_metric, sample)     \
    X(perfvar_read_metric, first) X(perfvar_read_metric, time_ticks)                               \
    X(perfvar_read_metric, since_ticks) X(perfvar_read_metric, values)

#define PV_OFFSET(T, F)                                                                            \
    if (strcmp(name, #T "." #F) == 0) return (long)offsetof(T, F);                               \
    fields += strcmp(name, #T ".#") == 0;

long perfvar_read_layout(const char *name)
{
    if (!name) return -1;
    if (strcmp(name, "perfvar_read_result") == 0) return (long)sizeof(perfvar_read_result);
    if (strcmp(name, "perfvar_read_sample") == 0) return (long)sizeof(perfvar_read_sample);
    if (strcmp(name, "perfvar_read_probe") == 0) return (long)sizeof(perfvar_read_probe);
    if (strcmp(name, "perfvar_read_metric") == 0) return (long)sizeof(perfvar_read_metric);
    long fields = 0;
    PV_FIELDS_RESULT(PV_OFFSET)
    PV_FIELDS_SAMPLE(PV_OFFSET)
    PV_FIELDS_PROBE(PV_OFFSET)
    PV_FIELDS_METRIC(PV_OFFSET)
    return fields ? fields : -1;
}
