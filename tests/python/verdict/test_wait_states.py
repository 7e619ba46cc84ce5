"""Wait states from the call timeline (perfvar.verdict.wait_states) on simulated runs."""

import numpy as np
import pytest
from waits_sim import LAT_NS, simulate

from perfvar.verdict import wait_states as W
from perfvar.verdict import wait_summary as S


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
    assert (
        ws.waiting_ns[(tl.rank == 1) & (tl.names()[tl.function] == "waitall")].max()
        < LAT_NS
    )


def test_ranks_that_ran_apart_give_no_wait_states():
    tl, ws = _states(simulate(extra=lambda r, k, c: 5000.0 * r, synchronised=False))
    assert not ws.synchronised
    assert ws.waiting_ns.sum() == 0.0


def test_the_kth_collective_of_each_rank_is_one_instance():
    tl, ws = _states(simulate(steps=20, extra=lambda r, k, c: 1000.0 * k * r))
    assert ws.matched == 20 and ws.inconsistent == 0
    # Rank 1 entered the k-th Allreduce 1000 k ns after rank 0: its k-th instance.
    mine = np.flatnonzero((tl.rank == 0) & (tl.names()[tl.function] == "allreduce"))
    # (each A lasts 100 us +- 0.1 %: +- a few hundred ns)
    assert ws.waiting_ns[mine] == pytest.approx(1000.0 * np.arange(20), abs=600.0)
    assert set(ws.cause_local[mine[1:]]) <= set(tl.local[tl.rank == 1].tolist())


