/* test_config.c — PERFVAR_* environment parsing: defaults, every accepted value, and the message of
 * each configuration error (it names the variable and what it accepts). */
#define _GNU_SOURCE
#include "check.h"
#include "config/config.h"
#include "perfvar.h"

#include <stdlib.h>
#include <string.h>

extern char **environ;

static const char *const vars[] = {"PERFVAR_OUTPUT",    "PERFVAR_CALIBRATION",
                                   "PERFVAR_CALIBRATION_BUDGET_MS", "PERFVAR_BUFFER_MB",
                                   "PERFVAR_CLOCK_SYNC", "PERFVAR_VERBOSE",
                                   "PERFVAR_PRELOAD_LIB", "PERFVAR_MPI",
                                   "PERFVAR_PROBE"};

/* Remove every PERFVAR_* variable, including any the test runner passed in. */
static void clear_env(void)
{
    for (;;) {
        char name[256] = "";
        for (char **e = environ; e && *e; e++) {
            if (strncmp(*e, "PERFVAR_", 8) == 0) {
                size_t n = strcspn(*e, "=");
                if (n >= sizeof name) n = sizeof name - 1;
                memcpy(name, *e, n);
                name[n] = 0;
                break;
            }
        }
        if (!name[0]) return;
        unsetenv(name);
    }
}

/* word occurs in s as a whole name (not as a prefix of a longer one, e.g. PERFVAR_OUT in
 * PERFVAR_OUTPUT). */
static int names_word(const char *s, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = strstr(s, word); p; p = strstr(p + 1, word)) {
        char next = p[n];
        int ident = (next >= 'A' && next <= 'Z') || (next >= 'a' && next <= 'z') ||
                    (next >= '0' && next <= '9') || next == '_';
        if (!ident) return 1;
    }
    return 0;
}

static pv_config cfg;
static char msg[1024]; /* as the layer's (lifecycle.c CONFIG_MESSAGE) */

static int load(void)
{
    memset(&cfg, 0x5a, sizeof cfg); /* the loader must set every field */
    memset(msg, 'x', sizeof msg);
    msg[sizeof msg - 1] = 0;
    return pv_config_load(&cfg, msg, (int)sizeof msg);
}

static void check_defaults(pv_calib_mode calibration)
{
    CHECK(cfg.output[0] == 0);
    CHECK(cfg.calibration == calibration);
    CHECK(cfg.calibration_budget_ms == 0);
    CHECK(cfg.buffer_mb == 16);
    CHECK(cfg.clock_sync == PV_SYNC_AUTO);
    CHECK(cfg.verbose == 0);
    CHECK(cfg.calib_n == 0 && cfg.calib_n_flushed == 0 && cfg.calib_p == 0 && cfg.calib_q == 0);
    CHECK(cfg.calib_states == 0 && cfg.calib_epsilon == 0 && cfg.calib_alpha == 0);
    CHECK(cfg.probe_ms == 10); /* probes on, every 10 ms */
    CHECK(cfg.inject.pct == 0); /* no injection */
}

/* var=value must be accepted. */
static void ok(const char *var, const char *value)
{
    clear_env();
    setenv(var, value, 1);
    int rc = load();
    CHECKF(rc == PERFVAR_OK && msg[0] == 0, "%s='%s': rc %d, message \"%s\"", var, value, rc, msg);
}

/* var=value must be refused with a message naming var and containing each of the accepted words. */
static void bad(const char *var, const char *value, const char *const *accepted)
{
    clear_env();
    setenv(var, value, 1);
    int rc = load();
    CHECKF(rc == PERFVAR_ERR_CONFIG, "%s='%s': rc %d", var, value, rc);
    CHECKF(names_word(msg, var), "%s='%s': message \"%s\" does not name it", var, value, msg);
    for (int i = 0; accepted[i]; i++)
        CHECKF(strstr(msg, accepted[i]) != NULL, "%s='%s': message \"%s\" lacks \"%s\"", var, value,
               msg, accepted[i]);
    CHECKF(strchr(msg, '\n') == NULL, "message \"%s\" is not one line", msg);
}

