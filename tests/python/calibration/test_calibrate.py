"""Algorithms 1 and 2 on synthetic distributions, and `perfvar calibrate` on the real
kernels of libperfvar (skipped when the library is not built: set PERFVAR_LIB)."""

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from perfvar.calibration.search import CalibParams, calibrate_state, timer_overhead
from perfvar.calibration.judge import judge_document
from perfvar.calibration.ranks import judged_meta
from perfvar.stats.filters import filter_cost, filter_os
from perfvar.calibration.kernels import TIMERS
from perfvar._spec import TIMER_UNITS, Timer
from perfvar.stats.summary import overlap


def synthetic(noise_ns=20.0, ns_per_add=0.5, seed=0, n=200):
    """A timer whose error is a fixed-size noise: CV falls as the chain grows."""
    rng = np.random.default_rng(seed)
    return lambda adds: adds * ns_per_add + 30.0 + rng.normal(0, noise_ns / 6, n)


def test_t_min_is_where_cv_drops_below_epsilon():
    params = CalibParams(
        n=200, p=3, q=3, tmin_step=1000, min_step=10, trees=25, budget_s=60
    )
    r = calibrate_state(synthetic(), 30.0, 0, "0", params)
    assert r.status == "complete", r.notes
    # CV = (20/6) / (0.5 adds) < 0.01 needs adds > ~667; a shorter chain fails.
    assert 500 <= r.t_min_adds <= 900
    assert r.t_min_cv < 0.01
    assert r.t_min_ns == pytest.approx(r.t_min_adds * 0.5, rel=0.1)


def test_the_search_reports_the_judges_decision_over_its_own_samples():
    params = CalibParams(
        n=200, p=3, q=3, tmin_step=1000, min_step=10, trees=25, budget_s=60
    )
    r = calibrate_state(synthetic(seed=3), 30.0, 0, "0", params)
    doc = {"epsilon": 0.01, "alpha": 0.05, "p": 3, "q": 3, "trees": 25}
    again = judge_document({**doc, "distributions": r.recorded})["states"]["0"]
    assert r.status == "complete" and len(r.recorded) == r.distributions
    assert (again["t_min_ns"], again["t_diff_ns"]) == (r.t_min_ns, r.t_diff_ns)
    assert (again["t_min_adds"], again["t_diff_adds"]) == (r.t_min_adds, r.t_diff_adds)


def test_t_diff_grows_with_the_noise():
    params = CalibParams(
        n=200, p=2, q=3, tmin_step=1000, min_step=10, trees=25, budget_s=60
    )
    quiet = calibrate_state(synthetic(noise_ns=6), 30.0, 0, "0", params)
    noisy = calibrate_state(synthetic(noise_ns=60), 30.0, 0, "0", params)
    assert quiet.status == noisy.status == "complete"
    assert noisy.t_diff_ns > 2 * quiet.t_diff_ns
    assert quiet.t_diff_overlap < 0.05


def test_budget_gives_partial_never_final():
    # Each distribution takes at least 10 ms (the timer's own time: not this
    # machine's speed), and p = 30 confirmations need 30 of them: 0.3 s > 0.1 s.
    timer = synthetic()

    def slow(adds):
        time.sleep(0.01)
        return timer(adds)

    params = CalibParams(n=200, p=30, q=80, budget_s=0.1, trees=25)
    r = calibrate_state(slow, 30.0, 0, "0", params)
    assert r.status == "partial"
    assert any("budget" in note for note in r.notes)


def test_overlap_with_ties_counts_equal_values():
    a0, a1 = np.array([10.0, 20.0, 20.0]), np.array([20.0, 20.0, 30.0])
    assert overlap(a0, a1) == 0.0  # the paper's strict '<'
    assert overlap(a0, a1, ties=True) == pytest.approx(2 / 3)


def test_timer_overhead_is_the_minimum_and_fluctuation_the_p999_p01_range():
    x = np.concatenate([np.full(998, 20.0), [30.0, 5000.0]])
    overhead, fluct = timer_overhead(x)
    assert overhead == 20.0
    assert 0 < fluct < 5000.0


