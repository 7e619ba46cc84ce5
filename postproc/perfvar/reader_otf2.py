"""Read compute-segment samples from a perfvar OTF2 archive (DIR/traces.otf2).

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
and this one on the same location (-1 when there was none; see perfvar.cache_state for
what they are used for).

Counters (``PERFVAR_METRICS``): perfvar writes, per location, Metric events of running
totals (OTF2_METRIC_ACCUMULATED_START): zeros where counting started, then the totals at
the end of each segment long enough to read them (right after its Leave). Each Metric
event after a location's first, when at least one segment ended since the previous one,
gives one row of ``TraceSamples.metrics`` (METRIC_DTYPE): the deltas of the counters
since that previous event, and which segments they cover (``first`` .. ``sample``,
indexes into ``samples``; a short segment's counts are in the row of the next read).
Columns follow ``TraceSamples.metric_names`` (every counter of the trace, by name); a
location whose ranks count fewer has NaN in the others. Only UINT64 members are read.

Events are matched per location with a stack, so user timer regions
(``perfvar:user:...``) nested in segments, and MPI regions between them, are skipped.

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

The global definitions are read with the high-level ``otf2`` reader. Events are read per
location (a broken event file affects only its own location) by the C event loop of
libperfvar_read when it is found (perfvar.reader_native, about 15x faster), else through
the low-level ``_otf2`` API with Python callbacks (about 7x faster than the high-level
event iterator); ``PERFVAR_READER=native|python`` forces one. Both give the same
TraceSamples. :func:`read_trace` can read a subset of ranks or locations. Messages the
OTF2 C library prints on its standard error are captured and folded into our error
messages.

Errors: :func:`read_trace` raises :class:`~perfvar.errors.TraceError` with one line
when the directory, the anchor file or the global definitions cannot be read, or when
no location's events can be read. Locations whose event files are missing or corrupt
are excluded and reported in ``TraceSamples.locations`` / ``warnings``. Not thread-safe
(it redirects file descriptor 2 while OTF2 runs).
"""

from __future__ import annotations

import ctypes
import functools
import importlib
import os
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from perfvar.errors import TraceError
from perfvar.segments import USER_PREFIX, is_segment

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
_UINT64 = 4  # OTF2_TYPE_UINT64
CPU_UNKNOWN = -1
CPU_UNKNOWN_VALUE = 0xFFFFFFFF  # a ``cpu`` attribute saying: unknown from here on
CONTEXT_UNKNOWN = -1
CPU_ATTRIBUTE = "cpu"
PROBE_REGION = "perfvar:probe"  # canonical name of the fixed-work probe region


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
        rel = np.asarray(ticks, dtype=np.float64) - float(self.global_offset_ticks)
        return rel * (1e9 / self.timer_resolution_hz)

    @property
    def ranks(self) -> list[int]:
        """Every rank defined in the archive, ascending (readable or not)."""
        return sorted({loc.rank for loc in self.locations})

    @property
    def broken_ranks(self) -> list[int]:
        """Ranks at least one of whose locations could not be read."""
        return sorted({loc.rank for loc in self.locations if not loc.ok})


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


@functools.cache
def _raw_has_attribute() -> Optional[Callable[..., int]]:
    """OTF2_AttributeList_TestAttributeByID bound once, as _raw_get_uint32: whether an
    event has the ``cpu`` attribute, asked first because most events have none (it is
    written where the CPU changed) and OTF2 prints an error for each absent one it is
    asked for. None if the library cannot be located."""
    try:
        from _otf2.Config import conf

        func = ctypes.CDLL(conf.lib._name).OTF2_AttributeList_TestAttributeByID
        func.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
        func.restype = ctypes.c_bool
        return func
    except Exception:
        return None


@functools.cache
def _raw_get_uint32() -> Optional[Callable[..., int]]:
    """OTF2_AttributeList_GetUint32 bound once, without the per-call set-up and
    exception the ``_otf2`` wrapper costs (it dominated reading time). Uses a
    separate CDLL handle on the same library, so the binding's own function objects
    are untouched. None if the library cannot be located (the wrapper is used then).
    """
    try:
        from _otf2.Config import conf

        func = ctypes.CDLL(conf.lib._name).OTF2_AttributeList_GetUint32
        func.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p]
        func.restype = ctypes.c_int
        return func
    except Exception:
        return None


