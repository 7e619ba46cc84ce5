"""Summary statistics and the paper's overlap measure (Algorithm 2, lines 18-25).

All inputs and outputs are in the unit of the samples (ns throughout perfvar).
Aggregates of fewer than two samples are refused with :class:`InsufficientSamples`
(a ValueError). Pure functions over arrays; thread-safe.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

MIN_AGGREGATE = 2


class InsufficientSamples(ValueError):
    """An aggregate was asked of fewer than MIN_AGGREGATE samples."""


def _checked(samples: np.ndarray, what: str = "samples") -> np.ndarray:
    a = np.asarray(samples, dtype=np.float64).ravel()
    if a.size < MIN_AGGREGATE:
        raise InsufficientSamples(
            f"{what}: {a.size} sample(s), at least {MIN_AGGREGATE} needed"
        )
    return a


@dataclass(frozen=True)
class Summary:
    """Robust and classical statistics of one sample set (unit of the samples)."""

    n: int
    median: float
    iqr: float  # p75 - p25
    mean: float
    std: float  # sample standard deviation (ddof=1)
    cv: float  # std / mean; inf when mean == 0
    p0_1: float  # 0.1th percentile
    p99_9: float  # 99.9th percentile
    min: float
    max: float

    def to_json(self) -> dict:
        return asdict(self)


def median(samples: np.ndarray) -> float:
    """Median; raises InsufficientSamples for n < 2."""
    return float(np.median(_checked(samples)))


def iqr(samples: np.ndarray) -> float:
    """Interquartile range p75 - p25; raises InsufficientSamples for n < 2."""
    q25, q75 = np.percentile(_checked(samples), [25, 75])
    return float(q75 - q25)


def cv(samples: np.ndarray) -> float:
    """Coefficient of variation std/mean (ddof=1), paper eq. 5; inf if mean == 0."""
    a = _checked(samples)
    mean = float(a.mean())
    return float(a.std(ddof=1) / mean) if mean != 0 else float("inf")


def summarize(samples: np.ndarray) -> Summary:
    """All statistics of Summary at once; raises InsufficientSamples for n < 2."""
    a = _checked(samples)
    p = np.percentile(a, [0.1, 25, 50, 75, 99.9])
    mean = float(a.mean())
    std = float(a.std(ddof=1))
    return Summary(
        n=int(a.size),
        median=float(p[2]),
        iqr=float(p[3] - p[1]),
        mean=mean,
        std=std,
        cv=std / mean if mean != 0 else float("inf"),
        p0_1=float(p[0]),
        p99_9=float(p[4]),
        min=float(a.min()),
        max=float(a.max()),
    )


def separated(ov: float, alpha: float) -> bool:
    """Algorithm 2's acceptance of one pair: resolved iff its overlap is < ``alpha``
    (an overlap equal to alpha is not resolved). Every t_diff search uses this."""
    return ov < alpha


def overlap(a0: np.ndarray, a1: np.ndarray, ties: bool = False) -> float:
    """Paper Algorithm 2 overlap: the fraction of ``a1`` samples below ``max(a0)``.

    With ``ties=True`` samples equal to ``max(a0)`` count as overlapping too: on a
    quantised clock (10 ns steps on a VM's TSC) two different chain lengths often read
    the same value, and the paper's strict ``<`` would call them separated.

    ``a0`` is the faster (reference) set, ``a1`` the slower candidate. 0.0 means
    every a1 sample is at least as slow as the slowest a0 sample (fully separated);
    values near 1 mean a1 is not slower. Raises InsufficientSamples when either
    set has fewer than two samples.
    """
    ref = _checked(a0, "reference set")
    cand = _checked(a1, "candidate set")
    below = cand <= ref.max() if ties else cand < ref.max()
    return float(np.count_nonzero(below) / cand.size)
