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

import numpy as np

from perfvar.model import Anomaly, DetectorResult, DetectParams, Prepared
from perfvar.reader_otf2 import CPU_UNKNOWN

KIND = "migrated"


def detect(prep: Prepared, params: Optional[DetectParams] = None) -> DetectorResult:
    """One ``migrated`` anomaly per (rank, thread) that used more than one CPU."""
    result = DetectorResult()
    s = prep.samples
    # (rank, thread) as one int64, thread in the low 32 bits: sorts as the pairs.
    unit = (s["rank"].astype(np.int64) << 32) | s["thread"].astype(np.int64)
    if np.any(unit[1:] < unit[:-1]):  # the reader gives them by location already
        order = np.argsort(unit, kind="stable")
        s, unit = s[order], unit[order]
    samples = s
    bounds = np.nonzero(np.diff(unit))[0] + 1
    multi = {int(u >> 32) for u in np.unique(unit).tolist() if u & 0xFFFFFFFF}
    for mine in np.split(samples, bounds) if samples.size else []:
        rank, thread = int(mine["rank"][0]), int(mine["thread"][0])
        enter, leave = mine["cpu_enter"], mine["cpu_leave"]
        known = np.concatenate(
            [enter[enter != CPU_UNKNOWN], leave[leave != CPU_UNKNOWN]]
        )
        cpus = np.unique(known)
        if cpus.size < 2:
            continue
        started = enter[enter != CPU_UNKNOWN]
        values, counts = np.unique(started, return_counts=True)
        both = (enter != CPU_UNKNOWN) & (leave != CPU_UNKNOWN)
        crossed = int(np.count_nonzero(both & (enter != leave)))
        main_cpu = int(values[np.argmax(counts)]) if values.size else int(cpus[0])
        evidence = {
            "cpus": [int(c) for c in cpus],
            "segments_started_per_cpu": {
                str(int(v)): int(c) for v, c in zip(values, counts)
            },
            "segments_migrated_inside": crossed,
            "segments": int(mine.size),
        }
        if rank in multi:
            evidence["thread"] = thread
        result.anomalies.append(
            Anomaly(
                kind=KIND,
                rank=rank,
                host=prep.hosts.get(rank),
                cpu=main_cpu,
                segment=None,
                excess_ns=None,
                evidence=evidence,
            )
        )
    return result
