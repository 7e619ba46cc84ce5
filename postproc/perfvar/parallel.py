"""Where the analysis's independent work runs: in this process, in local worker
processes, or on the processes of an MPI job (``mpiexec -n K perfvar analyze DIR``,
through mpi4py), the engine HPC users already have.

:func:`engine` picks one: MPI when started by an MPI launcher with more than one
process, else ``jobs`` local processes (this one and jobs - 1 spawned: a forked
process could inherit BLAS/OpenMP threads holding locks), else this process.
``Engine.map(fn, items)`` computes ``fn(item)`` for every item somewhere and returns
the results, in order, on the reporting process (``Engine.reports``); under MPI
every process must call it with the same items, item i being computed by process
i mod K, and the others get None. Results travel pickled. Not thread-safe.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Optional

MPI_ENV = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK")
SIZE_ENV = (
    "OMPI_COMM_WORLD_SIZE",
    "PMI_SIZE",
)  # how many processes the launcher started


def mpi_launched() -> bool:
    """True when started by an MPI launcher (Open MPI, MPICH/Hydra, PMIx)."""
    return any(v in os.environ for v in MPI_ENV)


def default_jobs() -> int:
    """Worker processes by default: the CPUs we may use, at most 8."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(n, 8))


class Engine:
    """Runs a function over items; see the module docstring."""

    def __init__(self, kind: str, size: int, rank: int = 0, comm: Any = None) -> None:
        self.kind = kind  # "serial", "processes" or "mpi"
        self.size = size  # processes that compute
        self.rank = rank  # this process's index; 0 reports
        self.comm = comm

    @property
    def reports(self) -> bool:
        return self.rank == 0

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "processes": self.size}

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Optional[list]:
        if self.kind == "mpi":
            mine = [(i, fn(items[i])) for i in range(self.rank, len(items), self.size)]
            gathered = self.comm.gather(mine, root=0)
            if not self.reports:
                return None
            out: list[Any] = [None] * len(items)
            for part in gathered:
                for i, value in part:
                    out[i] = value
            return out
        if self.kind == "processes" and len(items) > 1:
            # This process computes the first item meanwhile: one spawn (and its
            # imports, seconds) fewer.
            ctx = multiprocessing.get_context("spawn")
            workers = min(self.size, len(items)) - 1
            with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
                rest = [pool.submit(fn, item) for item in items[1:]]
                first = fn(items[0])
                return [first] + [r.result() for r in rest]
        return [fn(item) for item in items]

    def share(self, value: Any) -> Any:
        """The reporting process's ``value`` on every process (MPI broadcast)."""
        return self.comm.bcast(value, root=0) if self.kind == "mpi" else value


def engine(jobs: int = 1) -> Engine:
    """MPI when launched by mpiexec with more than one process (mpi4py required),
    else ``jobs`` local processes, else serial."""
    if mpi_launched():
        try:
            from mpi4py import MPI
        except ImportError as exc:
            from perfvar.errors import TraceError

            raise TraceError(
                "perfvar under mpiexec needs mpi4py (pip install mpi4py)"
            ) from exc
        comm = MPI.COMM_WORLD
        if comm.Get_size() > 1:
            return Engine("mpi", comm.Get_size(), comm.Get_rank(), comm)
        started = max((int(os.environ.get(v, "1") or 1) for v in SIZE_ENV), default=1)
        if started > 1:
            # Each process would analyse alone and write the same files at once.
            from perfvar.errors import TraceError

            library = MPI.Get_library_version().splitlines()[0].strip()
            raise TraceError(
                f"mpiexec started {started} processes but each sees an MPI job of 1: "
                f"mpi4py is built with another MPI ({library}); use that MPI's "
                "mpiexec, or mpi4py built for this one"
            )
    if jobs > 1:
        return Engine("processes", jobs)
    return Engine("serial", 1)
