"""The machine's levels: findings of many ranks folded into one of their node or socket.

At scale the hardware that goes wrong is as often a node (throttled, a bad memory
channel) or a socket as a core. The rank detectors judge each rank against all its
peers; where the ranks of one node (or one socket) are all found alike, the verdict
names that node (or socket) once, with the ranks under it, and its ranks' own findings
become its members instead of findings on their own. The rule, for a level kind
(slow_node, slow_socket, noisy_node, node_transient) over the rank kind it groups:

* the job has at least two groups at the level (two nodes; two sockets), and the
  group holds at most ``MAX_JOB_SHARE`` of the job's ranks: its ranks' findings were
  judged against all their peers, which are then mostly the other groups' ranks (the
  evidence counts those groups and ranks);
* at least ``LEVEL_SHARE`` (90 %) of the group's ranks, and two or more, carry a
  finding of that kind that agrees with the group's (``agrees``: the same shift
  within ``AGREE_FACTOR``; for a transient, the same window);
* a slow socket is one whose node is not slow as a whole (then the node is named).

A rank whose finding does not agree (a core slower still on a slow node) keeps its
own finding: a single core stays a core. The level's delay cost is the sum of its
members' (each charged for the waiting it caused). Where the job runs on one node of
one socket (two ranks on a workstation) no level has peers and nothing changes.

Pure functions over the verdict's findings; thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from perfvar.stats import core_speed
from perfvar.stats.model import Anomaly, DetectorResult
from perfvar.units import compact_ranges, fmt_pct

NODE = "node"
SOCKET = "socket"
# Of a group's ranks, found alike: all but a few, so that a rank a detector could not
# judge (its calibration failed, its phase split in two) does not hide its node.
LEVEL_SHARE = 0.9
MIN_MEMBERS = 2
MAX_JOB_SHARE = 0.5  # of the job's ranks a group may hold: the rest are its peers
# Members' shifts agree when within this factor of the group's median shift (log
# scale): +5 % beside +7.5 % agree, a core +15 % on a +5 % node does not.
AGREE_FACTOR = 1.5


@dataclass(frozen=True)
class Place:
    """Where a rank ran: its node (host) and socket (package; None where unknown)."""

    node: Optional[str]
    socket: Optional[int] = None


Group = tuple[Optional[str], Optional[int]]  # (node, socket or None for the node)


def group_of(place: Place, level: str) -> Optional[Group]:
    """The group of a rank at ``level``; None where its place does not tell."""
    if place.node is None or (level == SOCKET and place.socket is None):
        return None
    return (place.node, place.socket if level == SOCKET else None)


def groups(places: Mapping[int, Place], level: str) -> dict[Group, list[int]]:
    """The ranks of each group at ``level``, ranks in order."""
    out: dict[Group, list[int]] = {}
    for rank in sorted(places):
        g = group_of(places[rank], level)
        if g is not None:
            out.setdefault(g, []).append(rank)
    return out


def shift_agrees(members: Sequence[Anomaly], key: str = "shift_rel") -> list[bool]:
    """Each member's shift (evidence ``key``, relative) within AGREE_FACTOR of the
    members' median shift, on the log scale."""
    shifts = np.log1p([float(m.evidence.get(key) or 0.0) for m in members])
    centre = float(np.median(shifts))
    if centre <= 0:
        return [False] * len(members)
    return [centre / AGREE_FACTOR <= s <= centre * AGREE_FACTOR for s in shifts]


def window_agrees(members: Sequence[Anomaly]) -> list[bool]:
    """Each member's window overlapping the members' median window by half of each."""
    lo = float(np.median([m.start_ns for m in members]))
    hi = float(np.median([m.end_ns for m in members]))

    def overlaps(m: Anomaly) -> bool:
        ov = min(hi, m.end_ns) - max(lo, m.start_ns)
        return ov > 0 and ov >= 0.5 * (hi - lo) and ov >= 0.5 * (m.end_ns - m.start_ns)

    return [overlaps(m) for m in members]


@dataclass(frozen=True)
class Rule:
    """A level kind: the rank kind it groups, at which level, and how its members
    agree (members -> one bool each)."""

    kind: str
    level: str
    member_kind: str
    agrees: Callable[[Sequence[Anomaly]], list[bool]]
    size_key: str  # the members' evidence key the level's figures summarise


Detect = Callable[
    [list[Anomaly], Mapping[int, Place]], tuple[DetectorResult, list[Anomaly]]
]


def detector(rule: Rule) -> Detect:
    """The ``detect`` of a level kind's module: (found, places) -> (its findings, the
    findings left once their members are folded into them)."""

    def detect(
        found: list[Anomaly], places: Mapping[int, Place]
    ) -> tuple[DetectorResult, list[Anomaly]]:
        named, left = fold(rule, found, places)
        return DetectorResult(anomalies=named), left

    return detect


