"""A perfvar run as pandas DataFrames: ``perfvar.open(DIR)``.

:func:`open` returns a :class:`Run` whose properties are DataFrames, read on first
use and cached (the way Hatchet and pipit expose a profile or a trace):

- ``classes``: one row per segment class (``segment`` id S0, S1, ... by total time
  descending, as in analysis.json), its ``name`` and its two call sites;
- ``segments``: one row per compute segment, in the order of
  ``read_trace(DIR).samples`` (so row i is sample i);
- ``calls``: one row per traced MPI call, derived from the segments around it;
- ``judgements``, ``anomalies``: analysis.json (the analysis is run if absent);
- ``calibration``: one row per rank and calibrated cache state (rank-N.json);
- ``kept``: a boolean Series over ``segments``, False for the samples the analysis
  removes as OS noise (costs the analysis' filter_os).

Everything is built on the existing readers (reader_otf2, reader_meta, analysis);
nothing here parses the trace. Times are ns (column names end in ``_ns``), start and
end times since the trace's time origin (ClockProperties global offset, where
Vampir's timeline starts). Unknown CPUs and byte counts are ``<NA>`` (nullable
integer columns). The cached frames are shared: copy one before changing it in
place. Needs pandas. Not thread-safe (the OTF2 reader redirects stderr).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd

from perfvar.analysis import analyze, judged_classes, prepare
from perfvar.calibration import ranks as calibration_ranks
from perfvar.read.meta import RunMeta, read_meta
from perfvar.read.recover import ensure_trace
from perfvar.read.samples import CONTEXT_UNKNOWN, CPU_UNKNOWN, TraceSamples
from perfvar.read.segments import CallSite, SegmentKey, parse_segment_key
from perfvar.read.trace import read_trace
from perfvar.result import Analysis, load

ANALYSIS_FILE = "analysis.json"
# pandas >= 3 has a string dtype ("str", NaN when missing); before, strings are objects.
STR = "str" if int(pd.__version__.split(".")[0]) >= 3 else object
ANALYSIS_MODES = ("auto", "file", "run")
# The ends of a segment cut by a user timer, not by an MPI call.
USER_TIMER_CALLS = ("perfvar_start(", "perfvar_stop(")
_SCALARS = (bool, int, float, str)

JUDGEMENT_COLUMNS = {
    "segment": "category",
    "rank": "int32",
    "status": "str",
    "n": "int64",
    "median_ns": "float64",
    "shift_ns": "float64",
    "shift_rel": "float64",
    "excess_rel": "float64",
    "p_value": "float64",
    "q_value": "float64",
    "floor_ns": "float64",
    "overlap": "float64",
    "cache_state": "str",
    "context_bytes": "Int64",
}
ANOMALY_COLUMNS = {
    "kind": "str",
    "rank": "int32",
    "host": "str",
    "cpu": "Int32",
    "segment": "category",
    "excess_ns": "float64",
    "window_start_ns": "float64",  # slow_phase only: the window, ns since origin
    "window_end_ns": "float64",
}
CALIBRATION_COLUMNS = {
    "rank": "int32",
    "host": "str",
    "state": "str",  # cache state label: "0", "4xL1", "4xL2", "4xL3"
    "flush_bytes": "Int64",
    "t_min_ns": "float64",
    "t_diff_ns": "float64",
    "usable": "bool",
    "status": "str",
    "source": "str",
    "note": "str",
    "mode": "str",  # the rank's calibration mode ("quick", "full")
    "timer_overhead_ns": "float64",
    "problem": "str",
}


def _end_name(site: Optional[CallSite]) -> Optional[str]:
    """``FN@<module basename>+0x<off>``, as the OTF2 display name writes an end."""
    return f"{site.function}@{site.fallback_site()}" if site is not None else None


def _class_name(parsed: SegmentKey) -> str:
    if parsed.start is None or parsed.end is None:
        return parsed.key
    return f"{_end_name(parsed.start)} -> {_end_name(parsed.end)}{parsed.side()}"


def _nullable(values: np.ndarray, unknown: int, dtype: str) -> Any:
    """An integer column whose ``unknown`` sentinel (the reader's -1) is <NA>."""
    values = np.asarray(values)
    out = pd.array(values, dtype=dtype)
    out[values == unknown] = pd.NA
    return out


def _categories(values: list[Optional[str]], codes: np.ndarray) -> pd.Categorical:
    """``values[codes]`` as a category column built from the codes (no per-row
    Python); values may repeat (two classes can share a name) or be None (<NA>)."""
    distinct = [v for v in dict.fromkeys(values) if v is not None]
    where = {v: k for k, v in enumerate(distinct)}
    remap = np.array([where.get(v, -1) for v in values], dtype=np.int64)
    return pd.Categorical.from_codes(remap[codes], categories=distinct)


def _typed(records: list[dict[str, Any]], columns: dict[str, str]) -> pd.DataFrame:
    """A frame with exactly these columns and dtypes (also when there are no rows);
    JSON nulls become NaN or <NA>. Category columns are left as objects here."""
    frame = pd.DataFrame.from_records(records, columns=list(columns))
    for name, dtype in columns.items():
        column = frame[name].astype(object).where(frame[name].notna(), None)
        if dtype == "category":
            frame[name] = column
        elif dtype == "str":
            frame[name] = column.astype(STR)
        elif dtype == "bool":
            frame[name] = column.astype(bool)
        else:
            frame[name] = column.astype(dtype)
    return frame


class Run:
    """A perfvar trace directory as DataFrames; see the module docstring.

    Build it with :func:`open`. Every frame is computed on first access and cached;
    ``trace``, ``meta`` and ``analysis`` are the underlying reader results.
    """

    def __init__(
        self,
        directory: str,
        analysis: str = "auto",
        paper_check: bool = True,
        recover: bool = True,
        jobs: int = 1,
        analyze_options: Optional[dict[str, Any]] = None,
    ) -> None:
        if analysis not in ANALYSIS_MODES:
            raise ValueError(
                f"analysis must be one of {ANALYSIS_MODES}, not {analysis!r}"
            )
        self.directory = os.fspath(directory)
        self.analysis_mode = analysis
        self.paper_check = paper_check
        self.recover = recover
        self.jobs = jobs
        self.analyze_options = dict(analyze_options or {})

    def __repr__(self) -> str:
        return f"perfvar.open({self.directory!r})"

    # The readers' own results -------------------------------------------------

    @cached_property
    def trace(self) -> TraceSamples:
        """``read_trace(DIR)`` with its classes as ``perfvar analyze`` judges them
        (perfvar.analysis.judged_classes: families merged, each family's samples
        carrying its largest member's index; a class of two kinds of work split in
        two); a job that died is first rebuilt from its records, as ``perfvar
        analyze`` does (``recover=False`` reads the archive as it is)."""
        if self.recover:
            ensure_trace(self.directory)
        return judged_classes(read_trace(self.directory))[0]

    @cached_property
    def meta(self) -> RunMeta:
        """``read_meta`` for the ranks of the trace (rank-N.json, run.json), with the
        calibration judge's decisions unless ``paper_check=False``."""
        return calibration_ranks.judged_meta(
            self.directory, self.trace.ranks, self.paper_check
        )

    @cached_property
    def analysis(self) -> Analysis:
        """The analysis.json content (perfvar.result.Analysis): DIR/analysis.json
        (``analysis="file"``, or ``"auto"`` when it exists; ResultFormatError for a
        format newer than this perfvar reads), else ``analyze(DIR,
        **analyze_options)``, kept in memory only (``report_json.write_json`` saves
        it)."""
        path = Path(self.directory) / ANALYSIS_FILE
        if self.analysis_mode == "file" or (
            self.analysis_mode == "auto" and path.exists()
        ):
            result = load(str(path))
        else:
            options = {"jobs": self.jobs, "paper_check": self.paper_check}
            result = analyze(self.directory, **{**options, **self.analyze_options})
        self._check_ids(result)
        return result

    @property
    def warnings(self) -> list[str]:
        """What the trace and metadata readers warned about."""
        return self.trace.warnings + self.meta.notes

    # Frames ----------------------------------------------------------------------

    @cached_property
    def _order(self) -> list[int]:
        """Trace segment indices in class-id order (analysis' S0, S1, ...)."""
        return self.trace.class_order()

    @cached_property
    def _position(self) -> np.ndarray:
        """Trace segment index -> class position (-1: a region with no samples)."""
        pos = np.full(len(self.trace.segments), -1, dtype=np.int64)
        pos[self._order] = np.arange(len(self._order))
        return pos

    @cached_property
    def _parsed(self) -> list[SegmentKey]:
        return [parse_segment_key(self.trace.segments[g]) for g in self._order]

    @cached_property
    def classes(self) -> pd.DataFrame:
        """One row per segment class with samples, S0 first (largest total time).

        Columns: ``segment`` (id), ``name`` (``FROM -> TO``, each end
        ``FN@<module>+0x<offset>``), ``from_function``, ``from_site``,
        ``to_function``, ``to_site`` (``<module basename>+0x<offset>``; None for a
        malformed key), ``key`` (the region's canonical name), ``n`` (segments),
        ``total_ns``.
        """
        s = self.trace.samples
        counts = np.bincount(s["segment"], minlength=len(self.trace.segments))
        totals = np.bincount(
            s["segment"], weights=s["duration_ns"], minlength=len(self.trace.segments)
        )
        rows = []
        for pos, (g, parsed) in enumerate(zip(self._order, self._parsed)):
            start, end = parsed.start, parsed.end
            rows.append(
                {
                    "segment": f"S{pos}",
                    "name": _class_name(parsed),
                    "from_function": start.function if start else None,
                    "from_site": start.fallback_site() if start else None,
                    "to_function": end.function if end else None,
                    "to_site": end.fallback_site() if end else None,
                    "key": parsed.key,
                    "n": int(counts[g]),
                    "total_ns": float(totals[g]),
                }
            )
        columns = ["segment", "name", "from_function", "from_site"]
        columns += ["to_function", "to_site", "key", "n", "total_ns"]
        frame = pd.DataFrame.from_records(rows, columns=columns)
        frame["n"] = frame["n"].astype("int64")
        frame["total_ns"] = frame["total_ns"].astype("float64")
        return frame

    def _segment_ids(self, extra: Iterable[str] = ()) -> pd.CategoricalDtype:
        """Class ids as an ordered category (S2 before S10), plus ids the analysis
        adds (the probes' pseudo-class) after them."""
        ids = list(self.classes["segment"])
        return pd.CategoricalDtype(
            ids + [e for e in dict.fromkeys(extra) if e not in ids], ordered=True
        )

    @cached_property
    def segments(self) -> pd.DataFrame:
        """One row per compute segment, row i = ``read_trace(DIR).samples[i]``.

        Columns: ``segment`` (class id, category), ``name`` (its two call sites,
        category), ``rank``, ``thread``, ``start_ns``, ``end_ns`` (ns since the
        trace's origin), ``duration_ns``, ``cpu`` (CPU at its start), ``cpu_end``
        (at its end), ``migrated`` (both known and different), ``context_bytes``
        (what the MPI call that opened the segment sent + received, <NA> when that
        call left no message record). A trace with counters (PERFVAR_METRICS) adds one
        float column per counter, named as PAPI names it (``perf::TASK-CLOCK``...):
        what it counted from the previous read to the end of this segment, on the
        rows of the segments whose end read the counters (NaN on the others, whose
        counts are in the next read's), and ``metrics_first``: the row of the first
        segment that read covers (<NA> on rows without a read).
        """
        s = self.trace.samples
        codes = self._position[s["segment"]]
        start = self.trace.trace_ns(s["start_ticks"])
        cpu, cpu_end = s["cpu_enter"], s["cpu_leave"]
        known = (cpu != CPU_UNKNOWN) & (cpu_end != CPU_UNKNOWN)
        frame = pd.DataFrame(
            {
                "segment": pd.Categorical.from_codes(codes, dtype=self._segment_ids()),
                "name": _categories(list(self.classes["name"]), codes),
                "rank": s["rank"].astype(np.int32),
                "thread": s["thread"].astype(np.int32),
                "start_ns": start,
                "end_ns": start + s["duration_ns"],
                "duration_ns": s["duration_ns"].astype(np.float64),
                "cpu": _nullable(cpu, CPU_UNKNOWN, "Int32"),
                "cpu_end": _nullable(cpu_end, CPU_UNKNOWN, "Int32"),
                "migrated": known & (cpu != cpu_end),
                "context_bytes": _nullable(
                    s["context_bytes"], CONTEXT_UNKNOWN, "Int64"
                ),
            }
        )
        return self._with_metrics(frame)

    def _with_metrics(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``segments`` with the counter columns, when the trace has counters."""
        names = self.trace.metric_names
        if not names:
            return frame
        m = self.trace.metrics
        rows = m["sample"]
        for column, name in enumerate(names):
            values = np.full(len(frame), np.nan)
            values[rows] = m["values"][:, column]
            frame[name] = values
        first = np.full(len(frame), -1, dtype=np.int64)
        first[rows] = m["first"]
        frame["metrics_first"] = _nullable(first, -1, "Int64")
        return frame

    @cached_property
    def calls(self) -> pd.DataFrame:
        """One row per traced MPI call, from the segments on each (rank, thread).

        A traced call ends one segment and opens the next one on its thread, so the
        call between two consecutive segments runs from the first one's end to the
        second one's start (minus a fixed-work probe run there before the call),
        is named by their shared call site and moved the second one's
        ``context_bytes``. The call that opened a thread's first segment (e.g.
        MPI_Init) has only its end (``start_ns``, ``duration_ns`` NaN); the call
        that ended its last one (e.g. MPI_Finalize) only its start. Segment ends
        made by user timers (``perfvar_start``/``perfvar_stop``) are no MPI call and
        have no row. Rows are ordered by rank, thread, time.

        Columns: ``rank``, ``thread``, ``name`` (MPI function, category), ``site``
        (``<module basename>+0x<offset>``, category), ``start_ns``, ``end_ns``,
        ``duration_ns``, ``cpu`` (at its entry; at its exit for a first call),
        ``bytes`` (sent + received as its message records say; <NA> if none).
        """
        s = self.trace.samples
        seg = self.segments
        order = np.lexsort((s["start_ticks"], s["thread"], s["rank"]))
        rank, thread = s["rank"][order], s["thread"][order]
        start = seg["start_ns"].to_numpy()[order]
        end = seg["end_ns"].to_numpy()[order]
        codes = self._position[s["segment"][order]]
        first = np.ones(order.size, dtype=bool)
        first[1:] = (rank[1:] != rank[:-1]) | (thread[1:] != thread[:-1])
        last = np.ones(order.size, dtype=bool)
        last[:-1] = first[1:]
        # Call k of a location precedes its segment k; one more call follows the last.
        n = order.size + int(last.sum())
        before = np.flatnonzero(last) + np.arange(1, int(last.sum()) + 1)
        opening = np.ones(n, dtype=bool)
        opening[before] = False  # the rows of the calls that close a last segment
        idx = np.flatnonzero(opening)  # row of the call that opens segment i
        c_rank = np.empty(n, np.int32)
        c_thread = np.empty(n, np.int32)
        c_rank[idx], c_thread[idx] = rank, thread
        c_rank[before], c_thread[before] = rank[last], thread[last]
        c_end = np.full(n, np.nan)
        c_end[idx] = start
        c_start = np.full(n, np.nan)
        c_start[idx[~first]] = end[np.flatnonzero(~last)]
        c_start[before] = end[last]
        # Name and site: the end of the segment before, or the start of the first
        # one; as codes into the distinct call sites, so that long runs stay fast.
        calls = list(dict.fromkeys(e for p in self._parsed for e in (p.start, p.end)))
        code_of = {site: k for k, site in enumerate(calls)}
        opens = np.array([code_of[p.start] for p in self._parsed], dtype=np.int64)
        closes = np.array([code_of[p.end] for p in self._parsed], dtype=np.int64)
        c_site = np.empty(n, np.int64)
        c_site[idx[first]] = opens[codes[first]]
        c_site[idx[~first]] = closes[codes[~last]]
        c_site[before] = closes[codes[last]]
        c_cpu = np.full(n, CPU_UNKNOWN, np.int32)
        c_cpu[idx[first]] = s["cpu_enter"][order][first]
        c_cpu[idx[~first]] = s["cpu_leave"][order][~last]
        c_cpu[before] = s["cpu_leave"][order][last]
        c_bytes = np.full(n, CONTEXT_UNKNOWN, np.int64)
        c_bytes[idx] = s["context_bytes"][order]
        self._skip_probes(c_rank, c_thread, c_start, c_end)
        names = [site.function if site is not None else None for site in calls]
        sites = [site.fallback_site() if site is not None else None for site in calls]
        user = [(f or "").startswith(USER_TIMER_CALLS) for f in names]
        mpi = ~np.array(user, dtype=bool)[c_site]
        frame = pd.DataFrame(
            {
                "rank": c_rank,
                "thread": c_thread,
                "name": _categories(names, c_site),
                "site": _categories(sites, c_site),
                "start_ns": c_start,
                "end_ns": c_end,
                "duration_ns": c_end - c_start,
                "cpu": _nullable(c_cpu, CPU_UNKNOWN, "Int32"),
                "bytes": _nullable(c_bytes, CONTEXT_UNKNOWN, "Int64"),
            }
        )
        frame = frame[mpi].reset_index(drop=True)
        for col in ("name", "site"):
            used = frame[col].cat.remove_unused_categories()
            frame[col] = used.cat.reorder_categories(sorted(used.cat.categories))
        return frame

    def _skip_probes(
        self, rank: np.ndarray, thread: np.ndarray, start: np.ndarray, end: np.ndarray
    ) -> None:
        """Move a call's start past the fixed-work probe run just before it.

        A probe sits between a segment's end and the call's entry
        (docs/trace-format.md), so its time is in the gap but not in the call.
        ``start`` is updated in place; the rows are sorted by rank, thread, time.
        """
        p = self.trace.probes
        if p.size == 0 or rank.size == 0:
            return
        p_start = self.trace.trace_ns(p["start_ticks"])
        p_end = p_start + p["duration_ns"]
        loc = rank.astype(np.int64) << 32 | thread.astype(np.int64)
        p_loc = p["rank"].astype(np.int64) << 32 | p["thread"].astype(np.int64)
        bounds = np.flatnonzero(np.r_[True, loc[1:] != loc[:-1], True])
        for a, b in zip(bounds[:-1], bounds[1:]):
            mine = p_loc == loc[a]
            if not mine.any():
                continue
            p0, p1 = p_start[mine], p_end[mine]
            # The first call whose end is not before the probe (the closing call,
            # row b - 1, has no end); the probe must lie inside its gap.
            rows = a + np.searchsorted(end[a : b - 1], p0, side="left")
            inside = (start[rows] <= p0) & ((p1 <= end[rows]) | (rows == b - 1))
            rows = rows[inside]
            start[rows] = np.maximum(start[rows], p1[inside])

    @cached_property
    def kept(self) -> pd.Series:
        """Boolean Series over ``segments`` (same index): False for the samples the
        analysis removes as OS noise (filter_cost + filter_os per (class, rank), as
        ``perfvar analyze``). Costs the isolation forests of every cell.
        """
        s = self.trace.samples
        # prepare() keeps only the start times of the kept and removed samples of
        # each cell; give it each sample's own row number as its start time (ticks
        # at 1 GHz, no offset), which sorts as the real start times do, and read
        # the mask back from the times it keeps. The filtering itself is untouched.
        order = np.lexsort((s["start_ticks"], s["rank"], s["segment"]))
        tagged = s.copy()
        tagged["start_ticks"][order] = np.arange(s.size, dtype=np.uint64)
        proxy = replace(
            self.trace, samples=tagged, timer_resolution_hz=1e9, global_offset_ticks=0
        )
        # Only the timer overhead matters here: skip the judge's cost.
        meta = self.__dict__.get("meta") or read_meta(self.directory, self.trace.ranks)
        prep = prepare(proxy, meta, {})
        kept = np.zeros(s.size, dtype=bool)
        for cell in prep.cells.values():
            kept[order[cell.start_ns.astype(np.int64)]] = True
        return pd.Series(kept, index=self.segments.index, name="kept")

    @cached_property
    def judgements(self) -> pd.DataFrame:
        """One row per judged (segment class, rank) cell, from analysis.json.

        Columns: ``segment``, ``rank``, ``status`` ("ok", "slow", "below
        precision", "too few samples", ...), ``n``, ``median_ns``, ``shift_ns``,
        ``shift_rel``, ``excess_rel``, ``p_value``, ``q_value``, ``floor_ns``,
        ``overlap``, ``cache_state``, ``context_bytes`` (see model.Judgement).
        """
        judged = [j.to_json() for j in self.analysis.judgements]
        frame = _typed(judged, JUDGEMENT_COLUMNS)
        frame["segment"] = frame["segment"].astype(self._segment_ids(frame["segment"]))
        return frame

    @cached_property
    def anomalies(self) -> pd.DataFrame:
        """One row per anomaly of analysis.json, in its order.

        Columns: ``kind``, ``rank``, ``host``, ``cpu``, ``segment`` (None for the
        rank-wide kinds), ``excess_ns``, ``window_start_ns``/``window_end_ns`` (a
        slow_phase's window, else NaN), then every scalar of the evidence as a
        column of its own (``p_value``, ``q_value``, ``shift_rel``, ``median_ns``,
        ``lost_fraction``, ...; NaN for kinds without it; prefixed ``evidence_`` if
        the name is taken), and ``evidence``, the whole evidence dict.
        """
        found = self.analysis.anomalies
        rows, flat = [], {}
        for a in found:
            rows.append(
                {
                    **a.to_json(),
                    "window_start_ns": a.start_ns,
                    "window_end_ns": a.end_ns,
                }
            )
            for key, value in (a.evidence or {}).items():
                if value is None or isinstance(value, _SCALARS):
                    name = key if key not in ANOMALY_COLUMNS else f"evidence_{key}"
                    flat.setdefault(name, key)
        frame = _typed(rows, ANOMALY_COLUMNS)
        ids = self._segment_ids(frame["segment"].dropna())
        frame["segment"] = frame["segment"].astype(ids)
        evidence = [a.evidence or {} for a in found]
        for name, key in flat.items():
            values = [e.get(key) for e in evidence]
            scalars = [v if isinstance(v, _SCALARS) else None for v in values]
            frame[name] = pd.Series(scalars, dtype=object).infer_objects()
        frame["evidence"] = pd.Series(evidence, dtype=object)
        return frame

    @cached_property
    def calibration(self) -> pd.DataFrame:
        """One row per rank and cache state of its start-up calibration (rank-N.json;
        flush 0 first), t_min/t_diff as the analysis uses them (the paper's check
        applied unless ``paper_check=False``).

        Columns: ``rank``, ``host``, ``state``, ``flush_bytes``, ``t_min_ns``,
        ``t_diff_ns``, ``usable`` (both known), ``status`` (the state's;
        "borrowed": its host's other ranks' values, perfvar.calibration.borrow),
        ``source``, ``note``, ``mode``, ``timer_overhead_ns`` (the rank's), and
        ``problem`` (what was wrong with the rank's calibration, or None). A rank
        without a calibration has one row whose state is None.
        """
        rows = []
        for rank, m in sorted(self.meta.ranks.items()):
            c = m.calibration
            common = {
                "rank": rank,
                "host": m.host,
                "mode": c.mode,
                "timer_overhead_ns": c.timer_overhead_ns,
                "problem": m.problem,
            }
            for st in c.states or [None]:
                state = st.to_json() if st is not None else {}
                rows.append(
                    {
                        **common,
                        **state,
                        "state": state.get("label"),
                        "usable": bool(st is not None and st.usable),
                    }
                )
        return _typed(rows, CALIBRATION_COLUMNS)

    def _check_ids(self, result: Analysis) -> None:
        """Warn when analysis.json names the classes otherwise than this trace."""
        theirs = {t.id: t.key for t in result.segments}
        ours = dict(zip(self.classes["segment"], self.classes["key"]))
        if any(ours.get(i, k) != k for i, k in theirs.items()):
            warnings.warn(
                f"{self.directory}: analysis.json numbers the segment classes "
                "differently from the trace (another trace or perfvar version?); "
                "open it with analysis='run' to redo the analysis",
                stacklevel=3,
            )


# Named like the builtin on purpose: it is used as perfvar.open(DIR) (not exported by
# "from perfvar import *"), and nothing below this line needs the builtin.
def open(
    directory: str,
    analysis: str = "auto",
    paper_check: bool = True,
    recover: bool = True,
    jobs: int = 1,
    analyze_options: Optional[dict[str, Any]] = None,
) -> Run:
    """Open a perfvar trace directory as DataFrames (a :class:`Run`).

    Nothing is read until a frame is asked for. ``analysis``: where ``judgements``
    and ``anomalies`` come from: ``"auto"`` (DIR/analysis.json if present, else the
    analysis is run), ``"file"`` (DIR/analysis.json; FileNotFoundError on first use
    if absent) or ``"run"`` (always run ``perfvar.analysis.analyze`` with
    ``analyze_options``, e.g. ``{"alpha": 0.01}``). ``paper_check``: redo
    t_min/t_diff from the stored calibration samples, as the analysis does (about a
    second per rank). ``recover``: rebuild the trace of a job that died from its
    records first, as ``perfvar analyze`` does (writes into DIR). ``jobs``:
    processes for the OS-noise filter. Trace errors raise
    :class:`~perfvar.errors.TraceError` when a frame needing the trace is built.
    """
    return Run(directory, analysis, paper_check, recover, jobs, analyze_options)
