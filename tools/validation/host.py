"""What the host took from each CPU while a trial ran: the steal time Linux counts per CPU
in /proc/stat (a virtual machine's vCPU ready to run while its host ran something else).
A name in a clean run can then be set beside what the host did on that rank's CPU. Where
/proc/stat has no steal column (bare metal, other kernels) every figure is 0."""

from __future__ import annotations

import os
from pathlib import Path

STAT = Path("/proc/stat")
# The field of a "cpuN" line, after the name: user nice system idle iowait irq softirq steal.
STEAL = 8


def steal_ticks() -> dict[int, int]:
    """CPU -> steal time so far, in clock ticks (USER_HZ)."""
    out = {}
    try:
        lines = STAT.read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        name, *fields = line.split()
        if name.startswith("cpu") and name[3:].isdigit():
            out[int(name[3:])] = int(fields[STEAL - 1]) if len(fields) >= STEAL else 0
    return out


class Steal:
    """Context manager: ``ms`` is, on exit, CPU (its number as a string, as in JSON) ->
    steal time during the block (ms)."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self._start: dict[int, int] = {}

    def __enter__(self) -> "Steal":
        self._start = steal_ticks()
        return self

    def __exit__(self, *exc) -> None:
        tick_ms = 1000.0 / os.sysconf("SC_CLK_TCK")
        end = steal_ticks()
        self.ms = {str(c): (end[c] - self._start.get(c, end[c])) * tick_ms for c in sorted(end)}
