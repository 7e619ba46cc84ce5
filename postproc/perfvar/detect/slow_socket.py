"""Detector "slow socket": the ranks of one socket all slower alike, its node's other
sockets not.

The slow cores of at least 90 % of a socket's ranks, shifted alike, on a node that is
not slow as a whole (perfvar.detect.slow_node folds those first), are named once as
the socket (perfvar.detect.levels). Pure; thread-safe.
"""

from __future__ import annotations

from perfvar.detect import levels, slow_core, slow_node
from perfvar.detect.finding import GROUP, FindingKind
from perfvar.units import fmt_pct

KIND = "slow_socket"
RULE = levels.Rule(
    KIND, levels.SOCKET, slow_core.KIND, levels.shift_agrees, "shift_rel"
)

# (found, places) -> (the level findings, the findings left once folded)
detect = levels.detector(RULE)


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
