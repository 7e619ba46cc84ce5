"""The trace reader's event loop in C: libperfvar_read (src/read/read.h) through ctypes.

:func:`perfvar.read.trace.read_trace` reads the global definitions with the ``otf2``
package and hands the events to :func:`read_locations` when :func:`library` finds the
library; the C loop does what ``read.python_loop._LocationScanner`` does (same matching,
same samples, same counts; tests/python/read/test_reader_native.py compares them) about
ten times faster, and the failure rules are shared (``read.otf2.settle_location``).

``PERFVAR_READER`` chooses: unset or empty, the native loop when the library is found
and the Python one otherwise; ``native``, the native loop or an error when the library
is missing; ``python``, the Python loop.

The library is found, in order: ``libperfvar_read.so`` beside ``$PERFVAR_LIB`` (a build
tree's top or an installation's lib/); the installation this package is part of
(``perfvar/_install_paths.py``); ``../lib`` and ``..`` of a ``perfvar-run`` on the PATH
(an installation, a build tree's bin/); the linker's search path; this checkout's
``build/``. Not thread-safe (as read_trace: it redirects file descriptor 2).
"""

from __future__ import annotations

import ctypes
import functools
import os
import weakref
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from perfvar import _spec
from perfvar.errors import TraceError
from perfvar.installation import library_candidates
from perfvar.read.otf2 import (
    ReadFailure,
    TraceDefinitions,
    _CStderr,
    _otf2_detail,
    settle_location,
)
from perfvar.read.samples import (
    METRIC_DTYPE,
    METRICS_MAX,
    PROBE_DTYPE,
    SAMPLE_DTYPE,
    LocationRead,
    LocationReport,
)

ENV = "PERFVAR_READER"
CHOICES = ("native", "python")
LIBRARY = "libperfvar_read.so"

# Region kinds of src/read/read.h (>= 0: a segment index) and perfvar_read_result, as
# libperfvar_read is built with them (both from src/spec/contracts.py).
_REGION_USER = _spec.ReadRegion.USER
_REGION_PROBE = _spec.ReadRegion.PROBE
_Result = _spec.ReadResult
_ERR_IO = -9  # the I/O error status of include/perfvar.h: OTF2 failed, see otf2_status


def candidates() -> list[str]:
    """Where the library may be, in the order it is looked for (see the docstring)."""
    return library_candidates(LIBRARY, "LIBPERFVAR_READ")


@functools.cache
def _load(paths: tuple[str, ...]) -> Optional[ctypes.CDLL]:
    for path in paths:
        # Names from find_library have no directory: the loader searches for them.
        if os.sep in path and not os.path.isfile(path):
            continue
        try:
            lib = ctypes.CDLL(path)
            _declare(lib)
        except (OSError, AttributeError):
            continue  # not loadable here, or an older library without these symbols
        if lib.perfvar_read_sample_size() != SAMPLE_DTYPE.itemsize:
            continue  # built for other dtypes: never read records through it
        if lib.perfvar_read_probe_size() != PROBE_DTYPE.itemsize:
            continue
        if lib.perfvar_read_metric_size() != METRIC_DTYPE.itemsize:
            continue
        return lib
    return None


def _declare(lib: ctypes.CDLL) -> None:
    u64p = ctypes.POINTER(ctypes.c_uint64)
    intp = ctypes.POINTER(ctypes.c_int)
    lib.perfvar_read_open.argtypes = [
        ctypes.c_char_p,
        u64p,
        ctypes.c_size_t,
        ctypes.POINTER(ctypes.c_uint32),
        ctypes.POINTER(ctypes.c_int32),
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_uint32,
        ctypes.c_double,
        ctypes.POINTER(ctypes.c_void_p),
        intp,
        intp,
        intp,
    ]
    lib.perfvar_read_open.restype = ctypes.c_int
    lib.perfvar_read_local_defs.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
    lib.perfvar_read_local_defs.restype = ctypes.c_int
    lib.perfvar_read_events.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint64,
        ctypes.c_int32,
        ctypes.c_int32,
        ctypes.c_uint64,
        ctypes.POINTER(_Result),
    ]
    lib.perfvar_read_events.restype = ctypes.c_int
    vpp = ctypes.POINTER(ctypes.c_void_p)
    i64p = ctypes.POINTER(ctypes.c_int64)
    lib.perfvar_read_drop.argtypes = [ctypes.c_void_p]
    lib.perfvar_read_drop.restype = ctypes.c_int
    lib.perfvar_read_take.argtypes = [ctypes.c_void_p, vpp, i64p, vpp, i64p]
    lib.perfvar_read_take.restype = ctypes.c_int
    lib.perfvar_read_free.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_size_t]
    lib.perfvar_read_free.restype = None
    lib.perfvar_read_close.argtypes = [ctypes.c_void_p]
    lib.perfvar_read_close.restype = ctypes.c_int
    lib.perfvar_read_sample_size.restype = ctypes.c_size_t
    lib.perfvar_read_probe_size.restype = ctypes.c_size_t
    lib.perfvar_read_metric_size.restype = ctypes.c_size_t
    lib.perfvar_read_set_metrics.argtypes = [
        ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_uint32),
        ctypes.POINTER(ctypes.c_int32),
        ctypes.c_size_t,
    ]
    lib.perfvar_read_set_metrics.restype = ctypes.c_int
    lib.perfvar_read_take_metrics.argtypes = [ctypes.c_void_p, vpp, i64p]
    lib.perfvar_read_take_metrics.restype = ctypes.c_int


