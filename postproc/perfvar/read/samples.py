"""What reading a perfvar OTF2 archive (DIR/traces.otf2) gives: the samples and their
types (perfvar.read.trace.read_trace fills them).

One sample per matched Enter/Leave pair of a region whose canonical name starts with
``perfvar:segment:``: (segment index, rank, thread, start in ticks, duration in ns, CPU
at Enter, CPU at Leave, context bytes). Ticks are converted with the ClockProperties
timer resolution (Hz): ``ns = ticks * 1e9 / resolution``. The CPU comes from the integer
attribute named ``cpu`` on the Enter/Leave events of segment, probe and user timer
regions, carried forward: perfvar writes it only where the CPU changed, so such an
event without it has the CPU the last one with it on its location gave (-1 before the
first; the value 0xFFFFFFFF: unknown from there on). Traces that carry it on every
event read the same. The context bytes
are what the MPI call before the segment moved: the sum of the message sizes of the
MpiSend/MpiRecv/MpiIsend/MpiIrecv records and of the sent + received sizes of the
MpiCollectiveEnd/NonBlockingCollectiveComplete records between the previous segment
and this one on the same location (-1 when there was none; see perfvar.read.cache_state
for what they are used for).

Counters (``PERFVAR_METRICS``): perfvar writes, per location, Metric events of running
totals (OTF2_METRIC_ACCUMULATED_START): zeros where counting started, then the totals at
the end of each segment long enough to read them (right after its Leave). Each Metric
event after a location's first, when at least one segment ended since the previous one,
gives one row of ``TraceSamples.metrics`` (METRIC_DTYPE): the deltas of the counters
since that previous event, and which segments they cover (``first`` .. ``sample``,
indexes into ``samples``; a short segment's counts are in the row of the next read).
Columns follow ``TraceSamples.metric_names`` (every counter of the trace, by name); a
location whose ranks count fewer has NaN in the others. Only UINT64 members are read.

Fixed-work probes (``PERFVAR_PROBE``): each matched Enter/Leave of the region whose
canonical name is ``perfvar:probe`` (between a segment's Leave and the next MPI
region's Enter) gives one row of ``TraceSamples.probes`` (PROBE_DTYPE): rank, thread,
start in ticks, duration in ns, and the CPU it ran on (the ``cpu`` attribute of its
Enter, or -1 when its Leave names another CPU: a probe that migrated belongs to no
core). Every probe runs the same number of ADDs on a rank (rank-N.json ``probe.adds``).
The rank of a location is the id of its LocationGroup (perfvar writes one group per
MPI rank with id = rank). A location is one thread of its rank: the thread index is
the location's position in its group, in definition order (perfvar writes thread k of
a rank, 0 = the thread that initialised MPI, as the group's k-th location), so
segments are per (rank, thread).

Pure data; thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from perfvar._spec import TraceName

SAMPLE_DTYPE = np.dtype(
    [
        ("segment", np.int32),  # index into TraceSamples.segments
        ("rank", np.int32),
        ("thread", np.int32),  # index of the thread in its rank, 0 = master thread
        ("start_ticks", np.uint64),  # Enter timestamp, timer ticks
        ("duration_ns", np.float64),  # Leave - Enter, ns
        ("cpu_enter", np.int32),  # CPU at Enter, -1 = unknown
        ("cpu_leave", np.int32),  # CPU at Leave, -1 = unknown
        ("context_bytes", np.int64),  # bytes the preceding MPI call moved, -1 = unknown
    ]
)


def in_rank_time_order(rank: np.ndarray, start: np.ndarray) -> bool:
    """Whether rows with these ranks and start times are sorted by rank, then start,
    as the reader gives a trace of one thread a rank (each location's events in
    time, the locations in rank order); a rank's second thread breaks it. Pure."""
    up = rank[1:] > rank[:-1]
    up |= (rank[1:] == rank[:-1]) & (start[1:] >= start[:-1])
    return bool(up.all())


