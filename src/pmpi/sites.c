/* sites.c — call sites, which delimit the compute segments.
 *
 * A site is (MPI function, return address into the caller), or (user timer start/stop of a region,
 * return address), since perfvar_start/perfvar_stop cut segments too. Its name uses the module and the offset
 * from the module's load bias, so it is the same on every rank of a run (ASLR moves addresses, not
 * offsets) and `addr2line -e module offset-1` symbolises it. Names are made once per site, on first
 * sight, outside the measured segments (inside the MPI region).
 *
 * Call paths (PERFVAR_CALLPATH = k > 1): real codes call MPI from their own communication
 * routines, reached from many kernels; the return address alone would put the work of different
 * kernels into one segment class. An MPI call's site is then (function, ra1, ..., rak), ra2.. the
 * return addresses of its callers, named "<fn>@<module>+0x<off>" followed by "<<module>+0x<off>"
 * for each caller frame, outermost last (at k = 1, or when the stack has one frame, the name is the
 * depth-1 name). Unwinding costs ~0.2 us at depth 4 with libunwind (see "the unwinder" below),
 * several us with libgcc's _Unwind_Backtrace, so it is done only when needed, per thread and per
 * depth-1 site (fn, ra1):
 *   - its first PV_PATH_LEARN calls are unwound, and the path of the first is learned;
 *   - while every unwound call showed the learned path, later calls reuse it with no unwinding,
 *     except a check that unwinds one call after a jittered interval (16 calls, doubling up to
 *     1024; the jitter keeps the checks from locking onto a periodic pattern of callers);
 *   - once a site has shown two paths it is unwound on every call.
 * So a site whose callers change only after its learning calls (a path that starts late, or a
 * rare one) has its calls named by the learned path until a check sees the other: at most about
 * 1024 calls of the new path for a frequent one, more for a rare one. User timer sites keep
 * depth 1: the user placed them.
 *
 * The compute segment between two sites is named by both when the records are converted
 * (src/trace/convert.c): "perfvar:segment:<from site>;<to site>".
 * Sites are per process, shared by its threads (the same call site is the same site on every
 * thread, so a segment class is the same on every thread): defined under this file's own lock,
 * written to the rank's definitions file. Each thread looks them up in its own cache first, so it
 * takes the lock only the first time it meets a site. */
#define _GNU_SOURCE
#include "sites.h"
#include "threads.h"
#include "../config/config.h"
#include "../core/message.h"
#include "../core/u64map.h"
#include "../recorder/recorder.h"
#include "../timer/region_sink.h"
#include "perfvar.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <unwind.h>

/* The shared sites (sites.h), under lock: what every thread's caches are filled from. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pv_u64map sites;      /* (fn, return address) -> site id; at call-path depth > 1
                                (PERFVAR_CALLPATH), a hash of (fn, return addresses) -> site id */
static pv_u64map user_sites; /* (user region handle, start|stop, return address) -> site id */
static int nsites;           /* ids handed out */

static void module_of(void *addr, char *path, size_t len, uintptr_t *offset)
{
    Dl_info info;
    struct link_map *lm = NULL;
    *offset = (uintptr_t)addr;
    snprintf(path, len, "?");
    if (!dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm) return;
    *offset = (uintptr_t)addr - (uintptr_t)lm->l_addr;
    if (lm->l_name && lm->l_name[0]) {
        snprintf(path, len, "%s", lm->l_name);
    } else { /* the main executable has an empty link-map name */
        ssize_t n = readlink("/proc/self/exe", path, len - 1);
        path[n > 0 ? n : 0] = 0;
    }
}

/* Each site's label ("<what>@<module base name>+0x<offset>" and its caller frames, as the trace's
 * segment keys give it), by id, for those that select sites by name (PERFVAR_INJECT). Under
 * lock; a label that could not be kept is only missing from pv_site_label. */
static char **labels;
static int nlabels, labels_cap;

static void keep_label(int id, const char *label)
{
    if (id >= labels_cap) {
        int cap = labels_cap ? labels_cap * 2 : 256;
        while (cap <= id) cap *= 2;
        char **grown = realloc(labels, (size_t)cap * sizeof *grown);
        if (!grown) return;
        memset(grown + labels_cap, 0, (size_t)(cap - labels_cap) * sizeof *grown);
        labels = grown, labels_cap = cap;
    }
    labels[id] = strdup(label);
    if (id >= nlabels) nlabels = id + 1;
}

/* Define a new site "<what>@<module>+0x<offset>" for return address frames[0], followed by
 * "<<module>+0x<offset>" for each of its n - 1 caller frames: a call of static region `region`, or
 * (region -1 start, -2 stop) of user timer `handle`; its id or -1. Under lock. */