@pytest.mark.parametrize("calls", [1, 4, 9, 1 << 20])
@pytest.mark.parametrize("synchronised", [True, False])
def test_collectives_a_few_instances_at_a_time_find_what_all_at_once_do(
    monkeypatch, calls, synchronised
):
    """4 ranks, random delays: the wait states, the matched and the inconsistent
    instances are the same whatever the number of calls judged at once (1 << 20:
    every instance in one go, the reference)."""
    rng = np.random.default_rng(5)
    delay = rng.random((4, 60)) * 8000.0
    trace = simulate(
        steps=60,
        nranks=4,
        extra=lambda r, k, c: float(delay[r, k]) * (c == "A"),
        synchronised=synchronised,
    )
    tl = W.build_timeline(trace.samples, trace.segments, trace.trace_ns)
    want = W.find(tl)
    monkeypatch.setattr(W, "_INSTANCE_CALLS", calls)
    got = W.find(tl)
    assert (got.matched, got.inconsistent, got.synchronised) == (
        want.matched,
        want.inconsistent,
        want.synchronised,
    )
    assert want.matched == 60 and (want.inconsistent > 0) == (not synchronised)
    for name in ("waiting_ns", "cause", "cause_local", "pattern", "sync"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
    assert not synchronised or want.waiting_ns.max() > 1000.0


def test_the_summary_grows_with_the_ranks_not_their_pairs():
    # 300 ranks, each waiting for every other once, rank r's wait for q being
    # (r + 1) * (q + 1) ns: 89 700 pairs, of which the summary lists the largest.
    n = 300
    r, q = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    other = r != q
    rank, cause = r[other], q[other]
    waiting = ((rank + 1) * (cause + 1)).astype(float)
    out = S._by_rank(rank, cause, waiting)
    assert out["rank_pairs"] == n * (n - 1)
    pairs = out["by_rank_pair_ns"]
    assert len(pairs) == S.TOP_PAIRS
    # The largest two are equal: in the order of the waiting rank.
    assert list(pairs)[:2] == [f"{n - 2}<-{n - 1}", f"{n - 1}<-{n - 2}"]
    assert len(out["by_rank"]) == n
    top = out["by_rank"][0]  # rank 0 waited most for the largest ranks
    assert [c for c, _ in top["waited_for"]] == [n - 1, n - 2, n - 3][: S.TOP_CAUSES]
    assert top["waited_for_ranks"] == n - 1
    total = waiting.sum()
    assert sum(e["waited_ns"] for e in out["by_rank"]) == pytest.approx(total)
    assert sum(e["caused_ns"] for e in out["by_rank"]) == pytest.approx(total)
    # Rank 5 made every other rank p wait (p + 1) * 6 ns.
    assert out["by_rank"][5]["caused_ns"] == pytest.approx(6 * (n * (n + 1) / 2 - 6))


def _pair_sums_at_once(rank, cause, waiting):
    """The pairs and their sums in one pass over every call: np.unique, then one
    np.bincount."""
    w = waiting > 0
    span = int(max(rank.max(initial=0), cause.max(initial=0))) + 1
    key, at = np.unique(rank[w].astype(np.int64) * span + cause[w], return_inverse=True)
    return key, np.bincount(at.ravel(), weights=waiting[w], minlength=key.size)


@pytest.mark.parametrize("chunk", [1, 5, 64, 1 << 20])
def test_pair_sums_in_chunks_are_those_of_one_pass_to_the_bit(monkeypatch, chunk):
    """Calls of 6 ranks, many to a pair, waiting of every magnitude (sums that
    round) and none on a third of them, cut in chunks of any size, in rank order
    and shuffled."""
    monkeypatch.setattr(S, "_PAIR_CHUNK", chunk)
    rng = np.random.default_rng(3)
    rank = np.sort(rng.integers(0, 6, 4000)).astype(np.int32)  # a Timeline's order
    cause = rng.integers(0, 6, rank.size).astype(np.int32)
    waiting = rng.random(rank.size) * 10.0 ** rng.integers(-3, 9, rank.size)
    waiting[rng.random(rank.size) < 0.3] = 0.0
    span = int(max(rank.max(), cause.max())) + 1
    shuffled = rng.permutation(rank.size)  # not a Timeline's order: one pass
    for r, c, ns in [(rank, cause, waiting), (rank[shuffled], cause, waiting)]:
        key, sums = S._pair_sums(r, c, ns, span)
        want_key, want_sums = _pair_sums_at_once(r, c, ns)
        np.testing.assert_array_equal(key, want_key)
        assert sums.tolist() == want_sums.tolist()  # the same additions, one order
    assert S._pair_sums(rank[:0], cause[:0], waiting[:0], 1)[0].size == 0


@pytest.mark.parametrize("seed", range(5))
def test_the_largest_pairs_are_those_of_a_full_sort(seed):
    """The summary's largest pairs, over the job and per waiting rank, picked
    without sorting every pair: as a stable sort of them all lists them, ties
    (many: waiting on a grid) in pair order."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    waiter = np.sort(rng.integers(0, int(rng.integers(1, 60)), n))
    whom = rng.integers(0, 60, n)
    sums = rng.integers(1, 6, n).astype(float) * 10.0 ** rng.integers(0, 2, n)
    for k in (1, S.TOP_PAIRS, n, n + 5):
        want = np.argsort(-sums, kind="stable")[:k]
        assert S._largest(sums, k).tolist() == want.tolist()
    order = np.lexsort((-sums, waiter))
    first = np.searchsorted(waiter[order], waiter[order], side="left")
    listed = order[np.arange(order.size) - first < S.TOP_CAUSES]
    want = list(zip(waiter[listed].tolist(), whom[listed].tolist(), sums[listed]))
    assert S._largest_per_waiter(waiter, whom, sums) == want
    assert S._largest_per_waiter(waiter[:0], whom[:0], sums[:0]) == []


def test_calls_are_ordered_by_rank_then_time_sorted_or_not():
    # The reader gives them in order (identity, no sort); merged parts may not.
    rng = np.random.default_rng(2)
    rank = np.sort(rng.integers(0, 5, 300))
    start = np.concatenate(
        [np.sort(rng.integers(0, 50, (rank == r).sum())) for r in range(5)]
    )
    assert W._by_rank_then_time(rank, start) is None
    shuffled = rng.permutation(300)
    r, s = rank[shuffled], start[shuffled]
    order = W._by_rank_then_time(r, s)
    assert np.array_equal(order, np.lexsort((s, r)))
