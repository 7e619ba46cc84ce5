"""The verdict ranked by cost with symptoms apart (perfvar.verdict.headline.rank_findings):
a symptom after a wait moves to the consequences, a costly slowdown stays a headline
finding, a cheap shift becomes minor."""

from waits_sim import simulate

from perfvar.verdict import headline
from perfvar.stats.model import Anomaly

IDS = ["S0", "S1"]


def _slow(rank, segment, excess_ns, rel):
    return Anomaly("slow_segment", rank, "h", rank, segment, excess_ns,
                   {"excess_rel": rel, "shift_rel": rel})


def _symptom_run():
    # Rank 1 does 3x the work in A: rank 0 waits 200 us in every Allreduce, and
    # its next segment (B) runs 20 % slower (caches cold after the wait).
    def extra(r, k, c):
        if (r, c) == (1, "A"):
            return 200_000.0
        return 4000.0 if (r, c) == (0, "B") else 0.0

    return simulate(steps=200, extra=extra)


def test_a_slower_segment_after_a_wait_is_reported_under_its_cause():
    found = [_slow(1, "S0", 200_000.0, 2.0), _slow(0, "S1", 4000.0, 0.2)]
    ranked = headline.rank_findings(found, _symptom_run(), IDS)
    assert [(a.rank, a.segment) for a in ranked.anomalies] == [(1, "S0")]
    (c,) = ranked.consequences
    assert (c["rank"], c["segment"], c["cause_rank"]) == (0, "S1", 1)
    assert c["function"] == "MPI_Allreduce"
    assert c["text"] == (
        "rank 0's S1 +20% after waiting 0.2 ms for rank 1 in MPI_Allreduce"
    )


def test_a_slowdown_independent_of_the_waits_stays_a_finding():
    # Rank 1 is slow in A only in odd steps, so rank 0 waits before half of its
    # B segments; its B is 20 % slower in every step, after short waits as after
    # long ones: the waits do not explain it.
    def extra(r, k, c):
        if (r, c) == (1, "A"):
            return 200_000.0 if k % 2 else 0.0
        return 4000.0 if (r, c) == (0, "B") else 0.0

    found = [_slow(1, "S0", 100_000.0, 1.0), _slow(0, "S1", 4000.0, 0.2)]
    ranked = headline.rank_findings(found, simulate(steps=200, extra=extra), IDS)
    assert ranked.consequences == []
    assert sorted(a.rank for a in ranked.anomalies + ranked.minor) == [0, 1]


def test_a_costly_slowdown_is_the_headline_and_a_cheap_shift_is_minor():
    # Rank 1 +5 % in A: rank 0 waits for it every step (cost 1.7 % of wall x
    # ranks). Rank 0 +1 % in A too: absorbed, it makes nobody wait.
    def extra(r, k, c):
        return (1000.0, 5000.0)[r] if c == "A" else 0.0

    found = [_slow(0, "S0", 1000.0, 0.01), _slow(1, "S0", 5000.0, 0.05)]
    ranked = headline.rank_findings(found, simulate(steps=200, extra=extra), IDS)
    assert [(a.rank, a.segment) for a in ranked.anomalies] == [(1, "S0")]
    assert ranked.anomalies[0].cost_share > headline.DEFAULT_MIN_COST
    assert [(a.rank, a.segment) for a in ranked.minor] == [(0, "S0")]
    assert ranked.minor[0].cost_share < headline.DEFAULT_MIN_COST
    # Without a threshold both are named.
    both = headline.rank_findings(found, simulate(steps=200, extra=extra), IDS, 0.0)
    assert sorted(a.rank for a in both.anomalies) == [0, 1]


def _noisy(rank, off, peers_off):
    """A noisy_core whose time off the CPU the counters measured."""
    evidence = {
        "measured": {"off_cpu_fraction": off, "reads": 100},
        "peers_off_cpu_fraction": peers_off,
    }
    return Anomaly("noisy_core", rank, "h", rank, None, 0.0, evidence)


def _core(rank, rel):
    return Anomaly("slow_core", rank, "h", rank, None, 0.0, {"shift_rel": rel})


def _busy_run():
    # Another process takes half of rank 1's CPU: its segments take twice as long.
    return simulate(steps=200, extra=lambda r, k, c: 10_000.0 if r == 1 else 0.0)


def test_what_the_time_off_the_cpu_makes_is_reported_under_the_noisy_core():
    # Off its CPU 50 % of the time against 1 %: that makes its segments 1.98x as
    # long. Its slower core (+100 %) and S0 (+80 %) are that, seen in the durations.
    found = [_noisy(1, 0.50, 0.01), _core(1, 1.0), _slow(1, "S0", 8000.0, 0.8)]
    ranked = headline.rank_findings(found, _busy_run(), IDS)
    assert [a.kind for a in ranked.anomalies] == ["noisy_core"]
    assert [(c["kind"], c["cause"]) for c in ranked.consequences] == [
        ("slow_core", headline.OFF_CPU),
        ("slow_segment", headline.OFF_CPU),
    ]
    core = ranked.consequences[0]
    assert core["cause_rank"] == 1 and abs(core["explained_rel"] - 0.98) < 1e-9
    assert core["text"] == (
        "rank 1's slower core (+100%) is its time off the CPU (50% against its "
        "peers' 1%, which makes +98%)"
    )


def test_a_shift_far_beyond_the_time_off_the_cpu_stays_a_finding():
    # 10 % off the CPU makes +10 %: a class +200 % slower is more than that, and a
    # noisy core that only the durations' shape named (no counters) explains none.
    found = [_noisy(1, 0.10, 0.0), _slow(1, "S0", 20_000.0, 2.0)]
    ranked = headline.rank_findings(found, _busy_run(), IDS)
    assert ranked.consequences == []
    shape_only = Anomaly("noisy_core", 1, "h", 1, None, 0.0, {"named_by": ["shape"]})
    ranked = headline.rank_findings([shape_only, _core(1, 1.0)], _busy_run(), IDS)
    assert ranked.consequences == []