static void check_output(void)
{
    ok("PERFVAR_OUTPUT", "/tmp/perfvar-unit-out");
    CHECK(strcmp(cfg.output, "/tmp/perfvar-unit-out") == 0);
    static char longest[4096], too_long[4097];
    memset(longest, 'd', sizeof longest - 1);
    memset(too_long, 'd', sizeof too_long - 1);
    ok("PERFVAR_OUTPUT", longest);
    CHECK(strlen(cfg.output) == 4095);
    static const char *const acc[] = {"4095", NULL};
    static const char *const none[] = {NULL};
    bad("PERFVAR_OUTPUT", too_long, none); /* what it accepts: see check_long_value_message */
    bad("PERFVAR_OUTPUT", "", acc);
}

/* A long bad value must not push the accepted values out of the message: the PMPI layer passes a
 * 512-byte buffer (src/pmpi/lifecycle.c). */
static void check_long_value_message(void)
{
    static char too_long[4097], long_mode[1000];
    memset(too_long, 'd', sizeof too_long - 1);
    memset(long_mode, 'q', sizeof long_mode - 1);
    static const char *const acc_out[] = {"4095", NULL};
    bad("PERFVAR_OUTPUT", too_long, acc_out);
    static const char *const acc_cal[] = {"quick", "full", "off", NULL};
    bad("PERFVAR_CALIBRATION", long_mode, acc_cal);
    static const char *const acc_buf[] = {"1..65536", NULL};
    bad("PERFVAR_BUFFER_MB", long_mode, acc_buf);
    static const char *const acc_probe[] = {"off", "on", "1..60000", NULL};
    bad("PERFVAR_PROBE", long_mode, acc_probe);
}

static void check_calibration(void)
{
    static const char *const names[] = {"off", "quick", "full"};
    static const pv_calib_mode modes[] = {PV_CALIB_OFF, PV_CALIB_QUICK, PV_CALIB_FULL};
    for (int i = 0; i < 3; i++) {
        ok("PERFVAR_CALIBRATION", names[i]);
        CHECKF(cfg.calibration == modes[i], "PERFVAR_CALIBRATION=%s gave mode %d", names[i],
               (int)cfg.calibration);
        CHECK(cfg.buffer_mb == 16 && cfg.clock_sync == PV_SYNC_AUTO); /* others keep defaults */
    }
    static const char *const acc[] = {"quick", "full", "off", NULL};
    const char *invalid[] = {"QUICK", "fast", "", "quick ", "on", "1"};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++)
        bad("PERFVAR_CALIBRATION", invalid[i], acc);

    ok("PERFVAR_CALIBRATION_BUDGET_MS", "1");
    CHECK(cfg.calibration_budget_ms == 1);
    CHECK(cfg.calibration == PV_CALIB_QUICK);
    ok("PERFVAR_CALIBRATION_BUDGET_MS", "3600000");
    CHECK(cfg.calibration_budget_ms == 3600000);
    ok("PERFVAR_CALIBRATION_BUDGET_MS", "250");
    CHECK(cfg.calibration_budget_ms == 250);
    static const char *const acc_ms[] = {"1..3600000", NULL};
    const char *invalid_ms[] = {"0", "3600001", "-5", "", "abc", "10ms", "1.5", "99999999999999999999"};
    for (size_t i = 0; i < sizeof invalid_ms / sizeof invalid_ms[0]; i++)
        bad("PERFVAR_CALIBRATION_BUDGET_MS", invalid_ms[i], acc_ms);

    /* Both set together. */
    clear_env();
    setenv("PERFVAR_CALIBRATION", "full", 1);
    setenv("PERFVAR_CALIBRATION_BUDGET_MS", "5000", 1);
    CHECK(load() == PERFVAR_OK);
    CHECK(cfg.calibration == PV_CALIB_FULL && cfg.calibration_budget_ms == 5000);
}

/* PERFVAR_CALIBRATION_{N,N_FLUSHED,P,Q,STATES,EPSILON,ALPHA}: ranges, messages, and what
 * pv_config_apply_calib makes of them over a mode's defaults. */
