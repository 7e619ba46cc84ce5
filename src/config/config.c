/* config.c — PERFVAR_* environment parsing; see config.h. */
#include "config.h"
#include "../calib/work_probe.h"
#include "perfvar.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

/* The variables perfvar's layer reads, and those only the Python tools read (perfvar analyze,
 * perfvar calibrate), ignored here: one namespace, so that exporting them does not make a traced
 * program run uninstrumented. tests/python checks that every name the package reads is listed. */
static const char *const layer_vars[] = {
    "PERFVAR_OUTPUT", "PERFVAR_CALIBRATION", "PERFVAR_CALIBRATION_BUDGET_MS",
    "PERFVAR_CALIBRATION_N", "PERFVAR_CALIBRATION_N_FLUSHED", "PERFVAR_CALIBRATION_P",
    "PERFVAR_CALIBRATION_Q", "PERFVAR_CALIBRATION_EPSILON", "PERFVAR_CALIBRATION_ALPHA",
    "PERFVAR_CALIBRATION_STATES", "PERFVAR_BUFFER_MB",
    "PERFVAR_CLOCK_SYNC", "PERFVAR_VERBOSE", "PERFVAR_PRELOAD_LIB", "PERFVAR_MPI",
    "PERFVAR_BOUNDARIES", "PERFVAR_PROBE", "PERFVAR_INJECT", "PERFVAR_CALLPATH",
    "PERFVAR_CLOCK", "PERFVAR_KEEP_RECORDS", "PERFVAR_METRICS", "PERFVAR_METRICS_MIN_US", NULL};
static const char *const tool_vars[] = {
    "PERFVAR_LIB", "PERFVAR_DEBUG", "PERFVAR_CALIBRATE_INTERRUPT_AFTER", "PERFVAR_READER", NULL};

/* Index of value in the NULL-terminated choices, or -1. */
static int choice(const char *value, const char *const *choices)
{
    for (int i = 0; choices[i]; i++)
        if (strcmp(value, choices[i]) == 0) return i;
    return -1;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    if (!isdigit((unsigned char)s[0])) return -1; /* no blanks, signs: strtol would take them */
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* A number strictly between lo and hi, in plain decimal or exponent notation. */
static int parse_open_interval(const char *s, double lo, double hi, double *out)
{
    char *end;
    if (!isdigit((unsigned char)s[0]) && s[0] != '.') return -1; /* no blanks, signs, inf, nan */
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v > lo && v < hi)) return -1;
    *out = v;
    return 0;
}

static int fail(char *msg, int len, const char *var, const char *value, const char *accepts)
{
    /* A long value is shortened so the accepted values always fit in the message. */
    snprintf(msg, (size_t)len, "%s='%.64s%s' is not valid: accepted %s", var, value,
             strlen(value) > 64 ? "..." : "", accepts);
    return PERFVAR_ERR_CONFIG;
}

#define PV_GROUP_NAME_(E, NAME, TRACED) NAME,
const char *const pv_group_names[PV_GROUP_COUNT + 1] = {PV_SPEC_MPI_GROUPS(PV_GROUP_NAME_) NULL};

/* "all", or a comma-separated list of group names; -1 when a name is not a group. */
static long parse_groups(const char *s)
{
    if (strcmp(s, "all") == 0) return (1L << PV_GROUP_COUNT) - 1;
    /* strtok_r skips empty items, which would accept "env," or "p2p,,collective" */
    size_t n = strlen(s);
    if (!n || s[0] == ',' || s[n - 1] == ',' || strstr(s, ",,")) return -1;
    long mask = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int g = choice(tok, pv_group_names);
        if (g < 0) return -1;
        mask |= 1L << g;
    }
    return strlen(s) < sizeof buf && mask ? mask : -1;
}

/* A non-negative number in plain decimal or exponent notation, at most hi. */
static int parse_nonneg(const char *s, double hi, double *out)
{
    char *end;
    if (!isdigit((unsigned char)s[0]) && s[0] != '.') return -1; /* no blanks, signs, inf, nan */
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0 && v <= hi)) return -1;
    *out = v;
    return 0;
}

