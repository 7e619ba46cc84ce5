#!/usr/bin/env python3
"""What fixed-work probes cost: the same MPI program loop run with PERFVAR_PROBE=off and
=on side by side (not a timed test: it prints, it asserts nothing about time).

  bench_probe.py --mpiexec MPIEXEC --np N --out DIR [--rounds R] [--period-ms P]
                 -- PROGRAM [ARGS...]

PROGRAM is bench_probe (tests/bench/bench_probe.c) linked with perfvar's MPI layer. The
runs alternate off, on, on, off, ... (R pairs, ABBA order so that a drift of the host's
load hits both alike), each with its own trace directory under DIR. Printed:

- the ratio of the loop times, on / off: the median over the pairs of the ratio of two
  consecutive runs (each run's time is its slowest rank's loop, from CLOCK_MONOTONIC
  inside the program), with their range, the noise it has to be read against: a shared
  host's cores change speed for whole seconds, which a pair of neighbouring runs shares
  more often than the medians of all runs of each mode do;
- the probes' own account (rank-N.json "probe": count and total_ns of the measured
  chains) as a fraction of each rank's loop time, median over the on runs; the target
  at the default period (10 ms) is <= 0.1 %. It counts the chains only, not the ~100 ns
  per probe of writing its two events, which the ratio includes.

Exit code 1 only when a run fails, its checksum differs between modes, or an on run
recorded no probe (the program loops for far longer than P).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from run_mpi import mpiexec_cmd  # noqa: E402  (the launcher flags every MPI test uses)

LINE = re.compile(r"bench_probe: iterations (\d+), loop_ns ([\d ]+), checksum (\S+)")


def run_once(cmd: list[str], out: Path, probe: str) -> tuple[list[float], str, list]:
    shutil.rmtree(out, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFVAR_")}
    env.pop("LD_PRELOAD", None)
    env.update(PERFVAR_OUTPUT=str(out), PERFVAR_PROBE=probe)
    p = subprocess.run(
        cmd, check=False, env=env, capture_output=True, text=True, timeout=600
    )
    m = LINE.search(p.stdout)
    if p.returncode != 0 or not m:
        sys.stdout.write(p.stdout + p.stderr)
        print(f"bench_probe: FAILED: PERFVAR_PROBE={probe} exited {p.returncode}")
        sys.exit(1)
    loops = [float(x) for x in m.group(2).split()]
    metas = []
    for r in range(len(loops)):
        doc = json.loads((out / "perfvar" / f"rank-{r}.json").read_text())
        metas.append(doc.get("probe"))
    return loops, m.group(3), metas


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=3, help="off/on pairs")
    ap.add_argument("--period-ms", type=int, default=10)
    ap.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    program = a.program[1:] if a.program[:1] == ["--"] else a.program
    cmd = mpiexec_cmd(a.mpiexec, a.np) + program
    on = str(a.period_ms)

    times: dict[str, list[float]] = {"off": [], on: []}
    checksums: set[str] = set()
    fractions: list[float] = []  # per rank and on run: probe total_ns / loop time
    per_probe: list[float] = []
    counts: list[tuple[int, float]] = []  # (probes, loop / P) per rank and on run
    adds = set()
    pair_ratios: list[float] = []
    for i in range(a.rounds):
        order = ("off", on) if i % 2 == 0 else (on, "off")
        pair = {}
        for mode in order:
            loops, checksum, metas = run_once(cmd, a.out / f"{mode}-{i}", mode)
            checksums.add(checksum)
            pair[mode] = max(loops)
            times[mode].append(max(loops))
            if mode == "off":
                if any(m is not None for m in metas):
                    print("bench_probe: FAILED: PERFVAR_PROBE=off recorded probes")
                    sys.exit(1)
                continue
            for loop, m in zip(loops, metas):
                if not m or not m["count"]:
                    print(
                        f"bench_probe: FAILED: no probe recorded in {a.out}/{mode}-{i}"
                    )
                    sys.exit(1)
                fractions.append(m["total_ns"] / loop)
                per_probe.append(m["total_ns"] / m["count"])
                counts.append((m["count"], loop / (a.period_ms * 1e6)))
                adds.add((m["adds"], m["k_source"]))
        pair_ratios.append(pair[on] / pair["off"])
    if len(checksums) != 1:
        print(
            f"bench_probe: FAILED: checksums differ between runs: {sorted(checksums)}"
        )
        sys.exit(1)

    t_off, t_on = statistics.median(times["off"]), statistics.median(times[on])
    k = ", ".join(f"{n} ADDs ({src})" for n, src in sorted(adds))
    print(
        f"bench_probe: {a.np} ranks, {a.rounds} off/on pairs (ABBA), period {on} ms, "
        f"K = {k}"
    )
    print(
        f"  loop time: off {t_off / 1e6:.1f} ms, on {t_on / 1e6:.1f} ms (medians), "
        f"ratio on/off = {statistics.median(pair_ratios):.4f} (median of {a.rounds} "
        f"pairs, range {min(pair_ratios):.4f}..{max(pair_ratios):.4f})"
    )
    n_med = statistics.median(c for c, _ in counts)
    expect = statistics.median(e for _, e in counts)
    print(
        f"  probes per rank and run: {n_med:.0f} (loop / period = {expect:.0f}), "
        f"{statistics.median(per_probe):.1f} ns each (chain only)"
    )
    print(
        f"  probe time = {100 * statistics.median(fractions):.4f} % of run time "
        f"(max {100 * max(fractions):.4f} %; target <= 0.1 % at 10 ms)"
    )
    print(f"  checksum {checksums.pop()} in every run")


if __name__ == "__main__":
    main()
