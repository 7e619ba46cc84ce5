/* Where a rank runs (src/topology): the sysfs reader against a fake tree written here (two
 * packages, a core id gap, two NUMA nodes, a CPU without topology), the placement in the system
 * tree, and on this machine hwloc's answer against sysfs's (the same OS numbers from both). */
#define _GNU_SOURCE
#include "check.h"
#include "topology/topology.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void put(const char *root, const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    /* mkdir -p of its directory */
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = 0;
        mkdir(path, 0755);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* 8 CPUs: package 0 holds CPUs 0-3 (cores 0,1,8,9: ids need not be dense), package 1 CPUs 4-7
 * (cores 0,1 with two threads each); node0 = 0-3, node1 = 4-7. cpu8 is listed but has no topology. */
static void fake_sysfs(const char *root)
{
    static const int pkg[8] = {0, 0, 0, 0, 1, 1, 1, 1}, core[8] = {0, 1, 8, 9, 0, 0, 1, 1};
    for (int c = 0; c < 8; c++) {
        char rel[128], v[16];
        snprintf(rel, sizeof rel, "devices/system/cpu/cpu%d/topology/physical_package_id", c);
        snprintf(v, sizeof v, "%d\n", pkg[c]);
        put(root, rel, v);
        snprintf(rel, sizeof rel, "devices/system/cpu/cpu%d/topology/core_id", c);
        snprintf(v, sizeof v, "%d\n", core[c]);
        put(root, rel, v);
    }
    put(root, "devices/system/cpu/cpu8/online", "1\n");
    put(root, "devices/system/node/node0/cpulist", "0-3\n");
    put(root, "devices/system/node/node1/cpulist", "4,5-7\n");
    put(root, "devices/system/node/possible", "0-1\n");
}

static void test_sysfs(const char *root)
{
    pv_topology t = {0};
    int mask[] = {2, 3, 6, 7};
    CHECK(pv_topology_from_sysfs(&t, root, mask, 4, 6) == 0);
    CHECK(!strcmp(t.source, "sysfs"));
    CHECK(t.cpu == 6 && t.package == 1 && t.numa == 1 && t.core == 1);
    CHECK(t.ncpus == 4);
    CHECK(t.cpus[0].cpu == 2 && t.cpus[0].package == 0 && t.cpus[0].numa == 0 && t.cpus[0].core == 8);
    CHECK(t.cpus[1].cpu == 3 && t.cpus[1].core == 9);
    CHECK(t.cpus[3].cpu == 7 && t.cpus[3].package == 1 && t.cpus[3].numa == 1 && t.cpus[3].core == 1);
    int p, c;
    pv_topology_place(&t, &p, &c); /* across packages: under the node */
    CHECK(p == -1 && c == -1);
    pv_topology_free(&t);

    int two_threads[] = {4, 5}; /* one core's two hardware threads: under that core */
    CHECK(pv_topology_from_sysfs(&t, root, two_threads, 2, 4) == 0);
    pv_topology_place(&t, &p, &c);
    CHECK(p == 1 && c == 0);
    pv_topology_free(&t);

    int one_socket[] = {0, 1, 2}; /* cores of one package: under the socket */
    CHECK(pv_topology_from_sysfs(&t, root, one_socket, 3, 0) == 0);
    pv_topology_place(&t, &p, &c);
    CHECK(p == 0 && c == -1);
    pv_topology_free(&t);

    /* A start CPU without topology: nothing known, and the note says where it looked. */
    CHECK(pv_topology_from_sysfs(&t, root, mask, 4, 8) == -1);
    CHECK(!strcmp(t.source, "none") && t.ncpus == 0 && t.package == -1 && t.core == -1);
    CHECK(strstr(t.note, "cpu8/topology") != NULL);
    pv_topology_place(&t, &p, &c);
    CHECK(p == -1 && c == -1);
    pv_topology_free(&t);

    /* A CPU of the mask missing from the tree: known where it is, -1 where not. */
    int beyond[] = {1, 9};
    CHECK(pv_topology_from_sysfs(&t, root, beyond, 2, 1) == 0);
    CHECK(t.cpus[1].cpu == 9 && t.cpus[1].package == -1 && t.cpus[1].numa == -1);
    pv_topology_free(&t);
}

/* This machine: hwloc (where built in) and /sys give the same numbers for the rank's CPUs. */
static void test_this_machine(void)
{
    pv_topology t = {0}, s = {0};
    CHECK(pv_topology_read(&t) == 0 || !strcmp(t.source, "none"));
    printf("pv_topology_read: source %s, %d CPUs, cpu %d: package %d numa %d core %d, %.3f ms%s%s\n",
           t.source, t.ncpus, t.cpu, t.package, t.numa, t.core, t.read_ms, t.note[0] ? ": " : "",
           t.note);
    if (!strcmp(t.source, "none")) return; /* no /sys: nothing to compare */
    int *mask = malloc((size_t)t.ncpus * sizeof *mask);
    CHECK(mask != NULL);
    for (int i = 0; i < t.ncpus; i++) mask[i] = t.cpus[i].cpu;
    CHECK(pv_topology_from_sysfs(&s, "/sys", mask, t.ncpus, t.cpu) == 0);
    printf("sysfs: %.3f ms\n", s.read_ms);
    CHECK(s.ncpus == t.ncpus);
    for (int i = 0; i < t.ncpus; i++) {
        const pv_topo_cpu *a = &t.cpus[i], *b = &s.cpus[i];
        printf("  cpu %d: %s package %d numa %d core %d; sysfs package %d numa %d core %d\n", a->cpu,
               t.source, a->package, a->numa, a->core, b->package, b->numa, b->core);
        CHECK(a->cpu == b->cpu && a->package == b->package && a->core == b->core);
        CHECK(a->package >= 0 && a->core >= 0);
        /* hwloc always has a NUMA node; /sys has none on a kernel without NUMA. */
        CHECK(b->numa < 0 || a->numa == b->numa);
    }
    /* Distinct (package, core) pairs are distinct cores for both: same grouping. */
    for (int i = 0; i < t.ncpus; i++)
        for (int j = i + 1; j < t.ncpus; j++) {
            int same_t = t.cpus[i].package == t.cpus[j].package && t.cpus[i].core == t.cpus[j].core;
            int same_s = s.cpus[i].package == s.cpus[j].package && s.cpus[i].core == s.cpus[j].core;
            CHECK(same_t == same_s);
        }
    CHECK(t.package == s.package && t.core == s.core);
#ifdef PERFVAR_HAVE_HWLOC
    CHECK(!strcmp(t.source, "hwloc") && t.note[0] == 0);
#else
    CHECK(!strcmp(t.source, "sysfs") && strstr(t.note, "without hwloc") != NULL);
#endif
    free(mask);
    pv_topology_free(&t);
    pv_topology_free(&s);
}

int main(void)
{
    char root[] = "/tmp/perfvar-topology-XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    fake_sysfs(root);
    test_sysfs(root);
    test_this_machine();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
    return check_result();
}