# OTF2 event -> the scanner method that handles it.
_EVENTS = (
    ("Enter", "enter"),
    ("Leave", "leave"),
    ("MpiSend", "mpi_send"),
    ("MpiRecv", "mpi_recv"),
    ("MpiCollectiveEnd", "mpi_collective_end"),
    ("MpiIsend", "mpi_isend"),
    ("MpiIrecv", "mpi_irecv"),
    ("NonBlockingCollectiveComplete", "non_blocking_collective_complete"),
)


def _c_callback(method: Callable[..., None]) -> Callable[..., int]:
    """The handler as an OTF2 C callback: it returns OTF2_CALLBACK_SUCCESS (0)."""

    def callback(*args: Any) -> int:
        method(*args)
        return 0

    return callback


def _set_raw_callbacks(callbacks: Any, scanner: Any) -> bool:
    """Register the scanner's handlers (see _EVENTS) as C callbacks directly.

    Skips the ``_otf2`` per-event wrapper (a user-data cast and exception guard per
    event, half of the reading time). The ctypes function objects are kept on the
    scanner while events are read. Returns False if the private names moved, and the
    caller then uses the public ``_otf2.EvtReaderCallbacks_Set*Callback``.
    """
    try:
        from _otf2.Config import conf

        # The package re-exports a class of this name: import the module itself.
        cb = importlib.import_module("_otf2.EvtReaderCallbacks")

        lib = ctypes.CDLL(conf.lib._name)
        pairs = [
            (
                name,
                getattr(cb, f"_EvtReaderCallback_FP_{name}"),
                getattr(scanner, m),
            )
            for name, m in scanner.events
        ]
        keep = []
        for name, proto, method in pairs:
            setter = getattr(lib, f"OTF2_EvtReaderCallbacks_Set{name}Callback")
            setter.argtypes = [ctypes.c_void_p, proto]
            setter.restype = ctypes.c_int
            fp = proto(_c_callback(method))
            keep.append(fp)
            if setter(callbacks, fp) != 0:
                return False
        scanner.c_callbacks = keep
        return True
    except Exception:
        return False


