/* sites.c — call sites and the compute-segment regions they delimit.
 *
 * A site is (MPI function, return address into the caller), or (user timer start/stop of a region,
 * return address), since perfvar_start/perfvar_stop cut segments too. Its name uses the module and the offset
 * from the module's load bias, so it is the same on every rank of a run (ASLR moves addresses, not
 * offsets) and `addr2line -e module offset-1` symbolises it. Names are made once per site, on first
 * sight, outside the measured segments (inside the MPI region).
 *
 * Sites and segment regions are per process, shared by its threads (the same call site is the same
 * site on every thread, so a segment class is the same on every thread): defined under
 * pv_rt.defs_lock. Each thread looks them up in its own caches first, so it takes the lock only the
 * first time it meets a site or segment. */
#define _GNU_SOURCE
#include "state.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Define a new site named "<what>@<module>+0x<offset>" for return address ra; its id or -1.
 * Under defs_lock. */
static int site_define(const char *what, void *ra)
{
    if (pv_rt.nsites == pv_rt.sites_cap) {
        int cap = pv_rt.sites_cap ? 2 * pv_rt.sites_cap : 64;
        char **n = realloc(pv_rt.site_names, (size_t)cap * sizeof *n);
        if (n) pv_rt.site_names = n;
        char **l = realloc(pv_rt.site_labels, (size_t)cap * sizeof *l);
        if (l) pv_rt.site_labels = l;
        if (!n || !l) return -1;
        pv_rt.sites_cap = cap;
    }
    char path[4096], buf[4400];
    uintptr_t off;
    module_of(ra, path, sizeof path, &off);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int id = pv_rt.nsites;
    snprintf(buf, sizeof buf, "%s@%s+0x%lx", what, path, (unsigned long)off);
    pv_rt.site_names[id] = strdup(buf);
    snprintf(buf, sizeof buf, "%s@%s+0x%lx", what, base, (unsigned long)off);
    pv_rt.site_labels[id] = strdup(buf);
    if (!pv_rt.site_names[id] || !pv_rt.site_labels[id]) return -1;
    return pv_rt.nsites++;
}

/* Site id of key in the shared map, defining it as "<what>@..." on first sight; then cached in the
 * thread's map (a failed cache insert only costs a lock next time). */
static int site_lookup(pv_u64map *cache, pv_u64map *map, uint64_t key, const char *what, void *ra)
{
    pthread_mutex_lock(&pv_rt.defs_lock);
    pv_u64val *v = pv_u64map_find(map, key);
    int id = v ? (int)v->a : site_define(what, ra);
    if (!v && id >= 0 && pv_u64map_put(map, key, (pv_u64val){.a = id})) id = -1;
    pthread_mutex_unlock(&pv_rt.defs_lock);
    if (id >= 0) pv_u64map_put(cache, key, (pv_u64val){.a = id});
    return id;
}

int pv_site_id(pv_thread *t, int fn, void *ra)
{
    uint64_t key = ((uint64_t)(uintptr_t)ra << 8) | (uint64_t)fn;
    pv_u64val *v = pv_u64map_find(&t->sites, key);
    if (v) return (int)v->a;
    return site_lookup(&t->sites, &pv_rt.sites, key, pv_fn_info[fn].name, ra);
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
    return site_lookup(&t->user_sites, &pv_rt.user_sites, key, what, ra);
}

/* Define the segment region from -> to (under defs_lock); UINT32_MAX on failure. */
static uint32_t segment_define(int from, int to)
{
    size_t n = strlen(pv_rt.site_names[from]) + strlen(pv_rt.site_names[to]) + 32;
    size_t m = strlen(pv_rt.site_labels[from]) + strlen(pv_rt.site_labels[to]) + 8;
    char *canonical = malloc(n), *display = malloc(m);
    uint32_t region = UINT32_MAX;
    if (canonical && display) {
        snprintf(canonical, n, "perfvar:segment:%s;%s", pv_rt.site_names[from], pv_rt.site_names[to]);
        snprintf(display, m, "%s -> %s", pv_rt.site_labels[from], pv_rt.site_labels[to]);
        region = pv_trace_region_define(canonical, display, OTF2_REGION_ROLE_CODE, OTF2_PARADIGM_USER);
    }
    free(canonical), free(display);
    return region;
}

uint32_t pv_segment_region(pv_thread *t, int from, int to)
{
    if (from < 0 || to < 0) return UINT32_MAX;
    uint64_t key = ((uint64_t)(from + 1) << 32) | (uint64_t)(to + 1);
    pv_u64val *v = pv_u64map_find(&t->segments, key);
    if (v) return (uint32_t)v->a;
    pthread_mutex_lock(&pv_rt.defs_lock);
    v = pv_u64map_find(&pv_rt.segments, key);
    uint32_t region = v ? (uint32_t)v->a : segment_define(from, to);
    if (!v && region != UINT32_MAX && pv_u64map_put(&pv_rt.segments, key, (pv_u64val){.a = region}))
        region = UINT32_MAX;
    pthread_mutex_unlock(&pv_rt.defs_lock);
    if (region != UINT32_MAX) pv_u64map_put(&t->segments, key, (pv_u64val){.a = region});
    return region;
}

void pv_note_cpu(pv_thread *t, int cpu)
{
    if (cpu >= 0 && cpu < PV_MAX_CPUS) t->cpus_seen[cpu / 8] |= (unsigned char)(1u << (cpu % 8));
}
