"""Each rank's time off its CPU, measured by the counters (PERFVAR_METRICS).

The recorder reads the counters at the end of long compute segments, as deltas since
the thread's previous read (perfvar.read.samples.METRIC_DTYPE: the interval from
``since_ticks`` to ``time_ticks``, its compute segments and the MPI calls between
them; each thread's first read, which holds its start, is left out: after_start).
The kernel's task clock counts the ns the thread ran on a CPU, so over an
interval wall time minus task clock is the time it was off its CPU: another runnable
process took it (a time slice), or the thread slept or blocked. Per rank (all its
threads' reads), summed over the intervals the reads cover:

* covered_ns, on_cpu_ns and off_cpu_ns = covered - on (each interval's floored at 0:
  the task clock and the trace clock are read a few ns apart);
* the context switches, CPU migrations and page faults counted, where the run had
  those events;
* per read, the share of its interval spent off the CPU (the samples a test compares).

A rank without a task clock column (PERFVAR_METRICS=none, or the event could not be
opened) has no entry. ``reads_by_rank`` keeps the reads themselves instead, for a course
over the run (report.html): every counter's delta per read, whatever its name, and the
time off the CPU of each interval where a task clock was counted. Pure functions over
arrays; thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

# What each column of interest is called, by the end of its name without the PMU and
# the modifiers (PAPI's perf_event component names the kernel's software events
# perf::TASK-CLOCK etc.; perfvar's default set counts them in the kernel too, :k=1).
TASK_CLOCK = "TASK-CLOCK"
SWITCHES = "CONTEXT-SWITCHES"
MIGRATIONS = "CPU-MIGRATIONS"
PAGE_FAULTS = "PAGE-FAULTS"


@dataclass(frozen=True)
class RankCpuTime:
    """What the counters say of one rank's time on and off its CPU (ns, counts)."""

    rank: int
    reads: int
    covered_ns: float
    on_cpu_ns: float
    off_cpu_ns: float
    off_share_per_read: np.ndarray  # off / covered of each read's interval
    switches: Optional[float] = None
    migrations: Optional[float] = None
    page_faults: Optional[float] = None

    @property
    def off_fraction(self) -> float:
        return self.off_cpu_ns / self.covered_ns if self.covered_ns > 0 else 0.0

    def to_json(self) -> dict:
        return {
            "reads": self.reads,
            "covered_ns": self.covered_ns,
            "on_cpu_ns": self.on_cpu_ns,
            "off_cpu_ns": self.off_cpu_ns,
            "off_cpu_fraction": self.off_fraction,
            "context_switches": self.switches,
            "migrations": self.migrations,
            "page_faults": self.page_faults,
        }


def event_name(name: str) -> str:
    """A counter's event without its PMU and modifiers, upper case:
    "perf::TASK-CLOCK:k=1" -> "TASK-CLOCK", "INST_RETIRED:ANY_P" -> "INST_RETIRED"."""
    return name.split("::")[-1].split(":")[0].upper()


def column(names: list[str], which: str) -> Optional[int]:
    """The column of ``names`` whose event name (event_name, "_" read as "-") ends in
    ``which``, or None."""
    for i, name in enumerate(names):
        if event_name(name).replace("_", "-").endswith(which):
            return i
    return None


@dataclass(frozen=True)
class RankReads:
    """One rank's counter reads (all its threads'), aligned arrays, in read order."""

    rank: int
    since_ns: np.ndarray  # each interval's start, ns since the trace's time origin
    end_ns: np.ndarray  # its end (the read)
    deltas: dict[str, np.ndarray]  # counter name -> its count over each interval
    # ns off the CPU in each interval (off_cpu_ns), None without a task clock column;
    # the task clock itself is then left out of ``deltas`` (it says the same).
    off_cpu_ns: Optional[np.ndarray] = None

    @property
    def wall_ns(self) -> np.ndarray:
        return self.end_ns - self.since_ns


def off_cpu_ns(on_ns: np.ndarray, wall_ns: np.ndarray) -> np.ndarray:
    """Time off the CPU of each interval (ns): wall minus task clock, floored at 0
    because the task clock and the trace clock are read a few ns apart."""
    return np.maximum(wall_ns - on_ns, 0.0)


def reads_by_rank(
    metrics: np.ndarray,
    names: list[str],
    trace_ns: Callable[[np.ndarray], np.ndarray],
) -> dict[int, RankReads]:
    """rank -> its RankReads, from the counter reads (METRIC_DTYPE rows) whose columns
    are ``names``; ``trace_ns``: ticks -> ns since the trace's origin
    (TraceSamples.trace_ns). Only the columns a rank counted; {} without reads."""
    clock = column(names, TASK_CLOCK)
    out = {}
    for rank in np.unique(metrics["rank"]) if metrics.size else []:
        rows = metrics[metrics["rank"] == rank]
        since, end = trace_ns(rows["since_ticks"]), trace_ns(rows["time_ticks"])
        rows, since, end = rows[end > since], since[end > since], end[end > since]
        counted = [
            i for i in range(len(names)) if np.isfinite(rows["values"][:, i]).any()
        ]
        if not counted:
            continue
        off = None
        if clock in counted:
            counted.remove(clock)
            off = off_cpu_ns(rows["values"][:, clock], end - since)
        out[int(rank)] = RankReads(
            rank=int(rank),
            since_ns=since,
            end_ns=end,
            deltas={names[i]: rows["values"][:, i] for i in counted},
            off_cpu_ns=off,
        )
    return out


