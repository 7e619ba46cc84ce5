"""More work or a slower core: a slow rank's instruction counts against its peers'.

A rank that runs its segments slower either executes more instructions (more work:
load imbalance, another code path) or executes the same ones in more time (a slower
core, or slower memory under it). Where the run counted instructions
(``PERFVAR_METRICS``: one of ``INSTRUCTION_EVENTS``), the counter reads tell which.

The recorder reads the counters at the entry of the call that ends a compute segment
of at least PERFVAR_METRICS_MIN_US, as deltas since the thread's previous read
(perfvar.read.samples.METRIC_DTYPE): a read's interval runs from the previous read's
call entry to this one, and covers the segments ``first`` .. ``sample`` and the MPI
calls between them. ``sample`` is the segment whose end took the read, so a read
belongs to that segment's class exactly (no time matching). Per read:

* instructions of its segments: the count times the segments' share of the interval
  (wall time minus their durations is time in MPI calls, where a waiting rank polls
  and counts instructions too); reads whose interval spent more than
  ``CALL_SHARE_OF_EXCESS`` x the finding's excess in MPI calls are left out, so
  that what a wait counted moves the comparison by less than a quarter of the excess
  even at twice the segments' instruction rate;
* the rate: instructions per ns on the CPU (the task clock, whole interval), where a
  task clock was counted.

Each read is taken relative to the median of its class over the peers' reads (so the
classes of a slow core pool together; for one class this is a constant factor). The
comparison (``tell``): instructions_rel = median of the rank's relative reads over
the median of its peers' (pooled) - 1, with a one-sided Mann-Whitney U (the rank's
reads greater). With the finding's excess e (slow_segment's ``excess_rel``,
slow_core's ``shift_rel``):

* instructions_rel >= e / 2: "more work";
* instructions_rel < e / 4 (about the same instructions, or fewer, took longer):
  "slower core";
* else "both".

Without an instruction counter, or with fewer than ``MIN_READS`` usable reads on a
side, the verdict is "could not tell", with the reason. Counts are instructions,
times ns. Pure functions over arrays; thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from perfvar.stats.compare import TEST_CAP, evenly, rank_sum_greater
from perfvar.stats.cpu_time import TASK_CLOCK, column, event_name, read_intervals

# The names an instruction counter goes by, after the PMU and before the modifiers or
# the unit mask ("perf::INSTRUCTIONS:u=1" -> "INSTRUCTIONS", "INST_RETIRED:ANY_P" ->
# "INST_RETIRED"), upper case; the first one the run counted is used.
INSTRUCTION_EVENTS = (
    "PAPI_TOT_INS",  # PAPI's preset
    "INSTRUCTIONS",  # the kernel's generic event: perf::INSTRUCTIONS
    "INST_RETIRED",  # Intel (INST_RETIRED:ANY_P), Arm PMUv3 (INST_RETIRED)
    "INSTRUCTIONS_RETIRED",  # Arm, through PAPI native
    "RETIRED_INSTRUCTIONS",  # AMD
)

MIN_READS = 5  # usable reads each side needs for a verdict
MORE_WORK = 0.5  # instructions_rel >= this x the excess: more work
SAME_WORK = 0.25  # instructions_rel < this x the excess: a slower core
CALL_SHARE_OF_EXCESS = 0.25  # a read's time in MPI calls at most this x the excess

MORE = "more work"
SLOWER = "slower core"
BOTH = "both"
UNTOLD = "could not tell"

TEST = (
    "one-sided Mann-Whitney U on the instructions per read "
    "(relative to their class's peers' median), the rank's greater"
)


def instruction_column(names: list[str]) -> Optional[int]:
    """The column of ``names`` that counted instructions (INSTRUCTION_EVENTS, in
    that order of preference, case-insensitive), or None."""
    normalised = [event_name(n) for n in names]
    for event in INSTRUCTION_EVENTS:
        if event in normalised:
            return normalised.index(event)
    return None


@dataclass(frozen=True)
class RankWork:
    """One rank's usable reads (all its threads'), aligned arrays."""

    rank: int
    segment: np.ndarray  # class (segment index) of the segment that took the read
    instructions: np.ndarray  # of the read's segments (count x their share)
    call_share: np.ndarray  # share of the read's interval in MPI calls, 0..1
    rate_per_ns: Optional[np.ndarray] = None  # instructions / task clock ns


@dataclass(frozen=True)
class Work:
    """The instruction counter's name (None: the run counted none) and the reads."""

    counter: Optional[str]
    ranks: dict[int, RankWork]


