"""The native event loop (libperfvar_read, perfvar.read.native) gives exactly what the
Python one gives: the same samples and probes, the same per-location reports, the same
warnings, on every trace the reader tests make (broken, cut, missing files, probes,
threads, unbalanced regions) and on subsets of locations; and the package falls back to
the Python loop when the library is missing.

The native cases need the library (a build's libperfvar_read.so beside $PERFVAR_LIB, or
the checkout's build/): they are skipped without it.
"""

import dataclasses
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import RESOLUTION_HZ, SEG_A, SEG_B, normal_durations
from perfvar.read import native as reader_native
from perfvar._spec import TraceName
from perfvar.read import trace as reader
from perfvar.errors import TraceError
from perfvar.read import otf2 as otf2_side
from perfvar.read.otf2 import trace_locations, trace_ranks
from perfvar.read.trace import read_trace
from test_reader_probe import write_probe_trace

GOLDEN = os.environ.get("PV_GOLDEN_TRACE")
HAVE_NATIVE = reader_native._load(tuple(reader_native.candidates())) is not None
native_only = pytest.mark.skipif(not HAVE_NATIVE, reason="libperfvar_read not built")


def read_with(monkeypatch, mode, path, **kw):
    monkeypatch.setenv("PERFVAR_READER", mode)
    try:
        return read_trace(path, **kw)
    finally:
        monkeypatch.delenv("PERFVAR_READER")


def _failed(reports):
    """The location reports with each error told only by whether there is one."""
    return [dataclasses.replace(r, error=r.error is not None) for r in reports]


def _errors_unworded(warnings, reports):
    """``warnings`` with each location's error words, which a warning quotes, replaced
    by one mark."""
    out = list(warnings)
    for r in reports:
        if r.error is not None:
            out = [w.replace(f"({r.error})", "(error)") for w in out]
    return out


def assert_same(a, b, error_text=True):
    """``error_text`` False: a location's error, and the warnings that quote it, compare
    by whether there is one (a cut file's: OTF2 decodes a buffer it did not fill, and
    which error that raises depends on what the heap held)."""
    assert a.samples.dtype == b.samples.dtype and a.probes.dtype == b.probes.dtype
    for name in a.samples.dtype.names:
        assert np.array_equal(a.samples[name], b.samples[name]), name
    for name in a.probes.dtype.names:
        assert np.array_equal(a.probes[name], b.probes[name]), name
    ma, mb = a.metrics, b.metrics
    assert ma.dtype == mb.dtype and a.metric_names == b.metric_names
    for name in ma.dtype.names:
        assert np.array_equal(ma[name], mb[name], equal_nan=name == "values"), name
    if error_text:
        assert a.locations == b.locations
        assert a.warnings == b.warnings
    else:
        assert _failed(a.locations) == _failed(b.locations)
        assert _errors_unworded(a.warnings, a.locations) == _errors_unworded(
            b.warnings, b.locations
        )
    assert (a.path, a.timer_resolution_hz, a.segments, a.global_offset_ticks) == (
        b.path,
        b.timer_resolution_hz,
        b.segments,
        b.global_offset_ticks,
    )


def both(monkeypatch, path, error_text=True, **kw):
    """Read ``path`` with both loops; assert they agree (``error_text``: see
    assert_same); return the native result. When one raises, the other must raise the
    same message."""
    results = {}
    for mode in ("python", "native"):
        try:
            results[mode] = read_with(monkeypatch, mode, path, **kw)
        except TraceError as exc:
            results[mode] = exc
    py, nat = results["python"], results["native"]
    if isinstance(py, TraceError) or isinstance(nat, TraceError):
        assert str(py) == str(nat)
        raise nat
    assert_same(py, nat, error_text)
    return nat


@native_only
@pytest.mark.parametrize("sub", ["", "long", "dead"])
def test_golden_traces_read_alike(monkeypatch, sub):
    path = Path(GOLDEN or "/nonexistent") / sub
    if not (path / "traces.otf2").exists():
        pytest.skip("no golden trace (ctest)")
    trace = both(monkeypatch, str(path))
    assert len(trace.samples) > 0
    assert sum(r.events_read for r in trace.locations) > 0


