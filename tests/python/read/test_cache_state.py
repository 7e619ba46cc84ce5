"""Cache states: which calibrated state judges a segment (perfvar.read.cache_state), how
the per-state calibration is read from rank-N.json and calibration-rank-N.json, and
that perfvar analyze judges each segment with the state its context chose."""

import json

import numpy as np
import pytest
from calib_docs import _doc

from conftest import CALIBRATION, SEG_A, SEG_B, normal_durations
from perfvar.analysis import analyze
from perfvar.read.cache_state import CacheState, cell_context, choose
from perfvar.calibration.ranks import judged_meta
from perfvar.read.meta import read_meta
from perfvar.report.text import render

KIB, MIB = 1024, 1024 * 1024
L1, L2, L3 = 48 * KIB, 1 * MIB, 32 * MIB  # example L1, L2, L3 sizes


def states(usable=("0", "4xL1", "4xL2", "4xL3")):
    """The four states with these flush sizes; t_diff grows with the flush."""
    sizes = {"0": 0, "4xL1": 4 * L1, "4xL2": 4 * L2, "4xL3": 4 * L3}
    return [
        CacheState(
            label,
            flush,
            t_min_ns=100.0 * (i + 1) if label in usable else None,
            t_diff_ns=10.0 * (i + 1) if label in usable else None,
            status="complete" if label in usable else "skipped",
        )
        for i, (label, flush) in enumerate(sizes.items())
    ]


@pytest.mark.parametrize(
    "moved, label",
    [
        (None, "0"),  # unknown context: flush 0
        (0, "0"),  # a barrier
        (4 * L1 - 1, "0"),  # just below the 4xL1 flush
        (4 * L1, "4xL1"),
        (64 * KIB * 50, "4xL1"),  # 3.1 MiB < 4xL2
        (4 * L2, "4xL2"),
        (100 * MIB, "4xL2"),  # < 4xL3 = 128 MiB
        (4 * L3, "4xL3"),
        (10 * 4 * L3, "4xL3"),
    ],
)
def test_the_largest_flush_not_above_the_bytes_moved_is_chosen(moved, label):
    c = choose(moved, states())
    assert c.target == label and c.label == label
    assert c.context_bytes == moved


def test_an_uncalibrated_target_falls_back_to_the_nearest_calibrated_state():
    # 4xL3 skipped (quick mode): a 200 MiB context is judged with 4xL2.
    c = choose(200 * MIB, states(usable=("0", "4xL1", "4xL2")))
    assert c.target == "4xL3" and c.label == "4xL2"
    # 4xL2 missing: its neighbours 4xL1 and 4xL3 are equally near; the larger flush
    # (larger t_diff, fewer claims) wins.
    c = choose(5 * MIB, states(usable=("0", "4xL1", "4xL3")))
    assert c.target == "4xL2" and c.label == "4xL3"
    # Flush 0 missing: an unknown context takes the nearest, 4xL1.
    assert choose(None, states(usable=("4xL1", "4xL2"))).label == "4xL1"
    # Nothing usable: no state, the rank stays uncalibrated.
    c = choose(5 * MIB, states(usable=()))
    assert c.state is None and c.label is None and c.target == "4xL2"


def test_a_state_whose_cache_size_is_unknown_never_matches():
    st = states()
    st[3].flush_bytes = 0  # sysfs did not say: nothing was flushed
    assert choose(10 * 4 * L3, st).label == "4xL2"
    assert choose(7, [CacheState("0", 0, 1.0, 1.0)]).label == "0"  # old traces


def test_cell_context_is_the_median_of_the_known_bytes():
    assert cell_context(np.array([-1, -1])) is None
    assert cell_context(np.array([-1, 100, 300, 200])) == 200
    assert cell_context(np.array([], dtype=np.int64)) is None


