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

**Where the calls are.** The calls are found in parts of the ranks
(perfvar.verdict.parts: each a CallPart, a block of ranks' timeline beside the
samples it was built from), each where its samples were read, and only what
crosses the ranks is reduced in the reporting process: the matching rule (each
rank's sequence of collectives as a digest, its calls of each function and site),
each instance's latest entry (a max over the parts, the lowest rank on ties) and
earliest exit, and for each blocking call the latest entry into MPI of any rank
before its exit (each part answers for its ranks, the latest wins, the higher rank
on ties). The result is the same, call for call, however the ranks are split.

Pure functions over numpy arrays; thread-safe (a part's steps are run by one
thread).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from perfvar import heap
from perfvar.read.samples import in_rank_time_order
from perfvar.read.segments import parse_segment_key
from perfvar.verdict.parts import LocalParts, Parts

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
    first_ns: float = np.inf  # the first segment start (inf: no segment)
    last_ns: float = -np.inf  # the last segment end

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
        return mpi_names(self.functions)


def mpi_names(functions: list[str]) -> np.ndarray:
    """Per function of ``functions`` (a Timeline's), its MPI name (mpi_name), and
    "" after the last."""
    return np.array([mpi_name(f) for f in functions] + [""], dtype=object)


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
    if not rank.size:  # a part whose locations could not be read
        bounds = bounds[:1]
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
    first_ns = float(start.min()) if order.size else np.inf
    last_ns = float(end.max()) if order.size else -np.inf
    wall_ns = last_ns - first_ns if order.size else 0.0
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
        first_ns=first_ns,
        last_ns=last_ns,
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
    """Per call of a part's Timeline: ``waiting_ns`` (0: none), ``cause`` (the rank
    waited for, -1: none), ``cause_local`` (the position k, on the cause rank, of
    the call whose entry ended the waiting: Timeline.local; -1: none), ``pattern``
    (index into PATTERNS) and ``sync`` (the call synchronised its rank with others:
    a matched collective or a blocking point-to-point call). ``synchronised``,
    ``matched``, ``inconsistent``: the job's (JobCalls), set by find."""

    waiting_ns: np.ndarray
    cause: np.ndarray
    cause_local: np.ndarray
    pattern: np.ndarray
    sync: np.ndarray
    synchronised: bool = False
    matched: int = 0
    inconsistent: int = 0


@dataclass
class CallPart:
    """One block of ranks' calls where its samples are (perfvar.verdict.parts):
    ``samples`` (their segment and duration at least), the Timeline built from
    them (its ``after`` and ``segments`` index ``samples``) and, once found, its
    wait states. The other fields keep what one step of find leaves the next."""

    samples: np.ndarray
    tl: Timeline
    ws: Optional[WaitStates] = None
    blocks: list[np.ndarray] = field(default_factory=list)  # its instances' calls
    p2p: Optional[np.ndarray] = None  # its blocking point-to-point calls
    by_entry: Optional[np.ndarray] = None  # its calls by entry (stable)
    entries: Optional[np.ndarray] = None  # their entries (ns), ascending
    # rank -> its collective calls, from the matching to the instances' waiting
    collectives: dict[int, np.ndarray] = field(default_factory=dict)


def part_of(
    samples: np.ndarray,
    segment_keys: list[str],
    trace_ns: Callable[[np.ndarray], np.ndarray],
    probes: Optional[np.ndarray] = None,
    keep: Optional[Callable[[np.ndarray], np.ndarray]] = None,
) -> CallPart:
    """The CallPart of ``samples`` (build_timeline's arguments); ``keep`` narrows
    the samples it holds once the timeline is built (read.samples.durations_only)."""
    tl = build_timeline(samples, segment_keys, trace_ns, probes)
    return CallPart(keep(samples) if keep is not None else samples, tl)


@dataclass
class JobCalls:
    """The parts' calls as one job: ``ranks`` (those with master-thread segments),
    ``wall_ns`` (first segment start to last segment end), ``functions`` (the MPI
    functions that Timeline.function indexes, alike in every part) and the wait
    states' ``synchronised``, ``matched`` and ``inconsistent`` (WaitStates)."""

    ranks: list[int]
    wall_ns: float
    functions: list[str]
    synchronised: bool = False
    matched: int = 0
    inconsistent: int = 0
    p2p_calls: int = 0


def _head(part: CallPart, _: Any = None) -> tuple[list[int], Optional[tuple], list]:
    """A part's ranks, its (first start, last end) (None: no samples), functions."""
    tl = part.tl
    span = (tl.first_ns, tl.last_ns) if tl.last_ns >= tl.first_ns else None
    return tl.ranks, span, tl.functions


def _start(part: CallPart, _: Any = None) -> None:
    n = part.tl.n
    part.ws = WaitStates(
        waiting_ns=np.zeros(n),
        cause=np.full(n, -1, np.int32),  # a rank
        cause_local=np.full(n, -1, np.int32),  # a call's position on its rank
        pattern=np.zeros(n, np.int8),  # an index into PATTERNS
        sync=np.zeros(n, dtype=bool),
    )


def _of_function(tl: Timeline, names: frozenset[str]) -> np.ndarray:
    """Per function of the timeline, whether its MPI name (mpi_name) is one of
    ``names``: a call's is ``_of_function(tl, names)[tl.function[call]]``."""
    return np.isin(tl.names(), list(names))


def _calls_of(tl: Timeline, names: frozenset[str]) -> np.ndarray:
    """The calls whose MPI function is one of ``names``, ascending (call indices:
    4 bytes while they fit)."""
    calls = np.flatnonzero(_of_function(tl, names)[tl.function])
    return calls.astype(sample_index_dtype(tl.n), copy=False)


def _collective_calls(tl: Timeline) -> dict[int, np.ndarray]:
    """rank -> its collective calls in time order, for the timeline's ranks that
    made any."""
    coll = _calls_of(tl, COLLECTIVE)
    of_rank = tl.rank[coll]  # ascending: a Timeline's calls are in rank order
    lo = np.searchsorted(of_rank, tl.ranks, side="left").tolist()
    hi = np.searchsorted(of_rank, tl.ranks, side="right").tolist()
    return {r: coll[a:b] for r, a, b in zip(tl.ranks, lo, hi) if b > a}


def _collective_profile(part: CallPart, _: Any = None) -> dict[int, tuple]:
    """rank -> (digest of its sequence of collective functions, calls of each
    function) for the part's ranks that made collectives (kept in the part until
    _fill_collectives)."""
    tl = part.tl
    part.collectives = _collective_calls(tl)
    out = {}
    for r, calls in part.collectives.items():
        seq = tl.function[calls].astype(np.int32)
        digest = hashlib.sha256(seq.tobytes()).hexdigest()
        out[r] = (digest, np.bincount(seq, minlength=len(tl.functions)))
    return out


def _site_profile(part: CallPart, functions: list[int]) -> dict[int, np.ndarray]:
    """rank -> calls of each site among its collectives whose function is not one
    of ``functions`` (the matched ones), for the part's ranks with any left."""
    tl = part.tl
    return {
        r: np.bincount(tl.site[left], minlength=len(tl.sites))
        for r, left in _unmatched(part, functions).items()
    }


def _unmatched(part: CallPart, functions: list[int]) -> dict[int, np.ndarray]:
    """rank -> its collectives whose function is not one of ``functions``, for the
    part's ranks with any."""
    tl, out = part.tl, {}
    for r, calls in part.collectives.items():
        left = calls[~np.isin(tl.function[calls], functions)]
        if left.size:
            out[r] = left
    return out


@dataclass
class _Matching:
    """How the ranks' collectives are matched into instances (the module
    docstring's rules): by ``position`` in the sequence of every rank's collectives,
    else by each of ``functions``, then by each of ``sites`` among the calls left."""

    position: bool = False
    functions: list[int] = field(default_factory=list)
    sites: list[int] = field(default_factory=list)


def _equal_keys(counts: dict[int, np.ndarray]) -> list[int]:
    """The keys every rank of ``counts`` (rank -> calls of each key) called equally
    often, at least once."""
    table = np.stack(list(counts.values()))
    return np.flatnonzero((table == table[0]).all(axis=0) & (table[0] > 0)).tolist()


def _matching(parts: Parts) -> Optional[_Matching]:
    """The rule that matches the job's collectives (None: fewer than two ranks
    made any)."""
    profiles = {
        r: p for part in parts.each(_collective_profile) for r, p in part.items()
    }
    if len(profiles) < 2:
        return None
    if len({digest for digest, _ in profiles.values()}) == 1:
        return _Matching(position=True)
    rule = _Matching(functions=_equal_keys({r: c for r, (_, c) in profiles.items()}))
    left = {
        r: c
        for part in parts.each(_site_profile, rule.functions)
        for r, c in part.items()
    }
    if len(left) >= 2:
        rule.sites = _equal_keys(left)
    return rule


def _instance_blocks(part: CallPart, rule: _Matching) -> list[Optional[np.ndarray]]:
    """The part's calls of each block of instances (an instance a row, one of the
    part's ranks a column; None where it has no rank in the block): the position
    block, else one per matched function, then one per matched site."""
    tl = part.tl
    per_rank = part.collectives
    if rule.position:
        stacked = np.stack(list(per_rank.values()), axis=1) if per_rank else None
        return [stacked]
    out: list[Optional[np.ndarray]] = []
    for f in rule.functions:
        cols = [c[tl.function[c] == f] for c in per_rank.values()]
        out.append(np.stack(cols, axis=1) if cols else None)
    left = _unmatched(part, rule.functions)
    for s in rule.sites:
        cols = [c[tl.site[c] == s] for c in left.values()]
        out.append(np.stack(cols, axis=1) if cols else None)
    return out


# Calls of matched collective instances judged at once: bounds the temporaries
# (about 50 bytes a call, 2 GB at 4096 ranks x 10^4 calls at once).
_INSTANCE_CALLS = 1 << 20


def _row_chunks(block: np.ndarray) -> list[slice]:
    rows = max(1, _INSTANCE_CALLS // max(1, block.shape[1]))
    return [slice(lo, lo + rows) for lo in range(0, block.shape[0], rows)]


def _instance_partials(part: CallPart, rule: _Matching) -> list[Optional[tuple]]:
    """Per block of instances (None where the part has no rank in it): per instance,
    the part's latest entry (the lowest of its ranks on ties), that call's rank and
    position, the part's earliest exit and the function of its first rank's call.
    Keeps the blocks for _fill_collectives."""
    tl = part.tl
    part.blocks = _instance_blocks(part, rule)
    out = []
    for block in part.blocks:
        if block is None:
            out.append(None)
            continue
        latest, rank, local, leave = [], [], [], []
        for rows in _row_chunks(block):
            b = block[rows]
            e = tl.enter_ns[b]
            last = np.argmax(e, axis=1)
            call = b[np.arange(b.shape[0]), last]
            latest.append(e[np.arange(b.shape[0]), last])
            rank.append(tl.rank[call])
            local.append(tl.local[call])
            leave.append(tl.leave_ns[b].min(axis=1))
        parts = (np.concatenate(x) for x in (latest, rank, local, leave))
        out.append((*parts, tl.function[block[:, 0]]))
    return out


@dataclass
class _Instances:
    """Per block, per instance: the last rank's entry (ns), that rank, its call's
    position, and the instance's pattern."""

    latest: list[np.ndarray]
    rank: list[np.ndarray]
    local: list[np.ndarray]
    pattern: list[np.ndarray]


def _pattern_of(names: np.ndarray) -> np.ndarray:
    """Per collective name, its pattern (barrier, N x N, else rooted)."""
    pat = np.full(names.size, WAIT_ROOTED, np.int64)
    pat[np.isin(names, list(NXN))] = WAIT_NXN
    pat[np.isin(names, list(BARRIER))] = WAIT_BARRIER
    return pat


def _instances(
    partials: list[list[Optional[tuple]]], fn_names: np.ndarray
) -> tuple[_Instances, int, int]:
    """The parts' partials reduced, in rank order: an instance's last rank is the
    first with the latest entry, as over all its ranks at once. Also (matched,
    inconsistent) among the N x N instances: those a rank left before the last one
    entered (beyond CLOCK_TOLERANCE_NS)."""
    out = _Instances([], [], [], [])
    matched = inconsistent = 0
    for per_part in zip(*partials):
        given = [p for p in per_part if p is not None]
        latest, rank, local, leave, fn = (x.copy() for x in given[0])
        for e, r, k, lv, _ in given[1:]:
            later = e > latest  # strictly: the lower ranks keep ties
            latest[later], rank[later], local[later] = e[later], r[later], k[later]
            np.minimum(leave, lv, out=leave)
        names = fn_names[fn]
        # A rooted one lets some ranks leave early.
        rooted = np.isin(names, list(ROOTED))
        early = leave < latest - CLOCK_TOLERANCE_NS
        matched += int((~rooted).sum())
        inconsistent += int((early & ~rooted).sum())
        out.latest.append(latest)
        out.rank.append(rank)
        out.local.append(local)
        out.pattern.append(_pattern_of(names))
    return out, matched, inconsistent


def _fill_collectives(part: CallPart, inst: _Instances) -> None:
    """Each rank of the part waits from its entry to the last rank's, clipped to its
    own call; the last rank is the cause."""
    tl, ws = part.tl, part.ws
    for k, block in enumerate(part.blocks):
        if block is None:
            continue
        ws.sync[block] = True
        for rows in _row_chunks(block):
            b = block[rows]
            e, lv = tl.enter_ns[b], tl.leave_ns[b]
            # np.clip(latest - e, 0, lv - e) in place: two arrays fewer.
            w = inst.latest[k][rows][:, None] - e
            lv -= e
            np.clip(w, 0.0, lv, out=w)
            del e, lv
            hit = w > 0  # the last rank's own call: 0
            calls = b[hit]
            ws.waiting_ns[calls] = w[hit]
            for out, per_instance in (
                (ws.cause, inst.rank[k]),
                (ws.cause_local, inst.local[k]),
                (ws.pattern, inst.pattern[k]),
            ):
                out[calls] = np.broadcast_to(per_instance[rows][:, None], b.shape)[hit]
    part.blocks, part.collectives = [], {}


def _p2p_count(part: CallPart, _: Any = None) -> int:
    """The part's blocking point-to-point calls (kept), with its calls ordered by
    entry for the others' searches."""
    tl = part.tl
    part.p2p = _calls_of(tl, BLOCKING_P2P)
    part.ws.sync[part.p2p] = True
    by_entry = np.argsort(tl.enter_ns, kind="stable")
    part.by_entry = by_entry.astype(sample_index_dtype(tl.n), copy=False)
    part.entries = tl.enter_ns[by_entry]
    return int(part.p2p.size)


# Point-to-point calls a part asks about at once (see _latest_entries): enough for
# the searches to land side by side, few enough to bound the temporaries.
_SEARCH_CALLS = 1 << 20


def _p2p_exits(part: CallPart, lo: int) -> np.ndarray:
    """The exits (ns) of the part's point-to-point calls lo..lo + _SEARCH_CALLS."""
    return part.tl.leave_ns[part.p2p[lo : lo + _SEARCH_CALLS]]


def _latest_before(part: CallPart, times: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per time, the part's latest call entry at or before it, as (entry, rank,
    position; rank -1: none), the last in call order on ties. The times are
    searched in ascending order: the calls come in rank order, so their times jump
    across the whole run from one rank to the next, and each binary search over
    millions of entries would miss the cache at every step (5x slower at 16384
    ranks x 2500 calls)."""
    tl = part.tl
    if not part.by_entry.size:
        none = np.full(times.size, -1, np.int32)
        return np.zeros(times.size), none, none.copy()
    order = np.argsort(times, kind="stable")
    j = np.empty(times.size, dtype=np.intp)
    j[order] = np.searchsorted(part.entries, times[order], side="right")
    j -= 1
    call = part.by_entry[np.maximum(j, 0)]
    rank = tl.rank[call].astype(np.int32)
    rank[j < 0] = -1
    return tl.enter_ns[call], rank, tl.local[call]


def _latest_entries(answers: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """The parts' answers reduced, in rank order: the latest entry, the higher rank
    on ties (the last in the order of all calls, as one search over them all)."""
    latest, rank, local = (x.copy() for x in answers[0])
    for e, r, k in answers[1:]:
        take = (r >= 0) & ((rank < 0) | (e >= latest))
        latest[take], rank[take], local[take] = e[take], r[take], k[take]
    return latest, rank, local


def _late_senders(part: CallPart, given: tuple[int, tuple[np.ndarray, ...]]) -> None:
    """The part's point-to-point calls lo.. waited for the latest entry into MPI of
    another rank before their exit, if it came after their own entry."""
    lo, (latest, rank, local) = given
    tl, ws = part.tl, part.ws
    p2p = part.p2p[lo : lo + latest.size]
    ok = (rank >= 0) & (latest > tl.enter_ns[p2p]) & (rank != tl.rank[p2p])
    calls = p2p[ok]
    ws.waiting_ns[calls] = latest[ok] - tl.enter_ns[calls]
    ws.cause[calls] = rank[ok]
    ws.cause_local[calls] = local[ok]
    sends = _of_function(tl, SENDS)[tl.function[calls]]
    ws.pattern[calls] = np.where(sends, LATE_RECEIVER, LATE_SENDER)


def _finish(part: CallPart, job: JobCalls) -> None:
    ws = part.ws
    ws.synchronised, ws.matched, ws.inconsistent = (
        job.synchronised,
        job.matched,
        job.inconsistent,
    )
    if not job.synchronised:
        ws.waiting_ns[:] = 0.0
        ws.cause[:] = ws.cause_local[:] = -1
        ws.pattern[:] = NONE
    part.p2p = part.by_entry = part.entries = None
    part.collectives = {}  # left when fewer than two ranks made collectives


def find_in_parts(parts: Parts) -> JobCalls:
    """The wait states of every call of every part (each part's ``ws``; see the
    module docstring), and the parts as one job."""
    heads = parts.each(_head)
    ranks = sorted({r for rs, _, _ in heads for r in rs})
    spans = [s for _, s, _ in heads if s is not None]
    wall = max(b for _, b in spans) - min(a for a, _ in spans) if spans else 0.0
    job = JobCalls(ranks, float(wall), heads[0][2])
    parts.each(_start)
    fn_names = mpi_names(job.functions)
    rule = _matching(parts)
    if rule is not None:
        partials = parts.each(_instance_partials, rule)
        inst, job.matched, job.inconsistent = _instances(partials, fn_names)
        parts.each(_fill_collectives, inst)
        del inst, partials
    # The pieces lived in the heap, below glibc's raised mmap threshold: their pages
    # back before the point-to-point step maps its own arrays (perfvar.heap).
    heap.give_back()
    counts = parts.each(_p2p_count)
    job.p2p_calls = sum(counts)
    for lo in range(0, max(counts, default=0), _SEARCH_CALLS):
        asked = parts.each(_p2p_exits, lo)
        answers = parts.each(_latest_before, np.concatenate(asked))
        best = _latest_entries(answers)
        cuts = np.cumsum([0] + [a.size for a in asked])
        parts.each(
            _late_senders,
            per_part=[
                (lo, tuple(x[a:b] for x in best))
                for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist())
            ],
        )
    job.synchronised = job.matched > 0 and job.inconsistent <= job.matched / 2
    if job.matched == 0:
        # Without collectives, point-to-point waits are all there is to go by.
        job.synchronised = job.p2p_calls > 0 and len(job.ranks) > 1
    parts.each(_finish, job)
    return job


def one_part(samples: np.ndarray, tl: Timeline) -> LocalParts:
    """Every rank's calls as one part in this process."""
    return LocalParts([CallPart(samples, tl)])


def find(tl: Timeline) -> WaitStates:
    """The wait states of every call of ``tl``, found as one part."""
    parts = one_part(np.zeros(0), tl)
    find_in_parts(parts)
    return parts.parts[0].ws
