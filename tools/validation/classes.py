"""Segment classes of a trace for PERFVAR_INJECT: which class to inject into, the
pattern that selects it, the classes that pattern selects, and how much longer the
trace shows them on one rank.

A class is selected as the C side does (src/pmpi/inject.c): by substrings of the
labels of its closing and opening call sites, "MPI_Fn@module+0xoffset" with the
module's base name, then "<module+0xoffset" per caller frame (call paths), so the
exact labels select one class. Keys are parsed with perfvar.read.segments. Pure functions over
a trace read by perfvar.read.trace; thread-safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
from perfvar.read.modes import split_threshold
from perfvar.read.segments import CallSite, parse_segment_key
from perfvar.stats.blocks import MIN_BLOCKS
from perfvar.stats.model import DetectParams


def site_name(site: CallSite) -> str:
    """The name PERFVAR_INJECT matches against, the site's label:
    ``MPI_Fn@module+0xoffset``, then ``<module+0xoffset`` per caller frame."""
    callers = "".join(f"<{f.fallback_site()}" for f in site.callers)
    return f"{site.function}@{site.module_basename}+0x{site.offset:x}{callers}"


@dataclass(frozen=True)
class Pattern:
    """PERFVAR_INJECT's class selection: substrings of the closing (to) and opening
    (from) call sites' names; empty matches any."""

    to: str = ""
    frm: str = ""

    def env(self) -> str:
        """The ",to=...,from=..." part of PERFVAR_INJECT."""
        to = f",to={self.to}" if self.to else ""
        return to + (f",from={self.frm}" if self.frm else "")

    def matches(self, key: str) -> bool:
        """Whether the class of segment key ``key`` gets the extra work."""
        k = parse_segment_key(key)
        if k.start is None or k.end is None:
            return False
        return self.to in site_name(k.end) and self.frm in site_name(k.start)


def compute_ns(trace: Any) -> dict[tuple[int, int], float]:
    """Total duration (ns) per (class index, rank), thread 0's segments."""
    s = trace.samples
    s = s[s["thread"] == 0]
    out: dict[tuple[int, int], float] = {}
    for (cls, rank), d in zip(zip(s["segment"], s["rank"]), s["duration_ns"]):
        out[(int(cls), int(rank))] = out.get((int(cls), int(rank)), 0.0) + float(d)
    return out


# Segments a class needs on every rank for the verdict to judge it: the cell's samples
# (DetectParams.min_samples) spread over enough blocks of the run for their test.
JUDGEABLE = max(DetectParams().min_samples, MIN_BLOCKS)


def _counts(trace: Any) -> dict[tuple[int, int], int]:
    """Segments per (class index, rank), thread 0's."""
    s = trace.samples[trace.samples["thread"] == 0]
    counts: dict[tuple[int, int], int] = {}
    for key in zip(s["segment"].tolist(), s["rank"].tolist()):
        counts[key] = counts.get(key, 0) + 1
    return counts


def judged_classes(trace: Any, ranks: Sequence[int]) -> list[int]:
    """The class indices with JUDGEABLE segments or more on every rank of ``ranks``."""
    counts = _counts(trace)
    return [i for i in range(len(trace.segments))
            if min(counts.get((i, r), 0) for r in ranks) >= JUDGEABLE]


def judged_span(trace: Any, ranks: Sequence[int]) -> tuple[float, float]:
    """(first start, last end) in ns since the trace's origin of the segments of the
    judged classes (judged_classes), thread 0's: the part of the run a verdict can
    judge, without a program's set-up before it or its report after it."""
    s = trace.samples
    s = s[(s["thread"] == 0) & np.isin(s["segment"], judged_classes(trace, ranks))]
    if not s.size:
        raise ValueError("no segment class the verdict can judge")
    start = trace.trace_ns(s["start_ticks"])
    return float(start.min()), float((start + s["duration_ns"]).max())


