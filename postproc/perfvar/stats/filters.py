"""Measurement filters of the paper's §5.4: filter_cost and filter_os.

``filter_cost`` removes the timer's minimal cost t_e,std (ns) from every sample.
``filter_os`` removes samples disturbed by OS noise with an isolation forest and the
paper's β search (§5.4.2), implemented as follows:

1. The wall-clock durations (ns), one column. An isolation forest splits between
   the samples' own min and max, so no scaling is needed.
2. ``s`` = the isolation-forest score of every sample under a forest of 100 trees
   grown on them (perfvar.stats.isolation: scikit-learn's ``IsolationForest(
   n_estimators=100).score_samples`` algorithm, many distributions at once), in
   [-1, 0); lower = more anomalous.
3. Thresholds β_k = -0.60 - 0.01 k for k = 0, 1, ... while β_k >= min(s).
4. For each β_k keep the points with s >= β_k and record M_k = the largest kept
   wall-clock value. M is non-decreasing in k.
5. d = forward differences of M, m = mean(d). The first k with d_k > m gives the
   best boundary β_k: the next threshold would admit a point that raises the
   maximum by more than the average step, i.e. an OS-noise outlier.
6. Keep s >= β_k.

Fallbacks, chosen so that nothing beyond the paper's fixed bound is removed when the
search has no answer: if no score is below -0.60 (no threshold), if there is only one
threshold (no difference), or if no d_k exceeds m (all steps equal), the boundary is
the fixed bound -0.60, i.e. keep s >= -0.60. With fewer than 16 samples, or when all
samples are identical, nothing is filtered. The returned ``OsFilterInfo.method`` says
which case applied. :func:`filter_os_many` filters many distributions with their
forests grown together: the same results as one :func:`filter_os` each, faster.
Pure functions over arrays; thread-safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

import numpy as np

from perfvar.stats import isolation

BETA_START = -0.6  # the paper's empirical upper bound of the β search
BETA_STEP = 0.01
MIN_SAMPLES_OS = 16
N_ESTIMATORS = 100
RANDOM_STATE = 0


def filter_cost(
    samples_ns: np.ndarray, timer_overhead_ns: Optional[float]
) -> np.ndarray:
    """Subtract the timer's minimal cost (ns) from each sample (ns).

    Returns a new float64 array, clipped at 0 ns. An unknown overhead (None) is
    treated as 0 ns, i.e. the samples are returned unchanged (as a copy).
    """
    out = np.asarray(samples_ns, dtype=np.float64).copy()
    if timer_overhead_ns:
        out -= float(timer_overhead_ns)
        np.maximum(out, 0.0, out=out)
    return out


@dataclass
class OsFilterInfo:
    """How filter_os decided; ``beta`` is the score boundary used (None if skipped)."""

    n: int
    n_removed: int
    beta: Optional[float]
    method: str  # "beta search", "fixed bound", "skipped: n < 16", "skipped: constant"

    def to_json(self) -> dict:
        return {
            "n": self.n,
            "n_removed": self.n_removed,
            "beta": self.beta,
            "method": self.method,
        }


def best_beta(scores: np.ndarray, values: np.ndarray) -> tuple[float, str]:
    """The paper's β search over ``scores`` with the wall-clock ``values`` (ns).

    Returns (β, method) where method is "beta search" or "fixed bound"; see the
    module docstring for the exact rule.
    """
    lowest = float(np.min(scores))
    n_steps = int(np.floor((BETA_START - lowest) / BETA_STEP + 1e-9)) + 1
    if n_steps < 2:
        return BETA_START, "fixed bound"
    betas = BETA_START - BETA_STEP * np.arange(n_steps)
    # Largest kept value for each threshold, computed once over sorted scores.
    order = np.argsort(-scores, kind="stable")
    running_max = np.maximum.accumulate(values[order])
    kept = np.searchsorted(-scores[order], -betas, side="right")  # count s >= β
    if kept[0] == 0:
        # Degenerate: no score reaches the fixed bound. Search only the thresholds
        # that keep something (the last one, >= min(s), always keeps a point).
        betas, kept = betas[kept > 0], kept[kept > 0]
        if len(betas) < 2:
            return lowest, "fixed bound (no score >= -0.6: keep all)"
    maxima = running_max[kept - 1]
    diffs = np.diff(maxima)
    above = np.nonzero(diffs > diffs.mean())[0]
    if above.size == 0:
        return BETA_START, "fixed bound"
    return float(betas[above[0]]), "beta search"


def filter_os(
    samples: np.ndarray, n_estimators: int = N_ESTIMATORS
) -> tuple[np.ndarray, OsFilterInfo]:
    """Flag OS-noise samples (paper §5.4.2).

    ``samples``: shape (n,), wall-clock ns. ``n_estimators``: trees of the forest
    (fewer is faster and coarser). Returns (kept mask of shape (n,), info).
    """
    return filter_os_many([samples], n_estimators)[0]


def filter_os_many(
    distributions: Sequence[np.ndarray], n_estimators: int = N_ESTIMATORS
) -> list[tuple[np.ndarray, OsFilterInfo]]:
    """:func:`filter_os` of each distribution, the forests grown in batches."""
    values = [np.asarray(d, dtype=np.float64).ravel() for d in distributions]
    out: list = [None] * len(values)
    scored = []
    for i, v in enumerate(values):
        n = v.size
        skip = None
        if n < MIN_SAMPLES_OS:
            skip = f"skipped: n < {MIN_SAMPLES_OS}"
        elif np.all(v == v[0]):
            skip = "skipped: constant"
        if skip is None:
            scored.append(i)
        else:
            out[i] = (np.ones(n, dtype=bool), OsFilterInfo(n, 0, None, skip))
    forests = isolation.scores_many(
        [values[i] for i in scored], n_estimators, RANDOM_STATE
    )
    for i, scores in zip(scored, forests):
        beta, method = best_beta(scores, values[i])
        mask = scores >= beta
        out[i] = (
            mask,
            OsFilterInfo(mask.size, int(mask.size - mask.sum()), beta, method),
        )
    return out
