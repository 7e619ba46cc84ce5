"""The structs Python reads from perfvar's C libraries, through ctypes or as numpy rows, are
laid out as the C compiler laid them out: each one's size, its number of fields and every
field's offset, asked of the libraries themselves (perfvar_clock_info_layout in libperfvar,
perfvar_read_layout in libperfvar_read). A field changed on one side only fails here; the
timer names Python knows are the library's. Skipped where a library is not built."""

import ctypes

import numpy as np
import pytest
from perfvar.calibration import kernels
from perfvar.read import native as reader_native
from perfvar.read import samples


def _kernels_lib():
    try:
        return kernels.Kernels().lib
    except kernels.KernelError:
        pytest.skip("libperfvar not built (set PERFVAR_LIB)")


def _read_lib():
    lib = reader_native.library()
    if lib is None:
        pytest.skip("libperfvar_read not built")
    return lib


def _ask(fn, name: str) -> int:
    fn.argtypes, fn.restype = [ctypes.c_char_p], ctypes.c_long
    return int(fn(name.encode()))


def _ctypes_layout(struct) -> list[tuple[str, int]]:
    return [(f, getattr(struct, f).offset) for f, _ in struct._fields_]


def _dtype_layout(dtype: np.dtype) -> list[tuple[str, int]]:
    return [(f, dtype.fields[f][1]) for f in dtype.names]


def _check(fn, c_name: str, size: int, fields: list[tuple[str, int]]) -> None:
    assert _ask(fn, c_name) == size, f"{c_name}: size"
    assert _ask(fn, c_name + ".#") == len(fields), f"{c_name}: number of fields"
    for field, offset in fields:
        assert _ask(fn, f"{c_name}.{field}") == offset, f"{c_name}.{field}: offset"


def test_clock_info_is_laid_out_as_in_c():
    fn = _kernels_lib().perfvar_clock_info_layout
    info = kernels._ClockInfo
    _check(fn, "perfvar_clock_info", ctypes.sizeof(info), _ctypes_layout(info))
    assert _ask(fn, "perfvar_clock_info.no_such_field") == -1


def test_reader_result_and_rows_are_laid_out_as_in_c():
    fn = _read_lib().perfvar_read_layout
    result = reader_native._Result
    _check(fn, "perfvar_read_result", ctypes.sizeof(result), _ctypes_layout(result))
    for c_name, dtype in (
        ("perfvar_read_sample", samples.SAMPLE_DTYPE),
        ("perfvar_read_probe", samples.PROBE_DTYPE),
        ("perfvar_read_metric", samples.METRIC_DTYPE),
    ):
        _check(fn, c_name, dtype.itemsize, _dtype_layout(dtype))
    assert _ask(fn, "perfvar_read_sample.no_such_field") == -1


def test_timer_names_are_the_library_s():
    lib = _kernels_lib()
    lib.perfvar_timer_name.argtypes, lib.perfvar_timer_name.restype = [ctypes.c_int], (
        ctypes.c_char_p
    )
    names = []
    while (name := lib.perfvar_timer_name(len(names))) is not None:
        names.append(name.decode())
    assert tuple(names) == kernels.TIMERS


def test_mpi_group_names_are_the_library_s_and_the_docs():
    # src/pmpi/mpi_groups.py classifies the wrapped functions into groups that
    # src/config/config.c parses by name (PERFVAR_BOUNDARIES): one order, one spelling.
    import re
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "src" / "pmpi"))
    from mpi_groups import GROUPS

    lib = _kernels_lib()
    names = (ctypes.c_char_p * (len(GROUPS) + 1)).in_dll(lib, "pv_group_names")
    assert [n.decode() for n in names[: len(GROUPS)]] == list(GROUPS)
    assert names[len(GROUPS)] is None  # no group the Python side lacks
    for doc in ("README.md", "docs/tracing.md"):
        row = next(
            line
            for line in (root / doc).read_text().splitlines()
            if line.startswith("| `PERFVAR_BOUNDARIES`")
        )
        listed = [g for g in re.findall(r"`(\w+)`", row.split("|")[2]) if g != "all"]
        assert listed == list(GROUPS), doc