# ---------------------------------------------------------------- reading the JSON
RANK_STATES = [
    {"label": "0", "flush": 0, "status": "complete", "note": "", "t_min_ns": 1.0}
    | {"t_diff_ns": 1.0},
    {"label": "4xL1", "flush": 4 * L1, "status": "complete", "note": ""}
    | {"t_min_ns": 2.0, "t_diff_ns": 2.0},
    {"label": "4xL2", "flush": 4 * L2, "status": "partial", "t_min_ns": 3.0}
    | {"t_diff_ns": 0.0, "note": "its share of the budget was spent"},
    {"label": "4xL3", "flush": 4 * L3, "status": "skipped", "t_min_ns": 0.0}
    | {"t_diff_ns": 0.0, "note": "p x N = 500 flushes of 128.0 MiB need >= 1049 ms"},
]


def _write_meta(tmp_path, rank_states, samples_doc):
    meta_dir = tmp_path / "perfvar"
    meta_dir.mkdir(exist_ok=True)
    cal = {"status": "complete", "timer_overhead_ns": 20.0, "t_min_ns": 1.0}
    cal |= {"t_diff_ns": 1.0}
    if rank_states is not None:
        cal["states"] = rank_states
    (meta_dir / "rank-0.json").write_text(json.dumps({"rank": 0, "calibration": cal}))
    if samples_doc is not None:
        (meta_dir / "calibration-rank-0.json").write_text(json.dumps(samples_doc))


def test_states_are_read_and_each_rechecked_with_the_paper_statistics(tmp_path):
    doc = _doc()  # flush 0: confirmed (see test_calibration_judge)
    doc["states"] = [
        {"label": "4xL1", "flush": 4 * L1, "n_samples": 300, "status": "complete"}
        | {"dropped": 0, "distributions": _doc(seed=1)["distributions"]},
        {"label": "4xL2", "flush": 4 * L2, "n_samples": 300, "status": "partial"}
        | {"dropped": 0, "distributions": _doc(noise=4.0)["distributions"]},
        {"label": "4xL3", "flush": 4 * L3, "n_samples": 100, "status": "skipped"}
        | {"dropped": 0, "distributions": []},
    ]
    _write_meta(tmp_path, RANK_STATES, doc)
    meta = judged_meta(str(tmp_path), [0])
    cal = meta.ranks[0].calibration
    got = {s.label: s for s in cal.states}
    assert list(got) == ["0", "4xL1", "4xL2", "4xL3"]
    assert [s.flush_bytes for s in cal.states] == [0, 4 * L1, 4 * L2, 4 * L3]
    # Flush 0 mirrors the top level, both replaced by the paper's values.
    assert got["0"].t_min_ns == cal.t_min_ns > 100 and got["0"].source.startswith(
        "paper"
    )
    # 4xL1: its own samples confirm t_min/t_diff: the C estimate (2 ns) is replaced.
    assert got["4xL1"].source.startswith("paper") and got["4xL1"].t_min_ns > 100
    # 4xL2: samples too noisy to confirm; the C estimate stays, labelled, t_diff 0 =
    # not found, so the state is not usable.
    assert got["4xL2"].source.startswith("C estimate (t_min not confirmed")
    assert got["4xL2"].t_min_ns == 3.0 and not got["4xL2"].usable
    assert got["4xL2"].status == "partial" and "budget" in got["4xL2"].note
    # 4xL3: skipped, unusable, says why.
    assert not got["4xL3"].usable and got["4xL3"].note.startswith("p x N")
    # No note says 4xL2's C estimate is used there: unusable, it judges nothing.
    assert not any("cache state 4xL2" in n for n in meta.notes)


def test_files_without_states_give_flush_0_only(tmp_path):
    _write_meta(tmp_path, None, _doc())  # as written before cache states existed
    cal = judged_meta(str(tmp_path), [0]).ranks[0].calibration
    assert [s.label for s in cal.states] == ["0"]
    assert cal.states[0].t_min_ns == cal.t_min_ns and cal.states[0].usable
    skipped = read_meta(str(tmp_path), [0]).ranks[0].calibration
    assert (
        skipped.states[0].t_min_ns == 1.0 and skipped.states[0].source == "C estimate"
    )


