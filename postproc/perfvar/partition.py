"""One analysis split into parts by rank, and the parts merged back.

A part is a contiguous block of the trace's ranks (all locations of a rank belong to
one part, so each (segment, rank) cell is whole in one part). Each part, where it
runs (perfvar.parallel), reads only its ranks' event files, has the calibration
judge decide its ranks, and makes its cells (filter_cost, filter_os, the cache state
of each) and its threads' CPU table (perfvar.stats.cpu_use): the costly steps, done
where the samples are. The reporting process merges the parts into exactly what one
process reading the whole trace would hold (locations in definition order, the same
reports and warnings, the same cells: filter_os is deterministic) and runs the
detectors, which compare ranks and so need them all. The parts make their cells on
the classes as recorded; the classes as judged (families merged, a class of two
kinds of work split: perfvar.analysis.judged_classes) need every rank's samples, so
the reporting process relabels those cells and makes again the few whose samples
changed (cells_as_judged).
Memory per worker is bounded by its ranks' samples; the reporting process holds the
kept samples of every rank while the detectors run, as they need (perfvar.analysis
lets the cells go before the wait states unless report.html plots them). Under MPI
each process keeps its parts' samples, and the wait states are found there
(:class:`Calls`): each part builds its ranks' timeline, relabelled with the classes
as judged, and answers the reporting process's steps (perfvar.verdict.parts), so
no process holds the timeline of every call; and only the timing of its samples
travels, their context (CPUs, bytes moved) staying there for the few cells made again
(split_context, context_rows). Not thread-safe (the reader redirects
stderr).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional

import numpy as np

from perfvar.calibration import ranks as calibration_ranks
from perfvar.errors import TraceError
from perfvar.parallel import Engine, PartsOnProcesses, serve
from perfvar.read.meta import read_meta
from perfvar.read.otf2 import trace_locations
from perfvar.read.samples import (
    CONTEXT_FIELDS,
    PROBE_DTYPE,
    SAMPLE_DTYPE,
    TIMING_FIELDS,
    TraceSamples,
    durations_only,
    fields_dtype,
    only_fields,
    timing_only,
    whole_rows,
)
from perfvar.read.trace import read_trace, reading_warnings
from perfvar.stats.cells import cell_inputs, make_cells
from perfvar.stats.cpu_use import CpuUse, cpu_use
from perfvar.stats.filters import filter_os_many
from perfvar.stats.model import Cell
from perfvar.verdict import wait_states
from perfvar.verdict.parts import LocalParts, Parts

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
    # Where its samples went in the merged trace, in its own order: (first, count)
    # per location (merge).
    rows: list[tuple[int, int]] = field(default_factory=list)
    # Its samples' CONTEXT_FIELDS in its own order, where its trace holds their
    # timing only and they stay where they are (split_context, merge); None: in its
    # trace's samples, or let go.
    context: Optional[np.ndarray] = None


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


def split_context(part: Part) -> tuple[Part, Part]:
    """A part read on another MPI process as it travels to the reporting process and
    as it stays (Engine.map's ``split``): its samples' timing travels, with its cells,
    CPU table and calibration; their context stays beside the same timing, for the
    few rows cells_as_judged asks of it (context_rows). 16 bytes a sample neither
    sent nor merged."""
    kept = _timing_of(part)
    return replace(part, trace=kept.trace), kept


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


def _layout(
    directory: str, parts: list[Part]
) -> tuple[list[Any], dict[int, tuple[int, int, int]]]:
    """The merged trace's location reports in definition order, and where each
    intact location's rows go: location id -> (its part's index, its first sample,
    its first probe in the merged arrays). A location read by two parts is the last
    one's."""
    owner: dict[int, tuple[int, Any]] = {}
    for k, p in enumerate(parts):
        for rep in p.trace.locations if p.trace is not None else []:
            owner[rep.location] = (k, rep)
    reports, at = [], {}
    at_s = at_p = 0
    for loc in trace_locations(directory):
        if loc not in owner:
            continue
        k, rep = owner[loc]
        reports.append(rep)
        at[loc] = (k, at_s, at_p)
        if rep.ok:
            at_s, at_p = at_s + rep.segments, at_p + rep.probes
    return reports, at