def choice() -> str:
    """``PERFVAR_READER``: "" (native if found), "native" or "python"; a bad value
    raises TraceError naming the variable and what it accepts."""
    value = os.environ.get(ENV, "").strip()
    if value and value not in CHOICES:
        raise TraceError(
            f"{ENV}={value!r} is not valid: use native or python (or leave it unset: "
            f"native when {LIBRARY} is found)"
        )
    return value


def library() -> Optional[ctypes.CDLL]:
    """The loaded library, or None when the events are to be read in Python
    (``PERFVAR_READER=python``, or unset and the library not found). Raises
    TraceError when ``PERFVAR_READER`` is bad, or ``native`` and nothing loads."""
    wanted = choice()
    if wanted == "python":
        return None
    paths = tuple(candidates())
    lib = _load(paths)
    if lib is None and wanted == "native":
        raise TraceError(
            f"{ENV}=native but {LIBRARY} cannot be loaded (tried: {', '.join(paths)}); "
            "set PERFVAR_LIB to libperfvar.so of a build or installation that has it"
        )
    return lib


def _otf2_error(code: int) -> BaseException:
    """OTF2's error as the ``_otf2`` binding raises it, so its text is the Python
    reader's."""
    import _otf2

    return _otf2.Error(_otf2.ErrorCode(code))


def _adopt(
    lib: ctypes.CDLL, address: Optional[int], n: int, dtype: np.dtype
) -> np.ndarray:
    """The C array at ``address`` (n records of dtype, handed over by
    perfvar_read_take) as a numpy array without a copy; the array frees it when it
    is no longer referenced."""
    if not address:
        return np.empty(0, dtype=dtype)
    buf = (ctypes.c_char * max(n * dtype.itemsize, 1)).from_address(address)
    weakref.finalize(buf, lib.perfvar_read_free, address, n, dtype.itemsize)
    return np.frombuffer(buf, dtype=dtype, count=n)


def _region_table(defs: TraceDefinitions) -> tuple[Any, Any, int]:
    kinds = dict(defs.region_segment)
    kinds.update({ref: _REGION_USER for ref in defs.user_regions})
    kinds.update({ref: _REGION_PROBE for ref in defs.probe_regions})
    n = len(kinds)
    refs = (ctypes.c_uint32 * max(n, 1))(*kinds.keys())
    values = (ctypes.c_int32 * max(n, 1))(*kinds.values())
    return refs, values, n


@dataclass
class NativeRead:
    """What :func:`read_locations` read: per chosen location its outcome (None: to be
    read by the Python loop), and the intact locations' samples and probes in one
    array each, in the order of the chosen locations (each outcome's arrays are
    slices of these)."""

    locations: list[Optional[LocationRead]]
    samples: np.ndarray
    probes: np.ndarray


