"""perfvar.open: the DataFrames over a run (perfvar.frames) and docs/dataframes.md.

The golden trace (PV_GOLDEN_TRACE, written by the C test unit.convert; see
test_golden_trace.py) gives exact segment times; a synthetic trace from conftest
gives an analysis with a slow rank to compare the frames with analysis.json.
"""

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import perfvar
from conftest import SEG_A, normal_durations, write_trace
from perfvar import frames
from perfvar.analysis import analyze
from perfvar.read.trace import read_trace
from perfvar.report.json import write_json

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = os.environ.get("PV_GOLDEN_TRACE")
HAS_GOLDEN = bool(GOLDEN) and (Path(GOLDEN or ".") / "golden.json").exists()
needs_golden = pytest.mark.skipif(
    not HAS_GOLDEN,
    reason="no golden trace (ctest runs unit.convert first and sets PV_GOLDEN_TRACE)",
)
PROBE_TRACE = ROOT / "build" / "tests" / "traces" / "mpi.c_threads.probe.np2"
ANALYZE = {"symbolize_sites": False, "paper_check": False}

SEGMENT_DTYPES = {
    "segment": "category",
    "name": "category",
    "rank": "int32",
    "thread": "int32",
    "start_ns": "float64",
    "end_ns": "float64",
    "duration_ns": "float64",
    "cpu": "Int32",
    "cpu_end": "Int32",
    "migrated": "bool",
    "context_bytes": "Int64",
}
CALL_DTYPES = {
    "rank": "int32",
    "thread": "int32",
    "name": "category",
    "site": "category",
    "start_ns": "float64",
    "end_ns": "float64",
    "duration_ns": "float64",
    "cpu": "Int32",
    "bytes": "Int64",
}


def assert_dtypes(frame: pd.DataFrame, expected: dict) -> None:
    assert list(frame.columns[: len(expected)]) == list(expected)
    for column, dtype in expected.items():
        if dtype == "str":
            assert pd.api.types.is_string_dtype(frame[column]), column
        else:
            assert str(frame[column].dtype) == dtype, column


# Golden trace: exact times --------------------------------------------------------


@pytest.fixture(scope="module")
def golden():
    expected = json.loads((Path(GOLDEN) / "golden.json").read_text())
    # recover=False: the fixture's records are not rebuilt into its directory
    return expected, perfvar.open(GOLDEN, recover=False)


@needs_golden
def test_golden_segments_exact(golden):
    expected, run = golden
    seg = run.segments
    assert_dtypes(seg, SEGMENT_DTYPES)
    assert len(seg) == len(read_trace(GOLDEN).samples) == len(expected["segments"])
    # 1 GHz clock: ticks are ns; start_ns counts from the trace's global offset
    offset = run.trace.global_offset_ticks
    got = sorted(
        (int(r), int(s) + offset, int(d))
        for r, s, d in zip(seg["rank"], seg["start_ns"], seg["duration_ns"])
    )
    want = sorted((g["rank"], g["start_ns"], g["ns"]) for g in expected["segments"])
    assert got == want
    first = seg.iloc[0]
    assert (first["rank"], first["duration_ns"]) == (0, 1000.0)
    assert (first["start_ns"], first["end_ns"]) == (2000.0 - offset, 3000.0 - offset)
    assert first["name"] == "MPI_Init@golden+0x10 -> MPI_Allreduce@golden+0x20"
    assert pd.isna(first["context_bytes"])  # MPI_Init moved nothing
    assert (seg["cpu"] == seg["rank"]).all() and not seg["migrated"].any()
    after_p2p = seg["name"].str.startswith(("MPI_Send@", "MPI_Recv@"))
    after_p2p &= seg["name"].str.endswith("MPI_Allreduce@golden+0x20")
    assert after_p2p.sum() == 18 and (seg.loc[after_p2p, "context_bytes"] == 64).all()


@needs_golden
def test_golden_classes(golden):
    expected, run = golden
    classes = run.classes
    assert list(classes["segment"]) == [f"S{i}" for i in range(len(classes))]
    assert classes["total_ns"].is_monotonic_decreasing
    assert classes["n"].sum() == len(expected["segments"])
    assert set(classes["from_function"]) == {
        "MPI_Init",
        "MPI_Allreduce",
        "MPI_Send",
        "MPI_Recv",
    }
    per_class = run.segments.groupby("segment", observed=True)["duration_ns"].sum()
    assert np.allclose(per_class[classes["segment"]], classes["total_ns"])


