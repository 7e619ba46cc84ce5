"""Clock summary from rank-N.json: method, missing cycle counter, rank disagreement."""

from perfvar.reader_meta import HZ_AGREEMENT, RankMeta, clock_summary


def _rank(rank, hz, cycles=False, why="no PMU"):
    return RankMeta(
        rank=rank,
        clock={"name": "tsc", "hz": hz, "measured_hz": hz, "hz_method": "measured"},
        caps={"cycles": cycles, "cycles_why": why},
    )


def test_summary_names_clock_and_missing_cycle_counter():
    summary, notes = clock_summary({0: _rank(0, 2.6e9), 1: _rank(1, 2.6e9)})
    assert summary["name"] == "tsc" and summary["hz"] == 2.6e9
    assert summary["cycles_counter"] is False and summary["cycles_why"] == "no PMU"
    assert summary["hz_spread_rel"] == 0
    assert notes == []


def test_ranks_that_disagree_on_the_frequency_are_reported():
    ranks = {
        0: _rank(0, 2.6e9),
        1: _rank(1, 2.6e9 * (1 + 3 * HZ_AGREEMENT)),
        2: _rank(2, 2.6e9),
    }
    summary, notes = clock_summary(ranks)
    assert len(notes) == 1
    assert "rank 0" in notes[0] and "rank 1" in notes[0]
    assert summary["hz_spread_rel"] > HZ_AGREEMENT


def test_agreement_within_tolerance_is_quiet():
    ranks = {0: _rank(0, 2.6e9), 1: _rank(1, 2.6e9 * (1 + HZ_AGREEMENT / 2))}
    assert clock_summary(ranks)[1] == []


def test_no_clock_information_gives_an_empty_summary():
    assert clock_summary({0: RankMeta(rank=0)}) == ({}, [])
