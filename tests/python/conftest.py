"""Fixtures for the perfvar postproc tests: synthetic samples and OTF2 traces.

``write_trace`` writes a small perfvar trace directory with the ``otf2`` package's
writer, following docs/trace-format.md: ClockProperties with a timer resolution in
Hz, one LocationGroup "MPI Rank N" and one Location per thread of a rank (one by
default), segment regions with
``perfvar:segment:...`` canonical names, Enter/Leave carrying a UINT32 ``cpu``
attribute where the CPU changed (as perfvar writes it; on every segment Enter/Leave
with ``cpu_every_event``, as traces written before that), a nested ``perfvar:user:``
region inside every segment, an MPI region between segments (optionally preceded by
a fixed-work probe, ``perfvar:probe``), and perfvar/rank-N.json + run.json.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable, Optional, Union

import numpy as np
import pytest

POSTPROC = os.path.join(os.path.dirname(__file__), "..", "..", "postproc")
# The checkout's package first: a copy installed by `pip install ./postproc` (the
# demo does that) must not shadow the code under test.
sys.path.insert(0, os.path.abspath(POSTPROC))

from perfvar.read.meta import Calibration  # noqa: E402
from perfvar._spec import RankJson, RankJsonCalibration, RankJsonClock  # noqa: E402
from perfvar._spec import RankJsonEvents  # noqa: E402
from perfvar._spec import RunJson, TraceName  # noqa: E402
from perfvar.read.samples import SAMPLE_DTYPE  # noqa: E402
from perfvar.read.segments import segment_key  # noqa: E402
from perfvar.stats.filters import filter_cost, filter_os  # noqa: E402
from perfvar.stats.model import Cell, Prepared  # noqa: E402

RESOLUTION_HZ = 2_500_000_000  # 2.5 GHz TSC
APP = "/opt/app/bin/stencil"
SEG_A = segment_key(f"MPI_Waitall@{APP}+0x1a2b", f"MPI_Allreduce@{APP}+0x1c3d")
SEG_B = segment_key(f"MPI_Allreduce@{APP}+0x1c3d", f"MPI_Waitall@{APP}+0x1a2b")
CALIBRATION = {
    RankJsonCalibration.MODE: "quick",
    RankJsonCalibration.STATUS: "complete",
    RankJsonCalibration.TIMER_OVERHEAD_NS: 11.2,
    RankJsonCalibration.T_MIN_NS: 150.3,
    RankJsonCalibration.T_DIFF_NS: 4.1,
}

CpuSpec = Union[int, Callable[[int], int]]
STEP_NS = 100_000.0  # time between the samples of one cell in make_prepared
TICK_NS = 1e9 / RESOLUTION_HZ


@dataclass
class Probes:
    """Fixed-work probes (PERFVAR_PROBE) for ``write_trace``, as perfvar writes them
    (docs/trace-format.md): after the Leave of a location's segment i, when
    ``ticks(rank, i)`` is not None, a ``perfvar:probe`` region of that many ticks,
    5 ticks later, before the MPI region; it ends on the next CPU where ``(rank, i)``
    is in ``moved``. ``meta``: rank-N.json's "probe" says what was written (period_ms
    10, adds 3000 from "fixed", count and total_ns per thread), else it is
    null. ``written`` is filled by write_trace: (rank, thread) -> [(start tick, ticks,
    CPU or -1 where the probe moved)]."""

    ticks: Callable[[int, int], Optional[int]]
    moved: frozenset = frozenset()
    meta: bool = True
    written: dict = field(default_factory=dict)

    def write(self, writer, region, loc, i: int, t: int, cpu: int, cpu_attrs) -> int:
        """The probe after the Leave at ``t`` of segment ``i`` of ``loc`` (rank,
        thread), if one is due; returns the time after it."""
        mine = self.written.setdefault(loc, [])
        ticks = self.ticks(loc[0], i)
        if ticks is None:
            return t
        end_cpu = cpu + 1 if (loc[0], i) in self.moved else cpu
        writer.enter(t + 5, region, attributes=cpu_attrs(cpu))
        writer.leave(t + 5 + ticks, region, attributes=cpu_attrs(end_cpu))
        mine.append((t + 5, ticks, cpu if end_cpu == cpu else -1))
        return t + 5 + ticks

    def rank_meta(self, rank: int, threads: int) -> Optional[dict]:
        """rank-N.json's "probe" of ``rank``."""
        if not self.meta:
            return None
        per = [
            {
                "thread": k,
                "count": len(self.written[rank, k]),
                "total_ns": sum(x[1] for x in self.written[rank, k]) * TICK_NS,
            }
            for k in range(threads)
        ]
        return {
            "period_ms": 10,
            "adds": 3000,
            "k_source": "fixed",
            "count": sum(p["count"] for p in per),
            "total_ns": sum(p["total_ns"] for p in per),
            "threads": per,
        }


