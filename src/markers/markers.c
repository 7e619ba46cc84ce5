/*
 * perfvar-markers [--group NAME] TRACE < MARKERS — replace one group of OTF2 markers of a trace.
 *
 * OTF2 keeps markers beside the archive (TRACE/traces.marker for TRACE/traces.otf2), in a file
 * that can be rewritten after the trace was made; Vampir shows them on the timeline, on the row
 * of their scope. `perfvar analyze` passes one marker per anomaly it found here; every marker of
 * the group (default "perfvar") already in the file is replaced, those of other groups are kept
 * as they are, so analysing a trace again leaves one set of perfvar markers.
 *
 * TRACE is a trace directory (holding traces.otf2) or an anchor file. MARKERS, on stdin: one
 * marker a line, six tab-separated fields:
 *   category  severity  start_ns  end_ns  scope  text
 * - severity: NONE, LOW, MEDIUM or HIGH. A category has one severity (it is one OTF2 marker
 *   definition: group, category, severity).
 * - start_ns, end_ns: ns since the trace's time origin (ClockProperties' global offset), as
 *   `perfvar analyze` gives times; "-" for the start or the end of the trace. Converted to the
 *   trace's ticks (offset + ns * resolution / 1e9) and clipped to the trace's time range.
 * - scope: GLOBAL, LOCATION:<location id> or LOCATION_GROUP:<location group id>; the id must be
 *   defined in the trace.
 * - text: the rest of the line (shown with the marker).
 * Nothing is written unless every line is valid. No MPI, no perfvar library: only OTF2.
 *
 * Exit status: 0 written, 1 the trace or its marker file could not be read or written, 2 usage or
 * an invalid line (the marker file is then left as it was).
 */
#include <otf2/otf2.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOOL "perfvar-markers"

typedef struct marker_def {
    OTF2_MarkerRef ref;
    char *group, *category;
    OTF2_MarkerSeverity severity;
} marker_def;

typedef struct marker {
    OTF2_TimeStamp time, duration;
    OTF2_MarkerRef ref;
    OTF2_MarkerScope scope;
    uint64_t scope_ref;
    char *text;
} marker;

typedef struct markers {
    marker_def *defs;
    size_t ndefs, defs_cap;
    marker *marks;
    size_t nmarks, marks_cap;
} markers;

typedef struct trace_defs {
    uint64_t resolution, offset, length;
    int have_clock;
    uint64_t *locations, *groups;
    size_t nlocations, locations_cap, ngroups, groups_cap;
} trace_defs;

/* Room for one more element of `elem` bytes in the array *a of *n used out of *cap (doubled when
 * full, from `first`); -1 on no memory, the array unchanged. */
static int reserve(void *a, size_t n, size_t *cap, size_t elem, size_t first)
{
    if (n < *cap) return 0;
    size_t c = *cap ? 2 * *cap : first;
    void *p = realloc(*(void **)a, c * elem);
    if (!p) return -1;
    *(void **)a = p, *cap = c;
    return 0;
}

/* Appends v to a growable array of uint64_t; -1 on no memory. */
static int push_u64(uint64_t **a, size_t *n, size_t *cap, uint64_t v)
{
    if (reserve(a, *n, cap, sizeof **a, 64)) return -1;
    (*a)[(*n)++] = v;
    return 0;
}

static int add_def(markers *m, OTF2_MarkerRef ref, const char *group, const char *category,
                   OTF2_MarkerSeverity severity)
{
    if (reserve(&m->defs, m->ndefs, &m->defs_cap, sizeof *m->defs, 16)) return -1;
    marker_def *d = &m->defs[m->ndefs];
    d->ref = ref, d->severity = severity;
    d->group = strdup(group), d->category = strdup(category);
    if (!d->group || !d->category) return free(d->group), free(d->category), -1;
    m->ndefs++;
    return 0;
}

