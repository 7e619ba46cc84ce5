"""The findings of analysis.json: one Finding type for every kind, and a finding
reported under its cause (Consequence).

A Finding holds what every kind has (its kind, rank, where it ran, its segment
class, its excess and delay cost) and the kind's own figures in ``evidence``, as its
detector wrote them: a new kind of finding is a new detector (perfvar.detect), not a
new class here. What a kind is (verdict, transient, subject, words) is in
analysis.json's ``kinds`` and in perfvar.detect.KINDS. Times ns, shares as
fractions (0.05 = 5 %). Plain data; not thread-safe to mutate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from perfvar.result.record import Json, Record, field


@dataclass
class Finding(Record):
    """An anomaly or an informative finding of one rank (``anomalies``, ``minor``)."""

    kind: str  # the detector's KIND ("slow_segment", ...)
    rank: int
    host: Optional[str] = None
    cpu: Optional[int] = None
    segment: Optional[str] = None  # segment class id ("S3"); None: all its classes
    excess_ns: Optional[float] = None  # time lost to it over the run
    cost_ns: Optional[float] = None  # its delay cost to the job (verdict.delay_cost)
    cost_share: Optional[float] = None  # the same over wall time x ranks
    evidence: dict[str, Any] = field(default_factory=dict)  # the kind's figures
    # A window of the run (ns since the trace's start); both written when either is.
    start_ns: Optional[float] = field(default=None, omit_none=True)
    end_ns: Optional[float] = field(default=None, omit_none=True)
    # Its sentence, as the text report prints it (None inside a consequence).
    description: Optional[str] = field(default=None, omit_none=True)

    def to_json(self) -> Json:
        out = super().to_json()
        if self.start_ns is not None or self.end_ns is not None:
            # A window's two ends go together, before the description.
            description = out.pop("description", None)
            out["start_ns"], out["end_ns"] = self.start_ns, self.end_ns
            if description is not None:
                out["description"] = description
        return out


@dataclass
class Consequence(Record):
    """A finding reported under its cause (waiting on another rank, time off the
    CPU, a shared CPU): perfvar.verdict.consequence. ``figures``: the cause's own
    figures (e.g. ``after_waiting_ns``, ``off_cpu_fraction``), written in place."""

    rank: int
    segment: Optional[str]
    kind: str
    cause: Optional[str] = None  # None: written before causes were named (waiting)
    excess_ns: Optional[float] = None
    excess_rel: Optional[float] = None  # relative excess, else the shift
    shift_rel: Optional[float] = None
    figures: dict[str, Any] = field(default_factory=dict, splice=True)
    cause_rank: Optional[int] = None  # the rank that caused it; None: no rank
    text: str = ""  # its sentence
    test: str = ""  # the test that decided it
    anomaly: Optional[Finding] = None  # the finding as its detector made it