def _metric_classes(defs, metrics: Mapping[int, list[str]]) -> dict:
    """rank -> the MetricClass of its counters (as perfvar defines them: PAPI counters,
    running totals, one member per name, one class per distinct list)."""
    from otf2.enums import (
        MetricMode,
        MetricOccurrence,
        MetricType,
        RecorderKind,
        Type,
    )

    members: dict = {}
    classes: dict = {}
    out = {}
    for rank, names in metrics.items():
        for name in names:
            if name not in members:
                members[name] = defs.metric_member(
                    name,
                    name,
                    metric_type=MetricType.PAPI,
                    metric_mode=MetricMode.ACCUMULATED_START,
                    value_type=Type.UINT64,
                    unit="#",
                )
        key = tuple(names)
        if key not in classes:
            classes[key] = defs.metric_class(
                [members[n] for n in names],
                occurrence=MetricOccurrence.SYNCHRONOUS,
                recorder_kind=RecorderKind.CPU,
            )
        out[rank] = classes[key]
    return out


def write_trace(
    path: str,
    durations: Mapping[int, Mapping[str, np.ndarray]],
    cpus: Optional[Mapping[int, CpuSpec]] = None,
    calibration: Optional[Mapping[int, Optional[dict]]] = None,
    hosts: Optional[Mapping[int, str]] = None,
    moved: Optional[Mapping[str, tuple[int, int]]] = None,
    threads: int = 1,
    cpu_every_event: bool = False,
    metrics: Optional[Mapping[int, list[str]]] = None,
    metric_every: int = 3,
    probes: Optional[Probes] = None,
) -> str:
    """Write a perfvar trace directory.

    ``durations[rank][segment key]`` are segment durations in ns, written in that
    order, the classes interleaved. ``cpus[rank]`` is a CPU number or a function of
    the sample index (default: CPU = rank). ``calibration[rank]`` is the calibration
    section of rank-N.json, or None to not write that rank's file (default:
    CALIBRATION for every rank). ``moved[segment key] = (sent, received)``: the MPI
    call before each segment of that class records an MpiSend of ``sent`` bytes and,
    if ``received``, an MpiCollectiveEnd that received ``received`` bytes (default: no
    records, so the segments' context is unknown). ``threads``: locations per rank,
    each writing the rank's durations; thread k runs on CPU ``cpus[rank] + 10 * k``.
    ``cpu_every_event``: the ``cpu`` attribute on every segment Enter/Leave, not only
    where the location's CPU changed (docs/trace-format.md: both read the same).
    ``metrics[rank]``: the counters (PERFVAR_METRICS) that rank records, written as
    perfvar writes them (docs/trace-format.md): a Metric event of zeros at each of its
    locations' first event, then the running totals after the Leave of every
    ``metric_every``-th segment (i % metric_every == metric_every - 1), counter c of
    the rank having counted (c + 1) * (segment ticks) over each segment; the counters
    that ranks share are one MetricMember. ``probes``: fixed-work probes after the
    segments it says (see Probes).
    """
    import otf2
    from otf2.enums import CollectiveOp, GroupType, Paradigm, RegionRole, Type

    os.makedirs(path, exist_ok=True)
    ranks = sorted(durations)
    cpus = cpus or {}
    hosts = hosts or {r: f"node{r // 2}" for r in ranks}
    ticks_per_ns = RESOLUTION_HZ / 1e9
    with otf2.writer.open(path, timer_resolution=RESOLUTION_HZ) as trace:
        defs = trace.definitions
        root = defs.system_tree_node("machine")
        nodes = {h: defs.system_tree_node(h, parent=root) for h in set(hosts.values())}
        cpu_attr = defs.attribute(
            TraceName.CPU_ATTRIBUTE, "CPU the clock was read on", Type.UINT32
        )
        mpi = defs.region(
            "MPI_Allreduce",
            canonical_name="MPI_Allreduce",
            region_role=RegionRole.COLL_ALL2ALL,
            paradigm=Paradigm.MPI,
        )
        user = defs.region(
            "halo",
            canonical_name=TraceName.USER_PREFIX + "halo",
            region_role=RegionRole.FUNCTION,
            paradigm=Paradigm.USER,
        )
        probe_region = None
        if probes is not None:
            probe_region = defs.region(
                TraceName.PROBE_REGION,
                canonical_name=TraceName.PROBE_REGION,
                region_role=RegionRole.ARTIFICIAL,
                paradigm=Paradigm.MEASUREMENT_SYSTEM,
            )
        keys = sorted({k for per in durations.values() for k in per})
        regions = {
            k: defs.region(
                k.split(":", 2)[2],
                canonical_name=k,
                region_role=RegionRole.CODE,
                paradigm=Paradigm.USER,
            )
            for k in keys
        }
        metric_classes = _metric_classes(defs, metrics or {})
        locations = {}
        for rank in ranks:
            group = defs.location_group(
                f"MPI Rank {rank}", system_tree_parent=nodes[hosts[rank]]
            )
            for k in range(threads):
                name = f"Thread {k}" if k else "Master thread"
                locations[rank, k] = defs.location(name, group=group)
        world = None
        if moved:
            defs.group(  # the locations MPI ranks index (OTF2 needs it for a comm)
                "MPI locations",
                group_type=GroupType.COMM_LOCATIONS,
                paradigm=Paradigm.MPI,
                members=[locations[r, 0] for r in ranks],
            )
            members = defs.group(
                "MPI_COMM_WORLD",
                group_type=GroupType.COMM_GROUP,
                paradigm=Paradigm.MPI,
                members=list(range(len(ranks))),
            )
            world = defs.comm("MPI_COMM_WORLD", group=members)
        for (rank, k), loc in locations.items():
            writer = trace.event_writer_from_location(loc)
            spec = cpus.get(rank, rank)
            base = spec if callable(spec) else (lambda i, c=spec: c)
            cpu_of = lambda i, k=k, base=base: base(i) + 10 * k  # noqa: E731
            t = 1000
            last_cpu: list[Optional[int]] = [None]  # the cpu last written here

            def cpu_attrs(cpu: int, last_cpu=last_cpu) -> Optional[dict]:
                if not cpu_every_event and cpu == last_cpu[0]:
                    return None
                last_cpu[0] = cpu
                return {cpu_attr: cpu}

            metric_class = metric_classes.get(rank)
            totals = [0] * (len(metric_class.members) if metric_class else 0)
            if metric_class is not None:
                writer.metric(t, metric_class, list(totals))
            per = durations[rank]
            n = max(len(v) for v in per.values())
            order = [
                (key, j)
                for j in range(n)
                for key in keys
                if key in per and j < len(per[key])
            ]
            for i, (key, j) in enumerate(order):
                ticks = max(int(round(per[key][j] * ticks_per_ns)), 4)
                cpu = cpu_of(i)
                writer.enter(t, regions[key], attributes=cpu_attrs(cpu))
                writer.enter(t + 1, user)
                writer.leave(t + 2, user)
                t += ticks
                writer.leave(t, regions[key], attributes=cpu_attrs(cpu))
                if metric_class is not None:
                    totals = [v + (c + 1) * ticks for c, v in enumerate(totals)]
                    if i % metric_every == metric_every - 1:
                        writer.metric(t, metric_class, list(totals))
                if probes is not None:
                    t = probes.write(
                        writer, probe_region, (rank, k), i, t, cpu, cpu_attrs
                    )
                writer.enter(t, mpi)
                following = order[i + 1][0] if i + 1 < len(order) else None
                if world is not None and following in moved:
                    sent, received = moved[following]
                    peer = (ranks.index(rank) + 1) % len(ranks)
                    writer.mpi_send(t + 1, peer, world, 0, sent)
                    if received:
                        writer.mpi_collective_begin(t + 2)
                        writer.mpi_collective_end(
                            t + 3, CollectiveOp.ALLREDUCE, world, 0, 0, received
                        )
                t += 500
                writer.leave(t, mpi)
    _write_meta(path, durations, cpus, calibration, hosts, threads, probes)
    return path


