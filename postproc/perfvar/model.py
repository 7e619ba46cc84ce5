"""Data shared by the detectors: filtered (segment, rank) cells and anomalies.

Every detector is a function ``detect(prepared, params) -> DetectorResult``: pure,
over arrays, thread-safe. Times are ns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Union

import numpy as np

from perfvar.cache_state import CacheState
from perfvar.filters import OsFilterInfo
from perfvar.reader_meta import Calibration


@dataclass
class Cell:
    """The samples of one segment class on one rank, after filter_cost and filter_os."""

    segment: int
    rank: int
    raw_n: int  # samples read from the trace
    samples_ns: np.ndarray  # kept samples, ns (timer overhead already subtracted)
    os_info: OsFilterInfo
    cpu: Optional[int] = None  # the CPU most of these segments started on
    # The cache state it is judged with (perfvar.cache_state; None: the rank's flush-0
    # calibration, as when no state was chosen) and the context that chose it.
    state: Optional[CacheState] = None
    state_target: Optional[str] = None  # the state the context asked for
    context_bytes: Optional[int] = None  # median bytes the preceding MPI call moved

    @property
    def n(self) -> int:
        return int(self.samples_ns.size)


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
    samples: np.ndarray  # raw samples (reader_otf2.SAMPLE_DTYPE), for CPU checks
    segment_ids: list[str]  # segment index -> display id ("S0", ...)
    os_filter_processes: int = 1  # processes filter_os ran in (informational)


@dataclass
class DetectParams:
    """Detector settings (see DESIGN.md "Detection")."""

    alpha: float = 0.05  # overlap must be below this to call a difference significant
    min_samples: int = 8  # filtered samples a cell needs to be judged
    peers: str = "robust"  # "robust": leave already-shifted ranks out of the peers


@dataclass
class Anomaly:
    """One finding; ``excess_ns``/``overlap``/``segment`` are None where meaningless."""

    kind: str  # "slow_segment", "migrated"
    rank: int
    host: Optional[str]
    cpu: Optional[int]
    segment: Optional[str]  # display id, e.g. "S2"
    excess_ns: Optional[float]
    overlap: Optional[float]
    evidence: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "rank": self.rank,
            "host": self.host,
            "cpu": self.cpu,
            "segment": self.segment,
            "excess_ns": self.excess_ns,
            "overlap": self.overlap,
            "evidence": self.evidence,
        }


@dataclass
class Judgement:
    """The outcome for one (segment, rank) cell."""

    segment: str
    rank: int
    status: str  # "ok", "slow", "below precision", "too few samples",
    #              "no calibration", "single rank", "no peers"
    n: int
    median_ns: Optional[float] = None
    shift_ns: Optional[float] = None
    overlap: Optional[float] = None
    cache_state: Optional[str] = None  # label of the calibration state used
    context_bytes: Optional[int] = None  # what chose it (None: unknown context)

    def to_json(self) -> dict[str, Any]:
        return {
            "segment": self.segment,
            "rank": self.rank,
            "status": self.status,
            "n": self.n,
            "median_ns": self.median_ns,
            "shift_ns": self.shift_ns,
            "overlap": self.overlap,
            "cache_state": self.cache_state,
            "context_bytes": self.context_bytes,
        }


@dataclass
class DetectorResult:
    anomalies: list[Anomaly] = field(default_factory=list)
    judgements: list[Judgement] = field(default_factory=list)