def distinct_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(values, return_counts=True) of integers (classes, ranks): by a
    count rather than a sort when they are small and not negative (a trace's
    classes and ranks; a sort of tens of millions of samples takes seconds)."""
    if values.size and values.min() >= 0 and values.max() < (1 << 24):
        counts = np.bincount(values)
        present = np.flatnonzero(counts)
        return present.astype(values.dtype, copy=False), counts[present]
    return np.unique(values, return_counts=True)


def class_order(segment: np.ndarray) -> np.ndarray:
    """np.argsort(segment, kind="stable"): the rows by class, each class's in row
    order. Where the classes fit 16 bits (a trace of fewer than 65 536 classes),
    numpy's stable sort of them as uint16 is a radix sort: two passes over the rows
    instead of a merge sort of 32-bit keys, the same order."""
    if segment.size and segment.min() >= 0 and segment.max() < (1 << 16):
        return np.argsort(segment.astype(np.uint16), kind="stable")
    return np.argsort(segment, kind="stable")


def class_rows(segment: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """(class_order(segment), bounds): class g's rows, in row order, are
    ``order[bounds[g]:bounds[g + 1]]`` (``segment``: indices below ``n_classes``)."""
    counts = np.bincount(segment, minlength=n_classes)
    return class_order(segment), np.concatenate([[0], np.cumsum(counts)])


# What an analysis reads of each sample once its cells and CPU table are made (the
# classes' totals, the counters' intervals, the timeline of MPI calls): the CPUs and
# the context bytes only fill the CPU table and choose a cell's cache state.
TIMING_FIELDS = ("segment", "rank", "thread", "start_ticks", "duration_ns")
# What it reads of each sample once the timeline of MPI calls is built too (the
# classes' totals, the counters' intervals, a class's segments after their calls).
DURATION_FIELDS = ("segment", "duration_ns")


def class_totals(samples: np.ndarray, n_classes: int) -> np.ndarray:
    """Each class's compute time (ns): its samples' durations summed in row order."""
    return np.bincount(
        samples["segment"], weights=samples["duration_ns"], minlength=n_classes
    )


# The rest of a sample: its CPUs and the bytes its preceding call moved.
CONTEXT_FIELDS = tuple(n for n in SAMPLE_DTYPE.names if n not in TIMING_FIELDS)


def fields_dtype(fields: tuple[str, ...]) -> np.dtype:
    """The rows of SAMPLE_DTYPE's ``fields`` alone, in that order."""
    return np.dtype([(name, SAMPLE_DTYPE[name]) for name in fields])


def only_fields(samples: np.ndarray, fields: tuple[str, ...]) -> np.ndarray:
    """A copy of ``samples`` with only ``fields`` (in that order), rows in the same
    order with the same values; ``samples`` itself when those are all it has."""
    if samples.dtype.names == fields:
        return samples
    out = np.empty(samples.size, dtype=[(name, samples.dtype[name]) for name in fields])
    for name in fields:  # one field at a time: no temporary of whole rows
        out[name] = samples[name]
    return out


def whole_rows(timing: np.ndarray, context: np.ndarray) -> np.ndarray:
    """SAMPLE_DTYPE rows from their TIMING_FIELDS and CONTEXT_FIELDS, row for row."""
    out = np.empty(timing.size, dtype=SAMPLE_DTYPE)
    for part, fields in ((timing, TIMING_FIELDS), (context, CONTEXT_FIELDS)):
        for name in fields:
            out[name] = part[name]
    return out


def timing_only(samples: np.ndarray) -> np.ndarray:
    """``samples`` (SAMPLE_DTYPE rows) with only TIMING_FIELDS: 28 bytes a row
    instead of 44."""
    return only_fields(samples, TIMING_FIELDS)


def durations_only(samples: np.ndarray) -> np.ndarray:
    """``samples`` with only DURATION_FIELDS: 12 bytes a row."""
    return only_fields(samples, DURATION_FIELDS)


PROBE_DTYPE = np.dtype(
    [
        ("rank", np.int32),
        ("thread", np.int32),  # index of the thread in its rank, 0 = master thread
        ("start_ticks", np.uint64),  # Enter timestamp, timer ticks
        ("duration_ns", np.float64),  # Leave - Enter, ns
        ("cpu", np.int32),  # CPU at Enter and Leave, -1 = unknown or migrated
    ]
)


METRICS_MAX = 16  # counter columns at most, as src/read/read.h bounds them


# "sample" and "first": in a location's rows, among its own samples; in
# TraceSamples.metrics, indexes into its samples.
METRIC_DTYPE = np.dtype(
    [
        ("rank", np.int32),
        ("thread", np.int32),
        ("sample", np.int64),  # the segment whose end read them (the last covered)
        ("first", np.int64),  # the first segment the deltas cover
        ("time_ticks", np.uint64),  # the read's time (the segment's Leave)
        ("since_ticks", np.uint64),  # the previous read's: the interval's start
        ("values", np.float64, (METRICS_MAX,)),  # delta per metric_names column or NaN
    ]
)