/* PERFVAR_INJECT's keys, in the bit order of parse_inject's `seen`. */
enum { INJ_RANK, INJ_PCT, INJ_TO, INJ_FROM, INJ_AFTER, INJ_UNTIL, INJ_LONGER };

/* One "key=value" of PERFVAR_INJECT (key already told, its index k) into out; 0 or -1. */
static int parse_inject_value(int k, const char *val, pv_inject_spec *out)
{
    long num;
    switch (k) {
    case INJ_RANK:
        if (parse_long(val, 0, 1L << 30, &num)) return -1;
        out->rank = (int)num;
        return 0;
    case INJ_PCT:
        return parse_nonneg(val, 1000, &out->pct) || !(out->pct > 0) ? -1 : 0;
    case INJ_TO:
    case INJ_FROM:
        if (!val[0] || strlen(val) >= PV_INJECT_MATCH_MAX) return -1;
        strcpy(k == INJ_TO ? out->to : out->from, val);
        return 0;
    case INJ_LONGER:
        return parse_nonneg(val, 1e6, &out->longer_ms);
    default:
        return parse_nonneg(val, 1e6, k == INJ_AFTER ? &out->after_s : &out->until_s);
    }
}

/* PERFVAR_INJECT: "rank=R,pct=X[,to=S][,from=S][,after=T][,until=T][,longer=M]", each key at most
 * once, rank and pct required, 0 < X <= 1000, S 1..127 bytes, T in s, until > after, M in ms. */
static int parse_inject(const char *s, pv_inject_spec *out)
{
    char buf[1024];
    size_t n = strlen(s);
    if (!n || n >= sizeof buf || s[0] == ',' || s[n - 1] == ',' || strstr(s, ",,")) return -1;
    memcpy(buf, s, n + 1);
    memset(out, 0, sizeof *out);
    unsigned seen = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *val = strchr(tok, '=');
        if (!val) return -1;
        *val++ = 0;
        static const char *const keys[] = {"rank", "pct", "to", "from", "after", "until", "longer", NULL};
        int k = choice(tok, keys);
        if (k < 0 || (seen & (1u << k))) return -1;
        seen |= 1u << k;
        if (parse_inject_value(k, val, out)) return -1;
    }
    unsigned required = 1u << INJ_RANK | 1u << INJ_PCT;
    if ((seen & required) != required) return -1;
    if ((seen & (1u << INJ_UNTIL)) && !(out->until_s > out->after_s)) return -1;
    return 0;
}

/* Edit distance between name[0..n) and known, letters compared without case (insertions,
 * deletions, substitutions), for the nearest known name to a misspelt one. Names are short
 * (< 64 bytes); longer ones compare as far. */
static size_t distance(const char *name, size_t n, const char *known)
{
    size_t m = strlen(known), row[64];
    if (n >= 64 || m >= 64) return (size_t)-1;
    for (size_t j = 0; j <= m; j++) row[j] = j;
    for (size_t i = 1; i <= n; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t up = row[j];
            size_t best = diag + (toupper((unsigned char)name[i - 1]) != known[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[m];
}

/* Appends the NULL-terminated names, comma-separated, to msg (of len bytes, truncated there). */
static void append_names(char *msg, int len, const char *const *names)
{
    for (int i = 0; names[i]; i++) {
        size_t at = strlen(msg);
        if (at + 1 >= (size_t)len) return;
        snprintf(msg + at, (size_t)len - at, "%s%s", i ? ", " : "", names[i]);
    }
}

static const char *const *const var_lists[] = {layer_vars, tool_vars};

/* 1 when name[0..n) is a variable perfvar knows, exactly. */
static int is_known_var(const char *name, size_t n)
{
    for (int l = 0; l < 2; l++)
        for (int i = 0; var_lists[l][i]; i++)
            if (strlen(var_lists[l][i]) == n && strncmp(name, var_lists[l][i], n) == 0) return 1;
    return 0;
}

/* The known name nearest to name[0..n), by edit distance. */
static const char *nearest_var(const char *name, size_t n)
{
    const char *best = layer_vars[0];
    size_t best_d = (size_t)-1;
    for (int l = 0; l < 2; l++)
        for (int i = 0; var_lists[l][i]; i++) {
            size_t d = distance(name, n, var_lists[l][i]);
            if (d < best_d) best_d = d, best = var_lists[l][i];
        }
    return best;
}

/* PERFVAR_OK when every PERFVAR_* variable of the environment is one perfvar knows (exactly);
 * else the message names the unknown one, every known one and the nearest (a misspelt variable
 * would otherwise be silently ignored). */
static int check_names(char *msg, int len)
{
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "PERFVAR_", 8) != 0) continue;
        size_t n = strcspn(*e, "=");
        if (is_known_var(*e, n)) continue;
        snprintf(msg, (size_t)len, "unknown variable %.*s: perfvar accepts ", (int)n, *e);
        append_names(msg, len, layer_vars);
        size_t at = strlen(msg);
        snprintf(msg + at, (size_t)len - at, ", and for the Python tools ");
        append_names(msg, len, tool_vars);
        at = strlen(msg);
        snprintf(msg + at, (size_t)len - at, " (the nearest: %s)", nearest_var(*e, n));
        return PERFVAR_ERR_CONFIG;
    }
    return PERFVAR_OK;
}

