"""Evidence from stretches of time: a rank's shift against its peers per block of
the run, tested across the blocks.

The segments of one run are not independent samples: a slow minute of the host, a
frequency change, another process on the node move thousands of them together, so
a test over the samples (Mann-Whitney U on n = 8000) calls a +0.9 % drift
significant at p = 1e-60. The unit of evidence is a stretch of time:

* each segment class's time span (its first to its last sample over all ranks) is
  cut into ``BLOCKS`` equal stretches; a cell's block median is the median of its
  log-durations that began in the block (at most ``BLOCK_CAP`` a block on average,
  taken evenly over the cell: the median's error is then far below the floors);
* the peers' centre in a block is the median of the other ranks' block medians (as
  the whole-run centre is the median of their cell medians), so what the host or
  the application does to every rank in that stretch cancels;
* the rank's shift in block b is its block median minus that centre; minus the
  shift already accounted for, the shifts of the blocks where both sides have
  samples are tested by a one-sided sign test (scipy.stats.binomtest); the
  estimate is their median, with its distribution-free 95 % interval (order
  statistics, the sign test inverted). Signs, not sizes: on a shared host some
  blocks move by 10 % when another process runs on one side, and a t test would
  take their size as the blocks' variance;
* steadiness: the share of those blocks whose shift clears the effect floor. At
  least ``STEADY_SHARE`` (half: the median block clears the floor) makes a steady
  shift; less, a shift that comes and goes (a phase, or the host), not an
  anomalous core or segment.

Why 40 blocks: a stretch of 2.5 % of the run (0.15-1.5 s in the validation runs)
is long against the host's episodes of 5-20 ms slices, and short against its
drifts of a second or two, which the detectors take away block by block (a rank's
own common shift per block); 40 blocks let the sign test reach p ~ 1e-12 and give
the median a 95 % interval between the 14th and 27th. Measured on CloverLeaf
(7 s runs, ~85 samples of a class per rank, 15-20 % noise a sample): +10 % in one
class was found in 10 of 10 runs with 40 blocks, in 6 with 20, and clean runs
found fewer steady differences (2 of 10 against 5); 60 blocks named more in
clean runs. A block
needs one sample on each side (a rare class's samples are stretches of time
apart already); fewer than ``MIN_BLOCKS`` usable blocks (a class seen in one short
window, a short run) give no test: the caller says so in the judgement.

Pure functions over arrays; thread-safe. Log-durations are natural logs of ns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING, Optional

import numpy as np

from perfvar.stats.cells import median_without_each, rows_of
from perfvar.stats.compare import log_ns
from perfvar.stats.order import sorted_median, sorted_percentile

if TYPE_CHECKING:
    from perfvar.stats.model import Cell, Prepared

BLOCKS = 40  # equal stretches of a class's time span
MIN_BLOCKS = 5  # usable blocks (both sides with samples) a test needs
STEADY_SHARE = 0.5  # of the usable blocks, clearing the floor: a steady shift
BLOCK_CAP = 125  # samples a block median reads, on average, at most (cost bound)
CI_LEVEL = 0.95


def block_edges(first_ns: float, last_ns: float, blocks: int = BLOCKS) -> np.ndarray:
    """``blocks + 1`` edges (ns) of equal stretches from ``first_ns`` to ``last_ns``
    (a zero span gives one stretch holding everything)."""
    return np.linspace(first_ns, max(last_ns, first_ns), blocks + 1)


def block_of(start_ns: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Block index (0 .. len(edges) - 2) of each start time (ns); times outside the
    edges go to the first or the last block."""
    return np.searchsorted(edges[1:-1], np.asarray(start_ns), side="right")


