"""Clock summary from rank-N.json: method, missing cycle counter, rank disagreement,
the clock notes and a stated frequency the measurement contradicts."""

import json
import os
import re

from conftest import run_cli
from perfvar.read.meta import HZ_AGREEMENT, RankMeta, clock_summary
from perfvar.report.text import _clock_remarks


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


def _noted(rank, note, rel=None, measured_err=3e-6, hz_err=0.0):
    meta = _rank(rank, 2.6e9)
    meta.clock.update(
        note=note,
        hz_method="kernel perf_event time_mult/time_shift",
        hz_rel_error=hz_err,
        measured_rel_error=measured_err,
        hz_vs_measured_rel=rel,
    )
    return meta


def test_one_clock_note_for_all_ranks_is_given_once():
    note = "PERFVAR_CLOCK=cntvct is not available here (...); using tsc"
    summary, notes = clock_summary({0: _noted(0, note), 1: _noted(1, note)})
    assert summary["notes"] == [{"note": note, "ranks": [0, 1]}]
    assert notes == []  # shown in the clock lines, not repeated as a warning
    assert _clock_remarks(summary, 2) == [f"clock note, all ranks: {note}"]


def test_clock_notes_that_differ_name_their_ranks():
    ranks = {0: _noted(0, "a"), 1: _noted(1, "b"), 2: _noted(2, "a"), 3: _noted(3, "")}
    summary, _ = clock_summary(ranks)
    assert summary["notes"] == [
        {"note": "a", "ranks": [0, 2]},
        {"note": "b", "ranks": [1]},
    ]
    assert _clock_remarks(summary, 4) == [
        "clock note, 2 ranks (0,2): a",
        "clock note, 1 rank (1): b",
    ]


def test_stated_frequency_contradicted_by_the_measurement_is_reported():
    ranks = {
        0: _noted(0, "", rel=1e-6),  # within the measurement's 3e-6
        1: _noted(1, "", rel=4e-4),
        2: _noted(2, "", rel=2e-3, hz_err=1e-3),  # nominal: its own error counts too
    }
    summary, _ = clock_summary(ranks)
    svm = summary["stated_vs_measured"]
    assert svm["ranks"] == [1, 2] and svm["max_rel"] == 2e-3
    assert svm["bound"] == 1e-3 + 3e-6
    (line,) = _clock_remarks(summary, 3)
    assert "differs from the measured one by up to 2.0e-03" in line
    assert "kernel perf_event" in line and line.endswith("ranks 1-2")


def test_stated_frequency_within_the_bound_and_measured_ones_are_quiet():
    ranks = {0: _noted(0, "", rel=2e-6), 1: _noted(1, "", rel=None)}
    summary, _ = clock_summary(ranks)
    assert summary["stated_vs_measured"] is None
    assert summary["notes"] == []
    assert _clock_remarks(summary, 2) == []


def test_analyze_shows_clock_note_and_disagreement(quiet_trace):
    meta = os.path.join(quiet_trace, "perfvar")
    note = "PERFVAR_CLOCK=cntvct is not available here (not this architecture's clock)"
    for rank in range(4):
        path = os.path.join(meta, f"rank-{rank}.json")
        with open(path) as fh:
            doc = json.load(fh)
        doc["clock"].update(
            note=note if rank < 3 else "",
            hz_method="CPUID 0x15",
            hz_rel_error=0,
            measured_hz=doc["clock"]["hz"] * (1 + 5e-4),
            measured_rel_error=3e-6,
            hz_vs_measured_rel=5e-4 if rank == 2 else 1e-6,
        )
        with open(path, "w") as fh:
            json.dump(doc, fh)
    proc = run_cli("analyze", quiet_trace)
    assert proc.returncode == 0, proc.stderr
    assert f"clock note, 3 ranks (0-2): {note}" in proc.stdout
    assert proc.stdout.count(note) == 1
    assert re.search(
        r"clock frequency as stated \(CPUID 0x15\) differs from the measured one by "
        r"up to 5\.0e-04 \(relative\), above the measurement's error bound 3\.0e-06: "
        r"ranks 2",
        proc.stdout,
    )
    with open(os.path.join(quiet_trace, "analysis.json")) as fh:
        clock = json.load(fh)["clock"]
    assert clock["notes"] == [{"note": note, "ranks": [0, 1, 2]}]
    assert clock["stated_vs_measured"]["ranks"] == [2]
