"""Detector "slow segment": a rank that runs one segment class slower than its peers.

For each segment class present on at least two ranks, and each rank r of it that
can be judged (perfvar.stats.cells.unjudged_reason: enough samples, a calibration, a
median above t_min):

1. peers: the pooled kept samples of the other ranks; with ``peers == "robust"``
   (default) the ranks found slow in this class by a first pass against all others
   are left out, so that several slow ranks (all ranks of one slow node) do not
   hide each other. The first pass keeps a cell only when, taken from the largest
   shift down, it is still slow once the cells kept before it no longer tell any
   rank's common shift (``_explained``): the larger slowdown explains the smaller
   one that it made the other rank seem to have.
2. the rank's common shift kappa, the part a slower core explains: the median of
   its shifts in its other judged classes, each against the peers not found slow
   there (a class whose only peers are slow tells nothing). A negative one counts
   only when at least ``LEVEL_CLASSES`` (3) other classes tell it: with two ranks and
   one or two
   classes, a rank faster elsewhere is as well the mirror image of its peer being
   slow there, and would name a ghost; the median of three or more is the rank's
   core, and a class slow on a faster core (its peer's core slower, a real
   program's ranks on a shared host) is seen beyond it. Only the classes that
   carry the rank's compute time tell its core (local_speed.witness_classes: the
   longest, down to 95 % of it): the short ones between two calls move with what
   the calls did (in the demo's stencil they ran 40 % faster on one rank, and its
   one large class, as fast on both, was named +86 % beyond that "core"). A rank
   with fewer than ``MIN_WITNESSES`` such classes (the stencil's one) has its core
   told by its fixed-work probes where the run has them and they are slower than
   its peers' beyond their systematic margin (perfvar.stats.probes: their shift
   against the other ranks' probes; perfvar.stats.core_speed.SYSTEMATIC); else by
   its slow-core shift when
   the probes made it a slow core; else kappa is 0 and the floor below is at least
   ``core_floor``: a shift in the rank's only class cannot be told from a slower
   core. A rank whose classes are all shifted alike while its probes ran at their
   peers' speed has its core told by the probes too: that shift is more work in
   every class, each named (_probes_tell). Whether a slow class is the core's or
   more work is asked afterwards, of the probes in its window
   (perfvar.detect.load_imbalance).
3. the test is over stretches of time, not samples (perfvar.stats.blocks): the
   class's time span in 40 blocks, r's shift against its peers' centre in each
   block (what the host does to every rank in a stretch cancels), beyond r's own
   speed: where r has more than local_speed.MIN_CLASSES classes, on log-durations
   with r's speed around each sample taken away, as much of it as the class
   follows (perfvar.stats.local_speed: a vCPU's speed swings faster than a
   block, and not every class follows it whole), the excess then the difference of
   the run's corrected medians; else minus r's common shift in the same block
   (_core_offset: a core drifting against its peers moves all its classes
   alike), the excess the median of these block excesses. A one-sided sign test
   across the blocks (is the median block excess above 0?), q values by
   Benjamini-Hochberg over every cell tested. A cell with fewer than 5 blocks
   holding samples of both sides (a class seen in one short window) is not
   tested: "too few blocks".
4. r is slow in the class when q < alpha AND the excess over its peers beyond kappa,
   in ns at the peers' median, exceeds the effect floor max(t_diff of the cell's
   cache state, segment_floor x the peers' median) AND it is steady: the block
   excess clears that floor in at least half the blocks (else the judgement is
   "unsteady": a shift that comes and goes is a phase or the host) AND, over the
   cell's segments, it
   costs at least MIN_COST of the rank's compute time: a rank that waited long in a
   collective runs its next short segment a few hundred ns slower (measured: 451 ns
   against its peer's 230 ns after an Allreduce that waited 3 ms for a slowed rank),
   which is real, costs the rank about 0.01-0.04 % of its time and explains nothing.

The paper's overlap (fraction of r's samples below the peers' maximum) is reported
as the per-sample resolution figure; it does not veto. ``excess_ns`` is the excess
per segment; the evidence holds the statistics (shift, the blocks' interval, p,
q, floor, the steadiness: perfvar.stats.blocks.BlockTest.evidence) and ``work``:
whether the counter reads its class's segments took counted more instructions than
its peers' (more work) or the same (a slower core), where the run counted
instructions (perfvar.stats.work, against its excess).
Pure function; thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Optional

import numpy as np

from perfvar.detect.finding import CLASS, AnomalyJson, FindingKind
from perfvar.detect.words import (
    core_clause,
    off_cpu_clause,
    state_of,
    stats,
    where,
    work_clause,
)
from perfvar.stats import core_speed, work
from perfvar.stats.blocks import BlockTest, ClassBlocks, block_test, class_blocks
from perfvar.stats.cells import (
    RELATIVE_ONLY,
    PeerCentres,
    by_segment,
    median_without_each,
    peer_pool,
    rows_of,
    unjudged_reason,
)
from perfvar.stats.compare import fdr, nanmedian_columns, rel
from perfvar.stats.core_speed import SYSTEMATIC
from perfvar.stats.local_speed import corrected_cells, witness_classes
from perfvar.stats.model import (
    Anomaly,
    Cell,
    DetectorResult,
    DetectParams,
    Judgement,
    Prepared,
)
from perfvar.stats.order import median
from perfvar.stats.summary import iqr, overlap
from perfvar.units import compact_ranges, fmt_ns, fmt_pct

KIND = "slow_segment"
# Other judged classes of a rank from which a negative common shift is taken as its
# core's: their median is then not the mirror image of one class slow on the peer.
LEVEL_CLASSES = 3
# Classes carrying a rank's compute time (local_speed.witness_classes) it needs for
# them, not its fixed-work probes, to tell its core.
MIN_WITNESSES = 2
# The status of a cell with fewer usable blocks than a test needs (stats.blocks).
TOO_FEW = "too few blocks"
# Of a cell's samples, the share with a speed (perfvar.stats.local_speed) for the
# class to be judged on corrected log-durations, on the rank and on a peer.
LOCAL_SHARE = 0.5
# A class's sensitivity to its rank's speed (local_speed) the sentence gives when it
# is this far from 1; nearer, the class follows its core as the others do.
SAID_SENSITIVITY = 0.1
# Without an instruction counter: the probes took the core's part away (kappa).
PROBES_SAID = (
    " (beyond its core as its fixed-work probes measure it; no instruction counter "
    "to tell more work)"
)


@dataclass
class _Test:
    judgement: Judgement
    cell: Cell
    leave_out: set[int]  # the peers left out (its samples are derived again if named)
    kappa: float
    excess_log: float  # median block excess (log) beyond the core shift
    run_excess_log: float  # the run's median log-duration - kappa - peers' centre
    blocks: BlockTest
    peer_median_ns: float
    floor_ns: float
    floor_rel: float
    t_diff_ns: float
    t_min_ns: float
    # Of the class to its rank's speed where that was taken from each sample, else None
    sensitivity: Optional[float] = None


def _log_medians(
    classes: dict[int, dict[int, Cell]],
) -> dict[tuple[int, int], float]:
    """(segment, rank) -> median log-duration of every cell with samples."""
    return {
        (seg, r): c.log_median
        for seg, cells in classes.items()
        for r, c in cells.items()
        if c.n > 0
    }


def _direct_shifts(
    classes: dict[int, dict[int, Cell]],
    judgeable: set[tuple[int, int]],
    medians: dict[tuple[int, int], float],
    leave_out: Optional[dict[int, set[int]]] = None,
) -> dict[tuple[int, int], float]:
    """(segment, rank) -> median log shift against the centre (median of medians) of
    the other ranks, those in ``leave_out[segment]`` (explained as slow there) left
    out. A class whose other ranks are all left out tells nothing: no entry."""
    leave_out = leave_out or {}
    out = {}
    for seg, cells in classes.items():
        gone = leave_out.get(seg, set())
        counted = [q for q in cells if q not in gone and (seg, q) in medians]
        values = np.array([medians[(seg, q)] for q in counted])
        without = median_without_each(values)  # each counted rank's peers' centre
        at = {q: i for i, q in enumerate(counted)}
        everyone = float(np.median(values)) if values.size else None
        for r in cells:
            if (seg, r) not in judgeable:
                continue
            center = float(without[at[r]]) if r in at else everyone
            if center is not None and not np.isnan(center):
                out[(seg, r)] = medians[(seg, r)] - center
    return out


def _by_rank(shifts: dict[tuple[int, int], float]) -> dict[int, dict[int, float]]:
    """rank -> segment -> shift: what _kappa reads."""
    out: dict[int, dict[int, float]] = {}
    for (s, r), v in shifts.items():
        out.setdefault(r, {})[s] = v
    return out


def _kappa(
    seg: int,
    rank: int,
    by_rank: dict[int, dict[int, float]],
    cores: dict[int, float],
    probes: dict[int, float],
    witnesses: dict[int, set[int]],
) -> Optional[float]:
    """The rank's common shift (log) from its shifts in the other classes that tell
    its core (``by_rank``: _by_rank of the shifts; ``witnesses``: rank -> those
    classes); None when nothing can tell it."""
    if rank in probes:  # fixed work measures the core itself
        return max(probes[rank], 0.0)
    tells = witnesses.get(rank, set())
    mine = [v for s, v in by_rank.get(rank, {}).items() if s != seg and s in tells]
    if mine:
        level = median(np.array(mine))
        return level if len(mine) >= LEVEL_CLASSES else max(level, 0.0)
    return cores.get(rank)


def _core_offset(ctx: _Context, seg: int, rank: int) -> Optional[np.ndarray]:
    """Per block of the run, the rank's common shift to take from its block shifts
    in ``seg`` (log), or None when nothing tells it per block.

    The common shift per block is its probes' block shift where it has probes, else
    the median over its other judged classes that tell its core (``witnesses``) of
    theirs (each against the peers not found slow there). Why per block: a core's
    speed against its peers drifts (on a shared host two vCPUs trade places for
    seconds), moving every class of the rank alike; taken away in the same block,
    the drift leaves the class's own excess. A class whose only peers are found
    slow there does not count (it would show the rank fast). As for kappa, with
    fewer than LEVEL_CLASSES classes (or with probes) a negative level, the median
    over the blocks, is not added back: only the drift around it is taken away.
    Blocks the common shift does not cover take the level."""
    prep, probes = ctx.prep, ctx.probe_shifts
    if rank in probes and prep.probe_segment is not None:
        rows = [class_blocks(prep, prep.probe_segment).shifts(rank)]
    else:
        rows = [  # the rank's witness classes, not a walk over every judgeable cell
            _witness_row(ctx, s, rank)
            for s in sorted(ctx.witnesses.get(rank, set()))
            if s != seg
            and (s, rank) in ctx.judgeable
            and _tells_core(prep, s, rank, ctx.slow_first)
        ]
    if not rows or np.isnan(np.vstack(rows)).all():
        return None
    core = nanmedian_columns(np.vstack(rows))  # a block no class covers stays NaN
    level = median(core[~np.isnan(core)])  # np.nanmedian's figure: some are not NaN
    if len(rows) >= LEVEL_CLASSES and rank not in probes:
        return np.where(np.isnan(core), level, core)
    return np.where(np.isnan(core), max(level, 0.0), core - min(level, 0.0))


def _witness_row(ctx: _Context, seg: int, rank: int) -> np.ndarray:
    """``rank``'s block shifts in its witness class ``seg`` against the peers not
    found slow there: the same for each of the rank's other cells whose core it
    tells, so made once (read-only)."""
    key = (seg, rank)
    if key not in ctx.witness_rows:
        blocks = class_blocks(ctx.prep, seg)
        ctx.witness_rows[key] = blocks.shifts(
            rank, sorted(ctx.slow_first.get(seg, set()))
        )
    return ctx.witness_rows[key]


def _tells_core(
    prep: Prepared, seg: int, rank: int, slow_first: dict[int, set[int]]
) -> bool:
    """Whether class ``seg`` tells ``rank``'s core: some peer of the rank there is
    not found slow in it (against slow peers only, the rank looks fast: the mirror
    image of their slowness, not its core)."""
    gone = slow_first.get(seg, set())
    return any(q != rank and q not in gone for q in class_blocks(prep, seg).ranks)


def _probe_shifts(prep: Prepared) -> dict[int, float]:
    """rank -> log shift of its fixed-work probes against the other ranks' (each
    rank's typical probe, core_speed.typical_log, against the median of the others')."""
    if prep.probe_segment is None:
        return {}
    cells = {
        r: c for (s, r), c in prep.cells.items() if s == prep.probe_segment and c.n >= 2
    }
    ranks = sorted(cells)
    meds = np.array([core_speed.typical_log(cells[r].samples_ns) for r in ranks])
    others = median_without_each(meds)
    return {
        r: float(meds[i] - others[i]) for i, r in enumerate(ranks) if len(ranks) > 1
    }


def _probes_tell(
    prep: Prepared,
    witnesses: dict[int, set[int]],
    shifts: dict[tuple[int, int], float],
) -> dict[int, float]:
    """rank -> its probes' shift (log), for the ranks whose core the probes tell
    rather than their own classes. The classes tell the core where they can: each is
    the rank's own work against the same work on its peers, under the segments' own
    conditions, which the probes' moments between them need not share; except: a
    rank with fewer than MIN_WITNESSES classes carrying its compute time (the
    stencil's one), whose probes ran slower than its peers' beyond their margin, all
    of their interval; and a rank whose classes are shifted alike while its probes
    ran at their peers' speed (core_speed.decide says more work of the classes'
    common shift): that shift is more work in every class, named per class, not a
    core; and, mirrored, a rank faster alike in its classes whose probes rule out a
    core that much faster (core_speed.not_faster): less work, not a faster core."""
    by_rank = _by_rank(shifts)
    beyond_margin = float(np.log1p(SYSTEMATIC))
    out = {}
    for r, v in _probe_shifts(prep).items():
        tells = witnesses.get(r, set())
        if len(tells) < MIN_WITNESSES:
            # The bootstrap only where the point is beyond the margin already.
            if v > beyond_margin and core_speed.slower_beyond_margin(
                core_speed.of_rank(prep, r)
            ):
                out[r] = v
            continue
        mine = by_rank.get(r, {})
        common = [mine[s] for s in tells if s in mine]
        if not common:
            continue
        level = rel(float(np.median(common)))
        if level < 0:
            # Faster alike in its classes: a faster core, or less work (miniAMR's rank
            # holding fewer blocks ran -60 to -99 % in every class, its probes +3 %:
            # "a core 99 % faster"). The probes tell where they rule that core out;
            # the bootstrap only where their point does already.
            if core_speed.may_be_less(prep, r, level) and core_speed.not_faster(
                core_speed.of_rank(prep, r), level
            ):
                out[r] = v
            continue
        # Only a shift its classes share can be more work (decide says nothing of the
        # others): the probes' bootstrap is run for those ranks alone.
        excess = level
        if not core_speed.may_be_more(prep, r, excess):
            continue
        if core_speed.decide(core_speed.of_rank(prep, r), excess) == core_speed.MORE:
            out[r] = v
    return out


def _first_pass_slow(
    prep: Prepared,
    classes: dict[int, dict[int, Cell]],
    judgeable: set[tuple[int, int]],
    shifts: dict[tuple[int, int], float],
    params: DetectParams,
) -> dict[int, set[int]]:
    """segment -> ranks significantly slower than all their peers beyond the floor
    (the block test of perfvar.stats.blocks against all other ranks)."""
    keys, pvals = [], []
    floor = float(np.log1p(params.segment_floor))
    for seg, cells in classes.items():
        for r in cells:
            if (seg, r) not in judgeable:
                continue
            if peer_pool(prep, seg, r).size < 2:
                continue
            bt = block_test(class_blocks(prep, seg).shifts(r), floor)
            if not bt.tested:
                continue
            keys.append((seg, r))
            pvals.append(bt.p_value)
    out: dict[int, set[int]] = {}
    for (seg, r), q in zip(keys, fdr(pvals)):
        if q < params.alpha and shifts.get((seg, r), 0.0) > np.log1p(
            params.segment_floor
        ):
            out.setdefault(seg, set()).add(r)
    return out


def _explained(
    classes: dict[int, dict[int, Cell]],
    judgeable: set[tuple[int, int]],
    medians: dict[tuple[int, int], float],
    shifts: dict[tuple[int, int], float],
    first: dict[int, set[int]],
    params: DetectParams,
    cores: dict[int, float],
    probes: dict[int, float],
    witnesses: dict[int, set[int]],
) -> tuple[dict[int, set[int]], dict[tuple[int, int], float]]:
    """(segment -> ranks of the first pass that stay slow once larger shifts explain
    smaller ones, the direct shifts against the peers not kept slow), from
    ``shifts``, the direct shifts against all peers.

    From the largest shift down, a cell stays slow when its shift, beyond its rank's
    common shift, clears the floor; the common shift is told only by classes whose
    peers are not already slow there (else the floor is the core's). Why: with two
    ranks whose cores differ by 1 %, rank 1 slowed by 10 % in class A also makes
    rank 0 look 1 % slow in B, since rank 0's only other class, A, is the one where
    its peer is slow. Told against A no more, rank 0's 1 % is its core, not B.
    """
    order = sorted(
        ((shifts[(seg, r)], seg, r) for seg, ranks in first.items() for r in ranks),
        reverse=True,
    )
    kept: dict[int, set[int]] = {}
    by_rank = _by_rank(shifts)
    for _, seg, r in order:
        own = shifts.get((seg, r))
        if own is None:
            continue
        kappa = _kappa(seg, r, by_rank, cores, probes, witnesses)
        floor = params.segment_floor
        if kappa is None:
            kappa, floor = 0.0, max(params.segment_floor, params.core_floor)
        if own - kappa > np.log1p(floor):
            kept.setdefault(seg, set()).add(r)
            # The shifts change only when a cell is kept.
            shifts = _direct_shifts(classes, judgeable, medians, kept)
            by_rank = _by_rank(shifts)
    return kept, shifts


# A slow segment must cost its rank this share of its compute time (excess x segments).
# The validation kit's smallest injection, +0.3 % in one of two classes, costs 0.15 %.
MIN_COST = 0.0005


def _judgements(
    prep: Prepared,
    classes: dict[int, dict[int, Cell]],
    params: DetectParams,
    result: DetectorResult,
) -> list[tuple[int, int, Judgement]]:
    """One judgement per cell into ``result``; (segment, rank, judgement) of the
    cells that can be judged (the others keep the reason as their status)."""
    pending: list[tuple[int, int, Judgement]] = []
    for seg, cells in classes.items():
        for rank, cell in cells.items():
            j = Judgement(prep.segment_ids[seg], rank, "ok", cell.n)
            j.context_bytes = cell.context_bytes
            j.cache_state = cell.state.label if cell.state is not None else None
            result.judgements.append(j)
            if cell.n >= params.min_samples:
                j.median_ns = cell.median_ns
            reason, cal = unjudged_reason(prep, cell, params.min_samples)
            if reason:
                j.status = reason
                continue
            if cal is not None and cal.status == RELATIVE_ONLY:
                j.cache_state = RELATIVE_ONLY
            pending.append((seg, rank, j))
    return pending


@dataclass
class _Context:
    """What every cell's test reads: the classes, the cells that can be judged, the
    first pass's slow ranks per class, the ranks' shifts and probes, the named
    cores."""

    prep: Prepared
    params: DetectParams
    classes: dict[int, dict[int, Cell]]
    judgeable: set[tuple[int, int]]
    slow_first: dict[int, set[int]]
    by_rank: dict[int, dict[int, float]]
    cores: dict[int, float]
    probe_shifts: dict[int, float]
    witnesses: dict[int, set[int]]  # rank -> the classes that tell its core
    # segment -> the class on corrected log-durations, or None (_local_blocks)
    local: dict[int, Optional[_Local]] = field(default_factory=dict)
    # (witness class, rank) -> the rank's block shifts there (_witness_row)
    witness_rows: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)


def _test_cell(ctx: _Context, seg: int, rank: int, j: Judgement) -> Optional[_Test]:
    """The block test of one cell against its peers beyond its core (fills ``j``);
    None when it cannot be tested (no peers, too few blocks: ``j.status`` says)."""
    prep, params = ctx.prep, ctx.params
    cell = ctx.classes[seg][rank]
    peers = peer_pool(prep, seg, rank, ctx.slow_first.get(seg, set()))
    if peers.size < 2:
        j.status = "no peers"
        return None
    # What judged the cell: its calibration, or the relative floor alone.
    _, cal = unjudged_reason(prep, cell, params.min_samples)
    kappa = _kappa(seg, rank, ctx.by_rank, ctx.cores, ctx.probe_shifts, ctx.witnesses)
    # With no other class on the rank, a shift here cannot be told from a slower
    # core, so it must clear the core's floor too.
    floor_rel = params.segment_floor
    offset: Optional[np.ndarray] = None
    local: Optional[_Local] = None
    if kappa is None:
        kappa, floor_rel = 0.0, max(params.segment_floor, params.core_floor)
    else:
        local = _local_blocks(ctx, seg, rank)
        if local is None:
            offset = _core_offset(ctx, seg, rank)
    center = peers.center_log
    peer_med = float(np.exp(center))
    floor_ns = max(float(cal.t_diff_ns), floor_rel * peer_med)
    floor_log = float(np.log1p(floor_ns / peer_med))
    leave_out = sorted(ctx.slow_first.get(seg, set()))
    if local is not None:  # the rank's speed taken from each sample (module doc)
        shifts = local.blocks.shifts(rank, leave_out)
    else:
        shifts = class_blocks(prep, seg).shifts(rank, leave_out) - (
            kappa if offset is None else offset
        )
    bt = block_test(shifts, floor_log)
    # The excess is the blocks' median, the figure their test and interval are
    # about: under a core that drifts against its peers the run's median is a
    # median of a mixture, while each block's excess has the drift taken away.
    excess_log = bt.median_log if bt.tested else cell.log_median - kappa - center
    if local is not None and bt.tested:
        # With the speed taken from each sample there is no drift left to mix: the
        # run's medians, of every sample rather than of one or two a block, are
        # the estimate with the smaller error.
        excess_log = local.run_excess(rank, leave_out)
    direct = cell.log_median - center
    j.shift_ns = cell.median_ns - peer_med
    j.shift_rel, j.excess_rel = rel(direct), rel(excess_log)
    j.floor_ns = floor_ns
    j.blocks, j.steady_share = bt.blocks, bt.steady_share
    j.overlap = overlap(peers.samples_ns, cell.samples_ns) if cell.n >= 2 else None
    if not bt.tested:
        j.status = TOO_FEW
        return None
    j.p_value = bt.p_value
    j.excess_ci_rel = [rel(bt.ci_log[0]), rel(bt.ci_log[1])]
    return _Test(
        j, cell, ctx.slow_first.get(seg, set()), kappa, excess_log,
        cell.log_median - kappa - center, bt, peer_med,
        floor_ns, floor_rel, float(cal.t_diff_ns), float(cal.t_min_ns),
        local.sensitivity if local is not None else None,
    )  # fmt: skip


@dataclass(frozen=True)
class _Local:
    """One class on log-durations with each rank's speed taken away
    (perfvar.stats.local_speed): its blocks and each rank's corrected median."""

    blocks: ClassBlocks
    medians: dict[int, float]  # rank -> median corrected log-duration
    sensitivity: float  # of the class to its rank's speed (local_speed.sensitivities)

    @cached_property
    def _centres(self) -> tuple[np.ndarray, PeerCentres]:
        """(the ranks ascending, their medians' PeerCentres)."""
        ranks = np.array(sorted(self.medians), dtype=np.int64)
        return ranks, PeerCentres(np.array([self.medians[q] for q in ranks.tolist()]))

    def run_excess(self, rank: int, leave_out: list[int]) -> float:
        """``rank``'s corrected median minus its peers' centre (the median of their
        medians; those in ``leave_out`` are no peers unless none is left). Costs
        the size of ``leave_out``, not of the class's ranks."""
        ranks, centres = self._centres
        mine = int(np.searchsorted(ranks, rank))
        gone = centres.left_out(mine, rows_of(ranks, leave_out))
        return self.medians[rank] - centres.centre(mine, gone)


def _local_blocks(ctx: _Context, seg: int, rank: int) -> Optional[_Local]:
    """The class on corrected log-durations (perfvar.stats.local_speed), or None
    where that does not tell ``rank``'s excess: a rank with probes (they measure
    its core), or fewer than half of its samples or of every peer's with a speed
    (too few other classes around them). Derived once per class."""
    if rank in ctx.probe_shifts:
        return None
    if seg not in ctx.local:
        corrected = corrected_cells(ctx.prep, ctx.judgeable)
        cells = {
            q: c
            for (s, q), c in corrected.items()
            if s == seg and c.share >= LOCAL_SHARE
        }
        ctx.local[seg] = (
            _Local(
                ClassBlocks(cells),
                {q: median(np.log(c.samples_ns)) for q, c in cells.items()},
                next(iter(cells.values())).sensitivity,
            )
            if len(cells) >= 2
            else None
        )
    local = ctx.local[seg]
    if local is None or rank not in local.medians:
        return None
    return local


def _compute_by_rank(classes: dict[int, dict[int, Cell]]) -> dict[int, float]:
    """rank -> its compute time over all its cells (ns)."""
    compute_ns: dict[int, float] = {}
    for cells in classes.values():
        for rank, cell in cells.items():
            compute_ns[rank] = compute_ns.get(rank, 0.0) + float(
                np.sum(cell.samples_ns)
            )
    return compute_ns


def detect(
    prep: Prepared,
    params: Optional[DetectParams] = None,
    cores: Optional[dict[int, float]] = None,
) -> DetectorResult:
    """Judge every (segment, rank) cell; returns anomalies and one judgement each.

    ``cores``: rank -> log shift of the ranks named slow cores, the common shift of
    a rank with no other segment class (its core was told by the probes).
    """
    params = params or DetectParams()
    cores = cores or {}
    result = DetectorResult()
    classes = by_segment(prep)
    pending = _judgements(prep, classes, params, result)
    judgeable = {(seg, rank) for seg, rank, _ in pending}
    medians = _log_medians(classes)
    shifts = _direct_shifts(classes, judgeable, medians)
    witnesses = witness_classes(prep, judgeable)
    probe_shifts = _probes_tell(prep, witnesses, shifts)
    slow_first: dict[int, set[int]] = {}
    if params.peers == "robust":
        first = _first_pass_slow(prep, classes, judgeable, shifts, params)
        slow_first, shifts = _explained(
            classes, judgeable, medians, shifts, first, params, cores, probe_shifts,
            witnesses,
        )  # fmt: skip
    ctx = _Context(
        prep, params, classes, judgeable, slow_first, _by_rank(shifts), cores,
        probe_shifts, witnesses,
    )  # fmt: skip
    tests = [t for seg, rank, j in pending if (t := _test_cell(ctx, seg, rank, j))]
    compute_ns = _compute_by_rank(classes)
    for t, q in zip(tests, fdr([t.blocks.p_value for t in tests])):
        t.judgement.q_value = q
        excess_ns = t.peer_median_ns * rel(t.excess_log)
        if not t.blocks.steady:
            # Over the run's samples the cell is beyond the floor, but in fewer
            # than half of its blocks: the shift comes and goes.
            if t.peer_median_ns * rel(t.run_excess_log) > t.floor_ns:
                t.judgement.status = "unsteady"
            continue
        if not (q < params.alpha and excess_ns > t.floor_ns):
            continue
        if excess_ns * t.cell.n < MIN_COST * compute_ns[t.cell.rank]:
            continue
        t.judgement.status = "slow"
        result.anomalies.append(_anomaly(prep, t, q, excess_ns, params))
    return result


def _anomaly(
    prep: Prepared, t: _Test, q: float, excess_ns: float, params: DetectParams
) -> Anomaly:
    cell, j = t.cell, t.judgement
    peers = peer_pool(prep, cell.segment, cell.rank, t.leave_out)
    lo, hi = t.blocks.ci_log
    blocks = class_blocks(prep, cell.segment)
    return Anomaly(
        kind=KIND,
        rank=cell.rank,
        host=prep.hosts.get(cell.rank),
        cpu=cell.cpu,
        segment=j.segment,
        excess_ns=excess_ns,
        evidence={
            "n": cell.n,
            "n_raw": cell.raw_n,
            "os_noise_removed": cell.os_info.n_removed,
            "median_ns": j.median_ns,
            "iqr_ns": iqr(cell.samples_ns),
            "peers_median_ns": t.peer_median_ns,
            "peers_iqr_ns": iqr(peers.samples_ns),
            "peers_n": int(peers.samples_ns.size),
            "peer_ranks": peers.n_ranks,
            "peer_ranks_excluded": peers.excluded,
            "shift_rel": j.shift_rel,
            "core_shift_rel": rel(t.kappa),
            # How much of its rank's speed the class follows (None: not read).
            "speed_sensitivity": t.sensitivity,
            "excess_rel": rel(t.excess_log),
            "excess_ci_rel": [rel(lo), rel(hi)],
            "ci_level": 0.95,
            "test": f"one-sided sign test over {t.blocks.blocks} blocks "
            "of the run "
            "(median log-duration minus the peers' centre in each, minus the core "
            "shift)",
            **t.blocks.evidence(),
            "block_ns": blocks.block_ns,
            "p_value": t.blocks.p_value,
            "q_value": q,
            "alpha": params.alpha,
            "floor_ns": t.floor_ns,
            "floor_rel": t.floor_rel,
            "t_diff_ns": t.t_diff_ns,
            "t_min_ns": t.t_min_ns,
            "overlap": j.overlap,
            "cache_state": j.cache_state,
            "context_bytes": cell.context_bytes,
            # More work or a slower core, from the reads its class's segments took.
            "work": work.tell(
                prep.work,
                cell.rank,
                rel(t.excess_log),
                {cell.segment},
                probes=prep.probe_segment is not None,
            ),
        },
    )


def _excess(a: AnomalyJson) -> str:
    """The excess per segment and its interval. Where the rank's core runs at another
    speed than its peers', the median's own shift comes first and the excess is said
    to be beyond that core: a class can be slow beyond a fast core with a median at or
    under its peers' (-0.45 %, +4.1 % beyond a core 1.5 % fast). Either way the
    relative figure beside the interval is the excess, the blocks' median the interval
    belongs to (with one segment a block it can stand far from the whole run's
    medians' ratio, which the medians before it say)."""
    ev = a["evidence"]
    per_segment = f"{fmt_ns(a['excess_ns'], signed=True)} per segment"
    ci = stats(ev, "excess_ci_rel")
    core = ev.get("core_shift_rel") or 0.0
    if not core:
        return f"{per_segment} ({fmt_pct(ev['excess_rel'])}; {ci})"
    follows = ev.get("speed_sensitivity")
    share = ""
    if follows is not None and abs(follows - 1) >= SAID_SENSITIVITY:
        share = f"a class that follows {follows:.2f} of its rank's speed; "
    return (
        f"{fmt_pct(ev['shift_rel'])} while its core runs {fmt_pct(core)}: "
        f"{fmt_pct(ev['excess_rel'])} beyond its core, {per_segment} ({share}{ci})"
    )


def describe(a: AnomalyJson, labels: dict[str, str]) -> str:
    """One sentence with the evidence of a slow segment."""
    ev = a["evidence"]
    excluded = ev.get("peer_ranks_excluded") or []
    peers = f"{ev['peer_ranks']} peer ranks" + (
        f", {'rank' if len(excluded) == 1 else 'ranks'} "
        f"{compact_ranges(excluded)} left out as already slow"
        if excluded
        else ""
    )
    return (
        f"{where(a)} is slow in segment {a['segment']} "
        f"[{labels.get(a['segment'], '?')}]: median {fmt_ns(ev['median_ns'])} "
        f"vs peers {fmt_ns(ev['peers_median_ns'])}, {_excess(a)}; "
        f"floor {fmt_ns(ev['floor_ns'])} = max(t_diff {fmt_ns(ev['t_diff_ns'])}, "
        f"{fmt_pct(ev['floor_rel'], signed=False)}){state_of(ev)}; n={ev['n']}, "
        f"{ev['os_noise_removed']} OS-noise samples removed; paper overlap "
        f"{ev['overlap']:.3f}; IQR {fmt_ns(ev['iqr_ns'])} vs "
        f"{fmt_ns(ev['peers_iqr_ns'])} ({peers})"
        f"{core_clause(ev, work_clause(ev.get('work'), PROBES_SAID))}"
        f"{off_cpu_clause(ev)}"
    )


FINDING = FindingKind(
    name=KIND,
    verdict=True,
    word="slow segment",
    describe=describe,
    phrase=lambda a: f"{a['segment']} {fmt_ns(a['excess_ns'], signed=True)}",
    size_key="excess_rel",
    in_class=lambda a, segment: a["segment"] == segment,
    subject=CLASS,
    summary_key="slow_ranks",
)
