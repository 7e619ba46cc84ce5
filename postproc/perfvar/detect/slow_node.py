"""Detector "slow node": the ranks of one node all slower than the other nodes' alike.

A node throttled, mis-configured or with a slow memory channel slows every rank on
it by the same shift. The slow cores (perfvar.detect.slow_core) of at least 90 % of
a node's ranks, shifted alike (within 1.5x of each other), are named once as the
node (perfvar.detect.levels: the rule, the peers, the members). Pure; thread-safe.
"""

from __future__ import annotations

from perfvar.detect import levels, slow_core
from perfvar.detect.finding import GROUP, AnomalyJson, FindingKind
from perfvar.units import fmt_pct

KIND = "slow_node"
RULE = levels.Rule(KIND, levels.NODE, slow_core.KIND, levels.shift_agrees, "shift_rel")

# (found, places) -> (the level findings, the findings left once folded)
detect = levels.detector(RULE)


def describe(a: AnomalyJson, labels: dict[str, str]) -> str:
    """One sentence with the evidence of a slow node (or socket)."""
    ev = a["evidence"]
    what = "socket" if ev["level"] == levels.SOCKET else "node"
    return (
        f"{levels.where_level(a)} is a slow {what}: {levels.found_clause(ev)} slower "
        f"in all their segment classes by {levels.size_range(ev, 'shift_rel')}, "
        f"{levels.peers_clause(ev)}{levels.probes_clause(ev)}: a slower {what}"
    )


FINDING = FindingKind(
    name=KIND,
    verdict=True,
    word="slow node",
    describe=describe,
    phrase=lambda a: f"slow node {fmt_pct(a['evidence']['shift_rel'])}",
    size_key="shift_rel",
    subject=GROUP,
    summary_key="slow_node_ranks",
)
