"""`perfvar calibrate`: every timer x cache state on this core, with a time budget.

Times are ns, except for the CPU-cycle counters ("cycles", "papi_read"), whose
figures are cycles under ``*_cycles`` keys (their ``*_ns`` keys are null; ``unit`` says
which). The top-level "clock" describes the clock perfvar reads (the barrier timer's):
under PERFVAR_CLOCK=clock_monotonic_raw the barrier timer is that unfenced clock and
its entry says "serialized": false.

Cache states are the paper's flush sizes: 0, 4 x L1, 4 x L2, 4 x L3 (sizes from sysfs).
The process is pinned to the CPU it starts on, so every sample comes from one core.
Progress goes to stderr (a bar on a terminal, perfvar.progress; one line per
step otherwise).
Under mpiexec (mpi4py), every rank calibrates its own core at the same time, in the
environment of a real run, and rank 0 gathers the results (MPI_Wtime is then a timer
too).
"""

from __future__ import annotations

import ctypes
import dataclasses
import os
import signal
import socket
import sys
import time
from typing import Any, Optional

from perfvar import __version__
from perfvar._spec import Timer
from perfvar.calibration.kernels import Kernels
from perfvar.calibration.search import (
    CalibParams,
    Interrupted,
    StateResult,
    calibrate_state,
    timer_overhead,
)
from perfvar.progress import Progress
from perfvar.read.cache_state import LABELS

STATES = LABELS  # the paper's cache states, as the analysis names them


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


class _Steps:
    """Progress over the (timer, state) pairs on stderr: a bar on a terminal, else
    one line per finished pair (a log keeps them; a bar would be noise there)."""

    def __init__(self, total: int, quiet: bool = False) -> None:
        self.total, self.done = total, 0
        # Drawn from the start and only between samples: calibrate always runs long,
        # and a refresh thread would wake up on the CPU being measured.
        self.bar = Progress("calibrate", quiet=quiet, delay_s=0, animate=False)
        self.lines = not quiet and not self.bar.enabled

    def step(self, what: str, result: Optional[str] = None) -> None:
        if result is None:  # starting
            self.bar.step(f"{self.done + 1}/{self.total} {what}")
            return
        self.done += 1
        if self.lines:
            sys.stderr.write(f"calibrate: {self.done}/{self.total} {what}: {result}\n")

    def close(self) -> None:
        self.bar.close()


def _not_measured(flush: int, label: str, unit: str) -> dict[str, Any]:
    r = StateResult(flush, label, status="not measured")
    r.notes.append("not reached: the run was interrupted")
    return in_unit(r.to_json(), unit)


def _keep_samples(
    samples: dict[str, Any],
    entry: dict[str, Any],
    overhead: float,
    params: CalibParams,
    r: StateResult,
) -> None:
    """Add one (timer, state)'s recorded distributions to ``samples`` (see run);
    ``entry`` is the timer's row."""
    timer = entry["name"]
    doc = samples.setdefault(
        timer,
        {
            "timer": timer,
            "unit": entry["unit"],  # the samples_ns values are in this unit
            "epsilon": params.epsilon,
            "alpha": params.alpha,
            "p": params.p,
            "q": params.q,
            "trees": params.trees,
            "timer_overhead_ns": overhead,
            "clock_granularity_ns": entry["granularity_ns"],
            "overhead_removed": True,
            "distributions": [],
            "states": [],
        },
    )
    if r.flush_label == "0":
        doc["distributions"] = r.recorded
    else:
        doc["states"].append(
            {
                "label": r.flush_label,
                "flush": r.flush_bytes,
                "distributions": r.recorded,
            }
        )


def _interrupt_after() -> Optional[int]:
    """Test hook: PERFVAR_CALIBRATE_INTERRUPT_AFTER=K sends the process a real SIGINT
    in the first sample of the (K+1)-th (timer, state), as Ctrl-C there would (a
    search can end faster than any outside sender can aim)."""
    text = os.environ.get("PERFVAR_CALIBRATE_INTERRUPT_AFTER")
    return int(text) if text and text.isdigit() else None


