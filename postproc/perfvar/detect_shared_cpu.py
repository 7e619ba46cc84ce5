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

import numpy as np

from perfvar.model import Anomaly, DetectorResult, DetectParams, Prepared
from perfvar.reader_otf2 import CPU_UNKNOWN

KIND = "shared_cpu"


def detect(prep: Prepared, params: Optional[DetectParams] = None) -> DetectorResult:
    """One ``shared_cpu`` anomaly per rank with a thread sharing its main CPU."""
    result = DetectorResult()
    started = prep.samples[prep.samples["cpu_enter"] != CPU_UNKNOWN]
    by_cpu: dict[tuple[Optional[str], int], list[tuple[int, int]]] = defaultdict(list)
    # Segments started per (rank, thread, CPU), counted in one pass over one int64
    # key (21 bits each: up to 2M ranks, threads and CPUs), sorted as the triples.
    key = (started["rank"].astype(np.int64) << 42) | (
        started["thread"].astype(np.int64) << 21
    )
    triples, counts = np.unique(
        key | started["cpu_enter"].astype(np.int64), return_counts=True
    )
    units, first = np.unique(triples >> 21, return_index=True)
    for unit, lo, hi in zip(units.tolist(), first, np.append(first[1:], triples.size)):
        # The CPU most segments started on; the lowest one on a tie.
        main = int(triples[lo + np.argmax(counts[lo:hi])] & ((1 << 21) - 1))
        rank, thread = unit >> 21, unit & ((1 << 21) - 1)
        by_cpu[(prep.hosts.get(rank), main)].append((rank, thread))
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
