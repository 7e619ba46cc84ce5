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
 * The fields, severities, scopes and default group are those of src/spec/contracts.py (MARKERS,
 * through pv_spec.h), the table postproc/perfvar/report/markers.py writes the lines from.
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

#include "pv_spec.h"

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

/* The severities and scopes a line may name: src/spec/contracts.py's, the table
 * postproc/perfvar/report/markers.py writes its lines from. */
#define PV_SEVERITY_ROW(E, NAME, VALUE) {NAME, VALUE},
static const struct {
    const char *name;
    OTF2_MarkerSeverity value;
} severities[] = {PV_MARKER_SEVERITIES(PV_SEVERITY_ROW)};
#define PV_SCOPE_ROW(E, NAME, VALUE, TAKES_ID) {NAME, VALUE, TAKES_ID},
static const struct {
    const char *name;
    OTF2_MarkerScope value;
    int takes_id; /* NAME:<id>, the id a location's or a location group's */
} scopes[] = {PV_MARKER_SCOPES(PV_SCOPE_ROW)};

static int parse_severity(const char *s, OTF2_MarkerSeverity *out)
{
    for (size_t i = 0; i < sizeof severities / sizeof *severities; i++)
        if (!strcmp(s, severities[i].name)) return *out = severities[i].value, 0;
    return -1;
}

/* A time field: PV_MARKER_WHOLE_RUN is `dflt`; else ns since the trace's origin, as ticks
 * clipped to [lo, hi]. */
static int parse_time(const char *s, const trace_defs *t, uint64_t lo, uint64_t hi, uint64_t dflt,
                      uint64_t *out)
{
    if (!strcmp(s, PV_MARKER_WHOLE_RUN)) return *out = dflt, 0;
    char *end;
    errno = 0;
    double ns = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(ns)) return -1;
    double ticks = (double)t->offset + ns * (double)t->resolution / 1e9;
    *out = ticks <= (double)lo ? lo : ticks >= (double)hi ? hi : (uint64_t)llround(ticks);
    return 0;
}

/* The id after a scope's name: a location (LOCATION) or location group of the trace. */
static int parse_scope_id(const char *s, const trace_defs *t, OTF2_MarkerScope scope, uint64_t *ref)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || errno) return -1;
    *ref = v;
    if (scope == OTF2_MARKER_SCOPE_LOCATION) return has_u64(t->locations, t->nlocations, v) ? 0 : -1;
    return has_u64(t->groups, t->ngroups, v) ? 0 : -1;
}

static int parse_scope(const char *s, const trace_defs *t, OTF2_MarkerScope *scope, uint64_t *ref)
{
    const char *colon = strchr(s, PV_MARKER_SCOPE_ID_SEPARATOR);
    size_t kind = colon ? (size_t)(colon - s) : strlen(s);
    for (size_t i = 0; i < sizeof scopes / sizeof *scopes; i++) {
        if (strlen(scopes[i].name) != kind || strncmp(s, scopes[i].name, kind)) continue;
        *scope = scopes[i].value;
        if (!scopes[i].takes_id) return colon ? -1 : (*ref = OTF2_UNDEFINED_UINT64, 0);
        return colon ? parse_scope_id(colon + 1, t, *scope, ref) : -1;
    }
    return -1;
}

/* Splits line at its separators into f[0..PV_MARKER_NFIELDS - 1] (the last field, the text, takes
 * the rest of the line); returns the number of fields found. */
static int split_fields(char *line, char *f[PV_MARKER_NFIELDS])
{
    int nf = 0;
    char *p = line;
    for (; nf < PV_MARKER_NFIELDS - 1; nf++) {
        char *sep = strchr(p, PV_MARKER_SEPARATOR);
        if (!sep) break;
        f[nf] = p, *sep = 0, p = sep + 1;
    }
    f[nf++] = p;
    return nf;
}

/* NULL when the nf fields f make a marker (its times, scope and *severity set), else what is
 * wrong with them. */
