"""What the detectors share about cells: grouping, who may be judged, peer pools.

A cell is one segment class on one rank (perfvar.stats.model.Cell). Pure functions;
thread-safe.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Optional, Union

import numpy as np

from perfvar.read.cache_state import CacheState, cell_context, choose
from perfvar.read.meta import RELATIVE_ONLY_FACTOR, Calibration, RunMeta
from perfvar.read.samples import (
    CPU_UNKNOWN,
    TraceSamples,
    class_order,
    in_rank_time_order,
)
from perfvar.stats.compare import log_ns
from perfvar.stats.filters import OsFilterInfo, filter_cost
from perfvar.stats.model import Cell, Prepared, cell_calibration


def cell_inputs(
    samples: np.ndarray, meta: RunMeta
) -> list[tuple[tuple[int, int], np.ndarray, np.ndarray]]:
    """The trace's samples as cells: ``((segment, rank), rows, durations)`` in
    (segment, rank) order, the rows by start time, the durations (ns) after
    filter_cost with the rank's own timer overhead (0 when unknown)."""
    order = _by_segment_rank_start(samples)
    s_sorted = samples[order]
    keys = np.stack([s_sorted["segment"], s_sorted["rank"]], axis=1)
    bounds = np.nonzero(np.any(np.diff(keys, axis=0) != 0, axis=1))[0] + 1
    out = []
    for chunk in np.split(s_sorted, bounds) if s_sorted.size else []:
        seg, rank = int(chunk["segment"][0]), int(chunk["rank"][0])
        rmeta = meta.ranks.get(rank)
        overhead = rmeta.calibration.timer_overhead_ns if rmeta else None
        out.append(((seg, rank), chunk, filter_cost(chunk["duration_ns"], overhead)))
    return out


def _by_segment_rank_start(samples: np.ndarray) -> np.ndarray:
    """The order that sorts by segment, then rank, then start (stable, as
    np.lexsort). As the reader gives them (a rank's thread in time, the ranks in
    order), the samples are in rank and start order already: a stable sort by
    segment alone then gives the same order, four times faster than the lexsort."""
    rank, start = samples["rank"], samples["start_ticks"]
    if in_rank_time_order(rank, start):
        return class_order(samples["segment"])
    return np.lexsort((start, rank, samples["segment"]))


def make_cells(
    trace: TraceSamples,
    meta: RunMeta,
    inputs: list[tuple[tuple[int, int], np.ndarray, np.ndarray]],
    results: list[tuple[np.ndarray, OsFilterInfo]],
) -> dict[tuple[int, int], Cell]:
    """The cells of ``inputs`` (as cell_inputs gives them) with filter_os's
    ``results`` for each (kept mask, info): kept and removed samples, start times in
    ns since the trace's origin, CPUs, and the rank's calibrated cache state closest
    to the cell's context (perfvar.read.cache_state)."""
    cells: dict[tuple[int, int], Cell] = {}
    for ((seg, rank), chunk, values), (mask, info) in zip(inputs, results):
        rmeta = meta.ranks.get(rank)
        context = cell_context(chunk["context_bytes"])
        choice = choose(context, rmeta.calibration.states if rmeta else [])
        cells[(seg, rank)] = Cell.of_filtered(
            seg,
            rank,
            values,
            trace.trace_ns(chunk["start_ticks"]),
            chunk["cpu_enter"],
            mask,
            info,
            cpu=_cpu_mode(chunk["cpu_enter"]),
            state=choice.state,
            state_target=choice.target,
            context_bytes=context,
        )
    return cells


def with_states_of(
    cells: dict[tuple[int, int], Cell], meta: RunMeta, ranks: Collection[int]
) -> dict[tuple[int, int], Cell]:
    """``cells`` with the cache state of the ``ranks``' cells chosen anew from
    ``meta``, as make_cells would have: for cells made before those ranks' states
    changed (a parallel analysis's parts, before a rank borrowed its host's
    calibration: perfvar.calibration.borrow)."""
    out = dict(cells)
    for (seg, rank), cell in cells.items():
        if rank in ranks:
            choice = choose(cell.context_bytes, meta.ranks[rank].calibration.states)
            out[(seg, rank)] = replace(
                cell, state=choice.state, state_target=choice.target
            )
    return out


