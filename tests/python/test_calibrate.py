"""Algorithms 1 and 2 on synthetic distributions, and `perfvar calibrate` on the real
kernels of libperfvar (skipped when the library is not built: set PERFVAR_LIB)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from perfvar.calibrate import CalibParams, calibrate_state, timer_overhead
from perfvar.filters import filter_cost, filter_os
from perfvar.stats import overlap


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
    params = CalibParams(n=200, p=30, q=80, budget_s=0.3, trees=25)
    r = calibrate_state(synthetic(), 30.0, 0, "0", params)
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
    from perfvar.kernels import Kernels

    return Kernels(lib)


def test_injected_adds_are_resolved_above_t_diff_and_not_below():
    k = _kernels()
    params = CalibParams.quick()
    params.budget_s = 20
    overhead, _ = timer_overhead(k.sample("barrier", 0, 0, 5000))
    r = calibrate_state(
        lambda a: k.sample("barrier", a, 0, params.n), overhead, 0, "0", params
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
            parts[0].append(k.sample("barrier", base, 0, batch))
            parts[1].append(k.sample("barrier", base + extra, 0, batch))
        a0, a1 = (filtered(np.concatenate(p)) for p in parts)
        return overlap(a0, a1, ties=True)

    # A known extra delay of 4 x t_diff is resolved (overlap < alpha) in most tries ...
    resolved = [ov(4 * r.t_diff_adds) < params.alpha for _ in range(5)]
    assert sum(resolved) >= 3, (r.to_json(), resolved)
    # ... and one far below the clock's reach (1 ADD, when t_diff spans many) is not.
    if r.t_diff_adds >= 8:
        claimed = [ov(1) < params.alpha for _ in range(5)]
        assert sum(claimed) <= 1, (r.to_json(), claimed)


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
    assert "t_min" in p.stdout and "barrier" in p.stdout
    doc = json.loads(out.read_text())
    names = [t["name"] for t in doc["timers"]]
    assert names == [
        "barrier",
        "rdtsc",
        "clock_gettime",
        "papi_real_nsec",
        "papi_real_cyc",
        "mpi_wtime",
        "cycles",
    ]
    for t in doc["timers"]:
        assert t["unit"] == ("cycles" if t["name"] == "cycles" else "ns")
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


def test_cycles_timer_unavailable_is_listed_with_the_probes_reason(tmp_path):
    """Where the CPU-cycle counter cannot be read (this VM has no PMU), --compare lists
    it as unavailable, in cycles, with the probe's reason; nothing else is affected."""
    k = _kernels()
    ok, why = k.available("cycles")
    assert k.unit("cycles") == "cycles" and k.unit("barrier") == "ns"
    if ok:
        pytest.skip("this machine has a readable cycle counter")
    assert why
    out = tmp_path / "cal.json"
    p = subprocess.run(
        [sys.executable, "-m", "perfvar", "calibrate", "--quick", "--timers"]
        + ["cycles,barrier", "--states", "0", "--budget", "4", "--json", str(out)]
        + ["--lib", k.path],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert f"cycles          unavailable (CPU cycles): {why}" in p.stdout
    cycles, barrier = json.loads(out.read_text())["timers"]
    assert cycles == {
        "name": "cycles",
        "available": False,
        "unit": "cycles",
        "why": why,
        "overhead_ns": None,
        "overhead_cycles": None,
        "fluctuation_ns": None,
        "fluctuation_cycles": None,
        "states": [],
    }
    assert barrier["available"] and barrier["unit"] == "ns"


def test_cycles_figures_are_reported_in_cycles_never_as_ns():
    from perfvar.calibrate_run import in_unit
    from perfvar.report_calibrate import render

    state = in_unit(
        {"flush": 0, "flush_label": "0", "status": "complete", "t_min_ns": 3000.0}
        | {"t_diff_ns": 40.0, "notes": []},
        "cycles",
    )
    assert state["t_min_ns"] is None and state["t_min_cycles"] == 3000.0
    timer = in_unit(
        {"name": "cycles", "available": True, "unit": "cycles", "overhead_ns": 120.0}
        | {"fluctuation_ns": 8.0, "states": [state]},
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
