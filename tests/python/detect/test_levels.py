"""The machine's levels (perfvar.detect.levels, fold_levels): the findings of a node's
or socket's ranks found alike become one finding of that node or socket; a single core
stays a core; one node of one socket has no levels."""

from __future__ import annotations

import pytest

from perfvar.detect import fold_levels, names_rank
from perfvar.detect.levels import Place, member_ranks
from perfvar.stats.model import Anomaly

PER_SOCKET = 10
SOCKETS = 2
NODES = 4
PER_NODE = PER_SOCKET * SOCKETS


def places(nodes: int = NODES, sockets: int = SOCKETS) -> dict[int, Place]:
    per_node = PER_SOCKET * sockets
    return {
        r: Place(f"n{r // per_node:02d}", (r % per_node) // PER_SOCKET)
        for r in range(nodes * per_node)
    }


def core(rank: int, shift: float, cost: float = 1e6) -> Anomaly:
    return Anomaly(
        "slow_core", rank, None, rank, None, 100.0, {"shift_rel": shift},
        cost_ns=cost, cost_share=cost / 1e12,
    )  # fmt: skip


def noisy(rank: int, lost: float = 0.5) -> Anomaly:
    return Anomaly("noisy_core", rank, None, rank, None, 1e6, {"lost_fraction": lost})


def phase(rank: int, start: float, end: float) -> Anomaly:
    return Anomaly(
        "slow_phase", rank, None, rank, "S0", 50.0, {"excess_rel": 0.3},
        start_ns=start, end_ns=end,
    )  # fmt: skip


def node_ranks(node: int) -> list[int]:
    return list(range(node * PER_NODE, (node + 1) * PER_NODE))


def test_a_slow_node_is_named_once_with_its_ranks_under_it():
    found = [core(r, 0.05 + 0.001 * (r % 3)) for r in node_ranks(1)]
    out = fold_levels(found, places())
    assert [a.kind for a in out] == ["slow_node"]
    a = out[0].to_json()
    ev = a["evidence"]
    assert ev["node"] == "n01" and ev["level"] == "node" and ev["socket"] is None
    assert ev["ranks"] == node_ranks(1) and ev["found"] == PER_NODE
    assert member_ranks(a["rank"], ev) == node_ranks(1)
    assert ev["peers_groups"] == NODES - 1 and ev["peers_ranks"] == 3 * PER_NODE
    assert ev["shift_rel"] == pytest.approx(0.051)
    assert a["cost_ns"] == pytest.approx(PER_NODE * 1e6)  # its members' waiting
    assert names_rank(a)


def test_a_slow_socket_on_a_node_whose_other_socket_is_not():
    sock = [r for r in node_ranks(2) if r % PER_NODE < PER_SOCKET]
    out = fold_levels([core(r, 0.05) for r in sock], places())
    assert [a.kind for a in out] == ["slow_socket"]
    ev = out[0].evidence
    assert (ev["node"], ev["socket"], ev["ranks"]) == ("n02", 0, sock)
    assert ev["peers_groups"] == NODES * SOCKETS - 1


def test_a_core_slower_still_on_a_slow_node_stays_a_core():
    found = [core(r, 0.05) for r in node_ranks(0)]
    found[3] = core(3, 0.20)  # 19 of 20 alike: the node; rank 3 is more than that
    out = fold_levels(found, places())
    assert sorted(a.kind for a in out) == ["slow_core", "slow_node"]
    assert next(a for a in out if a.kind == "slow_core").rank == 3


def test_too_few_ranks_alike_make_no_level():
    # 16 of 20, 8 of each socket's 10 (80 %, below 90 %): each stays a slow core
    found = [core(r, 0.05) for r in node_ranks(1) if r % PER_SOCKET < 8]
    out = fold_levels(found, places())
    assert [a.kind for a in out] == ["slow_core"] * 16


def test_one_node_of_one_socket_has_no_levels():
    found = [core(0, 0.05), core(1, 0.05)]
    out = fold_levels(found, {0: Place("ws", 0), 1: Place("ws", 0)})
    assert out == found
    # nor does a job that is one node whose every rank is slow: no peers
    many = places(nodes=1, sockets=1)
    found = [core(r, 0.05) for r in many]
    assert fold_levels(found, many) == found


def test_a_noisy_node_and_a_node_wide_transient():
    found = [noisy(r, 0.4 + 0.01 * (r % 5)) for r in node_ranks(3)]
    found += [phase(r, 1e9 + 1e6 * (r % 4), 2e9) for r in node_ranks(2)]
    found += [phase(45, 5e9, 6e9)]  # another window, on a node of its own
    out = fold_levels(found, places())
    kinds = sorted(a.kind for a in out)
    assert kinds == ["node_transient", "noisy_node", "slow_phase"]
    t = next(a for a in out if a.kind == "node_transient")
    assert 1e9 <= t.start_ns < t.end_ns == 2e9 and t.segment == "S0"
    assert not names_rank(t.to_json())  # a transient names no anomalous node


def test_a_slow_nodes_sentence_says_what_its_probes_measured():
    from perfvar.detect import describe

    found = [core(r, 0.05) for r in node_ranks(1)]
    for a in found[:18]:  # probes measured on 18 ranks, slower on 18
        a.evidence["core_speed"] = {"verdict": "slower core", "probes_shift_rel": 0.05}
    (node,) = fold_levels(found, places())
    text = describe(node.to_json(), {})
    assert text.startswith("node n01 (20 ranks 20-39) is a slow node: all 20 of its")
    assert "judged against the 3 other nodes (60 ranks)" in text
    assert "its fixed-work probes ran slower on 18 of the 18 ranks measured" in text
    assert "probes" not in describe(
        fold_levels([core(r, 0.05) for r in node_ranks(1)], places())[0].to_json(), {}
    )