class _LocationScanner:
    """Enter/Leave callbacks for one location; collects segment samples.

    Callbacks must not raise (an exception inside an OTF2 callback is printed by the
    binding and aborts the read), so any failure is stored in ``self.failure``.
    """

    def __init__(
        self,
        report: LocationReport,
        region_segment: dict[int, int],
        user_regions: set[int],
        cpu_attr: Optional[tuple[int, Any]],
        probe_regions: frozenset[int] = frozenset(),
        metric_columns: Optional[dict[int, list[int]]] = None,
    ) -> None:
        import _otf2
        from otf2.enums import Type

        self._otf2 = _otf2
        self._uint32 = Type.UINT32
        self.report = report
        self.region_segment = region_segment
        self.user_regions = user_regions
        self.cpu_attr = cpu_attr
        self.stack: list[tuple[int, int, int, int]] = []  # (region, time, cpu, ctx)
        self.last_cpu = CPU_UNKNOWN  # the CPU the last event with a cpu attribute gave
        self.moved = CONTEXT_UNKNOWN  # bytes MPI records carried since the last segment
        self.seg: list[int] = []
        self.start: list[int] = []
        self.ticks: list[int] = []
        self.cpu_enter: list[int] = []
        self.cpu_leave: list[int] = []
        self.context: list[int] = []
        self.probe_regions = probe_regions
        self.probe_start: list[int] = []
        self.probe_ticks: list[int] = []
        self.probe_cpu: list[int] = []
        # Counters: class ref -> its members' columns; the location's last totals,
        # their time and the samples read by then (None: no Metric event yet).
        self.metric_columns = metric_columns or {}
        self.events = _EVENTS + ((("Metric", "metric"),) if self.metric_columns else ())
        self.base: Optional[list[int]] = None
        self.base_time = 0
        self.base_samples = 0
        self.metric_rows: list[tuple] = []
        self.failure: Optional[BaseException] = None
        self.c_callbacks: list[Any] = []  # keeps C callback objects alive
        self._u32 = ctypes.c_uint32()
        self._u32_ref = ctypes.byref(self._u32)
        self._get_u32 = _raw_get_uint32()
        self._has_attr = _raw_has_attribute()

    def _cpu(self, attributes: Any) -> int:
        """The CPU of a segment, probe or user timer Enter/Leave: its ``cpu``
        attribute, which becomes the location's last, or the last when it has none."""
        given = self._given_cpu(attributes)
        if given is not None:
            self.last_cpu = CPU_UNKNOWN if given == CPU_UNKNOWN_VALUE else given
        return self.last_cpu

    def _given_cpu(self, attributes: Any) -> Optional[int]:
        """The event's own ``cpu`` attribute; None when it has none (or one that is not
        an integer)."""
        if self.cpu_attr is None or not attributes:  # None or a NULL pointer
            return None
        ref, otype = self.cpu_attr
        try:
            if self._has_attr is not None:
                if not self._has_attr(attributes, ref):
                    return None
            elif not self._otf2.AttributeList_TestAttributeByID(attributes, ref):
                return None
            if otype == self._uint32:
                if self._get_u32 is not None:
                    rc = self._get_u32(attributes, ref, self._u32_ref)
                    return int(self._u32.value) if rc == 0 else None
                return int(self._otf2.AttributeList_GetUint32(attributes, ref))
            kind, value = self._otf2.AttributeList_GetAttributeByID(
                attributes, ref, self._otf2.Type(), self._otf2.AttributeValue()
            )
            from otf2 import attribute_value

            return int(attribute_value.parse(None, value, kind))
        except Exception:
            return None  # attribute absent on this event, or not an integer

    def enter(self, location, time, position, user, attributes, region) -> None:
        try:
            cpu, context = CPU_UNKNOWN, CONTEXT_UNKNOWN
            if region in self.region_segment:
                cpu, context = self._cpu(attributes), self.moved
                self.moved = CONTEXT_UNKNOWN  # the next segment's call starts now
            elif region in self.probe_regions:
                cpu = self._cpu(attributes)
            elif region in self.user_regions:
                self._cpu(attributes)  # it may say where the CPU changed
            self.stack.append((region, time, cpu, context))
        except BaseException as exc:  # noqa: BLE001 - must not escape to C
            self.failure = self.failure or exc

    def _moved(self, nbytes: int) -> None:
        self.moved = max(self.moved, 0) + int(nbytes)

    # One method per event: the binding's fallback keeps a callback alive under the
    # method's name, so a method registered for two events would lose one of them.
    def mpi_send(self, location, time, position, user, attributes, *msg) -> None:
        self._message(msg)  # msg: receiver, communicator, tag, length

    def mpi_recv(self, location, time, position, user, attributes, *msg) -> None:
        self._message(msg)  # msg: sender, communicator, tag, length

    def mpi_isend(self, location, time, position, user, attributes, *msg) -> None:
        self._message(msg)  # msg: receiver, communicator, tag, length, request id

    def mpi_irecv(self, location, time, position, user, attributes, *msg) -> None:
        self._message(msg)  # msg: sender, communicator, tag, length, request id

    def _message(self, msg: tuple) -> None:
        try:
            self._moved(msg[3])
        except BaseException as exc:  # noqa: BLE001 - must not escape to C
            self.failure = self.failure or exc

    def mpi_collective_end(
        self, location, time, position, user, attributes, *coll
    ) -> None:
        self._collective(
            coll
        )  # operation, communicator, root, size sent, size received

    def non_blocking_collective_complete(
        self, location, time, position, user, attributes, *coll
    ) -> None:
        self._collective(coll)  # the same, and the request id

    def _collective(self, coll: tuple) -> None:
        try:
            self._moved(coll[3] + coll[4])
        except BaseException as exc:  # noqa: BLE001 - must not escape to C
            self.failure = self.failure or exc

    def metric(self, location, time, position, user, attributes, metric, *rest) -> None:
        """A Metric event: one row of the deltas since the location's previous one,
        when a segment ended in between (see the module docstring)."""
        try:
            if len(rest) == 3:  # the raw callback: count, type and value arrays
                n, types, values = rest[0], rest[1], rest[2]
            else:  # the binding's wrapper: lists
                types, values = rest
                n = len(values)
            columns = self.metric_columns.get(int(metric))
            if columns is None or n > METRICS_MAX:
                return
            if any(
                int(getattr(types[i], "value", types[i])) != _UINT64 for i in range(n)
            ):
                return
            totals = [int(values[i].unsigned_int) for i in range(n)]
            nseg = len(self.seg)
            if self.base is not None:
                if nseg == self.base_samples:
                    return  # no segment ended since: its counts go to the next read
                row = [np.nan] * METRICS_MAX
                for i, col in enumerate(columns[:n]):
                    row[col] = float((totals[i] - self.base[i]) & 0xFFFFFFFFFFFFFFFF)
                self.metric_rows.append(
                    (nseg - 1, self.base_samples, int(time), self.base_time, row)
                )
            self.base, self.base_time, self.base_samples = totals, int(time), nseg
        except BaseException as exc:  # noqa: BLE001 - must not escape to C
            self.failure = self.failure or exc

    def metrics_array(self) -> np.ndarray:
        out = np.empty(len(self.metric_rows), dtype=METRIC_DTYPE)
        out["rank"] = self.report.rank
        out["thread"] = self.report.thread
        for i, (sample, first, t, since, values) in enumerate(self.metric_rows):
            out[i]["sample"], out[i]["first"] = sample, first
            out[i]["time_ticks"], out[i]["since_ticks"] = t, since
            out[i]["values"] = values
        return out

    def leave(self, location, time, position, user, attributes, region) -> None:
        try:
            seg = self.region_segment.get(region)
            probe = region in self.probe_regions
            user_region = region in self.user_regions
            # Read first: a Leave without its Enter may still say where the CPU changed.
            cpu_leave = (
                self._cpu(attributes)
                if seg is not None or probe or user_region
                else CPU_UNKNOWN
            )
            stack = self.stack
            if not stack or stack[-1][0] != region:
                # Unwind to the matching Enter; anything above it was never left.
                for depth in range(len(stack) - 1, -1, -1):
                    if stack[depth][0] == region:
                        self.report.unclosed += len(stack) - 1 - depth
                        del stack[depth + 1 :]
                        break
                else:
                    self.report.unmatched_leaves += 1
                    return
            _, t_enter, cpu_enter, context = stack.pop()
            if seg is not None:
                self.seg.append(seg)
                self.start.append(t_enter)
                self.ticks.append(time - t_enter)
                self.cpu_enter.append(cpu_enter)
                self.cpu_leave.append(cpu_leave)
                self.context.append(context)
            elif user_region:
                self.report.user_regions += 1
            elif probe:
                self.probe_start.append(t_enter)
                self.probe_ticks.append(time - t_enter)
                same = cpu_leave == cpu_enter
                self.probe_cpu.append(cpu_enter if same else CPU_UNKNOWN)
        except BaseException as exc:  # noqa: BLE001 - must not escape to C
            self.failure = self.failure or exc

    def to_array(self, ns_per_tick: float) -> np.ndarray:
        out = np.empty(len(self.seg), dtype=SAMPLE_DTYPE)
        out["segment"] = self.seg
        out["rank"] = self.report.rank
        out["thread"] = self.report.thread
        out["start_ticks"] = np.asarray(self.start, dtype=np.uint64)
        out["duration_ns"] = np.asarray(self.ticks, dtype=np.float64) * ns_per_tick
        out["cpu_enter"] = self.cpu_enter
        out["cpu_leave"] = self.cpu_leave
        out["context_bytes"] = self.context
        return out

    def probes_array(self, ns_per_tick: float) -> np.ndarray:
        out = np.empty(len(self.probe_start), dtype=PROBE_DTYPE)
        out["rank"] = self.report.rank
        out["thread"] = self.report.thread
        out["start_ticks"] = np.asarray(self.probe_start, dtype=np.uint64)
        ticks = np.asarray(self.probe_ticks, dtype=np.float64)
        out["duration_ns"] = ticks * ns_per_tick
        out["cpu"] = self.probe_cpu
        return out


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
    # OTF2 reads a short first chunk into a buffer it does not clear: past the cut it
    # finds either an error or, when that memory happens to be zero, a clean end. Judge
    # by the count the definitions announce, so the verdict does not depend on the heap.
    short = report.events_defined and report.events_read < report.events_defined
    if report.error is None and report.cut is None and not whole_chunk and short:
        report.error = (
            f"its event file breaks off inside its first chunk: read "
            f"{report.events_read} of {report.events_defined} events announced"
        )
    # The same past a whole chunk: the chunks before the cut were read whole, whether
    # OTF2 then said "This is no chunk header!" or, on zeroed memory, ended cleanly.
    if report.error is None and report.cut is None and whole_chunk and short:
        report.cut = (
            f"read {report.events_read} of {report.events_defined} events announced"
        )