def _cpu_mode(cpus: np.ndarray) -> Optional[int]:
    """The CPU most of a cell's samples started on (None when none is known)."""
    known = cpus[cpus != CPU_UNKNOWN]
    if known.size == 0:
        return None
    values, counts = np.unique(known, return_counts=True)
    return int(values[np.argmax(counts)])


def by_segment(prep: Prepared, probes: bool = False) -> dict[int, dict[int, Cell]]:
    """segment index -> rank -> cell, both ascending; the probes' pseudo-class only
    with ``probes``."""
    out: dict[int, dict[int, Cell]] = defaultdict(dict)
    for (seg, rank), cell in sorted(prep.cells.items()):
        if probes or seg != prep.probe_segment:
            out[seg][rank] = cell
    return dict(out)


def by_rank(prep: Prepared) -> dict[int, list[Cell]]:
    """rank -> its segment cells (no probes), by segment index."""
    out: dict[int, list[Cell]] = defaultdict(list)
    for (seg, rank), cell in sorted(prep.cells.items()):
        if seg != prep.probe_segment:
            out[rank].append(cell)
    return dict(out)


def unjudged_reason(
    prep: Prepared, cell: Cell, min_samples: int
) -> tuple[Optional[str], Optional[Union[CacheState, Calibration]]]:
    """(why the cell cannot be judged, or None; the calibration it is judged with).

    The reasons are the judgement statuses: "single rank", "too few samples", "no
    calibration", "below precision" (the cell's median, or the centre of its peers'
    medians, under the rank's t_min: the timer cannot resolve one side of the
    comparison, so it is counted, never judged; a 130 ns step after a collective on
    the peers against 1.3 us on a rank that arrived late is such a case). Probes run
    a fixed chain far above t_min, so they are not held to it. A rank with no
    t_min/t_diff is still judged in a class whose segments, its own and its peers',
    are at least RELATIVE_ONLY_FACTOR times its timer overhead: there the relative
    floor is far above any plausible t_diff, and the cell is judged with it alone
    (its calibration is then relative_floor_only's, said in the evidence).
    Derived once per cell of ``prep`` and ``min_samples``: every detector asks.
    """
    key = ("unjudged", cell.segment, cell.rank, min_samples)
    held = prep.derived.get(key)
    if held is None or held[0] is not cell:  # held for this very cell only
        held = prep.derived[key] = (cell, _unjudged_reason(prep, cell, min_samples))
    return held[1]


def _unjudged_reason(
    prep: Prepared, cell: Cell, min_samples: int
) -> tuple[Optional[str], Optional[Union[CacheState, Calibration]]]:
    cal = cell_calibration(prep, cell)
    pool = class_pool(prep, cell.segment)
    mine = pool.index(cell.rank)
    if pool.ranks.size - (mine is not None) == 0:
        return "single rank", cal
    if cell.n < min_samples:
        return "too few samples", cal
    if mine is not None:
        centre = float(pool.median_of_others[mine])
    else:
        centre = float(np.median(pool.medians_ns))
    if cal is None or cal.t_min_ns is None or cal.t_diff_ns is None:
        cal = relative_floor_only(prep, cell, min(cell.median_ns, centre))
        if cal is None:
            return NO_CALIBRATION, cal
    if cell.segment == prep.probe_segment:
        return None, cal
    if min(cell.median_ns, centre) < cal.t_min_ns:
        return "below precision", cal
    return None, cal


# The cache state (Judgement.cache_state, a finding's evidence) of such a cell.
RELATIVE_ONLY = "relative floor only"


def relative_floor_only(
    prep: Prepared, cell: Cell, shorter_ns: float
) -> Optional[Calibration]:
    """A calibration of t_min = t_diff = 0 for a cell of a rank with none, whose
    shorter side (its median or its peers' centre, ``shorter_ns``) is at least
    RELATIVE_ONLY_FACTOR times the rank's timer overhead, or that is the rank's
    fixed-work probes (the same work on every rank, compared with probes only);
    None where the overhead is unknown or the segments are shorter."""
    own = prep.calibration.get(cell.rank)
    overhead = own.timer_overhead_ns if own is not None else None
    long_enough = overhead and shorter_ns >= RELATIVE_ONLY_FACTOR * overhead
    if not long_enough and cell.segment != prep.probe_segment:
        return None
    return Calibration(
        timer_overhead_ns=overhead, t_min_ns=0.0, t_diff_ns=0.0, status=RELATIVE_ONLY
    )


