"""Evidence over stretches of time (perfvar.stats.blocks) in the slow_segment and
slow_core detectors, on synthetic cells made here.

make_prepared starts sample i of every cell at i x STEP_NS, so with n samples a
twentieth of the run, t, holds samples t n / 20 .. (t + 1) n / 20 (two of the
detectors' blocks when stats_blocks.BLOCKS is 40).
"""

import numpy as np
import pytest

from conftest import make_prepared
from perfvar import analysis
from perfvar.detect import slow_core, slow_segment
from perfvar.stats import blocks as stats_blocks
from perfvar.stats.model import DetectParams

N = 20_000  # samples per cell: a per-sample test calls +0.1 % significant


def _cells(seed, n=N, sigma=0.005, nranks=4, loc=(1000.0, 300.0)):
    """(segment, rank) -> log-normal durations (ns) around ``loc[segment]``."""
    rng = np.random.default_rng(seed)
    return {
        (seg, r): centre * np.exp(rng.normal(0.0, sigma, n))
        for seg, centre in enumerate(loc)
        for r in range(nranks)
    }


def _slow_in(samples, key, twentieths, factor, n=N):
    x, step = samples[key], n // 20
    for t in twentieths:
        x[t * step : (t + 1) * step] *= factor


def _judgement(result, rank, segment="S0"):
    return next(j for j in result.judgements if (j.rank, j.segment) == (rank, segment))


@pytest.mark.parametrize("seed", range(3))
def test_a_wobble_in_two_blocks_of_twenty_is_not_a_slow_segment(seed):
    # Rank 1 runs class S0 5 % slower in 2 of the 20 stretches of the run only (a
    # host wobble), on 2 % noise. Over 20 000 samples a per-sample Mann-Whitney U
    # gives p ~ 1e-20 and the median moves ~0.25 %, beyond the 0.2 % floor: a test
    # over samples names it. (+1 % in 2 blocks moves the median ~0.1 %, under the
    # floor, so it needs no new rule.) Over the blocks it is neither significant
    # nor steady.
    samples = _cells(seed, sigma=0.02)
    _slow_in(samples, (0, 1), (5, 13), 1.05)
    result = slow_segment.detect(make_prepared(samples, t_diff_ns=0.1))
    assert result.anomalies == []
    j = _judgement(result, 1)
    assert (
        j.shift_rel > 0.0015 and j.blocks == stats_blocks.BLOCKS
    )  # the run's median moved
    assert j.status != "slow" and j.steady_share < stats_blocks.STEADY_SHARE
    assert j.excess_rel < 0.001  # the median block did not
    assert j.q_value > 0.05


@pytest.mark.parametrize("seed", range(3))
def test_a_shift_in_part_of_the_run_is_unsteady_even_when_significant(seed):
    # +3 % in 8 of 20 blocks: the run's median excess (~0.5 %) clears the floor,
    # but the shift clears it in fewer than half of the blocks: a phase or the
    # host.
    samples = _cells(seed)
    _slow_in(samples, (0, 1), (1, 2, 5, 9, 11, 15, 16, 18), 1.03)
    result = slow_segment.detect(make_prepared(samples, t_diff_ns=0.1))
    assert result.anomalies == []
    j = _judgement(result, 1)
    assert j.status == "unsteady" and j.shift_rel > 0.004
    assert 0.3 <= j.steady_share < stats_blocks.STEADY_SHARE


@pytest.mark.parametrize("seed", range(3))
def test_a_steady_one_percent_is_named_with_its_steadiness(seed):
    samples = _cells(seed)
    _slow_in(samples, (0, 1), range(20), 1.01)
    result = slow_segment.detect(make_prepared(samples, t_diff_ns=1.0))
    assert [(a.rank, a.segment) for a in result.anomalies] == [(1, "S0")]
    ev = result.anomalies[0].evidence
    assert ev["steady_share"] >= 0.95 and ev["blocks"] == stats_blocks.BLOCKS
    assert ev["blocks_above_floor"] >= 0.95 * stats_blocks.BLOCKS
    assert ev["excess_rel"] == pytest.approx(0.01, abs=0.001)
    lo, hi = ev["excess_ci_rel"]
    assert 0.008 < lo < ev["excess_rel"] < hi < 0.012
    assert ev["block_spread_rel"] < 0.003
    assert len(ev["block_shifts_rel"]) == stats_blocks.BLOCKS
    assert "blocks of the run" in ev["test"]


