#!/usr/bin/env python3
"""Synthetic perfvar traces at scale, for tests and benchmarks.

  tests/tools/synth.py OUT --ranks N --segments S [--seed X] [--slow-ranks K]
                       [--cores-per-node C] [--sockets-per-node S]
                       [--no-slow-core] [--no-noisy-core] [--no-slow-phase] [--levels]

The records and the OTF2 archive are written by perfvar's own recorder and trace
writer (the C program perfvar-synth, tests/tools/synth.c: a halo-exchange stencil of
four segment classes per step, log-normal durations, OS-noise interruptions, messages
and an Allreduce per step); this module chooses the anomalies, writes the metadata the
runtime would (perfvar/run.json, rank-N.json, calibration-rank-N.json) and the ground
truth, OUT/synthetic.json::

  {"ranks", "segments_per_rank", "steps", "seed", "hz", "origin_ticks",
   "classes": [{"index", "name", "base_ns", "sigma", "key"}],
   "anomalies": [{"kind": "slow_segment", "rank", "class", "segment", "factor"},
                 {"kind": "slow_core", "rank", "factor"},
                 {"kind": "noisy_core", "rank", "rate_per_s", "interruption_ns"},
                 {"kind": "slow_phase", "rank", "class", "segment", "factor",
                  "steps": [from, to], "start_ns", "end_ns"}],
   "nodes", "cores_per_node", "sockets_per_node",
   "levels": [{"kind": "slow_node"|"slow_socket"|"noisy_node"|"node_transient",
               "level": "node"|"socket", "node", ["socket",] "ranks", ...}],
   "generation": {"generate_s", "convert_s", "metadata_s", "records_bytes",
                  "archive_bytes"}}

Rank r runs on node r // C (host "synth-nNNNN"), CPU r % C, socket CPU // (C/S)
(Placement; rank-N.json's "topology" says so, as hwloc would). ``--levels`` injects
the machine's levels instead of ranks' anomalies (choose_levels): a slow node, a slow
socket, a noisy node, a node-wide slow phase and a slow core on a node of its own.
``segment`` is the class's canonical segment key; a slow phase's window is in ns since
the trace's first timestamp (as analysis.json gives windows). The same arguments give
the same trace (the default seed is fixed).

The calibration of each rank is modelled, not measured: a chain of K dependent ADDs
takes K x ns_per_add (0.308 ns, the 2-vCPU VM's) plus Gaussian noise of 0.35 ns
quantised to the clock's tick and a few OS-noise outliers, timer overhead removed;
the distributions follow the C start-up search (src/calib/search.c): one at 64 and
128 ADDs (not precise), p = 5 at 256 (t_min), and q = 5 pairs at step 32 from 256
(t_diff). The paper's statistics (perfvar.calibration.judge) confirm t_min = 256
ADDs and t_diff = 32 ADDs from them. The flushed cache states are left out (status
"skipped").

perfvar-synth converts the ranks in one forked process each (the writer's closing
collectives need every rank alive), but at most 4 a CPU work at once (its ``--busy``); the
others wait in a collective holding a few hundred KiB, so 16384 ranks fit in a few GiB
where all writing at once outgrew the machine (docs/measurements.md, 2026-12-07).

``generate()`` is the entry point for tests and benchmarks. Not thread-safe (it runs
a subprocess writing OUT).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "postproc"))
from verdicts import Injected  # noqa: E402

from perfvar._spec import CalibrationJson as Cal  # noqa: E402
from perfvar.detect import (
    node_transient,
    noisy_node,
    slow_node,
    slow_socket,
)  # noqa: E402
from perfvar._spec import CalibrationJsonDistribution as CalDist  # noqa: E402
from perfvar._spec import CalibrationJsonState as CalState  # noqa: E402
from perfvar._spec import RankJsonTopology as Topo  # noqa: E402
from perfvar._spec import RankJsonTopologyCpu as TopoCpu  # noqa: E402
from perfvar._spec import RunJson  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CLASSES = ("pack", "post", "compute", "update")
N_SAMPLES = 100  # samples per calibration distribution (quick mode takes 300)
NS_PER_ADD = 0.3082
NOISE_NS = 0.35
OVERHEAD_NS = 20.03
P = Q = 5
T_MIN_ADDS, T_DIFF_ADDS = 256, 32


@dataclass
class Plan:
    """The anomalies to inject (ranks distinct); classes by index into CLASSES."""

    slow: list[tuple[int, int, float]] = field(default_factory=list)  # rank, class, x
    core: Optional[tuple[int, float]] = None  # rank, factor on every class
    noisy: Optional[tuple[int, float, float]] = None  # rank, per second, ns each
    phase: Optional[tuple[int, int, float, float, float]] = (
        None  # rank, class, x, from, to
    )
    # The machine's levels (Placement): a node or socket slower by x on every class, a
    # node whose every rank is noisy, a node-wide transient of one class.
    slow_node: Optional[tuple[int, float]] = None  # node, x
    slow_socket: Optional[tuple[int, int, float]] = None  # node, socket, x
    noisy_node: Optional[tuple[int, float, float]] = None  # node, per second, ns each
    node_phase: Optional[tuple[int, int, float, float, float]] = (
        None  # node, class, x, from, to
    )


@dataclass(frozen=True)
class Placement:
    """Where rank r runs: node r // cores_per_node (host "synth-nNNNN"), CPU
    r % cores_per_node, socket (package and NUMA node) cpu // (cores_per_node //
    sockets), core cpu % (cores_per_node // sockets) within its socket."""

    ranks: int
    cores_per_node: int = 64
    sockets: int = 2

    def __post_init__(self) -> None:
        if self.sockets < 1 or self.cores_per_node % self.sockets:
            raise ValueError(
                f"{self.cores_per_node} cores per node in {self.sockets} sockets"
            )

    @property
    def nodes(self) -> int:
        return -(-self.ranks // self.cores_per_node)

    def host(self, r: int) -> str:
        return f"synth-n{r // self.cores_per_node:04d}"

    def cpu(self, r: int) -> int:
        return r % self.cores_per_node

    def socket(self, r: int) -> int:
        return self.cpu(r) // (self.cores_per_node // self.sockets)

    def core(self, r: int) -> int:
        return self.cpu(r) % (self.cores_per_node // self.sockets)

    def node_ranks(self, node: int) -> list[int]:
        lo = node * self.cores_per_node
        return list(range(lo, min(lo + self.cores_per_node, self.ranks)))

    def socket_ranks(self, node: int, socket: int) -> list[int]:
        return [r for r in self.node_ranks(node) if self.socket(r) == socket]

    def topology(self, r: int) -> dict:
        """rank-N.json's "topology", as hwloc would give it."""
        where = {
            Topo.PACKAGE: self.socket(r),
            Topo.NUMA: self.socket(r),
            Topo.CORE: self.core(r),
        }
        return {
            Topo.SOURCE: "hwloc",
            Topo.NOTE: "",
            **where,
            Topo.CPUS: [{TopoCpu.CPU: self.cpu(r), **where}],
        }


def default_sockets(cores_per_node: int) -> int:
    """Two sockets a node where the cores split evenly, else one."""
    return 2 if cores_per_node % 2 == 0 else 1


def choose_levels(
    place: Placement,
    seed: int = 1,
    node_factor: float = 1.05,
    socket_factor: float = 1.05,
    core_factor: float = 1.1,
    noisy_rate: float = 250.0,
    noisy_ns: float = 4e6,
    phase_factor: float = 1.3,
    phase_window: tuple[float, float] = (0.4, 0.7),
) -> Plan:
    """A plan of the machine's levels on distinct nodes drawn with ``seed``: a slow
    node, a slow socket, a noisy node, a node-wide slow phase of compute and a slow
    core (one rank) on a node of its own. Needs five nodes of two sockets."""
    if place.nodes < 5 or place.sockets < 2 or place.ranks % place.cores_per_node:
        raise ValueError("the levels need five whole nodes of two sockets or more")
    rng = random.Random(seed)
    slow, sock, noisy, phase, core = rng.sample(range(place.nodes), 5)
    return Plan(
        core=(rng.choice(place.node_ranks(core)), core_factor),
        slow_node=(slow, node_factor),
        slow_socket=(sock, rng.randrange(place.sockets), socket_factor),
        noisy_node=(noisy, noisy_rate, noisy_ns),
        node_phase=(phase, 2, phase_factor, *phase_window),
    )


def choose_plan(
    ranks: int,
    seed: int = 1,
    slow_ranks: int = 2,
    slow_factor: float = 1.2,
    slow_core: Optional[float] = 1.1,
    noisy_rate: Optional[float] = 250.0,
    noisy_ns: float = 4e6,
    phase_factor: Optional[float] = 1.3,
    phase_window: tuple[float, float] = (0.4, 0.7),
) -> Plan:
    """A plan of distinct ranks drawn with ``seed``: ``slow_ranks`` ranks slower by
    ``slow_factor`` in one class each (compute, pack or update in turn: the 0.4 us post
    segments are left to noise), one slow core, one noisy core (~4 ms interruptions at
    ``noisy_rate`` per second of compute; 250: a CPU shared half-and-half with another
    busy process) and one slow phase of compute; None leaves one out."""
    need = slow_ranks + sum(
        x is not None for x in (slow_core, noisy_rate, phase_factor)
    )
    if need > ranks:
        raise ValueError(f"{need} anomalous ranks asked of {ranks}")
    picked = random.Random(seed).sample(range(ranks), need)
    plan = Plan()
    judged = (2, 0, 3)  # compute, pack, update
    for i in range(slow_ranks):
        plan.slow.append((picked.pop(0), judged[i % len(judged)], slow_factor))
    if slow_core is not None:
        plan.core = (picked.pop(0), slow_core)
    if noisy_rate is not None:
        plan.noisy = (picked.pop(0), noisy_rate, noisy_ns)
    if phase_factor is not None:
        plan.phase = (picked.pop(0), 2, phase_factor, *phase_window)
    return plan


def synth_program() -> str:
    """perfvar-synth: $PERFVAR_SYNTH, else the bin/ of $PERFVAR_LIB's build tree, else
    this checkout's build/bin."""
    if os.environ.get("PERFVAR_SYNTH"):
        return os.environ["PERFVAR_SYNTH"]
    lib = os.environ.get("PERFVAR_LIB")
    if lib:
        cand = Path(lib).resolve().parent / "bin" / "perfvar-synth"
        if cand.exists():
            return str(cand)
    return str(ROOT / "build" / "bin" / "perfvar-synth")


def _slow_cores(plan: Plan, place: Placement) -> list[tuple[int, float]]:
    """(rank, factor) of every core the plan slows: the slow core's, and each rank of a
    slow node or socket (a rank may come twice: its factors multiply)."""
    cores = [plan.core] if plan.core else []
    if plan.slow_node:
        node, x = plan.slow_node
        cores += [(r, x) for r in place.node_ranks(node)]
    if plan.slow_socket:
        node, socket, x = plan.slow_socket
        cores += [(r, x) for r in place.socket_ranks(node, socket)]
    return cores


def _plan_text(plan: Plan, place: Placement) -> str:
    """perfvar-synth's plan: one line per rank an anomaly touches (a level's anomaly on
    each of its ranks; factors on one rank multiply)."""
    lines = [f"slow {r} {c} {x}" for r, c, x in plan.slow]
    lines += [f"core {r} {x}" for r, x in _slow_cores(plan, place)]
    noisy = [plan.noisy] if plan.noisy else []
    if plan.noisy_node:
        node, *how = plan.noisy_node
        noisy += [(r, *how) for r in place.node_ranks(node)]
    lines += ["noisy {} {} {}".format(*n) for n in noisy]
    phases = [plan.phase] if plan.phase else []
    if plan.node_phase:
        node, *how = plan.node_phase
        phases += [(r, *how) for r in place.node_ranks(node)]
    lines += ["phase {} {} {} {} {}".format(*p) for p in phases]
    return "\n".join(lines) + "\n"


def _core_factors(plan: Plan, place: Placement) -> dict[int, float]:
    """rank -> the factor its core runs the calibration's ADD chain slower by: a slower
    core (or node, or socket) is slower on any work."""
    out: dict[int, float] = {}
    for r, x in _slow_cores(plan, place):
        out[r] = out.get(r, 1.0) * x
    return out


def _results(path: str) -> dict[str, Any]:
    out: dict[str, Any] = {"class": [], "phase": [], "rank": {}, "run": {}}
    for line in Path(path).read_text().splitlines():
        kind, *fields = line.split("\t")
        kv = dict(f.split("=", 1) for f in fields)
        if kind == "rank":
            out["rank"][int(kv["rank"])] = kv
        elif kind == "run":
            out["run"] = kv
        else:
            out[kind].append(kv)
    return out


def _calibration(rank: int, ns_per_add: float, rng: np.random.Generator) -> dict:
    """calibration-rank-N.json of the model (see the module's docstring)."""
    tick = 1e9 / 2445405985.758

    def samples(adds: int, noise: float = NOISE_NS) -> list[float]:
        x = adds * ns_per_add + rng.normal(0.0, noise, N_SAMPLES)
        # A few samples a timer interrupt or a cache miss hit, as on any real core.
        hit = rng.random(N_SAMPLES) < 0.02
        x[hit] += rng.uniform(30.0, 400.0, int(hit.sum()))
        return [round(float(v), 3) for v in np.round(x / tick) * tick]

    dists = []
    for adds in (64, 128):  # the search's doubling: too short to be precise
        dists.append(
            _dist("tmin", adds, samples(adds, noise=4.0 * NOISE_NS * 128 / adds))
        )
    for _ in range(P):
        dists.append(_dist("tmin", T_MIN_ADDS, samples(T_MIN_ADDS)))
    for i in range(1, Q + 1):
        short, long = T_MIN_ADDS + (i - 1) * T_DIFF_ADDS, T_MIN_ADDS + i * T_DIFF_ADDS
        dists.append(_dist("pair_short", short, samples(short), i))
        dists.append(_dist("pair_long", long, samples(long), i))
    return {
        Cal.RANK: rank,
        Cal.FLUSH: 0,
        Cal.N_SAMPLES: N_SAMPLES,
        Cal.EPSILON: 0.01,
        Cal.ALPHA: 0.05,
        Cal.P: P,
        Cal.Q: Q,
        Cal.TIMER_OVERHEAD_NS: OVERHEAD_NS,
        Cal.OVERHEAD_REMOVED: True,
        Cal.DROPPED: 0,
        Cal.DISTRIBUTIONS: dists,
        Cal.STATES: [
            {
                CalState.LABEL: label,
                CalState.FLUSH: flush,
                CalState.N_SAMPLES: N_SAMPLES,
                CalState.STATUS: "skipped",
                CalState.DROPPED: 0,
                CalState.DISTRIBUTIONS: [],
            }
            for label, flush in FLUSHED
        ],
    }


FLUSHED = (("4xL1", 196608), ("4xL2", 4194304), ("4xL3", 134217728))


def _dist(kind: str, adds: int, samples: list[float], pair: int = 0) -> dict:
    base = T_MIN_ADDS if kind != "tmin" else 0
    d = T_DIFF_ADDS if kind != "tmin" else 0
    return {
        CalDist.KIND: kind,
        CalDist.ADDS: adds,
        CalDist.BASE: base,
        CalDist.D: d,
        CalDist.PAIR: pair,
        CalDist.SAMPLES_UNIT.format(unit="ns"): samples,
    }


def _state(
    label: str, flush: int, status: str, t_min: float, t_diff: float, ns_per_add: float
) -> dict:
    done = status == "complete"
    return {
        "label": label,
        "flush": flush,
        "n_samples": N_SAMPLES,
        "n_requested": N_SAMPLES,
        "status": status,
        "note": (
            "" if done else "synthetic trace: flushed cache states are not modelled"
        ),
        "t_min_ns": t_min if done else 0.0,
        "t_diff_ns": t_diff if done else 0.0,
        "ns_per_add": ns_per_add if done else 0.0,
        "t_min_adds": T_MIN_ADDS if done else 0,
        "t_diff_adds": T_DIFF_ADDS if done else 0,
        "t_min_cv": 0.0,
        "t_diff_overlap": 0.0,
        "budget_ms": 160.0 if done else 0.0,
        "elapsed_ms": 20.0 if done else 0.0,
        "flush_ms": 0.0,
        "distributions": 2 + P + 2 * Q if done else 0,
        "dropped": 0,
    }


def _rank_meta(
    rank: int, place: Placement, kv: dict, cal: dict, steps: int, hz: float
) -> dict:
    """rank-N.json as the runtime writes it at MPI_Finalize (docs/trace-format.md)."""
    first = [
        d
        for d in cal["distributions"]
        if d["kind"] == "tmin" and d["adds"] == T_MIN_ADDS
    ]
    t_min = round(float(np.median(first[0]["samples_ns"])), 3)
    pair1 = [d for d in cal["distributions"] if d.get("pair") == 1]
    t_diff = round(
        float(np.median(pair1[1]["samples_ns"]) - np.median(pair1[0]["samples_ns"])), 3
    )
    ns_per_add = round(t_min / T_MIN_ADDS, 5)
    cpu = int(kv["cpu"])
    if cpu != place.cpu(rank) or kv["host"] != place.host(rank):
        raise RuntimeError(f"perfvar-synth placed rank {rank} elsewhere: {kv}")
    calls, segments, events = int(kv["calls"]), int(kv["segments"]), int(kv["events"])
    no_pmu = (
        "no hardware cycles event (perf_event_open: No such file or directory: no PMU, "
        "e.g. a VM without PMU passthrough)"
    )
    states = [_state("0", 0, "complete", t_min, t_diff, ns_per_add)]
    states += [_state(label, flush, "skipped", 0, 0, 0) for label, flush in FLUSHED]
    return {
        "rank": rank,
        "nranks": place.ranks,
        "host": kv["host"],
        "pid": 100000 + rank,
        "cpus": [cpu],
        "topology": place.topology(rank),
        "clock": {
            "name": "tsc",
            "hz": hz,
            "hz_method": "measured vs CLOCK_MONOTONIC_RAW",
            "hz_rel_error": 3.03e-06,
            "measured_hz": hz,
            "measured_rel_error": 3.03e-06,
            "hz_vs_measured_rel": None,
            "serialized": True,
            "fenced_read": "rdtscp;lfence",
            "note": "",
        },
        "clock_caps": {
            "rdtscp": True,
            "invariant_tsc": True,
            "cpuid_tsc_hz": 0,
            "cpuid_base_mhz": 0,
            "hypervisor": "KVMKVMKVM",
            "hypervisor_tsc_hz": 0,
            "tsc_stable_by": "CPUID invariant TSC",
            "kernel_tsc_hz": 0.0,
            "kernel_tsc_why": "the kernel does not expose its TSC conversion "
            "(cap_user_time = 0)",
            "cycles": False,
            "cycles_why": no_pmu,
        },
        "clock_offset": {"begin_ticks": 0, "end_ticks": 0, "stddev_ticks": 0.0},
        "calibration": {
            "mode": "quick",
            "status": "complete",
            "estimate": "C-side search, samples trimmed above median + max(3 IQR, "
            "3 clock steps)",
            "timer_overhead_ns": OVERHEAD_NS,
            "clock_granularity_ns": round(1e9 / hz, 3),
            "t_min_ns": t_min,
            "t_diff_ns": t_diff,
            "ns_per_add": ns_per_add,
            "t_min_adds": T_MIN_ADDS,
            "t_diff_adds": T_DIFF_ADDS,
            "t_min_cv": 0.0,
            "t_diff_overlap": 0.0,
            "cpu_start": cpu,
            "cpu_end": cpu,
            "elapsed_ms": 200.0,
            "n_samples": N_SAMPLES,
            "n_samples_flushed": N_SAMPLES,
            "p": P,
            "q": Q,
            "epsilon": 0.01,
            "alpha": 0.05,
            "nstates": 4,
            "budget_ms": 400.0,
            "states": states,
            "cycles": {"available": False, "why": no_pmu},
        },
        "mpi": {
            "library": "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4",
            "layer": "openmpi",
            "boundaries": [
                "env",
                "p2p",
                "collective",
                "wait",
                "onesided",
                "file",
                "comm",
            ],
            "calls": {
                "MPI_Allreduce": steps,
                "MPI_Finalize": 1,
                "MPI_Init": 1,
                "MPI_Irecv": steps,
                "MPI_Isend": steps,
                "MPI_Waitall": steps,
            },
        },
        "thread_level": "MPI_THREAD_SINGLE",
        "threads": [
            {
                "thread": 0,
                "location": rank,
                "segments": segments,
                "events": events,
                "calls": calls,
                "lost_records": 0,
                "buffer_moves": 0,
                "buffer_move_ms": 0.0,
            }
        ],
        "probe": None,
        "events": {
            "written": events,
            "lost": int(kv["lost"]),
            "timestamps_raised": int(kv["raised"]),
            "buffer_flushes": int(kv["flushes"]),
        },
        "segments": segments,
        "untraced_thread_calls": 0,
        "convert_ms": float(kv["convert_ms"]),
        "complete": True,
    }


def injected(truth: dict) -> list[Injected]:
    """The ground truth's anomalies as the verdicts should name them."""
    return [
        Injected(
            a["kind"],
            a["rank"],
            a["segment"] if a["kind"] == "slow_segment" else None,
            (a["start_ns"], a["end_ns"]) if a["kind"] == "slow_phase" else None,
        )
        for a in truth["anomalies"]
    ] + [
        Injected(
            lv["kind"],
            min(lv["ranks"]),
            None,
            (lv["start_ns"], lv["end_ns"]) if "start_ns" in lv else None,
        )
        for lv in truth.get("levels", [])
    ]


def _levels(
    plan: Plan,
    place: Placement,
    phases: list[dict],
    key: dict[int, str],
    origin: int,
    hz: float,
) -> list[dict]:
    """The ground truth of the machine's levels: each anomaly with its node (and
    socket) and the ranks under it; a node-wide phase with its window, from the first
    of its ranks' slowed segments to the last one's end (ns since the trace's first
    timestamp)."""

    def level(kind: str, ranks: list[int], **more: Any) -> dict:
        at = "socket" if "socket" in more else "node"
        return {"kind": kind, "level": at, "node": place.host(ranks[0]), **more,
                "ranks": ranks}  # fmt: skip

    out: list[dict] = []
    if plan.slow_node:
        node, x = plan.slow_node
        out.append(level(slow_node.KIND, place.node_ranks(node), factor=x))
    if plan.slow_socket:
        node, socket, x = plan.slow_socket
        ranks = place.socket_ranks(node, socket)
        out.append(level(slow_socket.KIND, ranks, socket=socket, factor=x))
    if plan.noisy_node:
        node, rate, ns = plan.noisy_node
        ranks = place.node_ranks(node)
        out.append(level(noisy_node.KIND, ranks, rate_per_s=rate, interruption_ns=ns))
    if plan.node_phase:
        node, c, x, *_ = plan.node_phase
        ranks = place.node_ranks(node)
        mine = [ph for ph in phases if int(ph["rank"]) in set(ranks)]
        start = min(int(p["start_ticks"]) for p in mine)
        end = max(int(p["end_ticks"]) for p in mine)
        out.append(
            level(node_transient.KIND, ranks, segment=key[c], factor=x,
                  start_ns=(start - origin) * 1e9 / hz,
                  end_ns=(end - origin) * 1e9 / hz, **{"class": CLASSES[c]})
        )  # fmt: skip
    return out


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file())


def generate(
    out: str | os.PathLike,
    ranks: int,
    segments: int,
    seed: int = 1,
    plan: Optional[Plan] = None,
    cores_per_node: int = 64,
    program: Optional[str] = None,
    sockets: Optional[int] = None,
) -> dict:
    """Write a synthetic trace of ``ranks`` ranks with about ``segments`` compute
    segments each into ``out`` (which must not hold a trace); returns the ground truth
    (also written to out/synthetic.json). ``plan``: choose_plan(ranks, seed) by
    default; ``sockets`` per node: default_sockets(cores_per_node) by default. Raises
    RuntimeError when perfvar-synth fails."""
    out = Path(out)
    place = Placement(ranks, cores_per_node, sockets or default_sockets(cores_per_node))
    plan = plan if plan is not None else choose_plan(ranks, seed)
    with tempfile.TemporaryDirectory(prefix="perfvar-synth-") as tmp:
        plan_file, results = os.path.join(tmp, "plan"), os.path.join(tmp, "results")
        Path(plan_file).write_text(_plan_text(plan, place))
        cmd = [
            program or synth_program(),
            "--out",
            str(out),
            "--ranks",
            str(ranks),
            "--segments",
            str(segments),
            "--seed",
            str(seed),
            "--plan",
            plan_file,
            "--results",
            results,
            "--cores-per-node",
            str(cores_per_node),
        ]
        cmd += ["--sockets-per-node", str(place.sockets)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(
                f"{' '.join(cmd)} exited {p.returncode}: {p.stderr[-2000:]}"
            )
        res = _results(results)
    t0 = time.monotonic()
    run = res["run"]
    hz, origin, steps = float(run["hz"]), int(run["origin_ticks"]), int(run["steps"])
    if sorted(res["rank"]) != list(range(ranks)):
        raise RuntimeError(
            f"perfvar-synth converted {len(res['rank'])} of {ranks} ranks"
        )
    meta = out / "perfvar"
    start_utc = time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(run["realtime_ns"]) // 10**9)
    )
    (meta / "run.json").write_text(
        json.dumps(
            {
                RunJson.NRANKS: ranks,
                RunJson.COMMAND: f"/opt/synth/bin/stencil3d --steps {steps}",
                RunJson.START_UTC: start_utc,
                RunJson.PERFVAR_VERSION: "0.1.0",
                RunJson.MPI_LIBRARY: "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4",
            },
            indent=2,
        )
        + "\n"
    )
    factors = _core_factors(plan, place)
    for r in range(ranks):
        # A slow core runs the calibration's ADD chain slower too: it is the core.
        rate = NS_PER_ADD * factors.get(r, 1.0)
        cal = _calibration(r, rate, np.random.default_rng([seed, r]))
        (meta / f"calibration-rank-{r}.json").write_text(json.dumps(cal) + "\n")
        doc = _rank_meta(r, place, res["rank"][r], cal, steps, hz)
        (meta / f"rank-{r}.json").write_text(json.dumps(doc, indent=1) + "\n")

    classes = [
        {
            "index": int(c["index"]),
            "name": c["name"],
            "base_ns": float(c["base_ns"]),
            "sigma": float(c["sigma"]),
            "key": c["key"],
        }
        for c in res["class"]
    ]
    key = {c["index"]: c["key"] for c in classes}
    anomalies: list[dict] = []
    for r, c, x in plan.slow:
        anomalies.append(
            {
                "kind": "slow_segment",
                "rank": r,
                "class": CLASSES[c],
                "segment": key[c],
                "factor": x,
            }
        )
    if plan.core:
        anomalies.append(
            {"kind": "slow_core", "rank": plan.core[0], "factor": plan.core[1]}
        )
    if plan.noisy:
        anomalies.append(
            {
                "kind": "noisy_core",
                "rank": plan.noisy[0],
                "rate_per_s": plan.noisy[1],
                "interruption_ns": plan.noisy[2],
            }
        )
    node_phase = set(place.node_ranks(plan.node_phase[0])) if plan.node_phase else set()
    for ph in res["phase"]:
        r, c = int(ph["rank"]), int(ph["class"])
        if r in node_phase:
            continue
        anomalies.append(
            {
                "kind": "slow_phase",
                "rank": r,
                "class": CLASSES[c],
                "segment": key[c],
                "factor": plan.phase[2] if plan.phase else None,
                "steps": [int(ph["step_from"]), int(ph["step_to"])],
                "start_ns": (int(ph["start_ticks"]) - origin) * 1e9 / hz,
                "end_ns": (int(ph["end_ticks"]) - origin) * 1e9 / hz,
            }
        )
    truth = {
        "ranks": ranks,
        "segments_per_rank": int(res["rank"][0]["segments"]),
        "steps": steps,
        "seed": seed,
        "hz": hz,
        "origin_ticks": origin,
        "classes": classes,
        "anomalies": anomalies,
        "nodes": place.nodes,
        "cores_per_node": place.cores_per_node,
        "sockets_per_node": place.sockets,
        "levels": _levels(plan, place, res["phase"], key, origin, hz),
        "generation": {
            "generate_s": float(run["generate_s"]),
            "convert_s": float(run["convert_s"]),
            "metadata_s": round(time.monotonic() - t0, 3),
            "records_bytes": int(run["records_bytes"]),
            "archive_bytes": _dir_bytes(out / "traces")
            + (out / "traces.def").stat().st_size,
        },
    }
    (out / "synthetic.json").write_text(json.dumps(truth, indent=1) + "\n")
    return truth


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--segments", type=int, required=True, help="per rank")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--slow-ranks", type=int, default=2)
    ap.add_argument("--cores-per-node", type=int, default=64)
    ap.add_argument("--sockets-per-node", type=int, default=None)
    ap.add_argument("--no-slow-core", action="store_true")
    ap.add_argument("--no-noisy-core", action="store_true")
    ap.add_argument("--no-slow-phase", action="store_true")
    ap.add_argument(
        "--levels",
        action="store_true",
        help="inject the machine's levels instead: a slow node, a slow socket, a "
        "noisy node, a node-wide slow phase and a slow core (five whole nodes)",
    )
    a = ap.parse_args()
    sockets = a.sockets_per_node or default_sockets(a.cores_per_node)
    if a.levels:
        plan = choose_levels(Placement(a.ranks, a.cores_per_node, sockets), a.seed)
    else:
        plan = choose_plan(
            a.ranks,
            a.seed,
            a.slow_ranks,
            slow_core=None if a.no_slow_core else 1.1,
            noisy_rate=None if a.no_noisy_core else 250.0,
            phase_factor=None if a.no_slow_phase else 1.3,
        )
    t0 = time.monotonic()
    truth = generate(
        a.out, a.ranks, a.segments, a.seed, plan, a.cores_per_node, sockets=sockets
    )
    g = truth["generation"]
    print(
        f"synth: {a.out}: {a.ranks} ranks x {truth['segments_per_rank']} segments in "
        f"{time.monotonic() - t0:.1f} s (records {g['generate_s']:.1f} s, OTF2 "
        f"{g['convert_s']:.1f} s, metadata {g['metadata_s']:.1f} s); records "
        f"{g['records_bytes'] / 2**20:.0f} MiB, "
        f"archive {g['archive_bytes'] / 2**20:.0f} MiB"
    )
    for an in truth["anomalies"]:
        print(
            f"  injected {an['kind']} rank {an['rank']}"
            + (f" class {an['class']}" if "class" in an else "")
        )
    for lv in truth["levels"]:
        where = lv["node"] + (f" socket {lv['socket']}" if "socket" in lv else "")
        print(f"  injected {lv['kind']} {where} ({len(lv['ranks'])} ranks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
