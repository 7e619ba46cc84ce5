"""perfvar.stats.order against numpy's median and percentile, bit for bit."""

import math
import warnings

import numpy as np
import pytest

from perfvar.stats.order import (
    median,
    percentiles,
    sorted_median,
    sorted_percentile,
)

QS = (0, 1, 5, 25, 50, 75, 90, 99, 100, 33.3)


def _arrays(seed):
    """Arrays of every small size, odd and even, with ties (quantised values),
    heavy tails, integers and a few large ones."""
    rng = np.random.default_rng(seed)
    for n in list(range(1, 45)) + [99, 100, 2500, 10_001]:
        yield rng.lognormal(10, 1, n)
        yield np.round(rng.normal(0, 1, n), 1)  # ties
        yield rng.integers(0, 7, n)  # integers, many ties
        yield np.full(n, 3.25)


def _same(a, b):
    return a == b or (math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("seed", range(4))
def test_median_is_numpys(seed):
    for a in _arrays(seed):
        expected = float(np.median(a))
        assert _same(median(a), expected), a
        assert _same(sorted_median(np.sort(a.astype(np.float64))), expected), a


@pytest.mark.parametrize("seed", range(4))
def test_percentiles_are_numpys(seed):
    for a in _arrays(seed):
        expected = [float(x) for x in np.percentile(a, QS)]
        got = percentiles(a, QS)
        assert all(_same(g, e) for g, e in zip(got, expected)), (a, got, expected)
        s = np.sort(a.astype(np.float64))
        assert [sorted_percentile(s, q) for q in QS] == expected


def test_nan_and_empty_as_numpy():
    a = np.array([1.0, np.nan, 3.0, 2.0])
    assert math.isnan(median(a)) and math.isnan(float(np.median(a)))
    assert all(math.isnan(x) for x in percentiles(a, (25, 50)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert math.isnan(float(np.median(np.empty(0))))
    assert math.isnan(median(np.empty(0)))
    assert all(math.isnan(x) for x in percentiles(np.empty(0), (25, 75)))
    assert math.isnan(sorted_median(np.empty(0)))


def test_input_is_left_alone():
    a = np.array([5.0, 1.0, 4.0, 2.0, 3.0])
    before = a.copy()
    median(a), percentiles(a, (25, 75))
    assert np.array_equal(a, before)
