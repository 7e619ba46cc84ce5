"""The Python event loop: each location's events read through the low-level ``_otf2``
API with Python callbacks (about 7x faster than the high-level event iterator), into the
rows of perfvar.read.samples. perfvar.read.native is the C loop that gives the same.

Events are matched per location with a stack, so user timer regions
(``perfvar:user:...``) nested in segments, and MPI regions between them, are skipped.

Not thread-safe (OTF2 runs with file descriptor 2 redirected).
"""

from __future__ import annotations

import ctypes
import functools
import importlib
from typing import Any, Callable, Optional

import numpy as np

from perfvar.errors import TraceError
from perfvar.read.otf2 import (
    ReadFailure,
    TraceDefinitions,
    _CStderr,
    _otf2_detail,
    settle_location,
)
from perfvar.read.samples import (
    CONTEXT_UNKNOWN,
    CPU_UNKNOWN,
    CPU_UNKNOWN_VALUE,
    METRIC_DTYPE,
    METRICS_MAX,
    PROBE_DTYPE,
    SAMPLE_DTYPE,
    LocationRead,
    LocationReport,
)

_UINT64 = 4  # OTF2_TYPE_UINT64


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


# OTF2_CALLBACK_INTERRUPT: the C value a callback returns to stop the read.
CALLBACK_INTERRUPT = 1


def _c_callback(method: Callable[..., None], scanner: Any) -> Callable[..., int]:
    """The handler as an OTF2 C callback: OTF2_CALLBACK_SUCCESS (0), or
    OTF2_CALLBACK_INTERRUPT at an event past the count the definitions announce
    (its third argument is the event's position)."""

    def callback(*args: Any) -> int:
        if scanner.past_end(args[2]):
            return CALLBACK_INTERRUPT
        method(*args)
        return 0

    return callback


def _public_callback(method: Callable[..., None], scanner: Any) -> Callable[..., Any]:
    """The handler for the ``_otf2`` wrapper, which takes None as success and an
    ``_otf2`` callback code otherwise: the same stop as _c_callback."""
    import _otf2

    def callback(*args: Any) -> Any:
        if scanner.past_end(args[2]):
            return _otf2.CALLBACK_INTERRUPT
        return method(*args)

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
            fp = proto(_c_callback(method, scanner))
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
        self.overrun = False  # an event came past the count the definitions announce
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

    def past_end(self, position: int) -> bool:
        """Whether an event at ``position`` (1-based) lies past the count the
        definitions announce: OTF2 3.0 decodes the stale part of a chunk buffer a cut
        file did not fill, possibly without end (until memory runs out). The native
        reader stops there too (src/read/read.c, past_end)."""
        announced = self.report.events_defined
        if announced and position > announced:
            self.overrun = True
            return True
        return False

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
                # The binding hangs its C function pointer on the Python callable:
                # the scanner keeps the callable alive while events are read.
                handler = _public_callback(getattr(scanner, method), scanner)
                scanner.c_callbacks.append(handler)
                setter(callbacks, handler)
        _otf2.Reader_RegisterEvtCallbacks(handle, evt_reader, callbacks, None)
        _otf2.EvtReaderCallbacks_Delete(callbacks)
        report.events_read = int(_otf2.Reader_ReadAllLocalEvents(handle, evt_reader))
    except Exception as exc:
        has_data = bool(scanner.seg or scanner.stack)
        error: BaseException = exc
        if scanner.overrun:  # stopped at the announced count: say why, not OTF2's word
            error = TraceError(
                f"events past the {report.events_defined} announced: the event file "
                "is cut, and OTF2 decoded a buffer the file did not fill"
            )
        broke = ReadFailure(cerr.take(), error, scanner.failure, has_data)
    finally:
        _otf2.Reader_CloseEvtReader(handle, evt_reader)
    if broke is None and scanner.failure is not None:
        broke = ReadFailure([], None, scanner.failure)
    settle_location(report, whole_chunk, broke)


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
