"""OTF2 markers of ``perfvar analyze`` (perfvar/report_markers.py and the C tool
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
from perfvar.report_markers import (
    category,
    marker_tool,
    rank_locations,
    severity,
    write_markers,
)

OTF2_MARKER = shutil.which("otf2-marker")
pytestmark = [
    pytest.mark.skipif(
        marker_tool() is None,
        reason="perfvar-markers not built (PERFVAR_LIB names a build's libperfvar)",
    ),
    pytest.mark.skipif(OTF2_MARKER is None, reason="otf2-marker (otf2-tools) missing"),
]

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
        return {"kind": kind, "evidence": evidence}

    assert severity(anomaly("slow_segment", excess_rel=0.01)) == "LOW"
    assert severity(anomaly("slow_segment", excess_rel=0.05)) == "MEDIUM"
    assert severity(anomaly("slow_phase", excess_rel=0.19)) == "MEDIUM"
    assert severity(anomaly("slow_core", shift_rel=0.5)) == "HIGH"
    assert severity(anomaly("noisy_core", lost_fraction=0.3)) == "HIGH"
    assert severity(anomaly("noisy_core")) == "LOW"
    assert severity(anomaly("migrated", thread=1)) == "NONE"
    assert category(anomaly("slow_core"), "HIGH") == "slow_core high"
    assert category(anomaly("shared_cpu"), "NONE") == "shared_cpu"


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
    if shutil.which("otf2-print"):
        check = subprocess.run(
            ["otf2-print", "-Werror", os.path.join(slow_trace, "traces.otf2")],
            capture_output=True,
            text=True,
        )
        assert check.returncode == 0, check.stderr


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
    assert write_markers({**analysis(slow_trace), "anomalies": []})
    assert [m["group"] for m in read_markers(slow_trace)] == ["user"]


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
    assert write_markers(copy.deepcopy(doc)) == os.path.join(path, "traces.marker")
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