def of_reads(
    metrics: np.ndarray, names: list[str], samples: np.ndarray, ticks_per_ns: float
) -> Work:
    """The runs' instruction reads per rank, from the counter reads (METRIC_DTYPE rows
    whose "sample"/"first" index ``samples``, SAMPLE_DTYPE) whose columns are
    ``names``; ``ticks_per_ns``: the trace clock's rate. Work(None, {}) without an
    instruction column; no rank entry for a rank without a usable read."""
    col = instruction_column(names)
    if col is None:
        return Work(None, {})
    if metrics.size == 0 or samples.size == 0 or ticks_per_ns <= 0:
        return Work(names[col], {})
    valid, wall, segments_ns = read_intervals(metrics, samples, ticks_per_ns)
    rows, wall, segments_ns = metrics[valid], wall[valid], segments_ns[valid]
    sample = rows["sample"]
    counted = rows["values"][:, col]
    keep = np.isfinite(counted) & (wall > 0)
    share = np.clip((wall - segments_ns) / np.where(wall > 0, wall, 1.0), 0.0, 1.0)
    clock = column(names, TASK_CLOCK)
    rate = None
    if clock is not None:
        on = np.minimum(rows["values"][:, clock], wall)
        rate = counted / np.where(on > 0, on, np.nan)
    out = {}
    for rank in np.unique(rows["rank"][keep]):
        mine = keep & (rows["rank"] == rank)
        has_rate = rate is not None and np.isfinite(rate[mine]).all()
        out[int(rank)] = RankWork(
            rank=int(rank),
            segment=samples["segment"][sample[mine]].astype(np.int64),
            instructions=counted[mine] * (1.0 - share[mine]),
            call_share=share[mine],
            rate_per_ns=rate[mine] if has_rate else None,
        )
    return Work(names[col], out)


@dataclass
class _Side:
    """The reads of one side (the rank, or its peers), relative to their class."""

    instructions: list[np.ndarray]
    relative: list[np.ndarray]
    rates: list[np.ndarray]
    left_out: int = 0

    @property
    def reads(self) -> int:
        return int(sum(a.size for a in self.relative))


def _class_reads(
    work: Work, classes: Optional[set[int]], max_share: float
) -> dict[int, dict[int, np.ndarray]]:
    """rank -> class -> mask of its reads in ``classes`` (None: all) usable here."""
    out: dict[int, dict[int, np.ndarray]] = {}
    for rank, w in work.ranks.items():
        usable = w.call_share <= max_share
        for seg in np.unique(w.segment) if classes is None else sorted(classes):
            mask = usable & (w.segment == seg)
            if mask.any():
                out.setdefault(rank, {})[int(seg)] = mask
    return out


