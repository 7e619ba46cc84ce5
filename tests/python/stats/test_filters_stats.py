"""filter_cost, filter_os (paper 5.4.2) and the statistics on synthetic data."""

import numpy as np
import pytest

from perfvar.stats.filters import BETA_START, best_beta, filter_cost, filter_os
from perfvar.stats.summary import InsufficientSamples, iqr, median, overlap, summarize


def test_filter_cost_subtracts_overhead_and_clips_at_zero():
    out = filter_cost(np.array([100.0, 20.0, 5.0]), 11.2)
    np.testing.assert_allclose(out, [88.8, 8.8, 0.0])
    np.testing.assert_array_equal(filter_cost(np.array([3.0]), None), [3.0])


@pytest.mark.parametrize("seed", range(5))
def test_filter_os_removes_injected_outliers_and_keeps_bulk(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(1000.0, 5.0, 500)
    outliers = rng.choice(500, 10, replace=False)
    x[outliers] += rng.uniform(200.0, 2000.0, 10)
    mask, info = filter_os(x)
    assert not mask[outliers].any(), "every injected OS-noise sample is removed"
    bulk = np.setdiff1d(np.arange(500), outliers)
    assert mask[bulk].mean() >= 0.9, "the bulk is kept"
    assert info.method == "beta search"
    assert info.beta < BETA_START
    assert info.n_removed == int((~mask).sum())
    assert x[mask].max() < 1100.0


def test_filter_os_is_reproducible():
    x = np.random.default_rng(7).normal(1000.0, 5.0, 300)
    x[:3] += 500.0
    m1, i1 = filter_os(x)
    m2, i2 = filter_os(x)
    np.testing.assert_array_equal(m1, m2)
    assert i1.beta == i2.beta


def test_filter_os_skips_small_and_constant_inputs():
    mask, info = filter_os(np.arange(15.0))
    assert mask.all() and info.method == "skipped: n < 16" and info.n_removed == 0
    mask, info = filter_os(np.full(40, 7.0))
    assert mask.all() and info.method == "skipped: constant"


def test_best_beta_rules():
    values = np.array([10.0, 11.0, 12.0, 13.0, 500.0])
    # No score below -0.6: the fixed bound, which keeps everything here.
    scores = np.array([-0.4, -0.45, -0.5, -0.55, -0.58])
    assert best_beta(scores, values) == (BETA_START, "fixed bound")
    # The outlier enters at -0.70: the boundary just before that jump.
    scores = np.array([-0.4, -0.45, -0.5, -0.61, -0.70])
    beta, method = best_beta(scores, values)
    assert method == "beta search"
    assert beta == pytest.approx(-0.69)
    # Maxima never rise (outliers below the bulk): fall back to the fixed bound.
    values = np.array([13.0, 12.0, 11.0, 1.0, 0.5])
    assert best_beta(scores, values) == (BETA_START, "fixed bound")


def test_overlap_disjoint_identical_and_partial():
    a0 = np.arange(100.0)
    assert overlap(a0, a0 + 1000.0) == 0.0
    assert overlap(a0, a0) == pytest.approx(0.99)  # all but the maximum itself
    assert overlap(a0, a0 + 50.0) == pytest.approx(0.49)
    assert overlap(a0 + 1000.0, a0) == 1.0


def test_aggregates_refuse_fewer_than_two_samples():
    for func in (median, iqr, summarize):
        with pytest.raises(InsufficientSamples):
            func(np.array([1.0]))
    with pytest.raises(InsufficientSamples):
        overlap(np.array([1.0]), np.arange(10.0))


def test_summary_values():
    x = np.arange(1.0, 101.0)
    s = summarize(x)
    assert s.n == 100 and s.median == 50.5 and s.mean == 50.5
    assert s.iqr == pytest.approx(np.percentile(x, 75) - np.percentile(x, 25))
    assert s.cv == pytest.approx(x.std(ddof=1) / 50.5)
    assert s.p0_1 < 2.0 and s.p99_9 > 99.0
