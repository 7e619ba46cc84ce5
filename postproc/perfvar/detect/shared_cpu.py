"""Detector "shared_cpu": ranks of one host whose compute segments ran on the same CPU.

Two ranks time-sharing a core (an oversubscribed run, or a bad binding) each see the
other's work as their own: their wall-clock segments include waiting for the CPU, so a
slow rank can hide and a healthy one look slow. This says so, per CPU, with the ranks
involved; it is informational and judges nobody. The CPU of a thread is the one most of
its segments started on (``cpu`` attribute, from TSC_AUX); each traced thread of a rank
counts on its own, so several threads of one rank bound to one core (a rank bound to a
core, as Open MPI does by default, running threads) are reported too, with the threads
in the evidence. Pure function; thread-safe.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Optional

from perfvar.detect.finding import CPU, AnomalyJson, FindingKind
from perfvar.detect.words import where
from perfvar.stats import cpu_use
from perfvar.stats.model import Anomaly, DetectorResult, DetectParams, Prepared
from perfvar.units import compact_ranges

KIND = "shared_cpu"


def detect(prep: Prepared, params: Optional[DetectParams] = None) -> DetectorResult:
    """One ``shared_cpu`` anomaly per rank with a thread sharing its main CPU."""
    result = DetectorResult()
    by_cpu: dict[tuple[Optional[str], int], list[tuple[int, int]]] = defaultdict(list)
    for (rank, thread), use in cpu_use.of(prep).items():
        if use.main_cpu is not None:
            by_cpu[(prep.hosts.get(rank), use.main_cpu)].append((rank, thread))
    for (host, cpu), members in sorted(by_cpu.items(), key=lambda kv: kv[1][0]):
        if len(members) < 2:
            continue
        ranks = sorted({r for r, _ in members})
        evidence: dict = {"cpu": cpu, "ranks": ranks}
        if any(t for _, t in members):
            evidence["threads"] = [[r, t] for r, t in members]
        for rank in ranks:
            result.anomalies.append(
                Anomaly(
                    kind=KIND,
                    rank=rank,
                    host=host,
                    cpu=cpu,
                    segment=None,
                    excess_ns=None,
                    evidence=evidence,
                )
            )
    return result


def describe(a: AnomalyJson, labels: dict[str, str]) -> str:
    """One sentence with the evidence of a shared CPU."""
    ev = a["evidence"]
    others = [r for r in ev["ranks"] if r != a["rank"]]
    mine = [t for r, t in ev.get("threads", []) if r == a["rank"]]
    with_whom = []
    if len(mine) > 1:
        with_whom.append(f"between its threads {compact_ranges(mine)}")
    if others:
        with_whom.append(f"with rank(s) {compact_ranges(others)}")
    return (
        f"{where(a)} shared CPU {ev['cpu']} {' and '.join(with_whom)}: "
        "its segments include time-slicing, so wall-clock comparisons with this "
        "rank mean little; run one rank (or thread) per core; informational"
    )


FINDING = FindingKind(
    name=KIND,
    verdict=False,
    word="shared cpu",
    describe=describe,
    subject=CPU,
    summary_key="shared_cpu_ranks",
)
