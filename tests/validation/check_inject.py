#!/usr/bin/env python3
"""PERFVAR_INJECT in an unchanged binary: runs PROGRAM with 2 ranks under perfvar-run
with --inject as PERFVAR_INJECT, then checks, from the trace, each --expect
"TO,FROM=R": the median duration of the classes closed by a site whose name contains
TO and opened by one containing FROM (the C side's rule), on the injected rank over
the other rank's, is R within a gross margin (R - 1 within 0.6x..1.5x of itself for
R > 1; within 0.8..1.25 for R = 1). Meant for programs whose ranks do the same work.
With --against TO,FROM each ratio is taken over that class's own (one not injected):
the two ranks' CPUs may run at different speeds for a whole run on a shared host
(measured up to 1.7x apart), and the same work on the same two CPUs in the same run
cancels that, so the check is of the injection, not of the machine.

With --window TO,FROM=R --at F0,F1 the window (after/until, s of the trace's time) is
checked: a first run without the injection gives that class's span on the injected
rank in the trace, [S, E]; the injected run gets after=S+F0(E-S), until=S+F1(E-S); the
class's median on the injected rank in segments that started inside the window, over
its median in those that started outside it, must be R (the same margin): the work
lands where the trace's clock says, on any machine's start-up time. The start-up (the
clock's calibration) of a loaded machine can take longer in the second run than in the
first, moving the class off the window: that is not a fault of the window, so a second
run that put no segment of the class inside the window (or all of them) is tried once
more, from a new reference run.

  check_inject.py --mpiexec M --perfvar-run P --out DIR --inject SPEC
                  [--against TO,FROM] [--window TO,FROM=R --at F0,F1] [--expect TO,FROM=R ...]
                  -- PROGRAM [ARGS...]
Exits 0 when every expectation holds, 1 otherwise.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "postproc"))
sys.path.insert(0, str(ROOT / "tests" / "tools"))
sys.path.insert(0, str(ROOT / "tools"))
from perfvar.read.trace import read_trace  # noqa: E402
from run_mpi import mpiexec_cmd  # noqa: E402
from validation.classes import Pattern, median_ratio, selected_ids  # noqa: E402


def within(ratio: float, expect: float) -> bool:
    """The gross margin: the injected part within 0.6x..1.5x of itself; no injection:
    within 0.8..1.25."""
    if expect == 1.0:
        return 0.8 <= ratio <= 1.25
    return 0.6 * (expect - 1) <= ratio - 1 <= 1.5 * (expect - 1)


def class_samples(trace, pattern: Pattern, rank: int):
    """The class's samples on ``rank`` (thread 0) and their starts, s of trace time."""
    s = trace.samples
    s = s[(s["thread"] == 0) & (s["rank"] == rank)
          & np.isin(s["segment"], selected_ids(trace, pattern))]
    return s, trace.trace_ns(s["start_ticks"]) / 1e9


def window_ratio(trace, pattern: Pattern, rank: int, after_s: float, until_s: float
                 ) -> float | None:
    """The class's median on ``rank`` (thread 0) in segments that started between
    ``after_s`` and ``until_s`` of trace time over its median in the others; None when
    either side has no segment."""
    s, start_s = class_samples(trace, pattern, rank)
    inside = (start_s >= after_s) & (start_s < until_s)
    if not inside.any() or inside.all():
        return None
    return float(np.median(s["duration_ns"][inside]) / np.median(s["duration_ns"][~inside]))


def class_span_s(trace, pattern: Pattern, rank: int) -> tuple[float, float] | None:
    """The first and last start (s of trace time) of the class's segments on ``rank``."""
    _, start_s = class_samples(trace, pattern, rank)
    if not start_s.size:
        return None
    return float(start_s.min()), float(start_s.max())


