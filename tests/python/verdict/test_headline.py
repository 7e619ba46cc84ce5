"""The verdict ranked by cost with symptoms apart (perfvar.verdict.headline.rank_findings):
a symptom after a wait moves to the consequences, a costly slowdown stays a headline
finding, a cheap shift becomes minor."""

import dataclasses

import pytest
from waits_sim import simulate

from perfvar.detect.words import off_cpu_clause
from perfvar.read.samples import DURATION_FIELDS, durations_only
from perfvar.stats.model import Anomaly
from perfvar.verdict import headline, off_cpu, time_slicing, wait_states
from perfvar.verdict.parts import LocalParts

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
        ("slow_core", off_cpu.OFF_CPU),
        ("slow_segment", off_cpu.OFF_CPU),
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


def _off_run(off_b_ns, extra_b_ns=0.0):
    # Another process runs on rank 0's CPU inside every B segment (woken by what
    # rank 0 writes there): B lasts off_b_ns longer, all of it off the CPU;
    # extra_b_ns more is rank 0's own work in B.
    return simulate(
        steps=200,
        extra=lambda r, k, c: extra_b_ns if (r, c) == (0, "B") else 0.0,
        off_cpu=lambda r, k, c: off_b_ns if (r, c) == (0, "B") else 0.0,
    )


def test_a_class_slower_by_its_time_off_the_cpu_is_reported_under_that_time():
    # B +15 % on rank 0, all of it time off the CPU inside B: no finding of its own.
    found = [_slow(0, "S1", 3000.0, 0.15)]
    ranked = headline.rank_findings(found, _off_run(3000.0), IDS)
    assert ranked.anomalies == [] and ranked.minor == []
    (c,) = ranked.consequences
    assert (c["rank"], c["segment"], c["cause"]) == (0, "S1", off_cpu.OFF_CPU)
    # Spread evenly over the read's interval, which holds the call before B too.
    assert 2900.0 < c["off_cpu"]["beyond_ns"] <= 3000.0
    assert c["text"] == (
        "rank 0's S1 +15% is time off its CPU inside those segments (3 us a "
        "segment against its peers' 0 us, 4 context switches a segment against "
        "1)"
    )


def test_the_time_off_the_cpu_inside_a_class_is_not_charged_to_it():
    # B +40 % on rank 0: 1 us of it off the CPU, 7 us its own work. The finding
    # stays, names the 1 us, and is charged only for the rest.
    found = [_slow(0, "S1", 8000.0, 0.40)]
    ranked = headline.rank_findings(found, _off_run(1000.0, 7000.0), IDS)
    assert ranked.consequences == []
    (a,) = ranked.anomalies + ranked.minor
    assert 950.0 < a.evidence["off_cpu"]["beyond_ns"] <= 1000.0
    assert off_cpu_clause(a.evidence) == (
        "; 1 us a segment of it off the CPU beyond its peers' (1 us against 0 us), "
        "not charged to the segment"
    )
    alone = headline.rank_findings(
        [_slow(0, "S1", 8000.0, 0.40)],
        simulate(
            steps=200, extra=lambda r, k, c: 8000.0 if (r, c) == (0, "B") else 0.0
        ),
        IDS,
    )
    (b,) = alone.anomalies + alone.minor
    assert "off_cpu" not in b.evidence
    assert abs(a.cost_ns / b.cost_ns - 7 / 8) < 0.02


def test_work_on_the_cpu_is_not_taken_for_time_off_it():
    # B +15 % of rank 0's own work; the counters see it on the CPU.
    found = [_slow(0, "S1", 3000.0, 0.15)]
    ranked = headline.rank_findings(found, _off_run(0.0, 3000.0), IDS)
    assert ranked.consequences == []
    (a,) = ranked.anomalies + ranked.minor
    assert "off_cpu" not in a.evidence


def _shared(rank, ranks, threads=None):
    evidence = {"cpu": 1, "ranks": ranks}
    if threads:
        evidence["threads"] = threads
    return Anomaly("shared_cpu", rank, "h", 1, None, None, evidence)


def test_what_a_rank_sharing_its_cpu_with_others_shows_is_that_sharing():
    # Ranks 0 and 1 ran on one CPU: rank 1's slower core and S0 are their turns on it.
    found = [_shared(0, [0, 1]), _shared(1, [0, 1])]
    found += [_core(1, 1.0), _slow(1, "S0", 8000.0, 0.8), _noisy(1, 0.50, 0.01)]
    ranked = headline.rank_findings(found, _busy_run(), IDS)
    assert [a.kind for a in ranked.anomalies] == ["shared_cpu", "shared_cpu"]
    assert ranked.minor == []
    assert [(c["kind"], c["cause"]) for c in ranked.consequences] == [
        ("slow_core", time_slicing.SHARED_CPU),
        ("slow_segment", time_slicing.SHARED_CPU),
        ("noisy_core", time_slicing.SHARED_CPU),
    ]
    core = ranked.consequences[0]
    assert core["sharing_ranks"] == [0] and core["cpu"] == 1
    assert core["text"] == (
        "rank 1's slow core (+100%) is time-slicing: it shared CPU 1 with rank(s) 0"
    )
    # A rank whose own threads share its CPU, and no other rank: its findings stay.
    own = [_shared(1, [1], threads=[[1, 0], [1, 1]]), _core(1, 1.0)]
    ranked = headline.rank_findings(own, _busy_run(), IDS)
    assert ranked.consequences == []
    assert [a.kind for a in ranked.anomalies] == ["slow_core", "shared_cpu"]


@pytest.mark.parametrize(
    "run, found",
    [
        (
            _symptom_run,
            lambda: [_slow(1, "S0", 200_000.0, 2.0), _slow(0, "S1", 4000.0, 0.2)],
        ),
        (lambda: _off_run(3000.0), lambda: [_slow(0, "S1", 3000.0, 0.15)]),
        (
            _busy_run,
            lambda: [_noisy(1, 0.50, 0.01), _core(1, 1.0), _slow(1, "S0", 8000.0, 0.8)],
        ),
    ],
)
def test_the_verdict_reads_only_the_durations_once_the_timeline_is_built(run, found):
    # The analysis builds the timeline, then keeps of each sample its class and
    # duration only: the verdict is the same as from the whole samples.
    trace = run()
    whole = headline.rank_findings(found(), trace, IDS)
    part = wait_states.part_of(
        trace.samples, trace.segments, trace.trace_ns, trace.probes, durations_only
    )
    narrow = dataclasses.replace(trace, samples=part.samples)
    assert narrow.samples.dtype.names == DURATION_FIELDS
    lean = headline.rank_findings(found(), narrow, IDS, parts=LocalParts([part]))
    assert [a.to_json() for a in lean.anomalies] == [
        a.to_json() for a in whole.anomalies
    ]
    assert [a.to_json() for a in lean.minor] == [a.to_json() for a in whole.minor]
    assert lean.consequences == whole.consequences and lean.waits == whole.waits
    assert whole.consequences or whole.anomalies  # the runs give a verdict to compare