static void check_calibration_params(void)
{
    static const struct {
        const char *var, *lo, *hi, *range;
        const int *field;
    } ints[] = {
        {"PERFVAR_CALIBRATION_N", "10", "1000000", "10..1000000", &cfg.calib_n},
        {"PERFVAR_CALIBRATION_N_FLUSHED", "10", "1000000", "10..1000000", &cfg.calib_n_flushed},
        {"PERFVAR_CALIBRATION_P", "1", "1000", "1..1000", &cfg.calib_p},
        {"PERFVAR_CALIBRATION_Q", "1", "1000", "1..1000", &cfg.calib_q},
        {"PERFVAR_CALIBRATION_STATES", "1", "4", "1..4", &cfg.calib_states},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        ok(ints[i].var, ints[i].lo);
        CHECKF(*ints[i].field == atoi(ints[i].lo), "%s=%s", ints[i].var, ints[i].lo);
        ok(ints[i].var, ints[i].hi);
        CHECKF(*ints[i].field == atoi(ints[i].hi), "%s=%s", ints[i].var, ints[i].hi);
        CHECK(cfg.calibration == PV_CALIB_QUICK && cfg.buffer_mb == 16);
        const char *const acc[] = {ints[i].range, NULL};
        char below[32], above[32];
        snprintf(below, sizeof below, "%d", atoi(ints[i].lo) - 1);
        snprintf(above, sizeof above, "%ld", atol(ints[i].hi) + 1);
        const char *invalid[] = {below, above, "-5", "", "many", "1e3", " 20", "20x"};
        for (size_t j = 0; j < sizeof invalid / sizeof invalid[0]; j++) bad(ints[i].var, invalid[j], acc);
    }
    static const char *const fvars[] = {"PERFVAR_CALIBRATION_EPSILON", "PERFVAR_CALIBRATION_ALPHA"};
    for (int i = 0; i < 2; i++) {
        const double *field = i ? &cfg.calib_alpha : &cfg.calib_epsilon;
        ok(fvars[i], "0.02");
        CHECK(*field == 0.02);
        ok(fvars[i], ".5");
        CHECK(*field == 0.5);
        ok(fvars[i], "1e-3");
        CHECK(*field == 1e-3);
        static const char *const acc[] = {"0 < x < 1", NULL};
        const char *invalid[] = {"0", "1", "1.5", "-0.01", "", "nan", "inf", "0.01%", " 0.1", "x"};
        for (size_t j = 0; j < sizeof invalid / sizeof invalid[0]; j++) bad(fvars[i], invalid[j], acc);
    }

    /* Applied over the mode's defaults: what is set replaces, the rest stays. */
    clear_env();
    setenv("PERFVAR_CALIBRATION", "full", 1);
    setenv("PERFVAR_CALIBRATION_N", "2000", 1);
    setenv("PERFVAR_CALIBRATION_Q", "40", 1);
    setenv("PERFVAR_CALIBRATION_ALPHA", "0.1", 1);
    setenv("PERFVAR_CALIBRATION_STATES", "2", 1);
    CHECK(load() == PERFVAR_OK);
    pv_calib_params p;
    pv_calib_defaults(&p, cfg.calibration);
    pv_config_apply_calib(&cfg, &p);
    CHECK(p.mode == PV_CALIB_FULL && p.budget_ms == 120000);
    CHECK(p.n_samples == 2000 && p.n_samples_flushed == 10000 && p.p_confirm == 30 && p.q_pairs == 40);
    CHECK(p.epsilon == 0.01 && p.alpha == 0.1 && p.nstates == 2);
    clear_env();
    setenv("PERFVAR_CALIBRATION_N_FLUSHED", "60", 1);
    setenv("PERFVAR_CALIBRATION_P", "3", 1);
    setenv("PERFVAR_CALIBRATION_EPSILON", "0.05", 1);
    setenv("PERFVAR_CALIBRATION_BUDGET_MS", "900", 1);
    CHECK(load() == PERFVAR_OK);
    pv_calib_defaults(&p, cfg.calibration);
    pv_config_apply_calib(&cfg, &p);
    CHECK(p.mode == PV_CALIB_QUICK && p.budget_ms == 900 && p.n_samples == 300);
    CHECK(p.n_samples_flushed == 60 && p.p_confirm == 3 && p.q_pairs == 5);
    CHECK(p.epsilon == 0.05 && p.alpha == 0.05 && p.nstates == PV_CALIB_NSTATES);
}