def _read_location(
    handle: Any, loc: Any, scanner: _LocationScanner, cerr: _CStderr, whole_chunk: bool
) -> None:
    """Read one location's local definitions and events into ``scanner``.
    ``whole_chunk``: its event file holds at least one whole OTF2 chunk."""
    import _otf2

    report = scanner.report
    try:
        def_reader = _otf2.Reader_GetDefReader(handle, loc)
        if def_reader:
            _otf2.Reader_ReadAllLocalDefinitions(handle, def_reader)
            _otf2.Reader_CloseDefReader(handle, def_reader)
    except Exception:
        pass  # local defs (mapping tables, clock offsets) are optional for durations
    cerr.take()  # a missing local .def file is harmless; drop its messages
    evt_reader = _otf2.Reader_GetEvtReader(handle, loc)
    if not evt_reader:
        report.error = _otf2_detail(cerr.take(), None)
        return
    broke = None
    try:
        callbacks = _otf2.EvtReaderCallbacks_New()
        if not _set_raw_callbacks(callbacks, scanner):
            for name, method in scanner.events:
                setter = getattr(_otf2, f"EvtReaderCallbacks_Set{name}Callback")
                setter(callbacks, getattr(scanner, method))
        _otf2.Reader_RegisterEvtCallbacks(handle, evt_reader, callbacks, None)
        _otf2.EvtReaderCallbacks_Delete(callbacks)
        report.events_read = int(_otf2.Reader_ReadAllLocalEvents(handle, evt_reader))
    except Exception as exc:
        has_data = bool(scanner.seg or scanner.stack)
        broke = ReadFailure(cerr.take(), exc, scanner.failure, has_data)
    finally:
        _otf2.Reader_CloseEvtReader(handle, evt_reader)
    if broke is None and scanner.failure is not None:
        broke = ReadFailure([], None, scanner.failure)
    settle_location(report, whole_chunk, broke)


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
    anchor = _anchor(directory)
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


