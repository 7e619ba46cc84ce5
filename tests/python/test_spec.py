"""The contracts between perfvar's C library and its Python package, all made from one
table (src/spec/contracts.py): the C side is built with pv_spec.h, whose _Static_asserts
pin the C structs to the table, and perfvar/_spec.py is the Python side. Checked here:

- _spec.py is what the generator writes now (also ctest spec.python_in_sync);
- each struct, as ctypes lays it out from the table, has the size and field offsets the
  C compiler gave (asked of libperfvar and libperfvar_read), and the numpy rows of
  perfvar.read.samples are the table's;
- the timer names and units, MPI group names and perfvar-markers' line format the built
  programs use are the table's, and so are the group lists in the docs;
- every key the table lists for DIR/perfvar/rank-N.json is in a file the library wrote
  (ctest spec.rank_json_keys runs ``test_real_rank_json_has_the_spec_s_keys`` over a
  trace an MPI test made; PV_SPEC_TRACES names its directories), with its JSON type,
  and no key the table lacks.

Skipped where a library or program is not built.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import real_rank_jsons
from perfvar import _spec
from perfvar.calibration import kernels
from perfvar.installation import find_tool
from perfvar.read import native as reader_native
from perfvar.read import samples

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "tools"))
import json_keys  # noqa: E402


def _module(path: Path, name: str):
    """The Python file at path, imported as `name`."""
    loader = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(loader)
    sys.modules[name] = module  # dataclasses look their module up there
    loader.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- the generated file


def test_spec_py_is_what_the_generator_writes():
    gen = _module(ROOT / "src" / "spec" / "gen_spec.py", "gen_spec")
    wanted = gen.python_module(gen.load_spec())
    assert (
        ROOT / "postproc" / "perfvar" / "_spec.py"
    ).read_text() == wanted, (
        "run python3 src/spec/gen_spec.py --python postproc/perfvar/_spec.py"
    )


# ---------------------------------------------------------------- struct layouts

_CTYPES = {
    "char": ctypes.c_char,
    "int": ctypes.c_int,
    "double": ctypes.c_double,
    "int32_t": ctypes.c_int32,
    "int64_t": ctypes.c_int64,
    "uint64_t": ctypes.c_uint64,
}


def _from_table(name: str) -> type:
    """A ctypes structure made from the table's fields for C struct `name`."""
    packed, fields = _spec.STRUCTS[name]
    members = []
    for field, ctype in fields:
        base, _, dim = ctype.partition("[")
        t = _CTYPES[base]
        members.append((field, t * int(dim[:-1]) if dim else t))
    attrs: dict[str, Any] = {"_fields_": members}
    if packed:
        attrs["_pack_"] = 1
    return type(name, (ctypes.Structure,), attrs)


def _layout_fn(name: str):
    """The library function that tells how the C compiler laid `name` out."""
    if name == "perfvar_clock_info":
        try:
            return kernels.Kernels().lib.perfvar_clock_info_layout
        except kernels.KernelError:
            pytest.skip("libperfvar not built (set PERFVAR_LIB)")
    lib = reader_native.library()
    if lib is None:
        pytest.skip("libperfvar_read not built")
    return lib.perfvar_read_layout


def _c_layout(fn, name: str, fields) -> tuple[int, int, list[int]]:
    """(size, number of fields, offsets) as compiled."""
    fn.argtypes, fn.restype = [ctypes.c_char_p], ctypes.c_long

    def ask(what: str) -> int:
        return int(fn(what.encode()))

    offsets = [ask(f"{name}.{f}") for f, _ in fields]
    return ask(name), ask(f"{name}.#"), offsets


# The classes and rows the package reads the libraries with, by C struct.
IN_USE = {
    "perfvar_clock_info": kernels._ClockInfo,
    "perfvar_read_result": reader_native._Result,
}


@pytest.mark.parametrize("name", list(_spec.STRUCTS))
def test_struct_is_laid_out_by_ctypes_as_by_the_c_compiler(name):
    fields = _spec.STRUCTS[name][1]
    made = _from_table(name)
    fn = _layout_fn(name)
    size, nfields, offsets = _c_layout(fn, name, fields)
    assert ctypes.sizeof(made) == size, f"{name}: size"
    assert nfields == len(fields), f"{name}: number of fields"
    assert [getattr(made, f).offset for f, _ in fields] == offsets, f"{name}: offsets"
    used = IN_USE.get(name)
    if used is not None:  # what the package reads with, not only the table's copy
        assert ctypes.sizeof(used) == size, f"{name}: size in use"
        assert [
            getattr(used, f).offset for f, _ in fields
        ] == offsets, f"{name}: in use"
    assert (
        int(fn(f"{name}.no_such_field".encode())) == -1
    )  # the library's unknown field