static const char *check_fields(char **f, int nf, const trace_defs *t, marker *mk,
                                OTF2_MarkerSeverity *severity)
{
    uint64_t lo = t->offset, hi = t->length ? t->offset + t->length - 1 : t->offset, end;
    if (nf != PV_MARKER_NFIELDS) return "not " PV_MARKER_NFIELDS_WORD " tab-separated fields";
    if (!*f[PV_MARKER_FIELD_CATEGORY]) return "empty category";
    if (parse_severity(f[PV_MARKER_FIELD_SEVERITY], severity))
        return "severity not " PV_MARKER_SEVERITY_NAMES_OR;
    if (parse_time(f[PV_MARKER_FIELD_START_NS], t, lo, hi, lo, &mk->time) ||
        parse_time(f[PV_MARKER_FIELD_END_NS], t, lo, hi, hi, &end))
        return "a time is neither a number of ns nor " PV_MARKER_WHOLE_RUN;
    if (end < mk->time) return "it ends before it starts";
    if (parse_scope(f[PV_MARKER_FIELD_SCOPE], t, &mk->scope, &mk->scope_ref))
        return "scope not " PV_MARKER_SCOPE_FORMS_OR " of the trace";
    mk->duration = end - mk->time;
    return NULL;
}

/* *ref: the definition of `category` in out (a category has one severity), added with the next
 * ref from first_ref when it is new. 0; -1 when it was defined with another severity; -2 on no
 * memory. */
static int category_ref(markers *out, const char *group, const char *category,
                        OTF2_MarkerSeverity severity, OTF2_MarkerRef first_ref, OTF2_MarkerRef *ref)
{
    for (size_t i = 0; i < out->ndefs; i++)
        if (!strcmp(out->defs[i].category, category)) {
            *ref = out->defs[i].ref;
            return out->defs[i].severity == severity ? 0 : -1;
        }
    *ref = first_ref + (OTF2_MarkerRef)out->ndefs;
    return add_def(out, *ref, group, category, severity) ? -2 : 0;
}

/* One input line (its line end removed) into out; 0, or -1 with the reason in why. */
static int parse_line(char *line, int lineno, const trace_defs *t, const char *group,
                      OTF2_MarkerRef first_ref, markers *out, char *why, size_t why_len)
{
    char *f[PV_MARKER_NFIELDS];
    OTF2_MarkerSeverity severity;
    marker mk = {0};
    const char *bad = check_fields(f, split_fields(line, f), t, &mk, &severity);
    if (bad) return snprintf(why, why_len, "line %d: %s", lineno, bad), -1;
    mk.text = f[PV_MARKER_FIELD_TEXT];
    const char *category = f[PV_MARKER_FIELD_CATEGORY];
    int rc = category_ref(out, group, category, severity, first_ref, &mk.ref);
    if (rc == -1)
        return snprintf(why, why_len, "line %d: category '%s' given two severities", lineno, category),
               -1;
    if (rc || add_marker(out, &mk)) return snprintf(why, why_len, "out of memory"), -1;
    return 0;
}

/* The input's markers as definitions (refs from first_ref on) and markers; 0, or -1 with the
 * reason in why. */
static int parse_input(FILE *in, const trace_defs *t, const char *group, OTF2_MarkerRef first_ref,
                       markers *out, char *why, size_t why_len)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, rc = 0;
    while (rc == 0 && (len = getline(&line, &cap, in)) >= 0) {
        lineno++;
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (len) rc = parse_line(line, lineno, t, group, first_ref, out, why, why_len);
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
               "Replace the OTF2 markers of group NAME (default " PV_MARKER_GROUP
               ") of TRACE (a trace directory\n"
               "or its .otf2 anchor file) with those on stdin, one a line:\n"
               "  " PV_MARKER_LINE_FORM "\n"
               "severity " PV_MARKER_SEVERITY_NAMES_BAR "; times in ns since the trace's origin or "
               PV_MARKER_WHOLE_RUN " (its start,\n"
               "its end); scope " PV_MARKER_SCOPE_FORMS_OR ".\n");
}

/* [--group NAME] TRACE into *group (PV_MARKER_GROUP unless given) and *trace. -1 when they are
 * valid, else the exit status, the usage printed. */
