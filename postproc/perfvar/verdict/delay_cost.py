"""Delay cost of each finding: the waiting it caused on the other ranks (Böhme et al.).

A wait state (perfvar.verdict.wait_states) of rank p at a call, caused by rank q, has a
delay: the segments q ran since its previous synchronising call (a matched
collective or a blocking point-to-point call) up to the call whose entry released
p. A finding of q (slow_segment, slow_core, noisy_core, slow_phase) has an excess
in each of q's segments it covers:

* slow_segment: the finding's ``excess_ns`` in every segment of its class, less
  the time off the CPU per segment beyond its peers' that its evidence names
  (``off_cpu``, perfvar.verdict.off_cpu): time the rank was not running, not
  the segment's work;
* slow_core: d x s / (1 + s) in every segment, s its ``shift_rel`` (by compute time);
* slow_phase: d x x / (1 + x) in the segments of its classes inside its window, x
  the class's ``excess_rel``;
* noisy_core: d - the class's median on that rank, for the segments beyond the
  far-out fence Q3 + 3 x max(IQR, 1 % of the median) of the class on the rank (the
  interruptions, as perfvar.detect.noisy_core counts them); where the counters
  measured the rank's time off its CPU (the finding's evidence ``measured``),
  d x (f - f_peers) in every segment, f its share of time off the CPU and f_peers
  its peers': a process sharing the CPU in 4 ms slices lengthens every long
  segment alike, with no segment beyond the fence.

The short-term delay cost charged at one wait state is min(waiting, excess of all
q's findings in the delay), shared among q's findings in proportion to their
excess there; a finding's ``cost_ns`` is the sum over every wait state q caused.
Waiting that q passed on (q was late because it had waited) is no excess of q's
segments, so it is not charged: a symptom costs nothing of its own. The long-term
cost (waiting propagated further) is not computed.

``cost_share`` = cost_ns / (wall time x ranks): the share of the job's rank-time
spent waiting because of the finding (wall time from the first segment's start to
the last one's end). Pure functions over numpy arrays; thread-safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import numpy as np

from perfvar.detect import subject, verdict_kind
from perfvar.detect.finding import CLASS, CORE, NOISE, WINDOW
from perfvar.stats.model import Anomaly
from perfvar.verdict.parts import Parts
from perfvar.verdict.wait_states import CallPart, JobCalls, Timeline

FENCE_IQR = 3.0
FENCE_MIN_SPREAD = 0.01


def _classes_of(segment_ids: Sequence[str], ids: set[str]) -> np.ndarray:
    """Segment indices whose display id is in ``ids``."""
    return np.array([i for i, s in enumerate(segment_ids) if s in ids], dtype=np.int64)


def _noisy_excess(durations: np.ndarray, classes: np.ndarray) -> np.ndarray:
    out = np.zeros(durations.size)
    for g in np.unique(classes):
        at = classes == g
        d = durations[at]
        if d.size < 8:
            continue
        q1, med, q3 = np.percentile(d, [25, 50, 75])
        fence = q3 + FENCE_IQR * max(q3 - q1, FENCE_MIN_SPREAD * med)
        out[at] = np.where(d > fence, d - med, 0.0)
    return out


def segment_excess(
    anomaly: Anomaly,
    tl: Timeline,
    samples: np.ndarray,
    segment_ids: Sequence[str],
) -> np.ndarray:
    """The finding's excess (ns) in each of its rank's master-thread segments, in
    the rank's time order (Timeline.segments); zeros where it does not apply."""
    idx = tl.segments.get(anomaly.rank)
    if idx is None:
        return np.zeros(0)
    d = samples["duration_ns"][idx]
    cls = samples["segment"][idx]
    ev = anomaly.evidence or {}
    about = subject(anomaly.kind)
    if about == CLASS and anomaly.segment is not None:
        mine = np.isin(cls, _classes_of(segment_ids, {anomaly.segment}))
        off = float((ev.get("off_cpu") or {}).get("beyond_ns") or 0.0)
        return np.where(mine, max((anomaly.excess_ns or 0.0) - off, 0.0), 0.0)
    if about in (CORE, CLASS):  # a rank's shift in all its classes
        s = max(float(ev.get("shift_rel") or 0.0), 0.0)
        return d * s / (1 + s)
    if about == WINDOW:
        start = tl.seg_start_ns[anomaly.rank]
        lo = anomaly.start_ns if anomaly.start_ns is not None else -np.inf
        hi = anomaly.end_ns if anomaly.end_ns is not None else np.inf
        out = np.zeros(d.size)
        for c in ev.get("classes") or [{"segment": anomaly.segment}]:
            x = max(float(c.get("excess_rel") or ev.get("excess_rel") or 0.0), 0.0)
            inside = np.isin(cls, _classes_of(segment_ids, {c.get("segment")}))
            inside &= (start >= lo) & (start < hi)
            out[inside] = d[inside] * x / (1 + x)
        return out
    if about == NOISE:
        return _noisy_excess(d, cls) if "measured" not in ev else _off_cpu_excess(d, ev)
    return np.zeros(d.size)