def merge(directory: str, parts: list[Part]) -> TraceSamples:
    """The parts' traces as one TraceSamples, as read_trace(directory) gives it but
    with its samples' TIMING_FIELDS only; raises TraceError as read_trace does when
    no location could be read. The samples' CONTEXT_FIELDS, which only
    cells_as_judged reads (for the few cells it makes again), stay in the parts
    (``Part.context``: kept here of a part whose trace has them, by split_context on
    the process that read it otherwise; context_rows gathers them).

    Each part's trace is let go (its ``trace`` set to None) as soon as its rows are
    copied into the merged arrays: the reporting process then holds the merged
    samples and at most one part's beside them, not every part's twice; and the
    merged samples need no narrowing copy once the cells are made."""
    read = [p.trace for p in parts if p.trace is not None]
    if not read:
        raise TraceError(parts[0].error or f"{directory}: nothing readable")
    first = read[0]
    del read
    reports, at = _layout(directory, parts)
    if not any(r.ok for r in reports):
        raise TraceError(next(p.error for p in parts if p.error))
    n_s = sum(r.segments for r in reports if r.ok)
    n_p = sum(r.probes for r in reports if r.ok)
    samples = np.empty(n_s, dtype=fields_dtype(TIMING_FIELDS))
    probes = np.empty(n_p, dtype=PROBE_DTYPE)
    merged = TraceSamples(
        first.path,
        first.timer_resolution_hz,
        first.segments,
        samples,
        reports,
        reading_warnings(reports, first.segments),
        first.global_offset_ticks,
        probes,
        first.metric_names,  # every part read the same global definitions
    )
    del first
    for k, part in enumerate(parts):
        if part.trace is None:
            continue
        for loc, (_, s, p) in _pieces(part.trace).items():
            if loc in at and at[loc][0] == k:
                _, a_s, a_p = at[loc]
                for name in TIMING_FIELDS:
                    samples[name][a_s : a_s + s.size] = s[name]
                probes[a_p : a_p + p.size] = p
                part.rows.append((a_s, s.size))
            elif s.size:
                part.rows.append((-1, s.size))  # another part's too: not its
        if part.context is None and _has_context(part.trace.samples):
            part.context = only_fields(part.trace.samples, CONTEXT_FIELDS)
        part.trace = None
    return merged