def trace_ranks(directory: str) -> list[int]:
    """Every rank DIR/traces.otf2 defines, ascending (as ``read_trace(DIR).ranks``
    gives them, without reading any event). Raises TraceError as :func:`read_trace`
    does."""
    return sorted({loc[3] for loc in _global_definitions(directory).locations})


def read_trace(
    directory: str,
    ranks: Optional[Iterable[int]] = None,
    locations: Optional[Iterable[int]] = None,
) -> TraceSamples:
    """Read the segment samples of DIR/traces.otf2.

    ``ranks``: read only the locations of these ranks (location group ids, see
    :func:`location_rank`); ``locations``: only these OTF2 location ids (see
    :func:`trace_locations`); both: the locations in both. None reads everything.
    Reports, samples and probes keep definition order; a location's thread index is
    its position in its rank whatever is selected. Selecting a rank or location the
    archive does not define, or nothing, raises TraceError.

    The events are read by the native reader (perfvar.reader_native, libperfvar_read)
    when it is found, else in Python; ``PERFVAR_READER=python`` or ``native`` forces
    one (``native`` fails when the library is missing). Both give the same result.

    Returns a TraceSamples whose ``samples`` hold the intact locations only. Raises
    TraceError (one line) if nothing usable can be read; see the module docstring.
    """
    from perfvar import reader_native

    native = reader_native.library()  # validates PERFVAR_READER first
    anchor = _anchor(directory)
    import _otf2

    whole_read = None  # every location's samples and probes, when read as one
    with _CStderr() as cerr:
        reader = _open_reader(anchor, cerr)
        try:
            defs = _definitions(reader, anchor)
            chosen = _select(defs, ranks, locations)
            try:
                chunk_bytes = int(_otf2.Reader_GetChunkSize(reader.handle)[0])
            except Exception:
                chunk_bytes = 1 << 20  # OTF2's default, and what perfvar writes
            sizes = _event_file_sizes(anchor, chosen)
            whole = [size >= chunk_bytes for size in sizes]
            if native is None:
                read = _read_events(reader.handle, defs, chosen, whole, cerr, _otf2)
            else:
                # OTF2 3.0's reader (Debian's, under the native loop) does not see
                # that a file ending at a chunk boundary was cut there: it decodes
                # its stale buffer again without end. The Python loop's OTF2 says
                # "This is no chunk header!"; it reads those (rare: a whole file
                # ends inside its last chunk).
                def python_loop(indices: list[int]) -> list:
                    """The Python loop over these of the chosen locations."""
                    return _read_events(
                        reader.handle,
                        defs,
                        [chosen[i] for i in indices],
                        [whole[i] for i in indices],
                        cerr,
                        _otf2,
                    )

                boundary = [0 < size and size % chunk_bytes == 0 for size in sizes]
                mine = [i for i, b in enumerate(boundary) if b]
                py = python_loop(mine) if mine else []
                reader.close()  # the native reader opens the archive itself
                reader = None
                rest = [i for i, b in enumerate(boundary) if not b]
                nat = reader_native.read_locations(
                    native,
                    defs,
                    [chosen[i] for i in rest],
                    [whole[i] for i in rest],
                    cerr,
                )
                by_index = dict(zip(mine, py)) | dict(zip(rest, nat.locations))
                declined = [i for i in rest if by_index[i] is None]
                if declined:  # see read_locations: cut files OTF2 3.0 overruns
                    reader = _open_reader(anchor, cerr)
                    by_index |= dict(zip(declined, python_loop(declined)))
                read = [by_index[i] for i in range(len(chosen))]
                if not mine and not declined:  # all in one array already, in order
                    whole_read = (nat.samples, nat.probes)
        finally:
            try:
                if reader is not None:
                    reader.close()
            except Exception:
                pass
    return _trace_samples(defs, read, whole_read)