/* The start-up calibration's variables: PERFVAR_CALIBRATION, _BUDGET_MS, _N, _N_FLUSHED, _P, _Q,
 * _STATES, _EPSILON, _ALPHA. */
static int load_calibration(pv_config *cfg, char *msg, int len)
{
    const char *v;
    long num;
    if ((v = getenv("PERFVAR_CALIBRATION"))) {
        static const char *const modes[] = {"off", "quick", "full", NULL};
        int m = choice(v, modes);
        if (m < 0) return fail(msg, len, "PERFVAR_CALIBRATION", v, "quick, full or off");
        cfg->calibration = (pv_calib_mode)m;
    }
    if ((v = getenv("PERFVAR_CALIBRATION_BUDGET_MS"))) {
        if (parse_long(v, 1, 3600000, &num))
            return fail(msg, len, "PERFVAR_CALIBRATION_BUDGET_MS", v, "an integer 1..3600000 (ms)");
        cfg->calibration_budget_ms = (double)num;
    }
    static const struct {
        const char *var;
        long lo, hi;
        size_t field;
    } ints[] = {
        {"PERFVAR_CALIBRATION_N", 10, 1000000, offsetof(pv_config, calib_n)},
        {"PERFVAR_CALIBRATION_N_FLUSHED", 10, 1000000, offsetof(pv_config, calib_n_flushed)},
        {"PERFVAR_CALIBRATION_P", 1, 1000, offsetof(pv_config, calib_p)},
        {"PERFVAR_CALIBRATION_Q", 1, 1000, offsetof(pv_config, calib_q)},
        {"PERFVAR_CALIBRATION_STATES", 1, PV_CALIB_NSTATES, offsetof(pv_config, calib_states)},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (!(v = getenv(ints[i].var))) continue;
        if (parse_long(v, ints[i].lo, ints[i].hi, &num)) {
            char accepts[64];
            snprintf(accepts, sizeof accepts, "an integer %ld..%ld", ints[i].lo, ints[i].hi);
            return fail(msg, len, ints[i].var, v, accepts);
        }
        *(int *)((char *)cfg + ints[i].field) = (int)num;
    }
    if ((v = getenv("PERFVAR_CALIBRATION_EPSILON")) &&
        parse_open_interval(v, 0, 1, &cfg->calib_epsilon))
        return fail(msg, len, "PERFVAR_CALIBRATION_EPSILON", v, "a number 0 < x < 1 (CV, paper: 0.01)");
    if ((v = getenv("PERFVAR_CALIBRATION_ALPHA")) && parse_open_interval(v, 0, 1, &cfg->calib_alpha))
        return fail(msg, len, "PERFVAR_CALIBRATION_ALPHA", v, "a number 0 < x < 1 (overlap, paper: 0.05)");
    return PERFVAR_OK;
}