def reference_window(a: argparse.Namespace, prog: list[str], rank: int
                     ) -> tuple[float, float] | None:
    """A run without the injection; the window, s of trace time, at --at of the --window
    class's span on ``rank`` in it (None: the run failed or has no such class)."""
    if not run(a, prog, None):
        return None
    to, frm = a.window.rsplit("=", 1)[0].split(",", 1)
    span = class_span_s(read_trace(str(a.out)), Pattern(to, frm), rank)
    if span is None:
        print(f"check_inject: FAILED: no class {frm} -> {to} on rank {rank}")
        return None
    f0, f1 = (float(f) for f in a.at.split(","))
    return span[0] + f0 * (span[1] - span[0]), span[0] + f1 * (span[1] - span[0])


def window_missed(trace, window: tuple[float, float], expect: str, rank: int) -> bool:
    """True when the class's segments on ``rank`` all started inside the window, or none did."""
    to, frm = expect.rsplit("=", 1)[0].split(",", 1)
    return window_ratio(trace, Pattern(to, frm), rank, *window) is None


def check_window(trace, after: float, until: float, expect: str, rank: int) -> bool:
    sites, want = expect.rsplit("=", 1)
    to, frm = sites.split(",", 1)
    ratio = window_ratio(trace, Pattern(to, frm), rank, after, until)
    good = ratio is not None and within(ratio, float(want))
    print(f"check_inject: {frm} -> {to} on rank {rank}, started in {after:g}..{until:g} s "
          f"of the trace / outside = {'none' if ratio is None else f'{ratio:.3f}'} "
          f"(expected {want}): {'ok' if good else 'FAILED'}")
    return good


def run(a: argparse.Namespace, prog: list[str], inject: str | None) -> bool:
    """PROGRAM under perfvar-run into --out, with PERFVAR_INJECT=inject (None: none)."""
    shutil.rmtree(a.out, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFVAR_")}
    if inject:
        env["PERFVAR_INJECT"] = inject
    cmd = mpiexec_cmd(a.mpiexec, 2) + [a.perfvar_run, "-o", str(a.out)] + prog
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    sys.stdout.write(p.stdout + p.stderr)
    if p.returncode != 0:
        print(f"check_inject: FAILED: the run exited {p.returncode}")
    return p.returncode == 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--perfvar-run", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--inject", required=True)
    ap.add_argument("--expect", action="append", default=[])
    ap.add_argument("--against", help="TO,FROM of a class not injected: ratios over its own")
    ap.add_argument("--window", help="TO,FROM=R: the class in the window over outside")
    ap.add_argument("--at", help="F0,F1: the window's fractions of the class's span")
    ap.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    prog = a.program[1:] if a.program[:1] == ["--"] else a.program
    spec = dict(kv.split("=", 1) for kv in a.inject.split(","))
    rank = int(spec["rank"])
    if bool(a.window) != bool(a.at):
        ap.error("--window and --at go together")
    for attempt in (1, 2):
        inject, window = a.inject, None
        if a.window:
            window = reference_window(a, prog, rank)
            if window is None:
                return 1
            inject += f",after={window[0]:.6f},until={window[1]:.6f}"
        if not run(a, prog, inject):
            return 1
        trace = read_trace(str(a.out))
        if window is None or not window_missed(trace, window, a.window, rank):
            break
        print(f"check_inject: the class started outside the window in run {attempt}"
              f"{' (the start-up moved it): once more' if attempt == 1 else ''}")
    base, over = 1.0, ""
    if a.against:
        to, frm = a.against.split(",", 1)
        base = median_ratio(trace, Pattern(to, frm), rank)
        if base is None:
            print(f"check_inject: FAILED: no class {frm} -> {to} to compare with")
            return 1
        over = f", over {frm} -> {to}'s {base:.3f}"
    ok = True
    for e in a.expect:
        sites, want = e.rsplit("=", 1)
        to, frm = sites.split(",", 1)
        ratio = median_ratio(trace, Pattern(to, frm), rank)
        ratio = None if ratio is None else ratio / base
        good = ratio is not None and within(ratio, float(want))
        print(f"check_inject: {frm} -> {to}: rank {rank} / other rank = "
              f"{'none' if ratio is None else f'{ratio:.3f}'}{over} (expected {want}): "
              f"{'ok' if good else 'FAILED'}")
        ok &= good
    if window:
        ok &= check_window(trace, *window, a.window, rank)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