CPU_UNKNOWN = -1


CPU_UNKNOWN_VALUE = 0xFFFFFFFF  # a ``cpu`` attribute saying: unknown from here on


CONTEXT_UNKNOWN = -1


CPU_ATTRIBUTE = TraceName.CPU_ATTRIBUTE


PROBE_REGION = TraceName.PROBE_REGION  # canonical name of the fixed-work probe region


@dataclass
class LocationReport:
    """What was read from one OTF2 location (one thread of an MPI rank)."""

    rank: int
    location: int  # OTF2 location id
    name: str
    events_defined: int  # number of events the definitions announce
    thread: int = 0  # position in the rank's location group
    events_read: int = 0
    segments: int = 0  # matched segment Enter/Leave pairs
    user_regions: int = 0  # matched perfvar:user Enter/Leave pairs
    unclosed: int = 0  # Enter without Leave (trace cut short?)
    unmatched_leaves: int = 0  # Leave without its Enter
    error: Optional[str] = None  # set when the location's events are unreadable
    probes: int = 0  # matched perfvar:probe Enter/Leave pairs
    # Its event file broke off after some events (read up to there).
    cut: Optional[str] = None
    # Its counter reads (METRIC_DTYPE, "sample"/"first" among its own samples); None
    # when the trace has no counters or the location is not intact.
    metric_rows: Optional[np.ndarray] = field(default=None, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class TraceSamples:
    """Segment samples of a whole archive (see SAMPLE_DTYPE) and how reading went."""

    path: str  # the anchor file
    timer_resolution_hz: float
    segments: list[str]  # canonical segment keys; samples["segment"] indexes this
    samples: np.ndarray  # structured array of SAMPLE_DTYPE, grouped by location
    locations: list[LocationReport]
    warnings: list[str] = field(default_factory=list)
    # ClockProperties global offset (ticks): the trace's time 0, where Vampir's
    # timeline starts. Windows in the analysis are ns since this origin.
    global_offset_ticks: int = 0

    # Fixed-work probes of the intact locations (PROBE_DTYPE), grouped by location;
    # empty when the run had PERFVAR_PROBE off.
    probes: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=PROBE_DTYPE))
    # The counters (PERFVAR_METRICS) of the trace, the columns of metrics["values"].
    metric_names: list[str] = field(default_factory=list)

    @property
    def metrics(self) -> np.ndarray:
        """The counter reads of the intact locations (METRIC_DTYPE), grouped by
        location as the samples are, "sample" and "first" indexing ``samples``."""
        parts, at = [], 0
        for rep in self.locations:
            if not rep.ok:
                continue
            if rep.metric_rows is not None and len(rep.metric_rows):
                rows = rep.metric_rows.copy()
                rows["sample"] += at
                rows["first"] += at
                parts.append(rows)
            at += rep.segments
        return np.concatenate(parts) if parts else np.empty(0, dtype=METRIC_DTYPE)

    def trace_ns(self, ticks: np.ndarray) -> np.ndarray:
        """Timestamps (ticks) as ns since the trace's time origin (float64)."""
        # One array, changed in place (the same operations, so the same values):
        # called on every sample of a trace, where each temporary is 8 bytes a sample.
        rel = np.array(ticks, dtype=np.float64)
        rel -= float(self.global_offset_ticks)
        rel *= 1e9 / self.timer_resolution_hz
        return rel if rel.ndim else rel[()]

    @property
    def ranks(self) -> list[int]:
        """Every rank defined in the archive, ascending (readable or not)."""
        return sorted({loc.rank for loc in self.locations})

    @property
    def broken_ranks(self) -> list[int]:
        """Ranks at least one of whose locations could not be read."""
        return sorted({loc.rank for loc in self.locations if not loc.ok})

    def class_order(self) -> list[int]:
        """Segment indices that have samples, by total time descending: the order of
        the class ids S0 (the largest), S1, ... of the analysis and perfvar.open."""
        s = self.samples
        totals = np.bincount(
            s["segment"], weights=s["duration_ns"], minlength=len(self.segments)
        )
        present = distinct_counts(s["segment"])[0].tolist()
        return sorted(present, key=lambda g: (-totals[g], self.segments[g]))


# One location's outcome: its report, and its samples and probes when it is intact.
LocationRead = tuple[LocationReport, Optional[np.ndarray], Optional[np.ndarray]]