def _rows(
    k: Kernels,
    timers: list[str],
    states: list[str],
    sizes: dict[str, int],
    clock: Optional[dict[str, Any]],
) -> list[dict[str, Any]]:
    """One row per timer, every state "not measured" until it is; an unavailable
    timer says why and has no states."""
    rows = []
    for timer in timers:
        ok, why = k.available(timer)
        unit = k.unit(timer)
        entry: dict[str, Any] = {"name": timer, "available": ok, "unit": unit}
        if timer == Timer.BARRIER and clock is not None:
            entry.update(clock=clock["name"], serialized=clock["serialized"])
        entry.update(overhead_ns=None, fluctuation_ns=None, granularity_ns=None)
        if ok:
            entry["states"] = [_not_measured(sizes[st], st, unit) for st in states]
        else:
            entry.update(why=why, states=[])
        rows.append(entry)
    return rows


def _measure_overheads(
    k: Kernels, rows: list[dict[str, Any]], n_overhead: int
) -> dict[str, float]:
    """Each available timer's overhead (filter_cost), written into its row too, with
    the step it reads in (granularity_ns, in its unit; Kernels.resolution)."""
    overheads: dict[str, float] = {}
    for entry in rows:
        if entry["available"]:
            timer = entry["name"]
            overhead, fluct = timer_overhead(k.sample(timer, 0, 0, n_overhead))
            entry.update(
                overhead_ns=overhead,
                fluctuation_ns=fluct,
                granularity_ns=k.resolution(timer),
            )
            overheads[timer] = overhead
    return overheads


class _Budget:
    """Each (timer, state)'s share of the time: the time left divided by the pairs
    left when it starts, so time one leaves unused rolls over to the next ones (and
    an overrun is taken from them); params.budget_s each without a total."""

    def __init__(self, total_s: Optional[float], pairs: int, each_s: float) -> None:
        self.deadline = time.monotonic() + total_s if total_s else None
        self.left, self.each_s = pairs, each_s
        self.started = 0  # pairs started so far (the interrupt hook counts them)

    def next_share(self) -> float:
        share = self.each_s
        if self.deadline is not None:
            share = max(self.deadline - time.monotonic(), 0.0) / max(self.left, 1)
        self.left, self.started = self.left - 1, self.started + 1
        return share


def _measure_state(
    k: Kernels,
    entry: dict[str, Any],
    i: int,
    state: str,
    flush: int,
    overhead: float,
    params: CalibParams,
    budget: _Budget,
    hook: Optional[int],
) -> StateResult:
    """One (timer, state): its t_min / t_diff searches, written into row ``entry``
    at state index ``i`` (also when Ctrl-C interrupts it, which is re-raised)."""
    timer, unit = entry["name"], entry["unit"]
    share, no = budget.next_share(), budget.started

    def sample(adds: int, n: int) -> Any:
        if hook is not None and no > hook:
            # Started in the background by a shell without job control, the process
            # ignores SIGINT, and Python then installs no handler for it: the hook
            # is a Ctrl-C however it was started.
            signal.signal(signal.SIGINT, signal.default_int_handler)
            os.kill(os.getpid(), signal.SIGINT)
        return k.sample(timer, adds, flush, n)

    try:
        r = calibrate_state(
            None,
            overhead,
            flush,
            state,
            dataclasses.replace(params, budget_s=share),
            sample=sample,
            resolution=entry["granularity_ns"] or 0.0,
        )
    except Interrupted as exc:
        entry["states"][i] = in_unit(exc.result.to_json(), unit)
        raise
    if state != "0" and flush == 0:
        r.notes.append("cache size unknown (sysfs): nothing flushed")
    entry["states"][i] = in_unit(r.to_json(), unit)
    return r


