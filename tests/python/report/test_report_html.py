"""report.html: written by ``perfvar analyze``, self-contained, names the anomaly, and
renders in a real browser without errors.

The browser test needs headless Chromium (Debian package ``chromium``); it is
skipped only when the ``chromium`` binary is absent.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys

import numpy as np
import pytest
from waits_sim import simulate

from chromium_page import parse, render_in_chromium
from conftest import normal_durations, run_cli, write_trace
from perfvar.verdict import headline, off_cpu, time_slicing
from perfvar.cli import main
from perfvar.stats.model import Anomaly
from perfvar.report.html import render_html
from perfvar.result import Analysis
from perfvar.report.plots import (
    HEATMAP_ROWS,
    binned_medians,
    heatmap_rows,
    shift_heatmap,
    waits_by_rank,
    waits_figure,
)

SLOW_RANK = 1


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    """(trace dir, CLI stdout, analysis.json): 4 ranks, rank 1 runs class A 272 us
    slower (as conftest's slow_trace), analysed once by the CLI for the module."""
    path = str(tmp_path_factory.mktemp("report") / "slow")
    durations = normal_durations(seed=1, slow={SLOW_RANK: 272_300.0})
    write_trace(path, durations, cpus={0: 0, 1: 3, 2: 1, 3: 2})
    proc = run_cli("analyze", path)
    assert proc.returncode == 0, proc.stderr
    with open(os.path.join(path, "analysis.json")) as fh:
        doc = json.load(fh)
    return path, proc.stdout, doc


def _slow_segment(doc) -> str:
    (anomaly,) = doc["anomalies"]
    assert anomaly["kind"] == "slow_segment" and anomaly["rank"] == SLOW_RANK
    return anomaly["segment"]


def test_report_is_self_contained_and_names_the_anomaly(analysed):
    path, stdout, doc = analysed
    report = os.path.join(path, "report.html")
    lines = stdout.rstrip("\n").splitlines()
    assert lines[-1] == f"report written to {report}"
    assert lines[-2] == f"analysis written to {os.path.join(path, 'analysis.json')}"
    with open(report, encoding="utf-8") as fh:
        text = fh.read()
    page = parse(text)

    # Nothing is fetched: no external source, stylesheet or frame; one inline copy
    # of plotly.js (megabytes), the figures' own scripts small.
    for tag, attrs in page.tags:
        for key in ("src", "href", "data"):
            value = attrs.get(key, "")
            assert not re.match(r"^\s*(https?:)?//", value), (tag, key, value)
        assert tag not in ("link", "iframe", "object", "embed"), tag
        if tag == "script":
            assert "src" not in attrs, attrs
    assert sum(1 for size in page.scripts if size > 1_000_000) == 1
    figures = [a["data-figure"] for t, a in page.tags if "data-figure" in a]
    seg = _slow_segment(doc)
    for name in ("shift-heatmap", f"dist-{seg}", f"timeline-{seg}", "calibration"):
        assert name in figures, figures
    assert text.count("Plotly.newPlot(") == len(figures)

    # The verdict in words: the terminal's verdict line and the anomaly's sentence.
    verdict = next(x for x in lines if x.startswith("verdict: "))
    assert page.text_by_id["verdict-line"] == verdict
    ((attrs, sentence),) = page.anomalies
    assert attrs["data-kind"] == "slow_segment"
    assert attrs["data-rank"] == str(SLOW_RANK) and attrs["data-segment"] == seg
    assert re.search(
        rf"rank {SLOW_RANK} \(host node0, cpu 3\) is slow in segment {seg} "
        r"\[stencil\+0x1a2b MPI_Waitall -> stencil\+0x1c3d MPI_Allreduce\]: "
        r"median 812\.\d us vs peers 540\.\d us",
        sentence,
    ), sentence


def test_report_without_samples_leaves_their_plots_out(analysed):
    """From analysis.json alone (no filtered cells) the page still has the verdict,
    the heat map and the calibration, and says what is missing."""
    _, _, doc = analysed
    page = parse(render_html(Analysis.from_json(doc)))
    figures = [a["data-figure"] for t, a in page.tags if "data-figure" in a]
    assert figures == ["shift-heatmap", "calibration"]
    assert "built without the samples" in page.text_by_id["distributions"]
    assert page.anomalies[0][0]["data-rank"] == str(SLOW_RANK)


def test_no_html_and_where_the_report_goes(analysed, tmp_path, capsys):
    path, _, _ = analysed
    trace = str(tmp_path / "trace")
    shutil.copytree(path, trace)
    os.remove(os.path.join(trace, "report.html"))
    out = tmp_path / "out"
    out.mkdir()

    assert main(["analyze", trace, "--no-html", "--json", str(out / "a.json")]) == 0
    assert sorted(os.listdir(out)) == ["a.json"]
    assert not os.path.exists(os.path.join(trace, "report.html"))
    assert "report written" not in capsys.readouterr().out

    # With --json elsewhere, the report goes beside it; --html names it outright.
    assert main(["analyze", trace, "--quiet", "--json", str(out / "b.json")]) == 0
    assert os.path.isfile(out / "report.html")
    custom = tmp_path / "custom.html"
    argv = ["analyze", trace, "--quiet", "--no-symbolize", "--html", str(custom)]
    assert main(argv) == 0
    assert custom.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert capsys.readouterr().out == ""


def test_without_plotly_the_analysis_stands(analysed, tmp_path, monkeypatch, capsys):
    """No plotly: one warning, no report, the JSON written, exit 0."""
    path, _, _ = analysed
    monkeypatch.setitem(sys.modules, "plotly", None)  # import plotly -> ImportError
    report = tmp_path / "r.html"
    argv = ["analyze", path, "--json", str(tmp_path / "a.json"), "--html", str(report)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.err == (
        "perfvar: warning: report.html not written: the plots need plotly "
        "(pip install plotly)\n"
    )
    assert "report written" not in captured.out
    assert (tmp_path / "a.json").is_file() and not report.exists()


def _slow_like(template: dict, rank: int, segment: str, excess_ns: float, rel: float):
    """A slow_segment Anomaly of ``rank`` in ``segment`` whose evidence is the
    analysed trace's real one with the relative excess set to ``rel``."""
    ev = {**template["evidence"], "excess_rel": rel, "shift_rel": rel}
    return Anomaly("slow_segment", rank, "node0", rank, segment, excess_ns, ev)


@pytest.fixture(scope="module")
def ranked(analysed):
    """The analysed trace's result with the headline, minor findings, consequences
    and wait states perfvar.verdict.headline makes of the wait-state simulator's run: rank 1
    does 3x the work in S0, so rank 0 waits 200 us in every MPI_Allreduce and its
    S1 runs 20 % slower after it (a consequence); rank 0's +1 % in S0 is absorbed
    by the wait (no cost: minor)."""
    _, _, doc = analysed
    doc = json.loads(json.dumps(doc))
    template = doc["anomalies"][0]

    def extra(r, k, c):
        if (r, c) == (1, "A"):
            return 200_000.0
        return 4000.0 if (r, c) == (0, "B") else 0.0

    found = [
        _slow_like(template, 1, "S0", 200_000.0, 2.0),
        _slow_like(template, 0, "S1", 4000.0, 0.2),
        _slow_like(template, 0, "S0", 1000.0, 0.01),
    ]
    r = headline.rank_findings(found, simulate(steps=200, extra=extra), ["S0", "S1"])
    assert [(a.rank, a.segment) for a in r.anomalies] == [(1, "S0")]
    assert [(a.rank, a.segment) for a in r.minor] == [(0, "S0")]
    assert [(c["rank"], c["segment"]) for c in r.consequences] == [(0, "S1")]
    doc["anomalies"] = [a.to_json() for a in r.anomalies]
    doc["minor"] = [a.to_json() for a in r.minor]
    doc["consequences"] = r.consequences
    doc["wait_states"] = r.waits
    doc["params"]["min_cost"] = headline.DEFAULT_MIN_COST
    doc["summary"].update(
        anomalous_ranks=[1],
        minor_ranks=[0],
        consequence_ranks=[0],
        cost_known=r.cost_known,
        judged_compute_share=0.734,
    )
    return doc


def test_report_shows_the_headline_by_cost_minor_and_consequences(ranked):
    text = render_html(Analysis.from_json(ranked))
    page = parse(text)
    # The headline: the one finding that costs the job, with its delay cost.
    ((attrs, sentence),) = page.anomalies
    head = ranked["anomalies"][0]
    assert (attrs["data-rank"], attrs["id"]) == ("1", "finding-0")
    share = 100 * head["cost_share"]
    assert f"delay cost 40.0 ms = {share:.1f} % of wall time x ranks" in sentence
    assert "Ranked by delay cost" in page.text_by_id["verdict"]
    assert page.text_by_id["judged-share"] == "judged: 73.4 % of the compute time"
    assert "minor: rank(s) 0" in page.text_by_id["verdict-line"]
    # Minor: apart, naming the rank and its (zero) cost.
    ((attrs, sentence),) = page.items["minor"]
    assert (attrs["data-rank"], attrs["data-segment"]) == ("0", "S0")
    assert sentence.startswith("minor slow segmentdelay cost 0.0 ns = 0 % ")
    threshold = 100 * ranked["params"]["min_cost"]
    assert f"below {threshold:g} % of wall time x ranks" in page.text_by_id["verdict"]
    # The consequence, under its cause, with a link to the cause's finding.
    ((attrs, sentence),) = page.items["consequence"]
    assert (attrs["data-rank"], attrs["data-cause-rank"]) == ("0", "1")
    assert "rank 0's S1 +20% after waiting 0.2 ms for rank 1 in MPI_Allreduce" in (
        sentence
    )
    assert "Its cause: rank 1's slow segment S0." in sentence
    li = re.search(r'<li class="consequence".*?</li>', text).group(0)
    assert '<a href="#finding-0">' in li
    # The wait states per rank: the total, whom each waited for, a bar plot.
    ws = ranked["wait_states"]
    share = 100 * ws["total_ns"] / (ws["wall_ns"] * ranked["summary"]["n_ranks"])
    assert page.text_by_id["waits-total"] == (
        f"The ranks waited 40.8 ms in MPI calls ({share:.1f} % of wall time x "
        "ranks): wait at N x N 40.0 ms, late sender 795.3 us; in MPI_Allreduce "
        "40.0 ms, MPI_Waitall 795.3 us."
    )
    waits = page.text_by_id["waits"]
    assert "rank 1: 40.0 ms" in waits and "rank 0: 795.3 us" in waits
    figures = [a["data-figure"] for t, a in page.tags if "data-figure" in a]
    assert "waits" in figures


def test_a_finding_of_a_rank_sharing_its_cpu_is_shown_under_that_sharing(ranked):
    doc = json.loads(json.dumps(ranked))
    shared = Anomaly("shared_cpu", 1, "vm", 1, None, None, {"cpu": 1, "ranks": [0, 1]})
    slow = _slow_like(doc["anomalies"][0], 1, "S0", 200_000.0, 2.0)
    doc["consequences"] = [
        time_slicing.symptom_of(slow, time_slicing.sharing([shared]))
    ]
    page = parse(render_html(Analysis.from_json(doc)))
    ((attrs, sentence),) = page.items["consequence"]
    assert attrs["data-rank"] == "1"
    assert sentence.startswith("shared CPUrank 1's S0 ")
    assert sentence.endswith("is time-slicing: it shared CPU 1 with rank(s) 0.")


def test_waits_by_rank_sums_the_pairs(ranked):
    per = waits_by_rank(Analysis.from_json(ranked))
    assert sorted(per) == [0, 1, 2, 3]  # every rank, those that never waited too
    pairs = ranked["wait_states"]["by_rank_pair_ns"]
    assert per[0]["waited_ns"] == per[1]["caused_ns"] == pairs["0<-1"]
    assert per[1]["waited_ns"] == per[0]["caused_ns"] == pairs["1<-0"]
    assert per[0]["for"] == {1: pairs["0<-1"]} and per[0]["for_ranks"] == 1
    assert per[2] == {"waited_ns": 0.0, "caused_ns": 0.0, "for": {}, "for_ranks": 0}


def test_heatmap_marks_minor_and_waited_cells(ranked):
    doc = json.loads(json.dumps(ranked))
    for j in doc["judgements"]:
        if (j["rank"], j["segment"]) in ((0, "S0"), (0, "S1")):
            j.update(status="slow", shift_rel=0.01, q_value=1e-3)
    fig = shift_heatmap(Analysis.from_json(doc))
    ranks = list(fig.data[0].y)
    classes = list(fig.data[0].x)
    text = fig.data[0].text
    assert text[ranks.index("rank 0")][classes.index("S0")] == "minor"
    assert text[ranks.index("rank 0")][classes.index("S1")] == "waited"
    assert text[ranks.index("rank 1")][classes.index("S0")] == "slow"


def test_heatmap_rows_keep_the_named_ranks_alone_and_bin_the_others():
    assert heatmap_rows([0, 1, 2], {1}, rows=4) == [[0], [1], [2]]
    rows = heatmap_rows(list(range(1000)), {7, 500}, rows=100)
    assert len(rows) <= 100 and [7] in rows and [500] in rows
    assert [r for row in rows for r in row] == list(range(1000))  # all, in order
    assert max(len(row) for row in rows) == -(-998 // 98)


def test_a_large_jobs_heatmap_bins_the_ranks_no_finding_names(ranked):
    # 1000 ranks: rank 1 slow in S0 (named), rank 500 +40 % in S1 (judged ok), the
    # others +-1 %: rank 1 keeps its row, rank 500's shift shows in its bin.
    doc = json.loads(json.dumps(ranked))
    rows = {r["rank"]: r for r in doc["ranks"]}
    doc["ranks"] = [rows.get(r, dict(rows[3], rank=r)) for r in range(1000)]
    rng = np.random.default_rng(0)
    judged = [j for j in doc["judgements"] if j["rank"] == 1]
    for r in range(1000):
        for seg in ("S0", "S1"):
            if r == 1:
                continue
            shift = 0.4 if (r, seg) == (500, "S1") else rng.uniform(-0.01, 0.01)
            judged.append({"rank": r, "segment": seg, "status": "ok",
                           "shift_rel": shift, "q_value": 0.5, "n": 100})  # fmt: skip
    doc["judgements"] = judged
    fig = shift_heatmap(Analysis.from_json(doc))
    names = list(fig.data[0].y)
    assert len(names) <= HEATMAP_ROWS and "rank 1" in names
    (row,) = [i for i, n in enumerate(names) if n.startswith("ranks ")
              and int(n[6:].split("-")[0]) <= 500 <= int(n.split("-")[1])]  # fmt: skip
    s1 = list(fig.data[0].x).index("S1")
    assert fig.data[0].z[row][s1] == pytest.approx(40.0)
    assert "largest at rank 500" in fig.data[0].customdata[row][s1][0]


def test_report_says_when_no_cost_or_no_wait_state_could_be_read(ranked):
    doc = json.loads(json.dumps(ranked))
    doc["summary"]["cost_known"] = False
    doc["wait_states"] = {**doc["wait_states"], "synchronised": False}
    page = parse(render_html(Analysis.from_json(doc)))
    assert "No delay cost could be measured" in page.text_by_id["verdict"]
    assert "No wait state read" in page.text_by_id["waits"]
    figures = [a["data-figure"] for t, a in page.tags if "data-figure" in a]
    assert "waits" not in figures
    # An analysis.json made before wait states: the page still renders.
    for key in ("wait_states", "minor", "consequences"):
        del doc[key]
    del doc["summary"]["cost_known"]
    page = parse(render_html(Analysis.from_json(doc)))
    assert "Not in this analysis" in page.text_by_id["waits"]
    assert "minor" not in page.items and "consequence" not in page.items


def test_binned_medians_match_numpy():
    rng = np.random.default_rng(0)
    start = rng.uniform(0.0, 100.0, 5001)
    values = rng.normal(10.0, 1.0, 5001)
    edges = np.linspace(0.0, 100.0, 41)
    edges[20] = edges[19] + 1e-9  # an empty bin
    centres, medians = binned_medians(start, values, edges)
    which = np.clip(np.searchsorted(edges, start, side="right") - 1, 0, 39)
    expect = [np.median(values[which == b]) for b in range(40) if (which == b).any()]
    assert len(centres) == len(expect) < 40
    np.testing.assert_allclose(medians, expect)


def test_report_renders_in_chromium_without_errors(analysed, tmp_path):
    path, _, doc = analysed
    with open(os.path.join(path, "report.html"), encoding="utf-8") as fh:
        dom = render_in_chromium(fh.read(), tmp_path)
    # The named anomaly, in the rendered page.
    seg = _slow_segment(doc)
    ((attrs, sentence),) = dom.anomalies
    assert (attrs["data-rank"], attrs["data-segment"]) == (str(SLOW_RANK), seg)
    assert f"rank {SLOW_RANK} (host node0, cpu 3) is slow in segment {seg}" in sentence
    assert dom.text_by_id["verdict-line"].startswith(
        f"verdict: 1 anomalous rank: rank {SLOW_RANK} "
    )


def test_report_with_waits_and_consequences_renders_in_chromium(ranked, tmp_path):
    dom = render_in_chromium(render_html(Analysis.from_json(ranked)), tmp_path)
    assert "fig-waits" in {a.get("id") for t, a in dom.tags}
    assert [a["data-rank"] for a, _ in dom.items["consequence"]] == ["0"]
    assert [a["data-rank"] for a, _ in dom.items["minor"]] == ["0"]


def test_a_consequence_of_time_off_the_cpu_is_listed_with_its_rank(ranked):
    measured = {"off_cpu_fraction": 0.5}
    noisy = Anomaly(
        "noisy_core", 1, "node0", 1, None, 0.0,
        {"measured": measured, "peers_off_cpu_fraction": 0.01},
    )  # fmt: skip
    core = Anomaly("slow_core", 1, "node0", 1, None, 0.0, {"shift_rel": 1.0})
    symptom = off_cpu.symptom_of(core, {1: noisy})
    ranked["consequences"].append(symptom)
    text = render_html(Analysis.from_json(ranked))
    items = parse(text).items["consequence"]
    attrs, sentence = items[-1]
    assert (attrs["data-rank"], attrs["data-segment"]) == ("1", "")
    assert sentence.startswith("off its CPUrank 1's slower core (+100%) is its time")
    assert "Consequences of waiting or of time off the CPU" in text
    assert "(core slower for its time off the CPU)" in text


def _section(text: str, name: str) -> str:
    """The HTML of the report's section ``name`` (its id)."""
    return text.split(f'<section id="{name}">', 1)[1].split("</section>", 1)[0]


def test_a_large_jobs_tables_list_the_ranks_that_matter(ranked):
    # 100 ranks: rank 1 named (as in ranked), rank r waited r us and made others wait
    # 100 - r us; the tables list 32 ranks each and count the others.
    doc = json.loads(json.dumps(ranked))
    rows = {r["rank"]: r for r in doc["ranks"]}
    ok = dict(rows[3], verdict="ok", anomalies=[])
    doc["ranks"] = [
        rows.get(r, dict(ok, rank=r, interruptions=r % 3, interrupted_fraction=r / 1e4))
        for r in range(100)
    ]
    doc["wait_states"]["by_rank"] = [
        {"rank": r, "waited_ns": r * 1e3, "caused_ns": (100 - r) * 1e3,
         "waited_for": [[(r + 1) % 100, r * 1e3]], "waited_for_ranks": 1}
        for r in range(100)
    ]  # fmt: skip
    text = render_html(Analysis.from_json(doc))
    ranks = _section(text, "ranks")
    named = {a["rank"] for a in doc["anomalies"] + doc["minor"]}  # minor ones too
    assert 1 in named
    assert ranks.count("<tr") == 1 + sum(
        r["verdict"] != "ok" or r["rank"] in named for r in doc["ranks"]
    )
    assert "Not listed: " in ranks and "ok (analysis.json has them all)" in ranks
    waits = _section(text, "waits")
    listed = [int(m) for m in re.findall(r'<tr[^>]*><td class="num">(\d+)</td>', waits)]
    assert len(listed) == 32 and 1 in listed
    # The others, by what they waited or made wait: ranks 0 and 99 (100 us) first.
    assert {0, 2, 99, 98} <= set(listed) and 50 not in listed
    assert "Not listed: 68 more ranks" in waits
    # Calibration: the listed ranks and one row for all 100; interruptions: the 32
    # most interrupted of the ranks that were.
    calibration = _section(text, "calibration").split("<table", 2)[1]
    assert calibration.count("<tr") == ranks.count("<tr") + 1
    assert "<td>all 100</td>" in calibration
    noise = _section(text, "noise")
    interrupted = sum(bool(r.get("interruptions")) for r in doc["ranks"])
    assert interrupted > 32 and noise.count("<tr") == 1 + 32
    assert f"Not listed: {interrupted - 32} more interrupted ranks" in noise


def test_a_large_jobs_waiting_plot_bins_the_ranks_no_finding_names(ranked):
    # 1000 ranks, rank 700 made the others wait 1 ms, the rest 1 us: rank 1 (named)
    # keeps its bar, rank 700's delay shows in its bin as the largest there.
    doc = json.loads(json.dumps(ranked))
    rows = {r["rank"]: r for r in doc["ranks"]}
    doc["ranks"] = [rows.get(r, dict(rows[3], rank=r)) for r in range(1000)]
    doc["wait_states"]["by_rank"] = [
        {"rank": r, "waited_ns": 1e3, "caused_ns": 1e6 if r == 700 else 1e3,
         "waited_for": [], "waited_for_ranks": 0}
        for r in range(1000)
    ]  # fmt: skip
    fig = waits_figure(Analysis.from_json(doc))
    names = list(fig.data[0].x)
    assert len(names) <= HEATMAP_ROWS and "rank 1" in names
    caused = fig.data[1]
    (i,) = [k for k, n in enumerate(names) if n.startswith("ranks ")
            and int(n[6:].split("-")[0]) <= 700 <= int(n.split("-")[1])]  # fmt: skip
    assert (
        caused.y[i] == pytest.approx(max(caused.y))
        and "the most of them" in caused.customdata[i]
    )
