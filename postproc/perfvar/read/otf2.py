"""The OTF2 side both event loops share (the Python one, perfvar.read.python_loop, and
the C one, perfvar.read.native): the archive's global definitions read with the
high-level ``otf2`` reader (segment, probe and user regions, the locations with their
ranks and threads, the ``cpu`` attribute, the metric members), each location's event
reader opened and its outcome settled (a broken event file affects only its own
location), and what the OTF2 C library prints on its standard error captured and folded
into our messages (_CStderr). Not thread-safe (it redirects file descriptor 2 while
OTF2 runs).
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Optional

from perfvar.errors import TraceError
from perfvar.read.samples import (
    CPU_ATTRIBUTE,
    METRICS_MAX,
    PROBE_REGION,
    LocationReport,
)
from perfvar.read.segments import USER_PREFIX, is_segment


class _CStderr:
    """Redirect file descriptor 2 to a temporary file while OTF2's C code runs.

    The OTF2 library prints "[OTF2] src/...: error: ..." lines on stderr; the CLI
    must print one clean line instead, so the text is captured and summarized.
    """

    def __enter__(self) -> _CStderr:
        sys.stderr.flush()
        self._file = tempfile.TemporaryFile(mode="w+b")
        self._saved = os.dup(2)
        os.dup2(self._file.fileno(), 2)
        self._pos = 0
        return self

    def take(self) -> list[str]:
        """Lines written since the previous call."""
        sys.stderr.flush()
        self._file.seek(self._pos)
        data = self._file.read()
        self._pos += len(data)
        return data.decode("utf-8", "replace").splitlines()

    def __exit__(self, *exc: Any) -> None:
        sys.stderr.flush()
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._file.close()


def _otf2_detail(lines: list[str], exc: Optional[BaseException]) -> str:
    """The root cause from OTF2's own messages (the first error line)."""
    for line in lines:
        if "error:" in line:
            return line.split("error:", 1)[1].strip()
    if exc is not None:
        text = str(exc).strip()
        return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return "unknown error"


def location_rank(loc: Any) -> int:
    """The rank of an OTF2 location (the ``otf2`` package's definition): the id of its
    LocationGroup, or its own id when it has none. A rank's threads are its locations
    in definition order (see the module docstring)."""
    group = getattr(loc, "group", None)
    return int(group._ref) if group is not None else int(loc._ref)


def _open_reader(anchor: str, cerr: _CStderr) -> Any:
    import otf2

    try:
        return otf2.reader.Reader(anchor)
    except Exception as exc:
        detail = _otf2_detail(cerr.take(), exc)
        raise TraceError(
            f"cannot read OTF2 archive {anchor}: {detail} (truncated or corrupt?)"
        ) from None


@dataclass
class ReadFailure:
    """How reading one location's events went wrong, for :func:`settle_location`."""

    lines: list[str]  # what OTF2 printed on stderr meanwhile
    exc: Optional[
        BaseException
    ]  # OTF2's error (an ``_otf2.Error``), if it returned one
    failure: Optional[BaseException] = None  # a failure of our own callbacks
    has_data: bool = False  # segments were stored or Enters were open when it broke off


def settle_location(
    report: LocationReport, whole_chunk: bool, broke: Optional[ReadFailure]
) -> None:
    """Set ``report.error`` / ``report.cut`` once a location's events were read
    (``broke`` None: OTF2 read them all, ``report.events_read`` set). Shared by the
    Python and the native event loops so that both judge alike.
    ``whole_chunk``: its event file holds at least one whole OTF2 chunk."""
    short = report.events_defined and report.events_read < report.events_defined
    if not whole_chunk and short and (broke is None or broke.failure is None):
        # Its first chunk cut short or damaged: OTF2 reads that chunk into a buffer it
        # does not clear, and past the cut it ends cleanly or fails, after more or
        # fewer events, as the heap happens to hold. Nothing of the file is kept either
        # way, so the report says what the file is, not what the heap made of it (the
        # two event loops, in other processes or after other reads, agree).
        report.error = (
            f"its first event chunk is cut short or damaged: "
            f"{report.events_defined} events announced, not all there"
        )
        report.cut, report.events_read = None, 0
        return
    if broke is not None and broke.exc is not None:
        detail = _otf2_detail(broke.lines, broke.failure or broke.exc)
        # An event file cut short (a half-written or truncated file: "This is no
        # chunk header!") breaks off at a chunk; the chunks before it were read whole.
        # Keep them. A file cut inside its first chunk has none: unreadable, as OTF2
        # says.
        if broke.failure is None and whole_chunk and broke.has_data:
            report.cut = detail
        else:
            report.error = detail
    if report.error is None and broke is not None and broke.failure is not None:
        report.error = _otf2_detail([], broke.failure)
    # Past a whole chunk: the chunks before the cut were read whole, whether
    # OTF2 then said "This is no chunk header!" or, on zeroed memory, ended cleanly.
    if report.error is None and report.cut is None and whole_chunk and short:
        report.cut = (
            f"read {report.events_read} of {report.events_defined} events announced"
        )