static int add_marker(markers *m, const marker *mk)
{
    if (reserve(&m->marks, m->nmarks, &m->marks_cap, sizeof *m->marks, 64)) return -1;
    m->marks[m->nmarks] = *mk;
    if (!(m->marks[m->nmarks].text = strdup(mk->text ? mk->text : ""))) return -1;
    m->nmarks++;
    return 0;
}

static void free_markers(markers *m)
{
    for (size_t i = 0; i < m->ndefs; i++) free(m->defs[i].group), free(m->defs[i].category);
    for (size_t i = 0; i < m->nmarks; i++) free(m->marks[i].text);
    free(m->defs), free(m->marks);
}

/* ---- reading the trace's definitions and its existing markers ---- */

static OTF2_CallbackCode on_clock(void *u, uint64_t resolution, uint64_t offset, uint64_t length,
                                  uint64_t realtime)
{
    trace_defs *t = u;
    (void)realtime;
    t->resolution = resolution, t->offset = offset, t->length = length, t->have_clock = 1;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_location(void *u, OTF2_LocationRef self, OTF2_StringRef name,
                                     OTF2_LocationType type, uint64_t events,
                                     OTF2_LocationGroupRef group)
{
    trace_defs *t = u;
    (void)name, (void)type, (void)events, (void)group;
    return push_u64(&t->locations, &t->nlocations, &t->locations_cap, self)
               ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_location_group(void *u, OTF2_LocationGroupRef self, OTF2_StringRef name,
                                           OTF2_LocationGroupType type, OTF2_SystemTreeNodeRef parent,
                                           OTF2_LocationGroupRef creator)
{
    trace_defs *t = u;
    (void)name, (void)type, (void)parent, (void)creator;
    return push_u64(&t->groups, &t->ngroups, &t->groups_cap, self)
               ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_def_marker(void *u, OTF2_MarkerRef self, const char *group,
                                       const char *category, OTF2_MarkerSeverity severity)
{
    return add_def(u, self, group ? group : "", category ? category : "", severity)
               ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_marker(void *u, OTF2_TimeStamp time, OTF2_TimeStamp duration,
                                   OTF2_MarkerRef ref, OTF2_MarkerScope scope, uint64_t scope_ref,
                                   const char *text)
{
    marker mk = {time, duration, ref, scope, scope_ref, (char *)text};
    return add_marker(u, &mk) ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
}

static int read_trace_defs(const char *anchor, trace_defs *t)
{
    OTF2_Reader *r = OTF2_Reader_Open(anchor);
    if (!r) return -1;
    int rc = -1;
    OTF2_GlobalDefReader *g = OTF2_Reader_GetGlobalDefReader(r);
    OTF2_GlobalDefReaderCallbacks *cb = OTF2_GlobalDefReaderCallbacks_New();
    uint64_t n = 0;
    if (g && cb && OTF2_Reader_SetSerialCollectiveCallbacks(r) == OTF2_SUCCESS &&
        OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(cb, on_clock) == OTF2_SUCCESS &&
        OTF2_GlobalDefReaderCallbacks_SetLocationCallback(cb, on_location) == OTF2_SUCCESS &&
        OTF2_GlobalDefReaderCallbacks_SetLocationGroupCallback(cb, on_location_group) ==
            OTF2_SUCCESS &&
        OTF2_Reader_RegisterGlobalDefCallbacks(r, g, cb, t) == OTF2_SUCCESS &&
        OTF2_Reader_ReadAllGlobalDefinitions(r, g, &n) == OTF2_SUCCESS && t->have_clock)
        rc = 0;
    if (cb) OTF2_GlobalDefReaderCallbacks_Delete(cb);
    if (OTF2_Reader_Close(r) != OTF2_SUCCESS) rc = -1;
    return rc;
}

/* The markers already in the trace's marker file (none when it does not exist). */
static int read_markers(const char *anchor, const char *marker_file, markers *m)
{
    if (access(marker_file, F_OK) != 0) return errno == ENOENT ? 0 : -1;
    OTF2_Reader *r = OTF2_Reader_Open(anchor);
    if (!r) return -1;
    int rc = -1;
    OTF2_MarkerReader *mr = OTF2_Reader_GetMarkerReader(r);
    OTF2_MarkerReaderCallbacks *cb = OTF2_MarkerReaderCallbacks_New();
    uint64_t n = 0;
    if (mr && cb && OTF2_Reader_SetSerialCollectiveCallbacks(r) == OTF2_SUCCESS &&
        OTF2_MarkerReaderCallbacks_SetDefMarkerCallback(cb, on_def_marker) == OTF2_SUCCESS &&
        OTF2_MarkerReaderCallbacks_SetMarkerCallback(cb, on_marker) == OTF2_SUCCESS &&
        OTF2_Reader_RegisterMarkerCallbacks(r, mr, cb, m) == OTF2_SUCCESS &&
        OTF2_Reader_ReadAllMarkers(r, mr, &n) == OTF2_SUCCESS)
        rc = 0;
    if (cb) OTF2_MarkerReaderCallbacks_Delete(cb);
    if (mr && OTF2_Reader_CloseMarkerReader(r, mr) != OTF2_SUCCESS) rc = -1;
    if (OTF2_Reader_Close(r) != OTF2_SUCCESS) rc = -1;
    return rc;
}

/* ---- parsing the input ---- */

static int has_u64(const uint64_t *a, size_t n, uint64_t v)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] == v) return 1;
    return 0;
}

static int parse_severity(const char *s, OTF2_MarkerSeverity *out)
{
    static const char *names[] = {"NONE", "LOW", "MEDIUM", "HIGH"};
    static const OTF2_MarkerSeverity values[] = {OTF2_SEVERITY_NONE, OTF2_SEVERITY_LOW,
                                                 OTF2_SEVERITY_MEDIUM, OTF2_SEVERITY_HIGH};
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, names[i])) return *out = values[i], 0;
    return -1;
}

