"""Where the analysis's independent work runs: in this process, in local worker
processes, or on the processes of an MPI job (``mpiexec -n K perfvar analyze DIR``,
through mpi4py), the engine HPC users already have.

:func:`engine` picks one: MPI when started by an MPI launcher with more than one
process, else ``jobs`` local processes (this one and jobs - 1 spawned: a forked
process could inherit BLAS/OpenMP threads holding locks), else this process.
``Engine.map(fn, items)`` computes ``fn(item)`` for every item somewhere and returns
the results, in order, on the reporting process (``Engine.reports``); under MPI
every process must call it with the same items, item i being computed by process
i mod K, and the others get None. Results travel pickled, one at a time as each is
made (under MPI through pickle 5's out-of-band buffers where mpi4py has them), so the
reporting process holds no more than one result's pickled bytes. Not thread-safe.
"""

from __future__ import annotations

import multiprocessing
import os
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Optional

MPI_ENV = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK")
SIZE_ENV = (
    "OMPI_COMM_WORLD_SIZE",
    "PMI_SIZE",
)  # how many processes the launcher started


MAP_TAG = 7301  # Engine.map's messages, apart from any other point-to-point traffic


def _p2p(comm: Any) -> Any:
    """``comm`` sending through pickle protocol 5 with out-of-band buffers
    (mpi4py.util.pkl5, mpi4py >= 3.1; also lifts MPI's 2^31-byte message limit),
    else ``comm`` itself."""
    try:
        from mpi4py.util import pkl5
    except ImportError:
        return comm
    return pkl5.Intracomm(comm)


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
        self.kept: dict[int, Any] = {}  # map(keep=True)'s own results

    @property
    def reports(self) -> bool:
        return self.rank == 0

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "processes": self.size}

    def map(
        self,
        fn: Callable[[Any], Any],
        items: Sequence[Any],
        keep: bool = False,
        split: Optional[Callable[[Any], tuple[Any, Any]]] = None,
    ) -> Optional[list]:
        """``fn`` over ``items`` (see the module docstring); with ``keep``, the
        other MPI processes keep their own results in ``kept`` (item -> result)
        for later steps on them (PartsOnProcesses); ``split``: under MPI, what of a
        result the other processes send and what they keep, (sent, kept), made
        from it there."""
        if self.kind == "mpi":
            return self._map_mpi(fn, items, keep, split)
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

    def _map_mpi(
        self,
        fn: Callable[[Any], Any],
        items: Sequence[Any],
        keep: bool = False,
        split: Optional[Callable[[Any], tuple[Any, Any]]] = None,
    ) -> Optional[list]:
        """map under MPI: each result travels alone, as soon as it is made, and the
        reporting process receives them in item order. A gather of every process's
        results would hold all their pickled bytes beside the unpickled objects (at
        a thousand ranks a part is its ranks' samples: gigabytes); with pickle 5's
        out-of-band buffers (mpi4py.util.pkl5) an array is received straight into
        the memory it is then used from, so no pickled copy of it exists at all."""
        comm = _p2p(self.comm)
        mine = range(self.rank, len(items), self.size)
        if not self.reports:
            for i in mine:
                sent = kept = fn(items[i])
                if split is not None:
                    sent, kept = split(sent)
                comm.send(sent, dest=0, tag=MAP_TAG)
                if keep:
                    self.kept[i] = kept
                del sent, kept
            return None
        out: list[Any] = [None] * len(items)
        for i in mine:
            out[i] = fn(items[i])
        for i in range(len(items)):
            if i % self.size:  # a sender's results arrive in the order it sent them
                out[i] = comm.recv(source=i % self.size, tag=MAP_TAG)
        return out

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


PARTS_TAG = 7302  # PartsOnProcesses' messages


@dataclass
class _Failed:
    """A step that raised on another process: its traceback, raised again here."""

    where: int
    traceback: str


class PartsOnProcesses:
    """The items of an MPI map kept where they were computed, as parts that later
    steps run on (perfvar.verdict.parts): item i on process i mod K. On the
    reporting process, ``each(fn, arg, per_part)`` sends the step to the other
    processes (serve), runs it on its own items and returns every item's answer in
    item order; ``adopt``: ``fn`` returns (the item's new state, its answer), and
    the state replaces the item where it is. ``close`` ends the others' serve."""

    def __init__(self, eng: Engine, n_items: int, own: dict[int, Any]) -> None:
        self.eng, self.n_items, self.own = eng, n_items, own

    def each(
        self,
        fn: Callable[[Any, Any], Any],
        arg: Any = None,
        per_part: Optional[Sequence[Any]] = None,
        adopt: bool = False,
    ) -> list[Any]:
        size, comm = self.eng.size, _p2p(self.eng.comm)
        self.eng.comm.bcast((fn, None if per_part else arg, bool(per_part), adopt))
        others = [i for i in range(self.n_items) if i % size]
        for i in others if per_part else []:
            comm.send(per_part[i], dest=i % size, tag=PARTS_TAG)
        out: list[Any] = [None] * self.n_items
        failed = None
        for i in sorted(self.own):
            try:
                out[i] = _step(self.own, i, fn, per_part[i] if per_part else arg, adopt)
            except Exception as exc:  # the others' answers are still to be taken
                failed = failed or exc
        for i in others:
            out[i] = comm.recv(source=i % size, tag=PARTS_TAG)
        if failed is not None:
            raise failed
        for answer in out:
            if isinstance(answer, _Failed):
                raise RuntimeError(
                    f"process {answer.where} failed:\n{answer.traceback}"
                )
        return out

    def close(self) -> None:
        self.eng.comm.bcast(None)


def _step(own: dict[int, Any], i: int, fn: Callable, arg: Any, adopt: bool) -> Any:
    answer = fn(own[i], arg)
    if adopt:
        own[i], answer = answer
    return answer


def serve(eng: Engine) -> None:
    """On a process other than the reporting one: run the steps the reporting
    process sends on the items kept by map (``eng.kept``) until it closes them."""
    comm = _p2p(eng.comm)
    while True:
        message = eng.comm.bcast(None)
        if message is None:
            return
        fn, arg, per_part, adopt = message
        mine = sorted(eng.kept)
        # Every argument taken before any answer is sent: a large answer blocks
        # until the reporting process takes it, after it sent every argument.
        args = [comm.recv(source=0, tag=PARTS_TAG) for _ in mine] if per_part else None
        for k, i in enumerate(mine):
            try:
                answer = _step(eng.kept, i, fn, args[k] if args else arg, adopt)
            except Exception:
                answer = _Failed(eng.rank, traceback.format_exc())
            if args:
                args[k] = None
            comm.send(answer, dest=0, tag=PARTS_TAG)
            del answer
