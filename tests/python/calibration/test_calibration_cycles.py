"""The start-up calibration's pass on the CPU-cycle counter: read from rank-N.json,
confirmed by the paper's statistics over calibration-rank-N.json's samples_cycles,
reported per rank in analysis.json and summed up in the text report; never used to
judge segments."""

import json

from calib_docs import _doc, recheck

from conftest import CALIBRATION, normal_durations
from perfvar.analysis import analyze
from perfvar.calibration.ranks import judged_meta
from perfvar.report.text import render

CYCLES_PER_NS = 2.5  # the stored cycle samples: the ns ones at 2.5 GHz


def _cycles_doc(**kw):
    """_doc's distributions as the cycle counter's pass stores them."""
    doc = _doc(**kw)
    for d in doc["distributions"]:
        d["samples_cycles"] = [round(v * CYCLES_PER_NS, 1) for v in d.pop("samples_ns")]
    return doc


def _available(t_min=999.0, t_diff=99.0, status="complete"):
    return {
        "available": True,
        "counter": "rdpmc",
        "timer_overhead_cycles": 40.0,
        "clock_granularity_cycles": 1.0,
        "state": {
            "label": "0",
            "status": status,
            "note": "",
            "t_min_cycles": t_min,
            "t_diff_cycles": t_diff,
            "cycles_per_add": 0.75,
        },
    }


def test_recheck_in_cycles_finds_the_same_chain_lengths_as_in_ns():
    ns, cyc = recheck(_doc()), recheck(_cycles_doc(), unit="cycles")
    assert cyc["t_min_adds"] == ns["t_min_adds"] == 512
    assert cyc["t_diff_adds"] == ns["t_diff_adds"]
    assert abs(cyc["t_min_cycles"] - CYCLES_PER_NS * ns["t_min_ns"]) < 5.0
    assert "t_min_ns" not in cyc


def test_reader_takes_the_pass_or_why_there_was_none(tmp_path):
    meta_dir = tmp_path / "perfvar"
    meta_dir.mkdir()
    calibrations = {
        0: {**CALIBRATION, "cycles": _available()},
        1: {**CALIBRATION, "cycles": {"available": False, "why": "no PMU in the VM"}},
        2: dict(CALIBRATION),  # written before the pass existed
        3: {**CALIBRATION, "cycles": _available()},
    }
    for rank, cal in calibrations.items():
        (meta_dir / f"rank-{rank}.json").write_text(
            json.dumps({"rank": rank, "calibration": cal})
        )
    good = {**_doc(), "cycles": {"distributions": _cycles_doc()["distributions"]}}
    (meta_dir / "calibration-rank-0.json").write_text(json.dumps(good))
    noisy = {
        **_doc(),
        "cycles": {"distributions": _cycles_doc(noise=4.0)["distributions"]},
    }
    (meta_dir / "calibration-rank-3.json").write_text(json.dumps(noisy))
    meta = judged_meta(str(tmp_path), [0, 1, 2, 3])
    c0 = meta.ranks[0].calibration.cycles
    assert c0.available and c0.counter == "rdpmc" and c0.status == "complete"
    assert c0.source.startswith("paper") and c0.t_min_cycles != 999.0  # replaced
    assert c0.timer_overhead_cycles == 40.0 and c0.cycles_per_add == 0.75
    c1 = meta.ranks[1].calibration.cycles
    assert not c1.available and c1.why == "no PMU in the VM"
    assert c1.t_min_cycles is None
    assert meta.ranks[2].calibration.cycles.why == "not recorded"
    c3 = meta.ranks[3].calibration.cycles
    assert c3.t_min_cycles == 999.0 and "not confirmed" in c3.source  # kept, labelled
    # The pass never decides whether a rank is calibrated: the wall clock does.
    assert all(meta.ranks[r].calibrated for r in (1, 2))


def test_analysis_reports_the_pass_without_judging_by_it(trace_factory):
    durations = normal_durations(seed=3, slow={1: 272_300.0})
    with_pass = {**CALIBRATION, "cycles": _available(t_min=1200.0, t_diff=40.0)}
    partial = {
        **CALIBRATION,
        "cycles": _available(t_min=1500.0, t_diff=55.0, status="partial"),
    }
    plain = analyze(trace_factory("plain", durations))
    path = trace_factory(
        "cycles", durations, calibration={0: with_pass, 1: with_pass, 2: partial}
    )
    result = analyze(path)
    rows = {r.rank: r for r in result.ranks}
    assert rows[0].calibration_cycles["t_min_cycles"] == 1200.0
    assert rows[3].calibration_cycles == {
        **rows[3].calibration_cycles,
        "available": False,
        "why": "not recorded",
    }
    assert [r.verdict for r in result.ranks] == [r.verdict for r in plain.ranks]
    text = render(result)
    line = next(x for x in text.splitlines() if x.startswith("cycle counter"))
    assert "rdpmc" in line and "3 ranks" in line
    assert "t_min 1200-1500 cycles" in line and "t_diff 40-55 cycles" in line
    assert "not final on rank(s) 2" in line
    assert not any(x.startswith("cycle counter") for x in render(plain).splitlines())