def largest_class(trace: Any, ranks: Sequence[int]) -> tuple[str, Pattern]:
    """The class with the most compute time on every rank (the largest of its per-rank
    minima) among those with JUDGEABLE segments or more on every rank, and the pattern
    selecting it: its exact closing and opening site names. A program's set-up, one
    long segment a rank, can hold the most time and is never judged."""
    total = compute_ns(trace)
    judged = set(judged_classes(trace, ranks))
    best, best_ns = None, -1.0
    for i, key in enumerate(trace.segments):
        k = parse_segment_key(key)
        if k.start is None or k.end is None or i not in judged:
            continue
        ns = min(total.get((i, r), 0.0) for r in ranks)
        if ns > best_ns:
            best, best_ns = i, ns
    if best is None or best_ns <= 0:
        raise ValueError("no segment class with compute time on every rank")
    k = parse_segment_key(trace.segments[best])
    return trace.segments[best], Pattern(site_name(k.end), site_name(k.start))


def selected_ids(trace: Any, pattern: Pattern) -> list[int]:
    """The segment indices of ``trace`` whose class the pattern selects."""
    return [i for i, key in enumerate(trace.segments) if pattern.matches(key)]


def split_ns(trace: Any, pattern: Pattern) -> Optional[float]:
    """Where perfvar's analysis splits the selected classes in two kinds of work
    (perfvar.read.modes, over their thread-0 segments of every rank), None when they are
    one kind."""
    s = trace.samples
    ids = selected_ids(trace, pattern)
    s = s[(s["thread"] == 0) & np.isin(s["segment"], ids)]
    return split_threshold(s["duration_ns"], s["rank"]) if s.size else None


def selected(keys: Sequence[str], pattern: Pattern) -> list[str]:
    """The keys among ``keys`` whose class the pattern selects."""
    return [key for key in keys if pattern.matches(key)]


def compute_share(trace: Any, pattern: Pattern, rank: int) -> float:
    """Share (0..1) of ``rank``'s compute time (thread 0) in the classes the pattern
    selects; 0 without samples."""
    s = trace.samples
    s = s[(s["thread"] == 0) & (s["rank"] == rank)]
    ids = selected_ids(trace, pattern)
    total = float(s["duration_ns"].sum())
    mine = float(s["duration_ns"][np.isin(s["segment"], ids)].sum())
    return mine / total if total > 0 else 0.0


def median_ratio(trace: Any, pattern: Pattern, rank: int,
                 longer_ns: float = 0.0) -> Optional[float]:
    """Median duration of the selected classes' segments (longer than ``longer_ns``) on
    ``rank`` over that of the other ranks (thread 0), pooling the selected classes; None
    without samples."""
    s = trace.samples
    s = s[(s["thread"] == 0) & (s["duration_ns"] > longer_ns)]
    ids = selected_ids(trace, pattern)
    mine = np.isin(s["segment"], ids)
    on = s["duration_ns"][mine & (s["rank"] == rank)]
    off = s["duration_ns"][mine & (s["rank"] != rank)]
    if len(on) == 0 or len(off) == 0:
        return None
    return float(np.median(on) / np.median(off))


def range_text(ratios: Sequence[float]) -> str:
    """The range of class ratios over runs, "x0.943..x1.267"."""
    return f"x{min(ratios):.3f}..x{max(ratios):.3f}"


def apart_text(ratios: Sequence[float], shifts: Sequence[float] = (0.03, 0.10)) -> str:
    """How far apart the ranks ran a class: the range of ``ratios`` (one rank's median over
    the other's, one per run) and in how many runs the slower rank's median exceeded the
    faster's by each of ``shifts`` (fractions) or more. With nothing injected this is what
    the host alone makes of the class, the floor under an injected shift of that size."""
    if not ratios:
        return "no runs"
    apart = [max(r, 1 / r) - 1 for r in ratios]
    counts = ", ".join(f">= {100 * s:g} % in {sum(a >= s - 1e-12 for a in apart)} of {len(apart)}"
                       for s in shifts)
    return f"{range_text(ratios)}; apart by {counts}"
