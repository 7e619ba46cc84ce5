/* sampler.c — measurement kernels behind perfvar_calib.h. */
#define _GNU_SOURCE
#include "perfvar_calib.h"
#include "perfvar_clock.h"
#include "add_chain.h"
#include "flush.h"
#include "perfvar.h"
#include "resolution.h"
#include "../clock/clock.h"
#include "pv_spec.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(PERFVAR_HAVE_PAPI_H)
#include <papi.h>
#endif

/* The timers' names and units are src/spec/contracts.py's (Python's perfvar._spec has the same),
 * and so is the enum of perfvar_calib.h, or this does not compile. */
PV_SPEC_CHECK_TIMERS
#define PV_TIMER_NAME(E, V, NAME, UNIT) [V] = NAME,
#define PV_TIMER_UNIT(E, V, NAME, UNIT) [V] = UNIT,
static const char *const timer_names[PERFVAR_TIMER_COUNT] = {PV_SPEC_TIMERS(PV_TIMER_NAME)};
static const char *const timer_units[PERFVAR_TIMER_COUNT] = {PV_SPEC_TIMERS(PV_TIMER_UNIT)};

const char *perfvar_timer_name(int timer)
{
    return timer >= 0 && timer < PERFVAR_TIMER_COUNT ? timer_names[timer] : NULL;
}

const char *perfvar_timer_unit(int timer)
{
    return timer >= 0 && timer < PERFVAR_TIMER_COUNT ? timer_units[timer] : NULL;
}

/* ---- PAPI, loaded on first use so libperfvar does not depend on it ---- */
static long long (*papi_nsec)(void);
static long long (*papi_cyc)(void);
static int (*papi_read)(int, long long *);
static char papi_why[160];
static int papi_state; /* 0 untried, 1 ok, -1 unavailable */
static void *papi_lib;  /* libpapi's handle once papi_load succeeded */

/* PAPI_read of PAPI_TOT_CYC through an event set, started once and kept running. */
static int papi_eventset = -1;
static char papi_read_why[200];
static int papi_read_state; /* 0 untried, 1 ok, -1 unavailable */

static void papi_load(void)
{
    if (papi_state) return;
    papi_state = -1;
#if defined(PERFVAR_HAVE_PAPI_H)
    void *lib = dlopen("libpapi.so", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) lib = dlopen("libpapi.so." PERFVAR_PAPI_SOVERSION, RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
        snprintf(papi_why, sizeof papi_why, "libpapi not found (%s)", dlerror());
        return;
    }
    int (*init)(int) = (int (*)(int))dlsym(lib, "PAPI_library_init");
    papi_nsec = (long long (*)(void))dlsym(lib, "PAPI_get_real_nsec");
    papi_cyc = (long long (*)(void))dlsym(lib, "PAPI_get_real_cyc");
    if (!init || !papi_nsec || !papi_cyc) {
        snprintf(papi_why, sizeof papi_why, "libpapi lacks PAPI_get_real_nsec/cyc");
        return;
    }
    int rc = init(PAPI_VER_CURRENT);
    if (rc != PAPI_VER_CURRENT && rc < 0) {
        snprintf(papi_why, sizeof papi_why, "PAPI_library_init failed (%d)", rc);
        return;
    }
    papi_lib = lib;
    papi_state = 1;
#else
    snprintf(papi_why, sizeof papi_why, "perfvar was built without papi.h");
#endif
}

/* The probe of the papi_read timer: an event set counting PAPI_TOT_CYC, started. Where no PMU
 * exists (a VM), adding or starting the event fails and PAPI_strerror's text is the reason. */
static void papi_read_open(void)
{
    if (papi_read_state) return;
    papi_read_state = -1;
    papi_load();
    if (papi_state < 0) {
        snprintf(papi_read_why, sizeof papi_read_why, "%s", papi_why);
        return;
    }
#if defined(PERFVAR_HAVE_PAPI_H)
    void *lib = papi_lib;
    papi_read = (int (*)(int, long long *))dlsym(lib, "PAPI_read");
    int (*create)(int *) = (int (*)(int *))dlsym(lib, "PAPI_create_eventset");
    int (*add)(int, int) = (int (*)(int, int))dlsym(lib, "PAPI_add_event");
    int (*start)(int) = (int (*)(int))dlsym(lib, "PAPI_start");
    int (*cleanup)(int) = (int (*)(int))dlsym(lib, "PAPI_cleanup_eventset");
    int (*destroy)(int *) = (int (*)(int *))dlsym(lib, "PAPI_destroy_eventset");
    char *(*strerr)(int) = (char *(*)(int))dlsym(lib, "PAPI_strerror");
    if (!create || !add || !start || !papi_read || !cleanup || !destroy || !strerr) {
        snprintf(papi_read_why, sizeof papi_read_why, "libpapi lacks the event-set API (PAPI_read)");
        return;
    }
    int es = PAPI_NULL, rc;
    const char *step = "PAPI_create_eventset";
    if ((rc = create(&es)) == PAPI_OK) {
        step = "PAPI_add_event(PAPI_TOT_CYC)";
        if ((rc = add(es, PAPI_TOT_CYC)) == PAPI_OK) {
            step = "PAPI_start";
            rc = start(es);
        }
        if (rc != PAPI_OK) {
            cleanup(es);
            destroy(&es);
        }
    }
    if (rc != PAPI_OK) {
        const char *text = strerr(rc);
        snprintf(papi_read_why, sizeof papi_read_why, "%s: %s (%d)", step, text ? text : "PAPI error",
                 rc);
        return;
    }
    papi_eventset = es;
    papi_read_state = 1;
#endif
}

