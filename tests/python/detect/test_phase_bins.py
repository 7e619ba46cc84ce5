"""A rank's peers' bin medians in slow_phase (perfvar.detect.slow_phase._PooledBins):
the pool's sorted bins without the rank's share give the figures of the pool copied
without it, bin for bin."""

import numpy as np

from perfvar.detect.slow_phase import MIN_PER_BIN, _PooledBins, _sorted_bin_medians


def _by_mask(values, idx, bins, lo, hi):
    keep = np.ones(values.size, dtype=bool)
    keep[lo:hi] = False
    order = np.lexsort((values[keep], idx[keep]))
    return _sorted_bin_medians(values[keep][order], idx[keep][order], bins)


def test_the_peers_bins_without_a_share_are_those_of_the_pool_without_it():
    rng = np.random.default_rng(3)
    bins = 12
    # Rounded values: ties within bins; few rows: bins at and below MIN_PER_BIN.
    values = np.round(rng.normal(0.0, 1.0, 160), 1)
    idx = rng.integers(0, bins, values.size)
    pooled = _PooledBins(values, idx, bins)
    shares = [(0, 0), (0, 5), (40, 41), (70, 95), (150, 160), (0, 160)]
    for lo, hi in shares:
        got, want = pooled.without(lo, hi), _by_mask(values, idx, bins, lo, hi)
        assert np.array_equal(got, want, equal_nan=True), (lo, hi)


def test_a_bin_left_with_too_few_samples_has_no_median():
    # Bin 1 holds MIN_PER_BIN values, one of them the rank's (row 0): without it,
    # too few; bin 0 keeps its median.
    values = np.array([5.0] + [1.0, 2.0, 3.0, 4.0] + [6.0] * (MIN_PER_BIN - 1))
    idx = np.array([1] + [0] * 4 + [1] * (MIN_PER_BIN - 1))
    pooled = _PooledBins(values, idx, 2)
    assert np.isfinite(pooled.without(0, 0)).all()
    got = pooled.without(0, 1)
    assert got[0] == 2.5 and np.isnan(got[1])
    assert np.array_equal(got, _by_mask(values, idx, 2, 0, 1), equal_nan=True)