def test_the_ctypes_classes_are_the_table_s():
    for cls, name in ((_spec.ClockInfo, "perfvar_clock_info"),):
        assert cls is kernels._ClockInfo
        assert ctypes.sizeof(cls) == ctypes.sizeof(_from_table(name))
    assert reader_native._Result is _spec.ReadResult
    made = _from_table("perfvar_read_result")
    assert ctypes.sizeof(_spec.ReadResult) == ctypes.sizeof(made)
    assert [f for f, _ in _spec.ReadResult._fields_] == [f for f, _ in made._fields_]


@pytest.mark.parametrize(
    "name, dtype",
    [
        ("perfvar_read_sample", samples.SAMPLE_DTYPE),
        ("perfvar_read_probe", samples.PROBE_DTYPE),
        ("perfvar_read_metric", samples.METRIC_DTYPE),
    ],
)
def test_numpy_rows_are_the_table_s(name, dtype):
    made = _from_table(name)
    fields = [f for f, _ in _spec.STRUCTS[name][1]]
    assert list(dtype.names) == fields
    assert dtype.itemsize == ctypes.sizeof(made)
    for f in fields:
        assert dtype.fields[f][1] == getattr(made, f).offset, f
        assert dtype.fields[f][0].itemsize == getattr(made, f).size, f


# ---------------------------------------------------------------- names


def _libperfvar():
    try:
        return kernels.Kernels().lib
    except kernels.KernelError:
        pytest.skip("libperfvar not built (set PERFVAR_LIB)")


def test_timer_names_and_units_are_the_library_s():
    lib = _libperfvar()
    for fn in (lib.perfvar_timer_name, lib.perfvar_timer_unit):
        fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_char_p
    got = {}
    while (name := lib.perfvar_timer_name(len(got))) is not None:
        got[name.decode()] = lib.perfvar_timer_unit(len(got)).decode()
    assert tuple(got) == _spec.TIMERS
    assert got == _spec.TIMER_UNITS


def test_mpi_groups_are_the_library_s_the_generator_s_and_the_docs():
    lib = _libperfvar()
    n = len(_spec.MPI_GROUPS)
    names = (ctypes.c_char_p * (n + 1)).in_dll(lib, "pv_group_names")
    assert tuple(g.decode() for g in names[:n]) == _spec.MPI_GROUPS
    assert names[n] is None
    mpi_groups = _module(ROOT / "src" / "wrapgen" / "mpi_groups.py", "mpi_groups")
    assert mpi_groups.GROUPS == _spec.MPI_GROUPS
    # The settings table's PERFVAR_BOUNDARIES row lists the groups in order (the
    # README's table keeps only the main settings); docs/tracing.md's prose names
    # each; docs/trace-format.md's example shows the default ones.
    for doc in ("docs/tracing.md",):
        row = next(
            line
            for line in (ROOT / doc).read_text().splitlines()
            if line.startswith("| `PERFVAR_BOUNDARIES`")
        )
        listed = [g for g in re.findall(r"`(\w+)`", row.split("|")[2]) if g != "all"]
        assert tuple(listed) == _spec.MPI_GROUPS, doc
    text = (ROOT / "docs" / "tracing.md").read_text()
    prose = text[text.index("Functions are grouped:") :].split("\n\n")[0]
    assert tuple(re.findall(r"`([a-z0-9]+)`", prose)) == _spec.MPI_GROUPS
    example = re.search(
        r'"boundaries": (\[.*?\])', (ROOT / "docs/trace-format.md").read_text()
    )
    assert tuple(json.loads(example.group(1))) == _spec.MPI_GROUPS_DEFAULT


def test_perfvar_markers_takes_the_lines_the_table_gives():
    tool = find_tool("perfvar-markers")
    if tool is None:
        pytest.skip("perfvar-markers not built")
    usage = subprocess.run([tool, "--help"], capture_output=True, text=True).stdout
    assert f"(default {_spec.MARKER_GROUP})" in usage
    assert "<TAB>".join(_spec.MARKER_FIELDS) in usage
    assert "|".join(_spec.MARKER_SEVERITIES) in usage
    sep = _spec.MARKER_SCOPE_ID_SEPARATOR
    for scope, takes_id in _spec.MARKER_SCOPES.items():
        assert (f"{scope}{sep}<id>" if takes_id else scope) in usage
    assert f"or {_spec.MARKER_WHOLE_RUN} (its start" in usage
    assert _spec.MARKER_SEPARATOR == "\t"  # what "<TAB>" and the docs say