static void check_buffer(void)
{
    const char *valid[] = {"1", "16", "1024", "65536"};
    const unsigned want[] = {1, 16, 1024, 65536};
    for (int i = 0; i < 4; i++) {
        ok("PERFVAR_BUFFER_MB", valid[i]);
        CHECKF(cfg.buffer_mb == want[i], "PERFVAR_BUFFER_MB=%s gave %u", valid[i], cfg.buffer_mb);
    }
    static const char *const acc[] = {"1..65536", NULL};
    const char *invalid[] = {"0", "65537", "-1", "", "16M", "x", "0x10"};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) bad("PERFVAR_BUFFER_MB", invalid[i], acc);
}

static void check_clock_sync(void)
{
    static const char *const names[] = {"auto", "pingpong", "none"};
    static const pv_sync_mode modes[] = {PV_SYNC_AUTO, PV_SYNC_PINGPONG, PV_SYNC_NONE};
    for (int i = 0; i < 3; i++) {
        ok("PERFVAR_CLOCK_SYNC", names[i]);
        CHECKF(cfg.clock_sync == modes[i], "PERFVAR_CLOCK_SYNC=%s gave %d", names[i], (int)cfg.clock_sync);
    }
    static const char *const acc[] = {"auto", "pingpong", "none", NULL};
    const char *invalid[] = {"ping", "AUTO", "", "off", "ping-pong"};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) bad("PERFVAR_CLOCK_SYNC", invalid[i], acc);
}

static void check_verbose(void)
{
    const char *valid[] = {"0", "1", "2"};
    for (int i = 0; i < 3; i++) {
        ok("PERFVAR_VERBOSE", valid[i]);
        CHECK(cfg.verbose == i);
    }
    static const char *const acc[] = {"0", "1", "2", NULL};
    const char *invalid[] = {"3", "-1", "yes", "", "1.0", "debug"};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) bad("PERFVAR_VERBOSE", invalid[i], acc);
}

/* PERFVAR_PROBE: off, on (10 ms) or a period in ms 1..60000; anything else names what it accepts. */
static void check_probe(void)
{
    static const struct {
        const char *value;
        unsigned ms;
    } valid[] = {{"off", 0}, {"on", 10}, {"1", 1}, {"10", 10}, {"250", 250}, {"60000", 60000}};
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
        ok("PERFVAR_PROBE", valid[i].value);
        CHECKF(cfg.probe_ms == valid[i].ms, "PERFVAR_PROBE=%s gave %u ms", valid[i].value, cfg.probe_ms);
        CHECK(cfg.calibration == PV_CALIB_QUICK && cfg.buffer_mb == 16); /* others keep defaults */
    }
    static const char *const acc[] = {"off", "on", "1..60000", NULL};
    const char *invalid[] = {"0", "60001", "-1", "", "ON", "Off", "yes", "true", "10ms", "1.5", " 10",
                             "10 ", "1e3", "0x10", "99999999999999999999"};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) bad("PERFVAR_PROBE", invalid[i], acc);
    /* With the calibration off the option still parses: K is then the default (work_probe.h). */
    clear_env();
    setenv("PERFVAR_PROBE", "on", 1);
    setenv("PERFVAR_CALIBRATION", "off", 1);
    CHECK(load() == PERFVAR_OK && cfg.probe_ms == 10 && cfg.calibration == PV_CALIB_OFF);
}

/* PERFVAR_CALLPATH: a number of frames 1..16, the default when unset; anything else names what it
 * accepts. */
