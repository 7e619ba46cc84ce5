/* neighbours.c — see neighbours.h. */
#define _GNU_SOURCE
#include "neighbours.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *const pv_cpu_time_names[PV_CPU_TIMES] = {"user", "nice", "system", "idle",
                                                      "iowait", "irq", "softirq", "steal"};

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The "cpuN" lines of /proc/stat into ticks[N * PV_CPU_TIMES + column] for N < max (missing
 * columns of older kernels stay 0). Returns how many CPUs were listed (the highest N + 1), or -1. */
static int read_cpu_ticks(uint64_t *ticks, int max)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return -1;
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        int cpu, used = 0;
        if (strncmp(line, "cpu", 3) != 0 || sscanf(line + 3, "%d%n", &cpu, &used) != 1) continue;
        if (cpu < 0 || cpu >= max) continue;
        const char *p = line + 3 + used;
        for (int c = 0; c < PV_CPU_TIMES; c++) {
            char *end;
            unsigned long long v = strtoull(p, &end, 10);
            if (end == p) break;
            if (ticks) ticks[(size_t)cpu * PV_CPU_TIMES + c] = v;
            p = end;
        }
        if (cpu + 1 > n) n = cpu + 1;
    }
    fclose(f);
    return n;
}

/* A task's stat file: its name, utime + stime (ticks) and the CPU it last ran on. 0, or -1. The
 * name is between the first '(' and the last ')', which it may itself contain. */
static int read_task(const char *path, char comm[PV_NEIGHBOURS_COMM_MAX], uint64_t *ticks, int *cpu)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char buf[1024];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    char *open = strchr(buf, '('), *close = strrchr(buf, ')');
    if (!open || !close || close < open) return -1;
    size_t n = (size_t)(close - open - 1);
    if (n >= PV_NEIGHBOURS_COMM_MAX) n = PV_NEIGHBOURS_COMM_MAX - 1;
    memcpy(comm, open + 1, n);
    comm[n] = 0;
    /* After the name: field 3 (state) onwards; utime and stime are fields 14 and 15, the CPU 39. */
    unsigned long long utime = 0, stime = 0;
    int last = -1, field = 3;
    for (char *tok = strtok(close + 1, " "); tok; tok = strtok(NULL, " "), field++) {
        if (field == 14) utime = strtoull(tok, NULL, 10);
        else if (field == 15) stime = strtoull(tok, NULL, 10);
        else if (field == 39) {
            last = atoi(tok);
            break;
        }
    }
    if (field != 39) return -1;
    *ticks = utime + stime;
    *cpu = last;
    return 0;
}

/* Calls visit(n, pid, tid, comm, ticks, cpu) for every task /proc lists. 0, or -1 without /proc. */
typedef void (*task_visit)(pv_neighbours *n, int pid, int tid, const char *comm, uint64_t ticks,
                           int cpu);
static int each_task(pv_neighbours *n, task_visit visit)
{
    DIR *procs = opendir("/proc");
    if (!procs) return -1;
    struct dirent *p;
    while ((p = readdir(procs))) {
        int pid = atoi(p->d_name);
        if (pid <= 0) continue;
        char dir[64];
        snprintf(dir, sizeof dir, "/proc/%d/task", pid);
        DIR *tasks = opendir(dir);
        if (!tasks) continue; /* it ended meanwhile */
        struct dirent *t;
        while ((t = readdir(tasks))) {
            int tid = atoi(t->d_name);
            if (tid <= 0) continue;
            char path[96], comm[PV_NEIGHBOURS_COMM_MAX];
            snprintf(path, sizeof path, "%s/%d/stat", dir, tid);
            uint64_t ticks;
            int cpu;
            if (read_task(path, comm, &ticks, &cpu) == 0) visit(n, pid, tid, comm, ticks, cpu);
        }
        closedir(tasks);
    }
    closedir(procs);
    return 0;
}