def _kernels():
    lib = os.environ.get("PERFVAR_LIB")
    if not lib or not os.path.exists(lib):
        pytest.skip("PERFVAR_LIB does not name a built libperfvar.so")
    from perfvar.calibration.kernels import Kernels

    return Kernels(lib)


def _resolution_tries(k, params):
    """Calibrate flush 0 on the real kernel, then time chains of t_min ADDs against
    chains longer by 4 x t_diff, and by 1 ADD, five times each: (the calibration, which
    tries resolved 4 x t_diff, which resolved 1 ADD or None when t_diff is under 8)."""
    overhead, _ = timer_overhead(k.sample(Timer.BARRIER, 0, 0, 5000))
    r = calibrate_state(
        lambda a: k.sample(Timer.BARRIER, a, 0, params.n), overhead, 0, "0", params
    )
    if r.t_min_adds is None or r.t_diff_adds is None:
        pytest.skip(f"calibration did not finish on this machine: {r.notes}")
    base, n = r.t_min_adds, 400

    def filtered(x):  # as the metric was measured: filter_cost, then filter_os
        x = filter_cost(x, overhead)
        return x[filter_os(x, params.trees)[0]]

    def ov(extra, batch=20):
        # A0 and A1 in alternating small batches, so a change of machine load during
        # the test shifts both alike instead of separating them.
        parts = [[], []]
        for _ in range(n // batch):
            parts[0].append(k.sample(Timer.BARRIER, base, 0, batch))
            parts[1].append(k.sample(Timer.BARRIER, base + extra, 0, batch))
        a0, a1 = (filtered(np.concatenate(p)) for p in parts)
        return overlap(a0, a1, ties=True)

    resolved = [ov(4 * r.t_diff_adds) < params.alpha for _ in range(5)]
    claimed = [ov(1) < params.alpha for _ in range(5)] if r.t_diff_adds >= 8 else None
    return r, resolved, claimed


def test_injected_adds_are_resolved_above_t_diff_and_not_below():
    # A known extra delay of 4 x t_diff is resolved (overlap < alpha) in most tries, and
    # one far below the clock's reach (1 ADD, when t_diff spans many) is not. The
    # calibration and the tries run on a shared machine: when its load changes between
    # them (a host slow phase once made t_min 13.5 us and resolved 1 try of 5), the
    # whole calibration is made again, up to three times; a t_diff that does not mean
    # what it says fails all three.
    k = _kernels()
    params = CalibParams.quick()
    params.budget_s = 20
    attempts = []
    for _ in range(3):
        r, resolved, claimed = _resolution_tries(k, params)
        attempts.append((r.to_json(), resolved, claimed))
        if sum(resolved) >= 3 and (claimed is None or sum(claimed) <= 1):
            return
    pytest.fail(f"no attempt resolved 4 x t_diff in 3 of 5 tries and 1 ADD in at most "
                f"1: {attempts}")


def test_cli_quick_writes_the_json_layout(tmp_path):
    k = _kernels()
    out = tmp_path / "cal.json"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "perfvar",
            "calibrate",
            "--quick",
            "--compare",
            "--states",
            "0,4xL1",
            "--budget",
            "12",
            "--json",
            str(out),
            "--lib",
            k.path,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert "t_min" in p.stdout and Timer.BARRIER in p.stdout
    doc = json.loads(out.read_text())
    names = [t["name"] for t in doc["timers"]]
    assert names == list(TIMERS)  # every timer (test_spec: the library's names)
    assert doc["clock"]["name"] and doc["clock"]["hz"] > 0
    assert doc["complete"] in (True, False) and doc["interrupted"] is False
    for t in doc["timers"]:
        assert t["unit"] == TIMER_UNITS[t["name"]]
        if not t["available"]:
            assert t["why"]
            continue
        if t["unit"] == "cycles":  # a machine with a readable PMU: figures in cycles
            assert t["overhead_ns"] is None and t["overhead_cycles"] >= 0
            for s in t["states"]:
                assert s["t_min_ns"] is None and "t_min_cycles" in s
            continue
        assert t["overhead_ns"] >= 0 and t["fluctuation_ns"] >= 0
        assert [s["flush_label"] for s in t["states"]] == ["0", "4xL1"]
        for s in t["states"]:
            assert set(s) >= {"flush", "t_min_ns", "t_diff_ns", "status"}
            assert s["status"] in ("complete", "partial")
            if s["status"] == "complete":
                assert s["t_min_ns"] > 0 and s["t_diff_ns"] is not None


CYCLE_TIMERS = [t for t, unit in TIMER_UNITS.items() if unit == "cycles"]


@pytest.mark.parametrize("timer", CYCLE_TIMERS)
def test_cycle_timer_unavailable_is_listed_with_the_probes_reason(tmp_path, timer):
    """Where a CPU-cycle counter cannot be read (a VM without a PMU), --compare lists
    it as unavailable, in cycles, with the probe's reason (PAPI's own for papi_read);
    nothing else is affected."""
    k = _kernels()
    ok, why = k.available(timer)
    assert k.unit(timer) == "cycles" and k.unit(Timer.BARRIER) == "ns"
    if ok:
        pytest.skip(f"this machine can read {timer}")
    assert why
    out = tmp_path / "cal.json"
    p = subprocess.run(
        [sys.executable, "-m", "perfvar", "calibrate", "--quick", "--timers"]
        + [f"{timer},{Timer.BARRIER}", "--states", "0", "--budget", "4"]
        + ["--json", str(out)]
        + ["--lib", k.path],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert f"{timer:<15} unavailable (CPU cycles): {why}" in p.stdout
    cycles, barrier = json.loads(out.read_text())["timers"]
    assert cycles == {
        "name": timer,
        "available": False,
        "unit": "cycles",
        "why": why,
        "overhead_ns": None,
        "overhead_cycles": None,
        "fluctuation_ns": None,
        "fluctuation_cycles": None,
        "granularity_ns": None,
        "granularity_cycles": None,
        "states": [],
    }
    assert barrier["available"] and barrier["unit"] == "ns"


def _calibrate(k, out, *args):
    """The `perfvar calibrate --quick` command line writing JSON to out."""
    cmd = [sys.executable, "-m", "perfvar", "calibrate", "--quick", "--json", str(out)]
    return cmd + ["--lib", k.path, *args]


@pytest.mark.parametrize(
    "clock, name, serialized, note",
    [
        ("clock_monotonic_raw", "clock_monotonic_raw", False, ""),
        ("cntvct", None, True, "PERFVAR_CLOCK=cntvct is not available here"),
    ],
)
def test_the_clock_in_use_is_reported(tmp_path, clock, name, serialized, note):
    """PERFVAR_CLOCK's choice (and any fallback) is in the table header and the
    JSON; the unfenced clock_gettime fallback is not presented as a fenced barrier."""
    k = _kernels()
    native = k.clock_info()["name"]
    if clock == "cntvct" and native == "cntvct":
        pytest.skip("cntvct is this machine's native clock")
    out = tmp_path / "cal.json"
    p = subprocess.run(
        _calibrate(k, out, "--timers", Timer.BARRIER, "--states", "0", "--budget", "2"),
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PERFVAR_CLOCK=clock),
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    want = name or native
    assert doc["clock"]["name"] == want and doc["clock"]["hz"] > 0
    assert doc["clock"]["serialized"] is serialized
    assert doc["clock"]["note"].startswith(note)
    barrier = doc["timers"][0]
    assert barrier["clock"] == want and barrier["serialized"] is serialized
    assert f"clock: {want}, " in p.stdout
    assert ("NOT serialized" in p.stdout) is (not serialized)
    if note:
        assert f"clock note: {note}" in p.stdout


def _check_interrupted(p, out, first_done):
    """rc 130, the table printed, the JSON written and marked not complete."""
    assert p.returncode == 130, p.stderr
    assert "interrupted" in p.stderr and "error" not in p.stderr
    assert "INTERRUPTED" in p.stdout and Timer.CLOCK_GETTIME in p.stdout
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True and doc["complete"] is False
    got = {s["flush_label"]: s["status"] for s in doc["timers"][0]["states"]}
    # Largest flush first: 4xL2, then 4xL1, then 0.
    assert got["4xL2"] in ("complete", "partial") and first_done in p.stderr
    assert got["4xL1"] == "interrupted"
    assert got["0"] == "not measured"


def _three_states(tmp_path, budget_s: str):
    """The command both interrupt tests run (clock_gettime, flush 0, 4xL1 and 4xL2) and
    its --json path."""
    out = tmp_path / "cal.json"
    states = ["--timers", Timer.CLOCK_GETTIME, "--states", "0,4xL1,4xL2"]
    return _calibrate(_kernels(), out, *states, "--budget", budget_s), out


def test_ctrl_c_after_the_first_state_gives_partial_table_and_json(tmp_path):
    """A real SIGINT in the second state's first sample, sent by the process to itself
    (PERFVAR_CALIBRATE_INTERRUPT_AFTER): a state can end before any outside sender
    could aim at it."""
    command, out = _three_states(tmp_path, "3")
    p = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PERFVAR_CALIBRATE_INTERRUPT_AFTER="1"),
    )
    _check_interrupted(p, out, f"calibrate: 1/3 {Timer.CLOCK_GETTIME} flush 4xL2")


