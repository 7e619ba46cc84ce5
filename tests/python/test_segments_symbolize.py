"""Segment key parsing and addr2line symbolization."""

import os
import shutil
import subprocess

import pytest

from perfvar.segments import CallSite, parse_segment_key
from perfvar.symbolize import symbolize

KEY = (
    "perfvar:segment:MPI_Waitall@/opt/app/bin/stencil+0x1a2b;"
    "MPI_Allreduce@/usr/lib/x86_64-linux-gnu/libmpi.so.40+0xff00"
)


def test_parse_segment_key():
    k = parse_segment_key(KEY)
    assert k.start == CallSite("MPI_Waitall", "/opt/app/bin/stencil", 0x1A2B)
    assert k.end == CallSite(
        "MPI_Allreduce", "/usr/lib/x86_64-linux-gnu/libmpi.so.40", 0xFF00
    )
    assert k.start.fallback_site() == "stencil+0x1a2b"


def test_parse_odd_module_paths_and_garbage():
    k = parse_segment_key("perfvar:segment:MPI_Send@/a+b@c/x+0x10;MPI_Recv@/y;z+0x20")
    assert k.start == CallSite("MPI_Send", "/a+b@c/x", 0x10)
    assert k.end == CallSite("MPI_Recv", "/y;z", 0x20)
    bad = parse_segment_key("perfvar:segment:whatever")
    assert bad.start is None and bad.end is None and bad.key.endswith("whatever")


def test_missing_module_falls_back_to_module_offset():
    site = CallSite("MPI_Waitall", "/nonexistent/stencil", 0x1A2B)
    sym = symbolize([site])[site]
    assert sym.file is None and sym.label == "stencil+0x1a2b MPI_Waitall"


@pytest.mark.skipif(
    not (shutil.which("gcc") and shutil.which("addr2line") and shutil.which("nm")),
    reason="needs gcc, nm and addr2line",
)
def test_real_module_resolves_to_file_and_line(tmp_path):
    src = tmp_path / "app.c"
    src.write_text(
        "int target(int x) {\n"
        "  return x * 3;\n"
        "}\n"
        "int main(void) { return target(1); }\n"
    )
    exe = tmp_path / "app"
    subprocess.run(["gcc", "-g", "-O0", "-o", str(exe), str(src)], check=True)
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