# Peer samples a rank is compared with, at most: with dozens of ranks a pool of all
# peers is millions of samples, sorted once per test, while a fair share of each
# peer's, spread over the run, tells the peers' distribution as well (the shift's
# standard error at 2 x 10^4 samples is ~1 % of the spread, far below the floors).
PEER_CAP = 20_000
# The status of a cell whose rank has no t_min/t_diff, its own or borrowed (and the
# verdict of a rank none of whose cells could be judged for that).
NO_CALIBRATION = "no calibration"


_GOLDEN_FRACTION = 0.6180339887498949  # rank i's offset: frac(i x this), well spread


def peer_shares(sizes: np.ndarray) -> list[np.ndarray]:
    """Which of each rank's samples (``sizes``: samples per rank) a class's pool
    takes, as indices into its time-ordered samples: all of them when the class
    holds at most PEER_CAP samples, else each rank's share of PEER_CAP in
    proportion to its samples (at least one): one in each of k equal stretches of
    its run, at an offset into the stretch that differs from rank to rank. (With
    the same offset, thousands of ranks in step would all give samples from the
    same few moments, and the pool would leave most of the run empty.)"""
    total = int(sizes.sum())
    if total <= PEER_CAP:
        return [np.arange(n) for n in sizes.tolist()]
    out = []
    for i, n in enumerate(sizes.tolist()):
        k = max(1, min(n, round(PEER_CAP * n / total)))
        offset = (i + 1) * _GOLDEN_FRACTION % 1.0
        # Strictly increasing indices in [0, n): the stretches are n / k >= 1 long.
        at = ((np.arange(k) + offset) * (n / k)).astype(np.int64)
        out.append(np.minimum(at, n - 1))  # a product rounded up to n stays inside
    return out