static void check_callpath(void)
{
    clear_env();
    CHECK(load() == PERFVAR_OK && cfg.callpath == PV_CALLPATH_DEFAULT);
    static const struct {
        const char *value;
        int frames;
    } valid[] = {{"1", 1}, {"2", 2}, {"4", 4}, {"16", 16}};
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
        ok("PERFVAR_CALLPATH", valid[i].value);
        CHECKF(cfg.callpath == valid[i].frames, "PERFVAR_CALLPATH=%s gave %d", valid[i].value, cfg.callpath);
        CHECK(cfg.calibration == PV_CALIB_QUICK && cfg.buffer_mb == 16); /* others keep defaults */
    }
    static const char *const acc[] = {"1..16", NULL};
    const char *invalid[] = {"0", "17", "-1", "", "on", "4 ", " 4", "2.5", "0x4", "99999999999999999999"};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) bad("PERFVAR_CALLPATH", invalid[i], acc);
}

/* PERFVAR_KEEP_RECORDS: 0 (the default: records removed after a clean finish) or 1. */
static void check_keep_records(void)
{
    clear_env();
    CHECK(load() == PERFVAR_OK && cfg.keep_records == 0);
    ok("PERFVAR_KEEP_RECORDS", "1");
    CHECK(cfg.keep_records == 1 && cfg.calibration == PV_CALIB_QUICK && cfg.buffer_mb == 16);
    ok("PERFVAR_KEEP_RECORDS", "0");
    CHECK(cfg.keep_records == 0);
    static const char *const acc[] = {"0", "1", NULL};
    const char *invalid[] = {"2", "-1", "", "yes", "on", "true", "1 ", "01x"};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) bad("PERFVAR_KEEP_RECORDS", invalid[i], acc);
}

/* PERFVAR_METRICS: none or a list of PAPI names (which exist is PAPI's to say at start-up);
 * PERFVAR_METRICS_MIN_US: microseconds, 0..PV_METRICS_MIN_US_MAX. */
static void check_metrics(void)
{
    clear_env();
    CHECK(load() == PERFVAR_OK && cfg.metrics[0] == 0 && cfg.metrics_min_us == PV_METRICS_MIN_US_DEFAULT);
    const char *valid[] = {"none", "PAPI_TOT_INS", "perf::TASK-CLOCK,perf::CONTEXT-SWITCHES",
                           "no_such_event", "amd64_fam17h::RETIRED_INSTRUCTIONS:u"};
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
        ok("PERFVAR_METRICS", valid[i]);
        CHECKF(!strcmp(cfg.metrics, valid[i]), "PERFVAR_METRICS=%s kept as %s", valid[i], cfg.metrics);
        CHECK(cfg.calibration == PV_CALIB_QUICK && cfg.buffer_mb == 16); /* others keep defaults */
    }
    static const char *const acc[] = {"none", "PAPI event names", NULL};
    const char *invalid[] = {"", ",", "PAPI_TOT_INS,", ",PAPI_TOT_INS", "A,,B", "PAPI_TOT_INS, perf::X",
                             "a b"};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) bad("PERFVAR_METRICS", invalid[i], acc);
    ok("PERFVAR_METRICS_MIN_US", "0");
    CHECK(cfg.metrics_min_us == 0);
    ok("PERFVAR_METRICS_MIN_US", "1000");
    CHECK(cfg.metrics_min_us == 1000);
    static const char *const acc_us[] = {"0.." PV_STR(PV_METRICS_MIN_US_MAX), "microseconds", NULL};
    const char *invalid_us[] = {"-1", "", "1e3", "10000001", "fast", "100 "};
    for (size_t i = 0; i < sizeof invalid_us / sizeof invalid_us[0]; i++)
        bad("PERFVAR_METRICS_MIN_US", invalid_us[i], acc_us);
}

static void check_launcher_vars(void)
{
    ok("PERFVAR_PRELOAD_LIB", "/usr/lib/libperfvar_mpi.so");
    check_defaults(PV_CALIB_QUICK);
    ok("PERFVAR_MPI", "anything at all");
    check_defaults(PV_CALIB_QUICK);
}

