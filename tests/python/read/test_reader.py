"""Reading a synthetic OTF2 trace and its perfvar/*.json metadata back."""

import json
import os
import shutil

import numpy as np
import pytest

from conftest import CALIBRATION, RESOLUTION_HZ, SEG_A, SEG_B, normal_durations
from perfvar.errors import TraceError
from perfvar.calibration.ranks import judged_meta
from perfvar.read.meta import (
    CALIBRATED_AGAIN,
    JUDGE_UNCALIBRATED,
    UNCALIBRATED_JUDGED,
    read_meta,
)
from perfvar.read.trace import read_trace


def test_reads_every_segment_with_ns_durations_and_cpus(trace_factory):
    durations = normal_durations(seed=0, nranks=3, n=40)
    path = trace_factory("t", durations, cpus={0: 4, 1: 5, 2: 6})
    trace = read_trace(path)
    assert trace.timer_resolution_hz == RESOLUTION_HZ
    assert sorted(trace.segments) == sorted([SEG_A, SEG_B])
    assert trace.ranks == [0, 1, 2] and trace.broken_ranks == [] and not trace.warnings
    s = trace.samples
    assert len(s) == 3 * 2 * 40
    tick_ns = 1e9 / RESOLUTION_HZ
    for rank in range(3):
        for key in (SEG_A, SEG_B):
            mine = s[(s["rank"] == rank) & (s["segment"] == trace.segments.index(key))]
            # Written in order, so the samples come back in order, rounded to ticks.
            np.testing.assert_allclose(
                mine["duration_ns"], durations[rank][key], atol=tick_ns
            )
            assert set(mine["cpu_enter"]) == {4 + rank}
            assert set(mine["cpu_leave"]) == {4 + rank}
    assert np.all(np.diff(s["start_ticks"][s["rank"] == 0].astype(np.int64)) > 0)
    # The nested perfvar:user region was matched, and is not a segment sample.
    assert [loc.user_regions for loc in trace.locations] == [80, 80, 80]
    assert all(
        loc.unclosed == 0 and loc.unmatched_leaves == 0 for loc in trace.locations
    )


def test_migrating_cpu_attribute_is_read_per_event(trace_factory):
    durations = normal_durations(seed=0, nranks=2, n=10)
    path = trace_factory("t", durations, cpus={0: 0, 1: lambda i: i % 2})
    s = read_trace(path).samples
    assert set(s["cpu_enter"][s["rank"] == 1]) == {0, 1}


def test_threads_are_read_per_location(trace_factory):
    # An MPI_THREAD_MULTIPLE run: 3 traced threads per rank, thread k on CPU rank + 10k.
    durations = normal_durations(seed=0, nranks=2, n=20)
    trace = read_trace(trace_factory("t", durations, threads=3))
    s = trace.samples
    assert trace.ranks == [0, 1] and trace.broken_ranks == []
    assert [(loc.rank, loc.thread) for loc in trace.locations] == [
        (r, k) for r in range(2) for k in range(3)
    ]
    for rank in range(2):
        for k in range(3):
            mine = s[(s["rank"] == rank) & (s["thread"] == k)]
            assert len(mine) == 2 * 20  # each thread has its own segments
            assert set(mine["cpu_enter"]) == {rank + 10 * k}
    assert trace.warnings == [
        f"rank {r}: 3 threads; the slow-segment judgement pools their samples per "
        "segment class"
        for r in range(2)
    ]


def test_errors_are_trace_errors_with_one_line(tmp_path, trace_factory):
    with pytest.raises(TraceError, match="no such directory"):
        read_trace(str(tmp_path / "missing"))
    os.makedirs(tmp_path / "empty")
    with pytest.raises(TraceError, match="traces.otf2: not found"):
        read_trace(str(tmp_path / "empty"))
    path = trace_factory("t", normal_durations(seed=0, nranks=2, n=10))
    shutil.rmtree(os.path.join(path, "traces"))
    with pytest.raises(TraceError, match="no readable event data") as info:
        read_trace(path)
    assert "\n" not in str(info.value)


