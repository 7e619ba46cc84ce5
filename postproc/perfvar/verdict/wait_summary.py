"""The wait states' summary in analysis.json, reduced from the parts' calls.

It grows with the ranks, not with their pairs: total waiting by pattern; per rank,
the waiting it suffered and caused and the ``TOP_CAUSES`` ranks it waited for most;
the ``TOP_PAIRS`` largest (waiting rank, cause) pairs; and the functions that
waited most (ns). Every rank waits for every other in the collectives of a job, so
all pairs would be ranks squared: 18 MB of the analysis at 1024 ranks.

Each part sums its own ranks' calls, a rank's calls in call order, and the sums
over the job are taken over the ranks' sums in rank order: the same additions in
the same order however the ranks are split into parts (perfvar.verdict.parts).
Pure functions over numpy arrays; thread-safe.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

import numpy as np

from perfvar.verdict.parts import Parts
from perfvar.verdict.wait_states import PATTERNS, CallPart, JobCalls

TOP_CAUSES = 3  # ranks listed per rank as those it waited for most
TOP_PAIRS = 100  # (waiting rank, cause) pairs listed over the job


def _part_sums(part: CallPart, _: Any = None) -> dict[str, np.ndarray]:
    """The part's waiting summed per rank (its ranks ascending): by pattern
    (``pattern``, and how many calls: ``count``), by function (``function``), in
    all (``total``), and its (waiting rank, cause) pairs (``pairs``: _Pairs).
    Summed a block of whole ranks
    at a time (_rank_blocks): a rank's sums are its calls' in call order all the
    same, and the temporaries stay those of a block."""
    tl, ws = part.tl, part.ws
    ranks = np.asarray(tl.ranks, dtype=np.int64)
    n, k, f = ranks.size, len(PATTERNS), len(tl.functions)
    out = {
        "pattern": np.zeros((n, k)),
        "count": np.zeros((n, k), dtype=np.int64),
        "function": np.zeros((n, f)),
        "total": np.zeros(n),
    }
    for r0, r1, lo, hi in _rank_blocks(tl.rank, ranks):
        row = np.searchsorted(ranks[r0:r1], tl.rank[lo:hi])  # each call's rank's row
        w, m = ws.waiting_ns[lo:hi], r1 - r0
        key = row * k + ws.pattern[lo:hi]
        out["pattern"][r0:r1] = np.bincount(key, w, m * k).reshape(m, k)
        out["count"][r0:r1] = np.bincount(key, minlength=m * k).reshape(m, k)
        key = row * f + tl.function[lo:hi]
        out["function"][r0:r1] = np.bincount(key, w, m * f).reshape(m, f)
        out["total"][r0:r1] = np.bincount(row, w, m)
    out["pairs"] = _pairs_of(tl.rank, ws.cause, ws.waiting_ns)
    return out


def _rank_blocks(
    rank: np.ndarray, ranks: np.ndarray
) -> list[tuple[int, int, int, int]]:
    """(first row, end row, first call, end call) of blocks of whole ranks of about
    _PAIR_CHUNK calls (``rank``: each call's, ascending; ``ranks``: the rows)."""
    first = np.searchsorted(rank, ranks).tolist() + [rank.size]
    out, r0 = [], 0
    while r0 < ranks.size:
        r1 = max(r0 + 1, bisect.bisect_left(first, first[r0] + _PAIR_CHUNK, r0))
        r1 = min(r1, ranks.size)
        out.append((r0, r1, first[r0], first[r1]))
        r0 = r1
    return out


def summarise(parts: Parts, job: JobCalls, top: int = 10) -> dict:
    """analysis.json's ``wait_states`` from the parts' wait states (found by
    wait_states.find_in_parts, whose result ``job`` is): see the module docstring;
    ``top``: functions listed."""
    sums = parts.each(_part_sums)
    pairs = [s.pop("pairs") for s in sums]
    joined = {name: np.concatenate([s[name] for s in sums]) for name in sums[0]}
    del sums
    by_pattern = joined["pattern"].sum(axis=0)
    called = joined["count"].sum(axis=0)
    fns = joined["function"].sum(axis=0)
    ranked = np.argsort(-fns)[:top]
    return {
        "synchronised": job.synchronised,
        "collectives_matched": job.matched,
        "collectives_inconsistent": job.inconsistent,
        "total_ns": float(joined["total"].sum()),
        "by_pattern_ns": {
            PATTERNS[k]: float(by_pattern[k])
            for k in range(1, len(PATTERNS))
            if called[k]
        },
        **_by_pairs(pairs),
        "by_function_ns": {
            job.functions[k]: float(fns[k]) for k in ranked if fns[k] > 0
        },
        "wall_ns": job.wall_ns,
    }


def _by_rank(rank: np.ndarray, cause: np.ndarray, waiting_ns: np.ndarray) -> dict:
    """_by_pairs of the calls' pairs (each call's rank, cause rank and waiting)."""
    return _by_pairs([_pairs_of(rank, cause, waiting_ns)])


@dataclass
class _Pairs:
    """A part's (waiting rank, cause) pairs that waited, summarised where they
    are: each waiting rank's ``waiter`` (ascending) with its ``waited`` (ns) and
    ``count`` of pairs; its largest pairs (``causes``: (rank, cause, ns), at most
    TOP_CAUSES each, largest first); the part's TOP_PAIRS largest (``top``:
    waiter, cause, ns; largest first, ties in pair order); and every pair's cause
    and waiting (``whom``, ``sums``, in pair order), which the causes' totals add
    up over all the parts in pair order."""

    waiter: np.ndarray
    waited: np.ndarray
    count: np.ndarray
    causes: list[tuple[int, int, float]]
    top: tuple[np.ndarray, np.ndarray, np.ndarray]
    whom: np.ndarray
    sums: np.ndarray


def _pairs_of(rank: np.ndarray, cause: np.ndarray, waiting_ns: np.ndarray) -> _Pairs:
    """The _Pairs of calls (each call's rank, cause rank and waiting; the ranks in
    ascending order, a Timeline's)."""
    span = int(max(rank.max(initial=0), cause.max(initial=0))) + 1
    key, sums = _pair_sums(rank, cause, waiting_ns, span)
    waiter = (key // span).astype(np.int32)
    whom = (key % span).astype(np.int32)
    del key
    # The pairs come in pair order: each waiting rank's in one run.
    first = np.flatnonzero(np.r_[True, waiter[1:] != waiter[:-1]])[: waiter.size]
    ranks, count = waiter[first], np.diff(np.r_[first, waiter.size])
    waited = np.bincount(waiter, weights=sums, minlength=span)[ranks]
    big = _largest(sums, TOP_PAIRS)
    return _Pairs(
        ranks,
        waited,
        count,
        _largest_per_waiter(waiter, whom, sums),
        (waiter[big], whom[big], sums[big]),
        whom,
        sums,
    )


def _by_pairs(parts: list[_Pairs]) -> dict:
    """``wait_states``' per-rank entries from the parts' pairs (_Pairs, in rank
    order): ``by_rank`` (ranks that waited or made others wait, each with
    ``waited_ns``, ``caused_ns``, ``waited_for`` [[cause, ns], ...] largest first
    and at most TOP_CAUSES, ``waited_for_ranks`` how many it waited for),
    ``by_rank_pair_ns`` ("p<-q": p waited for q; the TOP_PAIRS largest) and
    ``rank_pairs`` (how many pairs there are)."""
    waiter = np.concatenate([p.waiter for p in parts])
    whom = np.concatenate([p.whom for p in parts])
    span = int(max(waiter.max(initial=0), whom.max(initial=0))) + 1
    # One addition a pair, in pair order over all the parts: a cause's total.
    caused = np.bincount(
        whom, weights=np.concatenate([p.sums for p in parts]), minlength=span
    )
    del whom
    waited = np.zeros(span)
    waited[waiter] = np.concatenate([p.waited for p in parts])
    count = np.zeros(span, dtype=np.int64)
    count[waiter] = np.concatenate([p.count for p in parts])
    causes: dict[int, list] = {}
    for p, q, t in (c for part in parts for c in part.causes):
        causes.setdefault(p, []).append([q, t])
    by_rank = [
        {
            "rank": r,
            "waited_ns": float(waited[r]),
            "caused_ns": float(caused[r]),
            "waited_for": causes.get(r, []),
            "waited_for_ranks": int(count[r]),
        }
        for r in np.nonzero((waited > 0) | (caused > 0))[0].tolist()
    ]
    # A pair among the job's largest is among its part's largest: the parts'
    # candidates in pair order, ranked as all the pairs would be.
    p, q, t = (np.concatenate(x) for x in zip(*(part.top for part in parts)))
    biggest = _largest(t, TOP_PAIRS)
    pairs = {f"{p[i]}<-{q[i]}": float(t[i]) for i in biggest.tolist()}
    n_pairs = sum(part.sums.size for part in parts)
    return {"by_rank": by_rank, "by_rank_pair_ns": pairs, "rank_pairs": n_pairs}


def _largest(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest ``values``, largest first, ties in index order:
    np.argsort(-values, kind="stable")[:k], without sorting every value (millions
    of rank pairs at thousands of ranks)."""
    if values.size > k:
        cut = values.size - k
        floor = np.partition(values, cut)[cut]  # the k-th largest
        at = np.flatnonzero(values >= floor)  # in index order
    else:
        at = np.arange(values.size)
    return at[np.argsort(-values[at], kind="stable")][:k]


def _largest_per_waiter(
    waiter: np.ndarray, whom: np.ndarray, sums: np.ndarray
) -> list[tuple[int, int, float]]:
    """(waiter, cause, ns) of each waiter's TOP_CAUSES largest pairs, waiters
    ascending, each's largest first, ties in pair order (``waiter`` ascending, as
    _pair_sums gives them): a waiter's largest pair taken TOP_CAUSES times over, one
    pass over the pairs each, not a sort of them all."""
    if waiter.size == 0:
        return []
    starts = np.flatnonzero(np.r_[True, waiter[1:] != waiter[:-1]])
    group = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, waiter.size]))
    left = sums.astype(np.float64)  # a copy: taken pairs become -inf
    picked = []
    for kth in range(TOP_CAUSES):
        top = np.maximum.reduceat(left, starts)
        hit = np.flatnonzero((left == top[group]) & (left > -np.inf))
        first = hit[np.r_[True, group[hit][1:] != group[hit][:-1]]] if hit.size else hit
        picked.append((group[first], np.full(first.size, kth), first))
        left[first] = -np.inf
    g, k, at = (np.concatenate(x) for x in zip(*picked))
    at = at[np.lexsort((k, g))]
    return list(zip(waiter[at].tolist(), whom[at].tolist(), sums[at].tolist()))


# Calls whose pairs are summed at once: bounds the temporaries (the pair of every
# call that waited in eight bytes, sorted, and its index held 240 MB at 10 M calls).
_PAIR_CHUNK = 1 << 20


def _pair_sums(
    rank: np.ndarray, cause: np.ndarray, waiting_ns: np.ndarray, span: int
) -> tuple[np.ndarray, np.ndarray]:
    """(every (waiting rank, cause) pair that waited, as ``rank * span + cause``
    ascending; the waiting of each, ns). A call that waited has a cause >= 0
    (WaitStates). With the calls in rank order (a Timeline's), a waiting rank's
    pairs are all in its own calls: they are summed a block of whole ranks of about
    _PAIR_CHUNK calls at a time, each call's waiting added in call order as one
    np.bincount over all the calls would, so to the bit."""
    cuts = [0, rank.size]
    if rank.size > _PAIR_CHUNK and np.all(rank[1:] >= rank[:-1]):
        firsts = rank[_PAIR_CHUNK::_PAIR_CHUNK]  # a rank at every chunk's start
        cuts = np.unique(np.r_[0, np.searchsorted(rank, firsts), rank.size]).tolist()
    keys, sums = [np.zeros(0, dtype=np.int64)], [np.zeros(0)]
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        w = waiting_ns[lo:hi] > 0
        # One integer per (waiting rank, cause): a 1-D unique, not a row-wise one.
        pair = rank[lo:hi][w].astype(np.int64) * span + cause[lo:hi][w]
        key, at = np.unique(pair, return_inverse=True)
        del pair
        keys.append(key)
        sums.append(
            np.bincount(at.ravel(), weights=waiting_ns[lo:hi][w], minlength=key.size)
        )
    return np.concatenate(keys), np.concatenate(sums)