static inline long long papi_read_cycles(void)
{
    long long v = 0;
    papi_read(papi_eventset, &v);
    return v;
}

/* ---- MPI_Wtime, from the MPI library the process already loaded (libperfvar stays MPI-free) ---- */
static double (*mpi_wtime)(void);
static char mpi_why[160];

static void mpi_find(void)
{
    static const char *const libs[] = {"libmpi.so.40", "libmpi.so.12", "libmpi.so", NULL};
    mpi_wtime = NULL;
    for (int i = 0; libs[i] && !mpi_wtime; i++) {
        void *h = dlopen(libs[i], RTLD_NOW | RTLD_NOLOAD);
        if (!h) continue;
        int (*initialized)(int *) = (int (*)(int *))dlsym(h, "MPI_Initialized");
        int done = 0;
        if (initialized && initialized(&done) == 0 && done)
            mpi_wtime = (double (*)(void))dlsym(h, "MPI_Wtime");
    }
    if (!mpi_wtime)
        snprintf(mpi_why, sizeof mpi_why, "no initialised MPI in this process (run under mpiexec)");
}

/* The CPU-cycle counter: why it is not readable (the probe's reason, or this thread's). */
static char cycles_why[200];

/* Cycle timers are converted to ns at the TSC rate perfvar measured; with PERFVAR_CLOCK=
 * clock_monotonic_raw that rate is not known. NULL when it is. */
static const char *tsc_rate_unknown(void)
{
    pv_clock_init();
    return pv_clock_monotonic ? "TSC rate not measured (PERFVAR_CLOCK=clock_monotonic_raw)" : NULL;
}

/* Why `timer` cannot be read here, NULL when it can. Opens what it needs on first use. */
static const char *timer_unavailable(int timer)
{
    switch (timer) {
    case PERFVAR_TIMER_BARRIER:
    case PERFVAR_TIMER_CLOCK_GETTIME: return NULL;
    case PERFVAR_TIMER_RDTSC:
#if !defined(__x86_64__)
        return "rdtsc exists on x86-64 only";
#else
        return tsc_rate_unknown();
#endif
    case PERFVAR_TIMER_PAPI_REAL_NSEC:
    case PERFVAR_TIMER_PAPI_REAL_CYC:
        papi_load();
        if (papi_state < 0) return papi_why;
        return timer == PERFVAR_TIMER_PAPI_REAL_CYC ? tsc_rate_unknown() : NULL;
    case PERFVAR_TIMER_MPI_WTIME:
        mpi_find();
        return mpi_wtime ? NULL : mpi_why;
    case PERFVAR_TIMER_PAPI_READ:
        papi_read_open();
        return papi_read_state < 0 ? papi_read_why : NULL;
    case PERFVAR_TIMER_CYCLES:
        return perfvar_cycles_open(NULL, cycles_why, sizeof cycles_why) != PERFVAR_OK ? cycles_why : NULL;
    default: return "unknown timer";
    }
}

int perfvar_timer_available(int timer, char *why, int why_len)
{
    const char *reason = timer_unavailable(timer);
    if (why && why_len > 0) snprintf(why, (size_t)why_len, "%s", reason ? reason : "");
    if (timer < 0 || timer >= PERFVAR_TIMER_COUNT) return PERFVAR_ERR_INVALID_ARG;
    return reason ? PERFVAR_ERR_UNAVAILABLE : PERFVAR_OK;
}

/* ---- the samples ---- */
static unsigned char *flush_buf;
static uint64_t flush_cap;

static int flush_prepare(uint64_t bytes)
{
    if (bytes <= flush_cap) return 0;
    unsigned char *b = realloc(flush_buf, bytes);
    if (!b) return -1;
    flush_buf = b, flush_cap = bytes;
    return 0;
}


static inline uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
static inline uint64_t plain_rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}
#endif