/* A PERFVAR_METRICS list: "none", or names separated by single commas, each of printable
 * characters without spaces (PAPI's names: PAPI_TOT_INS, perf::CONTEXT-SWITCHES, pmu:event:mask).
 * Whether an event exists is PAPI's to say, at start-up (src/metrics). */
static int valid_metrics(const char *s)
{
    if (!s[0] || strlen(s) >= PV_METRICS_SPEC_MAX) return 0;
    for (const char *p = s; *p; p++) {
        if (*p == ',' && (p == s || p[1] == ',' || p[1] == 0)) return 0;
        if (*p <= ' ' || *p > '~') return 0;
    }
    return 1;
}

/* PERFVAR_METRICS, PERFVAR_METRICS_MIN_US. */
static int load_metrics(pv_config *cfg, char *msg, int len)
{
    const char *v;
    long num;
    if ((v = getenv("PERFVAR_METRICS"))) {
        if (!valid_metrics(v))
            return fail(msg, len, "PERFVAR_METRICS", v,
                        "none, or a comma-separated list of PAPI event names (e.g. "
                        "PAPI_TOT_INS,perf::CONTEXT-SWITCHES)");
        strcpy(cfg->metrics, v);
    }
    if ((v = getenv("PERFVAR_METRICS_MIN_US"))) {
        if (parse_long(v, 0, PV_METRICS_MIN_US_MAX, &num))
            return fail(msg, len, "PERFVAR_METRICS_MIN_US", v,
                        "an integer 0.." PV_STR(PV_METRICS_MIN_US_MAX) " (microseconds)");
        cfg->metrics_min_us = (unsigned)num;
    }
    return PERFVAR_OK;
}

/* What is traced and how: PERFVAR_BOUNDARIES, _CALLPATH, _PROBE, _INJECT. */
static int load_tracing(pv_config *cfg, char *msg, int len)
{
    const char *v;
    long num;
    if ((v = getenv("PERFVAR_BOUNDARIES"))) {
        long mask = parse_groups(v);
        if (mask < 0) {
            char accepts[160] = "all or a comma-separated list of"; /* the names: pv_group_names */
            for (int g = 0; g < PV_GROUP_COUNT; g++) {
                size_t at = strlen(accepts);
                snprintf(accepts + at, sizeof accepts - at, "%s %s", g ? "," : "", pv_group_names[g]);
            }
            return fail(msg, len, "PERFVAR_BOUNDARIES", v, accepts);
        }
        cfg->boundaries = (unsigned)mask;
    }
    if ((v = getenv("PERFVAR_CALLPATH"))) {
        if (parse_long(v, 1, PV_CALLPATH_MAX, &num))
            return fail(msg, len, "PERFVAR_CALLPATH", v,
                        "a number of call-path frames 1.." PV_STR(PV_CALLPATH_MAX)
                        " (1: the MPI call's return address only)");
        cfg->callpath = (int)num;
    }
    if ((v = getenv("PERFVAR_PROBE"))) {
        if (strcmp(v, "off") == 0)
            cfg->probe_ms = 0;
        else if (strcmp(v, "on") == 0)
            cfg->probe_ms = PV_WORK_PROBE_DEFAULT_MS;
        else if (parse_long(v, 1, PV_WORK_PROBE_MAX_MS, &num) == 0)
            cfg->probe_ms = (unsigned)num;
        else
            return fail(msg, len, "PERFVAR_PROBE", v, "off, on (10 ms) or a period in ms 1..60000");
    }
    if ((v = getenv("PERFVAR_INJECT")) && parse_inject(v, &cfg->inject)) {
        memset(&cfg->inject, 0, sizeof cfg->inject);
        return fail(msg, len, "PERFVAR_INJECT", v,
                    "rank=R,pct=X[,to=SITE][,from=SITE][,after=S][,until=S][,longer=MS] (R a "
                    "rank, 0 < X <= 1000 percent, SITE a substring of a call site's name, S "
                    "seconds, until > after, MS milliseconds)");
    }
    return PERFVAR_OK;
}

/* Where and how the run is recorded: PERFVAR_OUTPUT, _BUFFER_MB, _CLOCK_SYNC, _CLOCK,
 * _KEEP_RECORDS, _VERBOSE. */