@pytest.mark.parametrize("seed", range(3))
def test_a_slow_minute_of_the_host_on_every_rank_is_no_finding(seed):
    # Every rank 8 % slower in twentieths 8-10 of the run, as when the host is busy: inside each
    # block the peers are slower too, so nothing is left once they are subtracted.
    samples = _cells(seed)
    for key in samples:
        _slow_in(samples, key, (8, 9, 10), 1.08)
    for floors in ({}, {"segment_floor": 0.0005}):
        result = slow_segment.detect(
            make_prepared(samples, t_diff_ns=0.1), DetectParams(**floors)
        )
        assert result.anomalies == []
        assert {j.status for j in result.judgements} == {"ok"}
    assert slow_core.detect(make_prepared(samples)).anomalies == []


def test_a_cell_with_its_samples_in_too_few_blocks_is_not_tested():
    # Rank 1's 40 samples of S0 all began in the first 2 % of the class's span: one
    # stretch of time tells a steady shift from a wobble no better than one sample.
    samples = _cells(0, n=2000)
    samples[(0, 1)] = samples[(0, 1)][:40] * 1.3
    result = slow_segment.detect(make_prepared(samples))
    j = _judgement(result, 1)
    assert j.status == "too few blocks" and j.blocks < stats_blocks.MIN_BLOCKS
    assert result.anomalies == []


@pytest.mark.parametrize("seed", range(3))
def test_a_core_slow_in_part_of_the_run_is_not_a_slow_core(seed):
    # Rank 2 is 10 % slower in every class in 8 of 20 stretches: the pooled median
    # moves ~1 % (beyond a 0.5 % floor), and the block t test is significant, but
    # the shift clears the floor in 40 % of the run only.
    samples = _cells(seed, n=4000, sigma=0.01)
    for seg in (0, 1):
        _slow_in(samples, (seg, 2), range(2, 10), 1.10, n=4000)
    params = DetectParams(core_floor=0.005)
    assert slow_core.detect(make_prepared(samples), params).anomalies == []
    # Steady over the run, the same core is named, with its steadiness.
    steady = _cells(seed, n=4000, sigma=0.01)
    for seg in (0, 1):
        steady[(seg, 2)] *= 1.01
    found = slow_core.detect(make_prepared(steady), params).anomalies
    assert [a.rank for a in found] == [2]
    assert found[0].evidence["steady_share"] >= 0.9


def test_block_medians_are_the_medians_of_each_stretch():
    rng = np.random.default_rng(3)
    t = np.sort(rng.uniform(0, 1000, 500))
    v = rng.normal(5.0, 1.0, 500)
    edges = stats_blocks.block_edges(0.0, 1000.0, 10)
    got = stats_blocks.block_medians(v, t, edges)
    ids = stats_blocks.block_of(t, edges)
    want = [np.median(v[ids == b]) if (ids == b).any() else np.nan for b in range(10)]
    np.testing.assert_allclose(got, want)
    # An empty stretch has no median.
    gap = stats_blocks.block_medians(v[t > 300], t[t > 300], edges)
    assert np.isnan(gap[:3]).all() and not np.isnan(gap[3:]).any()


def test_centre_without_each_is_the_median_of_the_other_rows():
    rng = np.random.default_rng(4)
    m = rng.normal(0, 1, (7, 5))
    m[2, 1] = m[5, 3] = np.nan
    got = stats_blocks.centre_without_each(m)
    for i in range(7):
        for b in range(5):
            others = np.delete(m[:, b], i)
            want = np.nan if np.isnan(m[i, b]) else np.nanmedian(others)
            np.testing.assert_allclose(got[i, b], want)


def test_block_test_is_a_sign_test_with_the_medians_interval():
    from scipy import stats

    d = np.array([0.011, 0.009, np.nan, 0.012, 0.008, 0.010, 0.0004, -0.1])
    bt = stats_blocks.block_test(d, floor_log=0.002)
    used = d[~np.isnan(d)]
    assert bt.blocks == 7 and bt.steady_share == pytest.approx(5 / 7)
    # 6 of the 7 blocks above 0, whatever the size of the seventh.
    assert bt.p_value == pytest.approx(stats.binom.sf(5, 7, 0.5))
    assert bt.median_log == pytest.approx(0.009)
    # 20 blocks: the 6th and 15th smallest, a 95.9 % interval of the median.
    lo, hi = stats_blocks.median_interval(np.arange(20.0)[::-1])
    assert (lo, hi) == (5.0, 14.0)
    few = stats_blocks.block_test(np.array([0.1, 0.1, 0.1]), floor_log=0.0)
    assert not few.tested and few.p_value == 1.0


