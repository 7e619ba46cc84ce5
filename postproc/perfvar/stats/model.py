"""Data shared by the detectors: filtered (segment, rank) cells and anomalies.

Every detector is a function ``detect(prepared, params) -> DetectorResult``: pure,
over arrays, thread-safe. Times are ns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Optional, Union

import numpy as np

from perfvar.read.cache_state import CacheState
from perfvar.read.meta import Calibration
from perfvar.stats.filters import OsFilterInfo
from perfvar.stats.order import median


@dataclass
class Cell:
    """The samples of one segment class on one rank, after filter_cost and filter_os."""

    segment: int
    rank: int
    raw_n: int  # samples read from the trace
    samples_ns: np.ndarray  # kept samples, ns (timer overhead already subtracted)
    os_info: OsFilterInfo
    cpu: Optional[int] = None  # the CPU most of these segments started on
    # The cache state it is judged with (perfvar.read.cache_state; None: the rank's
    # flush-0 calibration, as when no state was chosen) and the context that chose it.
    state: Optional[CacheState] = None
    state_target: Optional[str] = None  # the state the context asked for
    context_bytes: Optional[int] = None  # median bytes the preceding MPI call moved
    # Start of each kept sample, ns since the trace's time origin, and the CPU it
    # began on (aligned with samples_ns); what filter_os removed, kept for the noise
    # accounting: durations (ns), starts (ns since the origin) and CPUs.
    start_ns: np.ndarray = field(default_factory=lambda: np.empty(0))
    samples_cpu: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))
    removed_ns: np.ndarray = field(default_factory=lambda: np.empty(0))
    removed_start_ns: np.ndarray = field(default_factory=lambda: np.empty(0))
    removed_cpu: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))

    @classmethod
    def of_filtered(
        cls,
        segment: int,
        rank: int,
        values: np.ndarray,
        start_ns: np.ndarray,
        cpus: np.ndarray,
        kept: np.ndarray,
        info: OsFilterInfo,
        **more: Any,
    ) -> Cell:
        """The cell of these samples (durations and starts in ns, CPUs; aligned) with
        filter_os's mask ``kept``: the kept and the removed ones apart. ``more``: the
        other fields (cpu, state, ...)."""
        return cls(
            segment=segment,
            rank=rank,
            raw_n=int(values.size),
            samples_ns=values[kept],
            os_info=info,
            start_ns=start_ns[kept],
            samples_cpu=cpus[kept],
            removed_ns=values[~kept],
            removed_start_ns=start_ns[~kept],
            removed_cpu=cpus[~kept],
            **more,
        )

    @property
    def n(self) -> int:
        return int(self.samples_ns.size)

    # Computed once: a cell's samples are never changed in place (a detector that
    # needs other samples makes another Cell).
    @cached_property
    def median_ns(self) -> float:
        """Median of the kept samples (ns)."""
        return median(self.samples_ns)

    @cached_property
    def log_median(self) -> float:
        """Median of the kept samples' log-durations (perfvar.stats.compare.log_ns)."""
        from perfvar.stats.compare import log_ns

        return median(log_ns(self.samples_ns))


def cell_calibration(
    prep: Prepared, cell: Cell
) -> Optional[Union[CacheState, Calibration]]:
    """What a cell is judged against: its cache state, else its rank's calibration.
    Both have t_min_ns and t_diff_ns (ns; None when unknown)."""
    if cell.state is not None:
        return cell.state
    return prep.calibration.get(cell.rank)


@dataclass
class Prepared:
    """What the detectors see."""

    cells: dict[tuple[int, int], Cell]  # (segment, rank) -> Cell
    calibration: dict[int, Calibration]  # rank -> its calibration (may be unknown)
    hosts: dict[int, Optional[str]]  # rank -> host name
    samples: np.ndarray  # raw samples (read.samples.SAMPLE_DTYPE), for CPU checks
    segment_ids: list[str]  # segment index -> display id ("S0", ...)
    # The index of the fixed-work probes' pseudo-class (perfvar.stats.probes), None
    # without probes. Its cells are fixed work, so only the core and phase detectors
    # use them.
    probe_segment: Optional[int] = None
    # Each traced thread's use of the CPUs (perfvar.stats.cpu_use.CpuUse), when the
    # parts of a parallel analysis made it; else cpu_use.of makes it from ``samples``.
    cpu_use: Optional[dict[tuple[int, int], Any]] = None
    # Each rank's time off its CPU measured by the counters (perfvar.stats.cpu_time,
    # rank -> RankCpuTime); empty when the run read no task clock.
    cpu_time: dict[int, Any] = field(default_factory=dict)
    # Each rank's counter reads over the run (perfvar.stats.cpu_time.reads_by_rank,
    # rank -> RankReads), for report.html's counter timeline; empty without counters.
    counters: dict[int, Any] = field(default_factory=dict)
    # The instruction counts of the reads (perfvar.stats.work.Work), which tell a slow
    # rank's more work from a slower core; None: not read (as without counters).
    work: Optional[Any] = None
    # What the detectors derive from the cells once (perfvar.stats.cells.class_pool);
    # not an init field, so a Prepared made by dataclasses.replace starts empty.
    derived: dict[Any, Any] = field(default_factory=dict, init=False, repr=False)