static void remember(pv_neighbours *n, int pid, int tid, const char *comm, uint64_t ticks, int cpu)
{
    (void)pid, (void)comm, (void)cpu;
    pv_u64map_put(&n->tasks, (uint64_t)tid, (pv_u64val){.a = (int64_t)ticks});
}

/* The second snapshot's visit: a task of another process that ran since the first (a task born
 * meanwhile ran all its time since) joins n->grew. */
static void compare(pv_neighbours *n, int pid, int tid, const char *comm, uint64_t ticks, int cpu)
{
    if (pid == n->self_pid) return;
    pv_u64val *was = pv_u64map_find(&n->tasks, (uint64_t)tid);
    uint64_t before = was ? (uint64_t)was->a : 0;
    if (ticks <= before) return;
    if (n->ngrew == n->grew_cap) {
        int grown = n->grew_cap ? 2 * n->grew_cap : 64;
        pv_neighbour_task *g = realloc(n->grew, (size_t)grown * sizeof *g);
        if (!g) return;
        n->grew = g, n->grew_cap = grown;
    }
    pv_neighbour_task *g = &n->grew[n->ngrew++];
    g->pid = pid, g->tid = tid, g->cpu = cpu;
    snprintf(g->comm, sizeof g->comm, "%s", comm);
    g->ns = (double)(ticks - before) * n->tick_ns;
}

/* This process's utime + stime (ticks), from /proc/self/stat; 0 when unreadable. */
static uint64_t self_ticks(void)
{
    char comm[PV_NEIGHBOURS_COMM_MAX];
    uint64_t ticks = 0;
    int cpu;
    return read_task("/proc/self/stat", comm, &ticks, &cpu) == 0 ? ticks : 0;
}

int pv_neighbours_begin(pv_neighbours *n)
{
    memset(n, 0, sizeof *n);
    long hz = sysconf(_SC_CLK_TCK);
    int ncpus = read_cpu_ticks(NULL, 1 << 16);
    if (hz <= 0 || ncpus <= 0) return -1;
    n->tick_ns = 1e9 / (double)hz;
    n->ncpus = ncpus;
    n->start = calloc((size_t)ncpus * PV_CPU_TIMES, sizeof *n->start);
    if (!n->start || read_cpu_ticks(n->start, ncpus) < 0 || each_task(n, remember) < 0) {
        pv_neighbours_free(n);
        return -1;
    }
    n->self_pid = getpid();
    n->self_start = self_ticks();
    n->mono_start = mono_ns();
    n->begun = 1;
    return 0;
}

static int most_first(const void *a, const void *b)
{
    double x = ((const pv_neighbour_task *)a)->ns, y = ((const pv_neighbour_task *)b)->ns;
    return (x < y) - (x > y);
}

int pv_neighbours_end(pv_neighbours *n)
{
    if (!n->begun) return -1;
    n->span_ns = (double)(mono_ns() - n->mono_start);
    n->self_ns = (double)(self_ticks() - n->self_start) * n->tick_ns;
    size_t cells = (size_t)n->ncpus * PV_CPU_TIMES;
    uint64_t *now = calloc(cells, sizeof *now);
    n->cpu_ns = calloc(cells, sizeof *n->cpu_ns);
    if (!now || !n->cpu_ns || read_cpu_ticks(now, n->ncpus) < 0) {
        free(now);
        return -1;
    }
    for (size_t i = 0; i < cells; i++)
        n->cpu_ns[i] = now[i] > n->start[i] ? (double)(now[i] - n->start[i]) * n->tick_ns : 0.0;
    free(now);
    if (each_task(n, compare) < 0) return -1;
    if (n->ngrew) qsort(n->grew, (size_t)n->ngrew, sizeof *n->grew, most_first);
    n->ended = 1;
    return 0;
}

void pv_neighbours_free(pv_neighbours *n)
{
    free(n->start);
    free(n->cpu_ns);
    free(n->grew);
    pv_u64map_free(&n->tasks);
    memset(n, 0, sizeof *n);
}