def fold(
    rule: Rule, found: list[Anomaly], places: Mapping[int, Place]
) -> tuple[list[Anomaly], list[Anomaly]]:
    """(the level findings of ``rule``, the findings left): the members of each level
    finding leave ``found``."""
    by_group = groups(places, rule.level)
    if len(by_group) < 2:
        return [], found
    nranks = len(places)
    candidates: dict[Group, list[Anomaly]] = {}
    for a in found:
        g = group_of(places.get(a.rank, Place(None)), rule.level)
        if a.kind == rule.member_kind and g is not None:
            candidates.setdefault(g, []).append(a)
    levels, taken = [], set()
    for g, members in candidates.items():
        ranks = by_group[g]
        if len(ranks) > MAX_JOB_SHARE * nranks:
            continue
        agreeing = [m for m, ok in zip(members, rule.agrees(members)) if ok]
        if len(agreeing) < max(MIN_MEMBERS, LEVEL_SHARE * len(ranks)):
            continue
        levels.append(_level(rule, g, ranks, agreeing, by_group))
        taken.update(id(m) for m in agreeing)
    return levels, [a for a in found if id(a) not in taken]


def _level(
    rule: Rule,
    group: Group,
    ranks: list[int],
    members: list[Anomaly],
    by_group: Mapping[Group, list[int]],
) -> Anomaly:
    """The level finding of ``members`` in ``group``."""
    node, socket = group
    sizes = np.array([float(m.evidence.get(rule.size_key) or 0.0) for m in members])
    costs = [m.cost_ns for m in members]
    shares = [m.cost_share for m in members]
    peers = [r for g, rs in by_group.items() if g != group for r in rs]
    first = min(members, key=lambda m: m.rank)
    evidence: dict[str, Any] = {
        "level": rule.level,
        "node": node,
        "socket": socket,
        "ranks": ranks,
        "found": len(members),
        rule.size_key: float(np.median(sizes)),
        f"{rule.size_key}_range": [float(sizes.min()), float(sizes.max())],
        # What the members' fixed-work probes said (perfvar.stats.core_speed): how
        # many were measured, and how many of them ran slower (a slower node).
        "probes_measured": sum(_probes(m) is not None for m in members),
        "probes_slower": sum(_probes(m) == core_speed.SLOWER for m in members),
        "peers_groups": len(by_group) - 1,
        "peers_ranks": len(peers),
        "members": [_member(m, rule.size_key) for m in sorted(members, key=_rank)],
    }
    return Anomaly(
        kind=rule.kind,
        rank=first.rank,
        host=node,
        cpu=None,
        # the class its members share (a node-wide phase of one class), else none
        segment=(
            first.segment if all(m.segment == first.segment for m in members) else None
        ),
        excess_ns=_mean(m.excess_ns for m in members),
        evidence=evidence,
        start_ns=_median_of(m.start_ns for m in members),
        end_ns=_median_of(m.end_ns for m in members),
        cost_ns=None if None in costs else float(sum(costs)),
        cost_share=None if None in shares else float(sum(shares)),
    )


def _probes(m: Anomaly) -> Optional[str]:
    """A member's probes' verdict (slower core, more work, could not tell), None
    without probes in its window."""
    cs = (m.evidence or {}).get("core_speed") or {}
    return cs.get("verdict") if cs.get("probes_shift_rel") is not None else None


def probes_clause(ev: dict[str, Any]) -> str:
    """ "; its fixed-work probes ran slower on 64 of its 64 ranks measured" where the
    members had probes, "" where none had."""
    n = ev.get("probes_measured") or 0
    if not n:
        return ""
    slower = ev["probes_slower"]
    return f"; its fixed-work probes ran slower on {slower} of the {n} ranks measured"


def _rank(a: Anomaly) -> int:
    return a.rank


def _member(m: Anomaly, size_key: str) -> dict[str, Any]:
    """What a level finding keeps of one member: its rank, CPU, size and cost."""
    return {
        "rank": m.rank,
        "cpu": m.cpu,
        size_key: m.evidence.get(size_key),
        "cost_ns": m.cost_ns,
    }


def _mean(values) -> Optional[float]:
    v = [x for x in values if x is not None]
    return float(np.mean(v)) if v else None


def _median_of(values) -> Optional[float]:
    v = [x for x in values if x is not None]
    return float(np.median(v)) if v else None


def where_level(a: dict[str, Any]) -> str:
    """ "node n07 (64 ranks 448-511)", "node n07 socket 1 (32 ranks 480-511)"."""
    ev = a["evidence"]
    socket = f" socket {ev['socket']}" if ev.get("socket") is not None else ""
    ranks = ev["ranks"]
    return f"node {ev['node']}{socket} ({len(ranks)} ranks {compact_ranges(ranks)})"


def peers_clause(ev: dict[str, Any]) -> str:
    """ "judged against the 15 other nodes (960 ranks)"."""
    n = ev["peers_groups"]
    return (
        f"judged against the {n} other {ev['level']}{'s' if n != 1 else ''} "
        f"({ev['peers_ranks']} ranks)"
    )


def found_clause(ev: dict[str, Any]) -> str:
    """ "all 64 of its ranks" or "60 of its 64 ranks"."""
    n, of = ev["found"], len(ev["ranks"])
    return f"all {of} of its ranks" if n == of else f"{n} of its {of} ranks"


def size_range(ev: dict[str, Any], key: str, signed: bool = True) -> str:
    """ "+4.9% (+4.6%..+5.1% across them)"."""
    lo, hi = ev[f"{key}_range"]
    lo, hi, mid = (fmt_pct(x, signed=signed) for x in (lo, hi, ev[key]))
    return f"{mid} ({lo}..{hi} across them)"


def member_ranks(rank: int, evidence: Optional[dict[str, Any]]) -> list[int]:
    """The ranks a finding names: a level finding's members, else its own rank."""
    members = (evidence or {}).get("members") if evidence else None
    return [m["rank"] for m in members] if members else [rank]