def _sides(work: Work, rank: int, classes: Optional[set[int]], max_share: float):
    """The rank's side and its peers', each read relative to the median of its class
    over the peers' reads (classes without reads on both sides are left out)."""
    masks = _class_reads(work, classes, max_share)
    mine, peers = _Side([], [], []), _Side([], [], [])
    for seg, mask in masks.get(rank, {}).items():
        others = [(r, m[seg]) for r, m in masks.items() if r != rank and seg in m]
        if not others:
            continue
        ref = float(
            np.median(
                np.concatenate([work.ranks[r].instructions[m] for r, m in others])
            )
        )
        if ref <= 0:
            continue
        for side, parts in ((mine, [(rank, mask)]), (peers, others)):
            for r, m in parts:
                w = work.ranks[r]
                side.instructions.append(w.instructions[m])
                side.relative.append(w.instructions[m] / ref)
                if w.rate_per_ns is not None:
                    side.rates.append(w.rate_per_ns[m])
    mine.left_out = _left_out(work, rank, classes, max_share)
    peers.left_out = sum(
        _left_out(work, r, classes, max_share) for r in work.ranks if r != rank
    )
    return mine, peers


def _left_out(
    work: Work, rank: int, classes: Optional[set[int]], max_share: float
) -> int:
    w = work.ranks.get(rank)
    if w is None:
        return 0
    wanted = (
        np.ones(w.segment.size, bool)
        if classes is None
        else np.isin(w.segment, list(classes))
    )
    return int((wanted & (w.call_share > max_share)).sum())


def _median(parts: list[np.ndarray]) -> Optional[float]:
    return float(np.median(np.concatenate(parts))) if parts else None


def verdict(instructions_rel: float, excess_rel: float) -> str:
    """The verdict word, "more work", "slower core" or "both", from the rank's
    instructions over its peers' (a ratio - 1) against the finding's excess (the
    same)."""
    if instructions_rel >= MORE_WORK * excess_rel:
        return MORE
    if instructions_rel < SAME_WORK * excess_rel:
        return SLOWER
    return BOTH


def untold(reason: str, counter: Optional[str] = None, **more: Any) -> dict[str, Any]:
    """The evidence of a finding whose work could not be told, and why."""
    return {"verdict": UNTOLD, "reason": reason, "counter": counter, **more}


def tell(
    work: Optional[Work],
    rank: int,
    excess_rel: float,
    classes: Optional[set[int]] = None,
    probes: bool = False,
) -> dict[str, Any]:
    """The evidence ``work`` of a finding on ``rank`` whose excess is ``excess_rel``
    (> 0), over the reads of ``classes`` (segment indexes; None: all its reads):
    verdict, counter, instructions (medians per read, the rank's and its peers'),
    instructions_rel, reads, rate_per_ns (instructions per ns on the CPU, None
    without a task clock), test and p_value; ``probes``: the run had fixed-work
    probes (the detectors used them). "could not tell" with a reason otherwise."""
    if work is None or work.counter is None:
        return untold("no instruction counter", probes=probes)
    max_share = CALL_SHARE_OF_EXCESS * excess_rel
    mine, peers = _sides(work, rank, classes, max_share)
    size = {
        "reads": mine.reads,
        "peers_reads": peers.reads,
        "reads_left_out": mine.left_out + peers.left_out,
        "max_call_share": max_share,
        "probes": probes,
    }
    if mine.reads < MIN_READS or peers.reads < MIN_READS:
        return untold("too few reads", work.counter, **size)
    rel_mine, rel_peers = np.concatenate(mine.relative), np.concatenate(peers.relative)
    instructions_rel = float(np.median(rel_mine) / np.median(rel_peers) - 1.0)
    rate, peers_rate = _median(mine.rates), _median(peers.rates)
    return {
        "verdict": verdict(instructions_rel, excess_rel),
        "reason": None,
        "counter": work.counter,
        "instructions": _median(mine.instructions),
        "peers_instructions": _median(peers.instructions),
        "instructions_rel": instructions_rel,
        "excess_rel": excess_rel,
        "rate_per_ns": rate,
        "peers_rate_per_ns": peers_rate,
        "rate_rel": (
            rate / peers_rate - 1.0 if rate is not None and peers_rate else None
        ),
        "test": TEST,
        "p_value": rank_sum_greater(
            evenly(rel_mine, TEST_CAP), evenly(rel_peers, TEST_CAP)
        ),
        **size,
    }