def median_without_each(values: np.ndarray) -> np.ndarray:
    """out[i] = np.median(values without values[i]), for every i at once (NaN where
    nothing is left)."""
    m = values.size
    if m < 2:
        return np.full(m, np.nan)
    order = np.argsort(values, kind="stable")
    v = values[order]
    at = np.empty(m, dtype=np.int64)
    at[order] = np.arange(m)

    def remaining(i: int) -> np.ndarray:  # the i-th smallest once each one is out
        return v[np.where(i < at, i, i + 1)]

    return (remaining((m - 2) // 2) + remaining((m - 1) // 2)) / 2.0


def rows_of(ranks: np.ndarray, wanted: Collection[int]) -> np.ndarray:
    """The positions in ``ranks`` (ascending) of those of ``wanted`` it holds,
    ascending: a few ranks looked up among thousands without a pass over them."""
    if not wanted:
        return np.empty(0, dtype=np.int64)
    w = np.unique(np.fromiter(wanted, dtype=np.int64, count=len(wanted)))
    at = np.searchsorted(ranks, w)
    inside = at < ranks.size
    at = at[inside]
    return at[ranks[at] == w[inside]]


def median_of_rest(values: np.ndarray, skip: np.ndarray) -> float:
    """np.median of ascending ``values`` without the positions ``skip`` (ascending,
    unique), found by counting the skipped ones, not by copying ``values``: the
    same figure (the middle value, or the mean of the middle two). NaN when none
    is left."""
    left = values.size - skip.size
    if left == 0:
        return float("nan")

    def kth(j: int) -> float:  # the j-th smallest once the skipped ones are out
        p = j
        while True:  # p = j + skipped positions below p, found by iterating
            q = j + int(np.searchsorted(skip, p, "left"))
            if q == p:
                break
            p = q
        k = int(np.searchsorted(skip, p, "left"))
        while k < skip.size and skip[k] == p:  # a skipped value: the next one is it
            p, k = p + 1, k + 1
        return float(values[p])

    lo, hi = kth((left - 1) // 2), kth(left // 2)
    return lo if lo == hi else (lo + hi) / 2


def ascending(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(``a`` sorted, stably; where each of ``a``'s elements went in it)."""
    order = np.argsort(a, kind="stable")
    at = np.empty(order.size, dtype=np.int64)
    at[order] = np.arange(order.size)
    return a[order], at


class PeerCentres:
    """Each rank's peers' centre over one value per rank (rows in rank order): the
    median of the other ranks' values, those left out (found slow before) not
    counted unless none would be left. The others' median of every row and the
    values sorted are derived once, so a centre costs the rows left out, not the
    ranks. Not thread-safe (derives on first use)."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values
        self.of_others = median_without_each(values)  # no one left out

    @cached_property
    def _ascending(self) -> tuple[np.ndarray, np.ndarray]:
        return ascending(self.values)

    def left_out(self, mine: Optional[int], rows: np.ndarray) -> np.ndarray:
        """The rows (ascending) that are no peers of row ``mine`` (None: a rank
        without a row) besides itself: ``rows`` without ``mine``, and none where
        they would leave no peer."""
        gone = rows if mine is None else rows[rows != mine]
        return gone[:0] if gone.size == self.values.size - (mine is not None) else gone

    def centre(self, mine: Optional[int], gone: np.ndarray) -> float:
        """np.median of the values but ``mine``'s and ``gone``'s (from left_out);
        NaN where none is left."""
        if mine is not None and gone.size == 0:
            return float(self.of_others[mine])
        skip = gone if mine is None else np.append(gone, mine)
        values, at = self._ascending
        return median_of_rest(values, np.sort(at[skip]))


@dataclass
class Peers:
    """One rank's peers in one class. Their ranks and pooled samples are taken from
    the class's pool when first read: at thousands of ranks each pool is most of the
    class, and most callers need only its size or its centre, so a rank's peers cost
    no work over all the other ranks until then."""

    pool: ClassPool
    out: np.ndarray  # rows of pool.ranks that are no peers: the rank, those left out
    gone: np.ndarray  # row indices of the ranks left out (found slow before), ascending
    center_log: Optional[float]  # median of their median log-durations

    @cached_property
    def _use(self) -> np.ndarray:
        use = np.ones(self.pool.ranks.size, dtype=bool)
        use[self.out] = False
        return use

    @property
    def used(self) -> list[int]:
        """The ranks pooled."""
        return self.pool.ranks[self._use].tolist()

    @property
    def excluded(self) -> list[int]:
        """The ranks left out (found slow before)."""
        return self.pool.ranks[self.gone].tolist()

    @property
    def n_ranks(self) -> int:
        """How many ranks they are."""
        return int(self.pool.ranks.size - self.out.size)

    @property
    def size(self) -> int:
        """How many samples they pool."""
        return int(self.pool.share_sizes.sum() - self.pool.share_sizes[self.out].sum())

    @cached_property
    def take(self) -> np.ndarray:
        """Which of the pool's samples are theirs."""
        return self._use[self.pool.owner]

    @cached_property
    def samples_ns(self) -> np.ndarray:
        """Their pooled samples (ns; their shares, see peer_shares)."""
        return self.pool.samples_ns[self.take]

    @cached_property
    def samples_log(self) -> np.ndarray:
        """The same as compare.log_ns gives them."""
        return self.pool.samples_log[self.take]

    @cached_property
    def start_ns(self) -> np.ndarray:
        """When each began (ns since the trace's origin)."""
        return self.pool.start_ns[self.take]


class ClassPool:
    """Every rank's peers in one segment class, derived once: the ranks with
    samples, their shares (peer_shares) pooled in rank order, their medians. A
    rank's peer pool is this pool without its own share and without the shares of
    the ranks left out: no per-rank work over all the others."""

    def __init__(self, cells: dict[int, Cell]) -> None:
        ranks = [q for q in sorted(cells) if cells[q].n > 0]
        self.ranks = np.array(ranks, dtype=np.int64)
        shares = peer_shares(np.array([cells[q].n for q in ranks], dtype=np.int64))
        empty = np.empty(0, dtype=np.float64)
        self.samples_ns = np.concatenate(
            [cells[q].samples_ns[t] for q, t in zip(ranks, shares)] or [empty]
        )
        self.samples_log = log_ns(self.samples_ns)
        self.start_ns = np.concatenate(
            [cells[q].start_ns[t] for q, t in zip(ranks, shares)] or [empty]
        )
        self.share_sizes = np.array([t.size for t in shares], dtype=np.int64)
        self.share_starts = np.cumsum(self.share_sizes) - self.share_sizes
        self.owner = np.repeat(np.arange(len(ranks)), self.share_sizes)
        self.medians_ns = np.array([cells[q].median_ns for q in ranks])
        self.log_medians = np.array([cells[q].log_median for q in ranks])
        self.median_of_others = median_without_each(self.medians_ns)
        self.log_centres = PeerCentres(self.log_medians)
        self.first_ns = min((float(cells[q].start_ns.min()) for q in ranks), default=0)
        self.last_ns = max((float(cells[q].start_ns.max()) for q in ranks), default=0)
        self.memo: dict[Any, Any] = {}  # what a detector derives from the pool once

    def pooled_median_log(self, rank: int) -> float:
        """np.median of the log-durations ``peers(rank)`` pools (no one left out),
        from the pool sorted once: the rank's own share is skipped by counting, not
        by copying the pool. NaN when the rank is alone."""
        if "sorted_log" not in self.memo:
            self.memo["sorted_log"] = ascending(self.samples_log)
        values, at = self.memo["sorted_log"]
        lo, hi = self.share(rank)
        return median_of_rest(values, np.sort(at[lo:hi]))

    def share(self, rank: int) -> tuple[int, int]:
        """[lo, hi) of ``rank``'s share in the pool (one stretch of it: the pool is
        in rank order); empty for a rank without a row."""
        i = self.index(rank)
        if i is None:
            return 0, 0
        lo = int(self.share_starts[i])
        return lo, lo + int(self.share_sizes[i])

    def others_log_evenly(self, rank: int, cap: int) -> np.ndarray:
        """compare.evenly(peers(rank).samples_log, cap): the pool's log-durations
        without ``rank``'s own share, at most ``cap`` of them evenly spaced, taken
        from the pool at the positions they hold (the share is one stretch of the
        pool, which is in rank order) rather than from a copy of every peer's."""
        lo, hi = self.share(rank)
        m = self.samples_log.size - (hi - lo)
        if m <= cap:
            return np.concatenate([self.samples_log[:lo], self.samples_log[hi:]])
        at = np.arange(cap) * (m - 1) // (cap - 1)
        at[at >= lo] += hi - lo
        return self.samples_log[at]

    def index(self, rank: int) -> Optional[int]:
        i = int(np.searchsorted(self.ranks, rank))
        return i if i < self.ranks.size and self.ranks[i] == rank else None

    def peers(self, rank: int, leave_out: Collection[int] = ()) -> Peers:
        """``rank``'s peers: the other ranks with samples, those in ``leave_out``
        (already found slow) left out unless that would leave none. Costs the size
        of ``leave_out``, not of the pool's ranks."""
        mine = self.index(rank)
        key = ("rows", frozenset(leave_out))
        if key not in self.memo:  # every rank of a class has the same ones left out
            self.memo[key] = rows_of(self.ranks, leave_out)
        gone = self.log_centres.left_out(mine, self.memo[key])
        out = gone if mine is None else np.sort(np.append(gone, mine))
        others = self.ranks.size - (mine is not None)
        center = self.log_centres.centre(mine, gone) if others else None
        return Peers(self, out, gone, center)


def class_pool(prep: Prepared, segment: int) -> ClassPool:
    """The ClassPool of one segment class (the probes' too), derived once per
    Prepared."""
    key = ("class_pool", segment)
    if key not in prep.derived:
        cells = {r: c for (s, r), c in prep.cells.items() if s == segment}
        prep.derived[key] = ClassPool(cells)
    return prep.derived[key]


def peer_pool(
    prep: Prepared, segment: int, rank: int, leave_out: Collection[int] = ()
) -> Peers:
    """``rank``'s peers in ``segment`` (see ClassPool.peers)."""
    return class_pool(prep, segment).peers(rank, leave_out)
