"""The analysis split over processes gives what one process gives: local worker
processes (``--jobs``) and the processes of ``mpiexec -n K perfvar analyze`` (Open MPI
and MPICH, mpi4py), and the calibration judge decides each rank once."""

import json
import os
import shutil
import subprocess
import sys
from typing import Union

import numpy as np
import pytest
from calib_docs import _doc

from conftest import POSTPROC, normal_durations, run_cli
from perfvar.analysis import PARALLEL_MIN_RANKS, analyze
from perfvar.calibration.ranks import CACHE_NAME
from perfvar.partition import split
from perfvar.read.segments import segment_key
from perfvar.result import Analysis

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from run_mpi import launcher_flags  # noqa: E402

NRANKS = PARALLEL_MIN_RANKS + 4


@pytest.fixture
def wide_trace(trace_factory):
    """NRANKS ranks, rank 5 slow in class A, each rank with start-up samples (rank
    3's too noisy to confirm anything), rank 7's event file unreadable."""
    durations = normal_durations(seed=4, nranks=NRANKS, slow={5: 40_000.0})
    path = trace_factory("wide", durations)
    for rank in range(NRANKS):
        doc = _doc(seed=rank, noise=4.0 if rank == 3 else 1.0)
        with open(
            os.path.join(path, "perfvar", f"calibration-rank-{rank}.json"), "w"
        ) as f:
            json.dump(doc, f)
    with open(os.path.join(path, "traces", "7.evt"), "wb") as f:
        f.write(b"not an OTF2 event file")
    return path


def _without_engine(result: Union[Analysis, dict]) -> dict:
    """``result`` as analysis.json holds it (an Analysis, or the file's JSON), without
    the one entry a parallel run differs in."""
    doc = result.to_json() if isinstance(result, Analysis) else result
    out = json.loads(json.dumps(doc))
    assert out["params"].pop("engine")["processes"] >= 1
    return out


def test_split_gives_contiguous_blocks_covering_every_rank():
    blocks = split(list(range(10)), 3)
    assert [len(b) for b in blocks] == [4, 3, 3]
    assert sum(blocks, []) == list(range(10))
    assert split([4, 9], 8) == [[4], [9]]


def test_local_processes_give_the_serial_result(wide_trace):
    serial = analyze(wide_trace, symbolize_sites=False, jobs=1)
    assert os.path.exists(os.path.join(wide_trace, "perfvar", CACHE_NAME))
    parallel = analyze(wide_trace, symbolize_sites=False, jobs=2)
    assert parallel.params.engine["kind"] == "processes"
    assert parallel.params.engine["processes"] == 2
    assert _without_engine(parallel) == _without_engine(serial)
    assert serial.summary.kind_ranks["slow_ranks"] == [5]
    assert serial.summary.unreadable_ranks == [7]
    rows = {r.rank: r for r in serial.ranks}
    assert rows[0].calibration_source.startswith("paper")
    assert rows[3].calibration_source.startswith("C estimate")


def test_local_processes_give_the_serial_result_with_counters(trace_factory):
    """The counters' columns reach the merged trace: the time off the CPU is measured
    (ranks[].cpu_time) alike in one process and in parts."""
    path = trace_factory(
        "counters",
        normal_durations(seed=6, nranks=NRANKS),
        metrics={
            r: ["perf::TASK-CLOCK", "perf::CONTEXT-SWITCHES"] for r in range(NRANKS)
        },
    )
    serial = analyze(path, symbolize_sites=False, jobs=1)
    assert all(r.cpu_time for r in serial.ranks)
    parallel = analyze(path, symbolize_sites=False, jobs=2)
    assert parallel.params.engine["kind"] == "processes"
    assert _without_engine(parallel) == _without_engine(serial)


APP = "/opt/app/clover_leaf"


def _site(fn: str, *offsets: int) -> str:
    """A call-path label: the call's return address, then its callers'."""
    return f"{fn}@{APP}+0x{offsets[0]:x}" + "".join(
        f"<{APP}+0x{o:x}" for o in offsets[1:]
    )


def _judged_durations() -> dict[int, dict[str, np.ndarray]]:
    """NRANKS ranks whose classes only the whole trace tells how to judge: the
    exchange after the kernel is sent right from one helper on even ranks and left
    from another on odd ones (one family), and the middle ranks 4-7 send both ways
    (both members on one rank); the class after the exchange is two kinds of work
    (two 0.2 ms segments for each 30 ms one), whose long kind rank 5 runs 10 %
    slower."""
    rng = np.random.default_rng(8)
    wait = _site("MPI_Waitall", 0x100, 0x200, 0x300)
    right = _site("MPI_Isend", 0x510, 0x610, 0x700)
    left = _site("MPI_Isend", 0x520, 0x620, 0x700)
    kinds = np.tile([2e5, 2e5, 3e7], 60)
    out = {}
    for r in range(NRANKS):
        mix = kinds * rng.normal(1.0, 0.002, kinds.size)
        if r == 5:
            mix[kinds > 1e6] *= 1.10
        sends = [right, left] if 4 <= r < 8 else [right if r % 2 == 0 else left]
        out[r] = {segment_key(wait, s): rng.normal(5e5, 500.0, 180) for s in sends}
        out[r][segment_key(right, wait)] = mix
    return out


