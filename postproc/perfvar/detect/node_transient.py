"""Detector "node transient": one slow phase on the ranks of a node at once.

A hiccup of a whole node (its firmware, a file system client, the host of a
virtual node taking its CPUs) slows all its ranks in the same window. The slow phases
(perfvar.detect.slow_phase) of at least 90 % of a node's ranks whose windows overlap
by half of each are named once as a node-wide transient with the window
(perfvar.detect.levels); like a slow phase it came and went and names no anomalous
core. Pure; thread-safe.
"""

from __future__ import annotations

from perfvar.detect import levels, slow_phase
from perfvar.detect.finding import GROUP, AnomalyJson, FindingKind
from perfvar.units import fmt_pct

KIND = "node_transient"
RULE = levels.Rule(
    KIND, levels.NODE, slow_phase.KIND, levels.window_agrees, "excess_rel"
)

# (found, places) -> (the level findings, the findings left once folded)
detect = levels.detector(RULE)


def describe(a: AnomalyJson, labels: dict[str, str]) -> str:
    """One sentence with the evidence of a node-wide transient."""
    ev = a["evidence"]
    seg = a.get("segment")
    where = f" in {labels.get(seg, seg)}" if seg else ""
    return (
        f"{levels.where_level(a)} had a node-wide transient: {levels.found_clause(ev)} "
        f"slower{where} by {levels.size_range(ev, 'excess_rel')} from "
        f"{a['start_ns'] / 1e9:.2f} s to {a['end_ns'] / 1e9:.2f} s, "
        f"{levels.peers_clause(ev)}"
    )


FINDING = FindingKind(
    name=KIND,
    verdict=True,
    word="node transient",
    describe=describe,
    phrase=lambda a: f"node transient {fmt_pct(a['evidence']['excess_rel'])}",
    size_key="excess_rel",
    in_class=slow_phase.FINDING.in_class,
    transient=True,
    subject=GROUP,
    summary_key="node_transient_ranks",
)
