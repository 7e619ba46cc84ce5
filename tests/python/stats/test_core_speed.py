"""The core or the code from the fixed-work probes (perfvar.stats.core_speed)."""

import numpy as np
import pytest

from conftest import make_prepared
from perfvar.stats import core_speed


def _prep(factor, n=200, cv=0.01):
    """Two ranks, one segment class and a probe class; rank 1's probes ``factor``
    times as long (a function of the sample index, or a number)."""
    rng = np.random.default_rng(1)
    samples = {(0, r): 50_000.0 * (1 + cv * rng.standard_normal(n)) for r in (0, 1)}
    slower = factor(np.arange(n)) if callable(factor) else factor
    for r, f in ((0, 1.0), (1, slower)):
        samples[(1, r)] = 1000.0 * f * (1 + cv * rng.standard_normal(n))
    prep = make_prepared(samples, t_diff_ns=10.0)
    prep.probe_segment = 1
    prep.segment_ids[1] = "probe"
    return prep


def test_probes_at_their_peers_speed_make_a_gross_finding_more_work():
    speed = core_speed.of_rank(_prep(1.0), 1)
    assert abs(speed.shift_rel) < 0.005
    assert speed.ci_rel[0] <= speed.shift_rel <= speed.ci_rel[1]
    assert core_speed.decide(speed, 1.0) == core_speed.MORE


def test_probes_as_slow_as_a_gross_finding_make_it_the_core():
    speed = core_speed.of_rank(_prep(2.0), 1)
    assert speed.shift_rel == pytest.approx(1.0, abs=0.01)
    assert core_speed.decide(speed, 1.0) == core_speed.SLOWER
    # The detector already took the core's +100 % away: what is left is more work.
    assert core_speed.decide(speed, 1.0, explained_rel=1.0) == core_speed.MORE


def test_ten_percent_is_told_both_ways_and_three_percent_is_within_the_margin():
    # +10 %: probes at their peers' speed are more work, probes 10 % slower the core;
    # +3 %: half of it is inside the margin a probe carries (core_speed.SYSTEMATIC),
    # so neither can be told.
    same, slower = core_speed.of_rank(_prep(1.0), 1), core_speed.of_rank(_prep(1.10), 1)
    assert core_speed.decide(same, 0.10) == core_speed.MORE
    assert core_speed.decide(slower, 0.10) == core_speed.SLOWER
    for factor in (1.0, 1.03):
        speed = core_speed.of_rank(_prep(factor), 1)
        assert speed.ci_rel[1] - speed.ci_rel[0] < 0.01  # precise, but not enough
        assert core_speed.decide(speed, 0.03) == core_speed.UNTOLD, factor


def test_the_typical_probe_moves_by_its_share_between_clock_steps():
    # Probes of two discrete durations (a core's clock steps), one rank 7:6 and the
    # other 6:7: the medians sit on different steps, 5 % apart; the typical probes
    # differ by a fraction of that.
    fast, slow = 770.0, 810.0
    samples = {(0, r): np.full(13, 50_000.0) for r in (0, 1)}
    samples[(1, 0)] = np.array([fast] * 7 + [slow] * 6)
    samples[(1, 1)] = np.array([fast] * 6 + [slow] * 7)
    prep = make_prepared(samples, t_diff_ns=10.0)
    prep.probe_segment = 1
    prep.segment_ids[1] = "probe"
    speed = core_speed.of_rank(prep, 1)
    assert np.median(samples[(1, 1)]) / np.median(samples[(1, 0)]) - 1 > 0.05
    assert 0 < speed.shift_rel < 0.02


def test_the_window_reads_the_probes_of_that_stretch_only():
    # Rank 1's probes 50 % slower in the second half of the run only.
    prep = _prep(lambda i: np.where(i >= 100, 1.5, 1.0))
    cell = prep.cells[(1, 1)]
    mid = float(cell.start_ns[100])
    first = core_speed.of_rank(prep, 1, None, mid)
    second = core_speed.of_rank(prep, 1, mid, None)
    assert abs(first.shift_rel) < 0.01
    assert second.shift_rel == pytest.approx(0.5, abs=0.02)
    assert 90 <= second.n <= 100 and second.to_json()["window_ns"] == [mid, None]


def test_the_probes_alone_tell_a_core_only_beyond_their_margin():
    assert core_speed.slower_beyond_margin(core_speed.of_rank(_prep(2.0), 1))
    for factor in (1.0, 1.01):  # at their peers' speed, or within the margin
        assert not core_speed.slower_beyond_margin(core_speed.of_rank(_prep(factor), 1))
    assert not core_speed.slower_beyond_margin(None)


def test_too_few_probes_tell_nothing():
    prep = _prep(1.0, n=4)
    assert core_speed.of_rank(prep, 1) is None
    assert core_speed.decide(None, 2.0) == core_speed.UNTOLD
    assert core_speed.evidence(None, 2.0)["verdict"] == core_speed.UNTOLD


def test_typical_is_scipy_s_trim_mean():
    from scipy.stats import trim_mean

    rng = np.random.default_rng(4)
    for n in (1, 2, 3, 7, 100, 1001):
        a = rng.normal(size=(5, n))
        assert core_speed._typical(a[0]) == trim_mean(a[0], core_speed.TRIM)
        assert np.array_equal(
            core_speed._typical(a), trim_mean(a, core_speed.TRIM, axis=-1)
        )
        assert np.array_equal(
            core_speed._typical(a.T, axis=0), trim_mean(a.T, core_speed.TRIM, axis=0)
        )


@pytest.mark.parametrize("factor", [0.9, 0.97, 1.0, 1.03, 1.10, 2.0])
def test_may_be_more_never_rules_out_what_decide_calls_more(factor):
    prep = _prep(factor)
    speed = core_speed.of_rank(prep, 1)
    for excess in (0.001, 0.01, 0.05, 0.1, 0.5, 1.0, 3.0):
        if core_speed.decide(speed, excess) == core_speed.MORE:
            assert core_speed.may_be_more(prep, 1, excess), (factor, excess)
    # A probe as fast as its peers' and a finding far below the margin: ruled out.
    if factor == 1.0:
        assert not core_speed.may_be_more(prep, 1, 0.001)


@pytest.mark.parametrize(
    "probe_factor, faster", [(1.0, True), (0.5, False), (0.97, True)]
)
def test_probes_rule_out_a_core_as_fast_as_its_classes_say(probe_factor, faster):
    # A rank whose classes run 60 % faster than its peer's (-0.6): probes at their
    # peer's speed, or 3 % faster, rule that core out (less work); probes half as
    # long say the core is that fast.
    speed = core_speed.of_rank(_prep(probe_factor), 1)
    assert core_speed.not_faster(speed, -0.6) is faster
    assert core_speed.not_faster(None, -0.6) is False