def _off_cpu_excess(durations: np.ndarray, ev: dict) -> np.ndarray:
    """A measured noisy core's excess in each segment: its share of time off the CPU
    beyond its peers' (the evidence of perfvar.detect.noisy_core) of the segment."""
    off = float(ev["measured"].get("off_cpu_fraction") or 0.0)
    beyond = max(off - float(ev.get("peers_off_cpu_fraction") or 0.0), 0.0)
    return durations * beyond


def costs(
    anomalies: Sequence[Anomaly],
    parts: Parts,
    job: JobCalls,
    segment_ids: Sequence[str],
) -> list[Optional[float]]:
    """cost_ns of each anomaly (None for the informational kinds, and for all when
    the calls are not synchronised or have fewer than two ranks), from the parts'
    wait states (``job``: wait_states.find_in_parts' result). Each finding's cost
    is summed per waiting rank where its waits are, then over the ranks in rank
    order: the same additions however the ranks are split into parts."""
    out: list[Optional[float]] = [None] * len(anomalies)
    if not job.synchronised or len(job.ranks) < 2:
        return out
    findings: dict[int, list[int]] = {}
    for k, a in enumerate(anomalies):
        if verdict_kind(a.kind):
            out[k] = 0.0
            findings.setdefault(a.rank, []).append(k)
    if not findings:
        return out
    asked = {q: [anomalies[k] for k in ks] for q, ks in findings.items()}
    excess = {
        q: cum
        for found in parts.each(_excess_by_rank, (asked, list(segment_ids)))
        for q, cum in found.items()
    }
    charged = parts.each(_charged, excess)
    for q, ks in findings.items():
        if q not in excess:
            continue
        per_rank = np.concatenate([c[q] for c in charged], axis=1)
        for row, k in enumerate(ks):
            out[k] = float(per_rank[row].sum())
    return out


def _excess_by_rank(
    part: CallPart, given: tuple[dict[int, list[Anomaly]], list[str]]
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """For each rank of the part that has findings: (the findings' excess summed
    over its segments 0..k-1, for every k: findings x segments + 1; the positions of
    its synchronising calls, ascending)."""
    asked, segment_ids = given
    tl, out = part.tl, {}
    for q, found in asked.items():
        if q not in tl.segments:
            continue
        excess = np.stack(
            [segment_excess(a, tl, part.samples, segment_ids) for a in found]
        )
        cum = np.concatenate([np.zeros((len(found), 1)), np.cumsum(excess, axis=1)], 1)
        mine = np.flatnonzero((tl.rank == q) & part.ws.sync)
        out[q] = (cum, np.sort(tl.local[mine]))
    return out


def _charged(
    part: CallPart, excess: dict[int, tuple[np.ndarray, np.ndarray]]
) -> dict[int, np.ndarray]:
    """For each rank q of ``excess`` (_excess_by_rank), the waiting of the part's
    calls that q caused charged to each of q's findings, summed per waiting rank
    (findings x the part's ranks)."""
    tl, ws = part.tl, part.ws
    ranks = np.asarray(tl.ranks, dtype=np.int64)
    out = {}
    for q, (cum, sync_at) in excess.items():
        out[q] = np.zeros((cum.shape[0], ranks.size))
        waits = np.flatnonzero((ws.cause == q) & (ws.waiting_ns > 0))
        if waits.size == 0:
            continue
        at = ws.cause_local[waits]
        k_prev = np.searchsorted(sync_at, at, side="left") - 1
        since = np.where(k_prev >= 0, sync_at[np.maximum(k_prev, 0)], 0)
        # Segments since..at-1 lie between the previous synchronising call and the
        # releasing one (call k sits between segments k-1 and k).
        e = cum[:, at] - cum[:, since]  # (findings, waits)
        total = e.sum(axis=0)
        charged = np.minimum(ws.waiting_ns[waits], total)
        share = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
        row = np.searchsorted(ranks, tl.rank[waits])
        for k in range(cum.shape[0]):
            out[q][k] = np.bincount(
                row, weights=share[k] * charged, minlength=ranks.size
            )
    return out


def cost_share(cost_ns: Optional[float], job: JobCalls) -> Optional[float]:
    """cost_ns / (wall time x ranks); None when unknown."""
    if cost_ns is None or job.wall_ns <= 0 or not job.ranks:
        return None
    return cost_ns / (job.wall_ns * len(job.ranks))
