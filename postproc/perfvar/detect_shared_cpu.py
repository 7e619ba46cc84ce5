"""Detector "shared_cpu": ranks of one host whose compute segments ran on the same CPU.

Two ranks time-sharing a core (an oversubscribed run, or a bad binding) each see the
other's work as their own: their wall-clock segments include waiting for the CPU, so a
slow rank can hide and a healthy one look slow. This says so, per CPU, with the ranks
involved; it is informational and judges nobody. The CPU of a rank is the one most of
its segments started on (``cpu`` attribute, from TSC_AUX). Pure function; thread-safe.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Optional

import numpy as np

from perfvar.model import Anomaly, DetectorResult, DetectParams, Prepared
from perfvar.reader_otf2 import CPU_UNKNOWN

KIND = "shared_cpu"


def detect(prep: Prepared, params: Optional[DetectParams] = None) -> DetectorResult:
    """One ``shared_cpu`` anomaly per rank sharing its main CPU with another rank."""
    result = DetectorResult()
    started = prep.samples[prep.samples["cpu_enter"] != CPU_UNKNOWN]
    by_cpu: dict[tuple[Optional[str], int], list[int]] = defaultdict(list)
    for rank in np.unique(started["rank"]):
        cpus, counts = np.unique(
            started["cpu_enter"][started["rank"] == rank], return_counts=True
        )
        main = int(cpus[np.argmax(counts)])
        by_cpu[(prep.hosts.get(int(rank)), main)].append(int(rank))
    for (host, cpu), ranks in sorted(by_cpu.items(), key=lambda kv: kv[1][0]):
        if len(ranks) < 2:
            continue
        for rank in ranks:
            result.anomalies.append(
                Anomaly(
                    kind=KIND,
                    rank=rank,
                    host=host,
                    cpu=cpu,
                    segment=None,
                    excess_ns=None,
                    overlap=None,
                    evidence={"cpu": cpu, "ranks": ranks},
                )
            )
    return result
