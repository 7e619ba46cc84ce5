"""Counters per compute segment (PERFVAR_METRICS) as the readers give them: the deltas
between a location's Metric events of running totals, the segments each covers, one
column per counter of the trace (NaN where a rank does not count it), and the columns
``perfvar.open(DIR).segments`` puts next to the segments. Synthetic traces from
conftest.write_trace (written as docs/trace-format.md says perfvar writes them); the
Python and native loops agree on them (test_reader_native.py).
"""

import json
import os

import numpy as np
import perfvar
import pytest
from conftest import RESOLUTION_HZ, SEG_A, SEG_B
from perfvar.read import native as reader_native
from perfvar.read.trace import read_trace

HAVE_NATIVE = reader_native._load(tuple(reader_native.candidates())) is not None

TICKS_PER_NS = RESOLUTION_HZ / 1e9
NAMES = ["perf::TASK-CLOCK", "perf::CONTEXT-SWITCHES"]


def durations(n: int = 10) -> dict:
    """Two ranks, two classes: segment i of a location lasts 1000 + 100 i ns."""
    a = np.array([1000.0 + 200 * j for j in range(n)])
    return {r: {SEG_A: a, SEG_B: a + 100} for r in (0, 1)}


def ticks_of(ns: np.ndarray) -> np.ndarray:
    return np.maximum(np.round(ns * TICKS_PER_NS), 4)  # as write_trace rounds them


@pytest.mark.parametrize("reader", ["python", "native"])
def test_deltas_cover_the_segments_since_the_previous_read(
    trace_factory, monkeypatch, reader
):
    if reader == "native" and not HAVE_NATIVE:
        pytest.skip("libperfvar_read not built")
    monkeypatch.setenv("PERFVAR_READER", reader)
    metrics = {0: NAMES, 1: NAMES[1:]}
    t = read_trace(trace_factory("m", durations(), metrics=metrics, metric_every=3))
    assert t.metric_names == NAMES
    for rank, columns in ((0, [0, 1]), (1, [1])):
        rows = t.metrics[t.metrics["rank"] == rank]
        seg = np.flatnonzero(t.samples["rank"] == rank)
        # Every third segment's end read the counters; 20 segments give 6 reads; the
        # last two segments' counts wait for a read that never came.
        assert (rows["sample"] - seg[0]).tolist() == [2, 5, 8, 11, 14, 17]
        assert (rows["first"] - seg[0]).tolist() == [0, 3, 6, 9, 12, 15]
        dur = ticks_of(t.samples["duration_ns"][seg])
        for row in rows:
            covered = dur[row["first"] - seg[0] : row["sample"] - seg[0] + 1].sum()
            for k, c in enumerate(columns):  # the rank's k-th counter: k + 1 per tick
                assert row["values"][c] == pytest.approx((k + 1) * covered)
        missing = sorted(set(range(len(NAMES))) - set(columns))
        assert np.isnan(rows["values"][:, missing]).all()
        assert (rows["time_ticks"] > rows["since_ticks"]).all()
        assert (rows["since_ticks"][1:] == rows["time_ticks"][:-1]).all()


def test_a_trace_without_counters_has_none(trace_factory):
    t = read_trace(trace_factory("none", durations()))
    assert t.metric_names == [] and len(t.metrics) == 0
    cols = perfvar.open(trace_factory("none2", durations())).segments.columns
    assert "metrics_first" not in cols


def test_open_gives_counter_columns_next_to_the_segments(trace_factory):
    path = trace_factory("f", durations(), metrics={0: NAMES, 1: NAMES}, metric_every=2)
    run = perfvar.open(path)
    seg = run.segments
    assert [c for c in NAMES if c in seg.columns] == NAMES
    read = seg["metrics_first"].notna()
    m = run.trace.metrics
    assert np.flatnonzero(read.to_numpy()).tolist() == sorted(m["sample"].tolist())
    assert seg.loc[read, "perf::TASK-CLOCK"].notna().all()
    assert seg.loc[~read, NAMES].isna().all().all()
    # A read covers the segment it ended and, reading every second one, the one before.
    first = seg.loc[read, "metrics_first"].to_numpy()
    assert (np.flatnonzero(read.to_numpy()) - first == 1).all()


GOLDEN = os.environ.get("PV_GOLDEN_TRACE")


@pytest.mark.skipif(
    not GOLDEN
    or not os.path.exists(os.path.join(GOLDEN or ".", "metrics", "expected.json")),
    reason="no golden trace (ctest runs unit.convert first and sets PV_GOLDEN_TRACE)",
)
@pytest.mark.parametrize("reader", ["python", "native"])
def test_counters_written_by_the_converter(monkeypatch, reader):
    """The trace unit.convert wrote with perfvar's own writer: ranks with different
    counters (their own MetricClass, mapped per location), read as it says."""
    if reader == "native" and not HAVE_NATIVE:
        pytest.skip("libperfvar_read not built")
    monkeypatch.setenv("PERFVAR_READER", reader)
    path = os.path.join(GOLDEN, "metrics")
    with open(os.path.join(path, "expected.json")) as fh:
        expected = json.load(fh)["reads"]
    t = read_trace(path)
    assert t.metric_names == ["perf::TASK-CLOCK", "perf::PAGE-FAULTS"]
    offset = {r: int(np.flatnonzero(t.samples["rank"] == r)[0]) for r in (0, 1)}
    got = t.metrics
    assert len(got) == len(expected)
    for row, want in zip(got, expected):
        at = offset[want["rank"]]
        assert (row["rank"], row["sample"], row["first"]) == (
            want["rank"],
            want["sample"] + at,
            want["first"] + at,
        )
        values = {
            n: row["values"][i]
            for i, n in enumerate(t.metric_names)
            if not np.isnan(row["values"][i])
        }
        assert values == want["values"]
