"""perfvar.stats.local_speed and the slow-segment judgement it serves: a rank's
speed that swings faster than the blocks of the run, taken from each sample."""

from __future__ import annotations

import numpy as np

from conftest import make_prepared
from perfvar.detect import slow_segment
from perfvar.stats.local_speed import _bin_runs, _window_medians, corrected_cells
from perfvar.stats.summary import iqr

STEP_NS = 10e6  # one time step: every class once, 1.5 ms apart
STEPS = 800  # an 8 s run: blocks of 200 ms (perfvar.stats.blocks.BLOCKS = 40)
CLASSES = 6  # classes 1..5 every step; class 0 ("A") every 20th step only
SLOW = 1.5  # rank 0 runs 1.5x slower in the first half of every 200 ms


def _run(inject: float, seed: int = 3):
    """(samples, starts) of a two-rank run where rank 0's speed swings: x1.5 in steps
    0-9 of every 20, x1 in steps 10-19. Class A runs in step 5 of every 20, in the
    middle of rank 0's slow stretches; the other classes run in every step, so a
    block of 20 steps sees rank 0 at both speeds. ``inject``: rank 1's extra share
    in A."""
    rng = np.random.default_rng(seed)
    samples, starts = {}, {}
    for rank in (0, 1):
        for k in range(CLASSES):
            steps = np.arange(5, STEPS, 20) if k == 0 else np.arange(STEPS)
            base = 1e6 * (1 + 0.2 * k)
            speed = np.where((rank == 0) & (steps % 20 < 10), SLOW, 1.0)
            extra = 1 + inject if (k == 0 and rank == 1) else 1.0
            noise = np.exp(rng.normal(0, 0.02, steps.size))
            samples[(k, rank)] = base * speed * extra * noise
            starts[(k, rank)] = steps * STEP_NS + k * 1.5e6
    return samples, starts


def _prepared(inject: float):
    samples, starts = _run(inject)
    return make_prepared(samples, starts=starts)


def test_a_swing_of_the_rank_is_taken_from_each_sample():
    prep = _prepared(0.0)
    judgeable = set(prep.cells)
    corrected = corrected_cells(prep, judgeable)
    for k in range(CLASSES):
        raw = np.log(prep.cells[(k, 0)].samples_ns)
        fixed = np.log(corrected[(k, 0)].samples_ns)
        assert corrected[(k, 0)].share > 0.9
        if k:  # both speeds in the raw samples, one in most corrected ones (a
            # sample whose bins straddle a change of speed is between the two)
            assert iqr(raw) > 0.35 and iqr(fixed) < 0.05
        # Rank 0's class A, all slow raw, matches rank 1's once corrected.
        peer = np.log(corrected[(k, 1)].samples_ns)
        assert abs(np.median(fixed) - np.median(peer)) < 0.03


def test_a_class_slower_on_one_rank_is_named_despite_the_swing():
    # Per block, rank 0's class A (all slow) against its other classes (half slow)
    # looks 20 % slower and rank 1's +10 % is hidden; sample by sample it is not.
    found = slow_segment.detect(_prepared(0.10)).anomalies
    assert [(a.segment, a.rank) for a in found] == [("S0", 1)]
    assert 0.07 < found[0].evidence["excess_rel"] < 0.13


def test_the_swing_alone_names_nothing():
    assert slow_segment.detect(_prepared(0.0)).anomalies == []


# How much of the rank's speed each class follows: class 0 hardly (CloverLeaf has
# one such class, measured 0.06-0.54 over 19 runs), the others whole.
SENSITIVITY = (0.3, 1.0, 1.0, 1.0, 1.0, 1.0)


def _unequal_run(inject: float, seed: int = 5):
    """A two-rank run where rank 0's core is 25 % slower throughout and each rank's
    speed swings on its own (x1 or x1.3, stretches of 5-30 steps); class k follows
    SENSITIVITY[k] of it. ``inject``: rank 1's extra share in class 0."""
    rng = np.random.default_rng(seed)
    samples, starts = {}, {}
    steps = np.arange(STEPS)
    for rank in (0, 1):
        swing = np.ones(STEPS)
        at = 0
        while at < STEPS:
            span = int(rng.integers(5, 31))
            swing[at : at + span] = rng.choice([1.0, 1.3])
            at += span
        speed = swing * (1.25 if rank == 0 else 1.0)
        for k in range(CLASSES):
            extra = 1 + inject if (k == 0 and rank == 1) else 1.0
            noise = np.exp(rng.normal(0, 0.02, STEPS))
            base = 1e6 * (1 + 0.2 * k)
            samples[(k, rank)] = base * speed ** SENSITIVITY[k] * extra * noise
            starts[(k, rank)] = steps * STEP_NS + k * 1.5e6
    return make_prepared(samples, starts=starts)