def test_malformed_state_entries_are_ignored(tmp_path):
    _write_meta(tmp_path, [7, {"flush": 3}, {"label": "4xL1", "flush": "x"}], None)
    cal = read_meta(str(tmp_path), [0]).ranks[0].calibration
    assert [(s.label, s.flush_bytes) for s in cal.states] == [("0", 0), ("4xL1", 0)]


# ---------------------------------------------------------------- analyze end to end
def _cal_with_states():
    """Flush 0 resolves 4.1 ns; the 4xL2 state only 5 us (a noisy cold-cache timer)."""
    return CALIBRATION | {
        "states": [
            {"label": "0", "flush": 0, "status": "complete"}
            | {"t_min_ns": 150.3, "t_diff_ns": 4.1},
            {"label": "4xL1", "flush": 4 * L1, "status": "complete"}
            | {"t_min_ns": 300.0, "t_diff_ns": 50.0},
            {"label": "4xL2", "flush": 4 * L2, "status": "complete"}
            | {"t_min_ns": 900.0, "t_diff_ns": 5000.0},
            {"label": "4xL3", "flush": 4 * L3, "status": "skipped"}
            | {"t_min_ns": 0.0, "t_diff_ns": 0.0, "note": "no time"},
        ]
    }


@pytest.mark.parametrize("big_calls", [False, True])
def test_analyze_judges_each_segment_with_the_state_its_context_chose(
    trace_factory, big_calls
):
    """Rank 1 runs class A 3 us slower. After calls that moved 6 MiB (>= 4xL2) that
    is within the 4xL2 state's t_diff of 5 us: not claimed; with no such calls, flush
    0's 4.1 ns judges, and it is."""
    moved = {SEG_A: (2 * MIB, 4 * MIB), SEG_B: (100, 0)} if big_calls else None
    path = trace_factory(
        f"states{big_calls}",
        normal_durations(seed=3, slow={1: 3000.0}),
        calibration={r: _cal_with_states() for r in range(4)},
        moved=moved,
    )
    result = analyze(path, symbolize_sites=False)
    seg = {s.key: s for s in result.segments}
    a, b = seg[SEG_A], seg[SEG_B]
    rank1_a = next(j for j in result.judgements if j.rank == 1 and j.segment == a.id)
    if big_calls:
        assert a.context_bytes == 6 * MIB and a.cache_state == "4xL2"
        assert a.cache_states == {"4xL2": 4}
        assert b.context_bytes == 100 and b.cache_state == "0"
        assert rank1_a.cache_state == "4xL2" and rank1_a.status == "ok"
        assert rank1_a.context_bytes == 6 * MIB
        assert 2500 < rank1_a.shift_ns < 3500  # seen, but below 4xL2's t_diff
        assert result.summary.kind_ranks["slow_ranks"] == []
    else:
        assert a.context_bytes is None and a.cache_state == "0"
        assert rank1_a.cache_state == "0" and rank1_a.status == "slow"
        assert result.summary.kind_ranks["slow_ranks"] == [1]
        (anomaly,) = result.anomalies
        assert anomaly.evidence["cache_state"] == "0"
        assert anomaly.evidence["t_diff_ns"] == 4.1
    row = result.ranks[0]
    assert [s["label"] for s in row.calibration_states] == [
        "0",
        "4xL1",
        "4xL2",
        "4xL3",
    ]
    assert row.calibration_states[3]["t_min_ns"] is None  # skipped: not usable
    text = render(result)
    assert "cache states" in text and "0,4xL1,4xL2" in text
    a_row = next(line for line in text.splitlines() if line.startswith(a.id + " "))
    if big_calls:
        assert "6.0 MiB" in a_row and " 4xL2 " in a_row
    else:
        assert " ? " in a_row and "flush-0 calibration" in text
