"""Delay costs (perfvar.verdict.delay_cost) and the headline (perfvar.verdict.headline) on simulated
runs: findings given by hand, so the rules are tested apart from the detectors."""

import pytest
from waits_sim import simulate

from perfvar.verdict import delay_cost

from perfvar.verdict import headline

from perfvar.verdict import wait_states
from perfvar.verdict.parts import LocalParts
from perfvar.stats.model import Anomaly

IDS = ["S0", "S1"]  # S0 = A (ends in the Allreduce), S1 = B (ends in the Waitall)


def _slow(rank, segment, excess_ns, rel):
    return Anomaly("slow_segment", rank, "h", rank, segment, excess_ns,
                   {"excess_rel": rel, "shift_rel": rel})


def _costs(trace, anomalies):
    part = wait_states.part_of(trace.samples, trace.segments, trace.trace_ns)
    parts = LocalParts([part])
    return delay_cost.costs(anomalies, parts, wait_states.find_in_parts(parts), IDS)


def test_a_slowdown_that_makes_the_peer_wait_costs_that_waiting():
    trace = simulate(extra=lambda r, k, c: 5000.0 if (r, c) == (1, "A") else 0)
    (cost,) = _costs(trace, [_slow(1, "S0", 5000.0, 0.05)])
    assert cost == pytest.approx(200 * 5000.0, rel=0.05)


def test_a_slowdown_absorbed_by_a_slower_peer_costs_nothing():
    # Rank 0 +1 % in A, rank 1 +5 %: rank 0 waits, nobody waits for rank 0's excess.
    trace = simulate(extra=lambda r, k, c: (1000.0, 5000.0)[r] if c == "A" else 0.0)
    found = [_slow(0, "S0", 1000.0, 0.01), _slow(1, "S0", 5000.0, 0.05)]
    cost0, cost1 = _costs(trace, found)
    assert cost0 == pytest.approx(0.0, abs=200 * 50.0)
    assert cost1 == pytest.approx(200 * 4000.0, rel=0.05)


def test_interruptions_of_a_noisy_core_cost_what_the_peer_waited():
    hit = {(1, k) for k in range(0, 200, 10)}
    trace = simulate(extra=lambda r, k, c: 4e6 if c == "A" and (r, k) in hit else 0.0)
    noisy = Anomaly("noisy_core", 1, "h", 1, None, 20 * 4e6, {"lost_fraction": 0.3})
    (cost,) = _costs(trace, [noisy])
    assert cost == pytest.approx(20 * 4e6, rel=0.02)


def test_time_off_the_cpu_of_a_measured_noisy_core_costs_what_the_peer_waited():
    # Rank 1 shares its CPU: every A segment 40 % longer, no segment beyond a fence;
    # the counters measured it off the CPU 40/140 of the time, its peer 0.
    trace = simulate(extra=lambda r, k, c: 0.4 * 1e5 if (r, c) == (1, "A") else 0.0)
    off = 0.4 / 1.4
    measured = Anomaly("noisy_core", 1, "h", 1, None, None,
                       {"measured": {"off_cpu_fraction": off},
                        "peers_off_cpu_fraction": 0.0})
    shape = Anomaly("noisy_core", 1, "h", 1, None, None, {"lost_fraction": 0.3})
    (cost,) = _costs(trace, [measured])
    (by_shape,) = _costs(trace, [shape])
    assert by_shape == pytest.approx(0.0, abs=1.0)
    assert cost == pytest.approx(200 * 0.4 * 1e5, rel=0.05)


def test_one_rank_or_an_unsynchronised_run_has_no_cost():
    trace = simulate(extra=lambda r, k, c: 5000.0 * r, synchronised=False)
    assert _costs(trace, [_slow(1, "S0", 5000.0, 0.05)]) == [None]
    ranked = headline.rank_findings([_slow(1, "S0", 5000.0, 0.05)], trace, IDS)
    assert [a.rank for a in ranked.anomalies] == [1] and ranked.minor == []
