/*
 * topology.h — where a rank runs in its machine: the socket (package), NUMA node and core of the
 * CPU it starts on and of every CPU of its affinity mask (internal, MPI-free).
 *
 * From hwloc where perfvar was built with it (PERFVAR_HAVE_HWLOC); otherwise, or where hwloc
 * cannot load the machine's topology, from Linux's sysfs: cpuN/topology/physical_package_id and
 * core_id under <root>/devices/system/cpu, nodeN/cpulist under <root>/devices/system/node.
 *
 * Numbers are the operating system's, the same from both sources, so a rank's record can be read
 * beside numactl, taskset or /sys: package = physical_package_id (hwloc's Package os_index), numa
 * = the N of nodeN (hwloc's NUMANode os_index), core = core_id (hwloc's Core os_index): unique
 * within its package, not necessarily dense (0-7,16-23 on some parts). -1: not known.
 *
 * Costs: read once at start-up, off the traced calls. hwloc loads only packages, cores, PUs and
 * NUMA nodes of the process's CPU binding (no caches, I/O, distances, memory attributes or CPU
 * kinds); sysfs reads two small files per CPU of the mask and one per NUMA node. Each read says
 * its wall time (read_ms).
 *
 * Thread-safety: none; one owner (the rank's start). Not async-signal-safe (stdio, malloc).
 */
#ifndef PV_TOPOLOGY_H
#define PV_TOPOLOGY_H
#define PV_TOPO_NOTE_MAX 200

/* One CPU of the mask and where it sits (-1: not known). */
typedef struct pv_topo_cpu {
    int cpu, package, numa, core;
} pv_topo_cpu;

typedef struct pv_topology {
    const char *source;          /* "hwloc", "sysfs" or "none" (static strings) */
    char note[PV_TOPO_NOTE_MAX]; /* why not hwloc, or why nothing; "" when hwloc told */
    int cpu;                     /* the CPU it was read on (-1: not known) */
    int package, numa, core;     /* where that CPU sits (-1: not known) */
    int ncpus;
    pv_topo_cpu *cpus;           /* the mask's CPUs, increasing; malloc'd (NULL when ncpus 0) */
    double read_ms;              /* wall time the read took */
} pv_topology;

/* The calling thread's affinity mask and current CPU, from hwloc where built in (else, or when it
 * fails, sysfs under "/sys"; the note says why). 0, or -1 when neither could tell (source "none",
 * the note says why). *t is always overwritten (free an earlier result first); free it with
 * pv_topology_free. The same holds for the two below. */
int pv_topology_read(pv_topology *t);

/* From sysfs under root ("/sys", or a test's tree) for the n CPUs mask[] (increasing) and the
 * start CPU cpu. 0, or -1 when root has no topology of cpu (source "none"). */
int pv_topology_from_sysfs(pv_topology *t, const char *root, const int *mask, int n, int cpu);

/* From hwloc for the same; -1 (note says why, source "none") when hwloc is not built in or
 * cannot load the topology. */
int pv_topology_from_hwloc(pv_topology *t, const int *mask, int n, int cpu);

/* Where the rank sits in the trace's system tree: *package and *core of its mask when all its
 * CPUs share them, else -1 (the mask spans sockets: both -1; cores of one socket: core -1). */
void pv_topology_place(const pv_topology *t, int *package, int *core);

void pv_topology_free(pv_topology *t);

#endif