def _select(
    defs: TraceDefinitions,
    ranks: Optional[Iterable[int]],
    locations: Optional[Iterable[int]],
) -> list[tuple[int, str, int, int, int]]:
    chosen = defs.locations
    if ranks is not None:
        want = {int(r) for r in ranks}
        missing = sorted(want - {loc[3] for loc in chosen})
        if missing:
            raise TraceError(
                f"{defs.anchor}: no rank {', '.join(map(str, missing))} in the archive"
            )
        chosen = [loc for loc in chosen if loc[3] in want]
    if locations is not None:
        want = {int(x) for x in locations}
        missing = sorted(want - {loc[0] for loc in defs.locations})
        if missing:
            raise TraceError(
                f"{defs.anchor}: no location {', '.join(map(str, missing))} in the "
                "archive"
            )
        chosen = [loc for loc in chosen if loc[0] in want]
    if not chosen:
        raise TraceError(f"{defs.anchor}: no location selected to read")
    return chosen


def _event_file_sizes(
    anchor: str, chosen: list[tuple[int, str, int, int, int]]
) -> list[int]:
    """Per location: the size of its event file in bytes (0 when it is missing)."""
    out = []
    for loc_id, *_ in chosen:
        evt = os.path.join(os.path.dirname(anchor), "traces", f"{loc_id}.evt")
        try:
            out.append(os.path.getsize(evt))
        except OSError:
            out.append(0)
    return out


# One location's outcome: its report, and its samples and probes when it is intact.
LocationRead = tuple[LocationReport, Optional[np.ndarray], Optional[np.ndarray]]


