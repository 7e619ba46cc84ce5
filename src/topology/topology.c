/* topology.c — see topology.h. */
#define _GNU_SOURCE
#include "topology.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef PERFVAR_HAVE_HWLOC
#include <hwloc.h>
#endif

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* *t emptied (not freed), of the given source. */
static void topo_reset(pv_topology *t, const char *source, int cpu)
{
    t->source = source;
    t->note[0] = 0;
    t->cpu = cpu;
    t->package = t->numa = t->core = -1;
    t->ncpus = 0;
    t->cpus = NULL;
}

/* Room for n CPUs of the mask, each where nothing is known yet; -1 when out of memory. */
static int topo_cpus(pv_topology *t, const int *mask, int n)
{
    t->cpus = n ? calloc((size_t)n, sizeof *t->cpus) : NULL;
    if (n && !t->cpus) return -1;
    for (int i = 0; i < n; i++) t->cpus[i] = (pv_topo_cpu){mask[i], -1, -1, -1};
    t->ncpus = n;
    return 0;
}

/* The start CPU's place, from its entry in the mask (a CPU outside it: unknown). */
static void topo_start(pv_topology *t)
{
    for (int i = 0; i < t->ncpus; i++)
        if (t->cpus[i].cpu == t->cpu) {
            t->package = t->cpus[i].package, t->numa = t->cpus[i].numa, t->core = t->cpus[i].core;
            return;
        }
}

/* ---- sysfs ---- */

/* The integer in file root/path (printf-style), or -1. */
static int read_int(const char *root, const char *fmt, int arg)
{
    char rel[128], path[4400];
    snprintf(rel, sizeof rel, fmt, arg);
    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int v = -1;
    if (fscanf(f, "%d", &v) != 1) v = -1;
    fclose(f);
    return v;
}

/* Whether cpu is in the kernel's CPU list text ("0-3,8,10-11"). */
static int in_cpulist(const char *list, int cpu)
{
    const char *p = list;
    while (*p) {
        char *end;
        long lo = strtol(p, &end, 10);
        if (end == p) return 0;
        long hi = lo;
        if (*end == '-') hi = strtol(end + 1, &end, 10);
        if (cpu >= lo && cpu <= hi) return 1;
        p = *end == ',' ? end + 1 : end;
        if (*p == '\n') break;
    }
    return 0;
}

/* The NUMA node of each CPU of t (root/devices/system/node/nodeN/cpulist); left -1 without. */
static void sysfs_numa(pv_topology *t, const char *root)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/devices/system/node", root);
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        int node;
        char tail;
        if (sscanf(e->d_name, "node%d%c", &node, &tail) != 1) continue;
        char file[4700], list[4096];
        snprintf(file, sizeof file, "%s/%s/cpulist", path, e->d_name);
        FILE *f = fopen(file, "r");
        if (!f) continue;
        int got = fgets(list, sizeof list, f) != NULL;
        fclose(f);
        for (int i = 0; got && i < t->ncpus; i++)
            if (in_cpulist(list, t->cpus[i].cpu)) t->cpus[i].numa = node;
    }
    closedir(d);
}

int pv_topology_from_sysfs(pv_topology *t, const char *root, const int *mask, int n, int cpu)
{
    double t0 = mono_ms();
    topo_reset(t, "none", cpu);
    if (read_int(root, "devices/system/cpu/cpu%d/topology/physical_package_id", cpu) < 0) {
        snprintf(t->note, sizeof t->note, "no %.100s/devices/system/cpu/cpu%d/topology", root, cpu);
        t->read_ms = mono_ms() - t0;
        return -1;
    }
    if (topo_cpus(t, mask, n)) {
        snprintf(t->note, sizeof t->note, "out of memory");
        return -1;
    }
    t->source = "sysfs";
    for (int i = 0; i < n; i++) {
        pv_topo_cpu *c = &t->cpus[i];
        c->package = read_int(root, "devices/system/cpu/cpu%d/topology/physical_package_id", c->cpu);
        c->core = read_int(root, "devices/system/cpu/cpu%d/topology/core_id", c->cpu);
    }
    sysfs_numa(t, root);
    topo_start(t);
    t->read_ms = mono_ms() - t0;
    return 0;
}

/* ---- hwloc ---- */

#ifdef PERFVAR_HAVE_HWLOC
static int os_index(hwloc_obj_t o) { return o && o->os_index != HWLOC_UNKNOWN_INDEX ? (int)o->os_index : -1; }

/* The os_index of the NUMA node whose CPUs include cpu, or -1. */
static int hwloc_numa_of(hwloc_topology_t topo, int cpu)
{
    for (hwloc_obj_t o = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, NULL); o;
         o = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, o))
        if (o->cpuset && hwloc_bitmap_isset(o->cpuset, (unsigned)cpu)) return os_index(o);
    return -1;
}

