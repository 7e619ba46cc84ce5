"""perfvar.stats.compare against scipy's Mann-Whitney U and Welch t test,
statsmodels' BH and numpy's nanmedian."""

import warnings

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from perfvar.stats.compare import (
    fdr,
    mann_whitney_greater,
    nanmedian_columns,
    rank_sum_greater,
    welch_greater,
)


def _scipy(x, y):
    return float(mannwhitneyu(x, y, alternative="greater", method="asymptotic").pvalue)


@pytest.mark.parametrize("n,m", [(2, 2), (3, 50), (200, 7), (2000, 10_000)])
def test_same_p_value_as_scipy(n, m):
    rng = np.random.default_rng(n * 7 + m)
    for shift in (-0.3, 0.0, 0.01, 0.2):
        x = rng.normal(shift, 1.0, n)
        y = rng.normal(0.0, 1.0, m)
        assert rank_sum_greater(x, y) == pytest.approx(
            _scipy(x, y), rel=1e-12, abs=1e-300
        )
        # Quantised (a clock's ticks): many ties, within and across the sides.
        xq, yq = np.round(x * 4) / 4, np.round(y * 4) / 4
        assert rank_sum_greater(xq, yq) == pytest.approx(_scipy(xq, yq), rel=1e-12)


def test_extremes_and_ties():
    x, y = np.arange(10.0) + 100, np.arange(10.0)
    assert rank_sum_greater(x, y) == pytest.approx(_scipy(x, y), rel=1e-12)
    assert rank_sum_greater(y, x) == pytest.approx(_scipy(y, x), rel=1e-12)
    x, y = np.array([1.0, 1.0, 2.0]), np.array([1.0, 2.0, 2.0, 2.0])
    assert rank_sum_greater(x, y) == pytest.approx(_scipy(x, y), rel=1e-12)
    with pytest.raises(ValueError):
        rank_sum_greater(np.array([1.0, np.nan]), np.array([1.0, 2.0]))


@pytest.mark.parametrize("n,m", [(3, 5), (8, 40), (9, 9), (40, 8), (300, 1000)])
def test_mann_whitney_greater_is_scipy_s_default(n, m):
    # scipy's method="auto": exact with a side of 8 values or fewer and no tie,
    # else the normal approximation.
    rng = np.random.default_rng(n + 31 * m)
    for shift in (-0.5, 0.0, 0.3):
        x, y = rng.normal(shift, 1.0, n), rng.normal(0.0, 1.0, m)
        want = float(mannwhitneyu(x, y, alternative="greater").pvalue)
        assert mann_whitney_greater(x, y) == pytest.approx(want, rel=1e-12, abs=1e-300)
        xq, yq = np.round(x * 2) / 2, np.round(y * 2) / 2  # ties: asymptotic
        want = float(mannwhitneyu(xq, yq, alternative="greater").pvalue)
        assert mann_whitney_greater(xq, yq) == pytest.approx(want, rel=1e-12)
    with pytest.raises(ValueError):
        mann_whitney_greater(np.array([1.0, np.nan]), np.arange(20.0))


def test_fdr_is_statsmodels_benjamini_hochberg():
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(5)
    for i in range(300):
        p = rng.uniform(size=int(rng.integers(1, 120))) ** rng.choice([1, 8])
        if i % 3 == 0:
            p = np.round(p, 2)  # ties
        if i % 5 == 0:
            p[: p.size // 2] = 1.0
        want = [float(q) for q in multipletests(list(p), method="fdr_bh")[1]]
        assert fdr(list(p)) == want
    assert fdr([]) == []


def test_welch_greater_is_scipy_s_welch_t_test():
    from scipy.stats import ttest_ind_from_stats

    rng = np.random.default_rng(9)
    for _ in range(2000):
        n1, n2 = (int(x) for x in rng.integers(2, 500, 2))
        m1, m2 = (float(x) for x in rng.normal(size=2) * rng.choice([1e-3, 1, 1e4]))
        sd1, sd2 = (
            float(x) for x in np.abs(rng.normal(size=2)) * rng.choice([0, 1, 1e3], 2)
        )
        with np.errstate(all="ignore"):
            want = ttest_ind_from_stats(
                m1, sd1, n1, m2, sd2, n2, equal_var=False, alternative="greater"
            ).pvalue
        got = welch_greater(m1, sd1, n1, m2, sd2, n2)
        assert got == float(want) or (np.isnan(got) and np.isnan(want))


@pytest.mark.parametrize("seed", range(10))
def test_nanmedian_columns_gives_numpys_figures(seed):
    rng = np.random.default_rng(seed)
    rows = np.round(rng.normal(0, 1, (int(rng.integers(1, 6)), 40)), 1)
    rows[rng.random(rows.shape) < 0.3] = np.nan
    rows[:, 0] = np.nan  # a column with no value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = np.nanmedian(rows, axis=0)
    assert np.array_equal(nanmedian_columns(rows), expected, equal_nan=True)
