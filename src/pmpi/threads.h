/*
 * threads.h — which threads are traced (threads.c; internal to src/pmpi).
 *
 * Each thread gets its pv_thread (state.h) and its own record stream on its first traced call or
 * user timer start/stop; index 0 is the thread that started perfvar (pv_thread_first), the others
 * are numbered in the order of their first traced call.
 *
 * State: the list of every traced thread, in index order, their number, and the count of calls of
 * threads perfvar could not trace belong to threads.c. Threads are appended under threads.c's own
 * lock and never removed (a pv_thread lives until the process ends: MPI_Finalize closes the streams
 * of threads that have already exited); each link is published with release, so the list is
 * walked without the lock (pv_threads_head, pv_threads_next), from any thread and from a signal
 * handler. The untraced count is atomic.
 */
#ifndef PV_MPI_THREADS_H
#define PV_MPI_THREADS_H
#include <stdint.h>

#include "state.h"

/* This thread's state, created on its first use (a new record stream, the next index); NULL when
 * the thread cannot be traced (its records file cannot be created: one message, the first time),
 * and then this call and each later one are counted in pv_threads_untraced_calls(). Reads the
 * trace directory, rank and buffer size from pv_rt: call while perfvar is active. Thread-safe. */
pv_thread *pv_thread_attach(void);
/* Create the state of the thread that starts perfvar, thread 0 (pv_start); NULL on failure (not
 * counted). Called once, before any other thread is traced. */
pv_thread *pv_thread_first(void);

/* Walk the traced threads in index order: for (t = pv_threads_head(); t; t = pv_threads_next(t)).
 * A thread appended meanwhile may or may not be seen. Lock-free (acquire loads): thread-safe and
 * async-signal-safe. */
pv_thread *pv_threads_head(void);
pv_thread *pv_threads_next(const pv_thread *t);

/* Calls made by threads perfvar could not trace, so far (relaxed). Thread-safe,
 * async-signal-safe. */
uint64_t pv_threads_untraced_calls(void);

#endif
