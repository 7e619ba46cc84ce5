"""Detector "migrated": a rank thread whose compute segments ran on several CPUs.

The CPU of a segment's Enter and Leave comes from the ``cpu`` event attribute
(TSC_AUX); unknown CPUs (-1) are ignored. Each thread of a rank is looked at on its
own: threads running on different CPUs is not a migration, a thread that moved is.
Informational: it does not make a rank "slow", but a migration explains noise and
makes per-core attribution ambiguous. ``evidence`` lists the segments started per CPU
and how many segments began on one CPU and ended on another, and the thread when the
rank has several. Pure function; thread-safe.
"""

from __future__ import annotations

from typing import Optional

from perfvar.detect.finding import PLACEMENT, AnomalyJson, FindingKind
from perfvar.detect.words import where
from perfvar.stats import cpu_use
from perfvar.stats.model import Anomaly, DetectorResult, DetectParams, Prepared
from perfvar.units import compact_ranges

KIND = "migrated"


def detect(prep: Prepared, params: Optional[DetectParams] = None) -> DetectorResult:
    """One ``migrated`` anomaly per (rank, thread) that used more than one CPU."""
    result = DetectorResult()
    use = cpu_use.of(prep)
    multi = {rank for rank, thread in use if thread}  # ranks with a second thread
    for (rank, thread), mine in use.items():
        if len(mine.cpus) < 2:
            continue
        main_cpu = mine.main_cpu
        evidence = {
            "cpus": list(mine.cpus),
            "segments_started_per_cpu": {str(c): n for c, n in mine.started.items()},
            "segments_migrated_inside": mine.crossed,
            "segments": mine.segments,
        }
        if rank in multi:
            evidence["thread"] = thread
        result.anomalies.append(
            Anomaly(
                kind=KIND,
                rank=rank,
                host=prep.hosts.get(rank),
                cpu=main_cpu if main_cpu is not None else mine.cpus[0],
                segment=None,
                excess_ns=None,
                evidence=evidence,
            )
        )
    return result


def describe(a: AnomalyJson, labels: dict[str, str]) -> str:
    """One sentence with the evidence of a migration."""
    ev = a["evidence"]
    thread = f" thread {ev['thread']}" if "thread" in ev else ""
    return (
        f"{where(a)}{thread} migrated: its segments ran on CPUs "
        f"{compact_ranges(ev['cpus'])} ({ev['segments_migrated_inside']} of "
        f"{ev['segments']} segments began on one CPU and ended on another); "
        "informational"
    )


FINDING = FindingKind(
    name=KIND,
    verdict=False,
    word="migrated",
    describe=describe,
    subject=PLACEMENT,
    summary_key="migrated_ranks",
)
