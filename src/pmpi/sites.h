/*
 * sites.h — call sites, which delimit the compute segments (sites.c; internal to src/pmpi).
 *
 * A site is (static region, return address) — an MPI function or perfvar's own region — or (user
 * timer handle, start|stop, return address); at call-path depth k > 1 (PERFVAR_CALLPATH) an MPI
 * call's site is (function, return addresses of the call and of its k - 1 callers). Site ids are
 * small integers from 0, handed out in order of first sight per process, each written to the
 * rank's definitions file (PV_DEFS_SITE) before it is returned, so no record names a site its
 * rank's definitions lack.
 *
 * State: the shared maps (key -> id), the count of ids handed out and each site's label belong to
 * sites.c, under its own lock; they grow only (a process's sites are never forgotten). What a
 * thread looked up is cached in its pv_thread (threads.h: site_cache, sites, user_sites, paths),
 * read and written by that thread only, so the steady state takes no lock. The call-path depth is
 * the thread's copy (pv_thread.callpath).
 *
 * The hot path, pv_site_id (below), is the slot of pv_site_slot_of in the thread's direct-mapped
 * cache, inline; only its miss calls into sites.c. No MPI: sites.c needs none.
 */
#ifndef PV_MPI_SITES_H
#define PV_MPI_SITES_H
#include <stddef.h>
#include <stdint.h>

struct pv_thread;

/* A per-thread direct-mapped cache of call sites: (function, return address) -> site id, served
 * `left` more times before the miss path looks at the call again. At call-path depth 1 a filled
 * slot is served (almost) forever; at depth > 1 `left` is when the call path is next unwound to
 * check it (sites.c), 0 when every call is unwound. */
#define PV_SITE_CACHE 256
typedef struct pv_site_slot {
    uintptr_t ra;
    int fn, id;
    uint32_t left; /* calls the slot still answers; 0: empty or the next call is unwound */
} pv_site_slot;

/* The slot of (region, ra) in a thread's cache of PV_SITE_CACHE slots. Pure, inline; any thread. */
static inline pv_site_slot *pv_site_slot_of(pv_site_slot *cache, int region, void *ra)
{
    return &cache[((uintptr_t)ra >> 1 ^ (uintptr_t)region * 0x9e37u) % PV_SITE_CACHE];
}

/* The miss path of pv_site_id: site id of a call of static region `region` (< PV_FN_COUNT: an MPI
 * function; above: perfvar's own) at return address ra, defined on first sight, and the thread's
 * slot refilled; -1 when it cannot be defined (out of memory, more than PV_REC_MAX_SITE sites, the
 * definitions file cannot be written). At t's call-path depth (t->callpath) > 1 it unwinds the
 * calling thread's stack from ra. Called by thread t for itself (its caches); thread-safe. Not
 * async-signal-safe. */
int pv_site_id_miss(struct pv_thread *t, int region, void *return_address);

/* The site id of a call of static region `region` at return address ra, or -1 (see
 * pv_site_id_miss), for thread t whose cache is `cache` (its site_cache). Most calls come from a
 * few sites whose callers do not vary: the thread's direct-mapped cache first, inline. Called by
 * thread t for itself. */
static inline int pv_site_id(struct pv_thread *t, pv_site_slot *cache, int region, void *ra)
{
    pv_site_slot *slot = pv_site_slot_of(cache, region, ra);
    if (__builtin_expect(slot->ra == (uintptr_t)ra && slot->fn == region && slot->left > 0, 1)) {
        slot->left--;
        return slot->id;
    }
    return pv_site_id_miss(t, region, ra);
}

/* Site id of a start (is_stop 0) or stop (1) of user timer `handle` named `name` at return address
 * ra (always depth 1: the user placed it); distinct from every MPI call's site and from the other
 * of start/stop at the same address. -1 as pv_site_id_miss. Called by thread t for itself;
 * thread-safe. */
int pv_site_user(struct pv_thread *t, int handle, int is_stop, const char *name, void *return_address);

/* User timer regions: a handle's name goes to the definitions file on its first use.
 * pv_site_user_regions_init makes room for every handle (at perfvar's start, before any thread
 * traces; 0 or -1 when out of memory). pv_site_user_region_defined: 1 once handle's region is in
 * the definitions file, 0 if it cannot be. Thread-safe. */
int pv_site_user_regions_init(void);
int pv_site_user_region_defined(int handle);

/* Unwind the calling thread's stack from return address ra (searched among the innermost
 * frames): ra and the return addresses of up to max - 1 callers above it into frames[]; their
 * number (1 when ra is not found: ra alone). Async-signal-unsafe (the unwinder may lock);
 * thread-safe. */
int pv_site_unwind(void *ra, uintptr_t *frames, int max);

/* The unwinder pv_site_unwind uses: "libunwind" (unw_backtrace, loaded on first use) or "libgcc"
 * (_Unwind_Backtrace: libunwind not found at build time or not loadable). Thread-safe. */
const char *pv_site_unwinder(void);

/* The label of site id (as in the trace's segment keys: "<fn>@<module base name>+0x<offset>", then
 * "<<module>+0x<offset>" per caller frame) into out (len bytes, truncated); 0, or -1 when the site
 * has none. Takes sites.c's lock: for cold paths only. Thread-safe. */
int pv_site_label(int id, char *out, size_t len);

#endif