def _named(prep, above: float) -> dict:
    """(segment, rank) -> excess of the slow segments found whose excess (relative)
    is over ``above``."""
    found = slow_segment.detect(prep).anomalies
    excess = {(a.segment, a.rank): a.evidence["excess_rel"] for a in found}
    return {k: x for k, x in excess.items() if x > above}


def test_each_class_follows_the_speed_as_much_as_it_does():
    prep = _unequal_run(0.0)
    corrected = corrected_cells(prep, set(prep.cells))
    for k, want in enumerate(SENSITIVITY):
        assert abs(corrected[(k, 0)].sensitivity - want) < 0.05
        mine = np.median(np.log(corrected[(k, 0)].samples_ns))
        peer = np.median(np.log(corrected[(k, 1)].samples_ns))
        assert abs(mine - peer) < 0.01  # as fast beyond their cores


def test_a_class_a_slower_core_hardly_slows_names_nobody():
    # Taken as following the speed whole, class 0 is 3 % faster beyond rank 0's
    # slower core than beyond rank 1's, and named on rank 1.
    assert _named(_unequal_run(0.0), above=0.01) == {}


def test_such_a_class_slower_on_one_rank_is_named_by_its_own_excess():
    named = _named(_unequal_run(0.10), above=0.02)
    assert list(named) == [("S0", 1)]
    assert 0.08 < named[("S0", 1)] < 0.12  # taken as 1: +13.5 %
    # and the sentence says how little of its rank's speed the class follows
    found = slow_segment.detect(_unequal_run(0.10)).anomalies
    a = next(a for a in found if (a.segment, a.rank) == ("S0", 1)).to_json()
    follows = a["evidence"]["speed_sensitivity"]
    assert abs(follows - 0.3) < 0.05
    text = slow_segment.describe(a, {})
    assert (
        "while its core runs " in text
        and " beyond its core, " in text
        and f"a class that follows {follows:.2f} of" in text
    )


def test_window_medians_are_those_of_each_row_bin_and_class():
    """_window_medians against a median taken per (row, bin, class) over the
    samples in that bin and its two neighbours, NaN where none is."""
    rng = np.random.default_rng(1)
    n, classes = 3000, 4
    row = rng.integers(0, 5, n)
    nbins = rng.integers(3, 40, 5)
    bins = (rng.random(n) * nbins[row]).astype(np.int64)
    cls = rng.integers(0, classes, n)
    resid = np.round(rng.normal(0, 1, n), 2)  # ties, an even count in some windows
    got = _window_medians(row, bins, cls, resid, nbins, classes)
    assert got.shape == (5, int(nbins.max()), classes)
    for r in range(5):
        for b in range(int(nbins.max())):
            for k in range(classes):
                near = (row == r) & (cls == k) & (np.abs(bins - b) <= 1)
                if b >= nbins[r] or not near.any():
                    assert np.isnan(got[r, b, k])
                else:
                    assert got[r, b, k] == np.median(resid[near])


def test_a_ranks_samples_read_their_bins_through_runs_within_each_cell():
    """Each sample's bin is its run's, a run never spans two cells, and samples in
    time order share one run a bin (out of order: still the right bins)."""
    rng = np.random.default_rng(4)
    cell = np.repeat([0, 1, 2], [300, 1, 200])
    bins = np.concatenate([np.sort(rng.integers(0, 40, 300)), [7],
                           rng.integers(0, 40, 200)])  # fmt: skip
    run, run_bin = _bin_runs(bins, cell)
    assert np.array_equal(run_bin[run], bins)
    assert all(len(set(cell[run == k])) == 1 for k in range(run_bin.size))
    assert run_bin[: run[299] + 1].tolist() == np.unique(bins[:300]).tolist()
    none = _bin_runs(bins[:0], cell[:0])
    assert none[0].size == 0 and none[1].size == 0
