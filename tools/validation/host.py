"""What the host did to each CPU while a trial ran, measured outside perfvar, so that a name in
a run with nothing injected can be set beside it:

- Steal: the steal time Linux counts per CPU in /proc/stat (a virtual machine's vCPU ready
  to run while its host ran something else). Where /proc/stat has no steal column (bare
  metal, other kernels) every figure is 0.
- Speed: how fast each CPU ran a fixed chain of additions, sampled every few ms beside the
  ranks (tests/validation/cpu_speed). A shared host can run one vCPU at half speed for
  seconds at a time, with no steal counted: the rank on it is slower with nothing injected,
  and a verdict naming it names a slower core truly.
- Others: how much of each rank's CPU other tasks took while it ran, by the kernel's own
  accounting, which every rank records at its start and stop (rank-N.json ``neighbours``,
  read by perfvar.verdict.neighbours.on_cpu). Counted per CPU by the kernel, not derived
  from the durations the verdict judges.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Optional

from perfvar.read.meta import read_meta
from perfvar.verdict.neighbours import on_cpu

STAT = Path("/proc/stat")
# Other tasks took a rank's CPU when, by the kernel's accounting, they ran there this share of
# the run or more beyond what they ran on every other rank's CPU. The kernel counts in 10 ms
# ticks, 1 % of a 9 s run is 9 of them; in clean CloverLeaf runs the two CPUs differed by
# -1.2..+2.9 %, the kernel's reclaim thread and the launcher landing on one of them.
BUSIER_CPU = 0.01
# A rank's figure is its CPU's busy time minus its own process's, each counted within one
# kernel tick: two ranks' figures can differ by this many ticks with nothing between them
# (one tick is 5.5 % of a twin program's 180 ms run).
TICKS_APART = 4
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


class Speed:
    """Context manager: runs ``program`` (tests/validation/cpu_speed) pinned to each of ``cpus``
    for the block's duration, sampling every ``interval_ms``. On exit, ``chain_ns`` is CPU (a
    string, as in JSON) -> the chain's time at each sample (ns), and ``slowdown()`` compares
    them. ``program`` None: measures nothing (``slowdown()`` is empty)."""

    # Every 20 ms its wake-ups and chains took 0.5-1.1 % of each rank's CPU in CloverLeaf runs
    # (rank-N.json "neighbours"), every 100 ms 0.09-0.25 %.
    def __init__(self, program: Optional[str], cpus: list[str], interval_ms: float = 100):
        self.program, self.cpus, self.interval_ms = program, cpus, interval_ms
        self.chain_ns: dict[str, list[int]] = {}
        self._procs: list[tuple[str, subprocess.Popen, Any]] = []  # cpu, process, its output

    def __enter__(self) -> "Speed":
        if self.program is None:
            return self
        for cpu in self.cpus:
            out = tempfile.TemporaryFile(mode="w+")
            proc = subprocess.Popen(["taskset", "-c", cpu, self.program, f"{self.interval_ms:g}"],
                                    stdout=out, start_new_session=True)
            self._procs.append((cpu, proc, out))
        return self

    def __exit__(self, *exc) -> None:
        for cpu, proc, out in self._procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            out.seek(0)
            self.chain_ns[cpu] = [int(line.split()[1]) for line in out if len(line.split()) == 2]
            out.close()
        self._procs = []

    def slowdown(self) -> dict[str, float]:
        """CPU -> its mean chain time over the fastest CPU's: 1.0 for the fastest, 1.5 for a
        CPU whose additions took 1.5x as long on average over the block. The mean, not the
        median: a rank's run time adds up its vCPU's slow and fast stretches alike."""
        means = {c: sum(v) / len(v) for c, v in self.chain_ns.items() if v}
        if not means:
            return {}
        fastest = min(means.values())
        return {c: m / fastest for c, m in sorted(means.items())}


def others_share(trace: Path, ranks: list[int]) -> tuple[dict[int, float], float]:
    """(rank -> the share of its run (its span between the two snapshots) that other tasks
    took on its CPU: the CPU's user, nice and system time minus the rank's own process's;
    the kernel's tick as a share of the shortest of those spans, 0.0 without any). Ranks on
    several CPUs, or whose rank-N.json has no ``neighbours``, are left out."""
    out, tick = {}, 0.0
    for rank, meta in read_meta(str(trace), ranks).ranks.items():
        cpus = meta.cpus or []
        found = on_cpu(meta.neighbours, cpus[0], cpus) if len(cpus) == 1 else None
        if found and found["others_ns"] is not None and found["span_ns"] > 0:
            out[rank] = found["others_ns"] / found["span_ns"]
            tick = max(tick, found["tick_ns"] / found["span_ns"])
    return out, tick


def busier(share: dict[int, float], tick: float = 0.0, margin: float = BUSIER_CPU) -> set[int]:
    """The ranks of ``share`` (others_share) whose CPU other tasks took more of than every
    other rank's, by ``margin`` of the run and by TICKS_APART ``tick``s (others_share's);
    none where fewer than two ranks are known."""
    need = max(margin, TICKS_APART * tick)
    return {r for r, f in share.items() if len(share) > 1
            and all(f - g >= need for q, g in share.items() if q != r)}