@needs_golden
def test_golden_calls_exact(golden):
    expected, run = golden
    calls = run.calls
    assert_dtypes(calls, CALL_DTYPES)
    # one call before every segment of a thread, one after its last
    assert len(calls) == len(run.segments) + 2
    for rank in (0, 1):
        mine = [g for g in expected["segments"] if g["rank"] == rank]
        gaps = [b["start_ns"] - a["start_ns"] - a["ns"] for a, b in zip(mine, mine[1:])]
        c = calls[calls["rank"] == rank]
        assert list(c["name"].iloc[:3]) == [
            "MPI_Init",
            "MPI_Allreduce",
            "MPI_Send" if rank == 0 else "MPI_Recv",
        ]
        assert list(c["duration_ns"].iloc[1:-1]) == gaps
        assert np.isnan(c["start_ns"].iloc[0]) and np.isnan(c["end_ns"].iloc[-1])
        assert c["name"].iloc[-1] == "MPI_Finalize"
    sends = calls[calls["name"] == "MPI_Send"]
    assert len(sends) == 10 and (sends["bytes"] == 64).all()


@needs_golden
def test_golden_kept_and_analysis(tmp_path):
    # The analysis rebuilds the records into the directory: work on a copy.
    copy = tmp_path / "golden"
    shutil.copytree(GOLDEN, copy, ignore=shutil.ignore_patterns("dead", "long"))
    run = perfvar.open(copy, analysis="run", analyze_options=ANALYZE)
    assert run.kept.all() and run.kept.index.equals(run.segments.index)
    # no rank-N.json: nothing judged against peers, nothing found
    assert set(run.judgements["status"]) <= {"too few samples", "single rank"}
    assert run.anomalies.empty
    assert list(run.anomalies.columns) == list(frames.ANOMALY_COLUMNS) + ["evidence"]
    cal = run.calibration
    assert list(cal["rank"]) == [0, 1] and cal["state"].isna().all()
    assert not cal["usable"].any()
    assert cal["problem"].str.contains("missing").all()


# Synthetic trace: frames vs analysis.json -----------------------------------------


@pytest.fixture(scope="module")
def slow_dir(tmp_path_factory):
    """4 ranks, rank 1 slow in class A, on CPU 3; messages before each segment;
    its analysis.json written as `perfvar analyze` does."""
    path = str(tmp_path_factory.mktemp("frames") / "slow")
    write_trace(
        path,
        normal_durations(seed=1, slow={1: 272_300.0}),
        cpus={0: 0, 1: 3, 2: 1, 3: 2},
        moved={SEG_A: (100, 50)},
    )
    write_json(analyze(path, **ANALYZE))
    return path


@pytest.fixture(scope="module")
def slow_run(slow_dir):
    return perfvar.open(slow_dir, analysis="file", paper_check=False)


def test_segments_match_reader(slow_run, slow_dir):
    seg = slow_run.segments
    samples = read_trace(slow_dir).samples
    assert_dtypes(seg, SEGMENT_DTYPES)
    assert len(seg) == len(samples) == 4 * 2 * 200
    assert np.array_equal(seg["duration_ns"], samples["duration_ns"])
    assert np.array_equal(seg["rank"], samples["rank"])
    assert np.array_equal(seg["cpu"].to_numpy(int), samples["cpu_enter"])
    assert np.allclose(seg["end_ns"] - seg["start_ns"], seg["duration_ns"])
    assert list(seg["segment"].cat.categories) == ["S0", "S1"]
    # class A (540 us) has the larger total: S0; its call moved 100 + 50 bytes
    a = seg["segment"] == "S0"
    name = "MPI_Waitall@stencil+0x1a2b -> MPI_Allreduce@stencil+0x1c3d"
    assert (seg.loc[a, "name"] == name).all()
    assert (seg.loc[a, "context_bytes"] == 150).all()
    assert seg.loc[~a, "context_bytes"].isna().all()


def test_classes_match_analysis(slow_run):
    theirs = {s.id: s.key for s in slow_run.analysis.segments}
    assert dict(zip(slow_run.classes["segment"], slow_run.classes["key"])) == theirs


def test_classes_of_two_kinds_match_analysis(tmp_path):
    # Class A alternates 0.2 ms and 30 ms segments on every rank (a loop over MPI
    # calls in one helper): the analysis judges two classes, and the frames show
    # the same two, labelled by their side, with no warning of another numbering.
    durations = normal_durations(seed=2, nranks=2)
    for r in durations:
        durations[r][SEG_A][1::2] *= 60.0
    path = str(tmp_path / "two")
    write_trace(path, durations)
    write_json(analyze(path, **ANALYZE))
    run = perfvar.open(path, analysis="file", paper_check=False)
    theirs = {s.id: s.key for s in run.analysis.segments}
    assert dict(zip(run.classes["segment"], run.classes["key"])) == theirs
    names = run.classes["name"].tolist()
    assert sum(n.endswith(" ms]") for n in names) == 2
    assert len(run.segments) == 2 * 2 * 200
    assert run.segments["segment"].nunique() == 3


