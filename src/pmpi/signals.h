/*
 * signals.h — marking every traced thread's records with a fatal signal (signals.c; internal to
 * src/pmpi).
 *
 * State: the handlers perfvar replaced, kept by signals.c (written once by pv_signals_install,
 * read by the handler). The handler itself only makes async-signal-safe plain stores into the
 * records' headers.
 */
#ifndef PV_MPI_SIGNALS_H
#define PV_MPI_SIGNALS_H

/* Install the handler that marks every thread's records with a fatal signal before the
 * application's own handler (or the default action) runs. Called once, at the start (pv_start),
 * by the starting thread; not thread-safe against the application installing handlers meanwhile. */
void pv_signals_install(void);

#endif
