/*
 * resolution.h — the step a clock really reads in, from the durations it gave to a sweep of
 * lengths (internal; search.c for the start-up calibration, sampler.c for perfvar_calib.h).
 *
 * A clock's granularity is not always the gcd of its read differences: a VM's TSC read through a
 * scaled, jittered counter moves in steps of about 10 ns, each landing a tick or two either side
 * (differences 49, 73, 74, 98 ticks: gcd 1, step 24). Chains of 0, 1, 2, ... ADDs spread the true
 * durations evenly over a range, so a fine clock reads nearly every value of that range and a
 * stepped one leaves gaps of its step between the values it reads; the widest such gap is the step.
 * The outer 5 % of either end is left out (interrupts, the range's own edges).
 * Pure; thread-safe.
 */
#ifndef PV_CALIB_RESOLUTION_H
#define PV_CALIB_RESOLUTION_H

/* Chain lengths a sweep cycles through (0 .. PV_RESOLUTION_SWEEP - 1 ADDs): about a hundred ns of
 * true durations on a 3 GHz core, several steps of a 10 ns clock. */
#define PV_RESOLUTION_SWEEP 256

/* The widest gap between consecutive distinct values among the central 90 % of `values` (n of
 * them, any unit; sorted in place), 0 when that range holds fewer than two distinct values. */
double pv_clock_resolution(double *values, int n);

#endif
