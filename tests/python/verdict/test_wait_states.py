"""Wait states from the call timeline (perfvar.verdict.wait_states) on simulated runs."""

import numpy as np
import pytest
from waits_sim import LAT_NS, simulate

from perfvar.verdict import wait_states as W


def _states(trace):
    tl = W.build_timeline(trace.samples, trace.segments, trace.trace_ns)
    return tl, W.find(tl)


def test_last_into_the_allreduce_makes_the_others_wait():
    tl, ws = _states(simulate(extra=lambda r, k, c: 5000.0 * ((r, c) == (1, "A"))))
    kind = tl.names()[tl.function]
    mine = (tl.rank == 0) & (kind == "allreduce")
    assert ws.synchronised
    assert np.median(ws.waiting_ns[mine]) == pytest.approx(5000.0, abs=400.0)
    assert set(ws.cause[mine]) == {1}
    assert set(ws.pattern[mine]) == {W.WAIT_NXN}
    theirs = (tl.rank == 1) & (kind == "allreduce")
    assert ws.waiting_ns[theirs].max() == 0.0


def test_a_late_sender_makes_the_receiver_wait_in_waitall():
    tl, ws = _states(simulate(extra=lambda r, k, c: 3000.0 * ((r, c) == (1, "B"))))
    waitall = (tl.rank == 0) & (tl.names()[tl.function] == "waitall")
    assert np.median(ws.waiting_ns[waitall]) == pytest.approx(3000.0, abs=400.0)
    assert set(ws.cause[waitall]) == {1}
    assert set(ws.pattern[waitall]) == {W.LATE_SENDER}
    # Rank 1 entered last: it did not wait (its peer's entry is before its own).
    assert ws.waiting_ns[(tl.rank == 1) & (tl.names()[tl.function] == "waitall")].max() < LAT_NS


def test_ranks_that_ran_apart_give_no_wait_states():
    tl, ws = _states(simulate(extra=lambda r, k, c: 5000.0 * r, synchronised=False))
    assert not ws.synchronised
    assert ws.waiting_ns.sum() == 0.0


def test_the_kth_collective_of_each_rank_is_one_instance():
    tl, _ = _states(simulate(steps=20))
    coll = np.flatnonzero(tl.names()[tl.function] == "allreduce")
    inst = np.concatenate(W._collective_instances(tl, coll))  # an instance a row
    assert inst.shape == (20, 2)
    assert all(set(tl.rank[i]) == {0, 1} for i in inst)


def test_the_summary_grows_with_the_ranks_not_their_pairs():
    # 300 ranks, each waiting for every other once, rank r's wait for q being
    # (r + 1) * (q + 1) ns: 89 700 pairs, of which the summary lists the largest.
    n = 300
    r, q = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    other = r != q
    rank, cause = r[other], q[other]
    waiting = ((rank + 1) * (cause + 1)).astype(float)
    out = W._by_rank(rank, cause, waiting)
    assert out["rank_pairs"] == n * (n - 1)
    pairs = out["by_rank_pair_ns"]
    assert len(pairs) == W.TOP_PAIRS
    # The largest two are equal: in the order of the waiting rank.
    assert list(pairs)[:2] == [f"{n - 2}<-{n - 1}", f"{n - 1}<-{n - 2}"]
    assert len(out["by_rank"]) == n
    top = out["by_rank"][0]  # rank 0 waited most for the largest ranks
    assert [c for c, _ in top["waited_for"]] == [n - 1, n - 2, n - 3][: W.TOP_CAUSES]
    assert top["waited_for_ranks"] == n - 1
    total = waiting.sum()
    assert sum(e["waited_ns"] for e in out["by_rank"]) == pytest.approx(total)
    assert sum(e["caused_ns"] for e in out["by_rank"]) == pytest.approx(total)
    # Rank 5 made every other rank p wait (p + 1) * 6 ns.
    assert out["by_rank"][5]["caused_ns"] == pytest.approx(6 * (n * (n + 1) / 2 - 6))


def test_calls_are_ordered_by_rank_then_time_sorted_or_not():
    # The reader gives them in order (identity, no sort); merged parts may not.
    rng = np.random.default_rng(2)
    rank = np.sort(rng.integers(0, 5, 300))
    start = np.concatenate([np.sort(rng.integers(0, 50, (rank == r).sum())) for r in range(5)])
    assert W._by_rank_then_time(rank, start) is None
    shuffled = rng.permutation(300)
    r, s = rank[shuffled], start[shuffled]
    order = W._by_rank_then_time(r, s)
    assert np.array_equal(order, np.lexsort((s, r)))
