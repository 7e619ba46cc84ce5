"""report.html's counter timeline (PERFVAR_METRICS): per rank, the share of wall time
off the CPU and each counter's rate over the run, next to the durations; absent, and
unmentioned, when the trace has no counters."""

from __future__ import annotations

import base64
import json
import os
import re

import numpy as np
import pytest

from conftest import normal_durations, run_cli, write_trace
from perfvar.read.samples import METRIC_DTYPE
from perfvar.result import Analysis
from perfvar.report.plots import (
    HIGHLIGHT,
    MAX_PEER_LINES,
    TIMELINE_POINTS,
    counter_timeline_figure,
)
from perfvar.stats.cpu_time import reads_by_rank
from perfvar.stats.model import Prepared

SLOW_RANK = 1
NRANKS = 4
# A task clock, a software event and an event of any other name (PAPI's preset).
COUNTERS = ["perf::TASK-CLOCK:k=1", "perf::CONTEXT-SWITCHES:k=1", "PAPI_TOT_INS"]
TICKS_PER_NS = 2.5


def _analysed(path: str, metrics) -> str:
    """report.html of ``perfvar analyze`` on 4 ranks, rank 1 slow in class A (as
    test_report_html's trace), each rank counting ``metrics`` (None: none)."""
    durations = normal_durations(seed=1, slow={SLOW_RANK: 272_300.0})
    cpus = {0: 0, 1: 3, 2: 1, 3: 2}
    write_trace(path, durations, cpus=cpus, metrics=metrics, metric_every=2)
    proc = run_cli("analyze", path, "--quiet")
    assert proc.returncode == 0, proc.stderr
    with open(os.path.join(path, "report.html"), encoding="utf-8") as fh:
        return fh.read()


def _figure(page: str, name: str) -> tuple[list[dict], dict]:
    """(traces, layout) of the figure whose div is fig-``name``."""
    start = re.search(rf'Plotly\.newPlot\(\s*"fig-{name}",', page).end()
    decoder = json.JSONDecoder()
    at = page.index("[", start)
    traces, end = decoder.raw_decode(page, at)
    layout, _ = decoder.raw_decode(page, page.index("{", end))
    return traces, layout


def _values(array) -> np.ndarray:
    """A trace's x or y: plotly writes numpy arrays as base64 ("bdata")."""
    if isinstance(array, dict):
        raw = base64.b64decode(array["bdata"])
        return np.frombuffer(raw, dtype=np.dtype(array["dtype"]))
    return np.asarray(array, dtype=float)


def test_counters_are_drawn_per_rank_with_the_named_rank_highlighted(tmp_path):
    page = _analysed(str(tmp_path / "counted"), {r: COUNTERS for r in range(NRANKS)})
    assert 'data-figure="counters"' in page
    traces, layout = _figure(page, "counters")
    panels = [a["text"] for a in layout["annotations"]]
    # The task clock becomes the share off the CPU; every other counter a rate.
    assert panels == [
        "off its CPU (share of wall time)",
        "perf::CONTEXT-SWITCHES:k=1 per second",
        "PAPI_TOT_INS per second",
    ]
    axes = ["y", "y2", "y3"]
    for axis in axes:
        ranks = [
            re.match(r"rank (\d+)", t["name"]).group(1)
            for t in traces
            if t.get("yaxis", "y") == axis
        ]
        assert sorted(ranks) == [str(r) for r in range(NRANKS)], (axis, ranks)
    slow = [t for t in traces if t["name"].startswith(f"rank {SLOW_RANK} (")]
    assert len(slow) == len(axes)
    assert "load imbalance" in slow[0]["name"]  # its instructions: more work
    assert {t["line"]["color"] for t in slow} == {HIGHLIGHT[0]}
    assert {t["line"]["width"] for t in slow} == {2.5}
    others = [t for t in traces if t not in slow]
    assert HIGHLIGHT[0] not in {t["line"]["color"] for t in others}
    # One legend entry per rank, in the first panel only.
    assert sum(bool(t.get("showlegend")) for t in traces) == NRANKS
    # PAPI_TOT_INS counted 3 x the segment's ticks: 7.5e9 per second of segment,
    # a little less per second of wall time (the MPI calls between segments).
    ins = np.concatenate([_values(t["y"]) for t in traces if t.get("yaxis") == "y3"])
    assert np.all((ins > 7e9) & (ins <= 7.5e9 * 1.0001)), ins
    # It sits next to the durations, in the section of the course over the run.
    timelines = page.index('<section id="timelines">')
    assert (
        timelines
        < page.index('data-figure="counters"')
        < page.index('<section id="noise">')
    )


