"""`perfvar calibrate`'s driver (calibrate_run.run) over fake kernels and a fake clock:
the budget is shared out as time is left (unused time rolls over), large-flush states
stop inside their share, Ctrl-C gives a document marked interrupted, and Algorithm 2
accepts a pair iff its overlap is below alpha. Deterministic: no wall-clock time is asserted."""

from __future__ import annotations

import numpy as np
import pytest

import perfvar.calibration.search as calibrate
import perfvar.calibrate_run as calibrate_run
from perfvar.calibration.search import CalibParams, StateResult, _Search, t_diff_search
from perfvar._spec import TIMER_UNITS, Timer
from calib_docs import recheck

L3 = 32 << 20


class FakeClock:
    """time.monotonic for calibrate and calibrate_run: advances only when told."""

    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t


class FakeKernels:
    """Timers "barrier" and "rdtsc" (ns) and an unavailable "cycles". A sample costs
    ``cost[flush]`` seconds of fake time; chains converge fast (CV < 1 % from about
    700 ADDs, separated from about 30 ADDs)."""

    path = "fake"

    def __init__(self, clock: FakeClock, cost: dict[int, float]) -> None:
        self.clock, self.cost, self.calls = clock, cost, []
        self.rng = np.random.default_rng(0)

    def available(self, timer: str) -> tuple[bool, str]:
        return (False, "no PMU") if timer == Timer.CYCLES else (True, "")

    def unit(self, timer: str) -> str:
        return TIMER_UNITS[timer]

    def cache_size(self, level: int) -> int:
        return {1: 32 << 10, 2: 512 << 10, 3: L3}[level]

    def resolution(self, timer: str) -> float:
        return 0.0  # a clock as fine as its samples

    def clock_info(self) -> dict:
        return {"name": "tsc", "hz": 2e9, "hz_method": "fake", "hz_rel_error": 0.0}

    def sample(self, timer: str, adds: int, flush: int, n: int) -> np.ndarray:
        self.calls.append((timer, adds, flush, n))
        self.clock.t += n * self.cost.get(flush, 1e-6)
        return adds * 0.5 + 30.0 + self.rng.normal(0, 20.0 / 6, n)


@pytest.fixture
def fake(monkeypatch):
    """(clock, kernels, events): run() sees the fake clock and kernels; events
    records every sample call in order."""
    clock = FakeClock()
    events: list[str] = []
    kernels = FakeKernels(clock, {4 * L3: 0.05})
    kernels.clock_info = lambda: {  # type: ignore[method-assign]
        "name": "clock_monotonic_raw",
        "hz": 1e9,
        "hz_method": "clock_gettime ns",
        "hz_rel_error": 0.0,
        "serialized": False,
        "has_cpu_id": True,
        "note": "",
    }
    real_sample = kernels.sample

    def sample(*args):
        events.append("sample")
        return real_sample(*args)

    kernels.sample = sample  # type: ignore[method-assign]

    monkeypatch.setattr(calibrate, "time", clock)
    monkeypatch.setattr(calibrate_run, "time", clock)
    monkeypatch.setattr(calibrate_run, "Kernels", lambda lib: kernels)
    monkeypatch.delenv("PERFVAR_CALIBRATE_INTERRUPT_AFTER", raising=False)
    return clock, kernels, events


def _params() -> CalibParams:
    return CalibParams(n=200, p=2, q=2, tmin_step=1000, min_step=100, trees=25)


def _run(states, timers=(Timer.BARRIER,), budget=40.0):
    return calibrate_run.run(
        timers=list(timers),
        states=list(states),
        params=_params(),
        total_budget_s=budget,
        n_overhead=100,
        quiet=True,
    )


