"""perfvar.heap: the heap's free pages given back to the system."""

import ctypes
import platform

import pytest

from perfvar import heap


def _rss_kb() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
    reason="malloc_trim is glibc's",
)
def test_freed_blocks_under_a_live_one_leave_the_resident_set():
    # One large block freed raises malloc's mmap threshold above 1 MB, so the
    # 1 MB blocks below live in the heap; the last one, kept, pins its top.
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    libc.free(libc.malloc(16 << 20))
    blocks = [libc.malloc(1 << 20) for _ in range(64)]
    for b in blocks:
        ctypes.memset(b, 1, 1 << 20)  # resident
    for b in blocks[:-1]:
        libc.free(b)
    before = _rss_kb()
    assert heap.give_back()
    after = _rss_kb()
    libc.free(blocks[-1])
    assert before - after > 32 * 1024  # most of the 63 MB freed, in kB