def _write_meta(path, durations, cpus, calibration, hosts, threads, probes) -> None:
    """perfvar/run.json and rank-N.json for write_trace (its arguments)."""
    ranks = sorted(durations)
    meta = os.path.join(path, "perfvar")
    os.makedirs(meta, exist_ok=True)
    with open(os.path.join(meta, "run.json"), "w") as fh:
        json.dump({RunJson.NRANKS: len(ranks), RunJson.COMMAND: "./stencil"}, fh)
    calibration = calibration if calibration is not None else {}
    for rank in ranks:
        cal = calibration.get(rank, CALIBRATION)
        if cal is None:
            continue
        spec = cpus.get(rank, rank)
        rank_cpus = [spec] if not callable(spec) else sorted({spec(0), spec(1)})
        doc = {
            RankJson.RANK: rank,
            RankJson.NRANKS: len(ranks),
            RankJson.HOST: hosts[rank],
            RankJson.PID: 1000 + rank,
            RankJson.CPUS: rank_cpus,
            RankJson.CLOCK: {
                RankJsonClock.NAME: "tsc",
                RankJsonClock.HZ: float(RESOLUTION_HZ),
            },
            RankJson.CALIBRATION: cal,
            RankJson.EVENTS: {RankJsonEvents.WRITTEN: 0, RankJsonEvents.LOST: 0},
            RankJson.SEGMENTS: int(sum(len(v) for v in durations[rank].values())),
        }
        if probes is not None:
            doc[RankJson.PROBE] = probes.rank_meta(rank, threads)
        with open(os.path.join(meta, f"rank-{rank}.json"), "w") as fh:
            json.dump(doc, fh)


