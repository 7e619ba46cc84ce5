"""The per-rank, per-class and per-cell rows of analysis.json.

Times ns, relative figures as fractions (0.02 = 2 %). Parts whose content is the
calibration's or the counters' own (calibration states and cycles, CPU time, call
sites) stay the JSON objects those stages write. Plain data; not thread-safe to
mutate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from perfvar.result.record import Record, field


@dataclass
class RankRow(Record):
    """One MPI rank (``ranks``): where it ran, its calibration, its verdict."""

    rank: int
    host: Optional[str] = None
    cpus: list[int] = field(default_factory=list)
    socket: Optional[int] = None  # the socket all its CPUs share (None: not known)
    t_min_ns: Optional[float] = None
    t_diff_ns: Optional[float] = None
    timer_overhead_ns: Optional[float] = None
    calibration_status: Optional[str] = None
    calibration_source: Optional[str] = None
    calibration_states: list[dict[str, Any]] = field(default_factory=list)
    calibration_cycles: dict[str, Any] = field(default_factory=dict)
    n_segments: int = 0
    verdict: str = ""  # "ok", the kinds it shows ("slow segment"), "unreadable"...
    anomalies: list[str] = field(default_factory=list)  # kinds of its verdicts
    migrated: bool = False
    interruptions: int = 0
    interrupted_ns: float = 0.0
    interrupted_fraction: float = 0.0
    cpu_time: Optional[dict[str, Any]] = None  # time off the CPU (None: no reads)
    judgements: dict[str, int] = field(default_factory=dict)  # status -> cells
    problem: Optional[str] = None


@dataclass
class SegmentClass(Record):
    """One segment class (``segments``, by total time: S0 the largest)."""

    id: str
    key: str = ""  # the trace's segment key (FROM and TO call paths)
    from_: Optional[str] = field(default=None, key="from")  # FROM call site label
    to: Optional[str] = None
    label: str = ""  # "FROM -> TO"
    from_site: Optional[dict[str, Any]] = None
    to_site: Optional[dict[str, Any]] = None
    n: int = 0  # segments recorded
    n_kept: int = 0  # after the filters
    os_noise_removed: int = 0
    n_ranks: int = 0
    median_ns: Optional[float] = None
    total_ns: float = 0.0
    context_bytes: Optional[int] = None
    cache_state: Optional[str] = None  # the most common of its cells'
    cache_states: dict[str, int] = field(default_factory=dict)
    family: list[str] = field(default_factory=list)  # the keys merged into it
    resolution_rel: Optional[float] = None  # what the run could resolve in it


@dataclass
class JudgementRow(Record):
    """The outcome of one (segment class, rank) cell (perfvar.stats.model.Judgement)."""

    segment: str
    rank: int
    status: str  # "ok", "slow", "below precision", "too few samples", ...
    n: int = 0
    median_ns: Optional[float] = None
    shift_ns: Optional[float] = None
    shift_rel: Optional[float] = None
    excess_rel: Optional[float] = None
    p_value: Optional[float] = None
    q_value: Optional[float] = None
    floor_ns: Optional[float] = None
    overlap: Optional[float] = None
    cache_state: Optional[str] = None
    context_bytes: Optional[int] = None
    blocks: Optional[int] = None
    steady_share: Optional[float] = None
    excess_ci_rel: Optional[list[float]] = None
