"""Resolve ``module+offset`` call sites to ``function file:line`` with addr2line.

Offsets are return addresses relative to the module's load bias (bytes); the call
instruction is at ``offset - 1``, which is what gets symbolized. Every frame of a
call path (the MPI call's own and its callers') is symbolized. addr2line runs once
per module with all of that module's offsets on its standard input; ``-f`` names the
enclosing function from the symbol table even without debug information. When the module
is missing, addr2line is not installed, fails, times out, or answers ``??``, the site
falls back to ``<module basename>+0x<offset>``. Never raises; not thread-safe only in
the sense that it spawns processes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Optional

from perfvar.read.segments import CallSite, Frame

TOOL_TIMEOUT_S = 60.0  # addr2line, nm


# GCC's suffixes of cloned or split functions (foo.constprop.0, foo.isra.0, foo.part.0,
# foo.cold): the function a reader knows is foo.
_CLONE_RE = re.compile(r"\.(constprop|isra|part|cold|lto_priv)(\.\d+)*.*$")


def short_function(name: str) -> str:
    """A function name as its source names it: gfortran's module procedures
    ``__<module>_MOD_<name>`` -> ``<name>``, GCC clone suffixes dropped."""
    name = _CLONE_RE.sub("", name)
    if name.startswith("__") and "_MOD_" in name:
        name = name.split("_MOD_", 1)[1]
    return name


@dataclass(frozen=True)
class FrameSymbol:
    """What is known about one caller frame of a call path after symbolization."""

    frame: Frame
    function: Optional[str] = None  # enclosing function of the call instruction
    file: Optional[str] = None
    line: Optional[int] = None

    @property
    def name(self) -> str:
        """The function's short name, else ``file:line``, else ``module+0x<off>``."""
        if self.function:
            return short_function(self.function)
        if self.file and self.line:
            return f"{os.path.basename(self.file)}:{self.line}"
        return self.frame.fallback_site()

    def to_json(self) -> dict:
        return {
            "module": self.frame.module,
            "offset": f"0x{self.frame.offset:x}",
            "function": self.function,
            "file": self.file,
            "line": self.line,
        }


@dataclass(frozen=True)
class ShownFrame:
    """A frame as a label shows it: what is known of it and the name it gets."""

    symbol: FrameSymbol
    name: str

    @property
    def place(self) -> Optional[str]:
        """``file:line`` (basename) when the debug information gives it."""
        s = self.symbol
        return f"{os.path.basename(s.file)}:{s.line}" if s.file and s.line else None


# The program's entry (C main, gfortran's main program): the frames beyond it are the C
# library's start-up, the same for every call path.
ENTRY_FUNCTIONS = frozenset({"main", "MAIN__"})


def application_frames(callers: tuple[FrameSymbol, ...]) -> list[FrameSymbol]:
    """The callers up to the program's entry (included), without the C library's
    start-up frames above it: what a label shows of a call path."""
    out: list[FrameSymbol] = []
    for c in callers:
        if c.frame.module_basename.startswith("libc."):
            break
        out.append(c)
        if c.function in ENTRY_FUNCTIONS:
            break
    return out


