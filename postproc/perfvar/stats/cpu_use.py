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

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from perfvar.read.samples import CPU_UNKNOWN
from perfvar.stats.model import Prepared

# Rows counted at once: every temporary is bounded by this many rows (a few tens of
# bytes each), not by the trace's samples (eight-byte copies of four columns of 10 M
# samples held 550 MB at once).
_CHUNK = 1 << 20
# Above this many (thread, CPU) bins in a chunk the counts are made by sorting instead.
_MAX_BINS = 1 << 20


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


@dataclass
class _Sums:
    """One thread's counts so far, summed over the chunks its rows were in."""

    started: dict[int, int] = field(default_factory=dict)
    cpus: set[int] = field(default_factory=set)
    crossed: int = 0
    segments: int = 0


def cpu_use(samples: np.ndarray) -> CpuUse:
    """The table of these samples (read.samples.SAMPLE_DTYPE rows), in any order;
    counted _CHUNK rows at a time (the reader's rows come by location, so a chunk
    holds a few threads' runs)."""
    sums: dict[tuple[int, int], _Sums] = {}
    for at in range(0, samples.size, _CHUNK):
        _add_chunk(samples[at : at + _CHUNK], sums)
    return {
        key: ThreadCpus(
            started=dict(sorted(s.started.items())),
            cpus=tuple(sorted(s.cpus)),
            crossed=s.crossed,
            segments=s.segments,
        )
        for key, s in sorted(sums.items())
    }


def _add_chunk(rows: np.ndarray, sums: dict[tuple[int, int], _Sums]) -> None:
    """Add the counts of ``rows`` (a chunk of samples) to ``sums``."""
    unit = (rows["rank"].astype(np.int64) << 32) | rows["thread"].astype(np.int64)
    if np.any(unit[1:] < unit[:-1]):
        keys, run = np.unique(unit, return_inverse=True)
        run = run.reshape(-1)  # numpy 2.0.0 gave it the shape of ``unit``
    else:  # runs of one thread each, as the reader gives them
        starts = np.concatenate([[0], np.flatnonzero(unit[1:] != unit[:-1]) + 1])
        keys = unit[starts]
        run = np.repeat(np.arange(starts.size), np.diff(np.append(starts, unit.size)))
    del unit
    enter, leave = rows["cpu_enter"], rows["cpu_leave"]
    e_known, l_known = enter != CPU_UNKNOWN, leave != CPU_UNKNOWN
    cross = e_known & l_known & (enter != leave)
    crossed = np.bincount(run[cross], minlength=keys.size)
    segments = np.bincount(run, minlength=keys.size)
    started = _counts(run[e_known], enter[e_known], keys.size)
    left = _counts(run[l_known], leave[l_known], keys.size)
    for i, u in enumerate(keys.tolist()):
        s = sums.setdefault((u >> 32, u & 0xFFFFFFFF), _Sums())
        for c, n in started.get(i, {}).items():
            s.started[c] = s.started.get(c, 0) + n
        s.cpus.update(started.get(i, ()), left.get(i, ()))
        s.crossed += int(crossed[i])
        s.segments += int(segments[i])


def _counts(run: np.ndarray, cpu: np.ndarray, runs: int) -> dict[int, dict[int, int]]:
    """run -> {CPU: rows}, CPUs ascending, for rows of run ``run[i]`` on ``cpu[i]``."""
    if run.size == 0:
        return {}
    width = int(cpu.max()) + 1
    key = run.astype(np.int64) * width + cpu
    if runs * width <= _MAX_BINS:
        bins = np.bincount(key, minlength=runs * width)
        keys = np.flatnonzero(bins)
        counts = bins[keys]
    else:
        keys, counts = np.unique(key, return_counts=True)
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
