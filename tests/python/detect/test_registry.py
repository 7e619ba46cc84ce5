"""The one table of the kinds of findings (perfvar.detect.KINDS): every detector module
is in it and declares itself whole, every finding the detectors make is put in words
by its own detector, and the reports read the table: a kind added to the table alone
reaches the text report, the HTML report, the markers and analysis.json."""

from __future__ import annotations

import importlib
import json
import pkgutil

import numpy as np
import pytest

import perfvar.detect as detect
from conftest import make_prepared, normal_durations, write_trace
from perfvar.analysis import analyze
from perfvar.detect.finding import SUBJECTS, WINDOW, FindingKind
from perfvar.stats.model import DetectParams
from perfvar.report.html import render_html
from perfvar.report.markers import marker_lines
from perfvar.report.text import render
from perfvar.result import Analysis, Finding

HELPERS = {"finding", "levels", "words"}  # modules of the package that are no detector


def detector_modules():
    for info in pkgutil.iter_modules(detect.__path__):
        if info.name not in HELPERS:
            yield importlib.import_module(f"perfvar.detect.{info.name}")


def test_every_detector_module_is_registered_whole():
    modules = list(detector_modules())
    assert len(modules) == len(detect.KINDS)
    for m in modules:
        assert callable(m.detect), m.__name__
        assert m.FINDING.name == m.KIND, m.__name__
        assert detect.KINDS[m.KIND] is m.FINDING, m.__name__
        assert m.FINDING.word and callable(m.FINDING.describe)
        # A verdict names a rank: it needs a phrase for the verdict line and a size
        # for the markers' severity; an informational kind has neither.
        assert (m.FINDING.phrase is not None) == m.FINDING.verdict, m.__name__
        assert (m.FINDING.size_key is not None) == m.FINDING.verdict, m.__name__
        # What it is about decides its excess per segment, its causes and its drawing.
        assert m.FINDING.subject in SUBJECTS, m.__name__
    # One summary key a kind, never two kinds under one key.
    keys = [k.summary_key for k in detect.KINDS.values() if k.summary_key]
    assert len(keys) == len(set(keys)) and all(k.endswith("_ranks") for k in keys)


def test_each_finding_is_described_by_its_detector():
    """A slow segment (rank 2, +30 %) and a rank sharing its CPU with another: each
    anomaly's sentence is its kind's own, never the raw-evidence fallback."""
    rng = np.random.default_rng(3)
    samples = {
        (seg, rank): rng.normal(1000.0 * (1 + seg), 5.0, 400)
        * (1.3 if (seg, rank) == (0, 2) else 1.0)
        for seg in range(2)
        for rank in range(4)
    }
    prep = make_prepared(samples)
    prep.hosts = {r: "node" for r in prep.hosts}
    prep.samples["cpu_enter"][prep.samples["rank"] == 1] = 0  # rank 1 on rank 0's CPU
    found, _ = detect.run_all(prep, DetectParams())
    kinds = {(a.kind, a.rank) for a in found}
    assert ("slow_segment", 2) in kinds and ("shared_cpu", 0) in kinds
    for a in found:
        doc = a.to_json()
        text = detect.describe(doc, {})
        assert text.startswith(f"rank {a.rank} (host ") and str(doc["evidence"]) not in text


@pytest.fixture
def hot_cache(monkeypatch):
    """A kind of finding that only the table knows."""
    kind = FindingKind(
        name="hot_cache",
        verdict=True,
        word="hot cache",
        describe=lambda a, labels: f"rank {a['rank']} ran its caches hot",
        phrase=lambda a: "caches hot",
        size_key="heat",
        subject=WINDOW,
        summary_key="hot_cache_ranks",
    )
    monkeypatch.setitem(detect.KINDS, kind.name, kind)
    return kind


def test_a_kind_added_to_the_table_alone_reaches_every_report(tmp_path, hot_cache):
    path = str(tmp_path / "run")
    write_trace(path, normal_durations(seed=2))
    result = analyze(path)
    assert result.anomalies == []
    # A new kind is a Finding like any other: no class of its own in the result.
    result.anomalies = [
        Finding("hot_cache", 3, host="node0", cpu=3, evidence={"heat": 0.3})
    ]
    result.summary.anomalous_ranks = [3]

    text = render(result)
    assert "- rank 3 ran its caches hot" in text
    assert "caches hot" in text.splitlines()[-1]  # the verdict line

    html = render_html(result)
    assert "rank 3 ran its caches hot" in html and ">hot cache<" in html

    (line,) = marker_lines(result, {3: [3]})
    category, severity = line.split("\t")[:2]
    assert (category, severity) == ("hot_cache high", "HIGH")  # heat 30 %

    assert json.loads(json.dumps(detect.kinds_json()))["hot_cache"] == {
        "verdict": True,
        "transient": False,
        "word": "hot cache",
        "size_key": "heat",
        "owner": "machine",
    }
    assert detect.describe(result.anomalies[0], {}) == "rank 3 ran its caches hot"
    again = Analysis.from_json(json.loads(json.dumps(result.to_json())))
    assert again.anomalies == result.anomalies


def test_a_kind_added_to_the_table_alone_is_summarised_and_costed(tmp_path, hot_cache):
    """Its summary key lists its ranks in analysis.json; its subject (a window) spreads
    its excess over the rank's segments in the window, as a slow phase's."""
    from types import SimpleNamespace

    from perfvar.analysis import _summary
    from perfvar.read.samples import class_totals
    from perfvar.read.trace import read_trace
    from perfvar.stats.model import Anomaly
    from perfvar.verdict import delay_cost, wait_states

    path = str(tmp_path / "run")
    write_trace(path, normal_durations(seed=2))
    trace = read_trace(path)
    hot = Anomaly("hot_cache", 3, "node1", 3, "S0", None, {"excess_rel": 0.5})
    hot.start_ns, hot.end_ns = 0.0, 1e18
    ranked = SimpleNamespace(anomalies=[hot], minor=[], consequences=[], cost_known=True)
    order = list(range(len(trace.segments)))
    ids = {seg: f"S{seg}" for seg in order}
    totals = class_totals(trace.samples, len(trace.segments))
    summary = _summary(trace, totals, order, ids, [], ranked, {})
    doc = summary.to_json()  # its summary key, in analysis.json's summary
    assert doc["hot_cache_ranks"] == [3] and doc["anomalous_ranks"] == [3]
    assert summary.kind_ranks["hot_cache_ranks"] == [3]
    tl = wait_states.build_timeline(trace.samples, trace.segments, trace.trace_ns)
    excess = delay_cost.segment_excess(hot, tl, trace.samples, [ids[s] for s in order])
    mine = trace.samples["segment"][tl.segments[3]] == 0
    assert mine.any() and not mine.all()
    d = trace.samples["duration_ns"][tl.segments[3]]
    assert np.allclose(excess[mine], d[mine] * 0.5 / 1.5) and not excess[~mine].any()
