"""perfvar.stats.isolation against scikit-learn's IsolationForest, and its own contracts.

scikit-learn draws other random trees, so single scores differ; the expected score of a
point under the algorithm does not. With many trees both forests' scores converge to it,
and what the analysis uses them for (filter_os's kept samples) agrees on clear cases.
Inputs are fixed by seeds: nothing here depends on the machine's speed."""

import numpy as np
import pytest
from sklearn.ensemble import IsolationForest

from perfvar.stats import isolation
from perfvar.stats.filters import filter_os, filter_os_many


def _sklearn_scores(x: np.ndarray, trees: int) -> np.ndarray:
    forest = IsolationForest(n_estimators=trees, random_state=0).fit(x[:, None])
    return forest.score_samples(x[:, None])


def _noisy(n: int, seed: int) -> np.ndarray:
    """Timing-like samples: a quantised bulk with a few slow outliers and ties."""
    rng = np.random.default_rng(seed)
    x = np.round(rng.normal(1000.0, 10.0, n))
    k = max(1, n // 50)
    x[:k] += rng.uniform(50.0, 500.0, k)
    return x


@pytest.mark.parametrize("n", [20, 300, 3000, 25000])
def test_scores_converge_to_scikit_learns(n):
    # n = 20 and 300: psi = n and psi < n by keys; 3000 and 25000: by drawing.
    x = _noisy(n, seed=n)
    ours = isolation.scores(x, 1000)
    theirs = _sklearn_scores(x, 1000)
    # Each mean over 1000 trees has a standard error of about 0.003 here.
    assert np.max(np.abs(ours - theirs)) < 0.03
    assert abs(np.mean(ours - theirs)) < 0.005
    assert np.corrcoef(ours, theirs)[0, 1] > 0.99


def test_filter_os_keeps_what_scikit_learns_forest_keeps_on_clear_cases():
    from perfvar.stats.filters import best_beta

    for seed in range(5):
        x = _noisy(500, seed)
        mask, _ = filter_os(x)
        theirs = _sklearn_scores(x, 100)
        reference = theirs >= best_beta(theirs, x)[0]
        assert np.mean(mask == reference) > 0.97
        assert not mask[: 500 // 50].any() and not reference[: 500 // 50].any()


def test_a_distributions_scores_do_not_depend_on_its_batch():
    rng = np.random.default_rng(4)
    groups = [rng.normal(100.0, 3.0, n) for n in (17, 300, 300, 1000, 5000, 40)]
    together = isolation.scores_many(groups, 25)
    for g, scored in zip(groups, together):
        np.testing.assert_array_equal(scored, isolation.scores(g, 25))
    # Reordered and regrouped: the same bits.
    again = isolation.scores_many(groups[::-1], 25)[::-1]
    for a, b in zip(together, again):
        np.testing.assert_array_equal(a, b)


def test_samples_too_close_for_the_joint_search_are_scored_alike():
    # Two samples 1e-7 apart in a range of 1e6 (and many far apart): the affine map
    # that lets groups share one search would merge them, so the batch searches
    # each group by itself; the scores are those of the same samples shifted.
    x = np.concatenate([np.linspace(0.0, 1e6, 400), [5e5 + 1e-7]])
    batch = isolation.scores_many([x, np.arange(50.0)], 25)[0]
    np.testing.assert_allclose(batch, isolation.scores(x + 1.0, 25), atol=0.05)


def test_order_of_samples_only_permutes_the_scores():
    x = _noisy(700, 9)
    perm = np.random.default_rng(1).permutation(x.size)
    np.testing.assert_array_equal(isolation.scores(x[perm], 50), isolation.scores(x, 50)[perm])


def test_outliers_score_lowest_and_scores_lie_in_range():
    x = _noisy(1000, 3)
    s = isolation.scores(x, 100)
    assert np.all((s >= -1.0) & (s < 0.0))
    k = 1000 // 50
    assert s[:k].max() < np.median(s)


def test_constant_and_tiny_inputs():
    # All equal: the root is a leaf of n samples, every score -2^-1 = -0.5.
    np.testing.assert_allclose(isolation.scores(np.full(30, 7.0), 10), -0.5)
    two = isolation.scores(np.array([1.0, 2.0]), 10)
    np.testing.assert_allclose(two, [-0.5, -0.5])
    with pytest.raises(ValueError):
        isolation.scores(np.array([1.0]), 10)


def test_average_path_length_matches_its_definition():
    c = isolation.average_path_length(np.array([0, 1, 2, 3, 256]))
    h = np.log(2.0) + np.euler_gamma
    expected_3 = 2.0 * h - 2.0 * 2.0 / 3.0
    np.testing.assert_allclose(c[:4], [0.0, 0.0, 1.0, expected_3])
    assert c[4] == pytest.approx(2.0 * (np.log(255.0) + np.euler_gamma) - 2.0 * 255 / 256)


def test_filter_os_many_is_filter_os_of_each():
    rng = np.random.default_rng(2)
    cells = [rng.normal(500.0, 5.0, n) for n in (10, 64, 300, 2500)] + [np.full(20, 3.0)]
    cells[2][:4] += 300.0
    many = filter_os_many(cells)
    for c, (mask, info) in zip(cells, many):
        m1, i1 = filter_os(c)
        np.testing.assert_array_equal(mask, m1)
        assert info == i1


native_only = pytest.mark.skipif(
    isolation.native() is None, reason="libperfvar_stats not built"
)


def _shapes() -> list[np.ndarray]:
    """Groups of every size class the forest treats apart (under, at and over psi;
    over _KEYS_UP_TO, drawn with rejection), with ties, all equal, and outliers."""
    rng = np.random.default_rng(7)
    out = []
    for n in (2, 3, 17, 255, 256, 257, 1000, 2048, 2049, 9000):
        out += [
            np.exp(rng.normal(10.0, 0.05, n)),
            np.round(rng.normal(1000.0, 30.0, n)),
            np.full(n, 7.0),
            _noisy(n, int(n)),
        ]
    return out


@native_only
def test_the_native_forest_gives_the_numpy_forests_bits():
    # Alone and in numpy's batches (where groups share one search in a mapped space).
    groups = _shapes()
    batched = isolation._score_batch(groups[:24], 100, 0)
    lib = isolation.native()
    for g, b in zip(groups[:24], batched):
        np.testing.assert_array_equal(isolation._score_native(lib, g, 100, 0), b)
    for g in groups:
        np.testing.assert_array_equal(
            isolation._score_native(lib, g, 25, 3), isolation._score_batch([g], 25, 3)[0]
        )
