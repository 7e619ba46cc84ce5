/* sites.c — call sites, which delimit the compute segments.
 *
 * A site is (MPI function, return address into the caller), or (user timer start/stop of a region,
 * return address), since perfvar_start/perfvar_stop cut segments too. Its name uses the module and the offset
 * from the module's load bias, so it is the same on every rank of a run (ASLR moves addresses, not
 * offsets) and `addr2line -e module offset-1` symbolises it. Names are made once per site, on first
 * sight, outside the measured segments (inside the MPI region).
 *
 * The compute segment between two sites is named by both when the records are converted
 * (src/trace/convert.c): "perfvar:segment:<from site>;<to site>".
 * Sites are per process, shared by its threads (the same call site is the same site on every
 * thread, so a segment class is the same on every thread): defined under pv_rt.defs_lock, written to
 * the rank's definitions file. Each thread looks them up in its own cache first, so it takes the
 * lock only the first time it meets a site. */
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

/* Define a new site "<what>@<module>+0x<offset>" for return address ra: a call of static region
 * `region`, or (region -1 start, -2 stop) of user timer `handle`; its id or -1. Under defs_lock. */
static int site_define(const char *what, void *ra, int region, int handle)
{
    char path[4096], name[4400], label[4400];
    uintptr_t off;
    module_of(ra, path, sizeof path, &off);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    snprintf(name, sizeof name, "%s@%s+0x%lx", what, path, (unsigned long)off);
    snprintf(label, sizeof label, "%s@%s+0x%lx", what, base, (unsigned long)off);
    pv_rec_defs_clean(name, sizeof name, name);
    pv_rec_defs_clean(label, sizeof label, label);
    if (pv_rt.nsites > (int)PV_REC_MAX_SITE) return -1;
    int id = pv_rt.nsites;
    /* The line goes out before the id is used: a record never names a site its rank's definitions
     * lack, whenever the process dies. */
    if (pv_rec_defs_line("site\t%d\t%d\t%d\t%s\t%s", id, region, handle, name, label)) return -1;
    return pv_rt.nsites++;
}

/* Site id of key in the shared map, defining it on first sight; then cached in the thread's map (a
 * failed cache insert only costs a lock next time). */
static int site_lookup(pv_u64map *cache, pv_u64map *map, uint64_t key, const char *what, void *ra,
                       int region, int handle)
{
    pthread_mutex_lock(&pv_rt.defs_lock);
    pv_u64val *v = pv_u64map_find(map, key);
    int id = v ? (int)v->a : site_define(what, ra, region, handle);
    if (!v && id >= 0 && pv_u64map_put(map, key, (pv_u64val){.a = id})) id = -1;
    pthread_mutex_unlock(&pv_rt.defs_lock);
    if (id >= 0) pv_u64map_put(cache, key, (pv_u64val){.a = id});
    return id;
}

int pv_site_id_miss(pv_thread *t, int region, void *ra)
{
    pv_site_slot *slot = pv_site_slot_of(t, region, ra);
    uint64_t key = ((uint64_t)(uintptr_t)ra << 10) | (uint64_t)region;
    pv_u64val *v = pv_u64map_find(&t->sites, key);
    int id;
    if (v) {
        id = (int)v->a;
    } else {
        const char *what = region < PV_FN_COUNT ? pv_fn_info[region].name : "perfvar";
        id = site_lookup(&t->sites, &pv_rt.sites, key, what, ra, region, -1);
    }
    if (id >= 0) *slot = (pv_site_slot){(uintptr_t)ra, region, id + 1};
    return id;
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
    return site_lookup(&t->user_sites, &pv_rt.user_sites, key, what, ra, is_stop ? -2 : -1, handle);
}
