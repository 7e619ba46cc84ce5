"""One analysis split into parts by rank, and the parts merged back.

A part is a contiguous block of the trace's ranks (all locations of a rank belong to
one part, so each (segment, rank) cell is whole in one part). Each part, where it
runs (perfvar.parallel), reads only its ranks' event files, has the calibration
judge decide its ranks, and makes its cells (filter_cost, filter_os, the cache state
of each) and its threads' CPU table (perfvar.stats.cpu_use): the costly steps, done
where the samples are. The reporting process merges the parts into exactly what one
process reading the whole trace would hold (locations in definition order, the same
reports and warnings, the same cells: filter_os is deterministic) and runs the
detectors, which compare ranks and so need them all.
Memory per worker is bounded by its ranks' samples; the reporting process holds the
kept samples of every rank, as the detectors need. Not thread-safe (the reader
redirects stderr).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from perfvar.calibration import ranks as calibration_ranks
from perfvar.errors import TraceError
from perfvar.read.meta import read_meta
from perfvar.read.otf2 import trace_locations
from perfvar.read.samples import PROBE_DTYPE, SAMPLE_DTYPE, TraceSamples
from perfvar.read.trace import read_trace, reading_warnings
from perfvar.stats.cells import cell_inputs, make_cells
from perfvar.stats.cpu_use import CpuUse, cpu_use
from perfvar.stats.filters import filter_os_many
from perfvar.stats.model import Cell

CellKey = tuple[int, int]  # (segment index, rank)


@dataclass
class PartTask:
    directory: str
    ranks: list[int]
    judge: bool  # decide the calibration from the stored samples


@dataclass
class Part:
    trace: Optional[TraceSamples]  # None when none of its locations could be read
    error: Optional[str] = None  # why not (the reader's one line)
    cells: dict[CellKey, Cell] = field(default_factory=dict)  # filtered, judged
    cpu_use: CpuUse = field(default_factory=dict)  # its threads' CPUs
    judged: dict[int, dict[str, Any]] = field(default_factory=dict)
    made: dict[str, Any] = field(default_factory=dict)  # new decisions, by digest


def split(ranks: list[int], parts: int) -> list[list[int]]:
    """``ranks`` in at most ``parts`` contiguous blocks of near-equal size."""
    parts = max(1, min(parts, len(ranks)))
    return [list(block) for block in np.array_split(np.asarray(ranks), parts)]


def analyse_part(task: PartTask) -> Part:
    """Read, judge and filter one block of ranks (runs in a worker)."""
    try:
        trace = read_trace(task.directory, ranks=task.ranks)
    except TraceError as exc:
        return Part(None, error=str(exc))
    meta = read_meta(task.directory, trace.ranks)
    part = Part(trace)
    if task.judge:
        part.judged, part.made = calibration_ranks.decide_ranks(
            task.directory, task.ranks
        )
        calibration_ranks.apply(meta, part.judged)  # as the reporting process does
    inputs = cell_inputs(trace.samples, meta)
    results = filter_os_many([values for _, _, values in inputs])
    part.cells = make_cells(trace, meta, inputs, results)
    part.cpu_use = cpu_use(trace.samples)
    return part


def _pieces(trace: TraceSamples) -> dict[int, tuple[Any, np.ndarray, np.ndarray]]:
    """location id -> (report, its samples, its probes); the reader concatenates the
    intact locations' rows in definition order."""
    out = {}
    at_s = at_p = 0
    for rep in trace.locations:
        n_s, n_p = (rep.segments, rep.probes) if rep.ok else (0, 0)
        out[rep.location] = (
            rep,
            trace.samples[at_s : at_s + n_s],
            trace.probes[at_p : at_p + n_p],
        )
        at_s, at_p = at_s + n_s, at_p + n_p
    return out


def merge(directory: str, parts: list[Part]) -> TraceSamples:
    """The parts' traces as one TraceSamples, as read_trace(directory) gives it;
    raises TraceError as read_trace does when no location could be read."""
    read = [p.trace for p in parts if p.trace is not None]
    if not read:
        raise TraceError(parts[0].error or f"{directory}: nothing readable")
    pieces: dict[int, tuple[Any, np.ndarray, np.ndarray]] = {}
    for t in read:
        pieces.update(_pieces(t))
    reports, samples, probes = [], [], []
    for loc in trace_locations(directory):
        if loc in pieces:
            rep, s, p = pieces[loc]
            reports.append(rep)
            samples.append(s)
            probes.append(p)
    if not any(r.ok for r in reports):
        raise TraceError(next(p.error for p in parts if p.error))
    first = read[0]
    return TraceSamples(
        first.path,
        first.timer_resolution_hz,
        first.segments,
        np.concatenate(samples) if samples else np.empty(0, dtype=SAMPLE_DTYPE),
        reports,
        reading_warnings(reports, first.segments),
        first.global_offset_ticks,
        np.concatenate(probes) if probes else np.empty(0, dtype=PROBE_DTYPE),
        first.metric_names,  # every part read the same global definitions
    )