@native_only
@pytest.mark.skipif(
    not (Path(GOLDEN or "/nonexistent") / "long" / "traces.otf2").exists(),
    reason="no golden trace (ctest)",
)
@pytest.mark.parametrize("cut", [5000, 0])
def test_cut_event_files_read_alike(tmp_path, monkeypatch, cut):
    # Inside the first chunk, and empty. Past the cut OTF2 decodes a buffer the file
    # did not fill: whether that ends, and with which error, depends on the heap, so
    # the loops must agree on what they read and that the location failed, not on
    # the error's words (test_reader_cut.py reads the cut at the chunk boundary;
    # read_trace gives such files to the Python loop).
    path = tmp_path / "t"
    shutil.copytree(Path(GOLDEN) / "long", path)
    with open(path / "traces" / "1.evt", "r+b") as f:
        f.truncate(cut)
    trace = both(monkeypatch, str(path), error_text=cut == 0)
    assert trace.locations[1].error is not None and trace.broken_ranks == [1]


@native_only
def test_synthetic_traces_read_alike(trace_factory, monkeypatch):
    durations = normal_durations(seed=3, nranks=3, n=25)
    moved = {SEG_A: (1000, 5000), SEG_B: (64, 0)}  # sends and collectives
    cpus = {0: 4, 1: lambda i: i % 2, 2: 6}  # rank 1 migrates
    t = both(monkeypatch, trace_factory("a", durations, cpus=cpus, moved=moved))
    assert t.timer_resolution_hz == RESOLUTION_HZ
    assert set(t.samples["context_bytes"].tolist()) == {-1, 6000, 64}
    assert set(t.samples["cpu_enter"][t.samples["rank"] == 1].tolist()) == {0, 1}
    threads = both(monkeypatch, trace_factory("b", durations, threads=3))
    assert sorted(set(threads.samples["thread"].tolist())) == [0, 1, 2]
    assert len(threads.warnings) == 3


@native_only
def test_probe_traces_read_alike(tmp_path, monkeypatch):
    path = str(tmp_path / "p")
    write_probe_trace(path, ranks=2, threads=2, migrate=(1, 8))
    trace = both(monkeypatch, path)
    assert len(trace.probes) == 40 and (trace.probes["cpu"] == -1).sum() == 2
    none = str(tmp_path / "none")
    write_probe_trace(none, with_probes=False)
    assert len(both(monkeypatch, none).probes) == 0


@native_only
def test_metric_traces_read_alike(trace_factory, monkeypatch):
    durations = normal_durations(seed=5, nranks=3, n=20)
    metrics = {0: ["perf::TASK-CLOCK", "perf::PAGE-FAULTS"], 1: ["perf::PAGE-FAULTS"]}
    t = both(monkeypatch, trace_factory("m", durations, metrics=metrics, threads=2))
    assert t.metric_names == ["perf::TASK-CLOCK", "perf::PAGE-FAULTS"]
    assert set(t.metrics["rank"].tolist()) == {0, 1}  # rank 2 counts nothing
    none = both(monkeypatch, trace_factory("n", durations))
    assert none.metric_names == [] and len(none.metrics) == 0


