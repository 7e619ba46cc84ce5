"""A two-class stencil timeline simulated for the wait-state tests: per step each
rank computes A, enters MPI_Allreduce (all leave LAT_NS after the last entry),
computes B, enters MPI_Waitall (it leaves LAT_NS after its own entry or the peer's,
whichever is later). Ticks are ns (1 GHz), so times are exact. With ``off_cpu``,
another process takes that many ns of a segment's CPU (the segment lasts that much
longer) and the counters are read at the end of every segment, as perfvar's
recorder reads them at the end of long ones."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from perfvar.read.samples import METRIC_DTYPE, SAMPLE_DTYPE, TraceSamples
from perfvar.read.segments import segment_key

APP = "/opt/app/bin/stencil"
SEG_A = segment_key(f"MPI_Waitall@{APP}+0x10", f"MPI_Allreduce@{APP}+0x20")
SEG_B = segment_key(f"MPI_Allreduce@{APP}+0x20", f"MPI_Waitall@{APP}+0x10")
LAT_NS = 200.0
A_NS, B_NS = 100_000.0, 20_000.0

Extra = Optional[Callable[[int, int, str], float]]  # (rank, step, "A"/"B") -> ns
COUNTERS = ["perf::TASK-CLOCK:k=1", "perf::CONTEXT-SWITCHES:k=1"]


@dataclass
class WithReads(TraceSamples):
    """Simulated samples with their counter reads (METRIC_DTYPE, "sample"/"first"
    indexing ``samples`` directly)."""

    reads: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=METRIC_DTYPE))

    @property
    def metrics(self) -> np.ndarray:
        return self.reads


def _read(rank: int, sample: int, since: float, end: float, off: float) -> tuple:
    values = np.full(METRIC_DTYPE["values"].shape, np.nan)
    values[0] = (end - since) - off  # the task clock: time on the CPU
    values[1] = 1.0 + (3.0 if off > 0 else 0.0)  # a process that ran switched in
    return (rank, 0, sample, sample, int(end), int(since), values)


def simulate(
    steps: int = 200,
    nranks: int = 2,
    extra: Extra = None,
    synchronised: bool = True,
    seed: int = 0,
    off_cpu: Extra = None,
) -> TraceSamples:
    """Segments of every rank; ``extra(rank, step, cls)`` ns added to a segment,
    ``off_cpu(rank, step, cls)`` ns of it taken by another process (with counter
    reads; a WithReads). Unsynchronised: every rank runs alone (its calls last
    LAT_NS)."""
    rng = np.random.default_rng(seed)
    extra = extra or (lambda r, k, c: 0.0)
    t = np.full(nranks, 1000.0)
    rows, reads = [], []
    last_read = t.copy()
    for k in range(steps):
        for cls, base, seg in (("A", A_NS, 0), ("B", B_NS, 1)):
            enter = np.empty(nranks)
            for r in range(nranks):
                off = off_cpu(r, k, cls) if off_cpu else 0.0
                d = base * (1 + 0.001 * rng.standard_normal()) + extra(r, k, cls)
                start, d = int(round(t[r])), float(int(round(d + off)))
                rows.append((seg, r, 0, start, d, r, r, -1))
                enter[r] = start + d
                if off_cpu:
                    reads.append(_read(r, len(rows) - 1, last_read[r], enter[r], off))
                    last_read[r] = enter[r]
            if not synchronised:
                t = enter + LAT_NS
            elif cls == "A":
                t = np.full(nranks, enter.max() + LAT_NS)
            else:
                peer = np.roll(enter, 1)
                t = np.maximum(enter, peer) + LAT_NS
    common = dict(
        path="sim", timer_resolution_hz=1e9, segments=[SEG_A, SEG_B],
        samples=np.array(rows, dtype=SAMPLE_DTYPE), locations=[],
    )
    if off_cpu:
        return WithReads(**common, metric_names=list(COUNTERS),
                         reads=np.array(reads, dtype=METRIC_DTYPE))
    return TraceSamples(**common)