int perfvar_calib_sample(int timer, uint64_t adds, uint64_t flush_bytes, int n, double *out)
{
    if (!out || n < 0) return PERFVAR_ERR_INVALID_ARG;
    int rc = perfvar_timer_available(timer, NULL, 0);
    if (rc != PERFVAR_OK) return rc;
    if (flush_prepare(flush_bytes)) return PERFVAR_ERR_NO_MEMORY;
    double ns_per_tick = 1.0 / pv_clock_ticks_per_ns(); /* the TSC's when a TSC timer runs */
    const perfvar_cycles_page *cycles_page = NULL;
    if (timer == PERFVAR_TIMER_CYCLES && perfvar_cycles_open(&cycles_page, NULL, 0) != PERFVAR_OK)
        return PERFVAR_ERR_UNAVAILABLE;
    for (int i = -4; i < n; i++) { /* 4 warm-up samples, discarded */
        double d;
        switch (timer) {
        case PERFVAR_TIMER_BARRIER: { /* perfvar's clock, as PERFVAR_CLOCK selected it */
            uint64_t t0 = pv_now();
            pv_add_chain(adds);
            d = (double)(pv_now() - t0) * ns_per_tick;
            break;
        }
#if defined(__x86_64__)
        case PERFVAR_TIMER_RDTSC: {
            uint64_t t0 = plain_rdtsc();
            pv_add_chain(adds);
            d = (double)(plain_rdtsc() - t0) * ns_per_tick;
            break;
        }
#endif
        case PERFVAR_TIMER_CLOCK_GETTIME: {
            uint64_t t0 = mono_ns();
            pv_add_chain(adds);
            d = (double)(mono_ns() - t0);
            break;
        }
        case PERFVAR_TIMER_PAPI_REAL_NSEC: {
            long long t0 = papi_nsec();
            pv_add_chain(adds);
            d = (double)(papi_nsec() - t0);
            break;
        }
        case PERFVAR_TIMER_MPI_WTIME: {
            double t0 = mpi_wtime();
            pv_add_chain(adds);
            d = (mpi_wtime() - t0) * 1e9;
            break;
        }
        case PERFVAR_TIMER_CYCLES: { /* cycles, not converted: the core's rate is not the TSC's */
            uint64_t t0 = perfvar_cycles_read(cycles_page);
            pv_add_chain(adds);
            d = (double)(perfvar_cycles_read(cycles_page) - t0);
            break;
        }
        case PERFVAR_TIMER_PAPI_READ: { /* cycles of the running PAPI_TOT_CYC event set */
            long long t0 = papi_read_cycles();
            pv_add_chain(adds);
            d = (double)(papi_read_cycles() - t0);
            break;
        }
        default: { /* PERFVAR_TIMER_PAPI_REAL_CYC */
            long long t0 = papi_cyc();
            pv_add_chain(adds);
            d = (double)(papi_cyc() - t0) * ns_per_tick;
            break;
        }
        }
        if (i >= 0) out[i] = d;
        if (flush_bytes) pv_flush_lines(flush_buf, flush_bytes);
    }
    return PERFVAR_OK;
}

int perfvar_calib_resolution(int timer, int n, double *out)
{
    if (!out || n < 2) return PERFVAR_ERR_INVALID_ARG;
    double *v = malloc((size_t)n * sizeof *v);
    if (!v) return PERFVAR_ERR_NO_MEMORY;
    /* n spread over the lengths, a batch each: one availability check and one warm-up per
     * length, not per sample. */
    for (int adds = 0, done = 0; adds < PV_RESOLUTION_SWEEP && done < n; adds++) {
        int take = n / PV_RESOLUTION_SWEEP + (adds < n % PV_RESOLUTION_SWEEP);
        int rc = take ? perfvar_calib_sample(timer, (uint64_t)adds, 0, take, v + done) : PERFVAR_OK;
        if (rc != PERFVAR_OK) {
            free(v);
            return rc;
        }
        done += take;
    }
    *out = pv_clock_resolution(v, n);
    free(v);
    return PERFVAR_OK;
}

uint64_t perfvar_cache_size(int level)
{
    for (int index = 0; index < 8; index++) {
        char path[128], text[64], type[32];
        int lv = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", index);
        FILE *f = fopen(path, "r");
        if (!f) break;
        if (fscanf(f, "%d", &lv) != 1) lv = 0;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", index);
        if (!(f = fopen(path, "r"))) continue;
        if (fscanf(f, "%31s", type) != 1) type[0] = 0;
        fclose(f);
        if (lv != level || strcmp(type, "Instruction") == 0) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
        if (!(f = fopen(path, "r"))) continue;
        unsigned long long v = 0;
        char unit = 0;
        if (fgets(text, sizeof text, f) && sscanf(text, "%llu%c", &v, &unit) >= 1) {
            fclose(f);
            return unit == 'K' ? v << 10 : unit == 'M' ? v << 20 : v;
        }
        fclose(f);
    }
    return 0;
}

/* perfvar_clock_info is laid out as src/spec/contracts.py says (the build fails otherwise), and
 * Python's ctypes copy is made from the same table; what is asked here is what the compiler did,
 * for the Python side to compare with what ctypes did. */
PV_SPEC_CHECK_perfvar_clock_info
#define PV_CLOCK_INFO_OFFSET(T, F)                                                                 \
    if (strcmp(name, #T "." #F) == 0) return (long)offsetof(T, F);                               \
    fields += strcmp(name, #T ".#") == 0;

long perfvar_clock_info_layout(const char *name)
{
    if (!name) return -1;
    if (strcmp(name, "perfvar_clock_info") == 0) return (long)sizeof(perfvar_clock_info);
    long fields = 0;
    PV_SPEC_FIELDS_perfvar_clock_info(PV_CLOCK_INFO_OFFSET)
    return fields ? fields : -1;
}
