"""The analysis split over processes gives what one process gives: local worker
processes (``--jobs``) and the processes of ``mpiexec -n K perfvar analyze`` (Open MPI
and MPICH, mpi4py), and the calibration judge decides each rank once."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from calib_docs import _doc

from conftest import POSTPROC, normal_durations, run_cli
from perfvar.analysis import PARALLEL_MIN_RANKS, analyze
from perfvar.calibration.ranks import CACHE_NAME
from perfvar.partition import split

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


def _without_engine(result: dict) -> dict:
    out = json.loads(json.dumps(result))  # as analysis.json holds it
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
    assert parallel["params"]["engine"]["kind"] == "processes"
    assert parallel["params"]["engine"]["processes"] == 2
    assert _without_engine(parallel) == _without_engine(serial)
    assert serial["summary"]["slow_ranks"] == [5]
    assert serial["summary"]["unreadable_ranks"] == [7]
    rows = {r["rank"]: r for r in serial["ranks"]}
    assert rows[0]["calibration_source"].startswith("paper")
    assert rows[3]["calibration_source"].startswith("C estimate")


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
    assert all(r["cpu_time"] for r in serial["ranks"])
    parallel = analyze(path, symbolize_sites=False, jobs=2)
    assert parallel["params"]["engine"]["kind"] == "processes"
    assert _without_engine(parallel) == _without_engine(serial)


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
    rows = {r["rank"]: r for r in third["ranks"]}
    assert rows[3]["calibration_source"].startswith("paper")
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


def test_mpiexec_of_another_mpi_than_mpi4py_s_is_refused(wide_trace, tmp_path):
    mpiexec = _other_launcher()
    p = _mpiexec_analyze(mpiexec, 2, wide_trace, "--quiet")
    assert p.returncode != 0
    assert "mpi4py is built with another MPI" in p.stderr
    assert not os.path.exists(os.path.join(wide_trace, "analysis.json"))
