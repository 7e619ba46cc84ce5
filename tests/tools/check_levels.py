#!/usr/bin/env python3
"""The machine's levels on synthetic traces: is each injected level named once, at its
own level, and nothing else?

  check_levels.py --out DIR [--sizes 1024x2000,4096x2500] [--seeds 1-5] [--jobs K]

For each size RANKSxSEGMENTS and seed, a trace of 64 ranks a node, two sockets a node
(tests/tools/synth.py --levels: a slow node +5 %, a slow socket +5 %, a noisy node, a
node-wide slow phase +30 % and a slow core +10 % on a node of its own) is written to
DIR, analysed in this process (perfvar.analysis.analyze, ``--jobs`` local processes)
and scored (tests/tools/verdicts.py, minor findings judged too: what the detectors
found, not only the headline); and per size one trace with nothing injected, which
must name no node or socket. Prints one table: the hits of each injected kind, the
wrong names (a level at a wrong level, a rank named on its own), the analysis time
and the share of it the levels took (perfvar.detect.fold_levels, timed in place).
Exits 1 when a trace misses an injected level or names a wrong one. Traces are kept
in DIR and reused.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "tools"))
sys.path.insert(0, str(ROOT / "postproc"))

import synth  # noqa: E402
from verdicts import score  # noqa: E402

from perfvar import analysis  # noqa: E402
from perfvar.verdict import headline  # noqa: E402

KINDS = ("slow_node", "slow_socket", "noisy_node", "node_transient", "slow_core")
FOLD = headline.fold_levels


def timed_fold(spent: list[float]):
    """perfvar.detect.fold_levels, adding its seconds to ``spent``."""

    def fold(found, places):
        t0 = time.perf_counter()
        try:
            return FOLD(found, places)
        finally:
            spent.append(time.perf_counter() - t0)

    return fold


def trial(out: Path, ranks: int, segments: int, seed: int, levels: bool, jobs: int):
    """(the row's cells, whether it holds): one trace generated (or reused) and
    judged."""
    trace = out / f"{ranks}x{segments}-{'s' + str(seed) if levels else 'none'}"
    if not (trace / "synthetic.json").exists():
        place = synth.Placement(ranks, 64, 2)
        plan = synth.choose_levels(place, seed) if levels else synth.Plan()
        synth.generate(trace, ranks, segments, seed, plan, 64, sockets=2)
    truth = json.loads((trace / "synthetic.json").read_text())
    spent: list[float] = []
    headline.fold_levels = timed_fold(spent)
    t0 = time.monotonic()
    result = analysis.analyze(str(trace), jobs=jobs, symbolize_sites=False)
    wall = time.monotonic() - t0
    injected = synth.injected(truth)
    s = score(injected, result, with_minor=True)
    hit = {inj.kind: i in s.hits for i, inj in enumerate(injected)}
    cells = [f"{hit[k]:d}" if k in hit else "-" for k in KINDS]
    ok = s.exact(len(injected))
    wrong = "; ".join(s.wrong_names[:3]) + (" ..." if len(s.wrong_names) > 3 else "")
    name = f"{ranks}x{segments} seed {seed}" if levels else f"{ranks}x{segments} none"
    return [name, *cells, wrong or "-", f"{wall:.1f}", f"{sum(spent) * 1e3:.1f}",
            f"{sum(spent) / wall:.2%}"], ok  # fmt: skip


def seeds(text: str) -> list[int]:
    """ "1-5" -> [1..5], "3" -> [3], "" -> [] (the trace with nothing injected only)."""
    if not text:
        return []
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes", default="1024x2000")
    ap.add_argument("--seeds", default="1-5")
    ap.add_argument("--jobs", type=int, default=1)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    head = ["trace", *KINDS, "wrong names", "analysis s", "levels ms", "levels share"]
    print(" | ".join(head))
    good = True
    for size in a.sizes.split(","):
        ranks, segments = (int(x) for x in size.split("x"))
        runs = [(s, True) for s in seeds(a.seeds)] + [(0, False)]
        for seed, levels in runs:
            row, ok = trial(out, ranks, segments, seed, levels, a.jobs)
            good &= ok
            print(" | ".join(row), flush=True)
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
