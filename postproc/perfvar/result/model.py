"""The whole of analysis.json: :class:`Analysis` and its run-wide parts.

``format`` (first in the file) is the layout's version: FORMAT, raised when a key is
renamed, removed or changes meaning (adding keys does not raise it). A file without
it predates the field and has format 1's layout; a key a file lacks (written by an
older perfvar, or a partial document) reads as the field's default, and keys this
model does not know are left out. Reading a newer format raises
ResultFormatError rather than misreading it. Times ns. Plain data; not thread-safe
to mutate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional

from perfvar.errors import TraceError
from perfvar.result.findings import Consequence, Finding
from perfvar.result.record import Json, Record, field
from perfvar.result.tables import JudgementRow, RankRow, SegmentClass

FORMAT = 1


class ResultFormatError(TraceError):
    """An analysis.json of a format this perfvar cannot read."""


@dataclass
class Params(Record):
    """How the analysis judged (``params``): its floors, thresholds and engine."""

    min_samples: Optional[int] = None  # samples a cell needs to be judged
    peers: Optional[str] = None  # "robust" or "all"
    alpha_meaning: Optional[str] = None
    segment_floor: Optional[float] = None  # the detectors' relative effect floors
    core_floor: Optional[float] = None
    noise_floor: Optional[float] = None
    phase_floor: Optional[float] = None
    min_cost: Optional[float] = None  # delay cost share a headline finding needs
    min_samples_os_filter: Optional[int] = None
    engine: dict[str, Any] = field(default_factory=dict)  # perfvar.parallel's
    os_filter: Optional[str] = None


@dataclass
class RankEnd(Record):
    """How one rank's records ended (perfvar.read.recover)."""

    rank: int
    state: str
    signal: Optional[int] = None  # the signal that ended it
    sent_by: Optional[str] = None
    how: str = ""
    end_s: float = 0.0  # s since the earliest rank's start
    in_mpi_call: bool = False
    lost_records: int = 0


@dataclass
class Ended(Record):
    """How the job ended (``ended``): which ranks ended early, which first."""

    recovered: bool = False
    ended_early_ranks: list[int] = field(default_factory=list)
    first_to_end: Optional[int] = None
    ranks: list[RankEnd] = field(default_factory=list)


@dataclass
class Summary(Record):
    """Counts and the ranks of each finding (``summary``). ``kind_ranks``: the ranks
    of each kind that has a summary key (perfvar.detect.summary_keys: "slow_ranks",
    ...), written in place, so a new kind needs no field here."""

    n_ranks: int = 0
    unreadable_ranks: list[int] = field(default_factory=list)
    n_segment_classes: int = 0
    n_segment_classes_judged: int = 0
    n_segment_families: int = 0
    judged_compute_share: Optional[float] = None
    judgements: dict[str, int] = field(default_factory=dict)  # status -> cells
    anomalous_ranks: list[int] = field(default_factory=list)
    transient_ranks: list[int] = field(default_factory=list)
    imbalance_ranks: list[int] = field(default_factory=list)
    minor_ranks: list[int] = field(default_factory=list)
    consequence_ranks: list[int] = field(default_factory=list)
    cost_known: bool = False
    kind_ranks: dict[str, list[int]] = field(default_factory=dict, splice=True)
    ended_early_ranks: list[int] = field(default_factory=list)


@dataclass
class Analysis(Record):
    """analysis.json. ``clock``, ``run``, ``kinds``, ``wait_states`` and
    ``decomposition`` are the JSON objects of the stages that make them
    (perfvar.read.meta, perfvar.detect.kinds_json, perfvar.verdict.wait_states,
    perfvar.stats.decompose)."""

    format: int = FORMAT
    generated_by: str = ""
    trace: str = ""  # the trace directory, absolute
    alpha: Optional[float] = None  # false discovery rate of each detector's tests
    params: Params = field(default_factory=Params)
    timer_resolution_hz: Optional[float] = None
    clock: dict[str, Any] = field(default_factory=dict)
    run: dict[str, Any] = field(default_factory=dict)
    ranks: list[RankRow] = field(default_factory=list)
    segments: list[SegmentClass] = field(default_factory=list)
    kinds: dict[str, dict[str, Any]] = field(default_factory=dict)
    anomalies: list[Finding] = field(default_factory=list)  # headline, by delay cost
    minor: list[Finding] = field(default_factory=list)  # below the cost threshold
    consequences: list[Consequence] = field(default_factory=list)
    wait_states: dict[str, Any] = field(default_factory=dict)
    judgements: list[JudgementRow] = field(default_factory=list)
    decomposition: dict[str, Any] = field(default_factory=dict)
    ended: Ended = field(default_factory=Ended)
    summary: Summary = field(default_factory=Summary)
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, doc: Json) -> Analysis:
        """The Analysis of an analysis.json document; ResultFormatError for a newer
        format than FORMAT, or a document that is not one."""
        version = doc.get("format", 1) if isinstance(doc, dict) else None
        if not isinstance(version, int) or isinstance(version, bool):
            raise ResultFormatError(f"not an analysis.json (format {version!r})")
        if version > FORMAT:
            raise ResultFormatError(
                f"analysis.json format {version} is newer than this perfvar reads "
                f"(format {FORMAT}); analyse the trace again or update perfvar"
            )
        try:
            return super().from_json({**doc, "format": FORMAT})
        except (TypeError, KeyError, AttributeError) as exc:
            raise ResultFormatError(f"not an analysis.json: {exc}") from None

    def labels(self) -> dict[str, str]:
        """Segment class id -> its label ("FROM -> TO")."""
        return {s.id: s.label for s in self.segments}


def load(path: str) -> Analysis:
    """Read an analysis.json file (OSError, ValueError on bad JSON,
    ResultFormatError on a format this perfvar cannot read)."""
    with open(path, encoding="utf-8") as fh:
        return Analysis.from_json(json.load(fh))
