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

  check_inject.py --mpiexec M --perfvar-run P --out DIR --inject SPEC
                  [--against TO,FROM] --expect TO,FROM=R [...] -- PROGRAM [ARGS...]
Exits 0 when every expectation holds, 1 otherwise.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "postproc"))
sys.path.insert(0, str(ROOT / "tests" / "tools"))
sys.path.insert(0, str(ROOT / "tools"))
from perfvar.read.trace import read_trace  # noqa: E402
from run_mpi import mpiexec_cmd  # noqa: E402
from validation.classes import Pattern, median_ratio  # noqa: E402


def within(ratio: float, expect: float) -> bool:
    """The gross margin: the injected part within 0.6x..1.5x of itself; no injection:
    within 0.8..1.25."""
    if expect == 1.0:
        return 0.8 <= ratio <= 1.25
    return 0.6 * (expect - 1) <= ratio - 1 <= 1.5 * (expect - 1)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--perfvar-run", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--inject", required=True)
    ap.add_argument("--expect", action="append", required=True)
    ap.add_argument("--against", help="TO,FROM of a class not injected: ratios over its own")
    ap.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    prog = a.program[1:] if a.program[:1] == ["--"] else a.program
    rank = int(dict(kv.split("=", 1) for kv in a.inject.split(","))["rank"])
    shutil.rmtree(a.out, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFVAR_")}
    env["PERFVAR_INJECT"] = a.inject
    cmd = mpiexec_cmd(a.mpiexec, 2) + [a.perfvar_run, "-o", str(a.out)] + prog
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    sys.stdout.write(p.stdout + p.stderr)
    if p.returncode != 0:
        print(f"check_inject: FAILED: the run exited {p.returncode}")
        return 1
    trace = read_trace(str(a.out))
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
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