def normal_durations(
    seed: int,
    nranks: int = 4,
    n: int = 200,
    slow: Optional[Mapping[int, float]] = None,
) -> dict[int, dict[str, np.ndarray]]:
    """Two segment classes: A ~ N(540 us, 0.5 us), B ~ N(120 us, 0.2 us) per rank.

    ``slow[rank] = extra ns`` shifts that rank's class A samples.
    """
    rng = np.random.default_rng(seed)
    slow = slow or {}
    out = {}
    for r in range(nranks):
        out[r] = {
            SEG_A: rng.normal(540_000.0, 500.0, n) + slow.get(r, 0.0),
            SEG_B: rng.normal(120_000.0, 200.0, n),
        }
    return out


@pytest.fixture
def trace_factory(tmp_path) -> Callable[..., str]:
    """``trace_factory(name, durations, **kw)`` writes a trace under tmp_path."""

    def make(name: str, durations, **kw) -> str:
        return write_trace(str(tmp_path / name), durations, **kw)

    return make


@pytest.fixture
def slow_trace(trace_factory) -> str:
    """4 ranks; rank 1 runs segment class A 272 us slower, on CPU 3."""
    durations = normal_durations(seed=1, slow={1: 272_300.0})
    return trace_factory("slow", durations, cpus={0: 0, 1: 3, 2: 1, 3: 2})


