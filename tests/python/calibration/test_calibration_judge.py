"""t_min / t_diff recomputed with the paper's statistics from stored samples."""

import json
import math

from calib_docs import _doc, recheck
from perfvar.calibration.judge import judge_document
from perfvar.calibration.ranks import judged_meta
from perfvar.read.meta import read_meta


def test_paper_statistics_find_t_min_and_t_diff_despite_os_noise():
    r = recheck(_doc())
    # CV of N(0.3 k, 1) is 1/(0.3 k): < 0.01 from k = 334, so the first stored one: 512.
    assert r["t_min_adds"] == 512
    assert r["t_min_cv"] < 0.01
    # Separating two normals with sd 1 ns needs a gap of ~6 ns = 20 ADDs: d = 32 stored.
    assert r["t_diff_adds"] in (16, 32)
    assert math.isfinite(r["t_diff_ns"]) and r["t_diff_ns"] > 0
    assert r["t_diff_overlap"] < 0.05


def test_pairs_below_t_min_do_not_confirm_t_diff():
    r = recheck(_doc(noise=2.0))  # CV < 0.01 from k ~ 667: t_min 1024, pairs sit at 512
    assert r["t_min_adds"] == 1024
    assert r["t_diff_adds"] is None


def test_no_stored_length_precise_enough_confirms_nothing():
    r = recheck(
        _doc(noise=4.0)
    )  # CV < 0.01 only from k ~ 1333: beyond every stored one
    assert r["t_min_adds"] is None and r["t_diff_adds"] is None


def test_analysis_uses_the_paper_values_and_says_where_they_come_from(tmp_path):
    meta_dir = tmp_path / "perfvar"
    meta_dir.mkdir()
    cal = {
        "status": "complete",
        "timer_overhead_ns": 20.0,
        "t_min_ns": 1.0,
        "t_diff_ns": 1.0,
    }
    (meta_dir / "rank-0.json").write_text(json.dumps({"rank": 0, "calibration": cal}))
    (meta_dir / "rank-1.json").write_text(json.dumps({"rank": 1, "calibration": cal}))
    (meta_dir / "calibration-rank-0.json").write_text(json.dumps(_doc()))
    bad = _doc(noise=4.0)
    (meta_dir / "calibration-rank-1.json").write_text(json.dumps(bad))
    meta = judged_meta(str(tmp_path), [0, 1])
    c0, c1 = meta.ranks[0].calibration, meta.ranks[1].calibration
    assert c0.source.startswith("paper") and c0.t_min_ns > 100  # replaced
    assert c1.source.startswith("C estimate") and c1.t_min_ns == 1.0  # kept, labelled
    assert any("of rank(s) 1 do not confirm" in n for n in meta.notes)
    skipped = read_meta(str(tmp_path), [0, 1])
    assert skipped.ranks[0].calibration.t_min_ns == 1.0


def test_rank_without_calibration_is_uncalibrated_and_the_rest_read(tmp_path):
    # rank-1.json has no "calibration" (a hand-edited or foreign file) while its
    # calibration-rank-1.json is there: rank 1 is uncalibrated, rank 0 still checked.
    meta_dir = tmp_path / "perfvar"
    meta_dir.mkdir()
    cal = {"mode": "quick", "status": "complete", "timer_overhead_ns": 20.0}
    cal.update(t_min_ns=1.0, t_diff_ns=1.0)
    (meta_dir / "rank-0.json").write_text(json.dumps({"rank": 0, "calibration": cal}))
    (meta_dir / "rank-1.json").write_text(json.dumps({"rank": 1}))
    for r in (0, 1):
        (meta_dir / f"calibration-rank-{r}.json").write_text(json.dumps(_doc()))
    meta = judged_meta(str(tmp_path), [0, 1])
    assert meta.ranks[0].calibration.source.startswith("paper")
    c1 = meta.ranks[1].calibration
    assert c1.t_min_ns is None and c1.t_diff_ns is None and not meta.ranks[1].calibrated


def _stepped(doc, step):
    """``doc`` as a clock that reads in steps of ``step`` ns would give it."""
    for d in doc["distributions"]:
        d["samples_ns"] = [step * round(v / step) for v in d["samples_ns"]]
    return doc


def test_one_clock_step_must_be_within_epsilon_of_t_min():
    # No noise, read in 2.5 ns steps: every length reads one repeated value, CV 0.
    doc = _stepped(_doc(noise=0.0), 2.5)
    assert recheck(doc)["t_min_adds"] == 64  # CV alone: 19.2 ns read as 20.0, "precise"
    doc["clock_granularity_ns"] = 2.5
    # One step within 1 %: a median of 250 ns or more, first at 1024 ADDs (307 ns).
    assert recheck(doc)["t_min_adds"] == 1024


def test_the_cycle_counter_is_judged_with_its_own_step():
    doc = _stepped(_doc(noise=0.0), 2.5)
    cycles = [dict(d, samples_cycles=d["samples_ns"]) for d in doc["distributions"]]
    doc["cycles"] = {"distributions": cycles, "clock_granularity_cycles": 2.5}
    judged = judge_document(doc)
    assert judged["states"]["0"]["t_min_adds"] == 64  # flush 0 gives no step
    assert judged["cycles"]["t_min_adds"] == 1024


def test_no_warning_of_an_estimate_the_c_search_did_not_make(tmp_path):
    # Neither the C search nor the judge found t_min/t_diff for rank 1: no C estimate is
    # in use, so no note says one is; rank 0's unconfirmed estimate still gets one.
    meta_dir = tmp_path / "perfvar"
    meta_dir.mkdir()
    found = {"status": "complete", "timer_overhead_ns": 20.0, "t_min_ns": 1.0}
    none = {"status": "partial", "timer_overhead_ns": 20.0, "t_min_ns": 0.0}
    for rank, cal in ((0, found), (1, none)):
        cal = dict(cal, t_diff_ns=cal["t_min_ns"])
        doc = {"rank": rank, "calibration": cal}
        (meta_dir / f"rank-{rank}.json").write_text(json.dumps(doc))
        bad = _doc(noise=4.0)  # the judge confirms nothing
        (meta_dir / f"calibration-rank-{rank}.json").write_text(json.dumps(bad))
    notes = judged_meta(str(tmp_path), [0, 1]).notes
    assert any(
        "cache state 0: the start-up samples of rank(s) 0 do" in n for n in notes
    )
    assert not any("rank(s) 0-1" in n for n in notes)


def test_one_note_for_the_ranks_whose_flush_0_is_not_confirmed(tmp_path):
    """Many ranks whose start-up samples do not confirm flush 0's estimates make one
    note naming them all, not one each."""
    meta_dir = tmp_path / "perfvar"
    meta_dir.mkdir()
    cal = {"status": "complete", "timer_overhead_ns": 20.0, "t_min_ns": 1.0}
    for rank in range(4):
        doc = {"rank": rank, "calibration": dict(cal, t_diff_ns=1.0)}
        (meta_dir / f"rank-{rank}.json").write_text(json.dumps(doc))
        bad = _doc(noise=4.0)  # the judge confirms nothing
        (meta_dir / f"calibration-rank-{rank}.json").write_text(json.dumps(bad))
    notes = judged_meta(str(tmp_path), range(4)).notes
    flush0 = [n for n in notes if n.startswith("cache state 0: ")]
    assert len(flush0) == 1 and "of rank(s) 0-3 do not confirm" in flush0[0]
