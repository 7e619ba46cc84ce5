"""`perfvar calibrate`: every timer x cache state on this core, with a time budget.

Times are ns, except for the CPU-cycle counter ("cycles"), whose figures are cycles
under ``*_cycles`` keys (its ``*_ns`` keys are null; ``unit`` says which).

Cache states are the paper's flush sizes: 0, 4 x L1, 4 x L2, 4 x L3 (sizes from sysfs).
The process is pinned to the CPU it starts on, so every sample comes from one core.
Progress goes to stderr (a bar on a terminal, one line per step otherwise).
Under mpiexec (mpi4py), every rank calibrates its own core at the same time, in the
environment of a real run, and rank 0 gathers the results (MPI_Wtime is then a timer
too).
"""

from __future__ import annotations

import ctypes
import functools
import os
import socket
import sys
import time
from typing import Any, Optional

from perfvar import __version__
from perfvar.calibrate import CalibParams, calibrate_state, timer_overhead
from perfvar.kernels import Kernels

STATES = ("0", "4xL1", "4xL2", "4xL3")


def _measure(k: Kernels, timer: str, flush: int, n: int, adds: int):
    return k.sample(timer, adds, flush, n)


def in_unit(doc: dict[str, Any], unit: str) -> dict[str, Any]:
    """``doc`` with its ``*_ns`` values under ``*_<unit>`` keys when the timer does not
    measure ns (the CPU-cycle counter). The ``*_ns`` keys stay, as null, so a reader of
    the documented layout finds them and never takes cycles for ns."""
    if unit == "ns":
        return doc
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if key.endswith("_ns"):
            out[key] = None
            out[f"{key[:-3]}_{unit}"] = value
        else:
            out[key] = value
    return out


def _current_cpu() -> Optional[int]:
    """The CPU this process runs on (glibc sched_getcpu), None if unknown."""
    try:
        cpu = ctypes.CDLL(None).sched_getcpu()
    except (OSError, AttributeError):
        return None
    return cpu if cpu >= 0 else None


def flush_sizes(k: Kernels) -> dict[str, int]:
    """Bytes flushed for each cache state (0 for a level whose size is unknown)."""
    return {"0": 0, **{f"4xL{lv}": 4 * k.cache_size(lv) for lv in (1, 2, 3)}}


class Progress:
    """A progress bar on a terminal, plain lines otherwise (stderr)."""

    def __init__(self, total: int, quiet: bool = False) -> None:
        self.total, self.done, self.quiet = total, 0, quiet
        self.tty = sys.stderr.isatty()

    def step(self, what: str, result: Optional[str] = None) -> None:
        if self.quiet:
            return
        if result is None:  # starting
            if self.tty:
                width = 30
                filled = width * self.done // max(self.total, 1)
                bar = "#" * filled + "." * (width - filled)
                sys.stderr.write(f"\r[{bar}] {self.done}/{self.total} {what:<32}")
                sys.stderr.flush()
            return
        self.done += 1
        if not self.tty:
            sys.stderr.write(f"calibrate: {self.done}/{self.total} {what}: {result}\n")

    def close(self) -> None:
        if self.tty and not self.quiet:
            sys.stderr.write("\r" + " " * 80 + "\r")


def run(
    timers: list[str],
    states: list[str],
    params: CalibParams,
    total_budget_s: Optional[float],
    n_overhead: int = 10000,
    lib: Optional[str] = None,
    quiet: bool = False,
) -> dict[str, Any]:
    """Calibrate; returns the JSON document (see cli `calibrate --json`)."""
    k = Kernels(lib)
    cpu = _current_cpu()
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    sizes = flush_sizes(k)
    usable = [t for t in timers if k.available(t)[0]]
    pairs = len(usable) * len(states)
    if total_budget_s:
        params.budget_s = total_budget_s / max(pairs, 1)
    progress = Progress(pairs, quiet)
    began = time.monotonic()
    out_timers = []
    for timer in timers:
        ok, why = k.available(timer)
        unit = k.unit(timer)
        entry: dict[str, Any] = {"name": timer, "available": ok, "unit": unit}
        if not ok:
            entry.update(why=why, overhead_ns=None, fluctuation_ns=None, states=[])
            out_timers.append(in_unit(entry, unit))
            continue
        overhead, fluctuation = timer_overhead(k.sample(timer, 0, 0, n_overhead))
        entry.update(overhead_ns=overhead, fluctuation_ns=fluctuation, states=[])
        for state in states:
            label = f"{timer} flush {state}"
            progress.step(label)
            flush = sizes[state]
            r = calibrate_state(
                functools.partial(_measure, k, timer, flush, params.n),
                overhead,
                flush,
                state,
                params,
            )
            if state != "0" and flush == 0:
                r.notes.append("cache size unknown (sysfs): nothing flushed")
            entry["states"].append(in_unit(r.to_json(), unit))
            progress.step(label, f"{r.status} ({r.elapsed_s:.1f} s)")
        out_timers.append(in_unit(entry, unit))
    progress.close()
    return {
        "generated_by": f"perfvar {__version__} calibrate",
        "library": k.path,
        "host": socket.gethostname(),
        "cpu": cpu,
        "flush_bytes": sizes,
        "params": vars(params),
        "elapsed_s": time.monotonic() - began,
        "timers": out_timers,
    }


def mpi_launched() -> bool:
    """True when started by an MPI launcher (Open MPI, MPICH/Hydra, PMIx)."""
    return any(
        v in os.environ for v in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK")
    )


def run_mpi(**kwargs: Any) -> Optional[dict[str, Any]]:
    """run() on every rank; rank 0 gets {"nranks", "ranks": [...], "timers": rank 0's},
    the other ranks None. Needs mpi4py (imported here, so standalone use does not)."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        from perfvar.errors import TraceError

        raise TraceError(
            "perfvar calibrate under mpiexec needs mpi4py (pip install mpi4py)"
        ) from exc
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    kwargs["quiet"] = kwargs.get("quiet", False) or rank != 0
    doc = run(**kwargs)
    doc["rank"] = rank
    docs = comm.gather(doc, root=0)
    if rank != 0:
        return None
    return {
        "generated_by": doc["generated_by"],
        "nranks": len(docs),
        "timers": docs[0]["timers"],
        "ranks": docs,
        "params": docs[0]["params"],
    }
