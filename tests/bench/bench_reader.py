#!/usr/bin/env python3
"""Trace reading speed: the Python event loop against the native one (libperfvar_read),
side by side on the same trace in one run.

    PYTHONPATH=postproc PERFVAR_LIB=build/libperfvar.so \\
        python3 tests/bench/bench_reader.py TRACE_DIR [TRACE_DIR ...] [--repeat N]

For each trace and loop: the best of N reads (``read_trace(DIR)``, global definitions
included) as events per CPU second of this process (events/s per core: the reader is
single-threaded) and as wall time, then the native/Python ratio. Both loops must give
the same samples (checked). Prints; asserts no time. ``--repeat 1`` is the fast mode.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "postproc"))

from perfvar import reader_native  # noqa: E402
from perfvar.read.trace import read_trace  # noqa: E402


def measure(directory: str, mode: str, repeat: int):
    """(best CPU s, best wall s, events read, the TraceSamples) of ``repeat`` reads."""
    os.environ["PERFVAR_READER"] = mode
    best_cpu = best_wall = float("inf")
    trace = None
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        trace = read_trace(directory)
        best_cpu = min(best_cpu, time.process_time() - c0)
        best_wall = min(best_wall, time.perf_counter() - w0)
    events = sum(loc.events_read for loc in trace.locations)
    return best_cpu, best_wall, events, trace


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+", help="trace directories (holding traces.otf2)")
    ap.add_argument("--repeat", type=int, default=3, help="reads per loop (best kept)")
    args = ap.parse_args()
    saved = os.environ.get("PERFVAR_READER")
    if reader_native.library() is None:
        print("libperfvar_read not found: set PERFVAR_LIB to a build's libperfvar.so")
        return 2
    print(
        f"{'trace':<40} {'loop':<7} {'events':>10} {'cpu s':>8} {'wall s':>8} "
        f"{'Mevents/s/core':>15}"
    )
    try:
        for directory in args.traces:
            rates = {}
            got = {}
            for mode in ("python", "native"):
                cpu, wall, events, trace = measure(directory, mode, args.repeat)
                rates[mode] = events / cpu if cpu > 0 else float("inf")
                got[mode] = trace
                name = os.path.basename(os.path.normpath(directory))[-40:]
                print(
                    f"{name:<40} {mode:<7} {events:>10} {cpu:>8.3f} {wall:>8.3f} "
                    f"{rates[mode] / 1e6:>15.2f}"
                )
            same = np.array_equal(got["python"].samples, got["native"].samples)
            same &= got["python"].locations == got["native"].locations
            print(
                f"{'':<40} native/python: {rates['native'] / rates['python']:.1f}x"
                f"{'' if same else '  RESULTS DIFFER'}"
            )
    finally:
        if saved is None:
            os.environ.pop("PERFVAR_READER", None)
        else:
            os.environ["PERFVAR_READER"] = saved
    return 0


if __name__ == "__main__":
    sys.exit(main())
