"""The headline: findings ranked by what they cost the job, symptoms apart.

After the detectors (perfvar.detect.run_all), on the trace's call timeline:

1. wait states (perfvar.verdict.wait_states) and each finding's delay cost
   (perfvar.verdict.delay_cost): ``cost_ns``, ``cost_share`` (of wall time x ranks);
2. symptoms apart. Every finding of a rank whose CPU other ranks of the job ran on
   too is that time-slicing (perfvar.verdict.time_slicing). A slow_core or
   slow_segment of a rank whose noisy core the counters measured, or a
   slow_segment whose rank was off its CPU inside the class's segments longer
   than its peers, is a consequence of that time off the
   CPU when it explains at least half of the finding (perfvar.verdict.off_cpu);
   where it explains less, the finding keeps it in its evidence (``off_cpu``) and
   is charged only the rest. A slow_segment of rank r in
   class S is a *consequence* of waiting when r
   waited before S longer than its peers did before S (median waiting of the
   calls that open S: r's minus the peers' at least the finding's excess per
   segment, and r's larger by a one-sided Mann-Whitney U test, p < alpha), and,
   where r's S samples come both after such long waits and after short ones (at
   least ``min_samples`` each), the ones after long waits are the slower ones
   (the same test on their durations). A consequence is reported under its cause
   ("rank 0's S3 +55 % after waiting 4.4 ms for rank 1 in MPI_Allreduce"), not as
   a verdict;
3. the machine's levels (perfvar.detect.fold_levels): where the ranks of a node or
   socket were found alike, their findings fold into one of that node or socket,
   its cost the sum of theirs (a node of 64 ranks each below the threshold can be
   the headline);
4. the verdict: findings whose cost_share is at least ``min_cost`` are the
   headline, ranked by cost; the others are *minor* (listed apart, naming no
   rank). Where the cost cannot be measured (one rank, no synchronised timeline)
   every finding stays in the headline, as the detectors named it.

Pure functions; thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from perfvar.detect import Place, class_kind, fold_levels, verdict_kind
from perfvar.read.samples import TraceSamples
from perfvar.stats.compare import mann_whitney_greater
from perfvar.stats.model import Anomaly
from perfvar.units import fmt_ms, signed_pct
from perfvar.verdict import delay_cost, time_slicing, wait_states, wait_summary
from perfvar.verdict.consequence import consequence
from perfvar.verdict.off_cpu import (
    ClassOffCpu,
    class_symptom,
    in_class,
    noisy_cores,
    symptom_of,
)
from perfvar.verdict.parts import LocalParts, Parts

# The share of the job's rank-time (wall x ranks) a finding's delay cost must reach
# to be a headline finding (0.003 = 0.3 %); see docs/analysis.md for the choice.
DEFAULT_MIN_COST = 0.003
# What a consequence follows ("cause" in analysis.json): the waiting before it (or
# its rank's time off the CPU that the counters measured: off_cpu.OFF_CPU).
WAITING = "waiting"
WAITING_TEST = (
    "one-sided Mann-Whitney U: the rank's waiting before the class vs its peers'; "
    "where both exist, its durations after long vs short waits"
)


def after_waiting(consequence: Any) -> bool:
    """Whether a consequence (perfvar.result.Consequence) follows waiting rather than
    its rank's time off the CPU; entries without a cause (analysis.json written before
    causes were named) are all of waiting."""
    return (consequence.cause or WAITING) == WAITING


@dataclass
class Ranked:
    """The anomalies split: ``anomalies`` (headline verdicts by cost, then the
    informational kinds), ``minor`` (verdict kinds below the cost threshold),
    ``consequences`` (JSON-ready dicts) and the wait-state summary ``waits``."""

    anomalies: list[Anomaly]
    minor: list[Anomaly] = field(default_factory=list)
    consequences: list[dict[str, Any]] = field(default_factory=list)
    waits: dict[str, Any] = field(default_factory=dict)
    cost_known: bool = False


def _main_cause(causes: np.ndarray, waiting_ns: np.ndarray) -> Optional[int]:
    """The rank that made the calls (their ``causes`` and ``waiting_ns``) wait the
    longest in total, None if none did."""
    weights = np.bincount(np.maximum(causes, 0), weights=waiting_ns * (causes >= 0))
    return int(np.argmax(weights)) if weights.size and weights.max() > 0 else None


def _opening_waits(
    part: wait_states.CallPart, given: tuple[list[int], int]
) -> tuple[np.ndarray, ...]:
    """The waiting before the part's segments of the classes ``given`` (segment
    indices, and a rank): (the rank's waits, its peers' waits, the rank's
    segments' durations, the causes and the functions of the rank's waits)."""
    classes, rank = given
    tl, ws, samples = part.tl, part.ws, part.samples
    opening = np.full(samples.size, -1, wait_states.sample_index_dtype(tl.n))
    opening[tl.after] = np.arange(tl.n)
    of_class = np.flatnonzero(np.isin(samples["segment"], classes))
    of_class = of_class[opening[of_class] >= 0]
    calls = opening[of_class]
    mine = tl.rank[calls] == rank
    my_calls = calls[mine]
    return (
        ws.waiting_ns[my_calls],
        ws.waiting_ns[calls[~mine]],
        samples["duration_ns"][of_class[mine]],
        ws.cause[my_calls],
        tl.function[my_calls],
    )


def consequence_of(
    a: Anomaly,
    parts: Parts,
    job: wait_states.JobCalls,
    segment_ids: list[str],
    alpha: float,
    min_samples: int,
) -> Optional[dict[str, Any]]:
    """The slow_segment ``a`` as a consequence of waiting (a JSON-ready dict), or
    None when its rank did not wait before it more than its peers did."""
    if not class_kind(a.kind) or a.segment is None or not job.synchronised:
        return None
    classes = [i for i, s in enumerate(segment_ids) if s == a.segment]
    answers = parts.each(_opening_waits, (classes, a.rank))
    w_mine, w_peers, d, causes, functions = (np.concatenate(x) for x in zip(*answers))
    if w_mine.size < min_samples or w_peers.size < min_samples:
        return None
    excess = max(a.excess_ns or 0.0, 0.0)
    m_mine, m_peers = float(np.median(w_mine)), float(np.median(w_peers))
    if m_mine - m_peers < excess:
        return None
    if mann_whitney_greater(w_mine, w_peers) >= alpha:
        return None
    long = w_mine > m_peers + excess
    within_p = None
    if long.sum() >= min_samples and (~long).sum() >= min_samples:
        within_p = mann_whitney_greater(d[long], d[~long])
        if within_p >= alpha:
            return None  # as slow after short waits: not the waits' doing
    cause = _main_cause(causes, w_mine)
    fns = np.bincount(functions, minlength=len(job.functions))
    function = job.functions[int(np.argmax(fns))]
    ev = a.evidence or {}
    rel = ev.get("excess_rel", ev.get("shift_rel"))
    pct = signed_pct(rel)
    whom = f" for rank {cause}" if cause is not None else ""
    text = (
        f"rank {a.rank}'s {a.segment}{pct} after waiting {fmt_ms(m_mine)}{whom} "
        f"in {function}"
    )
    figures = {
        "after_waiting_ns": m_mine,
        "peers_waiting_ns": m_peers,
        "function": function,
        "within_rank_p_value": within_p,
    }
    return consequence(a, WAITING, cause, text, WAITING_TEST, figures)


def _symptoms_apart(
    anomalies: list[Anomaly],
    trace: TraceSamples,
    parts: Parts,
    job: wait_states.JobCalls,
    segment_ids: list[str],
    alpha: float,
    min_samples: int,
) -> tuple[list[Anomaly], list[dict[str, Any]]]:
    """(the findings that stay, the consequences): step 2 of the module docstring."""
    consequences = []
    kept = []
    noisy = noisy_cores(anomalies)
    shared = time_slicing.sharing(anomalies)
    in_classes = ClassOffCpu(trace, segment_ids)
    for a in anomalies:
        part = in_class(a, in_classes, alpha, min_samples)
        c = (
            time_slicing.symptom_of(a, shared)
            or symptom_of(a, noisy)
            or (class_symptom(a, part) if part is not None else None)
            or consequence_of(a, parts, job, segment_ids, alpha, min_samples)
        )
        if c is not None:
            consequences.append(c)
            continue
        if part is not None:  # the rest is the segment's: only that is charged
            a.evidence = {**(a.evidence or {}), "off_cpu": part.to_json()}
        kept.append(a)
    return kept, consequences


def rank_findings(
    anomalies: list[Anomaly],
    trace: TraceSamples,
    segment_ids: list[str],
    min_cost: float = DEFAULT_MIN_COST,
    alpha: float = 0.05,
    min_samples: int = 8,
    places: Optional[Mapping[int, Place]] = None,
    parts: Optional[Parts] = None,
) -> Ranked:
    """Split and rank the detectors' ``anomalies`` (see the module docstring).
    ``segment_ids``: display id of each trace segment index; ``min_cost``: a share
    of wall time x ranks; ``places``: rank -> where it ran (node, socket), for the
    machine's levels (none: no levels); ``parts``: the trace's calls where they
    are (perfvar.verdict.parts, of wait_states.CallPart), when the caller built
    them; else every rank's calls as one part of ``trace``, whose samples' class
    and duration (read.samples.DURATION_FIELDS) are all that is read of them
    beyond its calls, and its metrics."""
    if parts is None:
        parts = LocalParts(
            [
                wait_states.part_of(
                    trace.samples, trace.segments, trace.trace_ns, trace.probes
                )
            ]
        )
    job = wait_states.find_in_parts(parts)
    kept, consequences = _symptoms_apart(
        anomalies, trace, parts, job, segment_ids, alpha, min_samples
    )
    cost = delay_cost.costs(kept, parts, job, segment_ids)
    known = job.synchronised and len(job.ranks) > 1
    for a, c in zip(kept, cost):
        a.cost_ns = c
        a.cost_share = delay_cost.cost_share(c, job)
    if places:
        kept = fold_levels(kept, places)
    verdicts = [a for a in kept if verdict_kind(a.kind)]
    info = [a for a in kept if not verdict_kind(a.kind)]
    head = [a for a in verdicts if a.cost_share is None or a.cost_share >= min_cost]
    minor = [a for a in verdicts if all(a is not h for h in head)]
    head.sort(key=lambda a: -(a.cost_ns or 0.0))
    minor.sort(key=lambda a: -(a.cost_ns or 0.0))
    waits = wait_summary.summarise(parts, job)
    waits["cost_known"] = known
    return Ranked(head + info, minor, consequences, waits, known)
