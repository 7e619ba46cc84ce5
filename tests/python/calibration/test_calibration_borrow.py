"""A rank whose start-up calibration found no t_min/t_diff is judged with the largest
of its host's other ranks (perfvar.calibration.borrow); alone on its host it is not."""

import json
import os

from conftest import CALIBRATION, normal_durations, run_cli
from perfvar.analysis import PARALLEL_MIN_RANKS, analyze
from perfvar.calibration.ranks import judged_meta
from perfvar.partition import split
from perfvar.read.meta import JUDGE_UNCALIBRATED, UNCALIBRATED_JUDGED

# What a quick calibration cut short writes: 0 where its searches found nothing.
NOTHING_FOUND = {"mode": "quick", "status": "partial", "timer_overhead_ns": 20.0,
                 "t_min_ns": 0.0, "t_diff_ns": 0.0}


def _state(label, flush, t_min, t_diff, status="complete"):
    return {"label": label, "flush": flush, "status": status,
            "t_min_ns": t_min, "t_diff_ns": t_diff}


def _write_meta(tmp_path, ranks):
    """ranks: rank -> (host, calibration section)."""
    os.makedirs(tmp_path / "perfvar")
    for rank, (host, cal) in ranks.items():
        doc = {"rank": rank, "host": host, "calibration": cal}
        (tmp_path / "perfvar" / f"rank-{rank}.json").write_text(json.dumps(doc))


def test_a_rank_without_values_takes_the_largest_of_its_host_per_state(tmp_path):
    cut_short = {**NOTHING_FOUND, "states": [
        _state("0", 0, 0.0, 0.0, "partial"),
        _state("4xL1", 196608, 0.0, 0.0, "partial"),
    ]}
    _write_meta(tmp_path, {
        0: ("a", {**CALIBRATION, "t_min_ns": 200.0, "t_diff_ns": 9.0}),
        1: ("a", cut_short),
        2: ("a", {**CALIBRATION, "t_min_ns": 150.0, "t_diff_ns": 30.0, "states": [
            _state("0", 0, 150.0, 30.0), _state("4xL1", 196608, 900.0, 60.0)]}),
        3: ("b", NOTHING_FOUND),  # alone on its host
        4: ("c", NOTHING_FOUND),  # nobody on its host has values either
        5: ("c", NOTHING_FOUND),
    })
    meta = judged_meta(str(tmp_path), range(6), judge=False)
    got = meta.ranks[1].calibration
    assert (got.t_min_ns, got.t_diff_ns) == (200.0, 30.0)  # the largest of each, apart
    states = {st.label: st for st in got.states}
    assert (states["4xL1"].t_min_ns, states["4xL1"].t_diff_ns) == (900.0, 60.0)
    assert states["4xL1"].flush_bytes == 196608
    assert {st.status for st in got.states} == {"borrowed"}
    assert "rank(s) 0,2 on host a" in got.source
    assert meta.ranks[1].calibrated
    assert "judged with those of rank(s) 0,2" in meta.ranks[1].problem
    # The lenders keep their own values.
    assert meta.ranks[0].calibration.t_diff_ns == 9.0
    for alone in (3, 4, 5):
        assert not meta.ranks[alone].calibrated
    assert (
        "no usable t_min/t_diff of their own for rank(s) 1: judged with the largest "
        "of the other ranks' on host a (rank(s) 0,2)"
    ) in meta.notes
    assert (f"no usable t_min/t_diff for rank(s) 3-5: "
            f"{UNCALIBRATED_JUDGED} ({JUDGE_UNCALIBRATED})"
            in meta.notes)


def test_a_rank_with_a_flushed_state_of_its_own_borrows_nothing(tmp_path):
    own_l1 = {**NOTHING_FOUND, "states": [
        _state("0", 0, 0.0, 0.0, "partial"),
        _state("4xL1", 196608, 800.0, 50.0, "partial"),
    ]}
    _write_meta(tmp_path, {0: ("a", CALIBRATION), 1: ("a", own_l1)})
    meta = judged_meta(str(tmp_path), [0, 1], judge=False)
    c = meta.ranks[1].calibration
    assert c.t_min_ns is None
    assert [st.status for st in c.states] == ["partial", "partial"]
    assert not any("their own" in n for n in meta.notes)


def _slow_rank_cut_short(trace_factory, name, nranks, slow_rank):
    durations = normal_durations(seed=7, nranks=nranks, slow={slow_rank: 40_000.0})
    calibration = {r: CALIBRATION for r in range(nranks)}
    calibration[slow_rank] = NOTHING_FOUND
    return trace_factory(name, durations, calibration=calibration)


def test_a_slow_rank_whose_calibration_was_cut_short_is_named(trace_factory):
    # Ranks 0 and 1 share host node0 (conftest), so rank 1 borrows rank 0's values.
    path = _slow_rank_cut_short(trace_factory, "cut", 4, 1)
    proc = run_cli("analyze", path)
    assert proc.returncode == 0, proc.stderr
    doc = json.load(open(os.path.join(path, "analysis.json")))
    assert [(a["kind"], a["rank"]) for a in doc["anomalies"]] == [("slow_segment", 1)]
    assert "judged with the largest of the other ranks' on host node0" in proc.stdout
    row = next(r for r in doc["ranks"] if r["rank"] == 1)
    assert row["calibration_states"][0]["status"] == "borrowed"


def test_parallel_analysis_borrows_as_the_serial_one(trace_factory):
    # Two parts, ranks 0-4 and 5-9: rank 5 borrows from rank 4 (both on node2), which
    # the other part judged, so the borrowing is done after the parts are merged.
    nranks = PARALLEL_MIN_RANKS + 2
    assert split(list(range(nranks)), 2)[1][0] == 5
    path = _slow_rank_cut_short(trace_factory, "cutwide", nranks, 5)
    serial = analyze(path, symbolize_sites=False, jobs=1)
    parallel = analyze(path, symbolize_sites=False, jobs=2)
    for result in (serial, parallel):
        assert result.params.engine
        result.params.engine = {}
    assert json.dumps(parallel.to_json(), sort_keys=True) == json.dumps(
        serial.to_json(), sort_keys=True
    )
    assert serial.summary.kind_ranks["slow_ranks"] == [5]
