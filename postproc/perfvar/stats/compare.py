"""Distribution-level comparison of one sample set against its peers.

Durations are compared on a log scale, so shifts are relative (0.01 = 1 % slower)
and a multiplicative effect (a slower core) is one shift whatever the segment's
length. The statistics come from scipy and statsmodels:

* shift: median(log x) - median(log y), i.e. the log of the ratio of the medians;
* p value: one-sided Mann-Whitney U (``x`` stochastically greater than ``y``;
  :func:`mann_whitney_greater` elsewhere, with scipy's choice of method),
  asymptotic, on at most ``TEST_CAP`` samples of each side taken evenly spaced
  (the samples come in time order, so the run is covered; at 10^4 a side the test
  resolves shifts far below the detectors' floors). It is scipy.stats.mannwhitneyu's
  statistic and p value (:func:`rank_sum_greater`, tested equal to it) computed from
  the two sides sorted apart: scipy ranks the pooled sample behind a generic
  wrapper, about 2.2 ms a call at 2000 against 10^4 samples, and the detectors
  make 9216 calls at 1024 ranks of 4 classes;
* confidence interval of the shift: percentile bootstrap of the difference of the
  medians (scipy.stats.bootstrap), on at most ``CI_CAP`` samples drawn from each
  side, so the interval is conservative for larger sets and its cost is bounded;
* multiple comparisons: Benjamini-Hochberg false discovery rate over a family of
  tests (statsmodels.stats.multitest's operations, :func:`fdr`).

Segments of a running application are autocorrelated (phases, frequency changes),
so the p values are optimistic for long runs; the effect floors of the detectors,
not the p values alone, keep clean runs clean. Pure functions; thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

CI_CAP = 4000  # samples per side in the bootstrap (cost bound)
TEST_CAP = 10_000  # samples per side in the rank test (cost bound)
CI_RESAMPLES = 400
CI_LEVEL = 0.95
MIN_NS = 1.0  # durations are clipped here before the log (a 0 ns sample is noise)


def log_ns(samples_ns: np.ndarray) -> np.ndarray:
    """Natural log of durations (ns), clipped at MIN_NS."""
    return np.log(np.maximum(np.asarray(samples_ns, dtype=np.float64), MIN_NS))


def rel(shift_log: float) -> float:
    """A log shift as a relative change (0.01 = 1 % slower)."""
    return float(np.expm1(shift_log))


@dataclass(frozen=True)
class Comparison:
    """``x`` against ``y``: log shift of the medians and one-sided p value."""

    shift_log: float
    p_value: float
    n: int
    m: int

    @property
    def shift_rel(self) -> float:
        return rel(self.shift_log)


def compare(
    x_log: np.ndarray,
    y_log: np.ndarray,
    offset_log: float = 0.0,
    center_log: Optional[float] = None,
) -> Comparison:
    """Is ``x_log - offset_log`` greater than ``y_log``? (both log ns)

    ``offset_log`` removes an effect already accounted for (the rank's core) before
    testing what is left. ``center_log``: the peers' centre the shift is measured
    from (default the median of ``y_log``; the median of the peer ranks' medians
    keeps one fast rank in a pool from moving it). Needs at least two samples on
    each side (else ValueError).
    """
    x = np.asarray(x_log, dtype=np.float64) - offset_log
    y = np.asarray(y_log, dtype=np.float64)
    if x.size < 2 or y.size < 2:
        raise ValueError(f"compare: {x.size} vs {y.size} samples, 2 needed each")
    center = float(np.median(y)) if center_log is None else center_log
    shift = float(np.median(x)) - center
    if np.all(x == x[0]) and np.all(y == x[0]):
        return Comparison(shift, 1.0, int(x.size), int(y.size))
    p = rank_sum_greater(evenly(x, TEST_CAP), evenly(y, TEST_CAP))
    return Comparison(shift, p, int(x.size), int(y.size))


def rank_sum_greater(x: np.ndarray, y: np.ndarray) -> float:
    """p value of the one-sided Mann-Whitney U test that ``x`` is stochastically
    greater than ``y``: the normal approximation with the tie and continuity
    corrections, as ``scipy.stats.mannwhitneyu(x, y, alternative="greater",
    method="asymptotic")`` gives it. Each side is sorted on its own and each x
    value's average rank in the pooled sample found by binary search. Raises
    ValueError on NaN, as scipy does."""
    from scipy.special import ndtr

    xs = np.sort(np.asarray(x, dtype=np.float64))
    ys = np.sort(np.asarray(y, dtype=np.float64))
    if np.isnan(xs[-1:]).any() or np.isnan(ys[-1:]).any():  # NaNs sort last
        raise ValueError("rank_sum_greater: x and y must not contain NaNs")
    n1, n2 = xs.size, ys.size
    x_lo, x_hi = np.searchsorted(xs, xs, "left"), np.searchsorted(xs, xs, "right")
    y_lo, y_hi = np.searchsorted(ys, xs, "left"), np.searchsorted(ys, xs, "right")
    # Pooled values below, then the middle of the run of equal ones. Ranks are
    # halves, so the sum is exact, as scipy's is.
    ranks = x_lo + y_lo + (x_hi - x_lo + y_hi - y_lo + 1) / 2
    u1 = float(ranks.sum()) - n1 * (n1 + 1) / 2
    # Ties: t^3 - t over the pooled sample's distinct values (t: how often each
    # occurs). Each run of equal x values with the y values equal to it, plus the y
    # values no x equals.
    first = x_lo == np.arange(n1)  # the first x of each run of equal ones
    t_x = (x_hi - x_lo + y_hi - y_lo)[first]
    cy_x = (y_hi - y_lo)[first]
    cy = np.diff(np.flatnonzero(np.r_[True, ys[1:] != ys[:-1], True]))
    ties = int(np.sum(t_x**3 - t_x) + np.sum(cy**3 - cy) - np.sum(cy_x**3 - cy_x))
    n = n1 + n2
    s = np.sqrt(n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (u1 - n1 * n2 / 2 - 0.5) / s
    return float(np.clip(ndtr(-z), 0.0, 1.0))


def mann_whitney_greater(x: np.ndarray, y: np.ndarray) -> float:
    """p value of ``scipy.stats.mannwhitneyu(x, y, alternative="greater")`` with its
    default method: exact when a side has at most 8 values and none ties (scipy's
    rule, imported then: scipy.stats takes about half a second to import, more than
    a two-rank analysis spends on its statistics), else :func:`rank_sum_greater`.
    Raises ValueError on NaN."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if min(x.size, y.size) <= 8:  # else rank_sum_greater checks for NaN itself
        both = np.concatenate([x, y])
        if np.isnan(both).any():
            raise ValueError("mann_whitney_greater: x and y must not contain NaNs")
        if np.unique(both).size == both.size:
            from scipy.stats import mannwhitneyu

            return float(mannwhitneyu(x, y, alternative="greater").pvalue)
    return rank_sum_greater(x, y)


def welch_greater(
    m1: float, sd1: float, n1: int, m2: float, sd2: float, n2: int
) -> float:
    """p value that a mean m1 (standard deviation sd1 over n1 values) exceeds m2 (sd2,
    n2): scipy.stats.ttest_ind_from_stats(..., equal_var=False, alternative="greater")
    computed in the same operations (Welch's degrees of freedom, a NaN one taken as 1,
    Student's t survival function from scipy.special), so the same figure (tested
    equal), without importing scipy.stats (about half a second). NaN where scipy's is.
    """
    from scipy.special import stdtr

    # 0-d arrays, as scipy's: their ** 2 is a product, a scalar's is pow().
    vn1 = np.asarray(sd1, dtype=np.float64) ** 2 / n1
    vn2 = np.asarray(sd2, dtype=np.float64) ** 2 / n2
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (vn1 + vn2) ** 2 / (vn1**2 / (n1 - 1) + vn2**2 / (n2 - 1))
        df = np.where(np.isnan(df), 1.0, df)
        diff = np.asarray(m1, np.float64) - np.asarray(m2, np.float64)
        t = np.divide(diff, np.sqrt(vn1 + vn2))
    return float(stdtr(df, -t))


def evenly(a: np.ndarray, cap: int) -> np.ndarray:
    """``a`` itself when it has at most ``cap`` values, else ``cap`` of them evenly
    spaced from its first to its last."""
    if a.size <= cap:
        return a
    return a[np.arange(cap) * (a.size - 1) // (cap - 1)]


def _capped(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return a if a.size <= CI_CAP else rng.choice(a, CI_CAP, replace=False)


def shift_ci(
    x_log: np.ndarray, y_log: np.ndarray, offset_log: float = 0.0, seed: int = 0
) -> tuple[float, float]:
    """95 % bootstrap interval of median(x - offset) - median(y), log scale."""
    from scipy.stats import bootstrap

    rng = np.random.default_rng(seed)
    x = _capped(np.asarray(x_log, dtype=np.float64), rng) - offset_log
    y = _capped(np.asarray(y_log, dtype=np.float64), rng)

    def diff(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.median(a, axis=axis) - np.median(b, axis=axis)

    res = bootstrap(
        (x, y),
        diff,
        n_resamples=CI_RESAMPLES,
        confidence_level=CI_LEVEL,
        method="percentile",
        vectorized=True,
        random_state=rng,
    )
    ci = res.confidence_interval
    return float(ci.low), float(ci.high)


def fdr(p_values: list[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p values (q values), in the same order: the
    operations of statsmodels' ``multipletests(p, method="fdr_bh")`` (tested equal),
    whose import takes scipy.stats and pandas with it (over half a second, more than
    a two-rank analysis spends on its statistics)."""
    if not p_values:
        return []
    p = np.asarray(p_values, dtype=np.float64)
    order = np.argsort(p)  # ties end equal whatever their order
    ranked = p[order] / (np.arange(1, p.size + 1) / float(p.size))
    q = np.minimum.accumulate(ranked[::-1])[::-1]
    q[q > 1] = 1
    out = np.empty_like(q)
    out[order] = q
    return [float(v) for v in out]


def nanmedian_columns(rows: np.ndarray) -> np.ndarray:
    """np.nanmedian(rows, axis=0) of a 2-D array: each column's median of its
    values not NaN (NaN where it has none), without a warning. The same figures
    (the middle value, or the mean of the middle two) by one sort of the columns:
    on the few rows of a rank's classes numpy's nanmedian takes a masked-array path
    that costs a hundred microseconds a call, and the detectors call it once for
    every (class, rank) cell."""
    s = np.sort(rows, axis=0)  # NaN sorts last
    n = np.count_nonzero(~np.isnan(rows), axis=0)
    lo = np.take_along_axis(s, np.maximum((n - 1) // 2, 0)[None, :], 0)[0]
    hi = np.take_along_axis(s, np.maximum(n // 2, 0)[None, :], 0)[0]
    with np.errstate(invalid="ignore"):
        mid = np.where(lo == hi, lo, (lo + hi) / 2)
    return np.where(n > 0, mid, np.nan)
