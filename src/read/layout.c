/* layout.c — the layout of read.h's structs as compiled, for the Python side to check its own
 * copies against (tests/python/test_spec.py). See read.h. */
#include "read/read.h"
#include "pv_spec.h"

#include <stddef.h>
#include <string.h>

/* The structs are laid out as src/spec/contracts.py says (the build fails otherwise), and the
 * Python side's copies are made from the same table; what is asked here is what the compiler did,
 * for the Python side to compare with what ctypes and numpy did. */
PV_SPEC_CHECK_perfvar_read_result
PV_SPEC_CHECK_perfvar_read_sample
PV_SPEC_CHECK_perfvar_read_probe
PV_SPEC_CHECK_perfvar_read_metric
PV_SPEC_CHECK_READ_REGION_KINDS

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
    PV_SPEC_FIELDS_perfvar_read_result(PV_OFFSET)
    PV_SPEC_FIELDS_perfvar_read_sample(PV_OFFSET)
    PV_SPEC_FIELDS_perfvar_read_probe(PV_OFFSET)
    PV_SPEC_FIELDS_perfvar_read_metric(PV_OFFSET)
    return fields ? fields : -1;
}
