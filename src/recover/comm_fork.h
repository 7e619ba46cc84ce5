/*
 * comm_fork.h — the trace writer's collective operations (pv_trace_comm, trace.h) for N processes
 * forked from one parent, with no MPI: perfvar-recover converts the records of a job that died with
 * one process per rank, and they write one OTF2 archive together as the job's ranks would have.
 *
 * Star topology: rank 0 (the parent) holds an AF_UNIX stream socket to each child; every collective
 * goes through rank 0, as length-prefixed messages. Each one ends with a reply from rank 0 to every
 * child (the data of a broadcast or scatter, else a bare status), so a failure rank 0 sees before
 * it replies reaches the other ranks in the same collective: they all return an error (-1, or
 * OTF2_CALLBACK_ERROR).
 * A rank that died is an error, never a hang: its socket reads end-of-file (the children keep no
 * copy of each other's sockets), and a write to it fails with EPIPE (MSG_NOSIGNAL: no SIGPIPE, and
 * the process's signal dispositions are left alone). A peer whose link failed stays failed for the
 * later collectives. A rank that stops calling collectives must call pv_fork_comm_finish: rank 0's
 * closes every socket, so children waiting on it see end-of-file.
 *
 * The OTF2 callbacks (set_otf2_collectives) are all implemented for the integer and floating-point
 * OTF2_Types (the only ones OTF2 passes), with any root (relayed through rank 0). Local
 * communicators, which OTF2 ignores when writing (the archive gets none, as with comm_pmpi.c), are
 * supported only when trivial: one file for all ranks, or one rank per file.
 *
 * Bounded (pv_fork_comm_start_bounded): at most max_busy children work at once, the others wait.
 * A child works between collectives in a slot (one of max_busy, an fcntl lock the kernel frees if
 * the child dies: a death never starves the others); entering a collective it gives the slot up
 * and returns the heap it freed to the system (malloc_trim), and after the collective it waits
 * for its slot again. Between two collectives every rank does its part of the work, so nothing
 * waits on a rank without a slot. What this buys: thousands of ranks writing at once each hold
 * their buffers at once (memory grows with the ranks); bounded, only max_busy do, the rest wait
 * holding what they keep across the collective (a few hundred KiB). Results are the same.
 *
 * Thread-safety: none. Every rank calls the collectives in the same order from one thread (as MPI
 * requires); pv_fork_comm_start forks, so call it before the process starts threads.
 */
#ifndef PV_COMM_FORK_H
#define PV_COMM_FORK_H
#include "../trace/trace.h"

/* Fork n-1 children; returns in each process (parent = rank 0, children 1..n-1) with *comm set for
 * that rank (rank, size = n, the callbacks). Stdio buffers are flushed before forking. It returns
 * only once every child exists: if a fork fails, the children already made exit (status 127)
 * without returning, are waited for, and the parent gets -1. Returns this process's rank, or -1
 * with errno set (EINVAL: n < 1). */
int pv_fork_comm_start(int n, pv_trace_comm *comm);

/* pv_fork_comm_start with at most max_busy children working outside the collectives at once
 * (0: no bound; rank 0, the hub, always works). Returns as pv_fork_comm_start; -1 with errno also
 * when the slot file cannot be made (EINVAL: max_busy < 0). */
int pv_fork_comm_start_bounded(int n, int max_busy, pv_trace_comm *comm);

/* End this rank's part. Rank 0: close every socket, wait for all children, return 0 if all exited
 * with status 0, else the number that did not (status is not used). A child: flush stdio, close, and
 * _exit(status) (no atexit handlers: they belong to the parent); it does not return. */
int pv_fork_comm_finish(pv_trace_comm *comm, int status);

#endif
