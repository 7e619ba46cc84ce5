"""A rank with no t_min/t_diff of its own or from its host is judged with those of a
`perfvar calibrate --json` file of its machine (perfvar.calibration.machine_file),
when the file measured its host with its clock; otherwise it is not judged."""

import json
import os

import pytest
from conftest import CALIBRATION, RESOLUTION_HZ, normal_durations, run_cli
from perfvar.calibration.machine_file import read_file
from perfvar.calibration.ranks import judged_meta
from perfvar.errors import TraceError
from perfvar.read.meta import JUDGE_UNCALIBRATED, UNCALIBRATED_JUDGED
from perfvar.stats.cells import RELATIVE_ONLY

# What a quick start-up calibration cut short writes: 0 where it found nothing.
NOTHING_FOUND = {"mode": "quick", "status": "partial", "timer_overhead_ns": 20.0,
                 "t_min_ns": 0.0, "t_diff_ns": 0.0}
TSC = {"name": "tsc", "hz": float(RESOLUTION_HZ)}


def _calibrate_run(host, states, clock=TSC, timer="barrier"):
    """One process's `perfvar calibrate --json` document (the fields read)."""
    return {"host": host, "clock": clock, "timers": [{"name": timer, "states": [
        {"flush": flush, "flush_label": label, "status": "complete",
         "t_min_ns": t_min, "t_diff_ns": t_diff} for label, flush, t_min, t_diff in states
    ]}]}


def _write(tmp_path, doc):
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(doc))
    return str(path)


def _uncalibrated_run(tmp_path, nranks=2, host="node0"):
    os.makedirs(tmp_path / "perfvar")
    for rank in range(nranks):
        doc = {"rank": rank, "host": host, "clock": TSC, "calibration": NOTHING_FOUND}
        (tmp_path / "perfvar" / f"rank-{rank}.json").write_text(json.dumps(doc))
    return str(tmp_path)


def test_ranks_none_on_their_host_could_lend_to_take_the_files_largest(tmp_path):
    # Under mpiexec the file holds one run per rank: per state the largest of each.
    path = _write(tmp_path, {"nranks": 2, "ranks": [
        _calibrate_run("node0", [("0", 0, 300.0, 12.0), ("4xL1", 196608, 900.0, 40.0)]),
        _calibrate_run("node0", [("0", 0, 250.0, 20.0)]),
    ]})
    meta = judged_meta(_uncalibrated_run(tmp_path), [0, 1], judge=False,
                       machine=(read_file(path), path))
    for rank in (0, 1):
        m = meta.ranks[rank]
        assert m.calibrated
        assert (m.calibration.t_min_ns, m.calibration.t_diff_ns) == (300.0, 20.0)
        states = {st.label: st for st in m.calibration.states}
        assert (states["4xL1"].t_min_ns, states["4xL1"].t_diff_ns) == (900.0, 40.0)
        assert {st.status for st in m.calibration.states} == {"borrowed"}
        assert m.calibration.source == f"borrowed: perfvar calibrate {path} on host node0"
        assert f"judged with those of {path}" in m.problem
    assert (f"no usable t_min/t_diff on their host for rank(s) 0-1: judged with those "
            f"of {path} (perfvar calibrate)") in meta.notes
    assert not any("not judged" in n for n in meta.notes)


@pytest.mark.parametrize("run, why", [
    (_calibrate_run("elsewhere", [("0", 0, 300.0, 12.0)]), "no run on host node0"),
    (_calibrate_run("node0", [("0", 0, 300.0, 12.0)], clock={"name": "clock_gettime"}),
     "clock clock_gettime against the run's tsc"),
    (_calibrate_run("node0", [("0", 0, 300.0, 12.0)],
                    clock={"name": "tsc", "hz": 2.0e9}), "clock rate 2e+09 Hz against"),
    (_calibrate_run("node0", [("0", 0, 300.0, 12.0)], timer="rdtsc"),
     "no t_min/t_diff in it"),
])
def test_a_file_of_another_host_or_clock_lends_nothing(tmp_path, run, why):
    path = _write(tmp_path, run)
    meta = judged_meta(_uncalibrated_run(tmp_path), [0, 1], judge=False,
                       machine=(read_file(path), path))
    assert not any(m.calibrated for m in meta.ranks.values())
    assert any(n.startswith(f"{path} lends no t_min/t_diff to rank(s) 0-1: {why}")
               for n in meta.notes), meta.notes
    assert (f"no usable t_min/t_diff for rank(s) 0-1: "
            f"{UNCALIBRATED_JUDGED} ({JUDGE_UNCALIBRATED})"
            in meta.notes)