static int site_define(const char *what, const uintptr_t *frames, int n, int region, int handle)
{
    char path[4096], name[8192], label[8192];
    size_t nl = 0, ll = 0;
    for (int i = 0; i < n && nl < sizeof name && ll < sizeof label; i++) {
        uintptr_t off;
        module_of((void *)frames[i], path, sizeof path, &off);
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        if (i == 0) {
            nl += (size_t)snprintf(name, sizeof name, "%s@%s+0x%lx", what, path, (unsigned long)off);
            ll += (size_t)snprintf(label, sizeof label, "%s@%s+0x%lx", what, base, (unsigned long)off);
        } else {
            nl += (size_t)snprintf(name + nl, sizeof name - nl, "<%s+0x%lx", path, (unsigned long)off);
            ll += (size_t)snprintf(label + ll, sizeof label - ll, "<%s+0x%lx", base, (unsigned long)off);
        }
    }
    pv_rec_defs_clean(name, sizeof name, name);
    pv_rec_defs_clean(label, sizeof label, label);
    if (nsites > (int)PV_REC_MAX_SITE) return -1;
    int id = nsites;
    /* The line goes out before the id is used: a record never names a site its rank's definitions
     * lack, whenever the process dies. */
    if (pv_rec_defs_line(PV_DEFS_SITE, id, region, handle, name, label)) return -1;
    keep_label(id, label);
    return nsites++;
}

int pv_site_label(int id, char *out, size_t len)
{
    pthread_mutex_lock(&lock);
    const char *label = id >= 0 && id < nlabels ? labels[id] : NULL;
    if (label) snprintf(out, len, "%s", label);
    pthread_mutex_unlock(&lock);
    return label ? 0 : -1;
}

/* Site id of key in the shared map, defining it on first sight; then cached in the thread's map (a
 * failed cache insert only costs a lock next time). */
static int site_lookup(pv_u64map *cache, pv_u64map *map, uint64_t key, const char *what,
                       const uintptr_t *frames, int n, int region, int handle)
{
    pthread_mutex_lock(&lock);
    pv_u64val *v = pv_u64map_find(map, key);
    int id = v ? (int)v->a : site_define(what, frames, n, region, handle);
    if (!v && id >= 0 && pv_u64map_put(map, key, (pv_u64val){.a = id})) id = -1;
    pthread_mutex_unlock(&lock);
    if (id >= 0) pv_u64map_put(cache, key, (pv_u64val){.a = id});
    return id;
}

static const char *region_name(int region)
{
    return region < PV_FN_COUNT ? pv_fn_info[region].name : "perfvar";
}

/* ---- call paths (depth > 1) ---- */

/* How the checks of a depth-1 site's path are spaced (calls): see the file's header. */
#define PV_PATH_LEARN 64
#define PV_PATH_CHECK_FIRST 16
#define PV_PATH_CHECK_MAX 1024
/* ra is looked for among this many innermost frames (the unwinder's own, pv_call_enter's, the
 * wrapper's: a few), so a wrong ra costs a bounded walk. */
#define PV_PATH_SKIP_MAX 12

/* ---- the unwinder ----
 * libunwind's unw_backtrace where it can be loaded: on x86-64 it caches each return address's
 * frame rule (the CFA as the stack or frame pointer plus a constant, where the return address and
 * the saved frame pointer sit; rules taken from .eh_frame, frames it cannot describe so fall back
 * to its full DWARF step), so a walk reads a few words per frame: ~20-80 ns a frame where libgcc's
 * _Unwind_Backtrace, which finds and interprets the frame's CFI every time, takes ~0.3-1 us.
 * It is loaded with dlopen(RTLD_LOCAL), never linked: libunwind.so also exports
 * _Unwind_RaiseException, _Unwind_Backtrace and backtrace, which would otherwise interpose libgcc's
 * and glibc's for the whole application when the layer is preloaded. Without it (not found at
 * build time, or not loadable at run time: one message) libgcc unwinds. */
#ifdef __SANITIZE_THREAD__
#define PV_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PV_UNDER_TSAN 1
#endif
#endif
#ifdef PV_UNDER_TSAN
/* Under ThreadSanitizer libgcc unwinds: libunwind's per-thread cache is freed by a thread-specific
 * data destructor that runs after TSan has finalised the exiting thread, and locks a mutex there,
 * which crashes TSan's interceptor. */
#undef PV_LIBUNWIND_SONAME
#endif
typedef int (*pv_backtrace_fn)(void **buffer, int size);
static pv_backtrace_fn fast_backtrace; /* set once, by load_unwinder */
static pthread_once_t unwinder_once = PTHREAD_ONCE_INIT;