def test_sign_test_and_order_statistic_are_scipy_s_binomial():
    # Whole numbers instead of scipy.stats (whose import is half a second): the
    # quantile equal, the tail within float rounding of scipy's.
    from scipy import stats

    for level in (0.95, 0.9):
        for n in range(1, 400):
            k = int(stats.binom.ppf((1 - level) / 2, n, 0.5))
            assert stats_blocks._order_statistic(n, level) == min(max(k, 1), (n + 1) // 2)
    for n in range(1, 120):
        for above in range(n + 1):
            want = stats.binomtest(above, n, 0.5, alternative="greater").pvalue
            assert stats_blocks._sign_test(above, n) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_a_core_drifting_against_its_peers_does_not_hide_a_steady_segment(seed):
    # Rank 1's core is 3 % faster or slower than its peers from block to block, in
    # every class alike (two vCPUs trading places), and S0 is steadily 0.5 % slower
    # on top. Against its peers alone the blocks scatter by +-3 %; beyond the drift
    # its other class shows in the same block, the 0.5 % is steady.
    samples = _cells(seed, loc=(1000.0, 300.0, 600.0))
    rng = np.random.default_rng(100 + seed)
    drift = np.exp(rng.choice([-0.03, 0.03], stats_blocks.BLOCKS))
    block = N // stats_blocks.BLOCKS
    for seg in (0, 1, 2):
        x = samples[(seg, 1)]
        for b in range(stats_blocks.BLOCKS):
            x[b * block : (b + 1) * block] *= drift[b]
    samples[(0, 1)] *= 1.005
    result = slow_segment.detect(make_prepared(samples, t_diff_ns=0.1))
    assert [(a.rank, a.segment) for a in result.anomalies] == [(1, "S0")]
    assert result.anomalies[0].evidence["steady_share"] >= 0.8
    assert result.anomalies[0].evidence["excess_rel"] == pytest.approx(0.005, abs=0.001)


@pytest.mark.parametrize("seed", range(3))
def test_a_slow_class_on_a_faster_core_is_told_from_the_rank_s_other_classes(seed):
    # Two ranks: rank 0's core is 10 % slower in every class; rank 1 runs S0 10 %
    # slower on top. Against its peer, rank 1's S0 looks as fast, and its other
    # classes 10 % faster. With three other classes their median is rank 1's core,
    # negative as it is, and S0 stands 10 % beyond it.
    samples = _cells(seed, n=4000, nranks=2, loc=(1000.0, 300.0, 600.0, 450.0))
    for seg in range(4):
        samples[(seg, 0)] *= 1.10
    samples[(0, 1)] *= 1.10
    result = slow_segment.detect(make_prepared(samples, t_diff_ns=0.1))
    assert [(a.rank, a.segment) for a in result.anomalies] == [(1, "S0")]
    assert result.anomalies[0].evidence["excess_rel"] == pytest.approx(0.10, abs=0.01)


@pytest.mark.parametrize("seed", range(3))
def test_with_one_other_class_a_faster_rank_is_not_taken_as_its_core(seed):
    # The same with two classes: rank 1 faster in S1 is as well rank 0 slower in
    # S1 alone (the mirror image), so rank 1's S0 is not named.
    samples = _cells(seed, n=4000, nranks=2)
    for seg in range(2):
        samples[(seg, 0)] *= 1.10
    samples[(0, 1)] *= 1.10
    result = slow_segment.detect(make_prepared(samples, t_diff_ns=0.1))
    assert (1, "S0") not in [(a.rank, a.segment) for a in result.anomalies]


def test_a_class_says_what_its_blocks_resolve():
    # The same class in two runs, its samples wandering 0.5 % around their centre in
    # one and 5 % in the other: the interval of each rank's excess over the blocks,
    # and the class's resolution in analysis.json (perfvar.analysis), are about ten
    # times wider in the second.
    resolution = []
    for sigma in (0.005, 0.05):
        cells = {k: v for k, v in _cells(7, n=4000, sigma=sigma).items() if k[0] == 0}
        result = slow_segment.detect(make_prepared(cells, t_diff_ns=0.1))
        for j in result.judgements:
            low, high = j.excess_ci_rel
            assert low < high
        resolution.append(analysis._resolution(result.judgements)["S0"])
    assert 5 * resolution[0] < resolution[1] < 0.05