def test_ranks_with_values_of_their_own_or_their_hosts_keep_them(tmp_path):
    os.makedirs(tmp_path / "perfvar")
    for rank, cal in ((0, CALIBRATION), (1, NOTHING_FOUND)):
        doc = {"rank": rank, "host": "node0", "clock": TSC, "calibration": cal}
        (tmp_path / "perfvar" / f"rank-{rank}.json").write_text(json.dumps(doc))
    path = _write(tmp_path, _calibrate_run("node0", [("0", 0, 5000.0, 500.0)]))
    meta = judged_meta(str(tmp_path), [0, 1], judge=False,
                       machine=(read_file(path), path))
    assert meta.ranks[0].calibration.t_min_ns == CALIBRATION["t_min_ns"]
    assert meta.ranks[1].calibration.t_min_ns == CALIBRATION["t_min_ns"]  # host's first
    assert not any(path in n for n in meta.notes)


def test_not_a_calibrate_file_is_refused(tmp_path):
    path = _write(tmp_path, {"ranks": [{"rank": 0}]})
    with pytest.raises(TraceError, match="not a `perfvar calibrate --json` file"):
        read_file(path)
    with pytest.raises(TraceError, match="--calibration"):
        read_file(str(tmp_path / "missing.json"))


def test_a_slow_rank_of_a_run_that_calibrated_nowhere_is_named_with_the_file(
    trace_factory, tmp_path
):
    nranks = 4
    durations = normal_durations(seed=7, nranks=nranks, slow={1: 40_000.0})
    trace = trace_factory("nowhere", durations,
                          calibration={r: NOTHING_FOUND for r in range(nranks)})
    proc = run_cli("analyze", trace)
    assert proc.returncode == 0, proc.stderr
    doc = json.load(open(os.path.join(trace, "analysis.json")))
    # Its segments are over 1000x the timer overhead: judged with the relative floor
    # alone, and said so.
    assert [(a["kind"], a["rank"]) for a in doc["anomalies"]] == [("slow_segment", 1)]
    assert doc["anomalies"][0]["evidence"]["cache_state"] == RELATIVE_ONLY
    assert "the relative floor alone" in proc.stdout
    lend = {**CALIBRATION}
    path = _write(tmp_path, {"ranks": [
        _calibrate_run(f"node{n}", [("0", 0, lend["t_min_ns"], lend["t_diff_ns"])])
        for n in range(nranks // 2)
    ]})
    proc = run_cli("analyze", trace, "--calibration", path)
    assert proc.returncode == 0, proc.stderr
    doc = json.load(open(os.path.join(trace, "analysis.json")))
    assert [(a["kind"], a["rank"]) for a in doc["anomalies"]] == [("slow_segment", 1)]
    assert doc["anomalies"][0]["evidence"]["cache_state"] != RELATIVE_ONLY
    assert f"judged with those of {path} (perfvar calibrate)" in proc.stdout


def test_parallel_analysis_lends_the_file_as_the_serial_one(trace_factory, tmp_path):
    from perfvar.analysis import PARALLEL_MIN_RANKS, analyze

    nranks = PARALLEL_MIN_RANKS + 2
    durations = normal_durations(seed=7, nranks=nranks, slow={5: 40_000.0})
    calibration = {r: CALIBRATION for r in range(nranks)}
    calibration[4] = calibration[5] = NOTHING_FOUND  # node2: nobody to lend
    trace = trace_factory("nowherewide", durations, calibration=calibration)
    path = _write(tmp_path, _calibrate_run("node2", [("0", 0, 150.3, 4.1)]))
    serial = analyze(trace, symbolize_sites=False, jobs=1, calibration_file=path)
    parallel = analyze(trace, symbolize_sites=False, jobs=2, calibration_file=path)
    for result in (serial, parallel):
        assert result.params.engine
        result.params.engine = {}
    assert json.dumps(parallel.to_json(), sort_keys=True) == json.dumps(
        serial.to_json(), sort_keys=True
    )
    assert serial.summary.kind_ranks["slow_ranks"] == [5]
