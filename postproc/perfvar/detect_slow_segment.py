"""Detector "slow segment": a rank that runs a segment class slower than its peers.

For each segment class present on at least two ranks, and each rank r of it:

* fewer than ``min_samples`` (8) filtered samples -> "too few samples", not judged;
* t_min/t_diff: those of the cache state chosen for the cell (perfvar.cache_state:
  the state closest to the bytes the preceding MPI call moved), else the rank's
  flush-0 calibration;
* no t_min/t_diff for r (no calibration)          -> "no calibration", not judged;
* median(r) < t_min(r)                           -> "below precision": counted,
  never judged (the timer cannot resolve it);
* otherwise peers = the pooled filtered samples of the other ranks, and
  shift = median(r) - median(peers) (ns). r is flagged ``slow_segment`` when
  shift > t_diff(r) AND overlap(peers, r) < alpha, where overlap is the paper's
  Algorithm 2 measure (fraction of r's samples below max(peers)). Only positive
  shifts are flagged; ``excess_ns`` = shift.

Peers, ``params.peers == "robust"`` (default): ranks that are already significantly
slow are left out of every pool, so that several slow ranks (e.g. all ranks of one
slow node) do not hide each other by raising max(peers). "Already slow" = median
above the median of the rank medians, and shift > t_diff and overlap < alpha against
the pooled samples of the lower half of the ranks (see ``_already_slow``). If that
would leave no peer, all peers are used. ``"all"`` pools every other rank, the
literal definition. Pure function; thread-safe.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Optional

import numpy as np

from perfvar.model import (
    Anomaly,
    Cell,
    DetectorResult,
    DetectParams,
    Judgement,
    Prepared,
    cell_calibration,
)
from perfvar.stats import iqr, overlap

KIND = "slow_segment"


def _cells_by_segment(prep: Prepared) -> dict[int, dict[int, Cell]]:
    out: dict[int, dict[int, Cell]] = defaultdict(dict)
    for (seg, rank), cell in prep.cells.items():
        out[seg][rank] = cell
    return out


def _medians(cells: dict[int, Cell], min_samples: int) -> dict[int, float]:
    return {
        r: float(np.median(c.samples_ns))
        for r, c in cells.items()
        if c.n >= min_samples
    }


def _already_slow(
    cells: dict[int, Cell],
    medians: dict[int, float],
    prep: Prepared,
    alpha: float,
) -> list[int]:
    """Ranks significantly slower than the lower half of the ranks (by median).

    Reference = pooled samples of the ranks whose median is <= the median of the
    rank medians. A rank above that centre is "already slow" when its median exceeds
    the reference median by more than its own t_diff (0 if unknown) and
    overlap(reference, rank) < alpha: the same test as the detector, so ranks that
    differ only by noise are never left out.
    """
    if len(medians) < 2:
        return []
    center = float(np.median(list(medians.values())))
    ref_ranks = [q for q, m in medians.items() if m <= center]
    ref = np.concatenate([cells[q].samples_ns for q in ref_ranks])
    if ref.size < 2:
        return []
    ref_median = float(np.median(ref))
    out = []
    for q, m in sorted(medians.items()):
        if m <= center:
            continue
        cal = cell_calibration(prep, cells[q])
        t_diff = cal.t_diff_ns if cal is not None and cal.t_diff_ns is not None else 0.0
        if m - ref_median > t_diff and overlap(ref, cells[q].samples_ns) < alpha:
            out.append(q)
    return out


def _peer_pool(
    cells: dict[int, Cell], rank: int, slow: list[int]
) -> tuple[np.ndarray, list[int], list[int]]:
    peers = [q for q in sorted(cells) if q != rank and cells[q].n > 0]
    excluded = [q for q in peers if q in slow]
    if len(excluded) == len(peers):
        excluded = []
    used = [q for q in peers if q not in excluded]
    pool = (
        np.concatenate([cells[q].samples_ns for q in used])
        if used
        else np.empty(0, dtype=np.float64)
    )
    return pool, used, excluded


def detect(prep: Prepared, params: Optional[DetectParams] = None) -> DetectorResult:
    """Judge every (segment, rank) cell; returns anomalies and one judgement each."""
    params = params or DetectParams()
    result = DetectorResult()
    for seg, cells in sorted(_cells_by_segment(prep).items()):
        seg_id = prep.segment_ids[seg]
        present = [r for r, c in cells.items() if c.n > 0]
        medians = _medians(cells, params.min_samples)
        slow = (
            _already_slow(cells, medians, prep, params.alpha)
            if params.peers == "robust"
            else []
        )
        for rank in sorted(cells):
            cell = cells[rank]
            judgement = Judgement(seg_id, rank, "ok", cell.n)
            judgement.context_bytes = cell.context_bytes
            if cell.state is not None:
                judgement.cache_state = cell.state.label
            result.judgements.append(judgement)
            if len(present) < 2:
                judgement.status = "single rank"
                continue
            if cell.n < params.min_samples:
                judgement.status = "too few samples"
                continue
            med = medians[rank]
            judgement.median_ns = med
            cal = cell_calibration(prep, cell)
            if cal is None or cal.t_min_ns is None or cal.t_diff_ns is None:
                judgement.status = "no calibration"
                continue
            if med < cal.t_min_ns:
                judgement.status = "below precision"
                continue
            pool, used, excluded = _peer_pool(cells, rank, slow)
            if pool.size < 2:
                judgement.status = "no peers"
                continue
            peer_med = float(np.median(pool))
            shift = med - peer_med
            ov = overlap(pool, cell.samples_ns)
            judgement.shift_ns, judgement.overlap = shift, ov
            if not (shift > cal.t_diff_ns and ov < params.alpha):
                continue
            judgement.status = "slow"
            result.anomalies.append(
                Anomaly(
                    kind=KIND,
                    rank=rank,
                    host=prep.hosts.get(rank),
                    cpu=cell.cpu,
                    segment=seg_id,
                    excess_ns=shift,
                    overlap=ov,
                    evidence={
                        "n": cell.n,
                        "n_raw": cell.raw_n,
                        "os_noise_removed": cell.os_info.n_removed,
                        "median_ns": med,
                        "iqr_ns": iqr(cell.samples_ns),
                        "peers_median_ns": peer_med,
                        "peers_iqr_ns": iqr(pool),
                        "peers_max_ns": float(pool.max()),
                        "peers_n": int(pool.size),
                        "peer_ranks": len(used),
                        "peer_ranks_excluded": excluded,
                        "overlap": ov,
                        "alpha": params.alpha,
                        "t_diff_ns": cal.t_diff_ns,
                        "t_min_ns": cal.t_min_ns,
                        "cache_state": judgement.cache_state,
                        "context_bytes": cell.context_bytes,
                    },
                )
            )
    return result
