"""Give the C heap's free pages back to the operating system.

glibc's malloc maps an allocation above its threshold on its own and unmaps it when
freed, but the threshold rises with the largest such block freed (up to 32 MB), so
once a trace's arrays have come and gone the many smaller arrays the detectors make
per cell and class live in the heap. Freed, their pages stay resident wherever a
live block above them keeps the heap from shrinking: hundreds of MB at a thousand
ranks, still held while the next stage maps its own large arrays beside them.
malloc_trim(0) returns every wholly free page of the heap (glibc >= 2.8).

Thread-safe (malloc_trim takes the heap's locks); elsewhere than glibc it does
nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any, Optional

_libc: Optional[Any] = None
_looked = False


def _malloc_trim() -> Optional[Any]:
    """glibc's malloc_trim, None where the C library has none."""
    global _libc, _looked
    if not _looked:
        _looked = True
        try:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _libc.malloc_trim.argtypes = [ctypes.c_size_t]
            _libc.malloc_trim.restype = ctypes.c_int
        except (OSError, AttributeError):
            _libc = None
    return _libc.malloc_trim if _libc is not None else None


def give_back() -> bool:
    """Return the heap's free pages to the system; True when glibc's malloc_trim
    ran (whether or not it found any), False where there is none."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
