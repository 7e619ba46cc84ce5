/* signals.c — the records of a process that a signal ends.
 *
 * The records need no flushing: they are stored into file-backed shared mappings, so what a thread
 * stored is in the file even after kill -9. What a handler adds is the how and the when: each
 * stream's header is marked with the signal and the time (pv_rec_mark_signal: plain stores,
 * async-signal-safe), so `perfvar-recover` can tell a job the batch system ended (SIGTERM, SIGINT)
 * or that crashed (SIGSEGV, SIGBUS, SIGABRT from MPI_Abort's default handler...) from one killed
 * without a word, and say when. The OTF2 archive is not written here: that takes locks, memory and
 * the other ranks, none of which a signal handler may count on; perfvar-recover (which
 * `perfvar analyze` runs by itself) converts the records afterwards.
 *
 * The handler is chained: after marking, it gives the signal to the handler that was installed
 * before perfvar's (the application's or the MPI library's), or, if that was the default action,
 * restores it and raises the signal again, so the process ends as it would have without perfvar.
 * A handler the application installs after MPI_Init replaces perfvar's: its signals are then not
 * marked (the records are still on disk). It also notes who sent the signal (records.h
 * PV_REC_SENT_*): the launcher, which takes a job's other ranks down when one dies, or another
 * process, so that the rank whose end caused the others' can be told apart.
 */
#include "signals.h"
#include "threads.h"
#include "../clock/clock.h"
#include "../recorder/recorder.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

static const int caught[] = {SIGTERM, SIGINT, SIGHUP, SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
#define NCAUGHT (int)(sizeof caught / sizeof caught[0])
static struct sigaction previous[NCAUGHT];

/* Who sent it: si_code <= 0 is a signal sent by kill/raise/sigqueue (si_pid valid), > 0 one the
 * kernel made (a fault). getppid is async-signal-safe. */
static uint32_t sender_of(const siginfo_t *info)
{
    if (!info) return PV_REC_SENT_UNKNOWN;
    if (info->si_code > 0) return PV_REC_SENT_FAULT;
    return info->si_pid == getppid() ? PV_REC_SENT_PARENT : PV_REC_SENT_OTHER;
}

static void on_signal(int sig, siginfo_t *info, void *uctx)
{
    uint64_t t = pv_now();
    uint32_t sender = sender_of(info);
    for (pv_thread *th = pv_threads_head(); th; th = pv_threads_next(th)) /* async-signal-safe */
        pv_rec_mark_signal(__atomic_load_n(&th->rec, __ATOMIC_ACQUIRE), sig, sender, t);
    for (int i = 0; i < NCAUGHT; i++) {
        if (caught[i] != sig) continue;
        const struct sigaction *old = &previous[i];
        if (old->sa_flags & SA_SIGINFO) {
            old->sa_sigaction(sig, info, uctx);
        } else if (old->sa_handler != SIG_IGN && old->sa_handler != SIG_DFL) {
            old->sa_handler(sig);
        } else if (old->sa_handler == SIG_DFL) {
            /* The default action, on return: a fault repeats, a sent signal is raised again. */
            sigaction(sig, old, NULL);
            if (info->si_code <= 0 || (sig != SIGSEGV && sig != SIGBUS && sig != SIGFPE && sig != SIGILL))
                raise(sig);
        }
        return;
    }
}

void pv_signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < NCAUGHT; i++) {
        struct sigaction old;
        if (sigaction(caught[i], NULL, &old) || (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN))
            continue; /* ignored (nohup, a launcher's choice): leave it so */
        previous[i] = old;
        sigaction(caught[i], &sa, NULL);
    }
}
