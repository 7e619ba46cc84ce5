"""Duration modes: one segment class whose segments are two kinds of work.

A compute segment is keyed by the call paths of the MPI calls around it. Where a code
loops over MPI calls inside one helper, the same pair of call paths bounds different
work: CoMD's halo exchange calls MPI_Sendrecv from the same lines for each of three
axes, so the segments between two axes (packing atoms, ~0.2 ms) and the one from the
last axis of a step to the first of the next (the whole force computation, ~30 ms)
share one key, two of the first for one of the second. The class's median is then the
more numerous kind's: a slower force computation on one rank does not move it. No call
path tells them apart (the frames are the same, only the loop's index differs); their
durations do: two kinds of work lie far apart with nothing between them, in the same
proportion on every rank.

A class is split at the widest gap of its log-durations pooled over its ranks, where
each side keeps at least ``MIN_SHARE`` of the pooled segments, when

* the gap spans at least ``GAP_RATIO`` (4x): the spread of one kernel (caches, the
  host, an injected or a real slowdown of tens of %) stays well inside it;
* every rank that has the class has at least ``MIN_PER_RANK`` segments of it, at
  least ``MIN_SHARE`` on each side, and its share above the gap is within
  ``SHARE_SPREAD`` of the pooled share: the code's loop makes the proportion, so
  every rank has the same, while a process sharing one rank's CPU lengthens some of
  that rank's segments only.

Each side becomes a class of its own, keyed ``<key>#below:<ns>`` and
``<key>#above:<ns>`` (perfvar.read.segments parses the tag; the threshold is the
gap's geometric middle, in ns), judged like any other. A trace's samples are
relabelled before cells are made, as perfvar.read.families does for families. Pure
apart from copying the samples array; thread-safe.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import numpy as np

from perfvar.read.samples import class_rows, distinct_counts
from perfvar.read.segments import mode_key

GAP_RATIO = 4.0  # the two kinds' nearest segments at least this far apart
MIN_SHARE = 0.1  # of each rank's segments of the class, on each side
SHARE_SPREAD = 0.1  # a rank's share above the gap, off the pooled share by at most
MIN_PER_RANK = 20  # segments of the class a rank needs for its share to mean much


def split_threshold(durations_ns: np.ndarray, ranks: np.ndarray) -> Optional[float]:
    """The duration (ns) that splits one class's segments into two kinds of work, or
    None when they are one kind by the rules of the module docstring. ``ranks``: the
    rank of each duration."""
    d = np.asarray(durations_ns, dtype=np.float64)
    r = np.asarray(ranks)
    ok = d > 0
    d, r = d[ok], r[ok]
    owners, counts = distinct_counts(r)
    if owners.size == 0 or counts.min() < MIN_PER_RANK:
        return None
    logs = np.sort(np.log(d))
    lo = int(np.ceil(MIN_SHARE * logs.size))  # each side keeps MIN_SHARE
    hi = logs.size - lo
    if hi <= lo:
        return None
    gaps = logs[lo:hi] - logs[lo - 1 : hi - 1]  # gap below sorted position lo..hi-1
    at = int(np.argmax(gaps))
    if gaps[at] < np.log(GAP_RATIO):
        return None
    threshold = float(np.exp((logs[lo + at] + logs[lo + at - 1]) / 2))
    pooled = float(np.mean(d > threshold))
    for rank in owners:
        share = float(np.mean(d[r == rank] > threshold))
        if not MIN_SHARE <= share <= 1 - MIN_SHARE:
            return None
        if abs(share - pooled) > SHARE_SPREAD:
            return None
    return threshold


def split_modes(trace: Any) -> Any:
    """``trace`` (a TraceSamples) with its classes of two kinds of work split: a copy
    when any is split. The part below the threshold keeps the class's index, the part
    above gets a new one at the end; both parts' keys carry the tag (their side and the
    threshold, SegmentKey.mode)."""
    s = trace.samples
    if s.size == 0:
        return trace
    keys = list(trace.segments)
    relabel = s["segment"].copy()
    order, bounds = class_rows(s["segment"], len(keys))
    for g in range(len(trace.segments)):
        rows = order[bounds[g] : bounds[g + 1]]
        if rows.size == 0:
            continue
        threshold = split_threshold(s["duration_ns"][rows], s["rank"][rows])
        if threshold is None:
            continue
        keys[g] = mode_key(trace.segments[g], "below", threshold)
        keys.append(mode_key(trace.segments[g], "above", threshold))
        relabel[rows[s["duration_ns"][rows] > threshold]] = len(keys) - 1
    if len(keys) == len(trace.segments):
        return trace
    samples = s.copy()
    samples["segment"] = relabel
    return dataclasses.replace(trace, samples=samples, segments=keys)
