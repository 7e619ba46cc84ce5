"""Classes whose call paths read alike get labels that tell them apart."""

import shutil
import subprocess

import pytest

from conftest import compiled_c
from perfvar.read.distinct_labels import distinct_ends, nm_function_starts
from perfvar.read.segments import CallSite, Frame, SegmentKey
from perfvar.read.symbolize import FrameSymbol, Symbol, symbolize

APP = "/opt/app/clover_leaf"
NEEDS_TOOLCHAIN = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("gcc", "addr2line", "nm", "objdump")),
    reason="needs gcc, addr2line, nm and objdump",
)


def _site(mpi: str, own: int, callers: tuple[int, ...]) -> CallSite:
    return CallSite(mpi, APP, own, tuple(Frame(APP, o) for o in callers))


def _symbol(site: CallSite, function: str, callers: tuple[str, ...]) -> Symbol:
    return Symbol(
        site,
        function,
        callers=tuple(FrameSymbol(f, c) for f, c in zip(site.callers, callers)),
    )


# advection (starts at 0x1000) calls update_halo from three places; update_halo
# (0x500) calls clover_exchange (0x100) from one.
STARTS = [0x100, 0x500, 0x1000, 0x2000]
WAIT = {o: _site("MPI_Waitall", 0x1B8, (0x520, o)) for o in (0x1082, 0x1146, 0x1297)}
SEND = _site("MPI_Isend", 0x1FD, (0x530, 0x2050))


def _symbols() -> dict[CallSite, Symbol]:
    out = {
        s: _symbol(s, "clover_exchange", ("update_halo", "advection"))
        for s in WAIT.values()
    }
    out[SEND] = _symbol(SEND, "clover_exchange", ("update_halo", "hydro"))
    return out


def test_alike_paths_named_by_the_offset_in_their_function():
    keys = [SegmentKey(f"k{o:x}", WAIT[o], SEND) for o in sorted(WAIT)]
    asked = []

    def starts(module):
        asked.append(module)
        return STARTS

    got = distinct_ends(keys, _symbols(), starts)
    assert sorted(got) == [0, 1, 2]
    tail = " MPI_Waitall < update_halo < advection+0x"
    assert [got[i][0] for i in range(3)] == [
        "clover_exchange" + tail + "82",
        "clover_exchange" + tail + "146",
        "clover_exchange" + tail + "297",
    ]
    # Only the frames that differ are named exactly; the TO end is the same.
    assert {got[i][1] for i in range(3)} == {
        "clover_exchange MPI_Isend < update_halo < hydro"
    }
    assert asked == [APP]  # the symbol table read once


def test_a_frame_named_exactly_is_so_named_in_every_label():
    """The class that starts at one of advection's calls (unique as it is) names that
    call as the classes that end there do."""
    after = _site("MPI_Allreduce", 0x1C0, (0x2060,))
    symbols = _symbols() | {after: _symbol(after, "clover_min", ("hydro",))}
    keys = [SegmentKey(f"k{o:x}", WAIT[o], SEND) for o in sorted(WAIT)]
    keys.append(SegmentKey("next", WAIT[0x1297], after))
    got = distinct_ends(keys, symbols, lambda m: STARTS)
    assert got[3] == (
        "clover_exchange MPI_Waitall < update_halo < advection+0x297",
        "clover_min MPI_Allreduce < hydro",
    )


def test_distinct_paths_keep_their_names_and_tables_are_not_read():
    other = _site("MPI_Allreduce", 0x1C0, (0x2060,))
    symbols = _symbols() | {other: _symbol(other, "clover_min", ("hydro",))}
    keys = [
        SegmentKey("a", WAIT[0x1082], SEND),
        SegmentKey("b", WAIT[0x1082], other),
        SegmentKey("c", None, None),  # unparsed: its key is its label
    ]

    def starts(module):
        raise AssertionError("no collision: no symbol table needed")

    assert distinct_ends(keys, symbols, starts) == {}


def test_without_the_function_start_the_module_offset_tells_them_apart():
    keys = [SegmentKey(f"k{o:x}", WAIT[o], SEND) for o in (0x1082, 0x1146)]
    got = distinct_ends(keys, _symbols(), lambda module: None)
    assert got[0][0].endswith("< advection@0x1082")
    assert got[1][0].endswith("< advection@0x1146")