static void load_unwinder(void)
{
#ifdef PV_LIBUNWIND_SONAME
    void *h = dlopen(PV_LIBUNWIND_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen(PV_LIBUNWIND_PATH, RTLD_NOW | RTLD_LOCAL);
    if (h) fast_backtrace = (pv_backtrace_fn)dlsym(h, "unw_backtrace");
    if (!fast_backtrace)
        pv_message(1, "cannot load unw_backtrace from %s (%s); call paths (PERFVAR_CALLPATH > 1) are "
                   "unwound with libgcc, ~10x slower on sites reached by several paths",
                   PV_LIBUNWIND_SONAME, h ? "no such symbol" : dlerror());
#endif
}

const char *pv_site_unwinder(void)
{
    pthread_once(&unwinder_once, load_unwinder);
    return fast_backtrace ? "libunwind" : "libgcc";
}

/* Innermost frames skipped before ra was found, the most seen so far (frames of the unwinder, of
 * pv_call_enter, of the C or Fortran wrapper): a walk asks for this many + max frames, so it
 * neither stops short nor walks the whole stack. Shared by the threads; relaxed (a stale value
 * costs one more walk). */
static int skip_seen = 4;

/* ra and up to max - 1 callers from a libunwind walk into frames[]; 0 when more than
 * PV_PATH_SKIP_MAX frames lie below ra (as walk_frame's limit). */
static int unwind_fast(uintptr_t ra, uintptr_t *frames, int max)
{
    void *buf[PV_PATH_SKIP_MAX + 1 + PV_CALLPATH_MAX];
    int want = __atomic_load_n(&skip_seen, __ATOMIC_RELAXED) + max;
    for (int pass = 0; pass < 2; pass++) {
        if (want > PV_PATH_SKIP_MAX + 1 + max) want = PV_PATH_SKIP_MAX + 1 + max;
        int n = fast_backtrace(buf, want), i = 0;
        int lim = n < PV_PATH_SKIP_MAX + 1 ? n : PV_PATH_SKIP_MAX + 1;
        while (i < lim && (uintptr_t)buf[i] != ra) i++;
        if (i < lim && (n - i >= max || n < want)) { /* found, and every frame asked for is here */
            if (i > __atomic_load_n(&skip_seen, __ATOMIC_RELAXED))
                __atomic_store_n(&skip_seen, i, __ATOMIC_RELAXED);
            int k = n - i < max ? n - i : max;
            for (int j = 0; j < k; j++) frames[j] = (uintptr_t)buf[i + j];
            return k;
        }
        if (n < want) return 0; /* the whole stack, and ra is not in it */
        want = i < lim ? i + max : PV_PATH_SKIP_MAX + 1 + max; /* stopped short: once more, deeper */
    }
    return 0;
}

typedef struct walk {
    uintptr_t ra, *frames;
    int max, n, skipped;
} walk;

static _Unwind_Reason_Code walk_frame(struct _Unwind_Context *ctx, void *arg)
{
    walk *w = arg;
    uintptr_t ip = _Unwind_GetIP(ctx);
    if (w->n == 0) { /* still below the MPI call's caller */
        if (ip != w->ra) return ++w->skipped > PV_PATH_SKIP_MAX ? _URC_END_OF_STACK : _URC_NO_REASON;
    } else if (!ip) {
        return _URC_END_OF_STACK;
    }
    w->frames[w->n++] = ip;
    return w->n >= w->max ? _URC_END_OF_STACK : _URC_NO_REASON;
}

__attribute__((noinline)) int pv_site_unwind(void *ra, uintptr_t *frames, int max)
{
    int n = 0;
    if (max > 1) {
        pthread_once(&unwinder_once, load_unwinder);
        if (fast_backtrace) {
            n = unwind_fast((uintptr_t)ra, frames, max);
        } else {
            walk w = {(uintptr_t)ra, frames, max, 0, 0};
            _Unwind_Backtrace(walk_frame, &w);
            n = w.n;
        }
    }
    if (n == 0) frames[0] = (uintptr_t)ra, n = 1;
    return n;
}

/* A non-zero 64-bit hash of (region, frames): the shared key of a call path. Two paths sharing it
 * would share a site; at 64 bits that needs ~4e9 distinct paths in one process to be likely. */
static uint64_t path_hash(int region, const uintptr_t *frames, int n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)region;
    for (int i = 0; i < n; i++) {
        h ^= frames[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
    }
    return h ? h : 1;
}

/* Calls until the next check of a site whose path never varied, jittered in [i/2, 3i/2). */
static uint32_t jittered(pv_thread *t, int64_t interval)
{
    uint64_t x = t->path_rng ? t->path_rng : 0x2545f4914f6cdd1dull * (uint64_t)(t->index + 1);
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    t->path_rng = x;
    return (uint32_t)(interval / 2 + (int64_t)(x % (uint64_t)interval));
}

/* The depth > 1 miss path: unwind this call, name it by its path, and decide when its depth-1
 * site is unwound next. The thread's state of (fn, ra1) in t->sites: a = site id of the learned
 * path (-1: none yet), b = calls unwound, c = the learned path's hash, d = the next check interval
 * (0: the site showed two paths, every call is unwound). */
static int path_site_id(pv_thread *t, int region, void *ra, int depth)
{
    uintptr_t frames[PV_CALLPATH_MAX];
    int n = pv_site_unwind(ra, frames, depth);
    uint64_t h = path_hash(region, frames, n);
    pv_u64val *p = pv_u64map_find(&t->paths, h);
    int id = p ? (int)p->a
               : site_lookup(&t->paths, &sites, h, region_name(region), frames, n, region, -1);
    if (id < 0) return -1;
    uint64_t key = ((uint64_t)(uintptr_t)ra << 10) | (uint64_t)region;
    pv_u64val *st = pv_u64map_find(&t->sites, key);
    if (!st) {
        if (pv_u64map_put(&t->sites, key, (pv_u64val){.a = id, .c = (int64_t)h, .d = PV_PATH_CHECK_FIRST}))
            return id; /* no memory for the state: this call is named, the next unwound again */
        st = pv_u64map_find(&t->sites, key);
    }
    st->b++;
    if (st->c != (int64_t)h) st->d = 0;
    uint32_t left = 0;
    if (st->d > 0 && st->b >= PV_PATH_LEARN) {
        left = jittered(t, st->d);
        st->d = st->d * 2 > PV_PATH_CHECK_MAX ? PV_PATH_CHECK_MAX : st->d * 2;
    }
    *pv_site_slot_of(t->site_cache, region, ra) = (pv_site_slot){(uintptr_t)ra, region, id, left};
    return id;
}

int pv_site_id_miss(pv_thread *t, int region, void *ra)
{
    if (t->callpath > 1 && ra) return path_site_id(t, region, ra, t->callpath);
    pv_site_slot *slot = pv_site_slot_of(t->site_cache, region, ra);
    uint64_t key = ((uint64_t)(uintptr_t)ra << 10) | (uint64_t)region;
    pv_u64val *v = pv_u64map_find(&t->sites, key);
    int id;
    if (v) {
        id = (int)v->a;
    } else {
        uintptr_t frame = (uintptr_t)ra;
        id = site_lookup(&t->sites, &sites, key, region_name(region), &frame, 1, region, -1);
    }
    /* Served from the slot until evicted (a refill after 2^32 calls costs one lookup). */
    if (id >= 0) *slot = (pv_site_slot){(uintptr_t)ra, region, id, UINT32_MAX};
    return id;
}

/* User timer handle -> its name is in the definitions file; read without the lock (atomic),
 * written under user_lock. */
static unsigned char *user_defined;
static pthread_mutex_t user_lock = PTHREAD_MUTEX_INITIALIZER;

int pv_site_user_regions_init(void)
{
    if (!user_defined) user_defined = calloc(PERFVAR_MAX_REGIONS, 1);
    return user_defined ? 0 : -1;
}

int pv_site_user_region_defined(int handle)
{
    if (!user_defined || handle < 0 || handle >= PERFVAR_MAX_REGIONS) return 0;
    if (__atomic_load_n(&user_defined[handle], __ATOMIC_ACQUIRE)) return 1;
    pthread_mutex_lock(&user_lock);
    if (!user_defined[handle]) { /* another thread may have defined it meanwhile */
        char name[PERFVAR_NAME_MAX + 16];
        const char *n = pv_region_name(handle);
        pv_rec_defs_clean(name, sizeof name, n ? n : "?");
        if (pv_rec_defs_line(PV_DEFS_USER, handle, name) == 0)
            __atomic_store_n(&user_defined[handle], 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&user_lock);
    return user_defined[handle];
}

int pv_site_user(pv_thread *t, int handle, int is_stop, const char *name, void *ra)
{
    uint64_t key = ((uint64_t)(uintptr_t)ra << 16) | ((uint64_t)handle << 1) | (uint64_t)is_stop;
    pv_u64val *v = pv_u64map_find(&t->user_sites, key);
    if (v) return (int)v->a;
    /* '@' and ';' separate the parts of a segment key: keep them out of the name. */
    char what[PERFVAR_NAME_MAX + 16];
    snprintf(what, sizeof what, "%s(%s)", is_stop ? "perfvar_stop" : "perfvar_start", name);
    for (char *p = what; *p; p++)
        if (*p == '@' || *p == ';') *p = '_';
    uintptr_t frame = (uintptr_t)ra;
    return site_lookup(&t->user_sites, &user_sites, key, what, &frame, 1, is_stop ? -2 : -1, handle);
}