@dataclass
class TraceDefinitions:
    """What the global definitions say, as both event loops need it."""

    anchor: str
    resolution: float  # timer resolution, Hz
    offset: int  # ClockProperties global offset, ticks
    segments: list[str]  # canonical segment keys, in region definition order
    region_segment: dict[int, int]  # region ref -> index into segments
    user_regions: set[int]
    probe_regions: frozenset[int]
    cpu_attr: Optional[tuple[int, Any]]  # (attribute ref, otf2 Type) of "cpu"
    # Every location in definition order: (location id, name, events announced,
    # rank, thread).
    locations: list[tuple[int, str, int, int, int]]
    # Counters: every MetricMember's name (the columns), and per MetricClass ref the
    # columns of its members; empty without counters.
    metric_names: list[str] = field(default_factory=list)
    metric_columns: dict[int, list[int]] = field(default_factory=dict)

    @property
    def ns_per_tick(self) -> float:
        return 1e9 / self.resolution

    def threads_per_rank(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for *_, rank, _thread in self.locations:
            out[rank] = out.get(rank, 0) + 1
        return out


def _definitions(reader: Any, anchor: str) -> TraceDefinitions:
    defs = reader.definitions
    resolution = float(defs.clock_properties.timer_resolution)
    if not resolution > 0:
        raise TraceError(f"{anchor}: ClockProperties timer resolution is {resolution}")
    segments: list[str] = []
    seg_index: dict[str, int] = {}
    region_segment: dict[int, int] = {}
    user_regions: set[int] = set()
    probe_regions: set[int] = set()
    for region in defs.regions:
        name = region.canonical_name or ""
        if is_segment(name):
            region_segment[region._ref] = seg_index.setdefault(name, len(seg_index))
            if len(segments) < len(seg_index):
                segments.append(name)
        elif name.startswith(USER_PREFIX):
            user_regions.add(region._ref)
        elif name == PROBE_REGION:
            probe_regions.add(region._ref)

    cpu_attr = None
    for attr in defs.attributes:
        if attr.name == CPU_ATTRIBUTE:
            cpu_attr = (attr._ref, attr.type)
            break

    locations = []
    threads_seen: dict[int, int] = {}  # rank -> locations met so far
    for loc in defs.locations:
        rank = location_rank(loc)
        thread = threads_seen.get(rank, 0)
        threads_seen[rank] = thread + 1
        events = int(loc.number_of_events or 0)
        locations.append((int(loc._ref), str(loc.name), events, rank, thread))
    if not locations:
        raise TraceError(f"{anchor}: the archive defines no locations")
    offset = int(getattr(defs.clock_properties, "global_offset", 0) or 0)
    metric_names, metric_columns = _metric_definitions(defs)
    return TraceDefinitions(
        anchor,
        resolution,
        offset,
        segments,
        region_segment,
        user_regions,
        frozenset(probe_regions),
        cpu_attr,
        locations,
        metric_names,
        metric_columns,
    )


def _metric_definitions(defs: Any) -> tuple[list[str], dict[int, list[int]]]:
    """The counters' names, one column per MetricMember (at most METRICS_MAX), and
    each MetricClass's members as columns."""
    column: dict[int, int] = {}
    names: list[str] = []
    for member in defs.metric_members:
        if len(names) < METRICS_MAX:
            column[member._ref] = len(names)
            names.append(str(member.name))
    classes = {}
    for cls in defs.metric_classes:
        members = [column.get(m._ref) for m in cls.members]
        if members and None not in members:
            classes[int(cls._ref)] = members
    return names, classes


def _anchor(directory: str) -> str:
    if not os.path.isdir(directory):
        raise TraceError(f"{directory}: no such directory")
    anchor = os.path.join(directory, "traces.otf2")
    if not os.path.isfile(anchor):
        raise TraceError(f"{anchor}: not found (is {directory} a perfvar trace?)")
    return anchor


def _global_definitions(directory: str) -> TraceDefinitions:
    """The archive's definitions, read once per process while its files stay the
    same: at thousands of ranks reading them through OTF2's callbacks takes
    seconds, and the analysis asks for the locations and the ranks apart."""
    anchor = _anchor(directory)
    try:
        stamp = tuple(
            (st.st_mtime_ns, st.st_size)
            for st in (os.stat(anchor), os.stat(anchor[: -len(".otf2")] + ".def"))
        )
    except OSError:  # no global definitions: the reader says what is wrong
        return _read_global_definitions(anchor)
    cached = _DEFINITIONS.get(anchor)
    if cached is None or cached[0] != stamp:
        cached = _DEFINITIONS[anchor] = (stamp, _read_global_definitions(anchor))
    return cached[1]


# anchor -> ((mtime ns, size) of the anchor and the global definitions, what they
# define); one process's, not thread-safe (as the reader's stderr redirection)
_DEFINITIONS: dict[str, tuple[tuple, TraceDefinitions]] = {}


def _read_global_definitions(anchor: str) -> TraceDefinitions:
    with _CStderr() as cerr:
        reader = _open_reader(anchor, cerr)
        try:
            return _definitions(reader, anchor)
        finally:
            try:
                reader.close()
            except Exception:
                pass


def trace_locations(directory: str) -> list[int]:
    """The OTF2 location ids of DIR/traces.otf2, in definition order (the order of
    ``read_trace(DIR).locations``). Raises TraceError as :func:`read_trace` does."""
    return [loc[0] for loc in _global_definitions(directory).locations]


def rank_location_ids(directory: str) -> dict[int, list[int]]:
    """Each rank's OTF2 location ids in DIR/traces.otf2, thread 0 first (definition
    order, ranks and threads told as the reader tells them: location_rank). Raises
    TraceError as :func:`read_trace` does."""
    out: dict[int, list[int]] = {}
    for location, _, _, rank, _ in _global_definitions(directory).locations:
        out.setdefault(rank, []).append(location)
    return out


def trace_ranks(directory: str) -> list[int]:
    """Every rank DIR/traces.otf2 defines, ascending (as ``read_trace(DIR).ranks``
    gives them, without reading any event). Raises TraceError as :func:`read_trace`
    does."""
    return sorted({loc[3] for loc in _global_definitions(directory).locations})