def read_locations(
    lib: ctypes.CDLL,
    defs: TraceDefinitions,
    chosen: list[tuple[int, str, int, int, int]],
    whole: list[bool],
    cerr: _CStderr,
) -> NativeRead:
    """Read the events of the ``chosen`` locations (``(id, name, events announced,
    rank, thread)``, ``whole[i]``: location i's event file holds a whole chunk) as
    ``read.python_loop._read_events`` does: per location, its report and, when intact,
    its samples and probes; None for a location past whose cut OTF2 3.0 decoded more
    events than the definitions announce (the caller reads it with the Python loop,
    whose OTF2 stops at the cut). Raises TraceError when the archive or its event
    files cannot be opened."""
    if not chosen:
        return NativeRead([], np.empty(0, SAMPLE_DTYPE), np.empty(0, PROBE_DTYPE))
    ids = (ctypes.c_uint64 * len(chosen))(*(loc[0] for loc in chosen))
    refs, kinds, nregions = _region_table(defs)
    cpu_type, cpu_ref = 0, 0  # OTF2_TYPE_NONE: no "cpu" attribute
    if defs.cpu_attr is not None:
        cpu_ref, cpu_type = int(defs.cpu_attr[0]), int(defs.cpu_attr[1].value)
    handle = ctypes.c_void_p()
    status, stage, def_files = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    rc = lib.perfvar_read_open(
        os.fsencode(defs.anchor),
        ids,
        len(chosen),
        refs,
        kinds,
        nregions,
        cpu_type,
        cpu_ref,
        defs.ns_per_tick,
        ctypes.byref(handle),
        ctypes.byref(status),
        ctypes.byref(stage),
        ctypes.byref(def_files),
    )
    if rc != 0:
        exc = _otf2_error(status.value) if rc == _ERR_IO else MemoryError()
        detail = _otf2_detail(cerr.take(), exc)
        if stage.value == 2:
            raise TraceError(f"cannot open event files of {defs.anchor}: {detail}")
        raise TraceError(
            f"cannot read OTF2 archive {defs.anchor}: {detail} (truncated or corrupt?)"
        )
    out: list[Optional[LocationRead]] = []
    # index, sample, probe and metric rows
    kept: list[tuple[int, int, int, int, int, int, int]] = []
    result = _Result()
    try:
        _set_metrics(lib, handle, defs)
        for (loc_id, name, events, rank, thread), whole_chunk in zip(chosen, whole):
            report = LocationReport(rank, loc_id, name, events, thread)
            out.append((report, None, None))
            lib.perfvar_read_local_defs(handle, loc_id)
            cerr.take()  # a missing local .def file is harmless; drop its messages
            rc = lib.perfvar_read_events(
                handle, loc_id, rank, thread, events, ctypes.byref(result)
            )
            if rc == 0 and _settle(report, result, whole_chunk, cerr, out):
                kept.append(
                    (
                        len(out) - 1,
                        result.first_sample,
                        result.nsamples,
                        result.first_probe,
                        result.nprobes,
                        result.first_metric,
                        result.nmetrics,
                    )
                )
            else:
                lib.perfvar_read_drop(handle)
                if rc != 0:  # no memory for OTF2's callback table
                    settle_location(
                        report, whole_chunk, ReadFailure([], None, MemoryError())
                    )
        samples, probes, metrics = _take(lib, handle)
    finally:
        lib.perfvar_read_close(handle)
        cerr.take()
    for i, s0, ns, p0, np_, m0, nm in kept:
        report = out[i][0]
        report.segments, report.probes = ns, np_
        if defs.metric_columns:
            report.metric_rows = metrics[m0 : m0 + nm]
        out[i] = (report, samples[s0 : s0 + ns], probes[p0 : p0 + np_])
    return NativeRead(out, samples, probes)


def _settle(
    report: LocationReport,
    result: _Result,
    whole_chunk: bool,
    cerr: _CStderr,
    out: list[Optional[LocationRead]],
) -> bool:
    """Judge one location's read (as the Python loop does, through
    ``settle_location``); True when its rows are kept. An overrun sets its outcome to
    None: the Python loop reads it."""
    if result.overrun:
        out[-1] = None  # OTF2 3.0 read past the cut: the Python loop reads it
        cerr.take()
        return False
    if not result.evt_reader:
        report.error = _otf2_detail(cerr.take(), None)
        return False
    report.user_regions = int(result.user_regions)
    report.unclosed = int(result.unclosed)
    report.unmatched_leaves = int(result.unmatched_leaves)
    failure = MemoryError() if result.out_of_memory else None
    broke = None
    if result.otf2_status != 0:
        has_data = bool(result.nsamples or result.open_at_end)
        exc = _otf2_error(result.otf2_status)
        broke = ReadFailure(cerr.take(), exc, failure, has_data)
    else:
        report.events_read = int(result.events_read)
        if failure is not None:
            broke = ReadFailure([], None, failure)
    settle_location(report, whole_chunk, broke)
    if not report.ok:
        return False
    report.unclosed += int(result.open_at_end)
    return True


def _set_metrics(
    lib: ctypes.CDLL, handle: ctypes.c_void_p, defs: TraceDefinitions
) -> None:
    """Tell the C loop which metric classes give rows and their members' columns
    (nothing when the trace has no counters: it then skips Metric events unread)."""
    if not defs.metric_columns:
        return
    n = len(defs.metric_columns)
    refs = (ctypes.c_uint32 * n)(*defs.metric_columns.keys())
    flat = []
    for columns in defs.metric_columns.values():
        flat += columns + [-1] * (METRICS_MAX - len(columns))
    cols = (ctypes.c_int32 * len(flat))(*flat)
    if lib.perfvar_read_set_metrics(handle, refs, cols, n):
        raise MemoryError("perfvar_read_set_metrics")


def _take(
    lib: ctypes.CDLL, handle: ctypes.c_void_p
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every row the handle read and kept, handed over as numpy arrays."""
    sp, pp = ctypes.c_void_p(), ctypes.c_void_p()
    ns, np_ = ctypes.c_int64(), ctypes.c_int64()
    if lib.perfvar_read_take(
        handle, ctypes.byref(sp), ctypes.byref(ns), ctypes.byref(pp), ctypes.byref(np_)
    ):
        raise TraceError("perfvar_read_take refused its arguments")
    samples = _adopt(lib, sp.value, ns.value, SAMPLE_DTYPE)
    probes = _adopt(lib, pp.value, np_.value, PROBE_DTYPE)
    mp, nm = ctypes.c_void_p(), ctypes.c_int64()
    if lib.perfvar_read_take_metrics(handle, ctypes.byref(mp), ctypes.byref(nm)):
        raise TraceError("perfvar_read_take_metrics refused its arguments")
    return samples, probes, _adopt(lib, mp.value, nm.value, METRIC_DTYPE)