def test_calls(slow_run):
    calls, seg = slow_run.calls, slow_run.segments
    assert_dtypes(calls, CALL_DTYPES)
    assert len(calls) == len(seg) + 4  # one per segment, one after each rank's last
    inner = calls.groupby(["rank", "thread"]).nth(slice(1, -1))
    # conftest writes each MPI region 500 ticks (200 ns) long
    assert np.allclose(inner["duration_ns"], 200.0)
    assert set(inner["name"]) == {"MPI_Waitall", "MPI_Allreduce"}
    waits = inner[inner["name"] == "MPI_Waitall"]
    assert (waits["bytes"] == 150).all()
    assert (waits["cpu"] == waits["rank"].map({0: 0, 1: 3, 2: 1, 3: 2})).all()
    assert inner.loc[inner["name"] == "MPI_Allreduce", "bytes"].isna().all()


def test_threads(trace_factory):
    # thread k of a rank repeats the rank's segments at the same ticks: the OS-noise
    # mask must still map back to the right rows
    durations = normal_durations(seed=3, nranks=2, n=100, slow={1: 50_000.0})
    run = perfvar.open(
        trace_factory("threads", durations, threads=2),
        analysis="run",
        paper_check=False,
        analyze_options={"symbolize_sites": False},
    )
    seg, calls = run.segments, run.calls
    per_thread = {(r, t): 200 for r in (0, 1) for t in (0, 1)}
    assert seg.groupby(["rank", "thread"]).size().to_dict() == per_thread
    assert calls.groupby(["rank", "thread"]).size().to_dict() == {
        k: v + 1 for k, v in per_thread.items()
    }
    second = seg[seg["thread"] == 1]
    assert (second["cpu"] == second["rank"] + 10).all()
    removed = (~run.kept).groupby(seg["segment"], observed=True).sum()
    want = {s.id: s.os_noise_removed for s in run.analysis.segments}
    assert removed.to_dict() == want


def test_judgements_match_file(slow_run, slow_dir):
    doc = json.loads((Path(slow_dir) / "analysis.json").read_text())
    j = slow_run.judgements
    assert list(j.columns) == list(frames.JUDGEMENT_COLUMNS)
    assert len(j) == len(doc["judgements"]) == 8
    for row, want in zip(j.itertuples(index=False), doc["judgements"]):
        assert (row.segment, row.rank, row.status, row.n) == (
            want["segment"],
            want["rank"],
            want["status"],
            want["n"],
        )
        assert row.median_ns == pytest.approx(want["median_ns"], nan_ok=True)
        assert row.q_value == pytest.approx(want["q_value"], nan_ok=True)
    slow = j[j["status"] == "slow"]
    assert list(zip(slow["segment"], slow["rank"])) == [("S0", 1)]
    assert j["rank"].dtype == "int32" and j["n"].dtype == "int64"
    assert pd.api.types.is_string_dtype(j["status"])


def test_anomalies_match_file(slow_run, slow_dir):
    doc = json.loads((Path(slow_dir) / "analysis.json").read_text())
    a = slow_run.anomalies
    assert len(a) == len(doc["anomalies"]) >= 1
    for column, dtype in frames.ANOMALY_COLUMNS.items():
        if dtype == "str":
            assert pd.api.types.is_string_dtype(a[column]), column
        else:
            assert str(a[column].dtype) == dtype, column
    for (_, row), want in zip(a.iterrows(), doc["anomalies"]):
        assert row["kind"] == want["kind"] and row["rank"] == want["rank"]
        assert row["cpu"] == want["cpu"]
        assert (row["segment"] if pd.notna(row["segment"]) else None) == want["segment"]
        assert row["excess_ns"] == pytest.approx(want["excess_ns"])
        assert row["evidence"] == want["evidence"]
        for key, value in want["evidence"].items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                column = f"evidence_{key}" if key in frames.ANOMALY_COLUMNS else key
                assert row[column] == pytest.approx(value), key
    slow = a[a["kind"] == "slow_segment"].iloc[0]
    assert (slow["rank"], slow["cpu"], slow["segment"]) == (1, 3, "S0")
    assert slow["q_value"] < 0.05 and slow["excess_ns"] > 200_000
    assert np.isnan(slow["window_start_ns"])