static int parse_args(int argc, char **argv, const char **group, const char **trace)
{
    *group = PV_MARKER_GROUP, *trace = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--group") && i + 1 < argc) *group = argv[++i];
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return usage(stdout), 0;
        else if (!*trace && argv[i][0] != '-') *trace = argv[i];
        else return usage(stderr), 2;
    }
    if (!*trace || !**group) return usage(stderr), 2;
    return -1;
}

/* The anchor file of TRACE (a directory or an anchor) and its marker file beside it. */
static void trace_paths(const char *trace, char *anchor, size_t anchor_len, char *marker_file,
                        size_t marker_len)
{
    size_t n = strlen(trace);
    int is_anchor = n > 5 && !strcmp(trace + n - 5, ".otf2");
    if (is_anchor) snprintf(anchor, anchor_len, "%s", trace);
    else snprintf(anchor, anchor_len, "%s/traces.otf2", trace);
    n = strlen(anchor);
    snprintf(marker_file, marker_len, "%.*s.marker", (int)(n - 5), anchor);
}

/* Copies the definitions and markers of existing that are not of `group` into kept (with their
 * refs); a marker whose definition is missing is kept too: it is not ours to judge. *next: the
 * first ref after every ref in use; *replaced: the markers of `group`. 0, or -1 on no memory. */
static int keep_others(const markers *existing, const char *group, markers *kept,
                       OTF2_MarkerRef *next, size_t *replaced)
{
    for (size_t i = 0; i < existing->ndefs; i++) {
        const marker_def *d = &existing->defs[i];
        if (d->ref >= *next) *next = d->ref + 1;
        if (strcmp(d->group, group) && add_def(kept, d->ref, d->group, d->category, d->severity))
            return -1;
    }
    for (size_t i = 0; i < existing->nmarks; i++) {
        const marker *m = &existing->marks[i];
        int ours_before = 0;
        if (m->ref >= *next && m->ref != OTF2_UNDEFINED_MARKER) *next = m->ref + 1;
        for (size_t j = 0; j < existing->ndefs; j++)
            if (existing->defs[j].ref == m->ref && !strcmp(existing->defs[j].group, group))
                ours_before = 1;
        if (ours_before) ++*replaced;
        else if (add_marker(kept, m)) return -1;
    }
    return 0;
}

/* Reads the trace and its markers, replaces those of `group` with stdin's, writes them: the exit
 * status. */
static int replace_markers(const char *group, const char *anchor, const char *marker_file)
{
    trace_defs t = {0};
    markers existing = {0}, kept = {0}, ours = {0};
    OTF2_MarkerRef next = 0;
    size_t replaced = 0;
    int rc = 1;
    char why[256] = "";
    if (read_trace_defs(anchor, &t))
        fprintf(stderr, TOOL ": %s: cannot read its definitions (clock properties, locations)\n",
                anchor);
    else if (read_markers(anchor, marker_file, &existing))
        fprintf(stderr, TOOL ": %s: cannot read it\n", marker_file);
    else if (keep_others(&existing, group, &kept, &next, &replaced))
        fprintf(stderr, TOOL ": out of memory\n");
    else if (parse_input(stdin, &t, group, next, &ours, why, sizeof why))
        fprintf(stderr, TOOL ": %s\n", why), rc = 2;
    else if (write_markers(anchor, &kept, &ours))
        fprintf(stderr, TOOL ": %s: cannot write the markers\n", marker_file);
    else {
        printf(TOOL ": %s: %zu markers of group \"%s\" (%zu replaced), %zu of other groups kept\n",
               marker_file, ours.nmarks, group, replaced, kept.nmarks);
        rc = 0;
    }
    free_markers(&existing), free_markers(&kept), free_markers(&ours);
    free(t.locations), free(t.groups);
    return rc;
}

int main(int argc, char **argv)
{
    const char *group, *trace;
    int rc = parse_args(argc, argv, &group, &trace);
    if (rc >= 0) return rc;
    char anchor[4200], marker_file[4200];
    trace_paths(trace, anchor, sizeof anchor, marker_file, sizeof marker_file);
    if (access(anchor, R_OK) != 0) {
        fprintf(stderr, TOOL ": %s: %s\n", anchor, strerror(errno));
        return 2;
    }
    return replace_markers(group, anchor, marker_file);
}