def read_intervals(
    metrics: np.ndarray, samples: np.ndarray, ticks_per_ns: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per counter read (METRIC_DTYPE rows whose "first"/"sample" index ``samples``,
    SAMPLE_DTYPE): whether its segment indexes are valid, its interval's wall time
    (ns) and the time its segments ``first`` .. ``sample`` took (ns; 0 where not
    valid). The rest of the interval was spent in the MPI calls between them."""
    sample, first = metrics["sample"], metrics["first"]
    valid = (first >= 0) & (first <= sample) & (sample < samples.size)
    ends = np.concatenate([[0.0], np.cumsum(samples["duration_ns"])])
    segments_ns = np.where(
        valid,
        ends[np.where(valid, sample, 0) + 1] - ends[np.where(valid, first, 0)],
        0.0,
    )
    wall = (
        metrics["time_ticks"].astype(np.float64)
        - metrics["since_ticks"].astype(np.float64)
    ) / ticks_per_ns
    return valid, wall, segments_ns


def off_cpu_in_segments(
    metrics: np.ndarray, names: list[str], samples: np.ndarray, ticks_per_ns: float
) -> Optional[np.ndarray]:
    """Per counter read (as read_intervals takes them): the ns its segments spent off
    the CPU, its interval's time off the CPU times the segments' share of the
    interval (NaN where the read is not usable); None without a task clock column.
    Where in the interval the time off the CPU fell is not recorded, so it is taken
    as spread evenly: a read that closes a long segment after a short call puts
    nearly all of it in the segment."""
    clock = column(names, TASK_CLOCK)
    if clock is None or ticks_per_ns <= 0:
        return None
    valid, wall, segments_ns = read_intervals(metrics, samples, ticks_per_ns)
    on = metrics["values"][:, clock]
    ok = valid & (wall > 0) & np.isfinite(on)
    share = np.clip(segments_ns / np.where(ok, wall, 1.0), 0.0, 1.0)
    return np.where(ok, off_cpu_ns(np.where(ok, on, 0.0), wall) * share, np.nan)


def after_start(metrics: np.ndarray) -> np.ndarray:
    """The counter reads (METRIC_DTYPE rows) without each thread's first one.

    A thread's counters are based at its first call's entry (the trace writer puts
    the zero totals there), so its first read's interval holds that whole call: on
    the main thread MPI_Init, where MPI's wire-up sleeps while the other processes
    start (measured: 0.68 s of a 1.1 s run off the CPU, 0.70 of the rank's
    "off CPU" share). It is the start, not the run: its time off the CPU, its
    instructions and its wall time are left out of every figure taken from the reads.
    Rows keep their order."""
    if metrics.size == 0:
        return metrics
    key = metrics["rank"].astype(np.int64) << 32 | metrics["thread"].astype(np.int64)
    order = np.lexsort((metrics["time_ticks"], key))
    first = np.ones(metrics.size, dtype=bool)
    first[order[1:]] = key[order[1:]] != key[order[:-1]]
    return metrics[~first]


def of_reads(
    metrics: np.ndarray, names: list[str], ticks_per_ns: float
) -> dict[int, RankCpuTime]:
    """rank -> its RankCpuTime, from the counter reads (METRIC_DTYPE rows) whose
    columns are ``names``; {} without a task clock column or reads."""
    clock = column(names, TASK_CLOCK)
    if clock is None or metrics.size == 0 or ticks_per_ns <= 0:
        return {}
    counted = {
        "switches": column(names, SWITCHES),
        "migrations": column(names, MIGRATIONS),
        "page_faults": column(names, PAGE_FAULTS),
    }
    out = {}
    for rank in np.unique(metrics["rank"]):
        rows = metrics[metrics["rank"] == rank]
        on = rows["values"][:, clock]
        wall = (rows["time_ticks"] - rows["since_ticks"]).astype(
            np.float64
        ) / ticks_per_ns
        keep = np.isfinite(on) & (wall > 0)
        if not keep.any():
            continue
        on, wall = on[keep], wall[keep]
        off = off_cpu_ns(on, wall)
        sums = {
            key: (
                float(np.nansum(rows["values"][keep, col])) if col is not None else None
            )
            for key, col in counted.items()
        }
        out[int(rank)] = RankCpuTime(
            rank=int(rank),
            reads=int(keep.sum()),
            covered_ns=float(wall.sum()),
            on_cpu_ns=float(np.minimum(on, wall).sum()),
            off_cpu_ns=float(off.sum()),
            off_share_per_read=off / wall,
            **sums,
        )
    return out