def _read_events(
    handle: Any,
    defs: TraceDefinitions,
    chosen: list[tuple[int, str, int, int, int]],
    whole: list[bool],
    cerr: _CStderr,
    _otf2: Any,
) -> list[LocationRead]:
    """The Python event loop: per chosen location, its report and, when intact, its
    samples and probes. ``whole[i]``: location i's event file holds a whole chunk."""
    if not chosen:
        return []
    for loc_id, *_ in chosen:
        _otf2.Reader_SelectLocation(handle, loc_id)
    def_files = True
    try:
        _otf2.Reader_OpenDefFiles(handle)
    except Exception:
        def_files = False
    try:
        _otf2.Reader_OpenEvtFiles(handle)
    except Exception as exc:
        raise TraceError(
            f"cannot open event files of {defs.anchor}: "
            f"{_otf2_detail(cerr.take(), exc)}"
        ) from None

    ns_per_tick = defs.ns_per_tick
    out: list[LocationRead] = []
    try:
        for (loc_id, name, events, rank, thread), whole_chunk in zip(chosen, whole):
            report = LocationReport(rank, loc_id, name, events, thread)
            scanner = _LocationScanner(
                report,
                defs.region_segment,
                defs.user_regions,
                defs.cpu_attr,
                defs.probe_regions,
                defs.metric_columns,
            )
            _read_location(handle, loc_id, scanner, cerr, whole_chunk)
            if not report.ok:
                out.append((report, None, None))
                continue
            report.unclosed += len(scanner.stack)
            arr = scanner.to_array(ns_per_tick)
            report.segments = len(arr)
            probe_arr = scanner.probes_array(ns_per_tick)
            report.probes = len(probe_arr)
            if defs.metric_columns:
                report.metric_rows = scanner.metrics_array()
            out.append((report, arr, probe_arr))
    finally:
        _otf2.Reader_CloseEvtFiles(handle)
        if def_files:
            try:
                _otf2.Reader_CloseDefFiles(handle)
            except Exception:
                pass
        cerr.take()
    return out


def _trace_samples(
    defs: TraceDefinitions,
    read: list[LocationRead],
    whole_read: Optional[tuple[np.ndarray, np.ndarray]] = None,
) -> TraceSamples:
    """The TraceSamples of these outcomes; ``whole_read``: their samples and probes
    already in one array each (else they are concatenated)."""
    reports = [report for report, _, _ in read]
    arrays = [arr for _, arr, _ in read if arr is not None]
    probe_arrays = [arr for _, _, arr in read if arr is not None]
    good = [r for r in reports if r.ok]
    if not good:
        first = reports[0]
        raise TraceError(
            f"no readable event data in {os.path.dirname(defs.anchor)}/traces/: none "
            f"of the {len(reports)} locations could be read (rank {first.rank}: "
            f"{first.error})"
        )
    warnings = reading_warnings(reports, defs.segments, defs.threads_per_rank())
    if whole_read is not None:
        samples, probes = whole_read
    else:
        samples = np.concatenate(arrays) if arrays else np.empty(0, dtype=SAMPLE_DTYPE)
        probes = (
            np.concatenate(probe_arrays)
            if probe_arrays
            else np.empty(0, dtype=PROBE_DTYPE)
        )
    return TraceSamples(
        defs.anchor,
        defs.resolution,
        defs.segments,
        samples,
        reports,
        warnings,
        defs.offset,
        probes,
        defs.metric_names,
    )


def reading_warnings(
    reports: list[LocationReport],
    segments: list[str],
    threads: Optional[dict[int, int]] = None,
) -> list[str]:
    """The warnings of TraceSamples for these location reports. ``threads``: the
    number of locations each rank defines (default: counted in ``reports``, right
    when they hold whole ranks); a rank with one is named without its thread."""
    out: list[str] = []
    per_rank: dict[int, int] = {}
    for r in reports:
        per_rank[r.rank] = per_rank.get(r.rank, 0) + 1
    if threads is not None:
        per_rank = {rank: threads.get(rank, n) for rank, n in per_rank.items()}
    for r in reports:
        single = per_rank[r.rank] == 1
        where = f"rank {r.rank}" + ("" if single else f" thread {r.thread}")
        if not r.ok:
            out.append(
                f"{where}: events unreadable, {'rank' if single else 'thread'} "
                f"excluded from the analysis ({r.error})"
            )
            continue
        if r.cut:
            out.append(
                f"{where}: its event file breaks off ({r.cut}); its events up to there "
                "were read"
            )
        elif r.events_defined and r.events_read < r.events_defined:
            out.append(
                f"{where}: read {r.events_read} of {r.events_defined} events "
                "announced in the definitions (trace cut short?)"
            )
        if r.unclosed or r.unmatched_leaves:
            out.append(
                f"{where}: {r.unclosed} Enter without Leave, "
                f"{r.unmatched_leaves} Leave without Enter (ignored)"
            )
    for rank, count in sorted(per_rank.items()):
        if count > 1:
            out.append(
                f"rank {rank}: {count} threads; the slow-segment judgement pools "
                "their samples per segment class"
            )
    if not segments:
        out.append("the archive defines no perfvar:segment regions: nothing to judge")
    return out