static void check_unknown(void)
{
    const char *unknown[] = {"PERFVAR_FOO", "PERFVAR_OUTPUTS", "PERFVAR_OUT", "PERFVAR_", "PERFVAR_verbose",
                             "PERFVAR_CALIBRATION_BUDGET"};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        clear_env();
        setenv("PERFVAR_VERBOSE", "1", 1); /* valid variables do not hide an unknown one */
        setenv(unknown[i], "1", 1);
        int rc = load();
        CHECKF(rc == PERFVAR_ERR_CONFIG, "%s: rc %d", unknown[i], rc);
        CHECKF(names_word(msg, unknown[i]), "message \"%s\" does not name %s", msg, unknown[i]);
        CHECKF(strstr(msg, "PERFVAR_OUTPUT") && strstr(msg, "PERFVAR_VERBOSE") && strstr(msg, "PERFVAR_PROBE") &&
                   strstr(msg, "PERFVAR_MPI"),
               "message \"%s\" does not list the accepted variables", msg);
    }
    /* The nearest known name is suggested, letters compared without case. */
    const char *misspelt[][2] = {{"PERFVAR_verbose", "PERFVAR_VERBOSE"},
                                 {"PERFVAR_OUPTUT", "PERFVAR_OUTPUT"},
                                 {"PERFVAR_CALLPATHS", "PERFVAR_CALLPATH"},
                                 {"PERFVAR_READR", "PERFVAR_READER"}};
    for (size_t i = 0; i < sizeof misspelt / sizeof misspelt[0]; i++) {
        char want[80];
        clear_env();
        setenv(misspelt[i][0], "1", 1);
        snprintf(want, sizeof want, "(the nearest: %s)", misspelt[i][1]);
        CHECKF(load() == PERFVAR_ERR_CONFIG && strstr(msg, want), "%s: \"%s\" lacks %s", misspelt[i][0],
               msg, want);
    }
    /* All known variables at once, valid. */
    clear_env();
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) setenv(vars[i], "1", 1);
    setenv("PERFVAR_OUTPUT", "out", 1);
    setenv("PERFVAR_CALIBRATION", "off", 1);
    setenv("PERFVAR_CLOCK_SYNC", "none", 1);
    int rc = load();
    CHECKF(rc == PERFVAR_OK, "all known variables: rc %d, \"%s\"", rc, msg);
    CHECK(strcmp(cfg.output, "out") == 0 && cfg.calibration == PV_CALIB_OFF &&
          cfg.calibration_budget_ms == 1 && cfg.buffer_mb == 1 && cfg.clock_sync == PV_SYNC_NONE &&
          cfg.verbose == 1 && cfg.probe_ms == 1);
}

static void check_ignored(void)
{
    clear_env();
    const char *others[] = {"XPERFVAR_FOO", "perfvar_foo", "PERFVARFOO", "MY_PERFVAR_OUTPUT", "Perfvar_Output",
                            "PERFVA_R"};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) setenv(others[i], "garbage", 1);
    int rc = load();
    CHECKF(rc == PERFVAR_OK, "rc %d, \"%s\"", rc, msg);
    CHECK(msg[0] == 0);
    check_defaults(PV_CALIB_QUICK);
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) unsetenv(others[i]);
}

/* PERFVAR_BOUNDARIES: all, or a list of group names; an empty item is a typo, not a group. */
static void check_boundaries(void)
{
    ok("PERFVAR_BOUNDARIES", "p2p,collective");
    CHECK(cfg.boundaries == (1u << PV_GROUP_P2P | 1u << PV_GROUP_COLLECTIVE));
    ok("PERFVAR_BOUNDARIES", "all");
    const char *acc[] = {"all", "comma-separated", "p2p", "collective", "local", NULL};
    const char *invalid[] = {"", ",", "env,", ",env", "p2p,,collective", "p2p,io", "P2P"};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) bad("PERFVAR_BOUNDARIES", invalid[i], acc);
}

