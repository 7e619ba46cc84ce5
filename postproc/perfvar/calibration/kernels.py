"""The C measurement kernels of libperfvar (include/perfvar_calib.h), through ctypes.

The library is found, in order: ``$PERFVAR_LIB``; the installation this package is part
of (``perfvar/_install_paths.py``, written by ``cmake --install``); ``libperfvar.so``
next to a ``perfvar-run`` on the PATH (``../lib``); the linker's search path; the source
tree's ``build/`` (a developer checkout). Not thread-safe (the C side shares a flush
buffer).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
from typing import Optional

import numpy as np

from perfvar import _spec
from perfvar.errors import TraceError
from perfvar.installation import installed_path

# The timers by enum value and perfvar_clock_info, as libperfvar is built with them
# (both from src/spec/contracts.py).
TIMERS = _spec.TIMERS
_ClockInfo = _spec.ClockInfo


class KernelError(TraceError):
    """libperfvar could not be loaded or a kernel failed (one clear message)."""


def _candidates() -> list[str]:
    found = []
    if os.environ.get("PERFVAR_LIB"):
        found.append(os.environ["PERFVAR_LIB"])
    installed = installed_path("LIBPERFVAR")
    if installed:
        found.append(installed)
    launcher = shutil.which("perfvar-run")
    if launcher:
        found.append(
            os.path.join(os.path.dirname(launcher), "..", "lib", "libperfvar.so")
        )
    name = ctypes.util.find_library("perfvar")
    if name:
        found.append(name)
    here = os.path.dirname(os.path.abspath(__file__))
    found.append(os.path.join(here, "..", "..", "build", "libperfvar.so"))
    return found


class Kernels:
    """Loaded libperfvar: timer availability, samples (ns; cycles for the timers whose
    _spec.TIMER_UNITS says so), cache sizes (bytes), the clock in use."""

    def __init__(self, path: Optional[str] = None) -> None:
        tried = [path] if path else _candidates()
        self.lib = None
        for cand in tried:
            try:
                self.lib = ctypes.CDLL(cand)
                self.path = cand
                break
            except OSError:
                continue
        if self.lib is None:
            raise KernelError(
                "cannot load libperfvar.so (tried: "
                + ", ".join(tried)
                + "); set PERFVAR_LIB to its path"
            )
        lib = self.lib
        lib.perfvar_timer_available.argtypes = [
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_int,
        ]
        lib.perfvar_calib_sample.argtypes = [
            ctypes.c_int,
            ctypes.c_uint64,
            ctypes.c_uint64,
            ctypes.c_int,
            ctypes.POINTER(ctypes.c_double),
        ]
        # A library older than the kernel: every step unknown (0), judged on CV alone.
        self._resolution = getattr(lib, "perfvar_calib_resolution", None)
        if self._resolution is not None:
            self._resolution.argtypes = [
                ctypes.c_int,
                ctypes.c_int,
                ctypes.POINTER(ctypes.c_double),
            ]
        lib.perfvar_cache_size.restype = ctypes.c_uint64
        lib.perfvar_strerror.restype = ctypes.c_char_p
        # Older libraries have no cycles timer and no unit query: all timers are ns.
        self._unit = getattr(lib, "perfvar_timer_unit", None)
        if self._unit is not None:
            self._unit.restype = ctypes.c_char_p

    def available(self, timer: str) -> tuple[bool, str]:
        """(True, "") or (False, why) for a timer named in TIMERS."""
        why = ctypes.create_string_buffer(256)
        rc = self.lib.perfvar_timer_available(TIMERS.index(timer), why, len(why))
        return rc == 0, why.value.decode()

    def unit(self, timer: str) -> str:
        """Unit of the timer's samples: "ns", or "cycles" for the CPU-cycle counters
        (as the library says; _spec.TIMER_UNITS has the same)."""
        if self._unit is None:
            return "ns"
        unit = self._unit(TIMERS.index(timer))
        return unit.decode() if unit else "ns"

    def clock_info(self) -> Optional[dict]:
        """The clock perfvar reads (the barrier timer's, PERFVAR_CLOCK): {name, hz,
        hz_method, hz_rel_error, serialized, has_cpu_id, note}; None from a library
        without perfvar_clock_info_get. The first call measures the frequency."""
        get = getattr(self.lib, "perfvar_clock_info_get", None)
        if get is None:
            return None
        info = _ClockInfo()
        get.argtypes = [ctypes.POINTER(_ClockInfo)]
        if get(ctypes.byref(info)) != 0:
            return None
        return {
            "name": info.name.decode(),
            "hz": info.hz,
            "hz_method": info.hz_method.decode(),
            "hz_rel_error": info.hz_rel_error,
            "serialized": bool(info.serialized),
            "has_cpu_id": bool(info.has_cpu_id),
            "note": info.note.decode(),
        }

    def sample(self, timer: str, adds: int, flush_bytes: int, n: int) -> np.ndarray:
        """n samples (in ``unit(timer)``) of ``adds`` dependent ADDs; flush_bytes
        flushed after each."""
        out = np.empty(n, dtype=np.float64)
        rc = self.lib.perfvar_calib_sample(
            TIMERS.index(timer),
            int(adds),
            int(flush_bytes),
            n,
            out.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
        )
        if rc != 0:
            why = self.lib.perfvar_strerror(rc).decode()
            raise KernelError(f"perfvar_calib_sample({timer}): {why}")
        return out

    def resolution(self, timer: str, n: int = 1024) -> float:
        """The step ``timer`` reads in (``unit(timer)``; 0: not seen), from n samples
        around a sweep of chain lengths (perfvar_calib_resolution)."""
        if self._resolution is None:
            return 0.0
        out = ctypes.c_double(0.0)
        rc = self._resolution(TIMERS.index(timer), n, ctypes.byref(out))
        if rc != 0:
            why = self.lib.perfvar_strerror(rc).decode()
            raise KernelError(f"perfvar_calib_resolution({timer}): {why}")
        return float(out.value)

    def cache_size(self, level: int) -> int:
        """Bytes of the level-``level`` data cache of CPU 0 (sysfs), 0 if unknown."""
        return int(self.lib.perfvar_cache_size(level))
