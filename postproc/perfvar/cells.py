"""What the detectors share about cells: grouping, who may be judged, peer pools.

A cell is one segment class on one rank (perfvar.model.Cell). Pure functions;
thread-safe.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Optional, Union

import numpy as np

from perfvar.cache_state import CacheState
from perfvar.filters import filter_cost
from perfvar.model import Cell, Prepared, cell_calibration
from perfvar.reader_meta import Calibration, RunMeta


def cell_inputs(
    samples: np.ndarray, meta: RunMeta
) -> list[tuple[tuple[int, int], np.ndarray, np.ndarray]]:
    """The trace's samples as cells: ``((segment, rank), rows, durations)`` in
    (segment, rank) order, the rows by start time, the durations (ns) after
    filter_cost with the rank's own timer overhead (0 when unknown)."""
    order = np.lexsort((samples["start_ticks"], samples["rank"], samples["segment"]))
    s_sorted = samples[order]
    keys = np.stack([s_sorted["segment"], s_sorted["rank"]], axis=1)
    bounds = np.nonzero(np.any(np.diff(keys, axis=0) != 0, axis=1))[0] + 1
    out = []
    for chunk in np.split(s_sorted, bounds) if s_sorted.size else []:
        seg, rank = int(chunk["segment"][0]), int(chunk["rank"][0])
        rmeta = meta.ranks.get(rank)
        overhead = rmeta.calibration.timer_overhead_ns if rmeta else None
        out.append(((seg, rank), chunk, filter_cost(chunk["duration_ns"], overhead)))
    return out


def by_segment(prep: Prepared, probes: bool = False) -> dict[int, dict[int, Cell]]:
    """segment index -> rank -> cell, both ascending; the probes' pseudo-class only
    with ``probes``."""
    out: dict[int, dict[int, Cell]] = defaultdict(dict)
    for (seg, rank), cell in sorted(prep.cells.items()):
        if probes or seg != prep.probe_segment:
            out[seg][rank] = cell
    return dict(out)


def by_rank(prep: Prepared) -> dict[int, list[Cell]]:
    """rank -> its segment cells (no probes), by segment index."""
    out: dict[int, list[Cell]] = defaultdict(list)
    for (seg, rank), cell in sorted(prep.cells.items()):
        if seg != prep.probe_segment:
            out[rank].append(cell)
    return dict(out)


def unjudged_reason(
    prep: Prepared, cell: Cell, cells: dict[int, Cell], min_samples: int
) -> tuple[Optional[str], Optional[Union[CacheState, Calibration]]]:
    """(why the cell cannot be judged, or None; the calibration it is judged with).

    ``cells``: every rank's cell of the same class. The reasons are the judgement
    statuses: "single rank", "too few samples", "no calibration", "below precision"
    (the cell's median, or the centre of its peers' medians, under the rank's t_min:
    the timer cannot resolve one side of the comparison, so it is counted, never
    judged; a 130 ns step after a collective on the peers against 1.3 us on a rank
    that arrived late is such a case). Probes run the chain length of t_min itself,
    so they are not held to it.
    """
    cal = cell_calibration(prep, cell)
    peers = [c for q, c in cells.items() if q != cell.rank and c.n > 0]
    if not peers:
        return "single rank", cal
    if cell.n < min_samples:
        return "too few samples", cal
    if cal is None or cal.t_min_ns is None or cal.t_diff_ns is None:
        return "no calibration", cal
    if cell.segment == prep.probe_segment:
        return None, cal
    centre = float(np.median([c.median_ns for c in peers]))
    if min(cell.median_ns, centre) < cal.t_min_ns:
        return "below precision", cal
    return None, cal


# Peer samples a rank is compared with, at most: with dozens of ranks a pool of all
# peers is millions of samples, sorted once per test, while a fair share of each
# peer's, spread over the run, tells the peers' distribution as well (the shift's
# standard error at 2 x 10^4 samples is ~1 % of the spread, far below the floors).
PEER_CAP = 20_000


def peer_takes(cells: dict[int, Cell], used: list[int]) -> dict[int, np.ndarray]:
    """Which of each used peer's samples a pool takes (indices into its time-ordered
    samples): all of them when the peers hold at most PEER_CAP samples together,
    else each peer's share of PEER_CAP in proportion to its samples (at least one),
    evenly spaced in time."""
    sizes = {q: cells[q].n for q in used}
    total = sum(sizes.values())
    if total <= PEER_CAP:
        return {q: np.arange(n) for q, n in sizes.items()}
    out = {}
    for q, n in sizes.items():
        k = max(1, min(n, round(PEER_CAP * n / total)))
        # k indices from 0 to n - 1, strictly increasing (steps >= 1 as k <= n).
        out[q] = np.arange(k) * (n - 1) // max(k - 1, 1)
    return out


def peer_pool(
    cells: dict[int, Cell], rank: int, leave_out: set[int]
) -> tuple[np.ndarray, list[int], list[int]]:
    """Pooled samples (ns) of the other ranks of one class (see peer_takes).

    Ranks in ``leave_out`` (already found slow) are left out unless that would leave
    no peer. Returns (samples, ranks used, ranks left out).
    """
    peers = [q for q in sorted(cells) if q != rank and cells[q].n > 0]
    excluded = [q for q in peers if q in leave_out]
    if len(excluded) == len(peers):
        excluded = []
    used = [q for q in peers if q not in excluded]
    takes = peer_takes(cells, used)
    pool = (
        np.concatenate([cells[q].samples_ns[takes[q]] for q in used])
        if used
        else np.empty(0, dtype=np.float64)
    )
    return pool, used, excluded


def log_median(cell: Cell) -> float:
    """Median log-duration of a cell's kept samples."""
    return cell.log_median
