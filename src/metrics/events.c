/* events.c — which PAPI events the process counts (PERFVAR_METRICS); see metrics.h. */
#include "metrics.h"

#include <stdio.h>
#include <string.h>

#if defined(PERFVAR_HAVE_PAPI)
#include <papi.h>
#include <pthread.h>
#endif

typedef struct metric_def {
    char name[PV_METRICS_NAME_MAX];
    char unit[32];
    char description[128];
} metric_def;

static metric_def defs[PV_METRICS_MAX];
static int ndefs;

int pv_metrics_count(void) { return ndefs; }
const char *pv_metrics_name(int i) { return i >= 0 && i < ndefs ? defs[i].name : ""; }
const char *pv_metrics_unit(int i) { return i >= 0 && i < ndefs ? defs[i].unit : ""; }
const char *pv_metrics_description(int i) { return i >= 0 && i < ndefs ? defs[i].description : ""; }

/* Append "NAME (REASON)" to the failure line. */
static void note_failure(char *why, size_t len, const char *name, const char *reason)
{
    size_t at = strlen(why);
    if (at < len) snprintf(why + at, len - at, "%s%s (%s)", at ? ", " : "", name, reason);
}

#if defined(PERFVAR_HAVE_PAPI)
static unsigned long thread_id(void) { return (unsigned long)pthread_self(); }

/* Whether event name can be counted here: added to an event set of its own and started (the
 * kernel refuses at the start: perf_event_paranoid, no PMU). 0, or PAPI's error code. */
static int try_event(const char *name)
{
    int es = PAPI_NULL;
    int rc = PAPI_create_eventset(&es);
    if (rc != PAPI_OK) return rc;
    rc = PAPI_add_named_event(es, name);
    if (rc == PAPI_OK) {
        rc = PAPI_start(es);
        long long v[1];
        if (rc == PAPI_OK) PAPI_stop(es, v);
    }
    PAPI_cleanup_eventset(es);
    PAPI_destroy_eventset(&es);
    return rc;
}

static void keep(const char *name)
{
    metric_def *d = &defs[ndefs++];
    snprintf(d->name, sizeof d->name, "%s", name);
    d->unit[0] = 0;
    snprintf(d->description, sizeof d->description, "%s", name);
    int code;
    PAPI_event_info_t info;
    if (PAPI_event_name_to_code(name, &code) == PAPI_OK && PAPI_get_event_info(code, &info) == PAPI_OK) {
        snprintf(d->unit, sizeof d->unit, "%.*s", (int)sizeof d->unit - 1, info.units);
        if (info.long_descr[0])
            snprintf(d->description, sizeof d->description, "%.*s", (int)sizeof d->description - 1,
                     info.long_descr);
    }
    /* PAPI gives the kernel's clocks no unit; they count nanoseconds (perf_event_open(2)). The
     * event's own name ends before its modifiers ("perf::TASK-CLOCK:k=1"). */
    const char *pmu = strstr(name, "::");
    const char *mods = strchr(pmu ? pmu + 2 : name, ':');
    size_t n = mods ? (size_t)(mods - name) : strlen(name);
    if (!d->unit[0] && ((n >= 10 && !strncmp(name + n - 10, "TASK-CLOCK", 10)) ||
                        (n >= 9 && !strncmp(name + n - 9, "CPU-CLOCK", 9))))
        snprintf(d->unit, sizeof d->unit, "ns");
}
#endif

int pv_metrics_init(const char *spec, char *why, size_t len)
{
    int explicit = spec != NULL;
    why[0] = 0;
    ndefs = 0;
    if (!spec) spec = PV_METRICS_DEFAULT;
    if (!strcmp(spec, "none")) return 0;
#if defined(PERFVAR_HAVE_PAPI)
    int rc = PAPI_library_init(PAPI_VER_CURRENT);
    if (rc != PAPI_VER_CURRENT || (rc = PAPI_thread_init(thread_id)) != PAPI_OK) {
        if (explicit) snprintf(why, len, "PAPI cannot start (%s)", PAPI_strerror(rc));
        return 0;
    }
    char list[1024];
    snprintf(list, sizeof list, "%s", spec);
    char *save = NULL;
    for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        int dup = 0;
        for (int i = 0; i < ndefs; i++) dup |= !strcmp(defs[i].name, name);
        if (dup) continue;
        if (ndefs == PV_METRICS_MAX) {
            char reason[48];
            snprintf(reason, sizeof reason, "more than %d events", PV_METRICS_MAX);
            if (explicit) note_failure(why, len, name, reason);
            continue;
        }
        if (strlen(name) >= PV_METRICS_NAME_MAX) {
            if (explicit) note_failure(why, len, name, "name too long");
            continue;
        }
        /* The default software events count in the kernel too (":k=1"): a context switch or a
         * migration happens there, and in the user domain alone it counts 0. Where the kernel
         * domain is refused (perf_event_paranoid) the plain event, as PAPI's default domain. */
        char with_kernel[PV_METRICS_NAME_MAX];
        if (!explicit && snprintf(with_kernel, sizeof with_kernel, "%s:k=1", name) <
                             (int)sizeof with_kernel &&
            try_event(with_kernel) == PAPI_OK) {
            keep(with_kernel);
            continue;
        }
        rc = try_event(name);
        if (rc == PAPI_OK)
            keep(name);
        else if (explicit)
            note_failure(why, len, name, PAPI_strerror(rc));
    }
#else
    if (explicit) snprintf(why, len, "%s (perfvar was built without PAPI)", spec);
#endif
    return ndefs;
}
