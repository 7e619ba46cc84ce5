"""Resolve ``module+offset`` call sites to ``function file:line`` with addr2line.

Offsets are return addresses relative to the module's load bias (bytes); the call
instruction is at ``offset - 1``, which is what gets symbolized. addr2line runs once
per module with all of that module's offsets on its standard input. When the module
is missing, addr2line is not installed, fails, times out, or answers ``??``, the site
falls back to ``<module basename>+0x<offset>``. Never raises; not thread-safe only in
the sense that it spawns processes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Optional

from perfvar.segments import CallSite

ADDR2LINE_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Symbol:
    """What is known about one call site after symbolization."""

    site: CallSite
    function: Optional[str] = None  # enclosing function of the call instruction
    file: Optional[str] = None  # source path as addr2line printed it
    line: Optional[int] = None

    @property
    def location(self) -> str:
        """``file:line`` (basename) when known, else ``<module basename>+0x<off>``."""
        if self.file and self.line:
            return f"{os.path.basename(self.file)}:{self.line}"
        return self.site.fallback_site()

    @property
    def label(self) -> str:
        """``stencil.f90:142 MPI_Waitall``: where the MPI call is, then which call."""
        return f"{self.location} {self.site.function}"

    def to_json(self) -> dict:
        return {
            "mpi_function": self.site.function,
            "module": self.site.module,
            "offset": f"0x{self.site.offset:x}",
            "function": self.function,
            "file": self.file,
            "line": self.line,
            "location": self.location,
        }


def _parse_file_line(text: str) -> tuple[Optional[str], Optional[int]]:
    # "path/file.f90:142 (discriminator 3)" or "??:0" or "??:?"
    text = text.split(" (discriminator", 1)[0].strip()
    path, sep, line = text.rpartition(":")
    if not sep or path in ("", "??") or not line.isdigit() or int(line) == 0:
        return None, None
    return path, int(line)


def _run_addr2line(module: str, offsets: list[int]) -> Optional[list[str]]:
    exe = shutil.which("addr2line")
    if exe is None or not os.path.isfile(module):
        return None
    query = "".join(f"{max(off - 1, 0):x}\n" for off in offsets)
    try:
        proc = subprocess.run(
            [exe, "-f", "-C", "-e", module],
            input=query,
            capture_output=True,
            text=True,
            timeout=ADDR2LINE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = proc.stdout.splitlines()
    if proc.returncode != 0 or len(lines) < 2 * len(offsets):
        return None
    return lines


def symbolize(
    sites: Iterable[CallSite], enabled: bool = True
) -> dict[CallSite, Symbol]:
    """Symbolize call sites; one addr2line process per distinct module.

    Returns a Symbol for every input site (unresolved ones carry only the site).
    With ``enabled=False`` no process is started and every site stays unresolved.
    """
    by_module: dict[str, list[CallSite]] = defaultdict(list)
    for site in set(sites):
        by_module[site.module].append(site)
    result: dict[CallSite, Symbol] = {}
    for module, module_sites in by_module.items():
        module_sites.sort(key=lambda s: s.offset)
        lines = (
            _run_addr2line(module, [s.offset for s in module_sites])
            if enabled
            else None
        )
        for i, site in enumerate(module_sites):
            if lines is None:
                result[site] = Symbol(site)
                continue
            func = lines[2 * i].strip()
            path, line = _parse_file_line(lines[2 * i + 1])
            result[site] = Symbol(site, None if func == "??" else func, path, line)
    return result
