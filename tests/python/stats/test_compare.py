"""perfvar.stats.compare.rank_sum_greater against scipy's Mann-Whitney U."""

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from perfvar.stats.compare import rank_sum_greater


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