static int load_recording(pv_config *cfg, char *msg, int len)
{
    const char *v;
    long num;
    if ((v = getenv("PERFVAR_OUTPUT"))) {
        if (!v[0] || strlen(v) >= sizeof cfg->output)
            return fail(msg, len, "PERFVAR_OUTPUT", v, "a directory path of 1..4095 bytes");
        strcpy(cfg->output, v);
    }
    if ((v = getenv("PERFVAR_BUFFER_MB"))) {
        if (parse_long(v, 1, 65536, &num))
            return fail(msg, len, "PERFVAR_BUFFER_MB", v, "an integer 1..65536 (MiB)");
        cfg->buffer_mb = (unsigned)num;
    }
    if ((v = getenv("PERFVAR_CLOCK_SYNC"))) {
        static const char *const modes[] = {"auto", "pingpong", "none", NULL};
        int m = choice(v, modes);
        if (m < 0) return fail(msg, len, "PERFVAR_CLOCK_SYNC", v, "auto, pingpong or none");
        cfg->clock_sync = (pv_sync_mode)m;
    }
    if ((v = getenv("PERFVAR_CLOCK"))) { /* read by the clock module (src/clock/clock.c) */
        static const char *const clocks[] = {"auto", "tsc", "cntvct", "clock_monotonic_raw", NULL};
        if (choice(v, clocks) < 0)
            return fail(msg, len, "PERFVAR_CLOCK", v, "auto, tsc, cntvct or clock_monotonic_raw");
    }
    if ((v = getenv("PERFVAR_KEEP_RECORDS"))) {
        if (parse_long(v, 0, 1, &num)) return fail(msg, len, "PERFVAR_KEEP_RECORDS", v, "0 or 1");
        cfg->keep_records = (int)num;
    }
    if ((v = getenv("PERFVAR_VERBOSE"))) {
        if (parse_long(v, 0, 2, &num)) return fail(msg, len, "PERFVAR_VERBOSE", v, "0, 1 or 2");
        cfg->verbose = (int)num;
    }
    return PERFVAR_OK;
}

int pv_config_load(pv_config *cfg, char *msg, int len)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->calibration = PV_CALIB_QUICK;
    cfg->buffer_mb = 16;
    cfg->clock_sync = PV_SYNC_AUTO;
    cfg->boundaries = PV_BOUNDARIES_DEFAULT;
    cfg->callpath = PV_CALLPATH_DEFAULT;
    /* Probes on: without them a rank slower in its segments cannot be told a slower core
     * from more work (the verdict's core-or-code question); at 10 ms they cost about one
     * part in 10^4 of run time, and a call where none is due one compare. */
    cfg->probe_ms = PV_WORK_PROBE_DEFAULT_MS;
    cfg->metrics_min_us = PV_METRICS_MIN_US_DEFAULT;
    msg[0] = 0;
    int rc = check_names(msg, len);
    if (rc == PERFVAR_OK) rc = load_recording(cfg, msg, len);
    if (rc == PERFVAR_OK) rc = load_calibration(cfg, msg, len);
    if (rc == PERFVAR_OK) rc = load_tracing(cfg, msg, len);
    if (rc == PERFVAR_OK) rc = load_metrics(cfg, msg, len);
    return rc;
}

void pv_config_apply_calib(const pv_config *cfg, pv_calib_params *p)
{
    if (cfg->calibration_budget_ms > 0) p->budget_ms = cfg->calibration_budget_ms;
    if (cfg->calib_n > 0) p->n_samples = cfg->calib_n;
    if (cfg->calib_n_flushed > 0) p->n_samples_flushed = cfg->calib_n_flushed;
    if (cfg->calib_p > 0) p->p_confirm = cfg->calib_p;
    if (cfg->calib_q > 0) p->q_pairs = cfg->calib_q;
    if (cfg->calib_states > 0) p->nstates = cfg->calib_states;
    if (cfg->calib_epsilon > 0) p->epsilon = cfg->calib_epsilon;
    if (cfg->calib_alpha > 0) p->alpha = cfg->calib_alpha;
}