@dataclass(frozen=True)
class Symbol:
    """What is known about one call site after symbolization."""

    site: CallSite
    function: Optional[str] = None  # enclosing function of the call instruction
    file: Optional[str] = None  # source path as addr2line printed it
    line: Optional[int] = None
    callers: tuple[FrameSymbol, ...] = ()  # the call path above it, innermost first

    @property
    def location(self) -> str:
        """``file:line`` (basename) when known, else the enclosing function's name
        (the symbol table), else ``<module basename>+0x<off>``."""
        if self.file and self.line:
            return f"{os.path.basename(self.file)}:{self.line}"
        if self.function:
            return short_function(self.function)
        return self.site.fallback_site()

    def shown_frames(self) -> list[ShownFrame]:
        """The frames a label shows: the call's own (named by its location), then
        its callers up to the program's entry."""
        own = FrameSymbol(self.site.frames[0], self.function, self.file, self.line)
        return [ShownFrame(own, self.location)] + [
            ShownFrame(c, c.name) for c in application_frames(self.callers)
        ]

    @property
    def label(self) -> str:
        """``stencil.f90:142 MPI_Waitall``: where the MPI call is, then which call;
        then its callers, innermost first: ``clover_exchange MPI_Waitall <
        update_halo < pdv``."""
        return site_label(self.site.function, [f.name for f in self.shown_frames()])

    def to_json(self) -> dict:
        return {
            "mpi_function": self.site.function,
            "module": self.site.module,
            "offset": f"0x{self.site.offset:x}",
            "function": self.function,
            "file": self.file,
            "line": self.line,
            "location": self.location,
            "callers": [c.to_json() for c in self.callers],
        }


def site_label(mpi_function: str, names: list[str]) -> str:
    """A call site's label from the names of its shown frames (Symbol.shown_frames):
    the first, where the call is, then the MPI function, then the callers."""
    return " < ".join([f"{names[0]} {mpi_function}"] + names[1:])


def _parse_file_line(text: str) -> tuple[Optional[str], Optional[int]]:
    # "path/file.f90:142 (discriminator 3)" or "??:0" or "??:?"
    text = text.split(" (discriminator", 1)[0].strip()
    path, sep, line = text.rpartition(":")
    if not sep or path in ("", "??") or not line.isdigit() or int(line) == 0:
        return None, None
    return path, int(line)


def run_tool(argv: list[str], query: str = "") -> Optional[str]:
    """The standard output of a binutils tool (``argv[0]`` found on PATH) given
    ``query`` on its standard input; None when it is missing, cannot start, times
    out (TOOL_TIMEOUT_S) or exits non-zero."""
    exe = shutil.which(argv[0])
    if exe is None:
        return None
    try:
        proc = subprocess.run(
            [exe, *argv[1:]],
            input=query,
            capture_output=True,
            text=True,
            timeout=TOOL_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _run_addr2line(module: str, offsets: list[int]) -> Optional[list[str]]:
    if not os.path.isfile(module):
        return None
    query = "".join(f"{max(off - 1, 0):x}\n" for off in offsets)
    out = run_tool(["addr2line", "-f", "-C", "-e", module], query)
    lines = out.splitlines() if out is not None else []
    return lines if len(lines) >= 2 * len(offsets) else None


def symbolize(
    sites: Iterable[CallSite], enabled: bool = True
) -> dict[CallSite, Symbol]:
    """Symbolize call sites, every frame of their call paths; one addr2line process
    per distinct module.

    Returns a Symbol for every input site (unresolved frames carry only their
    module and offset). With ``enabled=False`` no process is started and every
    frame stays unresolved.
    """
    sites = set(sites)
    by_module: dict[str, set[int]] = defaultdict(set)
    for site in sites:
        for frame in site.frames:
            by_module[frame.module].add(frame.offset)
    resolved: dict[Frame, tuple[Optional[str], Optional[str], Optional[int]]] = {}
    for module, offset_set in by_module.items():
        offsets = sorted(offset_set)
        lines = _run_addr2line(module, offsets) if enabled else None
        for i, off in enumerate(offsets):
            if lines is None:
                resolved[Frame(module, off)] = (None, None, None)
                continue
            func = lines[2 * i].strip()
            path, line = _parse_file_line(lines[2 * i + 1])
            resolved[Frame(module, off)] = (None if func == "??" else func, path, line)
    result: dict[CallSite, Symbol] = {}
    for site in sites:
        func, path, line = resolved[site.frames[0]]
        callers = tuple(FrameSymbol(f, *resolved[f]) for f in site.callers)
        result[site] = Symbol(site, func, path, line, callers)
    return result
