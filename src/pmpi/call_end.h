/*
 * call_end.h — the end of every traced call, inline (internal to src/pmpi): pv_call_end and
 * pv_call_leave (runtime.c) end with it, and so do the short paths of messages.c, which end their
 * calls without pv_args. Apart from runtime.h because it reads the calling thread's records
 * (threads.h), which the generated wrappers need not see.
 *
 * Called by the thread that entered the call (see runtime.h). Units: clock ticks.
 */
#ifndef PV_MPI_CALL_END_H
#define PV_MPI_CALL_END_H
#include "../clock/clock.h"
#include "../recorder/recorder.h"
#include "runtime.h"
#include "threads.h"

/* Releases the guard, then the exit read, which starts the next compute segment, then ends the
 * CALL record. */
static inline void pv_call_end_inline(pv_call *c)
{
    pv_depth = 0;
    int cpu;
    uint64_t t_exit = pv_now_cpu(&cpu); /* last: starts the next segment */
    pv_rec_call_end(c->thread->rec, c->unit, c->t_entry, t_exit, cpu);
}

#endif
