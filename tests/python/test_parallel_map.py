"""Engine.map hands back every result in item order, and under MPI each result
travels on its own as soon as it is made (no process gathers every result's pickled
bytes at once)."""

import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import POSTPROC
from perfvar import parallel
from perfvar.parallel import MAP_TAG, Engine

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from run_mpi import launcher_flags  # noqa: E402


class FakeComm:
    """Point-to-point calls recorded in ``log``; recv answers what the sender
    ``size`` processes would send for ``items`` (process j: items j, j + size, ...)."""

    def __init__(self, size: int, items: list, log: list):
        self.log = log
        self.pending = {
            j: [("result", i) for i in range(j, len(items), size)]
            for j in range(1, size)
        }

    def send(self, obj, dest, tag):
        self.log.append(("send", obj, dest, tag))

    def recv(self, source, tag):
        self.log.append(("recv", source, tag))
        return self.pending[source].pop(0)


def _computed(log: list):
    def fn(item):
        log.append(("computed", item))
        return ("result", item)

    return fn


def test_mpi_map_sends_each_result_as_soon_as_made(monkeypatch):
    monkeypatch.setattr(parallel, "_p2p", lambda comm: comm)
    log: list = []
    items = list(range(8))
    eng = Engine("mpi", 3, rank=1, comm=FakeComm(3, items, log))
    assert eng.map(_computed(log), items) is None
    # Item i on process i mod 3; each result sent before the next is computed.
    assert log == [
        ("computed", 1),
        ("send", ("result", 1), 0, MAP_TAG),
        ("computed", 4),
        ("send", ("result", 4), 0, MAP_TAG),
        ("computed", 7),
        ("send", ("result", 7), 0, MAP_TAG),
    ]


def test_mpi_map_receives_one_result_at_a_time_in_item_order(monkeypatch):
    monkeypatch.setattr(parallel, "_p2p", lambda comm: comm)
    log: list = []
    items = list(range(8))
    eng = Engine("mpi", 3, rank=0, comm=FakeComm(3, items, log))
    out = eng.map(_computed(log), items)
    assert out == [("result", i) for i in items]
    received = [entry[1] for entry in log if entry[0] == "recv"]
    assert received == [1, 2, 1, 2, 1]  # items 1, 2, 4, 5, 7
    assert [e for e in log if e[0] == "computed"] == [
        ("computed", 0),
        ("computed", 3),
        ("computed", 6),
    ]


def _array_of(item: int) -> np.ndarray:
    return np.full(1000 + item, item, dtype=np.int64)


def test_processes_map_returns_results_in_item_order():
    eng = Engine("processes", 2)
    items = list(range(5))
    out = eng.map(_array_of, items)
    assert [a.tolist() for a in out] == [_array_of(i).tolist() for i in items]


MPI_SCRIPT = """
import sys

import numpy as np
from perfvar.parallel import engine


def make(i):
    # 2.4 MB: past every MPI's eager limit, so each result is a rendezvous
    return {"i": i, "big": np.full(300_000 + i, i, dtype=np.int64), "no": None}


eng = engine(1)
out = eng.map(make, list(range(7)))
# One file per process: the launcher may interleave the processes' stdout.
sys.stdout = open(f"{sys.argv[1]}/out-{eng.rank}.txt", "w")
if eng.reports:
    got = [(v["i"], v["big"].size, int(v["big"].min()), int(v["big"].max()), v["no"])
           for v in out]
    want = [(i, 300_000 + i, i, i, None) for i in range(7)]
    print("ordered" if got == want else f"wrong {got}", eng.kind, eng.size)
else:
    print("none" if out is None else "not none")
"""


def test_mpiexec_map_gives_every_result_in_order(tmp_path):
    pytest.importorskip("mpi4py")
    from test_parallel import _mpi4py_launcher

    mpiexec = _mpi4py_launcher()
    script = tmp_path / "map.py"
    script.write_text(MPI_SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.path.abspath(POSTPROC)}
    cmd = [mpiexec, "-n", "3", *launcher_flags(mpiexec), sys.executable, str(script)]
    p = subprocess.run(
        cmd + [str(tmp_path)], capture_output=True, text=True, timeout=300, env=env
    )
    assert p.returncode == 0, p.stderr
    said = [(tmp_path / f"out-{rank}.txt").read_text().strip() for rank in range(3)]
    assert said == ["ordered mpi 3", "none", "none"]