/* A short message buffer is filled, NUL-terminated, and not overrun. */
static void check_short_message(void)
{
    clear_env();
    setenv("PERFVAR_BUFFER_MB", "lots", 1);
    char small[24];
    memset(small, '#', sizeof small);
    CHECK(pv_config_load(&cfg, small, 16) == PERFVAR_ERR_CONFIG);
    CHECK(memchr(small, 0, 16) != NULL);
    CHECK(strlen(small) == 15);
    int untouched = 1;
    for (size_t i = 16; i < sizeof small; i++) untouched &= small[i] == '#';
    CHECK(untouched);
}

/* PERFVAR_INJECT: rank and pct required, to/from/after/until optional, each key once; anything
 * else names the form it accepts. */
static void check_inject(void)
{
    ok("PERFVAR_INJECT", "rank=1,pct=10");
    CHECK(cfg.inject.rank == 1 && cfg.inject.pct == 10 && !cfg.inject.to[0] && !cfg.inject.from[0]);
    CHECK(cfg.inject.after_s == 0 && cfg.inject.until_s == 0);
    ok("PERFVAR_INJECT", "pct=0.3,rank=0,to=MPI_Waitall@clover_leaf+0x1a5c7,from=MPI_Irecv,"
                         "after=2.5,until=4");
    CHECK(cfg.inject.rank == 0 && cfg.inject.pct == 0.3);
    CHECK(strcmp(cfg.inject.to, "MPI_Waitall@clover_leaf+0x1a5c7") == 0);
    CHECK(strcmp(cfg.inject.from, "MPI_Irecv") == 0);
    CHECK(cfg.inject.after_s == 2.5 && cfg.inject.until_s == 4);
    ok("PERFVAR_INJECT", "rank=3,pct=1000,after=1");
    CHECK(cfg.inject.rank == 3 && cfg.inject.pct == 1000 && cfg.inject.after_s == 1);
    CHECK(cfg.inject.until_s == 0 && cfg.inject.longer_ms == 0);
    ok("PERFVAR_INJECT", "rank=1,pct=10,longer=3.3");
    CHECK(cfg.inject.longer_ms == 3.3);
    char long_site[300];
    memset(long_site, 'a', sizeof long_site);
    memcpy(long_site, "rank=0,pct=1,to=", 16);
    long_site[16 + PV_INJECT_MATCH_MAX] = 0; /* a substring of 128 bytes: one too long */
    const char *const invalid[] = {
        "", "on", "rank=1", "pct=10", "rank=1,pct=0", "rank=1,pct=-5", "rank=1,pct=1001",
        "rank=-1,pct=10", "rank=x,pct=10", "rank=1,pct=10,", ",rank=1,pct=10", "rank=1,,pct=10",
        "rank=1,pct=10,to=", "rank=1,pct=10,color=red", "rank=1,pct=10,rank=2",
        "rank=1,pct=10,after=3,until=2", "rank=1,pct=10,until=0", "rank=1,pct=10,after=-1",
        "rank=1,pct=nan", "rank=1,pct=10,to", "rank=1,pct=10,longer=-1", "rank=1,pct=10,longer=x",
        long_site};
    static const char *const acc[] = {"rank=R", "pct=X", "to=SITE", "from=SITE", "after=S",
                                      "until=S", "longer=MS", NULL};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        bad("PERFVAR_INJECT", invalid[i], acc);
        CHECKF(cfg.inject.pct == 0, "PERFVAR_INJECT='%s' left injection on", invalid[i]);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--long-value-message") == 0) {
        clear_env();
        check_long_value_message();
        clear_env();
        return check_result();
    }
    clear_env();
    CHECK(load() == PERFVAR_OK);
    CHECK(msg[0] == 0);
    check_defaults(PV_CALIB_QUICK);

    check_output();
    check_calibration();
    check_calibration_params();
    check_buffer();
    check_clock_sync();
    check_verbose();
    check_probe();
    check_callpath();
    check_keep_records();
    check_metrics();
    check_inject();
    check_boundaries();
    check_launcher_vars();
    check_unknown();
    check_ignored();
    check_short_message();

    clear_env();
    return check_result();
}