def _local_rows(
    layout: list[tuple[int, int]], rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Of the merged trace's ``rows`` (sorted indices), those a part holds: (their
    positions in ``rows``, the part's own indices of them); ``layout``: its
    Part.rows."""
    at, own = [], []
    offset = 0
    for first, count in layout:
        if first >= 0:
            lo, hi = np.searchsorted(rows, [first, first + count])
            at.append(np.arange(lo, hi))
            own.append(rows[lo:hi] - first + offset)
        offset += count
    empty = np.empty(0, dtype=np.int64)
    return (np.concatenate(at) if at else empty, np.concatenate(own) if own else empty)


def _context_of(part: Part, own: np.ndarray) -> np.ndarray:
    """The part's samples' CONTEXT_FIELDS at its own indices ``own``."""
    if not own.size:
        return np.empty(0, dtype=fields_dtype(CONTEXT_FIELDS))
    return part.context[own]


def _without_context(part: Any, _: Any) -> tuple[Any, None]:
    """A kept part with its context let go (PartsOnProcesses step, adopted)."""
    if isinstance(part, Part):
        part.context = None
    return part, None


def context_rows(
    eng: Engine, parts: list[Part]
) -> tuple[Callable[[np.ndarray], np.ndarray], Callable[[], None]]:
    """(rows -> the merged samples' CONTEXT_FIELDS at those sorted indices, in that
    order, from the parts that keep them (merge; under MPI each part asked where it
    was read, which serves: serve_calls); a call that lets the parts' context go
    once the cells are made)."""
    on = None
    if eng.kind == "mpi":  # this process's own parts are items i with i % size == 0
        own = {i: p for i, p in enumerate(parts) if i % eng.size == 0}
        on = PartsOnProcesses(eng, len(parts), own)

    def rows_of(rows: np.ndarray) -> np.ndarray:
        out = np.empty(rows.size, dtype=fields_dtype(CONTEXT_FIELDS))
        wanted = [_local_rows(p.rows, rows) for p in parts]
        if on is not None:
            got = on.each(_context_of, per_part=[own for _, own in wanted])
        else:
            got = [_context_of(p, own) for p, (_, own) in zip(parts, wanted)]
        for (at, _), values in zip(wanted, got):
            out[at] = values
        return out

    def let_go() -> None:
        if on is not None:
            on.each(_without_context, adopt=True)
        for p in parts:
            p.context = None

    return rows_of, let_go


def cells_as_judged(
    recorded: TraceSamples,
    judged: TraceSamples,
    cells: dict[CellKey, Cell],
    meta: Any,
    context: Callable[[np.ndarray], np.ndarray],
) -> dict[CellKey, Cell]:
    """The parts' ``cells``, made on the classes as ``recorded``, for the classes as
    ``judged`` (the same samples row for row, relabelled; ``context``: rows -> their
    CONTEXT_FIELDS, context_rows'). A judged cell whose samples
    are exactly one recorded cell's keeps that cell's filtering under its new class;
    the others (a rank with two members of one family, either side of a split class)
    are made and filtered again from their samples with ``meta`` (a RunMeta), as one
    process reading the whole trace makes them (filter_os is deterministic)."""
    before = recorded.samples["segment"].astype(np.int64)
    after = judged.samples["segment"].astype(np.int64)
    if np.array_equal(before, after):
        return cells
    rank = recorded.samples["rank"].astype(np.int64)
    n_ranks = int(rank.max()) + 1
    n_old = len(recorded.segments)
    judged_cell = after * n_ranks + rank  # one code per judged cell, per row
    pairs = np.unique(judged_cell * n_old + before)  # (judged cell, recorded class)
    # judged cell -> the recorded classes in it; recorded cell -> judged cells it feeds
    sources: dict[int, list[int]] = defaultdict(list)
    feeds: dict[CellKey, int] = defaultdict(int)
    for code, old in zip((pairs // n_old).tolist(), (pairs % n_old).tolist()):
        sources[code].append(old)
        feeds[(old, code % n_ranks)] += 1
    out: dict[CellKey, Cell] = {}
    remake = []
    for code, olds in sources.items():
        new, r = divmod(code, n_ranks)
        whole = len(olds) == 1 and feeds[(olds[0], r)] == 1
        if whole and (olds[0], r) in cells:
            out[(new, r)] = replace(cells[(olds[0], r)], segment=new)
        else:
            remake.append(code)
    if remake:
        rows = np.flatnonzero(np.isin(judged_cell, remake))
        inputs = cell_inputs(whole_rows(judged.samples[rows], context(rows)), meta)
        results = filter_os_many([values for _, _, values in inputs])
        out.update(make_cells(judged, meta, inputs, results))
    return out


def _calls_of(state: Any, given: tuple[Optional[np.ndarray], list[str]]) -> tuple:
    """A kept Part's calls (wait_states.CallPart), its samples relabelled with the
    classes as judged (``given``: the labels of its rows, in its order, and the
    judged classes' keys); a CallPart already made stays as it is."""
    if isinstance(state, wait_states.CallPart):
        return state, None
    labels, keys = given
    trace = state.trace
    if trace is None:  # none of its locations could be read: no calls
        trace = TraceSamples("", 1e9, keys, np.empty(0, SAMPLE_DTYPE), [])
    trace.samples["segment"] = labels
    part = wait_states.part_of(
        trace.samples, keys, trace.trace_ns, trace.probes, keep=durations_only
    )
    return part, None


def serve_calls(eng: Engine) -> None:
    """On an MPI process that does not report: keep of its parts only their traces'
    timing (what their timelines are built from), and run the reporting process's
    steps on them until it closes them."""
    for i in eng.kept:
        eng.kept[i] = _timing_of(eng.kept[i])
    serve(eng)
    eng.kept = {}


def _timing_of(part: Part) -> Part:
    """``part`` as its calls need it: its trace with its samples' timing only, and
    their context apart until the cells are made (context_rows)."""
    trace, context = part.trace, part.context
    if trace is not None:
        if context is None and _has_context(trace.samples):
            context = only_fields(trace.samples, CONTEXT_FIELDS)
        trace = replace(trace, samples=timing_only(trace.samples))
    return Part(trace, part.error, rows=part.rows, context=context)


def _has_context(samples: np.ndarray) -> bool:
    """Whether ``samples`` hold CONTEXT_FIELDS (not their timing only)."""
    return set(CONTEXT_FIELDS) <= set(samples.dtype.names)


class Calls:
    """Where the wait states of the trace's calls are found: under MPI in the parts,
    each on the process that read it (perfvar.parallel.PartsOnProcesses), else as
    one part of the whole trace in this process. ``take`` the rows to build from,
    then ``build`` the parts (the trace may be narrowed in between: the rows the
    timelines need are taken); ``close`` (always: the other MPI processes serve
    until it) lets them go."""

    def __init__(self, eng: Engine, parts: Optional[list[Part]]) -> None:
        self.eng, self.parts = eng, parts
        self.rows: dict[int, np.ndarray] = {}  # item -> the samples it builds from
        self.local: Optional[LocalParts] = None
        self.on: Optional[PartsOnProcesses] = None

    @property
    def spread(self) -> bool:
        parts = self.parts
        return (
            self.eng.kind == "mpi"
            and parts is not None
            # A location read by two parts: the merged trace holds it once.
            and all(first >= 0 for p in parts for first, _ in p.rows)
        )

    def take(self, trace: TraceSamples) -> None:
        """The rows of ``trace`` (whole, its classes as judged) that this process's
        parts build from: a copy of its own parts' rows, or the whole samples."""
        if not self.spread:
            self.rows = {0: trace.samples}
            return
        for i in range(self.eng.rank, len(self.parts), self.eng.size):
            self.rows[i] = _rows(trace.samples, self.parts[i].rows)

    def build(self, trace: TraceSamples) -> Parts:
        """The calls as parts, built from the rows taken; ``trace``: the same trace,
        its samples narrowed or not (what the one part holds of them)."""
        keys, at = trace.segments, (trace.trace_ns, trace.probes)
        if not self.spread:
            part = wait_states.part_of(self.rows.pop(0), keys, *at)
            part.samples = trace.samples
            self.local = LocalParts([part])
            return self.local
        own = {}
        for i in sorted(self.rows):
            own[i] = wait_states.part_of(
                self.rows.pop(i), keys, *at, keep=durations_only
            )
        self.on = PartsOnProcesses(self.eng, len(self.parts), own)
        segment = trace.samples["segment"]
        labels = [
            (None if i in own else _rows(segment, p.rows), keys)
            for i, p in enumerate(self.parts)
        ]
        self.on.each(_calls_of, per_part=labels, adopt=True)
        return self.on

    def close(self) -> None:
        if self.eng.kind == "mpi":
            (self.on or PartsOnProcesses(self.eng, 0, {})).close()
        self.rows, self.local, self.on = {}, None, None


def _rows(values: np.ndarray, rows: list[tuple[int, int]]) -> np.ndarray:
    """``values``' rows of each (first, count), in that order, as one array."""
    return np.concatenate([values[a : a + n] for a, n in rows] or [values[:0]])