/* A time field: "-" is `dflt`; else ns since the trace's origin, as ticks clipped to [lo, hi]. */
static int parse_time(const char *s, const trace_defs *t, uint64_t lo, uint64_t hi, uint64_t dflt,
                      uint64_t *out)
{
    if (!strcmp(s, "-")) return *out = dflt, 0;
    char *end;
    errno = 0;
    double ns = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(ns)) return -1;
    double ticks = (double)t->offset + ns * (double)t->resolution / 1e9;
    *out = ticks <= (double)lo ? lo : ticks >= (double)hi ? hi : (uint64_t)llround(ticks);
    return 0;
}

static int parse_scope(const char *s, const trace_defs *t, OTF2_MarkerScope *scope, uint64_t *ref)
{
    const char *colon = strchr(s, ':');
    if (!strcmp(s, "GLOBAL")) return *scope = OTF2_MARKER_SCOPE_GLOBAL, *ref = OTF2_UNDEFINED_UINT64, 0;
    if (!colon || !colon[1]) return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(colon + 1, &end, 10);
    if (*end || errno) return -1;
    *ref = v;
    size_t kind = (size_t)(colon - s);
    if (kind == strlen("LOCATION") && !strncmp(s, "LOCATION", kind)) {
        *scope = OTF2_MARKER_SCOPE_LOCATION;
        return has_u64(t->locations, t->nlocations, v) ? 0 : -1;
    }
    if (kind == strlen("LOCATION_GROUP") && !strncmp(s, "LOCATION_GROUP", kind)) {
        *scope = OTF2_MARKER_SCOPE_LOCATION_GROUP;
        return has_u64(t->groups, t->ngroups, v) ? 0 : -1;
    }
    return -1;
}

/* The input's markers as definitions (refs from first_ref on) and markers; 0, or -1 with the
 * reason in why. */