# ---------------------------------------------------------------- rank-N.json


def rank_json_problems(doc: dict) -> tuple[list[str], set[str]]:
    """What in a rank-N.json differs from the spec, and the paths that held objects."""
    return json_keys.problems(doc, _spec.RANK_JSON)


_SAMPLE = {
    "int": 1,
    "number": 1.5,
    "string": "s",
    "bool": True,
    "array": [],
    "object": {},
}


def _spec_doc(cycles: bool) -> dict:
    """A rank-N.json with every key of the spec (cycles available or not)."""

    def fill(section: str, params: dict, available: Any = None) -> dict:
        obj = {}
        for key, jtype, when in _spec.RANK_JSON[section]["keys"]:
            if when is None or available == when[1]:
                obj[key.format(**params)] = _SAMPLE[jtype.split("|")[0]]
        return obj

    doc = fill("top", {})
    doc["clock"], doc["clock_caps"] = fill("clock", {}), fill("clock_caps", {})
    doc["topology"] = fill("topology", {})
    doc["topology"]["cpus"] = [fill("topology_cpu", {})]
    doc["clock_offset"], doc["events"] = fill("clock_offset", {}), fill("events", {})
    doc["mpi"], doc["metrics"] = fill("mpi", {}), fill("metrics", {})
    doc["threads"] = [fill("thread", {})]
    doc["probe"] = fill("probe", {})
    doc["probe"]["threads"] = [fill("probe_thread", {})]
    doc["neighbours"] = fill("neighbours", {})
    doc["neighbours"]["cpus"] = [fill("neighbour_cpu", {})]
    doc["neighbours"]["tasks"] = [fill("neighbour_task", {})]
    doc["calibration"] = cal = fill("calibration", {})
    cal["states"] = [fill("state", {"unit": "ns"})]
    cal["cycles"] = fill("cycles", {}, available=cycles)
    cal["cycles"]["available"] = cycles
    if cycles:
        cal["cycles"]["state"] = fill("state", {"unit": "cycles"})
    return doc


@pytest.mark.parametrize("cycles", [True, False])
def test_the_rank_json_check_passes_a_file_with_every_key(cycles):
    problems, seen = rank_json_problems(_spec_doc(cycles))
    assert problems == []
    assert ("calibration.cycles.state" in seen) is cycles


def test_the_rank_json_check_finds_a_missing_key_a_wrong_type_and_an_unknown_key():
    doc = _spec_doc(cycles=True)
    del doc["calibration"]["states"][0]["t_min_ns"]
    doc["clock"]["hz"] = "fast"
    doc["threads"][0]["spare"] = 0
    del doc["calibration"]["cycles"]["counter"]
    doc["probe"] = None  # allowed: probes off
    problems, _ = rank_json_problems(doc)
    assert problems == [
        "clock.hz: 'fast' is not number",
        "calibration.states[]: no t_min_ns",
        "calibration.cycles: no counter",
        "threads[]: spare is not in the spec",
    ]


@pytest.mark.skipif(
    not os.environ.get("PV_SPEC_TRACES"),
    reason="PV_SPEC_TRACES names no trace (ctest spec.rank_json_keys sets it)",
)
def test_real_rank_json_has_the_spec_s_keys():
    files = real_rank_jsons()
    assert files, f"no rank-N.json under {os.environ['PV_SPEC_TRACES']}"
    seen: set[str] = set()
    for path in files:
        with open(path, encoding="utf-8") as f:
            problems, where = rank_json_problems(json.load(f))
        assert problems == [], f"{path}: {problems}"
        seen |= where
    # The trace is made with probes on: every object but the cycle counter's pass
    # (which needs a readable PMU), the counters (which need PAPI) and the tasks beside
    # the ranks (none may have run on their CPUs) was seen.
    wanted = {p for s in _spec.RANK_JSON.values() for p in s["paths"]}
    optional = {"calibration.cycles.state", "metrics", "neighbours.tasks[]"}
    assert wanted - optional <= seen, sorted(wanted - seen)
    # rank 0's run.json and the ranks' calibration-rank-N.json beside them.
    runs = {os.path.join(os.path.dirname(f), "run.json") for f in files}
    cals = [f.replace("/rank-", "/calibration-rank-") for f in files]
    for path, table in [(p, _spec.RUN_JSON) for p in sorted(runs)] + [
        (p, _spec.CALIBRATION_JSON) for p in cals if os.path.exists(p)
    ]:
        with open(path, encoding="utf-8") as f:
            problems, _ = json_keys.problems(json.load(f), table)
        assert problems == [], f"{path}: {problems}"