def test_without_counters_the_report_has_no_counter_figure(tmp_path):
    page = _analysed(str(tmp_path / "uncounted"), None)
    assert 'data-figure="timeline-' in page  # the durations are drawn
    assert 'data-figure="counters"' not in page
    assert "fig-counters" not in page and "PERFVAR_METRICS" not in page


def _reads(ranks: int, n: int, names: list[str]) -> np.ndarray:
    """``n`` reads of 10 ms per rank, 1e6 of each counter per read."""
    rows = np.zeros(ranks * n, dtype=METRIC_DTYPE)
    rows["values"] = np.nan
    interval = np.uint64(10e6 * TICKS_PER_NS)
    for r in range(ranks):
        part = rows[r * n : (r + 1) * n]
        part["rank"] = r
        part["since_ticks"] = np.arange(n, dtype=np.uint64) * interval
        part["time_ticks"] = part["since_ticks"] + interval
        part["values"][:, : len(names)] = 1e6
        rows[r * n : (r + 1) * n] = part
    return rows


def _prepared(counters) -> Prepared:
    return Prepared(
        cells={},
        calibration={},
        hosts={},
        samples=np.empty(0),
        segment_ids=[],
        counters=counters,
    )


def _result(ranks: int, named: int) -> dict:
    anomaly = {"kind": "noisy_core", "rank": named, "segment": None, "evidence": {}}
    return {"anomalies": [anomaly], "ranks": [{"rank": r} for r in range(ranks)]}


def test_many_ranks_make_a_band_within_the_point_budget():
    """Any event name, no task clock: rates only; 200 ranks of 2000 reads: the grey
    ranks are one band, the named one a line, the points bounded."""
    ranks = MAX_PEER_LINES + 168
    reads = reads_by_rank(
        _reads(ranks, 2000, ["PAPI_TOT_INS"]), ["PAPI_TOT_INS"], lambda t: t / 2.5
    )
    fig = counter_timeline_figure(
        Analysis.from_json(_result(ranks, 7)), _prepared(reads)
    )
    assert [a.text for a in fig.layout.annotations] == ["PAPI_TOT_INS per second"]
    lines = [t for t in fig.data if t.name and t.name.startswith("rank")]
    assert [t.name for t in lines] == ["rank 7 (noisy core)"]
    assert any(t.name and t.name.startswith("other ranks (199)") for t in fig.data)
    points = sum(len(t.y) for t in fig.data)
    assert points <= TIMELINE_POINTS
    assert _values(lines[0].y) == pytest.approx(1e8)  # 1e6 per 10 ms


def test_reads_by_rank_keeps_each_interval_and_its_time_off_the_cpu():
    rows = _reads(2, 5, ["perf::TASK-CLOCK", "perf::PAGE-FAULTS"])
    rows["values"][rows["rank"] == 1, 0] = 4e6  # 4 of every 10 ms on its CPU
    rows["values"][rows["rank"] == 0, 0] = 10e6 + 5  # read a little after the wall
    reads = reads_by_rank(
        rows,
        ["perf::TASK-CLOCK", "perf::PAGE-FAULTS"],
        lambda t: t / TICKS_PER_NS - 1e6,
    )
    assert sorted(reads) == [0, 1]
    assert list(reads[1].deltas) == ["perf::PAGE-FAULTS"]  # the clock is the share
    assert reads[1].off_cpu_ns == pytest.approx(np.full(5, 6e6))
    assert reads[0].off_cpu_ns == pytest.approx(np.zeros(5))  # floored at 0
    assert reads[0].since_ns[0] == pytest.approx(-1e6)  # on the given origin
    assert reads[0].wall_ns == pytest.approx(np.full(5, 10e6))
    assert reads_by_rank(np.zeros(0, dtype=METRIC_DTYPE), ["x"], lambda t: t) == {}