def test_with_debug_information_the_line_tells_them_apart():
    """Where the debug information gives the caller's line, that is the name added
    (CoMD's exchangeData sends along one axis from two lines)."""
    sites = [_site("MPI_Sendrecv", 0x99, (o,)) for o in (0x10C8, 0x10E8)]
    symbols = {
        s: Symbol(
            s,
            "sendReceiveParallel",
            "/src/parallel.c",
            99,
            (FrameSymbol(s.callers[0], "exchangeData", "/src/haloExchange.c", line),),
        )
        for s, line in zip(sites, (297, 298))
    }
    assert symbols[sites[0]].label == "parallel.c:99 MPI_Sendrecv < exchangeData"
    got = distinct_ends(
        [SegmentKey("a", sites[0], sites[1]), SegmentKey("b", sites[1], sites[0])],
        symbols,
        lambda m: STARTS,
    )
    assert got[0] == (
        "parallel.c:99 MPI_Sendrecv < exchangeData (haloExchange.c:297)",
        "parallel.c:99 MPI_Sendrecv < exchangeData (haloExchange.c:298)",
    )
    assert got[1] == (got[0][1], got[0][0])


def test_a_class_between_two_calls_that_read_alike():
    """Two waits of one exchange routine: the class between them names both ends
    exactly where they differ, and nothing else."""
    first = _site("MPI_Waitall", 0x1A5, (0x520, 0x1082))
    second = _site("MPI_Waitall", 0x1B8, (0x520, 0x1082))
    symbols = _symbols() | {
        s: _symbol(s, "clover_exchange", ("update_halo", "advection"))
        for s in (first, second)
    }
    got = distinct_ends([SegmentKey("w", first, second)], symbols, lambda m: STARTS)
    assert got == {
        0: (
            "clover_exchange+0xa5 MPI_Waitall < update_halo < advection",
            "clover_exchange+0xb8 MPI_Waitall < update_halo < advection",
        )
    }


def test_a_duration_side_is_no_collision():
    a = SegmentKey("x", WAIT[0x1082], SEND, ("below", 1e6))
    b = SegmentKey("y", WAIT[0x1082], SEND, ("above", 1e6))
    assert distinct_ends([a, b], _symbols(), lambda m: STARTS) == {}


@NEEDS_TOOLCHAIN
def test_two_calls_of_one_helper_in_a_real_program(tmp_path):
    """A program without debug information whose kernel calls its exchange helper
    twice: two classes, two labels, in the kernel's source order."""
    exe = compiled_c(
        tmp_path,
        "int exchange(int x) { return x * 3; }\n"
        "int kernel(int x) { x = exchange(x) + 1; return exchange(x) + 2; }\n"
        "int main(void) { return kernel(1); }\n",
    )
    dis = subprocess.run(
        ["objdump", "-d", str(exe)], capture_output=True, text=True, check=True
    ).stdout
    starts = nm_function_starts(str(exe))
    assert starts
    # The return addresses of kernel's two calls of exchange: the byte after each call.
    body = dis.split("<kernel>:", 1)[1].split("\n\n", 1)[0].splitlines()
    lines = [ln for ln in body if "call" in ln and "<exchange>" in ln]
    after = [body[body.index(ln) + 1] for ln in lines]
    returns = [int(ln.split(":", 1)[0], 16) for ln in after]
    assert len(returns) == 2
    sites = [CallSite("MPI_Isend", str(exe), r) for r in returns]
    symbols = symbolize(sites)
    assert symbols[sites[0]].label == symbols[sites[1]].label == "kernel MPI_Isend"
    keys = [SegmentKey(str(i), s, s) for i, s in enumerate(sites)]
    got = distinct_ends(keys, symbols)
    kernel = max(a for a in starts if a < returns[0])
    assert got[0][0] == f"kernel+0x{returns[0] - kernel:x} MPI_Isend"
    assert got[1][0] == f"kernel+0x{returns[1] - kernel:x} MPI_Isend"
    assert returns[0] < returns[1]
