"""Segment key parsing and addr2line symbolization."""

import os
import shutil
import subprocess

import pytest

from conftest import compiled_c
from perfvar._spec import TraceName
from perfvar.read.segments import (
    CallSite,
    Frame,
    parse_segment_key,
    segment_families,
    segment_key,
)
from perfvar.read.symbolize import FrameSymbol, Symbol, short_function, symbolize

# The tests that compile a program and symbolize it need these.
NEEDS_TOOLCHAIN = pytest.mark.skipif(
    not (shutil.which("gcc") and shutil.which("addr2line") and shutil.which("nm")),
    reason="needs gcc, nm and addr2line",
)

KEY = segment_key(
    "MPI_Waitall@/opt/app/bin/stencil+0x1a2b",
    "MPI_Allreduce@/usr/lib/x86_64-linux-gnu/libmpi.so.40+0xff00",
)


def test_parse_segment_key():
    k = parse_segment_key(KEY)
    assert k.start == CallSite("MPI_Waitall", "/opt/app/bin/stencil", 0x1A2B)
    assert k.end == CallSite(
        "MPI_Allreduce", "/usr/lib/x86_64-linux-gnu/libmpi.so.40", 0xFF00
    )
    assert k.start.fallback_site() == "stencil+0x1a2b"


def test_parse_odd_module_paths_and_garbage():
    k = parse_segment_key(segment_key("MPI_Send@/a+b@c/x+0x10", "MPI_Recv@/y;z+0x20"))
    assert k.start == CallSite("MPI_Send", "/a+b@c/x", 0x10)
    assert k.end == CallSite("MPI_Recv", "/y;z", 0x20)
    bad = parse_segment_key(TraceName.SEGMENT_PREFIX + "whatever")
    assert bad.start is None and bad.end is None and bad.key.endswith("whatever")


def test_missing_module_falls_back_to_module_offset():
    site = CallSite("MPI_Waitall", "/nonexistent/stencil", 0x1A2B)
    sym = symbolize([site])[site]
    assert sym.file is None and sym.label == "stencil+0x1a2b MPI_Waitall"


@NEEDS_TOOLCHAIN
def test_real_module_resolves_to_file_and_line(tmp_path):
    exe = compiled_c(
        tmp_path,
        "int target(int x) {\n"
        "  return x * 3;\n"
        "}\n"
        "int main(void) { return target(1); }\n",
        "-g",
    )
    nm = subprocess.run(["nm", str(exe)], capture_output=True, text=True, check=True)
    addr = next(
        int(line.split()[0], 16)
        for line in nm.stdout.splitlines()
        if line.endswith(" target")
    )
    # A "return address" one past the first instruction of target(): addr2line is
    # asked for offset - 1, i.e. target's first byte, on line 1 of app.c.
    site = CallSite("MPI_Barrier", str(exe), addr + 1)
    missing = CallSite("MPI_Send", str(exe), 0x7FFFFFF0)
    syms = symbolize([site, missing])
    assert syms[site].function == "target"
    assert syms[site].label == "app.c:1 MPI_Barrier"
    assert os.path.basename(syms[site].file) == "app.c"
    assert syms[missing].label == "app+0x7ffffff0 MPI_Send"
    assert symbolize([site], enabled=False)[site].label == "app+0x%x MPI_Barrier" % (
        addr + 1
    )


# ---- call paths (PERFVAR_CALLPATH > 1) and families ----

APP = "/opt/app/clover_leaf"


def _end(fn: str, *offsets: int, module: str = APP) -> str:
    first, *callers = offsets
    return f"{fn}@{module}+0x{first:x}" + "".join(
        f"<{module}+0x{off:x}" for off in callers
    )


def _key(a: str, b: str) -> str:
    return segment_key(a, b)


def test_parse_call_path_key():
    key = _key(_end("MPI_Waitall", 0x10, 0x20, 0x30), _end("MPI_Isend", 0x40, 0x50))
    k = parse_segment_key(key)
    assert k.start == CallSite(
        "MPI_Waitall", APP, 0x10, (Frame(APP, 0x20), Frame(APP, 0x30))
    )
    assert k.end.frames == (Frame(APP, 0x40), Frame(APP, 0x50))
    # A caller frame in another module, whose path holds '@' and '+'.
    other = "/lib/a+b@c/libx.so"
    k = parse_segment_key(_key(f"MPI_Send@{APP}+0x1<{other}+0x2", _end("MPI_Recv", 3)))
    assert k.start.callers == (Frame(other, 0x2),)
    # Depth 1 is unchanged, and a truncated caller frame is malformed.
    assert parse_segment_key(KEY).start.callers == ()
    cut = _key(f"MPI_Send@{APP}+0x1<", _end("MPI_Recv", 3))
    assert parse_segment_key(cut).start is None