def test_calibration(slow_run):
    cal = slow_run.calibration
    assert list(cal.columns) == list(frames.CALIBRATION_COLUMNS)
    assert list(cal["rank"]) == [0, 1, 2, 3] and (cal["state"] == "0").all()
    assert (cal["t_min_ns"] == 150.3).all() and (cal["t_diff_ns"] == 4.1).all()
    assert (cal["mode"] == "quick").all() and (cal["timer_overhead_ns"] == 11.2).all()
    assert cal["usable"].all() and cal["problem"].isna().all()


def test_kept_matches_analysis(slow_run):
    kept = slow_run.kept
    assert kept.dtype == bool and kept.index.equals(slow_run.segments.index)
    removed = (~kept).groupby(slow_run.segments["segment"], observed=True).sum()
    want = {s.id: s.os_noise_removed for s in slow_run.analysis.segments}
    assert removed.to_dict() == want


def test_cached_and_lazy(slow_dir, monkeypatch):
    reads = []

    def counting(directory):
        reads.append(directory)
        return read_trace(directory)

    monkeypatch.setattr(frames, "read_trace", counting)
    run = perfvar.open(slow_dir, analysis="file", paper_check=False)
    assert reads == []  # nothing read before a frame is asked for
    assert run.segments is run.segments
    _ = run.calls, run.classes, run.judgements
    assert len(reads) == 1


def test_analysis_modes(slow_dir, tmp_path):
    # "auto" takes the file when there is one
    doc = json.loads((Path(slow_dir) / "analysis.json").read_text())
    doc["generated_by"] = "the file"
    copy = tmp_path / "copy"
    shutil.copytree(slow_dir, copy)
    (copy / "analysis.json").write_text(json.dumps(doc))
    assert perfvar.open(copy, paper_check=False).analysis.generated_by == "the file"
    # ... and runs the analysis (without writing it) when there is none
    (copy / "analysis.json").unlink()
    run = perfvar.open(copy, analyze_options={"symbolize_sites": False})
    assert run.analysis.generated_by != "the file"
    assert run.anomalies["kind"].tolist() == [a["kind"] for a in doc["anomalies"]]
    assert not (copy / "analysis.json").exists()
    with pytest.raises(FileNotFoundError):
        _ = perfvar.open(copy, analysis="file").analysis
    with pytest.raises(ValueError):
        perfvar.open(copy, analysis="maybe")


def test_open_is_exported_without_shadowing_builtin():
    assert perfvar.open is frames.open
    namespace: dict = {}
    exec("from perfvar import *", namespace)
    assert "open" not in namespace


# Probes and user timers, on a trace the MPI tests wrote (when built) ---------------


@pytest.mark.skipif(not PROBE_TRACE.exists(), reason="no ctest trace with probes")
def test_calls_skip_probes_and_user_timers():
    run = perfvar.open(PROBE_TRACE, analysis="file", recover=False, paper_check=False)
    calls = run.calls
    assert not calls["name"].str.startswith("perfvar_").any()
    assert (calls["duration_ns"].dropna() >= 0).all()
    # a probe runs between a segment's end and the call: the call starts at its end
    probes = run.trace.probes
    ends = run.trace.trace_ns(probes["start_ticks"]) + probes["duration_ns"]
    starts = calls["start_ns"].to_numpy()
    matched = [np.isclose(starts, e, rtol=0, atol=1e-3).any() for e in ends]
    assert np.mean(matched) > 0.9


# docs/dataframes.md -------------------------------------------------------------


def doc_blocks() -> list[str]:
    text = (ROOT / "docs" / "dataframes.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def run_doc(blocks: list[str], trace_dir: str, cwd: Path, monkeypatch) -> dict:
    code = "\n".join(blocks)
    code, n = re.subn(r"^DIR = .*$", f"DIR = {trace_dir!r}", code, flags=re.M)
    assert n == 1
    monkeypatch.chdir(cwd)
    namespace: dict = {}
    exec(compile(code, "docs/dataframes.md", "exec"), namespace)
    return namespace


def test_doc_example(slow_dir, tmp_path, monkeypatch, capsys):
    blocks = doc_blocks()
    assert len(blocks) == 2
    ns = run_doc(blocks[:1], slow_dir, tmp_path, monkeypatch)
    slowest = ns["slowest"]
    assert len(slowest) == 2
    assert slowest.set_index("segment").loc["S0", "rank"] == 1
    assert "slow" in set(ns["verdicts"]["status"])
    assert "MPI_Waitall" in capsys.readouterr().out


def test_doc_timeline(slow_dir, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    run_doc(doc_blocks(), slow_dir, tmp_path, monkeypatch)
    assert (tmp_path / "timeline.png").stat().st_size > 0
