/*
 * neighbours.h — what else ran on a rank's CPUs while it was traced (internal, MPI-free).
 *
 * Two snapshots, one when tracing starts and one when it stops: the kernel's accounting of each
 * CPU's time (/proc/stat: user, nice, system, idle, iowait, irq, softirq, steal), this process's CPU
 * time, and every task's CPU time with the CPU it last ran on (/proc/PID/task/TID/stat). Between
 * them: where each CPU's time went, and the tasks of other processes whose CPU time grew the most.
 * A rank the counters measured off its CPU (perf::TASK-CLOCK) can so be told what took it: other
 * tasks (which ones), interrupts, or the host (steal time, in a virtual machine).
 *
 * Units: ns. The kernel counts both in clock ticks (USER_HZ, 10 ms at 100 Hz): each figure is
 * within a tick per CPU or task. A task that moved between CPUs has all its time counted where it
 * ran last; a task that ended before the second snapshot is not seen.
 *
 * Costs: one read of /proc/stat and one of each task's stat file per snapshot, outside the traced
 * time (about 20 us a task: 1.5 ms for 80 tasks on a 2-vCPU KVM guest); under 100 bytes a task
 * held between them (a hash map entry). Elsewhere than Linux, or without /proc,
 * pv_neighbours_begin fails and nothing is recorded.
 *
 * Thread-safety: none; one owner (the rank's start and stop). Not async-signal-safe.
 */
#ifndef PV_NEIGHBOURS_H
#define PV_NEIGHBOURS_H
#include <stddef.h>
#include <stdint.h>

#include "../core/u64map.h"

#define PV_NEIGHBOURS_COMM_MAX 16 /* bytes of a task's name with its terminating 0 (TASK_COMM_LEN) */

/* The columns of a CPU's line in /proc/stat, in order. */
enum pv_cpu_time {
    PV_CPU_USER, PV_CPU_NICE, PV_CPU_SYSTEM, PV_CPU_IDLE, PV_CPU_IOWAIT, PV_CPU_IRQ, PV_CPU_SOFTIRQ,
    PV_CPU_STEAL, PV_CPU_TIMES
};
extern const char *const pv_cpu_time_names[PV_CPU_TIMES]; /* "user", ..., "steal" */

/* One task of another process, between the snapshots. */
typedef struct pv_neighbour_task {
    int pid, tid, cpu;                  /* cpu: the one it ran on last */
    char comm[PV_NEIGHBOURS_COMM_MAX];  /* the kernel's name of the task */
    double ns;                          /* its CPU time between the snapshots */
} pv_neighbour_task;

typedef struct pv_neighbours {
    int begun, ended;
    double tick_ns;       /* one clock tick of the kernel's accounting */
    double span_ns;       /* CLOCK_MONOTONIC between the snapshots */
    double self_ns;       /* this process's CPU time (all its threads) between them */
    int ncpus;            /* CPUs /proc/stat listed at the start (cpu0..cpuN-1) */
    uint64_t *start;      /* [cpu * PV_CPU_TIMES + column], ticks, at the start */
    double *cpu_ns;       /* the same layout, ns between the snapshots (after _end) */
    int self_pid;         /* this process, whose tasks are not neighbours */
    uint64_t self_start;  /* ticks */
    int64_t mono_start;   /* ns */
    pv_u64map tasks;      /* tid -> {ticks at the start} */
    pv_neighbour_task *grew; /* after _end: other processes' tasks that ran, most time first */
    int ngrew, grew_cap;
} pv_neighbours;

/* The first snapshot. 0, or -1 when /proc cannot be read (n->begun stays 0). */
int pv_neighbours_begin(pv_neighbours *n);

/* The second snapshot and the differences: n->cpu_ns, n->self_ns, n->span_ns, and n->grew (the
 * tasks of other processes with at least one tick, most first). 0, or -1 (n->ended stays 0). */
int pv_neighbours_end(pv_neighbours *n);

void pv_neighbours_free(pv_neighbours *n);

#endif