def test_short_function_names():
    assert short_function("__clover_module_MOD_clover_exchange") == "clover_exchange"
    assert short_function("update_halo_kernel.constprop.0") == "update_halo_kernel"
    assert short_function("main") == "main"


def test_label_names_function_without_line_info_and_the_callers():
    site = CallSite("MPI_Waitall", APP, 0x10, (Frame(APP, 0x20), Frame(APP, 0x30)))
    sym = Symbol(
        site,
        "__clover_module_MOD_clover_exchange",
        None,
        None,
        (
            FrameSymbol(Frame(APP, 0x20), "__update_halo_module_MOD_update_halo"),
            FrameSymbol(Frame(APP, 0x30), None, "/src/pdv.f90", 95),
        ),
    )
    assert sym.label == "clover_exchange MPI_Waitall < update_halo < pdv.f90:95"
    assert sym.to_json()["callers"][1]["line"] == 95
    bare_site = CallSite("MPI_Send", APP, 0x10, (Frame(APP, 0x20),))
    bare = symbolize([bare_site], enabled=False)[bare_site]
    assert bare.label == "clover_leaf+0x10 MPI_Send < clover_leaf+0x20"


@NEEDS_TOOLCHAIN
def test_every_frame_symbolized_from_the_symbol_table(tmp_path):
    # No -g: names come from the symbol table only.
    exe = compiled_c(
        tmp_path,
        "int helper(int x) { return x * 3; }\n"
        "int kernel(int x) { return helper(x) + 1; }\n"
        "int main(void) { return kernel(1); }\n",
    )
    nm = subprocess.run(["nm", str(exe)], capture_output=True, text=True, check=True)
    addr = {
        line.split()[2]: int(line.split()[0], 16)
        for line in nm.stdout.splitlines()
        if line.endswith((" helper", " kernel", " main"))
    }
    site = CallSite(
        "MPI_Isend",
        str(exe),
        addr["helper"] + 1,
        (Frame(str(exe), addr["kernel"] + 1), Frame(str(exe), addr["main"] + 1)),
    )
    sym = symbolize([site])[site]
    assert sym.file is None and sym.label == "helper MPI_Isend < kernel < main"


def test_families_merge_neighbour_variants_only():
    # Rank 0 sends right, rank 1 left: different helpers (frames 1-2 differ), the
    # same exchange in the same kernel (frames 3-4 agree).
    wait = _end("MPI_Waitall", 0x100, 0x200, 0x300, 0x400)
    right = _end("MPI_Isend", 0x510, 0x610, 0x700, 0x800)
    left = _end("MPI_Isend", 0x520, 0x620, 0x700, 0x800)
    other_kernel = _end("MPI_Isend", 0x520, 0x620, 0x700, 0x900)
    keys = [
        _key(wait, right),  # rank 0
        _key(wait, left),  # rank 1
        _key(wait, other_kernel),  # rank 1: another kernel's exchange
        _key(right, wait),  # on both ranks: judged as it is
        _key(left, wait),
    ]
    ranks = [{0}, {1}, {1}, {0, 1}, {0, 1}]
    fam = segment_families(keys, ranks)
    assert fam[0] == fam[1]
    assert len({fam[0], fam[2], fam[3], fam[4]}) == 4
    # Depth 1: no caller frame agrees, nothing merges.
    flat = [_key(_end("MPI_Waitall", 0x100), _end("MPI_Isend", o)) for o in (1, 2)]
    assert segment_families(flat, [{0}, {1}]) == [0, 1]
    # Different MPI functions never merge.
    recv = _end("MPI_Irecv", 0x520, 0x620, 0x700, 0x800)
    assert segment_families([_key(wait, right), _key(wait, recv)], [{0}, {1}]) == [0, 1]


def test_label_stops_at_the_program_entry():
    """The C library's start-up frames above main are the same for every path: the
    label leaves them out (the key keeps them)."""
    libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
    site = CallSite(
        "MPI_Allreduce",
        APP,
        0x10,
        (Frame(APP, 0x20), Frame(libc, 0x30), Frame(libc, 0x40)),
    )
    callers = (
        FrameSymbol(Frame(APP, 0x20), function="main"),
        FrameSymbol(Frame(libc, 0x30), function="__libc_start_call_main"),
        FrameSymbol(Frame(libc, 0x40), function="__libc_start_main_impl"),
    )
    sym = Symbol(site, function="solve", file="a.f90", line=7, callers=callers)
    assert sym.label == "a.f90:7 MPI_Allreduce < main"
    fortran = (
        FrameSymbol(Frame(APP, 0x20), function="MAIN__"),
        FrameSymbol(Frame(APP, 0x30), function="main"),
    )
    assert Symbol(site, function="solve", callers=fortran).label == (
        "solve MPI_Allreduce < MAIN__"
    )
