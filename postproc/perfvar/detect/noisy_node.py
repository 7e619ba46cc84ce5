"""Detector "noisy node": time off the CPU measured on the ranks of one node alike.

A node whose every core loses time to something else (a daemon, a misbehaving
service, interrupts steered to every core) makes a noisy core of each of its ranks.
The noisy cores (perfvar.detect.noisy_core) of at least 90 % of a node's ranks are
named once as the node (perfvar.detect.levels). Pure; thread-safe.
"""

from __future__ import annotations

from collections.abc import Sequence

from perfvar.detect import levels, noisy_core
from perfvar.detect.finding import GROUP, AnomalyJson, FindingKind
from perfvar.stats.model import Anomaly
from perfvar.units import fmt_pct

KIND = "noisy_node"


def _all_agree(members: Sequence[Anomaly]) -> list[bool]:
    """Time lost off the CPU is the node's whatever its share on each rank: the
    interruptions fall where they fall."""
    return [True] * len(members)


RULE = levels.Rule(KIND, levels.NODE, noisy_core.KIND, _all_agree, "lost_fraction")

# (found, places) -> (the level findings, the findings left once folded)
detect = levels.detector(RULE)


def describe(a: AnomalyJson, labels: dict[str, str]) -> str:
    """One sentence with the evidence of a noisy node."""
    ev = a["evidence"]
    return (
        f"{levels.where_level(a)} is a noisy node: {levels.found_clause(ev)} lost "
        f"{levels.size_range(ev, 'lost_fraction', signed=False)} of their compute "
        "time off the CPU, "
        f"{levels.peers_clause(ev)}"
    )


FINDING = FindingKind(
    name=KIND,
    verdict=True,
    word="noisy node",
    describe=describe,
    phrase=lambda a: "noisy node "
    + fmt_pct(a["evidence"]["lost_fraction"], signed=False),
    size_key="lost_fraction",
    subject=GROUP,
    summary_key="noisy_node_ranks",
)
