"""Findings of a rank that shared its CPU with other ranks of the job: time-slicing.

Ranks whose segments ran on one CPU (an oversubscribed run, a bad binding;
perfvar.detect.shared_cpu) take turns on it: each one's segments hold the others'
time slices, as wall-clock time, so a slower core, segment or phase of such a rank,
or its time off the CPU, is the sharing seen in its durations, not a finding of its
own. Tried on LULESH (8 ranks on 2 vCPUs, four to a CPU, unchanged): ranks 0 and 7
were named slow cores of +58 and +64 % by compute time and rank 1 a slow segment of
+92 %, seven of the eight ranks 71-78 % off their CPUs alike. Such a finding is
reported under the sharing (a consequence, cause ``SHARED_CPU``) and names no rank;
the shared_cpu finding says to run one rank per core. A rank whose own threads
share its CPU, and no other rank, is left alone: its segments hold its own work.

Pure functions; thread-safe.
"""

from __future__ import annotations

from typing import Any, Optional

from perfvar.detect import KINDS, subject, verdict_kind
from perfvar.detect.finding import CPU
from perfvar.stats.model import Anomaly
from perfvar.units import compact_ranges, signed_pct
from perfvar.verdict.consequence import consequence

SHARED_CPU = "a CPU shared with other ranks"
TEST = (
    "most of the rank's segments and most of the named ranks' began on one CPU "
    "of one host (perfvar.detect.shared_cpu)"
)


def others_on_its_cpu(rank: int, evidence: dict[str, Any]) -> list[int]:
    """The other ranks a shared_cpu finding of ``rank`` names (none: only its own
    threads shared its CPU)."""
    return [int(r) for r in evidence.get("ranks", []) if r != rank]


def sharing(anomalies: list[Anomaly]) -> dict[int, tuple[int, list[int]]]:
    """rank -> (its CPU, the other ranks whose segments ran on that CPU), from the
    shared_cpu findings that name other ranks."""
    out: dict[int, tuple[int, list[int]]] = {}
    for a in anomalies:
        ev = a.evidence or {}
        others = others_on_its_cpu(a.rank, ev) if subject(a.kind) == CPU else []
        if others:
            out[a.rank] = (int(ev["cpu"]), others)
    return out


def symptom_of(
    a: Anomaly, shared: dict[int, tuple[int, list[int]]]
) -> Optional[dict[str, Any]]:
    """The verdict finding ``a`` as a consequence of its rank's CPU shared with other
    ranks (a JSON-ready dict), or None where its rank ran on a CPU of its own."""
    if not verdict_kind(a.kind) or a.rank not in shared:
        return None
    cpu, others = shared[a.rank]
    kind = KINDS[a.kind]
    ev = a.evidence or {}
    size = ev.get(kind.size_key or "")
    what = a.segment if a.segment else kind.word
    said = f" ({signed_pct(size).strip()})" if size is not None else ""
    text = (
        f"rank {a.rank}'s {what}{said} is time-slicing: it shared CPU {cpu} with "
        f"rank(s) {compact_ranges(others)}"
    )
    figures = {"cpu": cpu, "sharing_ranks": others}
    return consequence(a, SHARED_CPU, a.rank, text, TEST, figures)
