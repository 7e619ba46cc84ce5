/*
 * probe.h — what clocks and counters this machine offers, probed once without crashing (internal).
 *
 * x86-64: rdtscp and invariant TSC (CPUID; else whether a hypervisor states the TSC is stable),
 * the TSC frequency where the hardware or hypervisor states
 * it (CPUID 0x15 crystal ratio, hypervisor leaf 0x40000010), the kernel's own TSC->ns conversion
 * (perf_event mmap page, cap_user_time), and whether the CPU-cycle counter can be read at user level
 * with rdpmc (the pinned user-mode cycles event of perf_event.h whose mmap page allows it; the real read
 * path, perfvar_cycles_read, is then tried under a SIGSEGV/SIGILL guard). Armv8: whether
 * pmccntr_el0 is readable at EL0 (perfvar_cycles_read tried under a SIGILL guard).
 * Every "no" comes with the reason. Not thread-safe (installs signal handlers briefly): call it once,
 * before threads, as pv_clock_init does. Frequencies in Hz, 0 when not stated.
 */
#ifndef PV_CLOCK_PROBE_H
#define PV_CLOCK_PROBE_H

typedef struct pv_clock_caps {
    int rdtscp, invariant_tsc;  /* x86-64 CPUID flags */
    double cpuid_tsc_hz;        /* CPUID 0x15: crystal Hz * numerator / denominator */
    double cpuid_base_mhz;      /* CPUID 0x16 base frequency (nominal): a frequency source of last
                                 * resort before measuring (clock.h) */
    char hypervisor[13];        /* CPUID 0x40000000 vendor, "" on bare metal */
    double hypervisor_tsc_hz;   /* CPUID 0x40000010 (VMware/KVM convention) */
    char tsc_stable_by[64];     /* who states the TSC ticks at a constant rate: "CPUID invariant
                                 * TSC", a hypervisor's statement (KVM stable-clock bit, the
                                 * 0x40000010 frequency leaf), or "" (nobody) */
    double kernel_tsc_hz;       /* from the perf_event mmap page (time_mult, time_shift) */
    char kernel_tsc_why[96];    /* why not, when 0 */
    int cycles;                 /* CPU-cycle counter readable at user level (rdpmc / pmccntr_el0) */
    char cycles_why[160];       /* why not, when 0 */
} pv_clock_caps;

void pv_clock_probe(pv_clock_caps *caps);

#endif
