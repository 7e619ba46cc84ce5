"""A finding reported under its cause: the one form of a ``consequences`` entry of
analysis.json, whatever the cause (waiting: perfvar.verdict.headline; time off the
CPU: perfvar.verdict.off_cpu; a CPU shared with other ranks:
perfvar.verdict.time_slicing). Pure function; thread-safe.
"""

from __future__ import annotations

from typing import Any, Optional

from perfvar.stats.model import Anomaly


def consequence(
    a: Anomaly,
    cause: str,
    cause_rank: Optional[int],
    text: str,
    test: str,
    figures: dict[str, Any],
) -> dict[str, Any]:
    """The analysis.json entry of finding ``a`` reported under ``cause`` (the rank
    that caused it, None where no rank did): what it was, its size (``excess_rel``:
    the relative excess, else the shift), the ``figures`` that explain it, the
    sentence and the test that decided it."""
    ev = a.evidence or {}
    shift = ev.get("shift_rel")
    return {
        "rank": a.rank,
        "segment": a.segment,
        "kind": a.kind,
        "cause": cause,
        "excess_ns": a.excess_ns,
        "excess_rel": ev.get("excess_rel", shift),
        "shift_rel": shift,
        **figures,
        "cause_rank": cause_rank,
        "text": text,
        "test": test,
        "anomaly": a.to_json(),
    }
