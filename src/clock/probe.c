/* probe.c — see probe.h. */
#define _GNU_SOURCE
#include "probe.h"
#include "perf_event.h"
#include "perfvar_clock.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

static sigjmp_buf probe_jump;

static void probe_trap(int sig)
{
    siglongjmp(probe_jump, sig);
}

/* Run fn under a SIGILL/SIGSEGV guard: returns 0 if it ran, else the signal it raised. */
static int guarded(void (*fn)(void *), void *arg)
{
    struct sigaction trap = {0}, old_ill, old_segv;
    trap.sa_handler = probe_trap;
    sigemptyset(&trap.sa_mask);
    sigaction(SIGILL, &trap, &old_ill);
    sigaction(SIGSEGV, &trap, &old_segv);
    int sig = sigsetjmp(probe_jump, 1);
    if (sig == 0) fn(arg);
    sigaction(SIGILL, &old_ill, NULL);
    sigaction(SIGSEGV, &old_segv, NULL);
    return sig;
}

#if defined(__x86_64__)
/* The real read path (perfvar_clock.h), seqlock and all, so "readable" means what the timers do. */
static void try_cycles_read(void *arg)
{
    const perfvar_cycles_page *pc = *(const perfvar_cycles_page **)arg;
    volatile uint64_t a = perfvar_cycles_read(pc);
    volatile uint64_t b = perfvar_cycles_read(pc);
    (void)a, (void)b;
}

/* The cycles event (cycles.c, pinned, user mode) says whether user rdpmc is allowed; its page, or
 * any event's page, gives the kernel's TSC conversion. */
static void probe_perf(pv_clock_caps *c)
{
    long page = sysconf(_SC_PAGESIZE);
    pv_cycles_event ev;
    int readable = pv_cycles_event_open(&ev, c->cycles_why, sizeof c->cycles_why) == 0;
    if (readable) {
        const perfvar_cycles_page *pc = ev.page;
        int sig = guarded(try_cycles_read, &pc);
        if (sig)
            snprintf(c->cycles_why, sizeof c->cycles_why, "rdpmc trapped (signal %d)", sig);
        else
            c->cycles = 1;
    }
    const struct perf_event_mmap_page *p = ev.page;
    int dummy_fd = -1;
    if (!p) { /* no cycles event: a software event's page has the time fields too */
        dummy_fd = pv_perf_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY, 0);
        if (dummy_fd < 0) {
            snprintf(c->kernel_tsc_why, sizeof c->kernel_tsc_why, "perf_event_open: %s",
                     strerror(errno));
            pv_cycles_event_close(&ev);
            return;
        }
        p = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, dummy_fd, 0);
        if (p == MAP_FAILED) {
            snprintf(c->kernel_tsc_why, sizeof c->kernel_tsc_why, "perf mmap: %s", strerror(errno));
            close(dummy_fd);
            pv_cycles_event_close(&ev);
            return;
        }
    }
    if (p->cap_user_time && p->time_mult)
        c->kernel_tsc_hz = 1e9 * (double)(1ull << p->time_shift) / (double)p->time_mult;
    else
        snprintf(c->kernel_tsc_why, sizeof c->kernel_tsc_why,
                 "the kernel does not expose its TSC conversion (cap_user_time = 0)");
    if (dummy_fd >= 0) {
        munmap((void *)p, (size_t)page);
        close(dummy_fd);
    }
    pv_cycles_event_close(&ev);
}

static void probe_cpuid(pv_clock_caps *c)
{
    unsigned a, b, cx, d;
    if (__get_cpuid(0x80000001, &a, &b, &cx, &d)) c->rdtscp = (d >> 27) & 1;
    if (__get_cpuid(0x80000007, &a, &b, &cx, &d)) c->invariant_tsc = (d >> 8) & 1;
    unsigned max = __get_cpuid_max(0, NULL);
    if (max >= 0x15) {
        __cpuid_count(0x15, 0, a, b, cx, d);
        if (a && b && cx) c->cpuid_tsc_hz = (double)cx * b / a;
    }
    if (max >= 0x16) {
        __cpuid_count(0x16, 0, a, b, cx, d);
        c->cpuid_base_mhz = a & 0xffff;
    }
    __cpuid(1, a, b, cx, d);
    if (cx & (1u << 31)) { /* running under a hypervisor */
        unsigned hmax;
        __cpuid(0x40000000, hmax, b, cx, d);
        memcpy(c->hypervisor, &b, 4), memcpy(c->hypervisor + 4, &cx, 4), memcpy(c->hypervisor + 8, &d, 4);
        c->hypervisor[12] = 0;
        /* KVM_FEATURE_CLOCKSOURCE_STABLE_BIT: the host keeps the TSC-based clock stable. */
        int kvm = !strcmp(c->hypervisor, "KVMKVMKVM");
        if (kvm && hmax >= 0x40000001) {
            __cpuid(0x40000001, a, b, cx, d);
            if ((a >> 24) & 1) snprintf(c->tsc_stable_by, sizeof c->tsc_stable_by, "KVM stable-clock bit (CPUID 0x40000001)");
        }
        if (hmax >= 0x40000010) {
            __cpuid(0x40000010, a, b, cx, d);
            if (a) c->hypervisor_tsc_hz = a * 1e3; /* kHz */
            /* VMware's convention: the leaf states a frequency only when the TSC is constant. */
            if (a && !c->tsc_stable_by[0])
                snprintf(c->tsc_stable_by, sizeof c->tsc_stable_by, "hypervisor TSC frequency (CPUID 0x40000010)");
        }
    }
    if (c->invariant_tsc) snprintf(c->tsc_stable_by, sizeof c->tsc_stable_by, "CPUID invariant TSC");
}
#elif defined(__aarch64__)
static void try_pmccntr(void *arg)
{
    *(uint64_t *)arg = perfvar_cycles_read(NULL); /* isb; mrs pmccntr_el0; isb */
}
#endif

void pv_clock_probe(pv_clock_caps *c)
{
    memset(c, 0, sizeof *c);
#if defined(__x86_64__)
    probe_cpuid(c);
    probe_perf(c);
#elif defined(__aarch64__)
    uint64_t v;
    int sig = guarded(try_pmccntr, &v);
    if (sig)
        snprintf(c->cycles_why, sizeof c->cycles_why,
                 "pmccntr_el0 is not readable at EL0 (signal %d; the kernel must set PMUSERENR_EL0)", sig);
    else
        c->cycles = 1;
    snprintf(c->kernel_tsc_why, sizeof c->kernel_tsc_why, "not needed: cntfrq_el0 states the frequency");
#else
    snprintf(c->cycles_why, sizeof c->cycles_why, "no cycle counter support on this architecture");
#endif
}