static int parse_input(FILE *in, const trace_defs *t, const char *group, OTF2_MarkerRef first_ref,
                       markers *out, char *why, size_t why_len)
{
    uint64_t lo = t->offset, hi = t->length ? t->offset + t->length - 1 : t->offset;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, rc = 0;
    while (rc == 0 && (len = getline(&line, &cap, in)) >= 0) {
        lineno++;
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (!len) continue;
        char *f[6], *p = line;
        int nf = 0;
        for (; nf < 5; nf++) { /* the sixth field, the text, takes the rest of the line */
            char *tab = strchr(p, '\t');
            if (!tab) break;
            f[nf] = p, *tab = 0, p = tab + 1;
        }
        f[nf++] = p;
        OTF2_MarkerSeverity severity;
        marker mk = {0};
        uint64_t end;
        const char *bad = NULL;
        if (nf != 6) bad = "not six tab-separated fields";
        else if (!*f[0]) bad = "empty category";
        else if (parse_severity(f[1], &severity)) bad = "severity not NONE, LOW, MEDIUM or HIGH";
        else if (parse_time(f[2], t, lo, hi, lo, &mk.time) || parse_time(f[3], t, lo, hi, hi, &end))
            bad = "a time is neither a number of ns nor -";
        else if (end < mk.time) bad = "it ends before it starts";
        else if (parse_scope(f[4], t, &mk.scope, &mk.scope_ref))
            bad = "scope not GLOBAL, LOCATION:<id> or LOCATION_GROUP:<id> of the trace";
        if (bad) {
            snprintf(why, why_len, "line %d: %s", lineno, bad);
            rc = -1;
            break;
        }
        mk.duration = end - mk.time;
        mk.text = f[5];
        mk.ref = OTF2_UNDEFINED_MARKER;
        for (size_t i = 0; i < out->ndefs; i++)
            if (!strcmp(out->defs[i].category, f[0])) {
                if (out->defs[i].severity != severity) {
                    snprintf(why, why_len, "line %d: category '%s' given two severities", lineno,
                             f[0]);
                    rc = -1;
                }
                mk.ref = out->defs[i].ref;
            }
        if (rc == 0 && mk.ref == OTF2_UNDEFINED_MARKER) {
            mk.ref = first_ref + (OTF2_MarkerRef)out->ndefs;
            if (add_def(out, mk.ref, group, f[0], severity)) rc = -1, snprintf(why, why_len, "out of memory");
        }
        if (rc == 0 && add_marker(out, &mk)) rc = -1, snprintf(why, why_len, "out of memory");
    }
    free(line);
    return rc;
}

/* ---- writing ---- */

static int write_markers(const char *anchor, const markers *kept, const markers *ours)
{
    OTF2_Reader *r = OTF2_Reader_Open(anchor);
    if (!r) return -1;
    int rc = -1;
    OTF2_MarkerWriter *w = NULL;
    if (OTF2_Reader_SetSerialCollectiveCallbacks(r) == OTF2_SUCCESS &&
        (w = OTF2_Reader_GetMarkerWriter(r))) {
        rc = 0;
        const markers *sets[2] = {kept, ours};
        for (int s = 0; s < 2; s++) {
            for (size_t i = 0; rc == 0 && i < sets[s]->ndefs; i++) {
                const marker_def *d = &sets[s]->defs[i];
                if (OTF2_MarkerWriter_WriteDefMarker(w, d->ref, d->group, d->category,
                                                     d->severity) != OTF2_SUCCESS)
                    rc = -1;
            }
        }
        for (int s = 0; s < 2; s++) {
            for (size_t i = 0; rc == 0 && i < sets[s]->nmarks; i++) {
                const marker *m = &sets[s]->marks[i];
                if (OTF2_MarkerWriter_WriteMarker(w, m->time, m->duration, m->ref, m->scope,
                                                  m->scope_ref, m->text) != OTF2_SUCCESS)
                    rc = -1;
            }
        }
        if (OTF2_Reader_CloseMarkerWriter(r, w) != OTF2_SUCCESS) rc = -1;
    }
    if (OTF2_Reader_Close(r) != OTF2_SUCCESS) rc = -1;
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: " TOOL " [--group NAME] TRACE < MARKERS\n"
               "Replace the OTF2 markers of group NAME (default perfvar) of TRACE (a trace directory\n"
               "or its .otf2 anchor file) with those on stdin, one a line:\n"
               "  category<TAB>severity<TAB>start_ns<TAB>end_ns<TAB>scope<TAB>text\n"
               "severity NONE|LOW|MEDIUM|HIGH; times in ns since the trace's origin or - (its start,\n"
               "its end); scope GLOBAL, LOCATION:<id> or LOCATION_GROUP:<id>.\n");
}

