"""A synthetic N-rank trace end to end: written by perfvar's own recorder and OTF2
writer (tests/tools/synth.py driving perfvar-synth), accepted by otf2-print, its
calibration confirmed by the paper's statistics, and `perfvar analyze` naming exactly
the injected anomalies (two slow segment classes, a slow core, a noisy core, a slow
phase), scored by the rules tools/validate.py uses for real runs
(tests/tools/verdicts.py); and a trace of ten nodes of two sockets whose slow node,
slow socket, noisy node and node-wide phase are each named once at their level.

Needs the build's perfvar-synth ($PERFVAR_SYNTH, or bin/ beside $PERFVAR_LIB, or
build/bin); skipped without it. PV_SYNTH_RANKS / PV_SYNTH_SEGMENTS change the size
(the suite: 1024 ranks x 2000 segments, about a minute to generate and analyse on two
cores; see docs/measurements.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[1] / "tools"
POSTPROC = Path(__file__).resolve().parents[2] / "postproc"
sys.path.insert(0, str(TOOLS))

import synth  # noqa: E402
from verdicts import score  # noqa: E402

from perfvar.calibration.judge import judge_document  # noqa: E402
from perfvar.result import load  # noqa: E402

RANKS = int(os.environ.get("PV_SYNTH_RANKS", "1024"))
# 500 steps of four segments: enough samples per cell and enough ~4 ms slices on the
# noisy core (~28) for the tests over all ranks, small enough for a few minutes.
SEGMENTS = int(os.environ.get("PV_SYNTH_SEGMENTS", "2000"))

pytestmark = pytest.mark.skipif(
    not os.access(synth.synth_program(), os.X_OK),
    reason=f"no perfvar-synth at {synth.synth_program()} (build the tests)",
)


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    out = tmp_path_factory.mktemp("synthetic") / "trace"
    t0 = time.monotonic()
    truth = synth.generate(out, RANKS, SEGMENTS)
    print(f"\nsynthetic trace of {RANKS} x {SEGMENTS}: {time.monotonic() - t0:.1f} s")
    return out, truth


def test_ground_truth_and_metadata(trace):
    out, truth = trace
    kinds = sorted(a["kind"] for a in truth["anomalies"])
    assert kinds == sorted(
        ["slow_segment", "slow_segment", "slow_core", "noisy_core", "slow_phase"]
    )
    ranks = [a["rank"] for a in truth["anomalies"]]
    assert len(set(ranks)) == len(ranks)
    phase = next(a for a in truth["anomalies"] if a["kind"] == "slow_phase")
    assert 0 < phase["start_ns"] < phase["end_ns"]
    keys = {c["key"] for c in truth["classes"]}
    assert len(keys) == 4
    for r in (0, RANKS - 1):
        meta = json.loads((out / "perfvar" / f"rank-{r}.json").read_text())
        assert meta["complete"] is True and meta["nranks"] == RANKS
        assert meta["segments"] == truth["segments_per_rank"]
        assert meta["events"]["lost"] == 0
    # One distinct (host, CPU) per rank.
    cpus = set()
    for r in range(RANKS):
        meta = json.loads((out / "perfvar" / f"rank-{r}.json").read_text())
        cpus.add((meta["host"], tuple(meta["cpus"])))
    assert len(cpus) == RANKS


def test_calibration_confirmed_by_the_judge(trace):
    out, truth = trace
    core = next(a["rank"] for a in truth["anomalies"] if a["kind"] == "slow_core")
    for r in sorted({0, core, RANKS - 1}):
        doc = json.loads((out / "perfvar" / f"calibration-rank-{r}.json").read_text())
        meta = json.loads((out / "perfvar" / f"rank-{r}.json").read_text())
        got = judge_document(doc)["states"]["0"]
        assert got["t_min_adds"] == meta["calibration"]["t_min_adds"]
        assert got["t_diff_adds"] == meta["calibration"]["t_diff_adds"]
        assert got["t_min_ns"] == pytest.approx(meta["calibration"]["t_min_ns"])


@pytest.mark.skipif(shutil.which("otf2-print") is None, reason="no otf2-print")
def test_otf2_print_accepts_the_archive(trace):
    out, _ = trace
    p = subprocess.run(
        ["otf2-print", "--silent", "-Werror", str(out / "traces.otf2")],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr[-2000:]


def test_analysis_names_exactly_the_injected(trace):
    out, truth = trace
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(POSTPROC), env.get("PYTHONPATH")])
    )
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-m", "perfvar", "analyze", "--no-html", str(out)],
        capture_output=True,
        text=True,
        env=env,
    )
    elapsed = time.monotonic() - t0
    print(f"\nperfvar analyze on {RANKS} x {SEGMENTS}: {elapsed:.1f} s")
    assert p.returncode == 0, p.stderr[-3000:]
    analysis = load(str(out / "analysis.json"))
    injected = synth.injected(truth)
    # The detectors find each injected anomaly and nothing else; whether a finding is
    # the headline or minor depends on the waiting it caused in the modelled run
    # (with 1024 ranks, a slower segment on one rank is rarely the last one into the
    # Allreduce), so both lists are judged, and the headline is ranked by cost.
    labels = {c["key"]: c["name"] for c in truth["classes"]}
    s = score(injected, analysis, labels, with_minor=True)
    missed = [injected[i] for i in range(len(injected)) if i not in s.hits]
    assert s.exact(len(injected)), f"missed {missed}; wrong names {s.wrong_names}"
    costs = [a.cost_ns for a in analysis.anomalies if a.cost_ns]
    assert costs == sorted(costs, reverse=True)


LEVEL_RANKS = 640  # ten nodes of 64 ranks, two sockets each


@pytest.fixture(scope="module")
def level_trace(tmp_path_factory):
    out = tmp_path_factory.mktemp("levels") / "trace"
    place = synth.Placement(LEVEL_RANKS, 64, 2)
    truth = synth.generate(
        out, LEVEL_RANKS, SEGMENTS, 3, synth.choose_levels(place, 3), 64, sockets=2
    )
    return out, truth


def test_rank_metadata_places_each_rank(level_trace):
    out, truth = level_trace
    assert truth["nodes"] == 10 and truth["sockets_per_node"] == 2
    meta = json.loads((out / "perfvar" / "rank-100.json").read_text())
    assert meta["host"] == "synth-n0001" and meta["cpus"] == [36]
    topo = meta["topology"]
    assert (topo["package"], topo["core"]) == (1, 4)
    assert topo["cpus"] == [{"cpu": 36, "package": 1, "numa": 1, "core": 4}]


def test_each_level_is_named_once_at_its_level(level_trace):
    """A slow node, a slow socket (+5 % each), a noisy node, a node-wide slow phase and
    a slow core on a node of its own: each named once, by its node, socket or rank,
    and no rank under a level named on its own."""
    out, truth = level_trace
    from perfvar.analysis import analyze

    result = analyze(str(out), symbolize_sites=False)
    (out / "analysis.json").write_text(json.dumps(result.to_json()))
    injected = synth.injected(truth)
    assert sorted(i.kind for i in injected) == sorted(
        ["slow_node", "slow_socket", "noisy_node", "node_transient", "slow_core"]
    )
    s = score(injected, result, with_minor=True)
    missed = [injected[i] for i in range(len(injected)) if i not in s.hits]
    assert s.exact(len(injected)), f"missed {missed}; wrong names {s.wrong_names}"
    found = result.anomalies + result.minor
    for lv in truth["levels"]:
        mine = [a for a in found if a.kind == lv["kind"]]
        assert len(mine) == 1 and mine[0].evidence["ranks"] == lv["ranks"]
    # The noisy node costs the job most: it is the headline, named by its node.
    verdict = [a for a in result.anomalies if a.kind == "noisy_node"]
    noisy = next(lv for lv in truth["levels"] if lv["kind"] == "noisy_node")
    assert verdict and verdict[0].host == noisy["node"]


def test_the_reports_view_the_nodes_and_sockets(level_trace, tmp_path):
    """The text report's verdict names the node, its nodes table counts the ranks of
    the nodes with findings; report.html's node x socket heat map renders in
    Chromium, with each node a finding touches listed with its ranks."""
    from chromium_page import render_in_chromium

    from perfvar.report.html import render_html
    from perfvar.report.text import render
    from perfvar.result import Analysis

    out, truth = level_trace
    path = out / "analysis.json"
    if not path.exists():
        pytest.skip("needs test_each_level_is_named_once_at_its_level's analysis")
    result = Analysis.from_json(json.loads(path.read_text()))
    noisy = next(lv for lv in truth["levels"] if lv["kind"] == "noisy_node")
    text = render(result)
    verdict = text.splitlines()[-1]
    assert verdict.startswith(f"verdict: 1 anomalous node: node {noisy['node']} ")
    assert f"{noisy['node']}  {min(noisy['ranks'])}-{max(noisy['ranks'])}" in text
    dom = render_in_chromium(render_html(result), tmp_path)
    assert "fig-node-heatmap" in {a.get("id") for _, a in dom.tags}
    page = render_html(result)
    for lv in truth["levels"]:
        assert f"<summary>{lv['node']}: " in page