/* Load only what the record needs: the hierarchy of packages, cores and PUs (NUMA nodes are
 * always kept), restricted to this process's binding, without caches, I/O devices, distances,
 * memory attributes or CPU kinds. */
static int hwloc_load_small(hwloc_topology_t topo)
{
    unsigned long flags = 0;
#if HWLOC_API_VERSION >= 0x00020500
    flags |= HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM | HWLOC_TOPOLOGY_FLAG_RESTRICT_TO_CPUBINDING;
#endif
#if HWLOC_API_VERSION >= 0x00020800
    flags |= HWLOC_TOPOLOGY_FLAG_NO_DISTANCES | HWLOC_TOPOLOGY_FLAG_NO_MEMATTRS |
             HWLOC_TOPOLOGY_FLAG_NO_CPUKINDS;
#endif
    /* Linux's own backend tells all of it: not the x86 one (which would run CPUID on each CPU,
     * moving the thread) nor the I/O ones (PCI, OpenCL, GL), about a third of the load here. */
#if HWLOC_API_VERSION >= 0x00020100
    static const char *const skip[] = {"x86", "pci", "opencl", "gl"};
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, skip[i]);
#endif
    if (hwloc_topology_set_flags(topo, flags) ||
        hwloc_topology_set_all_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE) ||
        hwloc_topology_set_type_filter(topo, HWLOC_OBJ_PACKAGE, HWLOC_TYPE_FILTER_KEEP_ALL) ||
        hwloc_topology_set_type_filter(topo, HWLOC_OBJ_CORE, HWLOC_TYPE_FILTER_KEEP_ALL))
        return -2;
    return hwloc_topology_load(topo) ? -1 : 0;
}
#endif

int pv_topology_from_hwloc(pv_topology *t, const int *mask, int n, int cpu)
{
    double t0 = mono_ms();
    topo_reset(t, "none", cpu);
#ifdef PERFVAR_HAVE_HWLOC
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo)) {
        snprintf(t->note, sizeof t->note, "hwloc_topology_init failed: %s", strerror(errno));
        return -1;
    }
    int rc = hwloc_load_small(topo);
    if (rc) {
        snprintf(t->note, sizeof t->note, "hwloc_topology_%s failed: %s",
                 rc == -2 ? "set_flags/set_type_filter" : "load", strerror(errno));
        hwloc_topology_destroy(topo);
        t->read_ms = mono_ms() - t0;
        return -1;
    }
    if (topo_cpus(t, mask, n)) {
        snprintf(t->note, sizeof t->note, "out of memory");
        hwloc_topology_destroy(topo);
        return -1;
    }
    t->source = "hwloc";
    for (int i = 0; i < n; i++) {
        pv_topo_cpu *c = &t->cpus[i];
        hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(topo, (unsigned)c->cpu);
        if (!pu) continue;
        c->package = os_index(hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, pu));
        c->core = os_index(hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_CORE, pu));
        c->numa = hwloc_numa_of(topo, c->cpu);
    }
    hwloc_topology_destroy(topo);
    topo_start(t);
    t->read_ms = mono_ms() - t0;
    return 0;
#else
    (void)mask, (void)n;
    snprintf(t->note, sizeof t->note, "perfvar was built without hwloc");
    t->read_ms = mono_ms() - t0;
    return -1;
#endif
}

/* ---- the rank's ---- */

int pv_topology_read(pv_topology *t)
{
    double t0 = mono_ms();
    cpu_set_t set;
    int cpu = sched_getcpu(), n = 0;
    int mask[CPU_SETSIZE];
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set)) mask[n++] = c;
    if (pv_topology_from_hwloc(t, mask, n, cpu) == 0) return 0;
    char why[PV_TOPO_NOTE_MAX];
    snprintf(why, sizeof why, "%s", t->note);
    int rc = pv_topology_from_sysfs(t, "/sys", mask, n, cpu);
    char sys[PV_TOPO_NOTE_MAX];
    snprintf(sys, sizeof sys, "%s", t->note);
    /* Say why hwloc did not tell, and why sysfs could not either. */
    snprintf(t->note, sizeof t->note, "%.96s%s%.96s", why, sys[0] ? "; " : "", sys);
    t->read_ms = mono_ms() - t0;
    return rc;
}

void pv_topology_place(const pv_topology *t, int *package, int *core)
{
    *package = *core = -1;
    if (!t->ncpus || t->cpus[0].package < 0) return;
    int pkg = t->cpus[0].package, cr = t->cpus[0].core;
    for (int i = 1; i < t->ncpus; i++) {
        if (t->cpus[i].package != pkg) return;
        if (t->cpus[i].core != cr) cr = -1;
    }
    *package = pkg, *core = cr;
}

void pv_topology_free(pv_topology *t)
{
    free(t->cpus);
    t->cpus = NULL;
    t->ncpus = 0;
}
