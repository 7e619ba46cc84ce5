"""OTF2 markers of ``perfvar analyze`` (perfvar/report/markers.py and the C tool
perfvar-markers): written into the analysed trace, read back with OTF2's own
``otf2-marker``, replaced (not added to) when the trace is analysed again, other
groups' markers kept, the trace still valid for ``otf2-print -Werror``.

Needs perfvar-markers (a build: ctest sets PERFVAR_LIB to it) and otf2-marker
(otf2-tools); skipped without them.
"""

import copy
import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import RESOLUTION_HZ, normal_durations, run_cli
from perfvar.verdict import headline
from perfvar.stats.model import Anomaly
from perfvar.result import Analysis, Finding
from perfvar.report.markers import (
    CONSEQUENCE,
    SYMPTOM,
    TIME_SLICED,
    category,
    marker_lines,
    marker_tool,
    rank_locations,
    severity,
    write_markers,
)
from waits_sim import simulate

OTF2_MARKER = shutil.which("otf2-marker")
# The tests that write markers into a trace; the others test the lines alone.
needs_tools = [
    pytest.mark.skipif(
        marker_tool() is None,
        reason="perfvar-markers not built (PERFVAR_LIB names a build's libperfvar)",
    ),
    pytest.mark.skipif(OTF2_MARKER is None, reason="otf2-marker (otf2-tools) missing"),
]


def tools(test):
    for mark in needs_tools:
        test = mark(test)
    return test


DEF_RE = re.compile(r'^MARKER_DEF\s+Group: "(.*)", Category: "(.*)", Severity: (\w+)$')
MARKER_RE = re.compile(
    r'^MARKER\s+Time: (\d+), Duration (\d+), Scope: (\S+), Text: "(.*)"$'
)


