"""Detector "slow core": a rank slower than its peers in all its segment classes.

Each judged sample of rank r is expressed against its class: z = log-duration
minus the median log-duration of the class on the other ranks (so classes of any
length pool together), and the peers' samples likewise. Rank r is a slow core when

* it has at least two judged classes (perfvar.stats.cells.unjudged_reason);
* its shift is significant over stretches of time, not samples
  (perfvar.stats.blocks): per block of the run, r's shift against its peers' centre
  in each class, averaged over its classes weighted by their compute time; a
  one-sided sign test across the blocks, q < alpha after
  Benjamini-Hochberg over the ranks tested (fewer than 5 usable blocks: not
  tested);
* the common shift (median z of r minus median z of the peers) exceeds
  ``core_floor`` and, in ns in its largest class, that class's t_diff;
* it is steady: the block shift clears ``core_floor`` in at least
  ``CORE_STEADY_SHARE`` (70 %) of the blocks. A core is hardware, slower over the
  whole run; a shift over part of it is a phase or the host (a slow phase where it
  has a window). A slow segment needs half the blocks only (perfvar.stats.blocks):
  extra work in one class can come with the steps that do it. Measured on the kept
  traces of three validation runs (CloverLeaf, the stencil, the twins, 2026-11-27):
  at 70 % instead of half, five wrong slow cores went (CloverLeaf, steady in 52-68 % of
  the blocks: one rank's vCPU slower for part of the run; one was a clean trial's only
  name), the twins' +5 % cores (steady in every block) and every hit stayed;
* the shift is common: at least two classes, holding at least two thirds of r's
  compute time, are each shifted by more than the floor. A rank slow in one class
  only is a slow segment, not a slow core (perfvar.detect.slow_segment), even on a
  core a little slower than its peer's (+10 % in one class and +1.5 % in the other
  pool to a shift above the floor, but only half the time is shifted by more than
  it), and even when that class holds most of its time (tripled, it outweighs the
  rest in the time share and, with more samples, in the pooled median). The
  fixed-work probes (perfvar.stats.probes), where the run has them, are one more class
  that weighs as much as all the rank's segments: a core slow on fixed work and in its
  segments is a slow core even with one segment class; slow segments on a core
  whose probes are not slow are not;
* the shift is coherent: classes holding ``OPPOSED_SHARE`` (10 %) or more of its
  compute time are not faster than their peers by as much as the rank is slower
  (on the log scale), and the classes shifted beyond the floor, the probes among
  them, agree within ``AGREE_FACTOR`` (4x) of each other. Classes whose ranks differ
  by design go both ways (a real code's rank measured S4 +196 %, S5 -54 %, S7 -58 %,
  pooled into "+49.5 % in all its classes"), and more work in one class is no
  slower core beside probes that barely moved: a slower core slows them all alike.

``excess_ns`` is the time the core loses per segment on average. The evidence
``work`` says whether the rank's counter reads counted more instructions than its
peers' (more work) or the same (a slower core), where the run counted instructions
(perfvar.stats.work, over all its reads, against its shift). A class slower
still than the rest of a slow core is a slow segment as well
(perfvar.detect.slow_segment judges each class beyond the rank's other classes).
Pure function; thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from perfvar.detect.finding import CORE, AnomalyJson, FindingKind
from perfvar.detect.words import (
    core_clause,
    neighbours_clause,
    stats,
    virtual_clause,
    where,
    work_clause,
)
from perfvar.stats import work
from perfvar.stats.blocks import block_test, class_blocks, weighted_blocks
from perfvar.stats.cells import by_segment, class_pool, unjudged_reason
from perfvar.stats.compare import TEST_CAP, fdr, log_ns, rel
from perfvar.stats.model import Anomaly, DetectorResult, DetectParams, Prepared
from perfvar.stats.order import median
from perfvar.units import fmt_ns, fmt_pct

KIND = "slow_core"
COMMON_SHARE = 2 / 3  # of the rank's compute time, in classes shifted alike
CORE_STEADY_SHARE = 0.7  # of its usable blocks, clearing the floor: a steady core
MIN_SHIFTED_CLASSES = 2  # the probes, where the run has them, count as one
# Of the rank's compute time, the most its classes shifted the other way may hold: a
# class at least as much faster as the rank is slower is no slower core.
OPPOSED_SHARE = 0.1
# The classes shifted beyond the floor (the probes among them) agree within this
# factor of each other (log scale): the probes +3.4 % beside a class +205 % are no
# common shift (the demo's rank with 3x the work in its one large class).
AGREE_FACTOR = 4.0
PROBES_SAID = " (its fixed-work probes are slower too: a slower core)"


@dataclass
class CoreResult(DetectorResult):
    cores: dict[int, float] = field(default_factory=dict)  # rank -> log shift


@dataclass
class _Rank:
    rank: int
    blocks: list[np.ndarray] = field(default_factory=list)  # per class, log shifts
    classes: list[dict] = field(default_factory=list)
    # median z of the rank minus median z of its peers, over its classes pooled
    # (None with fewer than two classes: never tested)
    shift_log: Optional[float] = None


def _collect(prep: Prepared, params: DetectParams) -> dict[int, _Rank]:
    """rank -> its judged classes, in the order the classes first judge a rank.

    One rank at a time: its samples' and its peers' z are reduced to their medians
    before the next rank's are made, so only per-rank summaries stay (every rank's
    z and peer draws at once held 370 MB at 1024 ranks x 10^4 segments)."""
    judged: dict[int, list[tuple[int, Any, Any]]] = {}
    for seg, cells in by_segment(prep, probes=True).items():
        for rank, cell in cells.items():
            reason, cal = unjudged_reason(prep, cell, params.min_samples)
            if not reason:
                judged.setdefault(rank, []).append((seg, cell, cal))
    out = {rank: _rank(prep, rank, mine) for rank, mine in judged.items()}
    for entry in out.values():
        # The probes take little time but are an independent witness of the core:
        # they weigh as much as all the rank's segments together.
        segments = sum(c["time_ns"] for c in entry.classes if not c["probe"])
        for c in entry.classes:
            if c["probe"]:
                c["time_ns"] = segments
    return out


def _rank(prep: Prepared, rank: int, judged: list[tuple[int, Any, Any]]) -> _Rank:
    """The _Rank of ``rank`` from its judged (class, cell, calibration)s."""
    entry = _Rank(rank)
    z_all, z_peers = [], []
    for seg, cell, cal in judged:
        pool = class_pool(prep, seg)
        ref = pool.pooled_median_log(rank)
        z = log_ns(cell.samples_ns) - ref
        z_all.append(z)
        # The peers' median z needs no more than TEST_CAP a class, spread over the
        # run.
        z_peers.append(pool.others_log_evenly(rank, TEST_CAP) - ref)
        entry.blocks.append(class_blocks(prep, seg).shifts(rank))
        entry.classes.append(
            {
                "segment": prep.segment_ids[seg],
                "shift_rel": rel(median(z)),
                "time_ns": float(cell.samples_ns.sum()),
                "probe": seg == prep.probe_segment,
                "n": cell.n,
                "peers_median_ns": float(np.exp(ref)),
                "t_diff_ns": float(cal.t_diff_ns),
            }
        )
    if len(entry.classes) >= 2:
        z, zp = np.concatenate(z_all), np.concatenate(z_peers)
        entry.shift_log = median(z) - median(zp)
    return entry


def _block_tests(prep: Prepared, params: DetectParams) -> list[tuple]:
    """(its _Rank, its log shift, its BlockTest) of every rank with two or more
    judged classes whose blocks could be tested."""
    candidates = [r for r in _collect(prep, params).values() if len(r.classes) >= 2]
    floor_log = float(np.log1p(params.core_floor))
    tests = []
    for r in candidates:
        # Each class weighs its compute time in the block shifts (the probes as
        # much as all the segments, as in the share below).
        d = weighted_blocks(r.blocks, [c["time_ns"] for c in r.classes])
        bt = block_test(d, floor_log)
        if bt.tested:
            tests.append((r, r.shift_log, bt))
    return tests


def _common(r: _Rank, params: DetectParams) -> tuple[float, float, int, float]:
    """(the rank's time in its classes, the probes counted as all its segments; its
    compute time, the probes left out; how many classes are shifted beyond the core
    floor, and their time)."""
    time = sum(c["time_ns"] for c in r.classes)
    compute = sum(c["time_ns"] for c in r.classes if not c["probe"])
    shifted = [c for c in r.classes if c["shift_rel"] > params.core_floor]
    return time, compute, len(shifted), sum(c["time_ns"] for c in shifted)


def _coherent(r: _Rank, shift_log: float, params: DetectParams) -> bool:
    """The same shift in its classes: none holding OPPOSED_SHARE of its compute time
    shifted the other way as much, and those shifted beyond the floor within
    AGREE_FACTOR of each other."""
    floor = params.core_floor
    shifted = [np.log1p(c["shift_rel"]) for c in r.classes if c["shift_rel"] > floor]
    agree = not shifted or min(shifted) * AGREE_FACTOR >= max(shifted)
    return agree and _opposed_share(r, shift_log) < OPPOSED_SHARE


def _opposed_share(r: _Rank, shift_log: float) -> float:
    """The share of the rank's compute time in classes faster than their peers by at
    least as much as the rank is slower (``shift_log``): shifts that go both ways."""
    compute = sum(c["time_ns"] for c in r.classes if not c["probe"])
    faster = -rel(shift_log) / (1 + rel(shift_log))  # the mirror of the shift, in rel
    opposed = sum(
        c["time_ns"] for c in r.classes if not c["probe"] and c["shift_rel"] <= faster
    )
    return opposed / compute if compute else 0.0


def _is_slow_core(
    r: _Rank, shift_log: float, bt: Any, q: float, params: DetectParams
) -> bool:
    """The rule: significant, steady, beyond the floor, common to enough of its
    classes and time, coherent (_coherent), and beyond t_diff in its largest
    class."""
    time, _, shifted, common = _common(r, params)
    largest = max(
        (c for c in r.classes if not c["probe"]),
        key=lambda c: c["time_ns"],
        default=r.classes[0],
    )
    largest_excess = largest["peers_median_ns"] * rel(shift_log)
    return (
        q < params.alpha
        and bt.steady_in(CORE_STEADY_SHARE)
        and shift_log > float(np.log1p(params.core_floor))
        and shifted >= MIN_SHIFTED_CLASSES
        and common >= COMMON_SHARE * time
        and _coherent(r, shift_log, params)
        and largest_excess > largest["t_diff_ns"]
    )


def detect(prep: Prepared, params: Optional[DetectParams] = None) -> CoreResult:
    """Name the slow cores: one anomaly per rank, and ``cores`` (rank -> log shift)."""
    params = params or DetectParams()
    result = CoreResult()
    tests = _block_tests(prep, params)
    for (r, shift_log, bt), q in zip(tests, fdr([t[2].p_value for t in tests])):
        if not _is_slow_core(r, shift_log, bt, q, params):
            continue
        result.cores[r.rank] = shift_log
        result.anomalies.append(_anomaly(prep, r, shift_log, bt, q, params))
    return result


def _anomaly(
    prep: Prepared,
    r: _Rank,
    shift_log: float,
    bt: Any,
    q: float,
    params: DetectParams,
) -> Anomaly:
    """The slow core ``r`` as an anomaly with its evidence."""
    time, compute, _, common = _common(r, params)
    lo, hi = bt.ci_log
    n = sum(c["n"] for c in r.classes if not c["probe"]) or 1
    cells = [prep.cells[k] for k in prep.cells if k[1] == r.rank]
    cpu = next((c.cpu for c in cells if c.cpu is not None), None)
    return Anomaly(
        kind=KIND,
        rank=r.rank,
        host=prep.hosts.get(r.rank),
        cpu=cpu,
        segment=None,
        # The time the core lost: its compute time at the blocks' shift.
        excess_ns=compute * (1 - np.exp(-bt.median_log)) / n,
        evidence={
            # The size, the one the test and its interval belong to: the median of the
            # blocks' shifts, each class weighted by its compute time, so it is the
            # share of compute time lost that the delay cost charges.
            "shift_rel": rel(bt.median_log),
            "shift_ci_rel": [rel(lo), rel(hi)],
            # The rule's shift: the pooled samples' median, where classes of many
            # short segments weigh more (the typical segment, not the time).
            "segment_shift_rel": rel(shift_log),
            "ci_level": 0.95,
            "test": f"one-sided sign test over {bt.blocks} blocks "
            "of the run "
            "(the rank's shift against each class's peers in the block, "
            "weighted by the classes' compute time)",
            **bt.evidence(),
            "p_value": bt.p_value,
            "q_value": q,
            "alpha": params.alpha,
            "floor_rel": params.core_floor,
            "common_share": common / time if time else None,
            "classes": r.classes,
            "n": n,
            "compute_ns": compute,
            # More work or a slower core, from all its counter reads.
            "work": work.tell(
                prep.work,
                r.rank,
                rel(shift_log),
                probes=prep.probe_segment is not None,
            ),
        },
    )


SHOWN_CLASSES = 6  # classes a description lists with their shift


def describe(a: AnomalyJson, labels: dict[str, str]) -> str:
    """One sentence with the evidence of a slow core."""
    ev = a["evidence"]
    classes = ", ".join(
        f"{c['segment']} {fmt_pct(c['shift_rel'])}"
        for c in ev["classes"][:SHOWN_CLASSES]
    )
    more = len(ev["classes"]) - SHOWN_CLASSES
    # Without an instruction counter, its probes (a class of the rule) told the core.
    probes = any(c.get("probe") for c in ev["classes"])
    return (
        f"{where(a)} is a slow core: {fmt_pct(ev['shift_rel'])} in all its segment "
        f"classes by compute time ({stats(ev, 'shift_ci_rel')}), its median segment "
        f"{fmt_pct(ev['segment_shift_rel'])} (floor "
        f"{fmt_pct(ev['floor_rel'], signed=False)}), "
        f"{fmt_ns(a['excess_ns'], signed=True)} per segment on average; by class: "
        f"{classes}{f' and {more} more' if more > 0 else ''}"
        f"{core_clause(ev, work_clause(ev.get('work'), PROBES_SAID if probes else ''))}"
        f"{neighbours_clause(ev)}{virtual_clause(ev)}"
    )


FINDING = FindingKind(
    name=KIND,
    verdict=True,
    word="slow core",
    describe=describe,
    phrase=lambda a: f"slow core {fmt_pct(a['evidence']['shift_rel'])}",
    size_key="shift_rel",
    subject=CORE,
    summary_key="slow_core_ranks",
)