def _measure_states(
    k: Kernels,
    rows: list[dict[str, Any]],
    states: list[str],
    sizes: dict[str, int],
    params: CalibParams,
    budget: _Budget,
    overheads: dict[str, float],
    progress: _Steps,
    samples: Optional[dict[str, Any]],
    hook: Optional[int],
) -> None:
    """Every (timer, state) into ``rows``, and its distributions into ``samples``."""
    # The largest flush first: a state whose single distribution does not fit its
    # share stops at once, and its time rolls over to every state after it.
    order = sorted(range(len(states)), key=lambda i: -sizes[states[i]])
    for i in order:
        state = states[i]
        for entry in (e for e in rows if e["available"]):
            timer = entry["name"]
            label = f"{timer} flush {state}"
            progress.step(label)
            r = _measure_state(
                k,
                entry,
                i,
                state,
                sizes[state],
                overheads[timer],
                params,
                budget,
                hook,
            )
            if samples is not None:
                _keep_samples(samples, entry, overheads[timer], params, r)
            progress.step(label, f"{r.status} ({r.elapsed_s:.1f} s)")


def run(
    timers: list[str],
    states: list[str],
    params: CalibParams,
    total_budget_s: Optional[float],
    n_overhead: int = 10000,
    lib: Optional[str] = None,
    quiet: bool = False,
    samples: Optional[dict[str, Any]] = None,
) -> dict[str, Any]:
    """Calibrate; returns the JSON document (see cli `calibrate --json`).

    ``samples``: when given, filled with timer name -> every distribution the
    searches drew, as a calibration document (the form of the start-up samples,
    calibration-rank-N.json) that perfvar.calibration.judge decides exactly as the
    table reports.

    Every timer's overhead is measured first; then the states, largest flush first,
    each for every timer. With total_budget_s, each (timer, state) gets the time left
    divided by the states left when it starts (_Budget). Ctrl-C
    (KeyboardInterrupt) ends the run early but still returns the document: the state
    being measured is "interrupted", the ones not reached "not measured", and the top
    level says "interrupted": true, "complete": false."""
    k = Kernels(lib)
    cpu = _current_cpu()
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    sizes = flush_sizes(k)
    clock = k.clock_info()
    rows = _rows(k, timers, states, sizes, clock)
    pairs = sum(1 for e in rows if e["available"]) * len(states)
    if total_budget_s:
        params.budget_s = total_budget_s / max(pairs, 1)
    hook = _interrupt_after()
    progress = _Steps(pairs, quiet)
    interrupted = False
    began = time.monotonic()
    try:
        progress.bar.step("timer overheads")
        budget = _Budget(total_budget_s, pairs, params.budget_s)
        overheads = _measure_overheads(k, rows, n_overhead)
        _measure_states(
            k, rows, states, sizes, params, budget, overheads, progress, samples, hook
        )
    except KeyboardInterrupt:
        interrupted = True
    finally:
        progress.close()  # an error too must erase the bar and give the cursor back
    rows = [in_unit(entry, entry["unit"]) for entry in rows]
    complete = not interrupted and all(
        s["status"] == "complete" for t in rows for s in t["states"]
    )
    return {
        "generated_by": f"perfvar {__version__} calibrate",
        "library": k.path,
        "host": socket.gethostname(),
        "cpu": cpu,
        "clock": clock,
        "flush_bytes": sizes,
        "params": vars(params),
        "total_budget_s": total_budget_s,
        "elapsed_s": time.monotonic() - began,
        "complete": complete,
        "interrupted": interrupted,
        "timers": rows,
    }


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
        "clock": docs[0]["clock"],
        "complete": all(d["complete"] for d in docs),
        "interrupted": any(d["interrupted"] for d in docs),
        "timers": docs[0]["timers"],
        "ranks": docs,
        "params": docs[0]["params"],
    }
