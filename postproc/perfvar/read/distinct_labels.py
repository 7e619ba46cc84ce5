"""Labels that tell apart the segment classes whose call paths read alike.

Without debug information a frame is named by its function (perfvar.read.symbolize),
and a function that calls the same routine from several places gives several
classes one label: CloverLeaf's ``advection`` calls ``update_halo`` three times, so
three classes read ``clover_exchange MPI_Waitall < update_halo < advection <
hydro_ -> ...``; ``field_summary`` reduces five fields in five MPI_Reduce calls.
Where labels collide, the frames that differ among the colliding classes are named
``function+0x<offset>``: the return address's offset in its function, as a
debugger's backtrace gives it (in source order: ``advection+0x82``,
``advection+0x146``, ``advection+0x297`` are its first, second and third call),
the function's start from the module's symbol table (``nm``, once per module that
has such a frame). Where the table does not have the function (nm missing, a
stripped module), the frame is named ``function@0x<offset in the module>``; a frame
named by its module and offset already tells itself apart. A class from one call to
another that reads alike (``clover_exchange MPI_Waitall < ... -> clover_exchange
MPI_Waitall < ...``: the two waits of one exchange routine) gets the same on both
ends where they differ. A frame so named is named so in every label that shows it,
so that the class that starts where another ends reads that way (``... advection+0x146
-> ... advection+0x297``, then ``advection+0x297 < hydro_ -> ... timestep``). Frames
the label does not show (beyond the program's
entry) are not used: classes that differ only there keep one label. Runs ``nm``;
otherwise pure; thread-safe.
"""

from __future__ import annotations

import bisect
import os
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Optional

from perfvar.read.segments import CallSite, Frame, SegmentKey
from perfvar.read.symbolize import ShownFrame, Symbol, run_tool, site_label

# nm's symbol types of code: global and local text, weak symbols.
_CODE = frozenset("TtWw")

# module path -> its functions' start offsets, ascending (None: unknown)
FunctionStarts = Callable[[str], Optional[list[int]]]


def nm_function_starts(module: str) -> Optional[list[int]]:
    """The start offsets of the module's functions from ``nm`` (its symbol table,
    else its dynamic one), ascending; None when nm is missing, fails or lists none."""
    if not os.path.isfile(module):
        return None
    for table in ([], ["-D"]):
        out = run_tool(["nm", "--defined-only", *table, module])
        fields = (line.split() for line in (out or "").splitlines())
        starts = sorted(
            {int(f[0], 16) for f in fields if len(f) >= 3 and f[1] in _CODE}
        )
        if starts:
            return starts
    return None


def _exact_name(shown: ShownFrame, starts: Optional[list[int]]) -> str:
    """The frame's name told apart from the same function's other call sites."""
    frame, name, place = shown.symbol.frame, shown.name, shown.place
    if place:  # the debug information's line: the name, or else the module offset
        return f"{name} ({place})" if place != name else f"{name}@0x{frame.offset:x}"
    if not shown.symbol.function:
        return name  # module+offset: already one place
    # The call instruction is the byte before the return address.
    i = bisect.bisect_right(starts, frame.offset - 1) - 1 if starts else -1
    if i >= 0:
        return f"{name}+0x{frame.offset - starts[i]:x}"
    return f"{name}@0x{frame.offset:x}"


Shown = tuple[ShownFrame, ...]  # a site's shown frames (Symbol.shown_frames)


def _shown(symbols: Mapping[CallSite, Symbol], site: Optional[CallSite]) -> Shown:
    return tuple(symbols[site].shown_frames()) if site in symbols else ()


def _label(
    site: Optional[CallSite],
    shown: Shown,
    exact: set[Frame],
    names: Callable[[ShownFrame], str],
) -> str:
    """The site's label with the frames in ``exact`` named exactly."""
    if site is None or not shown:
        return ""
    parts = [names(f) if f.symbol.frame in exact else f.name for f in shown]
    return site_label(site.function, parts)


def _among_alike(
    groups: list[list[int]], ends: dict[int, tuple[Shown, Shown]]
) -> set[Frame]:
    """The frames to name exactly in a group of classes whose labels collide: at
    each position, those of the members where they differ."""
    exact: set[Frame] = set()
    for members in groups:
        for side in (0, 1) if len(members) > 1 else ():
            for pos in range(len(ends[members[0]][side])):
                at = {ends[m][side][pos].symbol.frame for m in members}
                exact |= at if len(at) > 1 else set()
    return exact


def _within_one(alike: list[int], ends: dict[int, tuple[Shown, Shown]]) -> set[Frame]:
    """The frames to name exactly in a class whose FROM and TO read alike
    ("clover_exchange MPI_Waitall < ... -> clover_exchange MPI_Waitall < ...", two
    calls of one routine): at each position, both ends' where they differ."""
    exact: set[Frame] = set()
    for i in alike:
        a, b = ends[i]
        for x, y in zip(a, b):
            if x.symbol.frame != y.symbol.frame:
                exact |= {x.symbol.frame, y.symbol.frame}
    return exact


def distinct_ends(
    keys: Sequence[SegmentKey],
    symbols: Mapping[CallSite, Symbol],
    function_starts: FunctionStarts = nm_function_starts,
) -> dict[int, tuple[str, str]]:
    """(FROM, TO) labels for each index into ``keys`` whose labels read as another
    key's, or whose FROM reads as its TO, that tell them apart, and for each key
    that shows a frame those name exactly: one call site has one name in every
    label, so that the class that starts where another ends (``... advection+0x297``
    -> ``advection+0x297 < ...``) reads so (module doc). Keys without both ends
    symbolized are left out, as are those told apart by nothing the labels show."""
    ends = {
        i: (_shown(symbols, k.start), _shown(symbols, k.end))
        for i, k in enumerate(keys)
        if k.start in symbols and k.end in symbols
    }
    plain = {
        i: (symbols[keys[i].start].label, symbols[keys[i].end].label) for i in ends
    }
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for i, (a, b) in plain.items():
        groups[(a, b, keys[i].side())].append(i)
    exact = _among_alike(list(groups.values()), ends) | _within_one(
        [i for i, (a, b) in plain.items() if a == b], ends
    )
    tables: dict[str, Optional[list[int]]] = {}

    def names(shown: ShownFrame) -> str:
        module = shown.symbol.frame.module
        if module not in tables:
            tables[module] = function_starts(module)
        return _exact_name(shown, tables[module])

    return {
        i: (
            _label(keys[i].start, a, exact, names),
            _label(keys[i].end, b, exact, names),
        )
        for i, (a, b) in sorted(ends.items())
        if any(f.symbol.frame in exact for f in a + b)
    }
