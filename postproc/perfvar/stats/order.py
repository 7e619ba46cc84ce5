"""Order statistics of one 1-D array: np.median's and np.percentile's figures
(the default linear method), bit for bit, from one partial sort.

The detectors ask for a median or a few percentiles of every (class, rank) cell
and of every cell's 40 block shifts: hundreds of thousands of calls at thousands
of ranks. numpy's functions go through a generic reduction (axis handling, NaN
checks, a mean for the middle pair) that costs tens of microseconds a call on a
few dozen values; here one ``np.partition`` (or a sort the caller already made)
and a few float operations give the same figures:

* the median: the middle value, or (a + b) / 2 of the middle two, NaN when any
  value is NaN, as np.median (whose mean of the two is their sum over 2);
* the q-th percentile: the virtual index (n - 1) * q / 100 between two order
  statistics a and b at gamma past the first, interpolated as numpy's _lerp does
  (a + (b - a) * gamma, or b - (b - a) * (1 - gamma) from gamma 0.5), the last
  value at or beyond index n - 1.

The inputs are float64 (others are converted, as numpy's mean would); an empty
array gives NaN without numpy's warning. Pure functions; thread-safe.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def _floats(values: np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.float64).ravel()


def sorted_median(ascending: np.ndarray) -> float:
    """np.median of an array already in ascending order with no NaN."""
    n = ascending.size
    if n == 0:
        return math.nan
    lo, hi = float(ascending[(n - 1) // 2]), float(ascending[n // 2])
    return lo if n % 2 else (lo + hi) / 2


def sorted_percentile(ascending: np.ndarray, q: float) -> float:
    """np.percentile(values, q) of an array already in ascending order with no NaN
    (``q`` in percent, 0..100)."""
    n = ascending.size
    if n == 0:
        return math.nan
    virtual = (n - 1) * (q / 100)
    if virtual >= n - 1:
        return float(ascending[n - 1])
    below = math.floor(virtual)
    gamma = virtual - below
    a, b = float(ascending[below]), float(ascending[below + 1])
    diff = b - a
    return b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma


def median(values: np.ndarray) -> float:
    """np.median(values) of a 1-D array (NaN if any value is NaN or it is empty)."""
    a = _floats(values)
    n = a.size
    if n == 0:
        return math.nan
    # The last position too: NaN sorts last, so a NaN anywhere ends up there.
    part = np.partition(a, [(n - 1) // 2, n // 2, n - 1])
    if math.isnan(part[n - 1]):
        return math.nan
    return sorted_median(part)  # reads only the positions partitioned above


def percentiles(values: np.ndarray, qs: Sequence[float]) -> list[float]:
    """np.percentile(values, qs) of a 1-D array, one figure per q (percent); NaN
    for every q if any value is NaN or the array is empty."""
    a = _floats(values)
    n = a.size
    if n == 0:
        return [math.nan] * len(qs)
    at = {n - 1}
    for q in qs:
        below = min(math.floor((n - 1) * (q / 100)), n - 1)
        at.update((below, min(below + 1, n - 1)))
    part = np.partition(a, sorted(at))
    if math.isnan(part[n - 1]):
        return [math.nan] * len(qs)
    # Each figure reads only the positions partitioned above: in order there.
    return [sorted_percentile(part, q) for q in qs]