def block_medians(
    values_log: np.ndarray, start_ns: np.ndarray, edges: np.ndarray
) -> np.ndarray:
    """Median of ``values_log`` per block of ``edges`` (NaN where a block has no
    sample), from one sort: each value is lifted by its block index times more than
    the values' range, so one np.sort orders by block, then by value. At most
    ``BLOCK_CAP`` x blocks values are read, evenly spaced over the array (it is in
    time order, so every block keeps its share)."""
    nblocks = edges.size - 1
    out = np.full(nblocks, np.nan)
    v = np.asarray(values_log, dtype=np.float64)
    t = np.asarray(start_ns, dtype=np.float64)
    if v.size == 0:
        return out
    cap = BLOCK_CAP * nblocks
    if v.size > cap:
        take = np.arange(cap) * (v.size - 1) // (cap - 1)
        v, t = v[take], t[take]
    ids = block_of(t, edges)
    lo = float(v.min())
    width = float(v.max()) - lo + 1.0
    lifted = np.sort((v - lo) + ids * width)
    counts = np.bincount(ids, minlength=nblocks)
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    has = counts > 0
    a = lifted[first[has] + (counts[has] - 1) // 2]
    b = lifted[first[has] + counts[has] // 2]
    out[has] = (a + b) / 2 - np.flatnonzero(has) * width + lo
    return out


def centre_without_each(medians: np.ndarray) -> np.ndarray:
    """For a (ranks x blocks) array of block medians (NaN: no samples), out[i, b] =
    the median of column b without row i, over the rows with samples there (NaN
    where none is left or row i has none). One sort per block."""
    out = np.full(medians.shape, np.nan)
    for b in range(medians.shape[1]):
        col = medians[:, b]
        ok = np.flatnonzero(~np.isnan(col))
        if ok.size < 2:
            continue
        out[ok, b] = median_without_each(col[ok])
    return out


@dataclass(frozen=True)
class BlockTest:
    """A shift tested across blocks of the run (log scale; 0.01 ~ 1 %)."""

    shifts_log: np.ndarray  # per block, NaN where a side had no sample
    blocks: int  # usable blocks
    median_log: float  # median of the usable blocks' shifts: the estimate
    p_value: float  # one-sided sign test (median > 0); 1.0 without a test
    ci_log: tuple[float, float]  # the median's order-statistic interval (CI_LEVEL)
    steady_share: float  # share of usable blocks whose shift clears the floor
    spread_log: float  # IQR of the usable blocks' shifts

    @property
    def tested(self) -> bool:
        """Enough usable blocks for a test (MIN_BLOCKS)."""
        return self.blocks >= MIN_BLOCKS

    @property
    def steady(self) -> bool:
        """The shift clears the floor in at least STEADY_SHARE of the blocks."""
        return self.steady_in(STEADY_SHARE)

    def steady_in(self, share: float) -> bool:
        """Tested, and the shift clears the floor in at least ``share`` (0..1) of the
        usable blocks (a detector with a stricter bar than STEADY_SHARE: slow_core)."""
        return self.tested and self.steady_share >= share

    def evidence(self) -> dict:
        """The figures a finding carries (relative shifts: 0.01 = 1 %)."""
        used = self.shifts_log[~np.isnan(self.shifts_log)]
        return {
            "blocks": self.blocks,
            "blocks_of_run": int(self.shifts_log.size),
            "steady_share": self.steady_share,
            "blocks_above_floor": int(round(self.steady_share * used.size)),
            "block_spread_rel": float(np.expm1(self.spread_log)),
            "block_shifts_rel": [
                None if np.isnan(x) else float(np.expm1(x)) for x in self.shifts_log
            ],
        }


def median_interval(values: np.ndarray, level: float = CI_LEVEL) -> tuple[float, float]:
    """Distribution-free interval of the median of ``values``: the order statistics
    x_(k) and x_(n-k+1), k the largest with P(Binomial(n, 1/2) < k) <= (1 -
    level) / 2 (n = 20: the 6th and 15th, 95.9 %). Under 6 values no k exists: the
    extremes (n = 5: 93.8 %)."""
    return _sorted_interval(np.sort(np.asarray(values, dtype=np.float64)), level)


def _sorted_interval(v: np.ndarray, level: float = CI_LEVEL) -> tuple[float, float]:
    """median_interval of values already in ascending order."""
    n = v.size
    k = _order_statistic(n, level)
    return float(v[k - 1]), float(v[n - k])


@lru_cache(maxsize=4096)
def _order_statistic(n: int, level: float) -> int:
    """median_interval's k for n values: scipy.stats.binom.ppf((1 - level) / 2, n,
    1/2) (tested equal) in whole numbers, the smallest k with P(X <= k) >= that
    quantile, so that no analysis imports scipy.stats for it (about half a second).
    Once per n: an analysis of thousands of ranks asks it for the same few n."""
    target = Fraction((1 - level) / 2) * 2**n  # the quantile, as the float scipy gets
    below, ways, k = 0, 1, 0
    for k in range(n + 1):  # ways = C(n, k)
        below += ways
        if below >= target:
            break
        ways = ways * (n - k) // (k + 1)
    return min(max(k, 1), (n + 1) // 2)  # P(X <= k - 1) <= (1 - level) / 2


@lru_cache(maxsize=65536)
def _sign_test(above: int, nonzero: int) -> float:
    """One-sided sign test's p-value: ``above`` of ``nonzero`` blocks above 0, P(X >=
    above) for X ~ Binomial(nonzero, 1/2), exact (scipy.stats.binomtest's figure to
    within 1e-15 of itself, without scipy.stats' import). Once per pair of counts."""
    ways = sum(math.comb(nonzero, i) for i in range(above, nonzero + 1))
    return float(Fraction(ways, 2**nonzero))


def block_test(shifts_log: np.ndarray, floor_log: float) -> BlockTest:
    """Test the block shifts (log; NaN: block not usable) for a median above 0, with
    the share of usable blocks above ``floor_log`` (log). The test is the one-sided
    sign test (scipy.stats.binomtest on the blocks above 0 among those not 0): a
    block where another process or the two ranks' interplay moved one side by 10 %
    counts as one block, whatever its size (a t test would take it as the blocks'
    variance, a signed-rank test would give it the top rank; measured on two-rank
    runs, three such blocks of 20 took a steady +1 % from p = 0.001 to 0.03). It is
    the test whose inversion is the median's interval below. Fewer than MIN_BLOCKS
    usable blocks: p = 1 and an infinite interval (``tested`` is False)."""
    d = np.asarray(shifts_log, dtype=np.float64)
    used = np.sort(d[~np.isnan(d)])  # the median, quartiles and interval read it
    k = int(used.size)
    if k == 0:
        return BlockTest(d, 0, float("nan"), 1.0, (-np.inf, np.inf), 0.0, 0.0)
    med = sorted_median(used)
    share = float(np.count_nonzero(used > floor_log) / k)
    spread = sorted_percentile(used, 75) - sorted_percentile(used, 25)
    if k < MIN_BLOCKS:
        return BlockTest(d, k, med, 1.0, (-np.inf, np.inf), share, spread)
    above, nonzero = int(np.count_nonzero(used > 0)), int(np.count_nonzero(used))
    if nonzero == 0:
        p = 1.0
    else:
        p = _sign_test(above, nonzero)
    return BlockTest(d, k, med, p, _sorted_interval(used), share, spread)


def weighted_blocks(
    shifts: list[np.ndarray], weights: list[float]
) -> Optional[np.ndarray]:
    """Per block, the weighted mean of several classes' block shifts (log), each
    class weighing ``weights`` where it has a shift; NaN where none has one. None
    when ``shifts`` is empty."""
    if not shifts:
        return None
    s = np.vstack(shifts)
    w = np.asarray(weights, dtype=np.float64)[:, None] * ~np.isnan(s)
    total = w.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(total > 0, np.nansum(s * w, axis=0) / total, np.nan)
    return out


class ClassBlocks:
    """The block medians of every rank of one segment class, derived once: the
    class's time span in BLOCKS stretches, each rank's block medians of its kept
    log-durations (rows in rank order, as perfvar.stats.cells.ClassPool.ranks) and each
    rank's peers' centre per block (the other ranks' block medians' median)."""

    def __init__(self, cells: dict[int, Cell]) -> None:
        ranks = [q for q in sorted(cells) if cells[q].n > 0]
        self.ranks = np.array(ranks, dtype=np.int64)
        first = min((float(cells[q].start_ns.min()) for q in ranks), default=0.0)
        last = max((float(cells[q].start_ns.max()) for q in ranks), default=0.0)
        self.edges = block_edges(first, last)
        self.medians = np.vstack(
            [
                block_medians(log_ns(c.samples_ns), c.start_ns, self.edges)
                for c in (cells[q] for q in ranks)
            ]
            or [np.full(BLOCKS, np.nan)]
        )[: len(ranks)]
        self.centres = centre_without_each(self.medians)
        # leave_out (a frozenset of row indices) -> each row's centre without them
        self._without: dict[frozenset[int], np.ndarray] = {}
        self._rows: dict[frozenset[int], np.ndarray] = {}  # ranks left out -> rows

    @property
    def block_ns(self) -> float:
        """Length of one block (ns)."""
        return float(self.edges[1] - self.edges[0])

    def shifts(self, rank: int, leave_out: Optional[list] = None) -> np.ndarray:
        """``rank``'s block medians minus its peers' centre per block (log; NaN where
        a side has no sample); the ranks in ``leave_out`` (found slow before) are
        not peers unless that would leave none, as in ClassPool.peers."""
        i = int(np.searchsorted(self.ranks, rank))
        if i >= self.ranks.size or self.ranks[i] != rank:
            return np.full(self.edges.size - 1, np.nan)
        wanted = frozenset(leave_out or ())
        if wanted not in self._rows:  # every rank of a class has the same ones out
            self._rows[wanted] = rows_of(self.ranks, wanted)
        left = self._rows[wanted]
        gone = np.count_nonzero(left != i)  # without touching every rank: thousands
        if gone == 0 or gone == self.ranks.size - 1:
            return self.medians[i] - self.centres[i]
        key = frozenset(left.tolist())
        if key not in self._without:
            self._without[key] = self._centres_without(key)
        return self.medians[i] - self._without[key][i]

    def _centres_without(self, rows: frozenset[int]) -> np.ndarray:
        """Each row's peers' centre per block with ``rows`` left out of the peers:
        for a row kept, the median of the other kept rows (centre_without_each over
        them); for a row left out, the median of all kept rows. Computed once per
        set: every rank of a class is judged against the same ranks found slow."""
        gone = np.zeros(self.ranks.size, dtype=bool)
        gone[list(rows)] = True
        out = np.full(self.medians.shape, np.nan)
        kept = self.medians[~gone]
        out[~gone] = centre_without_each(kept)
        cols = (~np.isnan(kept)).any(axis=0)
        if cols.any():
            out[np.ix_(gone, cols)] = np.nanmedian(kept[:, cols], axis=0)
        return out


def class_blocks(prep: Prepared, segment: int) -> ClassBlocks:
    """The ClassBlocks of one segment class (the probes' too) of a
    perfvar.stats.model.Prepared, derived once per Prepared."""
    key = ("class_blocks", segment)
    if key not in prep.derived:
        cells = {r: c for (s, r), c in prep.cells.items() if s == segment}
        prep.derived[key] = ClassBlocks(cells)
    return prep.derived[key]
