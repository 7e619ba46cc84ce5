"""Wait states: how long each MPI call waited, and for which rank (Scalasca's patterns).

The trace gives every compute segment of every (rank, thread); the MPI calls are the
gaps between consecutive segments of a thread (call k runs from segment k-1's end to
segment k's start, and is the MPI function at the end of segment k-1's key, see
perfvar.frames ``calls``). Only each rank's master thread (thread 0) is used: it is
the thread that makes the MPI calls in the codes perfvar serves. Times are ns since
the trace's time origin (the ranks' clocks on one time line, TraceSamples.trace_ns).

No message matching is read from the trace, so the wait states come from the call
timeline alone:

* **N x N collectives and barriers** (Allreduce, Alltoall(v/w), Allgather(v),
  Reduce_scatter(_block), Barrier): the k-th collective call of every rank is one
  instance. The ranks' sequences are matched exactly where the data allows: by
  position in the sequence of all collective calls when every rank made the same
  sequence of functions (MPI orders collectives per communicator, so one
  communicator makes this exact); else per function, when every rank made as many
  calls of it; else per call site; collectives none of these match are left out (a
  code that runs collectives on sub-communicators of different sizes). Waiting of
  rank r = (last rank's entry) - (r's entry), clipped to r's own call; its cause is
  the last rank in (Scalasca's "Wait at N x N" / "Wait at Barrier").
* **Rooted collectives** (Bcast, Reduce, Gather(v), Scatter(v)): the root is not
  in the timeline, so they are treated as N x N (clipped to the call, a rank that
  did not wait gets little); this is Scalasca's Late Broadcast for the non-roots
  and its Early Reduce for the root when the root is the one that entered first.
* **Blocking point-to-point** (Recv, Wait*, Sendrecv, Probe, Mrecv, and the
  sends, which block in rendezvous or synchronous mode): the waiting rank p was
  released by a peer entering MPI; the cause is the rank whose MPI entry is the
  last one before p's call's exit and inside p's call, and the waiting is that
  entry - p's entry (Late Sender; for a send, Late Receiver). Limits: with many
  ranks whose neighbours are unrelated, the last entry inside a long call may be
  a rank p does not talk to, so the cause can be wrong and the waiting is an upper
  bound (it is exact for two ranks, and for neighbours that exchange in lock
  step); the peer's entry is the one that released p only up to the peer's next
  entry (a sender that enters its next call, e.g. Irecv after Isend, before p
  leaves shifts p's waiting by that call's distance). Test* calls poll, they do
  not block: no wait state.

A timeline is **synchronised** when its collectives synchronise: an N x N
collective cannot let a rank leave before the last rank entered. Where most
matched instances do (beyond CLOCK_TOLERANCE_NS), the ranks' calls were not
synchronised on one time line (clocks not aligned, or a trace whose ranks ran
apart), and no waiting or cost can be read from it (``synchronised`` False).

Pure functions over numpy arrays; thread-safe.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from perfvar import heap
from perfvar.read.samples import in_rank_time_order
from perfvar.read.segments import parse_segment_key

NXN = frozenset(
    {
        "allreduce",
        "alltoall",
        "alltoallv",
        "alltoallw",
        "allgather",
        "allgatherv",
        "reduce_scatter",
        "reduce_scatter_block",
    }
)
BARRIER = frozenset({"barrier"})
ROOTED = frozenset({"bcast", "reduce", "gather", "gatherv", "scatter", "scatterv"})
COLLECTIVE = NXN | BARRIER | ROOTED
BLOCKING_P2P = frozenset(
    {
        "recv",
        "mrecv",
        "probe",
        "mprobe",
        "wait",
        "waitall",
        "waitany",
        "waitsome",
        "sendrecv",
        "sendrecv_replace",
        "send",
        "ssend",
        "rsend",
        "bsend",
    }
)
SENDS = frozenset({"send", "ssend", "rsend", "bsend"})
PATTERNS = (
    "none",
    "late_sender",
    "late_receiver",
    "wait_nxn",
    "wait_barrier",
    "wait_rooted",
)
NONE, LATE_SENDER, LATE_RECEIVER, WAIT_NXN, WAIT_BARRIER, WAIT_ROOTED = range(6)
# A collective whose ranks leave more than this before its last rank entered is
# inconsistent (clock alignment of one host is well within it; ns).
CLOCK_TOLERANCE_NS = 2000.0
USER_TIMER_CALLS = ("perfvar_start", "perfvar_stop")


def mpi_name(function: str) -> str:
    """``MPI_Waitall``, ``mpi_waitall_``, ``PMPI_Waitall`` -> ``waitall``."""
    name = function.strip().lower().rstrip("_")
    for prefix in ("pmpi_", "mpi_"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    return name.removesuffix("_f08")


TOP_CAUSES = 3  # ranks listed per rank as those it waited for most
TOP_PAIRS = 100  # (waiting rank, cause) pairs listed over the job


@dataclass
class Timeline:
    """The MPI calls of every rank's master thread, in rank then time order.

    Per call: ``rank``, ``enter_ns``/``leave_ns`` (ns since the trace origin),
    ``function`` (index into ``functions``, the MPI names as the segment keys give
    them), ``site`` (index into ``sites``, ``FN@module+0xOFF``), ``after`` (the
    sample index, into the trace's samples, of the segment that starts at its exit)
    and ``local`` (its position k on its rank: it sits between the rank's segments
    k-1 and k). ``segments`` lists, per rank, its master thread's samples in time
    order (indices into the trace's samples), with ``seg_start_ns`` aligned with
    them: the segment that ends at a call's entry is ``segments[rank][local - 1]``.
    The indices take 4 bytes (ranks, functions, sites and calls of a rank stay
    below 2^31; sample indices while the trace holds fewer samples), the times 8.
    A segment's end is not kept: its start plus its duration, where needed.
    """

    rank: np.ndarray
    enter_ns: np.ndarray
    leave_ns: np.ndarray
    function: np.ndarray
    site: np.ndarray
    after: np.ndarray
    local: np.ndarray
    functions: list[str]
    sites: list[str]
    segments: dict[int, np.ndarray] = field(default_factory=dict)
    seg_start_ns: dict[int, np.ndarray] = field(default_factory=dict)
    wall_ns: float = 0.0  # first segment start to last segment end, all ranks

    @property
    def n(self) -> int:
        return int(self.rank.size)

    @property
    def ranks(self) -> list[int]:
        return sorted(self.segments)

    def names(self) -> np.ndarray:
        """Per function (the index ``function`` holds), its MPI name normalised
        (mpi_name): a call's is ``names()[function]``, looked up where needed rather
        than held per call (an object pointer each, millions of them)."""
        return np.array([mpi_name(f) for f in self.functions] + [""], dtype=object)


def build_timeline(
    samples: np.ndarray,
    segment_keys: list[str],
    trace_ns: Callable[[np.ndarray], np.ndarray],
    probes: Optional[np.ndarray] = None,
) -> Timeline:
    """The master threads' MPI calls from segment samples (read.samples.SAMPLE_DTYPE).

    ``segment_keys``: the canonical key of each segment index; ``trace_ns``: ticks ->
    ns since the origin (TraceSamples.trace_ns); ``probes`` (PROBE_DTYPE): a
    fixed-work probe run in a call's gap is not MPI time, so the call starts after
    it. Calls ending segments cut by a user timer are left out.
    """
    # Built next to the trace's samples and the cells, at the analysis's peak: each
    # full-length temporary is let go as soon as it has served.
    index = sample_index_dtype(samples.size)
    mine = np.flatnonzero(samples["thread"] == 0).astype(index, copy=False)
    rank, starts = samples["rank"][mine], samples["start_ticks"][mine]
    sort = _by_rank_then_time(rank, starts)
    if sort is None:
        order = mine
    else:
        order, rank, starts = mine[sort], rank[sort], starts[sort]
    del mine, sort
    start = trace_ns(starts)
    del starts
    end = samples["duration_ns"][order]
    end += start  # start + duration: the same sum, without a third array
    parsed = [parse_segment_key(k) for k in segment_keys]
    site_names = [
        f"{p.end.function}@{p.end.fallback_site()}" if p.end else "?" for p in parsed
    ]
    fn_names = [p.end.function if p.end else "?" for p in parsed]
    sites = sorted(set(site_names))
    functions = sorted(set(fn_names))
    site_of = np.array([sites.index(s) for s in site_names] + [0], dtype=np.int32)
    fn_of = np.array([functions.index(f) for f in fn_names] + [0], dtype=np.int32)
    user = np.array([f.startswith(USER_TIMER_CALLS) for f in fn_names] + [True])
    bounds = np.flatnonzero(np.r_[True, rank[1:] != rank[:-1], True])
    # The call between samples i and i + 1 of one rank, unless a user timer cut it.
    between = rank[1:] == rank[:-1]
    seg = samples["segment"][order]
    between &= ~user[seg[:-1]]
    keep = np.flatnonzero(between).astype(index, copy=False)
    del between
    seg = seg[keep]
    function, site = fn_of[seg], site_of[seg]
    del seg
    call_rank = rank[keep]
    del rank
    enter = end[keep]
    wall_ns = float(end.max() - start.min()) if order.size else 0.0
    del end
    keep += 1  # from here: the sample that starts at each call's exit
    leave = start[keep]  # fancy indexing: already a copy, changed in place below
    after = order[keep]
    if probes is not None and probes.size and keep.size:
        _skip_probes(probes, trace_ns, call_rank, enter, leave)
    np.maximum(leave, enter, out=leave)
    tl = Timeline(
        rank=call_rank,
        enter_ns=enter,
        leave_ns=leave,
        function=function,
        site=site,
        after=after,
        local=_positions(keep, bounds),
        functions=functions,
        sites=sites,
        wall_ns=wall_ns,
    )
    for a, b in zip(bounds[:-1], bounds[1:]):
        if b > a:
            r = int(samples["rank"][order[a]])
            tl.segments[r] = order[a:b]
            tl.seg_start_ns[r] = start[a:b]
    return tl


def sample_index_dtype(n: int) -> type:
    """The integer type of an index into ``n`` samples: 4 bytes while they fit
    (the timeline holds a few such indices per call, millions of calls)."""
    return np.int32 if n < 2**31 else np.int64


def _positions(after: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Each call's position k on its rank (int32) from ``after``, the index in the
    rank-ordered samples of the segment at its exit (ascending), and ``bounds``, the
    first of each rank's samples (and the end): k = after - its rank's first. One
    subtraction per rank in place, not a full-length array of each call's first."""
    local = after.astype(np.int32)
    at = np.searchsorted(after, bounds)
    for a, lo, hi in zip(bounds[:-1].tolist(), at[:-1].tolist(), at[1:].tolist()):
        local[lo:hi] -= a
    return local


def _by_rank_then_time(rank: np.ndarray, start: np.ndarray) -> Optional[np.ndarray]:
    """The order that sorts by rank, then start (stable, as np.lexsort); None when
    they are in that order already, as the reader gives them (a location's events
    in time, the locations in rank order)."""
    if in_rank_time_order(rank, start):
        return None
    return np.lexsort((start, rank))


def _skip_probes(
    probes: np.ndarray,
    trace_ns: Callable[[np.ndarray], np.ndarray],
    rank: np.ndarray,
    enter: np.ndarray,
    leave: np.ndarray,
) -> None:
    """Move each call's entry past a probe that ran inside its gap (in place)."""
    p = probes[probes["thread"] == 0]
    p_start = trace_ns(p["start_ticks"])
    p_end = p_start + p["duration_ns"]
    for r in np.unique(rank):
        rows = np.flatnonzero(rank == r)
        mine = p["rank"] == r
        if not mine.any():
            continue
        p0, p1 = p_start[mine], p_end[mine]
        at = np.searchsorted(leave[rows], p0, side="left")
        ok = at < rows.size
        at, p0, p1 = at[ok], p0[ok], p1[ok]
        inside = (enter[rows[at]] <= p0) & (p1 <= leave[rows[at]])
        hit = rows[at[inside]]
        enter[hit] = np.maximum(enter[hit], p1[inside])


@dataclass
class WaitStates:
    """Per call of a Timeline: ``waiting_ns`` (0: none), ``cause`` (the rank waited
    for, -1: none), ``cause_call`` (index of the cause rank's call whose entry ended
    the waiting, -1: none), ``pattern`` (index into PATTERNS) and ``sync`` (the call
    synchronised its rank with others: a matched collective or a blocking
    point-to-point call). ``synchronised``: whether the timeline's collectives
    synchronise (see the module docstring); ``matched``/``inconsistent``: matched
    collective instances, and those a rank left before the last one entered."""

    waiting_ns: np.ndarray
    cause: np.ndarray
    cause_call: np.ndarray
    pattern: np.ndarray
    sync: np.ndarray
    synchronised: bool
    matched: int = 0
    inconsistent: int = 0

    def to_json(self, tl: Timeline, top: int = 10) -> dict:
        """A summary that grows with the ranks, not with their pairs: total waiting
        by pattern; per rank, the waiting it suffered and caused and the
        ``TOP_CAUSES`` ranks it waited for most; the ``TOP_PAIRS`` largest (waiting
        rank, cause) pairs; and the ``top`` functions by waiting (ns). Every rank
        waits for every other in the collectives of a job, so all pairs would be
        ranks squared: 18 MB of the analysis at 1024 ranks."""
        by_pattern = {
            PATTERNS[k]: float(self.waiting_ns[self.pattern == k].sum())
            for k in range(1, len(PATTERNS))
            if (self.pattern == k).any()
        }
        fns = np.bincount(
            tl.function, weights=self.waiting_ns, minlength=len(tl.functions)
        )
        ranked = np.argsort(-fns)[:top]
        return {
            "synchronised": self.synchronised,
            "collectives_matched": self.matched,
            "collectives_inconsistent": self.inconsistent,
            "total_ns": float(self.waiting_ns.sum()),
            "by_pattern_ns": by_pattern,
            **_by_rank(tl.rank, self.cause, self.waiting_ns),
            "by_function_ns": {
                tl.functions[k]: float(fns[k]) for k in ranked if fns[k] > 0
            },
            "wall_ns": tl.wall_ns,
        }


def _by_rank(rank: np.ndarray, cause: np.ndarray, waiting_ns: np.ndarray) -> dict:
    """``wait_states``' per-rank entries from each call's rank, cause rank and
    waiting (ns): ``by_rank`` (ranks that waited or made others wait, each with
    ``waited_ns``, ``caused_ns``, ``waited_for`` [[cause, ns], ...] largest first
    and at most TOP_CAUSES, ``waited_for_ranks`` how many it waited for),
    ``by_rank_pair_ns`` ("p<-q": p waited for q; the TOP_PAIRS largest) and
    ``rank_pairs`` (how many pairs there are)."""
    span = int(max(rank.max(initial=0), cause.max(initial=0))) + 1
    key, sums = _pair_sums(rank, cause, waiting_ns, span)
    waiter, whom = key // span, key % span
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
    return {"by_rank": by_rank, "by_rank_pair_ns": pairs, "rank_pairs": int(key.size)}


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


def _calls_by_rank(
    ranks: Iterable[int], of_rank: np.ndarray, calls: np.ndarray
) -> dict[int, np.ndarray]:
    """rank -> its calls among ``calls`` (``of_rank``: each call's rank), for the ranks
    of ``ranks`` that have any, each in the order of ``calls``. One stable sort by
    rank, not a pass over the calls per rank (ranks x calls)."""
    owner = of_rank[calls]
    order = np.argsort(owner, kind="stable")
    ranks = list(ranks)
    lo = np.searchsorted(owner[order], ranks, "left")
    hi = np.searchsorted(owner[order], ranks, "right")
    return {r: calls[order[a:b]] for r, a, b in zip(ranks, lo, hi) if b > a}


def _match_by_key(
    keyed: np.ndarray, per_rank: dict[int, np.ndarray], out: list[np.ndarray]
) -> dict[int, np.ndarray]:
    """Appends to ``out`` the instances of the keys (``keyed``: each call's key) that
    every rank called equally often, matched in call order (one block per key: an
    instance a row, a rank a column); returns each rank's calls left unmatched."""
    left: dict[int, list[np.ndarray]] = {r: [] for r in per_rank}
    for key in np.unique(np.concatenate([keyed[c] for c in per_rank.values()])):
        groups = {r: c[keyed[c] == key] for r, c in per_rank.items()}
        sizes = {g.size for g in groups.values()}
        if len(sizes) == 1 and sizes.pop() > 0:
            out.append(np.stack(list(groups.values()), axis=1))
            continue
        for r, g in groups.items():
            left[r].append(g)
    merged = {r: np.sort(np.concatenate(g)) for r, g in left.items() if g}
    return {r: c for r, c in merged.items() if c.size}


def _collective_instances(tl: Timeline, coll: np.ndarray) -> list[np.ndarray]:
    """Matched instances in blocks: 2-D arrays of call indices, an instance a row and
    one call per rank in its columns (see the module docstring for the order of the
    rules)."""
    per_rank = _calls_by_rank(tl.ranks, tl.rank, coll)
    if len(per_rank) < 2:
        return []
    seqs = [tl.function[c] for c in per_rank.values()]
    if all(s.size == seqs[0].size and np.array_equal(s, seqs[0]) for s in seqs):
        return [np.stack(list(per_rank.values()), axis=1)]
    out: list[np.ndarray] = []
    for keyed in (tl.function, tl.site):
        per_rank = _match_by_key(keyed, per_rank, out)
        if len(per_rank) < 2:
            break
    return out


def _of_function(tl: Timeline, names: frozenset[str]) -> np.ndarray:
    """Per call, whether its MPI function (mpi_name) is one of ``names``."""
    of_fn = np.array([mpi_name(f) in names for f in tl.functions] + [False])
    return of_fn[tl.function] if tl.n else np.zeros(0, dtype=bool)


def _pattern_of(names: np.ndarray) -> np.ndarray:
    """Per collective name, its pattern (barrier, N x N, else rooted)."""
    pat = np.full(names.size, WAIT_ROOTED, np.int64)
    pat[np.isin(names, list(NXN))] = WAIT_NXN
    pat[np.isin(names, list(BARRIER))] = WAIT_BARRIER
    return pat


def _collectives(
    tl: Timeline, block: np.ndarray, fn_names: np.ndarray, ws: WaitStates
) -> tuple[int, int]:
    """Fills ``ws`` for the matched instances of ``block`` (rows: instances, columns:
    ranks): each rank waits from its entry to the last rank's, clipped to its own
    call (``fn_names``: Timeline.names()). Returns (matched, inconsistent) among its
    N x N instances."""
    rows = np.arange(block.shape[0])
    e, lv = tl.enter_ns[block], tl.leave_ns[block]
    last = np.argmax(e, axis=1)
    e_last = e[rows, last]
    names = fn_names[tl.function[block[:, 0]]]
    rooted = np.isin(names, list(ROOTED))  # a rooted one lets some ranks leave early
    early = np.any(lv < (e_last - CLOCK_TOLERANCE_NS)[:, None], axis=1)
    # np.clip(e_last - e, 0, lv - e) in place: the same values, two arrays fewer.
    w = e_last[:, None] - e
    lv -= e
    np.clip(w, 0.0, lv, out=w)
    del e, lv
    w[rows, last] = 0.0
    last_call = block[rows, last]
    ws.sync[block] = True
    hit = w > 0
    calls = block[hit]
    ws.waiting_ns[calls] = w[hit]
    ws.cause[calls] = np.broadcast_to(tl.rank[last_call][:, None], block.shape)[hit]
    ws.cause_call[calls] = np.broadcast_to(last_call[:, None], block.shape)[hit]
    ws.pattern[calls] = np.broadcast_to(_pattern_of(names)[:, None], block.shape)[hit]
    return int((~rooted).sum()), int((early & ~rooted).sum())


# Calls of matched collective instances judged at once (see find).
_INSTANCE_CALLS = 1 << 20


# Exits searched in ascending order at once (see _at_or_before): enough for
# consecutive searches to land side by side, few enough to bound the temporaries.
_SEARCH_CALLS = 1 << 20


def _at_or_before(
    ascending: np.ndarray, times: np.ndarray, calls: np.ndarray
) -> np.ndarray:
    """Per call of ``calls``, the index of the last of ``ascending`` at or before its
    ``times`` (-1: none). The calls come in rank order, so their times jump across
    the whole run from one rank to the next, and each binary search over millions of
    entries then misses the cache at every step; searched in ascending order, a
    block of _SEARCH_CALLS at a time, consecutive ones land side by side (5x
    faster at 16384 ranks x 2500 calls)."""
    out = np.empty(calls.size, dtype=np.intp)
    for lo in range(0, calls.size, _SEARCH_CALLS):
        t = times[calls[lo : lo + _SEARCH_CALLS]]
        order = np.argsort(t, kind="stable")
        out[lo + order] = np.searchsorted(ascending, t[order], side="right")
    out -= 1
    return out


def find(tl: Timeline) -> WaitStates:
    """The wait states of every call of ``tl`` (see the module docstring)."""
    n = tl.n
    ws = WaitStates(
        waiting_ns=np.zeros(n),
        cause=np.full(n, -1, np.int32),  # a rank
        cause_call=np.full(n, -1, sample_index_dtype(n)),  # a call
        pattern=np.zeros(n, np.int8),  # an index into PATTERNS
        sync=np.zeros(n, dtype=bool),
        synchronised=False,
    )
    waiting, cause, cause_call, pattern = (
        ws.waiting_ns,
        ws.cause,
        ws.cause_call,
        ws.pattern,
    )
    fn_names = tl.names()
    matched = inconsistent = 0
    index = sample_index_dtype(n)  # call indices: 4 bytes while they fit
    coll = np.flatnonzero(_of_function(tl, COLLECTIVE)).astype(index, copy=False)
    for block in _collective_instances(tl, coll):
        # Instances are independent: a few rows at a time bound the temporaries
        # (about 50 bytes a call, 2 GB at 4096 ranks x 10^4 calls at once).
        rows = max(1, _INSTANCE_CALLS // max(1, block.shape[1]))
        for lo in range(0, block.shape[0], rows):
            m, i = _collectives(tl, block[lo : lo + rows], fn_names, ws)
            matched, inconsistent = matched + m, inconsistent + i
    # The pieces lived in the heap, below glibc's raised mmap threshold: their pages
    # back before the point-to-point step maps its own arrays (perfvar.heap).
    heap.give_back()
    del coll
    p2p = np.flatnonzero(_of_function(tl, BLOCKING_P2P)).astype(index, copy=False)
    ws.sync[p2p] = True
    if p2p.size:
        by_entry = np.argsort(tl.enter_ns, kind="stable").astype(index, copy=False)
        j = _at_or_before(tl.enter_ns[by_entry], tl.leave_ns, p2p)
        ok = j >= 0
        np.maximum(j, 0, out=j)
        cand = by_entry[j]
        del by_entry, j
        ok &= tl.enter_ns[cand] > tl.enter_ns[p2p]
        ok &= tl.rank[cand] != tl.rank[p2p]
        calls, cand = p2p[ok], cand[ok]
        waiting[calls] = tl.enter_ns[cand] - tl.enter_ns[calls]
        cause[calls] = tl.rank[cand]
        cause_call[calls] = cand
        sends = _of_function(tl, SENDS)[calls]
        pattern[calls] = np.where(sends, LATE_RECEIVER, LATE_SENDER)
    synchronised = matched > 0 and inconsistent <= matched / 2
    if matched == 0:
        # Without collectives, point-to-point waits are all there is to go by.
        synchronised = bool(p2p.size) and len(tl.ranks) > 1
    if not synchronised:
        waiting[:] = 0.0
        cause[:] = cause_call[:] = -1
        pattern[:] = NONE
    ws.synchronised, ws.matched, ws.inconsistent = synchronised, matched, inconsistent
    return ws
