"""A two-class stencil timeline simulated for the wait-state tests: per step each
rank computes A, enters MPI_Allreduce (all leave LAT_NS after the last entry),
computes B, enters MPI_Waitall (it leaves LAT_NS after its own entry or the peer's,
whichever is later). Ticks are ns (1 GHz), so times are exact."""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from perfvar.read.samples import SAMPLE_DTYPE, TraceSamples

APP = "/opt/app/bin/stencil"
SEG_A = f"perfvar:segment:MPI_Waitall@{APP}+0x10;MPI_Allreduce@{APP}+0x20"
SEG_B = f"perfvar:segment:MPI_Allreduce@{APP}+0x20;MPI_Waitall@{APP}+0x10"
LAT_NS = 200.0
A_NS, B_NS = 100_000.0, 20_000.0

Extra = Optional[Callable[[int, int, str], float]]  # (rank, step, "A"/"B") -> ns


def simulate(steps: int = 200, nranks: int = 2, extra: Extra = None,
             synchronised: bool = True, seed: int = 0) -> TraceSamples:
    """Segments of every rank; ``extra(rank, step, cls)`` ns added to a segment.
    Unsynchronised: every rank runs alone (its calls last LAT_NS)."""
    rng = np.random.default_rng(seed)
    extra = extra or (lambda r, k, c: 0.0)
    t = np.full(nranks, 1000.0)
    rows = []
    for k in range(steps):
        for cls, base, seg in (("A", A_NS, 0), ("B", B_NS, 1)):
            enter = np.empty(nranks)
            for r in range(nranks):
                d = base * (1 + 0.001 * rng.standard_normal()) + extra(r, k, cls)
                start, d = int(round(t[r])), float(int(round(d)))
                rows.append((seg, r, 0, start, d, r, r, -1))
                enter[r] = start + d
            if not synchronised:
                t = enter + LAT_NS
            elif cls == "A":
                t = np.full(nranks, enter.max() + LAT_NS)
            else:
                peer = np.roll(enter, 1)
                t = np.maximum(enter, peer) + LAT_NS
    samples = np.array(rows, dtype=SAMPLE_DTYPE)
    return TraceSamples(
        path="sim", timer_resolution_hz=1e9, segments=[SEG_A, SEG_B],
        samples=samples, locations=[],
    )
