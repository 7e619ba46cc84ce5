"""Segment families: classes that differ only by the application's helper routines.

A code that talks to its left and right neighbours from two helper routines makes two
segment classes for the same work, each present on the ranks that have that neighbour
only; neither can be judged against its peers. perfvar.read.segments.segment_families
groups them; here a trace's samples are relabelled so that each family is one class
(its largest member's index), before cells are made. The original keys stay in
``trace.segments``. Pure apart from copying the samples array; thread-safe.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from perfvar.read.samples import class_rows, distinct_counts
from perfvar.read.segments import segment_families


def merge_families(trace: Any) -> tuple[Any, dict[int, list[str]]]:
    """Relabel ``trace``'s samples by family (a TraceSamples; returns a copy).

    Returns the new trace and, for each family of more than one class, its
    representative segment index (the member with the most compute time) -> the
    members' canonical keys, largest first. Classes without samples are left as
    they are.
    """
    s = trace.samples
    if s.size == 0:
        return trace, {}
    totals = np.bincount(
        s["segment"], weights=s["duration_ns"], minlength=len(trace.segments)
    )
    order, bounds = class_rows(s["segment"], len(trace.segments))
    present = np.flatnonzero(np.diff(bounds))  # the classes with samples, ascending
    rank = s["rank"]
    ranks = [
        distinct_counts(rank[order[bounds[g] : bounds[g + 1]]])[0].tolist()
        for g in present.tolist()
    ]
    del order
    family = segment_families([trace.segments[g] for g in present], ranks)
    groups: dict[int, list[int]] = {}
    for g, f in zip(present.tolist(), family):
        groups.setdefault(f, []).append(g)
    mapping = np.arange(len(trace.segments))
    members: dict[int, list[str]] = {}
    for group in groups.values():
        if len(group) < 2:
            continue
        group.sort(key=lambda g: (-totals[g], trace.segments[g]))
        mapping[group] = group[0]
        members[group[0]] = [trace.segments[g] for g in group]
    if not members:
        return trace, {}
    samples = s.copy()
    samples["segment"] = mapping[s["segment"]]
    return dataclasses.replace(trace, samples=samples), members


def judged_share(totals_ns: np.ndarray, judged: set[int]) -> float | None:
    """Share (0..1) of the compute time ``totals_ns`` (ns per segment index) that is
    in the judged segment indices; None when there is no compute time."""
    total = float(np.sum(totals_ns))
    if total <= 0:
        return None
    return float(np.sum(totals_ns[sorted(judged)])) / total if judged else 0.0
