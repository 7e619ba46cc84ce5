"""Two-way robust decomposition of log-durations: class + rank + interaction.

The matrix holds one value per (segment class, rank): the median log-duration of
the cell (NaN where a cell is missing or not judged). Tukey's median polish splits
it into an overall level, a class effect (segment classes differ in length), a rank
effect (a core slower in everything) and a residual (the interaction: a rank slower
in one class only). Medians, not means, so one anomalous cell does not move the
effects of the others. With two ranks the interaction is symmetric by construction
(each residual is +-d/4), which is why the detectors use it as a description and
decide from cell-versus-peer tests. Pure function; thread-safe.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Optional

import numpy as np

POLISH_ROUNDS = 10


@dataclass(frozen=True)
class Decomposition:
    """Effects in log units (exp(x) - 1 is the relative effect)."""

    overall: float
    class_effect: np.ndarray  # shape (classes,)
    rank_effect: np.ndarray  # shape (ranks,)
    interaction: np.ndarray  # shape (classes, ranks), NaN where the cell is missing


def _nanmedian(a: np.ndarray, axis: int) -> np.ndarray:
    """Median over the finite values; 0 for a row or column with none."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices
        return np.nan_to_num(np.nanmedian(a, axis=axis))


def median_polish(matrix: np.ndarray) -> Decomposition:
    """Median polish of ``matrix`` (classes x ranks, NaN = missing)."""
    resid = np.array(matrix, dtype=np.float64, copy=True)
    rows, cols = resid.shape
    row_eff, col_eff, overall = np.zeros(rows), np.zeros(cols), 0.0
    if not np.isfinite(resid).any():
        return Decomposition(overall, row_eff, col_eff, resid)
    for _ in range(POLISH_ROUNDS):
        r = _nanmedian(resid, axis=1)
        resid -= r[:, None]
        row_eff += r
        shift = float(np.median(col_eff))
        col_eff -= shift
        overall += shift
        c = _nanmedian(resid, axis=0)
        resid -= c[None, :]
        col_eff += c
        shift = float(np.median(row_eff))
        row_eff -= shift
        overall += shift
        if np.nanmax(np.abs(np.concatenate([r, c]))) < 1e-12:
            break
    return Decomposition(overall, row_eff, col_eff, resid)


def to_json(dec: Decomposition, class_ids: list[str], ranks: list[int]) -> dict:
    """Relative effects (0.01 = 1 % slower) keyed by class id and rank."""

    def pct(v: float) -> Optional[float]:
        return float(np.expm1(v)) if np.isfinite(v) else None

    return {
        "class_effect": {c: pct(v) for c, v in zip(class_ids, dec.class_effect)},
        "rank_effect": {str(r): pct(v) for r, v in zip(ranks, dec.rank_effect)},
        "interaction": {
            c: {str(r): pct(dec.interaction[i, j]) for j, r in enumerate(ranks)}
            for i, c in enumerate(class_ids)
        },
    }
