#!/usr/bin/env python3
"""How far two cores' fixed-work probes differ with nothing different on the cores:
the figure perfvar.stats.core_speed.SYSTEMATIC must stay above.

  probe_spread.py RUNS.json [RUNS.json ...]

RUNS.json: the trials tools/validate.py kept (``--json``), their traces still on disk.
For each trial whose host witness measured the CPUs within validate.EVEN_HOST of each
other and whose case did nothing to a core (no busy process on a rank's CPU), the last
rank's probes against the others' over the whole run, as the verdict measures them
(perfvar.stats.core_speed.of_rank on the analysis's own cells): their shift, its 95 %
bootstrap interval, and how far the interval leaves 0 (0 when it holds 0). The
bootstrap covers the probes' sampling; what is left beyond it is what differs between
two cores' probes with the same work: the systematic part. Prints one row per program
and one for all: trials, probes a rank, the interval's width, and the distance beyond
the interval at the 90th, 99th percentile and at most, beside SYSTEMATIC.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "postproc"))

from validate import EVEN_HOST  # noqa: E402

from perfvar import analysis  # noqa: E402
from perfvar.stats import core_speed  # noqa: E402

ON_A_CORE = {"busy", "duty"}  # cases that load a rank's CPU: its core is slower


class _Prepared(Exception):
    """Raised from analyze's on_prepared: the cells are all this tool reads."""

    def __init__(self, prep) -> None:
        super().__init__("prepared")
        self.prep = prep


def _prepared(trace: str):
    def stop(prep) -> None:
        raise _Prepared(prep)

    try:
        analysis.analyze(trace, symbolize_sites=False, on_prepared=stop)
    except _Prepared as done:
        return done.prep
    return None


def _trials(paths: list[str]) -> list[dict]:
    out = []
    for path in paths:
        doc = json.loads(Path(path).read_text())
        out += doc["trials"] if isinstance(doc, dict) else doc
    return out


def measure(trial: dict) -> dict | None:
    """The last rank's probes against its peers' in one kept trial, or None."""
    witness = trial.get("cpu_slowdown") or {}
    if trial.get("error") or trial["case"] in ON_A_CORE or not witness:
        return None
    if max(witness.values()) > EVEN_HOST or not Path(trial["trace"]).is_dir():
        return None
    prep = _prepared(trial["trace"])
    if prep is None or prep.probe_segment is None:
        return None
    rank = max(r for (s, r) in prep.cells if s == prep.probe_segment)
    speed = core_speed.of_rank(prep, rank)
    if speed is None:
        return None
    lo, hi = speed.ci_rel
    return {
        "program": trial["program"],
        "probes": speed.n,
        "width": hi - lo,
        "beyond": max(0.0, lo, -hi),
    }


def row(name: str, rows: list[dict]) -> str:
    beyond = np.array([r["beyond"] for r in rows])
    p90, p99 = np.quantile(beyond, [0.9, 0.99])
    return (
        f"| {name} | {len(rows)} | {int(np.median([r['probes'] for r in rows]))} | "
        f"{100 * np.median([r['width'] for r in rows]):.2f} % | "
        f"{np.count_nonzero(beyond)} | {100 * p90:.2f} % | {100 * p99:.2f} % | "
        f"{100 * beyond.max():.2f} % |"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="RUNS.json files of tools/validate.py")
    args = ap.parse_args()
    rows = [m for t in _trials(args.runs) if (m := measure(t)) is not None]
    if not rows:
        print("no trial on an even host with probes", file=sys.stderr)
        return 1
    print(
        "| program | trials | probes a rank | 95 % interval | outside it | "
        "beyond it: 90th pct | 99th pct | most |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in sorted({r["program"] for r in rows}):
        print(row(name, [r for r in rows if r["program"] == name]))
    print(row("all", rows))
    print(f"core_speed.SYSTEMATIC: {100 * core_speed.SYSTEMATIC:.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