@dataclass
class DetectParams:
    """Detector settings (see DESIGN.md "Detection" and perfvar.verdict_rules).

    Floors are relative effects (0.002 = 0.2 %); every effect must also exceed the
    rank's t_diff (ns) for the cell's cache state.
    """

    alpha: float = 0.05  # false discovery rate (Benjamini-Hochberg) per family of tests
    min_samples: int = 8  # filtered samples a cell needs to be judged
    peers: str = "robust"  # "robust": leave already-shifted ranks out of the peers
    segment_floor: float = 0.002  # slow_segment: excess over peers (and own core)
    core_floor: float = 0.02  # slow_core: common excess over peers in all classes
    noise_floor: float = 0.02  # noisy_core: fraction of compute time lost
    phase_floor: float = 0.03  # slow_phase: excess over the rank's own baseline


@dataclass
class Anomaly:
    """One finding; ``excess_ns``/``segment`` are None where meaningless.

    ``excess_ns``: the time the anomaly costs per affected segment (slow_segment,
    slow_phase), per segment of the rank on average (slow_core), or in all
    (noisy_core: the compute time lost). ``start_ns``/``end_ns``: the window of a
    slow_phase, ns since the trace's time origin.
    """

    kind: str  # a kind of perfvar.detect.KINDS
    rank: int
    host: Optional[str]
    cpu: Optional[int]
    segment: Optional[str]  # display id, e.g. "S2"
    excess_ns: Optional[float]
    evidence: dict[str, Any]
    start_ns: Optional[float] = None
    end_ns: Optional[float] = None
    # Delay cost (perfvar.verdict.delay_cost): the waiting it caused on the other
    # ranks, ns, and that as a share of wall time x ranks; None when not measurable (one
    # rank, an unsynchronised timeline) or an informational kind.
    cost_ns: Optional[float] = None
    cost_share: Optional[float] = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "kind": self.kind,
            "rank": self.rank,
            "host": self.host,
            "cpu": self.cpu,
            "segment": self.segment,
            "excess_ns": self.excess_ns,
            "cost_ns": self.cost_ns,
            "cost_share": self.cost_share,
            "evidence": self.evidence,
        }
        if self.start_ns is not None or self.end_ns is not None:  # a window's
            out["start_ns"], out["end_ns"] = self.start_ns, self.end_ns
        return out


@dataclass
class Judgement:
    """The outcome for one (segment, rank) cell."""

    segment: str
    rank: int
    status: str  # "ok", "slow", "below precision", "too few samples",
    #              "no calibration", "single rank", "no peers",
    #              "too few blocks" (too few stretches of the run hold samples of
    #              both sides for a test), "unsteady" (significant and beyond the
    #              floor, but in fewer than half the blocks: a phase or the host)
    n: int
    median_ns: Optional[float] = None
    shift_ns: Optional[float] = None  # median minus the peers' median
    shift_rel: Optional[float] = None  # the same as a ratio - 1 (0.01 = 1 % slower)
    excess_rel: Optional[float] = None  # beyond the rank's common (core) shift
    p_value: Optional[float] = None  # one-sided t test across blocks of the run
    q_value: Optional[float] = None  # Benjamini-Hochberg over all cells tested
    floor_ns: Optional[float] = None  # effect floor applied: max(t_diff, relative)
    overlap: Optional[float] = None  # paper's per-sample resolution figure
    cache_state: Optional[str] = None  # label of the calibration state used
    context_bytes: Optional[int] = None  # what chose it (None: unknown context)
    blocks: Optional[int] = None  # blocks of the run the test used (stats_blocks)
    steady_share: Optional[float] = None  # of those, the share beyond the floor
    # 95 % interval of the excess over the blocks (relative, [low, high]); its width
    # is what this run could tell in this cell (None: not tested)
    excess_ci_rel: Optional[list[float]] = None

    def to_json(self) -> dict[str, Any]:
        return {
            "segment": self.segment,
            "rank": self.rank,
            "status": self.status,
            "n": self.n,
            "median_ns": self.median_ns,
            "shift_ns": self.shift_ns,
            "shift_rel": self.shift_rel,
            "excess_rel": self.excess_rel,
            "p_value": self.p_value,
            "q_value": self.q_value,
            "floor_ns": self.floor_ns,
            "overlap": self.overlap,
            "cache_state": self.cache_state,
            "context_bytes": self.context_bytes,
            "blocks": self.blocks,
            "steady_share": self.steady_share,
            "excess_ci_rel": self.excess_ci_rel,
        }


@dataclass
class DetectorResult:
    anomalies: list[Anomaly] = field(default_factory=list)
    judgements: list[Judgement] = field(default_factory=list)