def read_markers(trace: str) -> list[dict]:
    """Every marker of the trace as otf2-marker prints it, with its definition."""
    out = subprocess.run(
        [OTF2_MARKER, os.path.join(trace, "traces.otf2")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    markers, current = [], None
    for line in out.splitlines():
        if m := DEF_RE.match(line):
            current = dict(zip(("group", "category", "severity"), m.groups()))
        elif m := MARKER_RE.match(line):
            time, duration, scope, text = m.groups()
            markers.append(
                {
                    **current,
                    "time": int(time),
                    "duration": int(duration),
                    "scope": scope,
                    "text": text,
                }
            )
        elif line.strip():
            raise AssertionError(f"otf2-marker printed an unexpected line: {line!r}")
    return markers


def ours(markers: list[dict]) -> list[dict]:
    return [m for m in markers if m["group"] == "perfvar"]


def clock(trace: str) -> tuple[int, int, int]:
    """(resolution Hz, global offset, trace length) of the trace's ClockProperties."""
    import otf2

    with otf2.reader.open(os.path.join(trace, "traces.otf2")) as reader:
        cp = reader.definitions.clock_properties
        return int(cp.timer_resolution), int(cp.global_offset), int(cp.trace_length)


def analysis(trace: str) -> dict:
    with open(os.path.join(trace, "analysis.json")) as fh:
        return json.load(fh)


def test_severity_follows_the_relative_cost():
    def anomaly(kind, **evidence):
        return Finding(kind, 0, evidence=evidence)

    assert severity(anomaly("slow_segment", excess_rel=0.01)) == "LOW"
    assert severity(anomaly("slow_segment", excess_rel=0.05)) == "MEDIUM"
    assert severity(anomaly("slow_phase", excess_rel=0.19)) == "MEDIUM"
    assert severity(anomaly("slow_core", shift_rel=0.5)) == "HIGH"
    assert severity(anomaly("noisy_core", lost_fraction=0.3)) == "HIGH"
    assert severity(anomaly("noisy_core")) == "LOW"
    assert severity(anomaly("migrated", thread=1)) == "NONE"
    assert category(anomaly("slow_core"), "HIGH") == "slow_core high"
    assert category(anomaly("shared_cpu"), "NONE") == "shared_cpu"


def _check_otf2_print(trace: str) -> None:
    """otf2-print -Werror accepts the archive with its markers (where installed)."""
    if shutil.which("otf2-print"):
        check = subprocess.run(
            ["otf2-print", "-Werror", os.path.join(trace, "traces.otf2")],
            capture_output=True,
            text=True,
        )
        assert check.returncode == 0, check.stderr


@tools
def test_analyze_writes_one_marker_per_anomaly(slow_trace):
    proc = run_cli("analyze", slow_trace)
    assert proc.returncode == 0, proc.stderr
    assert "markers not written" not in proc.stderr, proc.stderr
    doc = analysis(slow_trace)
    assert [a["kind"] for a in doc["anomalies"]] == ["slow_segment"]
    markers = read_markers(slow_trace)
    assert len(markers) == 1, markers
    m = markers[0]
    resolution, offset, length = clock(slow_trace)
    assert resolution == RESOLUTION_HZ
    master = rank_locations(os.path.join(slow_trace, "traces.otf2"))[1][0]
    assert (m["group"], m["category"], m["severity"]) == (
        "perfvar",
        "slow_segment high",  # +50 %
        "HIGH",
    )
    assert m["scope"] == f"LOCATION:{master}"
    assert (m["time"], m["duration"]) == (offset, length - 1)  # the whole run
    segment = doc["anomalies"][0]["segment"]
    assert m["text"].startswith(
        f"rank 1 (host node0, cpu 3) is slow in segment {segment} "
    )
    _check_otf2_print(slow_trace)


@tools
def test_analysing_again_replaces_ours_and_keeps_other_groups(slow_trace):
    assert run_cli("analyze", slow_trace, "--quiet").returncode == 0
    anchor = os.path.join(slow_trace, "traces.otf2")
    _, offset, _ = clock(slow_trace)
    for args in (
        ["--add-def", "user", "look here", "LOW"],
        ["--add", "user", "look here", f"{offset}+5", "GLOBAL", "a user's marker"],
    ):
        subprocess.run([OTF2_MARKER, *args, anchor], check=True, capture_output=True)
    first = read_markers(slow_trace)
    assert run_cli("analyze", slow_trace, "--quiet").returncode == 0
    again = read_markers(slow_trace)
    assert ours(again) == ours(first) and len(ours(again)) == 1
    assert [m for m in again if m["group"] == "user"] == [
        {
            "group": "user",
            "category": "look here",
            "severity": "LOW",
            "time": offset,
            "duration": 5,
            "scope": "GLOBAL",
            "text": "a user's marker",
        }
    ]
    # An analysis that finds nothing leaves no perfvar marker behind.
    assert write_markers(Analysis.from_json({**analysis(slow_trace), "anomalies": []}))
    assert [m["group"] for m in read_markers(slow_trace)] == ["user"]


@tools
def test_a_window_and_a_thread_are_placed_on_the_timeline(trace_factory):
    path = trace_factory("threads", normal_durations(seed=3), threads=2)
    assert run_cli("analyze", path, "--quiet").returncode == 0
    resolution, offset, length = clock(path)
    span_ns = length * 1e9 / resolution
    start_ns, end_ns = 0.25 * span_ns, 0.5 * span_ns
    doc = analysis(path)
    phase = {
        "kind": "slow_phase",
        "rank": 2,
        "host": "node1",
        "cpu": 2,
        "segment": None,
        "excess_ns": 5000.0,
        "start_ns": start_ns,
        "end_ns": end_ns,
        "evidence": {
            "excess_rel": 0.08,
            "duration_ns": end_ns - start_ns,
            "alpha": 0.05,
            "floor_rel": 0.03,
            "classes": [{"segment": "S0", "q_value": 1e-6}],
        },
    }
    migrated = {
        "kind": "migrated",
        "rank": 0,
        "host": "node0",
        "cpu": 0,
        "segment": None,
        "excess_ns": None,
        "evidence": {
            "thread": 1,
            "cpus": [0, 1],
            "segments_migrated_inside": 3,
            "segments": 400,
        },
    }
    doc["anomalies"] = [phase, migrated]
    assert write_markers(Analysis.from_json(copy.deepcopy(doc))) == os.path.join(
        path, "traces.marker"
    )
    locations = rank_locations(os.path.join(path, "traces.otf2"))
    got = {m["category"]: m for m in read_markers(path)}
    assert set(got) == {"slow_phase medium", "migrated"}
    m = got["slow_phase medium"]
    assert m["severity"] == "MEDIUM" and m["scope"] == f"LOCATION:{locations[2][0]}"
    # ns since the trace's origin -> ticks, as reader_otf2 maps ticks to ns
    assert abs(m["time"] - (offset + start_ns * resolution / 1e9)) <= 1
    assert abs(m["time"] + m["duration"] - (offset + end_ns * resolution / 1e9)) <= 1
    assert "was slow in segments S0 from" in m["text"]
    m = got["migrated"]
    assert m["severity"] == "NONE" and m["scope"] == f"LOCATION:{locations[0][1]}"
    assert (m["time"], m["duration"]) == (offset, length - 1)


@tools
def test_tool_refuses_bad_lines_and_leaves_the_file(slow_trace):
    assert run_cli("analyze", slow_trace, "--quiet").returncode == 0
    marker_file = os.path.join(slow_trace, "traces.marker")
    before = open(marker_file, "rb").read()
    for line in (
        "slow_core high\tURGENT\t-\t-\tGLOBAL\tx",  # no such severity
        "slow_core high\tHIGH\t-\t-\tLOCATION:99\tx",  # no such location
        "slow_core high\tHIGH\t20\t10\tGLOBAL\tx",  # ends before it starts
        "slow_core high\tHIGH\t-\t-\tGLOBAL",  # five fields
        # one category, two severities
        "c\tLOW\t-\t-\tGLOBAL\tx\nc\tHIGH\t-\t-\tGLOBAL\ty",
    ):
        run = subprocess.run(
            [marker_tool(), slow_trace],
            input=line + "\n",
            capture_output=True,
            text=True,
        )
        assert run.returncode == 2 and run.stderr.startswith(
            "perfvar-markers: line "
        ), (
            line,
            run.stderr,
        )
        assert open(marker_file, "rb").read() == before


def _slow(rank: int, segment: str, excess_ns: float, rel: float) -> Anomaly:
    """A slow_segment finding with the evidence the sentences need."""
    ev = {
        "median_ns": 120_000.0 * (1 + rel),
        "peers_median_ns": 120_000.0,
        "shift_rel": rel,
        "excess_rel": rel,
        "excess_ci_rel": [rel / 2, rel * 2],
        "q_value": 1e-6,
        "alpha": 0.05,
        "floor_ns": 240.0,
        "t_diff_ns": 40.0,
        "floor_rel": 0.002,
        "n": 200,
        "os_noise_removed": 0,
        "overlap": 0.1,
        "iqr_ns": 100.0,
        "peers_iqr_ns": 100.0,
        "peer_ranks": 1,
    }
    return Anomaly("slow_segment", rank, "node0", rank, segment, excess_ns, ev)


def _ranked_result() -> dict:
    """What perfvar.verdict.headline makes of the wait-state simulator's run where rank 1
    does 3x the work in S0: rank 0 waits 200 us in every MPI_Allreduce and its S1
    runs 20 % slower after it (a consequence of waiting); rank 0's +1 % in S0 is
    absorbed by the wait (no cost: minor)."""

    def extra(r, k, c):
        if (r, c) == (1, "A"):
            return 200_000.0
        return 4000.0 if (r, c) == (0, "B") else 0.0

    found = [_slow(1, "S0", 200_000.0, 2.0), _slow(0, "S1", 4000.0, 0.2)]
    found.append(_slow(0, "S0", 1000.0, 0.01))
    r = headline.rank_findings(found, simulate(steps=200, extra=extra), ["S0", "S1"])
    return {
        "segments": [{"id": "S0", "label": "a -> b"}, {"id": "S1", "label": "b -> a"}],
        "anomalies": [a.to_json() for a in r.anomalies],
        "minor": [a.to_json() for a in r.minor],
        "consequences": r.consequences,
    }


def test_minor_findings_and_consequences_are_markers_apart():
    result = _ranked_result()
    locations = {0: [10, 11], 1: [20, 21]}
    lines = [
        line.split("\t") for line in marker_lines(Analysis.from_json(result), locations)
    ]
    assert [line[:5] for line in lines] == [
        ["slow_segment high", "HIGH", "-", "-", "LOCATION:20"],
        ["minor slow_segment", "LOW", "-", "-", "LOCATION:10"],
        [CONSEQUENCE, "NONE", "-", "-", "LOCATION:10"],
    ]
    head, minor, consequence = (line[5] for line in lines)
    share = 100 * result["anomalies"][0]["cost_share"]
    assert head.startswith("rank 1 (host node0, cpu 1) is slow in segment S0 ")
    assert head.endswith(f"; delay cost 40.0 ms ({share:.1f}% of wall time x ranks)")
    assert minor.startswith("minor: rank 0 (host node0, cpu 0) is slow in segment S0")
    assert minor.endswith("; delay cost 0.0 ns (0.00% of wall time x ranks)")
    assert consequence == (
        "rank 0's S1 +20% after waiting 0.2 ms for rank 1 in MPI_Allreduce; "
        "caused by rank 1's marker(s) slow_segment high"
    )
    # A cause no finding names is said so; a rank without a location is left out.
    result["anomalies"] = []
    (line,) = marker_lines(Analysis.from_json(result), {0: [10]})[1:]
    assert line.split("\t")[5].endswith("; caused by rank 1, which no finding names")
    assert marker_lines(Analysis.from_json(result), {}) == []


def test_a_consequence_of_time_off_the_cpu_is_a_marker_of_its_own_category():
    measured = {"off_cpu_fraction": 0.5, "off_cpu_ns": 1e9, "covered_ns": 2e9}
    noisy = Anomaly(
        "noisy_core", 1, "node0", 1, None, 0.0,
        {"measured": measured, "peers_off_cpu_fraction": 0.01, "named_by": [],
         "measured_q_value": 1e-9, "lost_fraction": 0.01, "interruptions": 3},
    )  # fmt: skip
    core = Anomaly("slow_core", 1, "node0", 1, None, 0.0, {"shift_rel": 1.0})
    busy = simulate(steps=200, extra=lambda r, k, c: 10_000.0 if r == 1 else 0.0)
    r = headline.rank_findings([noisy, core], busy, ["S0", "S1"])
    result = {
        "segments": [{"id": "S0", "label": "a -> b"}, {"id": "S1", "label": "b -> a"}],
        "anomalies": [a.to_json() for a in r.anomalies],
        "minor": [],
        "consequences": r.consequences,
    }
    lines = [
        line.split("\t")
        for line in marker_lines(Analysis.from_json(result), {1: [20, 21]})
    ]
    assert [line[0] for line in lines] == [lines[0][0], SYMPTOM]
    assert lines[0][0].startswith("noisy_core")
    assert lines[1][5].startswith("rank 1's slower core (+100%) is its time off")
    assert lines[1][5].endswith(f"caused by rank 1's marker(s) {lines[0][0]}")


def test_a_finding_of_a_rank_sharing_its_cpu_is_a_marker_of_its_own_category():
    shared = [
        Anomaly("shared_cpu", r, "node0", 1, None, None, {"cpu": 1, "ranks": [0, 1]})
        for r in (0, 1)
    ]
    core = Anomaly("slow_core", 1, "node0", 1, None, 0.0, {"shift_rel": 1.0})
    busy = simulate(steps=200, extra=lambda r, k, c: 10_000.0 if r == 1 else 0.0)
    r = headline.rank_findings([*shared, core], busy, ["S0", "S1"])
    result = {
        "segments": [{"id": "S0", "label": "a -> b"}, {"id": "S1", "label": "b -> a"}],
        "anomalies": [a.to_json() for a in r.anomalies],
        "minor": [],
        "consequences": r.consequences,
    }
    lines = [
        line.split("\t")
        for line in marker_lines(Analysis.from_json(result), {0: [10], 1: [20]})
    ]
    sliced = [line for line in lines if line[0] == TIME_SLICED]
    assert [line[4] for line in sliced] == ["LOCATION:20"]
    assert sliced[0][5] == (
        "rank 1's slow core (+100%) is time-slicing: it shared CPU 1 with rank(s) 0; "
        "reported under that sharing, not as an anomaly"
    )


@tools
def test_minor_and_consequence_markers_in_the_trace(slow_trace):
    assert run_cli("analyze", slow_trace, "--quiet").returncode == 0
    doc = analysis(slow_trace)
    ranked = _ranked_result()
    doc["minor"] = ranked["minor"]
    doc["consequences"] = ranked["consequences"]
    assert write_markers(Analysis.from_json(doc))
    locations = rank_locations(os.path.join(slow_trace, "traces.otf2"))
    got = {m["category"]: m for m in ours(read_markers(slow_trace))}
    assert set(got) == {"slow_segment high", "minor slow_segment", CONSEQUENCE}
    assert got["minor slow_segment"]["severity"] == "LOW"
    assert got["minor slow_segment"]["scope"] == f"LOCATION:{locations[0][0]}"
    m = got[CONSEQUENCE]
    assert (m["severity"], m["scope"]) == ("NONE", f"LOCATION:{locations[0][0]}")
    assert m["text"].endswith("caused by rank 1's marker(s) slow_segment high")
    _check_otf2_print(slow_trace)