@native_only
def test_broken_and_missing_files_read_alike(trace_factory, monkeypatch):
    path = trace_factory("t", normal_durations(seed=0, nranks=4, n=30))
    evt = os.path.join(path, "traces", "1.evt")
    with open(evt, "r+b") as fh:
        fh.truncate(os.path.getsize(evt) // 3)
    os.remove(os.path.join(path, "traces", "2.evt"))
    with open(os.path.join(path, "traces", "3.evt"), "r+b") as fh:
        fh.seek(40)
        fh.write(b"\xff" * 64)  # garbage in the middle of the first chunk
    trace = both(monkeypatch, path)
    assert 1 in trace.broken_ranks and 2 in trace.broken_ranks
    shutil.rmtree(os.path.join(path, "traces"))
    with pytest.raises(TraceError, match="no readable event data"):
        both(monkeypatch, path)


def _unbalanced_trace(path, cpu_type):
    """Regions that do not nest: a Leave that unwinds an open Enter, a Leave without
    Enter, Enters open at the end; every MPI record kind; ``cpu`` of ``cpu_type``."""
    import otf2
    from otf2.enums import CollectiveOp, GroupType, Paradigm, RegionRole

    with otf2.writer.open(path, timer_resolution=RESOLUTION_HZ) as trace:
        defs = trace.definitions
        node = defs.system_tree_node("node0", parent=defs.system_tree_node("machine"))
        cpu = defs.attribute(
            TraceName.CPU_ATTRIBUTE, "CPU the clock was read on", cpu_type
        )
        mpi = defs.region("MPI_Wait", canonical_name="MPI_Wait", paradigm=Paradigm.MPI)
        user = defs.region("u", canonical_name=TraceName.USER_PREFIX + "u")
        probe = defs.region(
            TraceName.PROBE_REGION, canonical_name=TraceName.PROBE_REGION
        )
        seg = defs.region(
            "s",
            canonical_name=SEG_A,
            region_role=RegionRole.CODE,
            paradigm=Paradigm.USER,
        )
        group = defs.location_group("MPI Rank 0", system_tree_parent=node)
        loc = defs.location("Master thread", group=group)
        defs.group(
            "MPI locations",
            group_type=GroupType.COMM_LOCATIONS,
            paradigm=Paradigm.MPI,
            members=[loc],
        )
        members = defs.group(
            "MPI_COMM_WORLD",
            group_type=GroupType.COMM_GROUP,
            paradigm=Paradigm.MPI,
            members=[0],
        )
        world = defs.comm("MPI_COMM_WORLD", group=members)
        w = trace.event_writer_from_location(loc)
        t = 100
        w.leave(t, user)  # Leave without Enter
        w.enter(t + 1, seg, attributes={cpu: 3})
        w.enter(t + 2, user)  # never left: the segment's Leave unwinds it
        w.leave(t + 50, seg, attributes={cpu: 4})
        w.enter(t + 60, mpi)
        w.mpi_isend(t + 61, 0, world, 1, 100, 7)
        w.mpi_irecv(t + 62, 0, world, 1, 20, 8)
        w.mpi_recv(t + 63, 0, world, 1, 3)
        w.non_blocking_collective_complete(
            t + 64, CollectiveOp.ALLREDUCE, world, 0, 5, 6, 9
        )
        w.leave(t + 70, mpi)
        w.enter(t + 71, probe, attributes={cpu: 3})
        w.leave(t + 90, probe, attributes={cpu: 3})
        w.enter(t + 91, seg)  # no cpu attribute: the last one given (the probe's)
        w.leave(t + 95, seg)
        w.enter(t + 100, seg, attributes={cpu: 5})
        w.enter(t + 101, mpi)  # both open at the end
    return path


@native_only
@pytest.mark.parametrize("type_name", ["UINT32", "INT64", "DOUBLE", "UINT8"])
def test_unbalanced_regions_and_cpu_types_read_alike(tmp_path, monkeypatch, type_name):
    from otf2.enums import Type

    path = _unbalanced_trace(str(tmp_path / "u"), getattr(Type, type_name))
    trace = both(monkeypatch, path)
    rep = trace.locations[0]
    assert (rep.unmatched_leaves, rep.unclosed, rep.segments, rep.probes) == (
        1,
        3,
        2,
        1,
    )
    s = trace.samples
    assert s["context_bytes"].tolist() == [-1, 134]
    # The cpu attribute carries forward (perfvar writes it where the CPU changed).
    assert s["cpu_enter"].tolist() == [3, 3] and s["cpu_leave"].tolist() == [4, 3]
    assert s["duration_ns"].tolist() == [
        49 * 1e9 / RESOLUTION_HZ,
        4 * 1e9 / RESOLUTION_HZ,
    ]


@native_only
def test_cpu_written_where_it_changed_reads_as_on_every_event(
    trace_factory, monkeypatch
):
    durations = normal_durations(seed=5, nranks=2, n=20)
    cpus = {0: lambda i: (i // 7) % 2, 1: lambda i: 0xFFFFFFFF if 5 <= i < 9 else 3}
    changed = both(monkeypatch, trace_factory("c", durations, cpus=cpus))
    every = both(
        monkeypatch, trace_factory("e", durations, cpus=cpus, cpu_every_event=True)
    )
    assert np.array_equal(changed.samples, every.samples)
    rank1 = changed.samples[changed.samples["rank"] == 1]["cpu_enter"].tolist()
    assert rank1[4:10] == [3, -1, -1, -1, -1, 3]  # 0xFFFFFFFF: unknown from there on
    rank0 = changed.samples[changed.samples["rank"] == 0]["cpu_enter"].tolist()
    assert set(rank0) == {0, 1}


@native_only
def test_subsets_read_alike_and_match_the_whole(trace_factory, monkeypatch):
    path = trace_factory("t", normal_durations(seed=4, nranks=3, n=10), threads=2)
    whole = both(monkeypatch, path)
    ids = trace_locations(path)
    assert ids == [r.location for r in whole.locations]
    assert trace_ranks(path) == [0, 1, 2]
    part = both(monkeypatch, path, ranks=[2, 0])
    assert [(r.rank, r.thread) for r in part.locations] == [
        (0, 0),
        (0, 1),
        (2, 0),
        (2, 1),
    ]
    keep = np.isin(whole.samples["rank"], [0, 2])
    assert np.array_equal(part.samples, whole.samples[keep])
    one = both(monkeypatch, path, locations=[ids[3]])  # rank 1's second thread
    assert [(r.rank, r.thread) for r in one.locations] == [(1, 1)]
    mine = (whole.samples["rank"] == 1) & (whole.samples["thread"] == 1)
    assert np.array_equal(one.samples, whole.samples[mine])
    assert both(monkeypatch, path, ranks=[1], locations=ids[2:]).locations == (
        whole.locations[2:4]
    )
    with pytest.raises(TraceError, match="no rank 7"):
        both(monkeypatch, path, ranks=[7])
    with pytest.raises(TraceError, match="no location selected"):
        both(monkeypatch, path, ranks=[0], locations=[ids[2]])


def test_python_loop_when_the_library_is_missing(trace_factory, monkeypatch):
    path = trace_factory("t", normal_durations(seed=0, nranks=2, n=10))
    monkeypatch.delenv("PERFVAR_READER", raising=False)
    monkeypatch.setattr(reader_native, "candidates", lambda: ["/nonexistent/x.so"])
    used = []
    python_loop = reader._read_events
    monkeypatch.setattr(
        reader, "_read_events", lambda *a: used.append(1) or python_loop(*a)
    )
    assert reader_native.library() is None
    assert len(read_trace(path).samples) == 2 * 2 * 10 and used == [1]
    monkeypatch.setenv("PERFVAR_READER", "native")
    with pytest.raises(TraceError, match="PERFVAR_READER=native but .* cannot be"):
        read_trace(path)


@native_only
def test_native_loop_is_the_default_when_found(trace_factory, monkeypatch):
    path = trace_factory("t", normal_durations(seed=0, nranks=2, n=10))
    monkeypatch.delenv("PERFVAR_READER", raising=False)
    monkeypatch.setattr(
        reader, "_read_events", lambda *a: pytest.fail("the Python loop ran")
    )
    assert reader_native.library() is not None
    assert len(read_trace(path).samples) == 2 * 2 * 10


def test_a_bad_reader_choice_is_one_clear_error(trace_factory, monkeypatch):
    path = trace_factory("t", normal_durations(seed=0, nranks=2, n=10))
    monkeypatch.setenv("PERFVAR_READER", "fast")
    with pytest.raises(TraceError) as info:
        read_trace(path)
    text = str(info.value)
    assert "PERFVAR_READER='fast'" in text and "native or python" in text
    assert "\n" not in text


def test_the_definitions_are_read_again_only_when_the_archive_changes(
    trace_factory, monkeypatch
):
    path = trace_factory("d", normal_durations(seed=5, nranks=2, n=10))
    reads = []
    real = otf2_side._read_global_definitions
    monkeypatch.setattr(
        otf2_side,
        "_read_global_definitions",
        lambda anchor: reads.append(anchor) or real(anchor),
    )
    monkeypatch.setattr(otf2_side, "_DEFINITIONS", {})
    assert trace_ranks(path) == [0, 1]
    assert len(trace_locations(path)) == 2
    assert len(reads) == 1
    st = os.stat(os.path.join(path, "traces.def"))
    os.utime(os.path.join(path, "traces.def"), ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert trace_ranks(path) == [0, 1]
    assert len(reads) == 2