def test_broken_event_file_excludes_only_that_rank(trace_factory):
    path = trace_factory("t", normal_durations(seed=0, nranks=3, n=30))
    evt = os.path.join(path, "traces", "1.evt")
    with open(evt, "r+b") as fh:
        fh.truncate(os.path.getsize(evt) // 3)
    trace = read_trace(path)
    assert trace.broken_ranks == [1]
    assert sorted(set(trace.samples["rank"].tolist())) == [0, 2]
    assert any(w.startswith("rank 1: events unreadable") for w in trace.warnings)


def test_meta_reads_calibration_and_tolerates_missing_files(trace_factory):
    path = trace_factory(
        "t",
        normal_durations(seed=0, nranks=3, n=5),
        calibration={1: None, 2: {"status": "off"}},
    )
    meta = read_meta(path, [0, 1, 2])
    assert meta.run["nranks"] == 3
    c0 = meta.ranks[0].calibration
    assert (c0.t_min_ns, c0.t_diff_ns, c0.timer_overhead_ns) == (
        CALIBRATION["t_min_ns"],
        CALIBRATION["t_diff_ns"],
        CALIBRATION["timer_overhead_ns"],
    )
    assert meta.ranks[0].calibrated and meta.ranks[0].host == "node0"
    assert not meta.ranks[1].calibrated and "missing" in meta.ranks[1].problem
    assert not meta.ranks[2].calibrated and "off" in meta.ranks[2].problem
    assert any("missing for 1 rank(s) (1)" in n for n in meta.notes)
    with open(os.path.join(path, "perfvar", "rank-0.json"), "w") as fh:
        fh.write("{not json")
    meta = read_meta(path, [0])
    assert not meta.ranks[0].calibrated and "unreadable" in meta.ranks[0].problem
    shutil.rmtree(os.path.join(path, "perfvar"))
    meta = read_meta(path, [0, 1])
    assert meta.run is None and not any(m.calibrated for m in meta.ranks.values())


def test_meta_rejects_non_numeric_calibration(tmp_path):
    os.makedirs(tmp_path / "perfvar")
    doc = {"rank": 0, "calibration": {"t_min_ns": "fast", "t_diff_ns": -1}}
    (tmp_path / "perfvar" / "rank-0.json").write_text(json.dumps(doc))
    meta = read_meta(str(tmp_path), [0])
    assert meta.ranks[0].calibration.t_min_ns is None
    assert meta.ranks[0].calibration.t_diff_ns is None


def test_meta_says_which_fields_are_ill_typed(tmp_path):
    os.makedirs(tmp_path / "perfvar")
    doc = {"rank": 0, "nranks": "two", "clock": {"hz": "fast"}, "calibration": {"status": "ok"}}
    (tmp_path / "perfvar" / "rank-0.json").write_text(json.dumps(doc))
    notes = read_meta(str(tmp_path), [0]).notes
    assert any("rank-0.json: nranks is 'two', not a number" in n for n in notes)
    assert any("rank-0.json: clock.hz is 'fast', not a number" in n for n in notes)


def test_meta_takes_the_c_searchs_zero_as_not_found(tmp_path):
    # A partial start-up calibration writes 0 where its search found nothing: the rank
    # must stay unjudged, never be judged against t_min = t_diff = 0 ns.
    os.makedirs(tmp_path / "perfvar")
    cal = {"status": "partial", "timer_overhead_ns": 20.0, "t_min_ns": 0.0}
    doc = {"rank": 0, "calibration": {**cal, "t_diff_ns": 0.0}}
    (tmp_path / "perfvar" / "rank-0.json").write_text(json.dumps(doc))
    meta = read_meta(str(tmp_path), [0])
    c = meta.ranks[0].calibration
    assert c.t_min_ns is None and c.t_diff_ns is None and c.timer_overhead_ns == 20.0
    assert not meta.ranks[0].calibrated and "partial" in meta.ranks[0].problem
    assert c.states[0].t_min_ns is None


def test_meta_notes_flush0_missing_apart_from_no_calibration_at_all(tmp_path):
    # Rank 0 has no flush-0 values but a calibrated 4xL1 state: it is judged with that
    # state (perfvar.read.cache_state), so the note must not say it is not judged. Rank 1
    # has nothing usable: it is not judged.
    os.makedirs(tmp_path / "perfvar")
    none_found = {"t_min_ns": 0.0, "t_diff_ns": 0.0}
    zero = {"label": "0", "flush": 0, "status": "partial", **none_found}
    l1 = {"label": "4xL1", "flush": 196608, "status": "partial"}
    for rank, l1_values in ((0, {"t_min_ns": 11131.3, "t_diff_ns": 549.6}), (1, {})):
        states = [zero, {**l1, **none_found, **l1_values}]
        cal = {"status": "partial", "t_min_ns": 0.0, "t_diff_ns": 0.0, "states": states}
        doc = {"rank": rank, "calibration": cal}
        (tmp_path / "perfvar" / f"rank-{rank}.json").write_text(json.dumps(doc))
    meta = judged_meta(str(tmp_path), [0, 1])
    assert [s.usable for s in meta.ranks[0].calibration.states] == [False, True]
    assert (
        "no flush-0 t_min/t_diff for rank(s) 0: judged with the nearest calibrated "
        "cache state" in meta.notes
    )
    assert (f"no usable t_min/t_diff for rank(s) 1: "
            f"{UNCALIBRATED_JUDGED} ({JUDGE_UNCALIBRATED})"
            in meta.notes)
    assert not any("rank(s) 0: not judged" in n for n in meta.notes)


def test_public_callback_path_reads_the_same(trace_factory, monkeypatch):
    import perfvar.read.python_loop as reader

    monkeypatch.setenv("PERFVAR_READER", "python")  # the Python event loop's paths
    moved = {SEG_A: (1000, 5000), SEG_B: (64, 0)}  # sends and collectives
    path = trace_factory("t", normal_durations(seed=5, nranks=2, n=20), moved=moved)
    direct = []
    raw = reader._set_raw_callbacks
    monkeypatch.setattr(
        reader,
        "_set_raw_callbacks",
        lambda c, s: direct.append(raw(c, s)) or direct[-1],
    )
    fast = read_trace(path)
    assert direct == [True, True]  # the direct C callbacks were really used
    monkeypatch.setattr(reader, "_set_raw_callbacks", lambda callbacks, scanner: False)
    monkeypatch.setattr(reader, "_raw_get_uint32", lambda: None)
    slow = read_trace(path)
    np.testing.assert_array_equal(fast.samples, slow.samples)
    assert fast.segments == slow.segments
    # Context: what the MPI call before each segment moved; each rank's first
    # segment has no call before it.
    s = fast.samples
    for key, (sent, received) in moved.items():
        ctx = s["context_bytes"][s["segment"] == fast.segments.index(key)]
        assert set(ctx.tolist()) <= {sent + received, -1}
        assert (ctx == sent + received).sum() >= len(ctx) - 2


def test_a_rank_that_calibrated_again_at_its_stop_is_said(tmp_path):
    # Rank 1's start-up calibration found nothing; it calibrated again at MPI_Finalize.
    (tmp_path / "perfvar").mkdir()
    state = {"label": "0", "flush": 0, "status": "complete", "t_min_ns": 150.0,
             "t_diff_ns": 4.0}
    for rank, at in ((0, "start-up"), (1, CALIBRATED_AGAIN)):
        cal = {"status": "complete", "at": at, "t_min_ns": 150.0, "t_diff_ns": 4.0,
               "states": [state]}
        doc = {"rank": rank, "calibration": cal}
        (tmp_path / "perfvar" / f"rank-{rank}.json").write_text(json.dumps(doc))
    meta = judged_meta(str(tmp_path), [0, 1])
    assert [meta.ranks[r].calibration.at for r in (0, 1)] == ["start-up", CALIBRATED_AGAIN]
    assert ("the start-up calibration of rank(s) 1 found no flush-0 t_min/t_diff: "
            "calibrated again at MPI_Finalize, on the same core") in meta.notes