@pytest.fixture
def quiet_trace(trace_factory) -> str:
    """4 ranks drawing from the same distributions: nothing to flag."""
    return trace_factory("quiet", normal_durations(seed=2))


def make_prepared(
    samples: Mapping[tuple[int, int], np.ndarray],
    t_min_ns: Optional[float] = 100.0,
    t_diff_ns: Optional[float] = 4.1,
    calibrated: Optional[set] = None,
    starts: Optional[Mapping[tuple[int, int], np.ndarray]] = None,
) -> Prepared:
    """A Prepared from ``samples[(segment, rank)]`` (ns), filtered like analysis does.

    Every rank gets (t_min_ns, t_diff_ns) unless ``calibrated`` names the ranks that
    have a calibration (the others get an unknown one). Sample i of every cell
    starts at i * STEP_NS (plus 10 ns per segment index): the classes interleave
    step by step, as in a time-stepping code; ``starts[(segment, rank)]`` gives a
    cell's start times (ns) instead.
    """
    cells = {}
    ranks = sorted({r for _, r in samples})
    raw = []
    for (seg, rank), values in samples.items():
        durations = filter_cost(values, 0.0)
        mask, info = filter_os(durations)
        start = (starts or {}).get((seg, rank))
        if start is None:
            start = np.arange(len(values)) * STEP_NS + 10.0 * seg
        cells[(seg, rank)] = Cell(
            seg,
            rank,
            len(values),
            durations[mask],
            info,
            rank,
            start_ns=start[mask],
            samples_cpu=np.full(int(mask.sum()), rank, dtype=np.int32),
            removed_ns=durations[~mask],
            removed_start_ns=start[~mask],
            removed_cpu=np.full(int((~mask).sum()), rank, dtype=np.int32),
        )
        chunk = np.zeros(len(values), dtype=SAMPLE_DTYPE)
        chunk["segment"], chunk["rank"] = seg, rank
        chunk["duration_ns"] = values
        chunk["cpu_enter"] = chunk["cpu_leave"] = rank
        raw.append(chunk)
    calib = {
        r: (
            Calibration(0.0, t_min_ns, t_diff_ns, "complete")
            if calibrated is None or r in calibrated
            else Calibration()
        )
        for r in ranks
    }
    nseg = max(seg for seg, _ in samples) + 1
    return Prepared(
        cells=cells,
        calibration=calib,
        hosts={r: f"h{r}" for r in ranks},
        samples=np.concatenate(raw),
        segment_ids=[f"S{i}" for i in range(nseg)],
    )


def compiled_c(directory, source: str, *flags: str) -> str:
    """``source`` written to DIRECTORY/app.c and built with gcc -O0 (and ``flags``,
    e.g. -g) into DIRECTORY/app; returns the program's path. The tests that use it
    skip where gcc is missing."""
    src = os.path.join(str(directory), "app.c")
    exe = os.path.join(str(directory), "app")
    with open(src, "w") as f:
        f.write(source)
    subprocess.run(["gcc", *flags, "-O0", "-o", exe, src], check=True)
    return exe


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """``python -m perfvar ARGS`` in a subprocess; text output captured."""
    return subprocess.run(
        [sys.executable, "-m", "perfvar", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={
            **os.environ,
            "PERFVAR_DEBUG": "",
            "PYTHONPATH": os.pathsep.join(
                [os.path.abspath(POSTPROC), os.environ.get("PYTHONPATH", "")]
            ),
        },
    )


def real_rank_jsons() -> list[str]:
    """The rank-N.json files of the traces $PV_SPEC_TRACES names (os.pathsep-separated
    trace directories a ctest run made), in order; [] when it names none."""
    dirs = [d for d in os.environ.get("PV_SPEC_TRACES", "").split(os.pathsep) if d]
    return sorted(
        f for d in dirs for f in glob.glob(os.path.join(d, "perfvar", "rank-*.json"))
    )