def test_cycles_figures_are_reported_in_cycles_never_as_ns():
    from perfvar.calibrate_run import in_unit
    from perfvar.report.calibrate import render

    state = in_unit(
        {"flush": 0, "flush_label": "0", "status": "complete", "t_min_ns": 3000.0}
        | {"t_diff_ns": 40.0, "notes": []},
        "cycles",
    )
    assert state["t_min_ns"] is None and state["t_min_cycles"] == 3000.0
    timer = in_unit(
        {"name": Timer.CYCLES, "available": True, "unit": "cycles"}
        | {"overhead_ns": 120.0, "fluctuation_ns": 8.0, "states": [state]},
        "cycles",
    )
    assert in_unit(timer, "ns") is timer  # ns timers are left alone
    doc = {
        "cpu": 0,
        "params": {"n": 200, "p": 3, "q": 3, "epsilon": 0.01, "alpha": 0.05}
        | {"budget_s": 1.0},
        "flush_bytes": {"0": 0},
        "timers": [timer],
    }
    text = render(doc)
    assert "120 cyc" in text and "3000 cyc" in text and "40 cyc" in text
    assert " ns" not in text.split("\n")[4]  # the cycles row shows no ns


def test_calibrate_and_the_analysis_decide_the_same_for_the_same_samples(tmp_path):
    k = _kernels()
    table, samples = tmp_path / "cal.json", tmp_path / "samples.json"
    p = subprocess.run(
        [sys.executable, "-m", "perfvar", "calibrate", "--quick", "--states", "0"]
        + ["--budget", "20", "--json", str(table), "--samples", str(samples)]
        + ["--lib", k.path, "--quiet"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert p.returncode == 0, p.stderr
    reported = json.loads(table.read_text())["timers"][0]["states"][0]
    doc = json.loads(samples.read_text())["timers"][Timer.BARRIER]
    assert len(doc["distributions"]) == reported["distributions"]
    # The stored samples as a trace's start-up calibration of rank 0: the analysis
    # takes the C estimates (1 ns here) only where the judge does not confirm.
    meta_dir = tmp_path / "trace" / "perfvar"
    meta_dir.mkdir(parents=True)
    cal = {"status": "complete", "timer_overhead_ns": 0.0}
    cal.update(t_min_ns=1.0, t_diff_ns=1.0)
    (meta_dir / "rank-0.json").write_text(json.dumps({"rank": 0, "calibration": cal}))
    (meta_dir / "calibration-rank-0.json").write_text(json.dumps(doc))
    judged = judged_meta(str(tmp_path / "trace"), [0]).ranks[0].calibration
    if reported["t_min_ns"] is not None and reported["t_diff_ns"] is not None:
        assert (judged.t_min_ns, judged.t_diff_ns) == (
            reported["t_min_ns"],
            reported["t_diff_ns"],
        )
    else:  # the budget ran out here: neither side may claim a value
        assert judged.t_min_ns == 1.0 and judged.source.startswith("C estimate")


def test_the_clock_step_is_measured_on_a_sweep_of_chains():
    # Chains of 0 .. 255 ADDs last different times on any core: the sweep shows more
    # than one value, so the step is found and is finer than the whole sweep.
    k = _kernels()
    step = k.resolution(Timer.BARRIER)
    longest = float(np.median(k.sample(Timer.BARRIER, 255, 0, 101)))
    assert 0 < step < longest
