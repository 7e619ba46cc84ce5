#!/usr/bin/env python3
"""The analysis at scale, on synthetic traces written by perfvar's own writer.

  bench_analysis.py --out DIR [--sizes 64x100000,4096x10000] [--jobs K]

For each size RANKSxSEGMENTS (segments per rank), a trace is generated once
(tests/tools/synth.py, with its injected anomalies; kept in DIR for later runs) and
then measured, every figure side by side in this run:
- read rate: events per second of the native reader (one thread: per core) and,
  up to --python-max events, of the pure-Python reader, each the best of --repeat
  fresh processes (the host's slow phases only ever slow a run down); the native
  reader's rate both per wall second and per CPU second of its process;
- the calibration judge: its first decision over every rank's start-up samples, in
  one process (CPU ms per rank);
- analysis: wall time and peak memory (the largest process) of ``perfvar analyze``
  serial (``--jobs 1``) and with K local processes, each with the calibration judge
  deciding every rank (its cache removed first), then serial again with the
  decisions kept;
- the anomalies found against the injected (tests/tools/verdicts.py scoring).
Prints one table; asserts nothing about time (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "tools"))
sys.path.insert(0, str(ROOT / "postproc"))

import synth  # noqa: E402
from verdicts import score  # noqa: E402

# Runs a command and prints the peak RSS (KiB) of its largest process: waited-for
# descendants are counted by RUSAGE_CHILDREN, so a fresh interpreter per figure.
PEAK = (
    "import resource, subprocess, sys; "
    "rc = subprocess.run(sys.argv[1:]).returncode; "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
    "sys.exit(rc)"
)
READ = (
    "import sys, time; from perfvar.read.trace import read_trace; "
    "t, c = time.perf_counter(), time.process_time(); s = read_trace(sys.argv[1]); "
    "dt, dc = time.perf_counter() - t, time.process_time() - c; "
    "print(sum(r.events_read for r in s.locations), dt, dc)"
)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PERFVAR_READER"}
    return {**env, "PYTHONPATH": str(ROOT / "postproc"), **extra}


def read_rate(trace: Path, reader: str, repeat: int) -> tuple[int, float, float]:
    """(events, best wall s, best CPU s) of ``repeat`` fresh processes reading it."""
    walls, cpus = [], []
    for _ in range(repeat):
        p = subprocess.run(
            [sys.executable, "-c", READ, str(trace)],
            capture_output=True,
            text=True,
            env=_env(PERFVAR_READER=reader),
            check=True,
        )
        events, wall, cpu = p.stdout.split()
        walls.append(float(wall))
        cpus.append(float(cpu))
    return int(events), min(walls), min(cpus)


JUDGE = (
    "import glob, sys, time; from perfvar.calibration.ranks import judge_files; "
    "paths = sorted(glob.glob(sys.argv[1] + '/perfvar/calibration-rank-*.json')); "
    "t = time.process_time(); judge_files(paths); "
    "print(len(paths), time.process_time() - t)"
)


def judge_cost(trace: Path) -> float:
    """CPU ms per rank of the judge's first decision over every rank's samples."""
    p = subprocess.run(
        [sys.executable, "-c", JUDGE, str(trace)],
        capture_output=True,
        text=True,
        env=_env(),
        check=True,
    )
    ranks, seconds = p.stdout.split()
    return 1e3 * float(seconds) / int(ranks)


def analyse(trace: Path, jobs: int, keep_decisions: bool) -> tuple[float, int, Path]:
    """(wall s, peak RSS KiB of the largest process, analysis.json)."""
    cache = trace / "perfvar" / "calibration-judged.json"
    if not keep_decisions and cache.exists():
        cache.unlink()
    out = trace / f"analysis-j{jobs}.json"
    cmd = [sys.executable, "-c", PEAK, sys.executable, "-m", "perfvar", "analyze"]
    cmd += [str(trace), "--no-html", "--quiet", "--jobs", str(jobs), "--json", str(out)]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=_env())
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"perfvar analyze failed: {p.stderr[-2000:]}")
    return wall, int(p.stderr.strip().splitlines()[-1]), out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--sizes", default="64x100000,4096x10000")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--python-max", type=float, default=3e7, help="events")
    ap.add_argument("--repeat", type=int, default=3, help="reads per reader")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for size in a.sizes.split(","):
        ranks, segments = (int(x) for x in size.lower().split("x"))
        trace = a.out / f"synth-{ranks}x{segments}"
        truth_file = trace / "synthetic.json"
        if truth_file.exists():
            truth = json.loads(truth_file.read_text())
        else:
            t0 = time.perf_counter()
            truth = synth.generate(trace, ranks, segments)
            print(f"{size}: generated in {time.perf_counter() - t0:.0f} s", flush=True)
        events, native_s, native_cpu = read_rate(trace, "native", a.repeat)
        py = None
        if events <= a.python_max:
            py = read_rate(trace, "python", a.repeat)
        judge_ms = judge_cost(trace)
        serial_s, serial_kb, _ = analyse(trace, 1, keep_decisions=False)
        par_s, par_kb, out = analyse(trace, a.jobs, keep_decisions=False)
        kept_s, kept_kb, _ = analyse(trace, 1, keep_decisions=True)
        inj = synth.injected(truth)
        # found: by the detectors, headline or minor (the cost decides which)
        s = score(inj, json.loads(out.read_text()), with_minor=True)
        rows.append(
            {
                "size": size,
                "events": events,
                "native_ev_s": events / native_s,
                "native_ev_cpu_s": events / native_cpu,
                "python_ev_s": py[0] / py[1] if py else None,
                "serial_s": serial_s,
                "parallel_s": par_s,
                "kept_s": kept_s,
                "judge_ms_per_rank": judge_ms,
                "peak_mb": max(serial_kb, par_kb, kept_kb) / 1024,
                "found": f"{len(s.hits)}/{len(inj)}",
                "wrong": len(s.wrong_names),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    print()
    head = (
        f"{'ranks x segs':>14} {'events':>11} {'native ev/s':>12} {'ev/cpu-s':>9} "
        f"{'python ev/s':>12} "
        f"{'1 proc s':>9} {f'{a.jobs} procs s':>9} {'kept s':>7} {'judge ms/rk':>11} "
        f"{'peak MB':>8} {'found':>6} {'wrong':>5}"
    )
    print(head)
    for r in rows:
        py = f"{r['python_ev_s']:.3g}" if r["python_ev_s"] else "-"
        print(
            f"{r['size']:>14} {r['events']:>11} {r['native_ev_s']:>12.3g} "
            f"{r['native_ev_cpu_s']:>9.3g} {py:>12} "
            f"{r['serial_s']:>9.1f} {r['parallel_s']:>9.1f} {r['kept_s']:>7.1f} "
            f"{r['judge_ms_per_rank']:>11.1f} {r['peak_mb']:>8.0f} {r['found']:>6} "
            f"{r['wrong']:>5}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
