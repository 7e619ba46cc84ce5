#!/usr/bin/env python3
"""The whole analysis of a trace against printing it: ``perfvar analyze --no-html``
(a fresh interpreter, imports included, as a user runs it) and ``otf2-print`` of the
same archive, alternated in one run.

    PYTHONPATH=postproc PERFVAR_LIB=build/libperfvar.so \\
        python3 tests/bench/bench_against_print.py TRACE_DIR [--repeat N]

otf2-print only decodes every event and formats it: an analysis that takes no longer
adds nothing a user waits for over reading the trace at all. Each figure is the best
of N (the host's slow phases only ever slow a run down): wall seconds of each, peak
memory of the analysis, and the ratio analysis / otf2-print. The analysis writes its
JSON to a temporary file (the trace is left as it was). Prints; asserts no time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, int]:
    """(wall s, peak RSS KiB of this run's process) of one run of ``cmd``; raises
    CalledProcessError when it fails."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)  # this child's own usage, not all so far
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return wall, usage.ru_maxrss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", help="trace directory (traces.otf2 + perfvar/)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each, alternated")
    a = ap.parse_args()
    printer = shutil.which("otf2-print")
    if printer is None:
        print("bench_against_print: no otf2-print on PATH", file=sys.stderr)
        return 2
    anchor = os.path.join(a.trace, "traces.otf2")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT / "postproc"), env.get("PYTHONPATH")])
    )
    best = {"analyze": float("inf"), "otf2-print": float("inf")}
    peak = 0  # the analysis's largest, KiB
    with tempfile.TemporaryDirectory(prefix="perfvar-bench-") as tmp:
        analyze = [sys.executable, "-m", "perfvar", "analyze", "--no-html", "--quiet",
                   "--json", os.path.join(tmp, "analysis.json"), a.trace]  # fmt: skip
        for _ in range(a.repeat):
            wall, rss = timed(analyze, env)
            best["analyze"], peak = min(best["analyze"], wall), max(peak, rss)
            wall, _ = timed([printer, anchor], env)
            best["otf2-print"] = min(best["otf2-print"], wall)
    print(f"trace {a.trace}: best of {a.repeat}, alternated")
    print(f"  perfvar analyze --no-html  {best['analyze']:7.2f} s  peak {peak / 1024:.0f} MB")
    print(f"  otf2-print                 {best['otf2-print']:7.2f} s")
    print(f"  analyze / otf2-print       {best['analyze'] / best['otf2-print']:7.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
