"""Detector "slow socket": the ranks of one socket all slower alike, its node's other
sockets not.

The slow cores of at least 90 % of a socket's ranks, shifted alike, on a node that is
not slow as a whole (perfvar.detect.slow_node folds those first), are named once as
the socket (perfvar.detect.levels). Pure; thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping

from perfvar.detect import levels, slow_core, slow_node
from perfvar.detect.finding import GROUP, FindingKind
from perfvar.stats.model import Anomaly, DetectorResult
from perfvar.units import fmt_pct

KIND = "slow_socket"
RULE = levels.Rule(
    KIND, levels.SOCKET, slow_core.KIND, levels.shift_agrees, "shift_rel"
)


def detect(
    found: list[Anomaly], places: Mapping[int, levels.Place]
) -> tuple[DetectorResult, list[Anomaly]]:
    """(the slow sockets, the findings left once their ranks' slow cores are folded)."""
    named, left = levels.fold(RULE, found, places)
    return DetectorResult(anomalies=named), left


FINDING = FindingKind(
    name=KIND,
    verdict=True,
    word="slow socket",
    describe=slow_node.describe,
    phrase=lambda a: f"slow socket {fmt_pct(a['evidence']['shift_rel'])}",
    size_key="shift_rel",
    subject=GROUP,
    summary_key="slow_socket_ranks",
)
