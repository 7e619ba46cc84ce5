"""Which CPUs each traced thread's compute segments ran on.

One table per analysis, made where the samples are (a part of a parallel analysis
makes its ranks' rows, perfvar.partition) and read by the detectors "migrated" and
"shared_cpu" and by the rank table: per (rank, thread), the segments started on each
CPU, every CPU seen at an Enter or a Leave, and the segments that began on one CPU
and ended on another. CPUs come from the ``cpu`` event attribute (TSC_AUX); unknown
ones (-1) are left out. Pure functions, thread-safe, except :func:`of`, which keeps
the table it makes in the Prepared it is given (one Prepared, one thread at a time).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from perfvar.read.samples import CPU_UNKNOWN
from perfvar.stats.model import Prepared

# Above this many (thread, CPU) bins the counts are made by sorting instead.
_MAX_BINS = 1 << 26


@dataclass(frozen=True)
class ThreadCpus:
    """How one traced thread's compute segments used the CPUs."""

    started: dict[int, int]  # CPU -> segments whose Enter was on it, CPUs ascending
    cpus: tuple[int, ...]  # every CPU at an Enter or a Leave, ascending
    crossed: int  # segments that began on one CPU and ended on another
    segments: int  # the thread's segments, CPUs known or not

    @property
    def main_cpu(self) -> Optional[int]:
        """The CPU most segments started on (the lowest on a tie), None if none."""
        if not self.started:
            return None
        most = max(self.started.values())
        return min(c for c, n in self.started.items() if n == most)


CpuUse = dict[tuple[int, int], ThreadCpus]  # (rank, thread) -> its use, ascending


def cpu_use(samples: np.ndarray) -> CpuUse:
    """The table of these samples (read.samples.SAMPLE_DTYPE rows)."""
    if samples.size == 0:
        return {}
    unit = (samples["rank"].astype(np.int64) << 32) | samples["thread"].astype(np.int64)
    if np.any(unit[1:] < unit[:-1]):  # the reader gives them by location already
        order = np.argsort(unit, kind="stable")
        samples, unit = samples[order], unit[order]
    starts = np.concatenate([[0], np.flatnonzero(unit[1:] != unit[:-1]) + 1])
    lengths = np.diff(np.append(starts, unit.size))
    run = np.repeat(np.arange(starts.size, dtype=np.int64), lengths)
    enter = samples["cpu_enter"].astype(np.int64)
    leave = samples["cpu_leave"].astype(np.int64)
    e_known, l_known = enter != CPU_UNKNOWN, leave != CPU_UNKNOWN
    crossed = np.add.reduceat(
        (e_known & l_known & (enter != leave)).astype(np.int64), starts
    )
    started = _counts(run[e_known], enter[e_known], starts.size)
    left = _counts(run[l_known], leave[l_known], starts.size)
    out: CpuUse = {}
    for i, u in enumerate(unit[starts].tolist()):
        mine = started.get(i, {})
        out[(u >> 32, u & 0xFFFFFFFF)] = ThreadCpus(
            started=mine,
            cpus=tuple(sorted(set(mine) | set(left.get(i, {})))),
            crossed=int(crossed[i]),
            segments=int(lengths[i]),
        )
    return out


def _counts(run: np.ndarray, cpu: np.ndarray, runs: int) -> dict[int, dict[int, int]]:
    """run -> {CPU: rows}, CPUs ascending, for rows of run ``run[i]`` on ``cpu[i]``."""
    if run.size == 0:
        return {}
    width = int(cpu.max()) + 1
    if runs * width <= _MAX_BINS:
        bins = np.bincount(run * width + cpu, minlength=runs * width)
        keys = np.flatnonzero(bins)
        counts = bins[keys]
    else:
        keys, counts = np.unique(run * width + cpu, return_counts=True)
    out: dict[int, dict[int, int]] = {}
    for k, n in zip(keys.tolist(), counts.tolist()):
        out.setdefault(k // width, {})[k % width] = n
    return out


def of(prep: Prepared) -> CpuUse:
    """The table of ``prep``: the one the parts made, else made from its samples
    (once: kept in ``prep.cpu_use``)."""
    if prep.cpu_use is None:
        prep.cpu_use = cpu_use(prep.samples)
    return prep.cpu_use


def rank_cpus(use: CpuUse) -> dict[int, list[int]]:
    """rank -> every CPU its threads' segments were seen on, ascending."""
    out: dict[int, set[int]] = {}
    for (rank, _), t in use.items():
        out.setdefault(rank, set()).update(t.cpus)
    return {rank: sorted(c) for rank, c in out.items()}
