"""A rank's peers looked up without a pass over every rank (perfvar.stats.cells.Peers,
ClassBlocks.shifts, slow_segment's run excess): each against the straightforward
computation over all ranks, on cells made here with ranks missing from the class and
ranks left out that the class does not have."""

import numpy as np
import pytest

from conftest import make_prepared
from perfvar.detect.slow_segment import _Local
from perfvar.stats.blocks import class_blocks
from perfvar.stats.cells import class_pool, median_of_rest, rows_of
from perfvar.stats.compare import evenly

RANKS = [0, 2, 3, 5, 8, 9, 11]  # gaps: ranks 1, 4, 6 have no cell in the class


def _prepared(seed):
    rng = np.random.default_rng(seed)
    return make_prepared(
        {(0, r): 1000.0 * np.exp(rng.normal(0.01 * r, 0.02, 400)) for r in RANKS}
    )


LEAVE_OUTS = [
    (),
    (3,),
    (4,),
    (3, 8),
    (0, 2, 3, 5, 8, 9, 11),
    (2, 3, 5, 8, 9, 11),
    (6, 9),
]


def test_rows_of_finds_the_ranks_held_and_only_those():
    ranks = np.array(RANKS)
    assert rows_of(ranks, []).tolist() == []
    assert rows_of(ranks, [11, 1, 0, 12, 5, 5]).tolist() == [0, 3, 6]


@pytest.mark.parametrize("rank", RANKS + [4])
@pytest.mark.parametrize("leave_out", LEAVE_OUTS)
def test_peers_are_the_other_ranks_but_those_left_out_unless_none_would_stay(
    rank, leave_out
):
    pool = class_pool(_prepared(1), 0)
    peers = pool.peers(rank, leave_out)
    others = [q for q in RANKS if q != rank]
    expect = [q for q in others if q not in leave_out] or others
    assert peers.used == expect
    assert peers.excluded == sorted(set(others) - set(expect))
    assert peers.n_ranks == len(expect)
    rows = [RANKS.index(q) for q in expect]
    assert peers.center_log == pytest.approx(
        float(np.median(pool.log_medians[rows])), abs=0.0
    )
    take = np.isin(pool.owner, rows)
    assert peers.size == np.count_nonzero(take)
    assert np.array_equal(peers.samples_ns, pool.samples_ns[take])


@pytest.mark.parametrize("rank", RANKS)
@pytest.mark.parametrize("leave_out", LEAVE_OUTS)
def test_block_shifts_against_the_peers_not_left_out(rank, leave_out):
    blocks = class_blocks(_prepared(2), 0)
    others = [q for q in RANKS if q != rank]
    expect = [q for q in others if q not in leave_out] or others
    rows = [RANKS.index(q) for q in expect]
    centre = np.median(blocks.medians[rows], axis=0)
    got = blocks.shifts(rank, list(leave_out))
    assert np.allclose(
        got, blocks.medians[RANKS.index(rank)] - centre, rtol=0, atol=1e-12
    )


@pytest.mark.parametrize("rank", RANKS)
@pytest.mark.parametrize("leave_out", LEAVE_OUTS)
def test_run_excess_is_the_median_against_the_peers_median(rank, leave_out):
    rng = np.random.default_rng(3)
    medians = {q: float(v) for q, v in zip(RANKS, rng.normal(0, 1, len(RANKS)))}
    local = _Local(class_blocks(_prepared(3), 0), medians, 1.0)
    others = [q for q in RANKS if q != rank]
    expect = [q for q in others if q not in leave_out] or others
    centre = float(np.median([medians[q] for q in expect]))
    assert local.run_excess(rank, list(leave_out)) == medians[rank] - centre


@pytest.mark.parametrize("seed", range(20))
def test_the_median_of_the_rest_is_numpys_median_of_what_is_left(seed):
    rng = np.random.default_rng(seed)
    values = np.sort(rng.choice([1.0, 2.0, 2.5, 3.0], rng.integers(1, 30)))
    skip = np.sort(rng.choice(values.size, rng.integers(0, values.size), replace=False))
    rest = np.delete(values, skip)
    assert median_of_rest(values, skip) == float(np.median(rest))
    assert np.isnan(median_of_rest(values, np.arange(values.size)))


@pytest.mark.parametrize("cap", [5, 100, 2399, 2400, 10_000])
def test_the_others_evenly_are_the_peers_samples_evenly(cap):
    """ClassPool.others_log_evenly against compare.evenly over the peers' pooled
    samples, for every rank of the class and ranks it does not have, with the cap
    below, at and above the peers' count."""
    pool = class_pool(_prepared(5), 0)
    for rank in RANKS + [1, 4, 12]:
        want = evenly(pool.peers(rank).samples_log, cap)
        assert pool.others_log_evenly(rank, cap).tolist() == want.tolist()