def test_parts_judge_families_and_split_classes_as_one_process(trace_factory):
    path = trace_factory("judged", _judged_durations())
    serial = analyze(path, symbolize_sites=False, jobs=1)
    parallel = analyze(path, symbolize_sites=False, jobs=2)
    assert parallel.params.engine["kind"] == "processes"
    assert _without_engine(parallel) == _without_engine(serial)
    segments = {s.id: s for s in serial.segments}
    assert any(len(s.family) == 2 for s in segments.values())
    assert sum("#above:" in s.key or "#below:" in s.key for s in segments.values()) == 2
    # Found in the long kind only (minor: the synthetic ranks never wait).
    found = [(a.kind, a.rank, segments[a.segment].key) for a in serial.minor]
    assert [(kind, rank) for kind, rank, _ in found] == [("slow_segment", 5)]
    assert "#above:" in found[0][2]


def test_the_judge_decides_once_and_a_changed_sample_file_anew(wide_trace):
    first = analyze(wide_trace, symbolize_sites=False, jobs=1)
    cache = os.path.join(wide_trace, "perfvar", CACHE_NAME)
    with open(cache) as f:
        decided = json.load(f)
    assert len(decided["files"]) == NRANKS
    again = analyze(wide_trace, symbolize_sites=False, jobs=1)
    assert again == first
    # Rank 3's samples replaced by quiet ones: judged anew, now confirmed.
    with open(os.path.join(wide_trace, "perfvar", "calibration-rank-3.json"), "w") as f:
        json.dump(_doc(seed=3), f)
    third = analyze(wide_trace, symbolize_sites=False, jobs=1)
    rows = {r.rank: r for r in third.ranks}
    assert rows[3].calibration_source.startswith("paper")
    with open(cache) as f:
        assert len(json.load(f)["files"]) == NRANKS + 1


def _mpi4py_launcher() -> str:
    """The mpiexec of the MPI mpi4py is built with."""
    from mpi4py import MPI

    flavour = "mpich" if "MPICH" in MPI.Get_library_version() else "openmpi"
    return shutil.which(f"mpiexec.{flavour}") or pytest.fail(f"no mpiexec.{flavour}")


def _other_launcher() -> str:
    mine = os.path.basename(_mpi4py_launcher())
    other = "mpiexec.mpich" if mine == "mpiexec.openmpi" else "mpiexec.openmpi"
    return shutil.which(other) or pytest.fail(f"no {other}")


def _mpiexec_analyze(mpiexec: str, n: int, trace: str, *args: str):
    """``mpiexec -n N python -m perfvar analyze TRACE --no-html ARGS``, captured."""
    env = {**os.environ, "PYTHONPATH": os.path.abspath(POSTPROC), "PERFVAR_DEBUG": ""}
    cmd = [mpiexec, "-n", str(n), *launcher_flags(mpiexec), sys.executable, "-m"]
    cmd += ["perfvar", "analyze", trace, "--no-html", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)


def test_mpiexec_analyze_gives_the_serial_result(wide_trace, tmp_path):
    mpiexec = _mpi4py_launcher()
    serial = run_cli(
        "analyze",
        wide_trace,
        "--no-html",
        "--jobs",
        "1",
        "--json",
        str(tmp_path / "serial.json"),
        "--no-symbolize",
    )
    assert serial.returncode == 0, serial.stderr
    p = _mpiexec_analyze(
        mpiexec, 3, wide_trace, "--no-symbolize", "--json", str(tmp_path / "mpi.json")
    )
    assert p.returncode == 0, p.stderr
    # Rank 0 alone reports: one verdict line, one analysis.
    assert p.stdout.count("verdict:") == 1 == serial.stdout.count("verdict:")
    with open(tmp_path / "serial.json") as f:
        one = json.load(f)
    with open(tmp_path / "mpi.json") as f:
        many = json.load(f)
    assert (
        many["params"]["engine"]["kind"],
        many["params"]["engine"]["processes"],
    ) == (
        "mpi",
        3,
    )
    assert _without_engine(many) == _without_engine(one)


def test_mpiexec_parts_judge_families_and_split_classes_as_one_process(
    trace_factory, tmp_path
):
    """The cells made again for the classes as judged read their samples' context
    where the other processes kept it: only the timing travels."""
    path = trace_factory("judged-mpi", _judged_durations())
    out = {}
    for name, launch in (("serial", None), ("mpi", _mpi4py_launcher())):
        args = ["--no-symbolize", "--json", str(tmp_path / f"{name}.json")]
        p = (
            _mpiexec_analyze(launch, 3, path, *args)
            if launch
            else run_cli("analyze", path, "--no-html", "--jobs", "1", *args)
        )
        assert p.returncode == 0, p.stderr
        with open(tmp_path / f"{name}.json") as f:
            out[name] = json.load(f)
    assert out["mpi"]["params"]["engine"]["kind"] == "mpi"
    assert _without_engine(out["mpi"]) == _without_engine(out["serial"])
    assert any(len(s["family"]) == 2 for s in out["mpi"]["segments"])


def test_mpiexec_of_another_mpi_than_mpi4py_s_is_refused(wide_trace, tmp_path):
    mpiexec = _other_launcher()
    p = _mpiexec_analyze(mpiexec, 2, wide_trace, "--quiet")
    assert p.returncode != 0
    assert "mpi4py is built with another MPI" in p.stderr
    assert not os.path.exists(os.path.join(wide_trace, "analysis.json"))
