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

from typing import Any

import numpy as np

from perfvar.verdict.parts import Parts
from perfvar.verdict.wait_states import PATTERNS, CallPart, JobCalls

TOP_CAUSES = 3  # ranks listed per rank as those it waited for most
TOP_PAIRS = 100  # (waiting rank, cause) pairs listed over the job


def _part_sums(part: CallPart, _: Any = None) -> dict[str, np.ndarray]:
    """The part's waiting summed per rank (its ranks ascending): by pattern
    (``pattern``, and how many calls: ``count``), by function (``function``), in
    all (``total``), and per (waiting rank, cause) pair (``waiter``, ``whom``,
    ``pair``: every pair that waited, in pair order)."""
    tl, ws = part.tl, part.ws
    ranks = np.asarray(tl.ranks, dtype=np.int64)
    row = np.searchsorted(ranks, tl.rank)  # each call's rank's row
    n, k, f = ranks.size, len(PATTERNS), len(tl.functions)
    key = row * k + ws.pattern
    out = {
        "pattern": np.bincount(key, weights=ws.waiting_ns, minlength=n * k),
        "count": np.bincount(key, minlength=n * k),
    }
    del key
    out["function"] = np.bincount(
        row * f + tl.function, weights=ws.waiting_ns, minlength=n * f
    )
    out["total"] = np.bincount(row, weights=ws.waiting_ns, minlength=n)
    out["pattern"] = out["pattern"].reshape(n, k)
    out["count"] = out["count"].reshape(n, k)
    out["function"] = out["function"].reshape(n, f)
    span = int(max(tl.rank.max(initial=0), ws.cause.max(initial=0))) + 1
    pair, out["pair"] = _pair_sums(tl.rank, ws.cause, ws.waiting_ns, span)
    out["waiter"], out["whom"] = pair // span, pair % span
    return out


def summarise(parts: Parts, job: JobCalls, top: int = 10) -> dict:
    """analysis.json's ``wait_states`` from the parts' wait states (found by
    wait_states.find_in_parts, whose result ``job`` is): see the module docstring;
    ``top``: functions listed."""
    sums = parts.each(_part_sums)
    joined = {name: np.concatenate([s[name] for s in sums]) for name in sums[0]}
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
        **_by_pairs(joined["waiter"], joined["whom"], joined["pair"]),
        "by_function_ns": {
            job.functions[k]: float(fns[k]) for k in ranked if fns[k] > 0
        },
        "wall_ns": job.wall_ns,
    }


def _by_rank(rank: np.ndarray, cause: np.ndarray, waiting_ns: np.ndarray) -> dict:
    """_by_pairs of the calls' pairs (each call's rank, cause rank and waiting)."""
    span = int(max(rank.max(initial=0), cause.max(initial=0))) + 1
    key, sums = _pair_sums(rank, cause, waiting_ns, span)
    return _by_pairs(key // span, key % span, sums)


def _by_pairs(waiter: np.ndarray, whom: np.ndarray, sums: np.ndarray) -> dict:
    """``wait_states``' per-rank entries from every (waiting rank, cause) pair that
    waited, in pair order, and the waiting of each (ns): ``by_rank`` (ranks that
    waited or made others wait, each with ``waited_ns``, ``caused_ns``,
    ``waited_for`` [[cause, ns], ...] largest first and at most TOP_CAUSES,
    ``waited_for_ranks`` how many it waited for), ``by_rank_pair_ns`` ("p<-q": p
    waited for q; the TOP_PAIRS largest) and ``rank_pairs`` (how many pairs there
    are)."""
    span = int(max(waiter.max(initial=0), whom.max(initial=0))) + 1
    waited = np.bincount(waiter, weights=sums, minlength=span)
    caused = np.bincount(whom, weights=sums, minlength=span)
    causes: dict[int, list] = {}
    for p, q, t in _largest_per_waiter(waiter, whom, sums):
        causes.setdefault(p, []).append([q, t])
    count = np.bincount(waiter, minlength=span)
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
    biggest = _largest(sums, TOP_PAIRS)
    pairs = {f"{waiter[i]}<-{whom[i]}": float(sums[i]) for i in biggest.tolist()}
    return {"by_rank": by_rank, "by_rank_pair_ns": pairs, "rank_pairs": int(sums.size)}


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
