"""The analysis result as typed data: what perfvar.analysis.analyze returns, what
analysis.json holds (``Analysis.to_json()`` / ``Analysis.from_json()``), what the
reports, perfvar.open and the validation kit read by attribute.

A leaf of the package: it imports no stage (postproc/.importlinter), so every stage
and entry point may read it. ``record`` is the dataclass <-> JSON mapping; the model
is in ``findings`` (one Finding type for every kind), ``tables`` (ranks, segment
classes, judgements) and ``model`` (the whole, with its format version).
"""

from perfvar.result.findings import Consequence, Finding
from perfvar.result.model import (
    FORMAT,
    Analysis,
    Ended,
    Params,
    RankEnd,
    ResultFormatError,
    Summary,
    load,
)
from perfvar.result.tables import JudgementRow, RankRow, SegmentClass

__all__ = [
    "FORMAT",
    "Analysis",
    "Consequence",
    "Ended",
    "Finding",
    "JudgementRow",
    "Params",
    "RankEnd",
    "RankRow",
    "ResultFormatError",
    "SegmentClass",
    "Summary",
    "load",
]