int main(int argc, char **argv)
{
    const char *group = "perfvar", *trace = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--group") && i + 1 < argc) group = argv[++i];
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return usage(stdout), 0;
        else if (!trace && argv[i][0] != '-') trace = argv[i];
        else return usage(stderr), 2;
    }
    if (!trace || !*group) return usage(stderr), 2;
    size_t n = strlen(trace);
    int is_anchor = n > 5 && !strcmp(trace + n - 5, ".otf2");
    char anchor[4200], marker_file[4200];
    if (is_anchor) snprintf(anchor, sizeof anchor, "%s", trace);
    else snprintf(anchor, sizeof anchor, "%s/traces.otf2", trace);
    n = strlen(anchor);
    snprintf(marker_file, sizeof marker_file, "%.*s.marker", (int)(n - 5), anchor);
    if (access(anchor, R_OK) != 0) {
        fprintf(stderr, TOOL ": %s: %s\n", anchor, strerror(errno));
        return 2;
    }

    trace_defs t = {0};
    markers existing = {0}, kept = {0}, ours = {0};
    OTF2_MarkerRef next = 0;
    size_t replaced = 0;
    int rc = 1;
    char why[256] = "";
    if (read_trace_defs(anchor, &t)) {
        fprintf(stderr, TOOL ": %s: cannot read its definitions (clock properties, locations)\n",
                anchor);
        goto out;
    }
    if (read_markers(anchor, marker_file, &existing)) {
        fprintf(stderr, TOOL ": %s: cannot read it\n", marker_file);
        goto out;
    }
    /* Keep the other groups' definitions and markers (with their refs); a marker whose
     * definition is missing is kept too: it is not ours to judge. New refs follow every ref in
     * use. */
    for (size_t i = 0; i < existing.ndefs; i++) {
        const marker_def *d = &existing.defs[i];
        if (d->ref >= next) next = d->ref + 1;
        if (strcmp(d->group, group) && add_def(&kept, d->ref, d->group, d->category, d->severity))
            goto nomem;
    }
    for (size_t i = 0; i < existing.nmarks; i++) {
        const marker *m = &existing.marks[i];
        int ours_before = 0;
        if (m->ref >= next && m->ref != OTF2_UNDEFINED_MARKER) next = m->ref + 1;
        for (size_t j = 0; j < existing.ndefs; j++)
            if (existing.defs[j].ref == m->ref && !strcmp(existing.defs[j].group, group))
                ours_before = 1;
        if (ours_before) replaced++;
        else if (add_marker(&kept, m)) goto nomem;
    }
    if (parse_input(stdin, &t, group, next, &ours, why, sizeof why)) {
        fprintf(stderr, TOOL ": %s\n", why);
        rc = 2;
        goto out;
    }
    if (write_markers(anchor, &kept, &ours)) {
        fprintf(stderr, TOOL ": %s: cannot write the markers\n", marker_file);
        goto out;
    }
    printf(TOOL ": %s: %zu markers of group \"%s\" (%zu replaced), %zu of other groups kept\n",
           marker_file, ours.nmarks, group, replaced, kept.nmarks);
    rc = 0;
    goto out;
nomem:
    fprintf(stderr, TOOL ": out of memory\n");
out:
    free_markers(&existing), free_markers(&kept), free_markers(&ours);
    free(t.locations), free(t.groups);
    return rc;
}