def test_large_flush_state_stops_at_once_and_its_time_rolls_over(fake):
    _, kernels, _ = fake
    doc = _run(["0", "4xL3"], timers=(Timer.BARRIER, Timer.RDTSC))
    by = {(t["name"], s["flush_label"]): s for t in doc["timers"] for s in t["states"]}
    # 4xL3 is measured first, with an equal share (40 s / 4): one distribution of 200
    # samples at 0.05 s each (10 s) cannot fit, so it stops after its first chunk.
    first = by[(Timer.BARRIER, "4xL3")]
    assert first["budget_s"] == pytest.approx(10.0, abs=0.01)
    assert first["status"] == "partial" and "stopped within" in first["notes"][0]
    big = [c for c in kernels.calls if c[2] == 4 * L3]
    assert sum(c[3] for c in big) < 2 * 200  # never a whole distribution each
    assert all(c[3] < 200 for c in big)  # drawn in chunks
    # The time it left rolls over: the later states get more than an equal share.
    assert by[(Timer.RDTSC, "4xL3")]["budget_s"] > 10.0
    assert by[(Timer.BARRIER, "0")]["budget_s"] > 10.0
    assert by[(Timer.RDTSC, "0")]["budget_s"] > 10.0
    assert by[(Timer.BARRIER, "0")]["status"] == "complete"


def test_the_clock_is_in_the_document_and_the_fallback_is_not_called_serialized(fake):
    from perfvar.report.calibrate import render

    doc = _run(["0"], timers=(Timer.BARRIER, Timer.CYCLES))
    assert doc["clock"]["name"] == "clock_monotonic_raw"
    barrier = doc["timers"][0]
    assert barrier["clock"] == "clock_monotonic_raw" and barrier["serialized"] is False
    text = render(doc)
    assert "clock: clock_monotonic_raw, 1 GHz (clock_gettime ns)" in text
    assert "NOT serialized" in text


def test_interrupt_marks_the_current_state_and_the_ones_not_reached(fake, monkeypatch):
    from perfvar.report.calibrate import render

    monkeypatch.setenv("PERFVAR_CALIBRATE_INTERRUPT_AFTER", "1")
    doc = _run(["0", "4xL1", "4xL2"])
    assert doc["interrupted"] is True and doc["complete"] is False
    states = {s["flush_label"]: s for s in doc["timers"][0]["states"]}
    # Measured largest flush first: 4xL2 done, 4xL1 interrupted, 0 never reached.
    assert states["4xL2"]["status"] in ("complete", "partial")
    assert states["4xL1"]["status"] == "interrupted"
    assert states["0"]["status"] == "not measured"
    assert states["0"]["t_min_ns"] is None
    assert "INTERRUPTED" in render(doc)


def test_uninterrupted_run_says_so(fake):
    doc = _run(["0"])
    assert doc["interrupted"] is False
    assert doc["complete"] is (doc["timers"][0]["states"][0]["status"] == "complete")


# ---- Algorithm 2 accepts a pair iff overlap < alpha, in both implementations ----

# Ten samples (filter_os leaves fewer than 16 alone): one fast, nine 100 ns slower.
# A pair shifted by d has overlap 1/10 = alpha for 0 < d <= 100, and 0 beyond.
SPREAD = np.array([0.0] + [100.0] * 9)


def test_t_diff_search_rejects_an_overlap_equal_to_alpha():
    params = CalibParams(n=10, q=2, tdiff_step=100, min_step=10, alpha=0.1)
    r = StateResult(0, "0")
    r.t_min_adds = 1000
    search = _Search(lambda adds: adds + SPREAD, 0.0, params)
    t_diff_search(search, r)
    assert r.t_diff_adds == 110  # d = 100 (overlap exactly alpha) is not accepted
    # Every pair it drew is recorded for the judge, the rejected step too.
    assert {d["d"] for d in search.recorded} >= {100, 110}


def test_recheck_rejects_an_overlap_equal_to_alpha():
    base = 1000.0
    dists = [
        {"kind": "tmin", "adds": 1000, "base": 0, "d": 0, "pair": 0}
        | {"samples_ns": list(1e5 + SPREAD)}
    ]
    for d, shift in ((1, 50.0), (2, 150.0)):  # overlap 0.1, then 0
        for kind, x in (("pair_short", 1e5), ("pair_long", 1e5 + shift)):
            dists.append(
                {"kind": kind, "adds": 0, "base": base, "d": d, "pair": 1}
                | {"samples_ns": list(x + SPREAD)}
            )
    doc = {"epsilon": 0.01, "alpha": 0.1, "p": 1, "q": 1, "distributions": dists}
    r = recheck(doc)
    assert r["t_min_adds"] == 1000
    assert r["t_diff_adds"] == 2 and r["t_diff_overlap"] == 0.0
