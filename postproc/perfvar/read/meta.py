"""Read perfvar run metadata: DIR/perfvar/run.json and DIR/perfvar/rank-<N>.json.

Per rank: host, CPUs, clock, and the calibration the detectors judge against:
``timer_overhead_ns`` (t_e,std, minimal cost of one clock-read pair, ns), ``t_min_ns``
(precision: shortest duration whose measurement CV < 1 %, ns) and ``t_diff_ns``
(sensitivity: smallest difference detectable with overlap < 5 %, ns), at flush 0 and,
in ``Calibration.states``, per cache state (flush 0, 4xL1, 4xL2, 4xL3; files written
before cache states existed give flush 0 only). perfvar.read.cache_state picks the state
each segment is judged with. ``Calibration.cycles`` holds the pass on the CPU-cycle
counter (flush 0, in cycles) where the counter was readable, or why it was not.
``RankMeta.probe`` is rank-N.json's ``probe`` object (PERFVAR_PROBE's fixed-work probes:
``period_ms``, ``adds``, ``lanes``, ``k_source``, ``count``, ``total_ns``,
``threads``), None when the run had probes off or the file predates them.
``RankMeta.neighbours`` is its ``neighbours`` object (what else ran on the rank's CPUs:
src/metrics/neighbours.h),
None where it was not recorded. ``RankMeta.topology`` is its ``topology`` object (where
the rank ran: socket, NUMA node and core, src/topology), None in files that predate it.

Never raises for missing or malformed files: such ranks get an uncalibrated RankMeta
whose ``problem`` says why, and the reason is added to ``RunMeta.notes``. Pure file
reading: the t_min / t_diff read here are the C search's estimates, which
perfvar.calibration.ranks replaces with the calibration judge's decisions.
Thread-safe.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from perfvar._spec import RankJson as K
from perfvar._spec import RankJsonCalibration as KCal
from perfvar._spec import RankJsonCaps as KCaps
from perfvar._spec import RankJsonClock as KClock
from perfvar._spec import RankJsonCycles as KCyc
from perfvar._spec import RankJsonEvents as KEvents
from perfvar._spec import RankJsonState as KState
from perfvar._spec import RankJsonTopology as KTopo
from perfvar._spec import RankJsonTopologyCpu as KTcpu
from perfvar.read.cache_state import CacheState
from perfvar.units import compact_ranges

_RANK_FILE = re.compile(r"^rank-(\d+)\.json$")


@dataclass
class CyclesCalibration:
    """The start-up calibration's pass on the CPU-cycle counter (paper §4.1's second
    clock): flush 0, in cycles, never converted to time. Reported beside the wall
    clock's; segments are timed by the wall clock, so verdicts never use it."""

    available: bool = False
    why: Optional[str] = None  # why not available ("not recorded" in older files)
    counter: Optional[str] = None  # "rdpmc" (x86-64), "pmccntr" (Armv8)
    timer_overhead_cycles: Optional[float] = None
    t_min_cycles: Optional[float] = None
    t_diff_cycles: Optional[float] = None
    cycles_per_add: Optional[float] = None
    status: Optional[str] = None  # "complete", "partial", "off"
    note: str = ""
    source: str = "C estimate"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Calibration:
    """Per-rank timer calibration; a value is None when unknown."""

    timer_overhead_ns: Optional[float] = None
    t_min_ns: Optional[float] = None
    t_diff_ns: Optional[float] = None
    status: Optional[str] = None  # "complete", "partial", "off"
    mode: Optional[str] = None  # "quick", "full"
    # When it ran: "start-up", or "MPI_Finalize" when the start-up one found no flush-0
    # t_min/t_diff (None: a trace of a version before it was said).
    at: Optional[str] = None
    # Where t_min / t_diff come from: the paper's statistics over the stored samples,
    # or the C search's estimate (with why the paper check did not confirm it).
    source: str = "C estimate"
    # Per cache state, flush 0 first (it repeats the values above).
    states: list[CacheState] = field(default_factory=list)
    cycles: CyclesCalibration = field(default_factory=CyclesCalibration)

    @property
    def in_some_state(self) -> bool:
        """True when some cache state has both t_min and t_diff (flush 0 or another:
        the rank can be judged, with the nearest such state where flush 0 has none)."""
        return any(st.usable for st in self.states)


@dataclass(frozen=True)
class TopologyCpu:
    """One CPU of a rank's affinity mask and where it sits: the OS's numbers
    (physical_package_id, NUMA node N, core_id; -1 when not known)."""

    cpu: int
    package: int = -1
    numa: int = -1
    core: int = -1


@dataclass
class Topology:
    """rank-N.json "topology": the socket (package), NUMA node and core of the CPU the
    rank started on (-1 when not known), and of each CPU of its mask. ``source`` is
    "hwloc", "sysfs" (built without hwloc, or hwloc failed: ``note`` says why) or
    "none" (nothing known: ``note`` says why). Core ids are unique within their
    package only."""

    source: str = "none"
    note: str = ""
    package: int = -1
    numa: int = -1
    core: int = -1
    cpus: list[TopologyCpu] = field(default_factory=list)

    def place(self) -> tuple[Optional[int], Optional[int]]:
        """(package, core) that all the mask's CPUs share, each None where they span
        several or it is not known: the level the trace's system tree puts the rank
        under (its core, else its socket, else its node)."""
        packages = {c.package for c in self.cpus}
        if len(packages) != 1 or min(packages) < 0:
            return None, None
        cores = {c.core for c in self.cpus}
        core = min(cores) if len(cores) == 1 and min(cores) >= 0 else None
        return min(packages), core


def _int_or(value: Any, default: int = -1) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def parse_topology(raw: Any) -> Optional[Topology]:
    """A rank-N.json "topology" object, None when absent or not an object; fields of
    the wrong type read as not known, CPU entries without a CPU number are skipped."""
    if not isinstance(raw, dict):
        return None
    cpus = [
        TopologyCpu(
            cpu=c[KTcpu.CPU],
            package=_int_or(c.get(KTcpu.PACKAGE)),
            numa=_int_or(c.get(KTcpu.NUMA)),
            core=_int_or(c.get(KTcpu.CORE)),
        )
        for c in raw.get(KTopo.CPUS) or []
        if isinstance(c, dict) and _int_or(c.get(KTcpu.CPU)) >= 0
    ]
    source, note = raw.get(KTopo.SOURCE), raw.get(KTopo.NOTE)
    return Topology(
        source=source if isinstance(source, str) else "none",
        note=note if isinstance(note, str) else "",
        package=_int_or(raw.get(KTopo.PACKAGE)),
        numa=_int_or(raw.get(KTopo.NUMA)),
        core=_int_or(raw.get(KTopo.CORE)),
        cpus=sorted(cpus, key=lambda c: c.cpu),
    )


@dataclass
class RankMeta:
    """Metadata of one rank; ``problem`` is set when its calibration is unusable."""

    rank: int
    host: Optional[str] = None
    cpus: list[int] = field(default_factory=list)
    calibration: Calibration = field(default_factory=Calibration)
    clock: dict[str, Any] = field(default_factory=dict)
    caps: dict[str, Any] = field(
        default_factory=dict
    )  # clock_caps: the capability probe
    events_lost: Optional[int] = None
    source: Optional[str] = None  # the rank-N.json path, if it was read
    problem: Optional[str] = None
    # rank-N.json "probe": the fixed-work probes' period_ms, adds (K), lanes (the
    # independent chains they run in; absent: one, in traces before the lanes), k_source
    # ("calibration t_min" or "default"), count, total_ns and per-thread
    # {"thread", "count", "total_ns"}; None when off or not recorded.
    probe: Optional[dict[str, Any]] = None
    # rank-N.json "neighbours": what else ran on the rank's CPUs from its start to its
    # stop (span_ns, tick_ns, self_ns, cpus[] by the kernel's columns, tasks[] of other
    # processes); None when not recorded (no /proc, a rank that died, an older trace).
    neighbours: Optional[dict[str, Any]] = None
    # rank-N.json "topology": where the rank ran (socket, NUMA node, core); None in a
    # file that predates it.
    topology: Optional[Topology] = None

    @property
    def calibrated(self) -> bool:
        """True when both t_min and t_diff are known, so the rank can be judged."""
        c = self.calibration
        return c.t_min_ns is not None and c.t_diff_ns is not None


@dataclass
class RunMeta:
    """run.json (None if missing) and one RankMeta per requested rank."""

    run: Optional[dict[str, Any]]
    ranks: dict[int, RankMeta]
    notes: list[str] = field(default_factory=list)
    clock: dict[str, Any] = field(default_factory=dict)  # see clock_summary()


# Ranks measuring one clock should agree on its rate; Score-P warns beyond this too.
HZ_AGREEMENT = 1e-4


def clock_summary(ranks: dict[int, RankMeta]) -> tuple[dict[str, Any], list[str]]:
    """What clock the ranks used, what the machine lacked, whether their rates agree.

    Returns (summary for analysis.json, notes). The summary takes rank 0's (or the first
    rank's) clock and capability probe, plus, over all ranks:

    - ``notes``: each distinct ``clock.note`` (why the clock asked for, or the native
      one, was not used) with the ranks that wrote it, ``[{"note", "ranks"}]``;
    - ``stated_vs_measured``: ranks whose stated frequency (``hz_rel_error`` taken as
      exact) differs from the one measured against CLOCK_MONOTONIC_RAW by more than the
      measurement's own error bound plus ``hz_rel_error``: ``{"ranks", "hz_method",
      "max_rel", "bound"}``, or None.

    Notes name ranks whose measured frequency differs from the others by more than
    HZ_AGREEMENT (relative); the clock notes and the stated-vs-measured disagreement are
    for the report's clock lines (report_text), not repeated there.
    """
    with_clock = {r: m for r, m in sorted(ranks.items()) if m.clock}
    if not with_clock:
        return {}, []
    first = next(iter(with_clock.values()))
    caps = first.caps
    summary = {
        "name": first.clock.get(KClock.NAME),
        "hz": _number(first.clock.get(KClock.HZ)),
        "hz_method": first.clock.get(KClock.HZ_METHOD),
        "hz_rel_error": _number(first.clock.get(KClock.HZ_REL_ERROR)),
        "measured_hz": _number(first.clock.get(KClock.MEASURED_HZ)),
        "measured_rel_error": _number(first.clock.get(KClock.MEASURED_REL_ERROR)),
        "fenced_read": first.clock.get(KClock.FENCED_READ),
        "cycles_counter": bool(caps.get(KCaps.CYCLES)) if caps else None,
        "cycles_why": caps.get(KCaps.CYCLES_WHY) if caps else None,
        "tsc_stable_by": caps.get(KCaps.TSC_STABLE_BY) if caps else None,
        "notes": _clock_notes(with_clock),
        "stated_vs_measured": _stated_vs_measured(with_clock),
    }
    notes = []
    rates = {}
    for r, m in with_clock.items():
        hz = clock_rate(m.clock)
        if hz:
            rates[r] = hz
    if len(rates) >= 2:
        lo, hi = min(rates, key=rates.get), max(rates, key=rates.get)
        spread = rates[hi] / rates[lo] - 1
        summary["hz_spread_rel"] = spread
        if spread > HZ_AGREEMENT:
            notes.append(
                "ranks disagree on the clock frequency: "
                f"rank {lo} {rates[lo] / 1e9:.6f} GHz"
                f" vs rank {hi} {rates[hi] / 1e9:.6f} GHz (relative {spread:.1e} > "
                f"{HZ_AGREEMENT:g}); the trace uses one resolution for all ranks"
            )
    return summary, notes


def clock_rate(clock: dict[str, Any]) -> Optional[float]:
    """A clock section's rate (Hz): the one measured against CLOCK_MONOTONIC_RAW, else
    the stated one; None when neither is a finite number >= 0. Pure."""
    return _number(clock.get(KClock.MEASURED_HZ)) or _number(clock.get(KClock.HZ))


def _clock_notes(ranks: dict[int, RankMeta]) -> list[dict[str, Any]]:
    """Each distinct non-empty clock.note with the ranks that wrote it."""
    by_note: dict[str, list[int]] = {}
    for r, m in ranks.items():
        note = m.clock.get(KClock.NOTE)
        if isinstance(note, str) and note:
            by_note.setdefault(note, []).append(r)
    return [{"note": n, "ranks": rs} for n, rs in by_note.items()]


def _stated_vs_measured(ranks: dict[int, RankMeta]) -> Optional[dict[str, Any]]:
    """Ranks whose stated (or nominal) frequency is further from the measured one than
    the measurement's error bound plus the stated value's own error."""
    bad: dict[int, float] = {}
    bound = 0.0
    method = None
    for r, m in ranks.items():
        rel = _number(m.clock.get(KClock.HZ_VS_MEASURED_REL))
        if rel is None:
            continue
        limit = (_number(m.clock.get(KClock.MEASURED_REL_ERROR)) or 0.0) + (
            _number(m.clock.get(KClock.HZ_REL_ERROR)) or 0.0
        )
        if rel > limit:
            bad[r] = rel
            bound = max(bound, limit)
            method = method or m.clock.get(KClock.HZ_METHOD)
    if not bad:
        return None
    return {
        "ranks": sorted(bad),
        "hz_method": method,
        "max_rel": max(bad.values()),
        "bound": bound,
    }


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) and value >= 0 else None


def load_json(path: str) -> tuple[Optional[dict[str, Any]], Optional[str]]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return None, "missing"
    except (OSError, ValueError) as exc:
        return None, f"unreadable ({exc})"
    if not isinstance(data, dict):
        return None, "unreadable (not a JSON object)"
    return data, None


# Fields of rank-N.json that are numbers (src/pmpi/rank_meta.c writes them so): one
# that is not is said, not taken silently as missing.
_NUMERIC = (
    (K.RANK,),
    (K.NRANKS,),
    (K.PID,),
    (K.CLOCK, KClock.HZ),
    (K.CLOCK, KClock.HZ_REL_ERROR),
    (K.CALIBRATION, KCal.T_MIN_NS),
    (K.CALIBRATION, KCal.T_DIFF_NS),
    (K.CALIBRATION, KCal.TIMER_OVERHEAD_NS),
    (K.SEGMENTS,),
)


def _ill_typed(data: dict[str, Any]) -> list[str]:
    """The numeric fields of a rank-N.json that hold something else."""
    bad = []
    for keys in _NUMERIC:
        value: Any = data
        for k in keys:
            value = value.get(k) if isinstance(value, dict) else None
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float))
        ):
            bad.append(f"{'.'.join(keys)} is {value!r}, not a number")
    return bad


def _parse_rank(rank: int, path: str, data: dict[str, Any]) -> RankMeta:
    meta = RankMeta(rank=rank, source=path)
    host = data.get(K.HOST)
    meta.host = str(host) if host is not None else None
    cpus = data.get(K.CPUS)
    if isinstance(cpus, list):
        meta.cpus = sorted({int(c) for c in cpus if isinstance(c, int)})
    clock = data.get(K.CLOCK)
    meta.clock = clock if isinstance(clock, dict) else {}
    caps = data.get(K.CLOCK_CAPS)
    meta.caps = caps if isinstance(caps, dict) else {}
    events = data.get(K.EVENTS)
    if isinstance(events, dict) and isinstance(events.get(KEvents.LOST), int):
        meta.events_lost = int(events[KEvents.LOST])
    probe = data.get(K.PROBE)
    meta.probe = probe if isinstance(probe, dict) else None
    neighbours = data.get(K.NEIGHBOURS)
    meta.neighbours = neighbours if isinstance(neighbours, dict) else None
    meta.topology = parse_topology(data.get(K.TOPOLOGY))
    cal = data.get(K.CALIBRATION)
    if not isinstance(cal, dict):
        meta.problem = "no calibration section"
        return meta
    meta.calibration = Calibration(
        timer_overhead_ns=_number(cal.get(KCal.TIMER_OVERHEAD_NS)),
        t_min_ns=_positive(cal.get(KCal.T_MIN_NS)),
        t_diff_ns=_positive(cal.get(KCal.T_DIFF_NS)),
        status=cal.get(KCal.STATUS) if isinstance(cal.get(KCal.STATUS), str) else None,
        mode=cal.get(KCal.MODE) if isinstance(cal.get(KCal.MODE), str) else None,
        at=cal.get(KCal.AT) if isinstance(cal.get(KCal.AT), str) else None,
    )
    meta.calibration.states = _parse_states(cal.get(KCal.STATES), meta.calibration)
    meta.calibration.cycles = _parse_cycles(cal.get(KCal.CYCLES))
    if not meta.calibrated:
        status = meta.calibration.status or "unknown"
        meta.problem = f"calibration status {status}, t_min/t_diff not available"
    return meta


def _positive(value: Any) -> Optional[float]:
    """A C-side value that is 0 when the search found nothing: None then."""
    v = _number(value)
    return v if v else None


def _state_key(template: str, unit: str) -> str:
    """A calibration state's key for its unit ("t_min_{unit}", "ns" -> "t_min_ns")."""
    return template.format(unit=unit)


def _parse_states(raw: Any, cal: Calibration) -> list[CacheState]:
    """calibration.states of rank-N.json; flush 0 alone (the top-level values) for
    files written before cache states existed. Flush 0 mirrors the top level."""
    first = CacheState("0", 0, cal.t_min_ns, cal.t_diff_ns, cal.status, cal.source)
    t_min = _state_key(KState.T_MIN_UNIT, "ns")
    t_diff = _state_key(KState.T_DIFF_UNIT, "ns")
    states = [first]
    if not isinstance(raw, list):
        return states
    for entry in raw:
        if not isinstance(entry, dict) or not isinstance(entry.get(KState.LABEL), str):
            continue
        if entry[KState.LABEL] == "0":
            first.note = str(entry.get(KState.NOTE) or "")
            continue
        flush = entry.get(KState.FLUSH)
        status = entry.get(KState.STATUS)
        states.append(
            CacheState(
                label=entry[KState.LABEL],
                flush_bytes=int(flush) if isinstance(flush, int) and flush > 0 else 0,
                t_min_ns=_positive(entry.get(t_min)),
                t_diff_ns=_positive(entry.get(t_diff)),
                status=status if isinstance(status, str) else None,
                note=str(entry.get(KState.NOTE) or ""),
            )
        )
    return states


def _parse_cycles(raw: Any) -> CyclesCalibration:
    """calibration.cycles of rank-N.json: {"available": false, "why"} or the pass."""
    if not isinstance(raw, dict):
        return CyclesCalibration(why="not recorded")
    if not raw.get(KCyc.AVAILABLE):
        return CyclesCalibration(why=str(raw.get(KCyc.WHY) or "unknown"))
    st = raw.get(KCyc.STATE) if isinstance(raw.get(KCyc.STATE), dict) else {}
    status = st.get(KState.STATUS)
    return CyclesCalibration(
        available=True,
        counter=str(raw.get(KCyc.COUNTER) or "") or None,
        timer_overhead_cycles=_number(raw.get(KCyc.TIMER_OVERHEAD_CYCLES)),
        t_min_cycles=_positive(st.get(_state_key(KState.T_MIN_UNIT, "cycles"))),
        t_diff_cycles=_positive(st.get(_state_key(KState.T_DIFF_UNIT, "cycles"))),
        cycles_per_add=_positive(st.get(_state_key(KState.UNIT_PER_ADD, "cycles"))),
        status=status if isinstance(status, str) else None,
        note=str(st.get(KState.NOTE) or ""),
    )


def read_meta(directory: str, ranks: Iterable[int]) -> RunMeta:
    """Read DIR/perfvar/*.json for the given ranks (the ranks found in the trace).

    The calibration is the C search's estimates; perfvar.calibration.ranks puts the
    judge's decisions in their place, then :func:`usability_notes` says which ranks
    are judged with what."""
    meta_dir = os.path.join(directory, "perfvar")
    notes: list[str] = []
    run, why = load_json(os.path.join(meta_dir, "run.json"))
    if run is None:
        notes.append(f"perfvar/run.json {why}")

    wanted = sorted(set(ranks))
    result: dict[int, RankMeta] = {}
    missing: list[int] = []
    for rank in wanted:
        path = os.path.join(meta_dir, f"rank-{rank}.json")
        data, why = load_json(path)
        if data is None:
            result[rank] = RankMeta(rank=rank, problem=f"rank-{rank}.json {why}")
            if why == "missing":
                missing.append(rank)
            else:
                notes.append(
                    f"perfvar/rank-{rank}.json {why}: rank {rank} uncalibrated"
                )
            continue
        if data.get(K.RANK) not in (None, rank):
            notes.append(
                f"perfvar/rank-{rank}.json says rank {data.get(K.RANK)}; "
                f"file name wins"
            )
        result[rank] = _parse_rank(rank, path, data)
        for bad in _ill_typed(data):
            notes.append(f"perfvar/rank-{rank}.json: {bad} (ignored)")
        if result[rank].events_lost:
            notes.append(f"rank {rank} lost {result[rank].events_lost} events")
    if missing:
        notes.append(
            f"perfvar/rank-N.json missing for {len(missing)} rank(s) "
            f"({compact_ranges(missing)}): their calibration is unknown, "
            "they are not judged"
        )
    if os.path.isdir(meta_dir):
        extra = []
        for name in os.listdir(meta_dir):
            m = _RANK_FILE.match(name)
            if m and int(m.group(1)) not in result:
                extra.append(int(m.group(1)))
        if extra:
            notes.append(
                f"metadata for ranks not in the trace: {compact_ranges(extra)}"
            )
    clock, clock_notes = clock_summary(result)
    return RunMeta(run=run, ranks=result, notes=notes + clock_notes, clock=clock)


# What a user can do for a rank whose start-up calibration found nothing, with no other
# rank of its host to lend it values (a host busy while MPI_Init ran).
# calibration.at of a rank whose start-up calibration found no flush-0 t_min/t_diff
# and that calibrated again at its stop.
CALIBRATED_AGAIN = "MPI_Finalize"
# A class whose segments are this many times the rank's timer overhead or more is
# judged with the relative floor alone when the rank has no t_min/t_diff
# (perfvar.stats.cells.unjudged_reason): measured t_diff are 3-200 ns against timer
# overheads of 15-40 ns, so at 1000x the relative floor (0.2-2 % of the median) is
# tens of times any t_diff seen.
RELATIVE_ONLY_FACTOR = 1000
UNCALIBRATED_JUDGED = (
    f"their classes of segments over {RELATIVE_ONLY_FACTOR}x the timer overhead "
    "judged with the relative floor alone, the others not judged"
)
JUDGE_UNCALIBRATED = (
    "a calibration of the machine at a quiet moment judges them: perfvar calibrate "
    "--quick --json FILE, under mpiexec one rank per core, then perfvar analyze "
    "--calibration FILE"
)


def usability_notes(meta: RunMeta) -> list[str]:
    """Which ranks have no flush-0 t_min/t_diff (judged with another cache state) and
    which have none at all (not judged); for after the calibration is decided."""
    result = meta.ranks
    uncal = [r for r, m in result.items() if m.source and not m.calibrated]
    # Without flush 0, a rank's segments are still judged with its nearest calibrated
    # cache state (perfvar.read.cache_state.choose); only a rank with none is not
    # judged.
    elsewhere = [r for r in uncal if result[r].calibration.in_some_state]
    nowhere = [r for r in uncal if r not in elsewhere]
    notes = []
    again = [r for r, m in result.items() if m.calibration.at == CALIBRATED_AGAIN]
    if again:
        notes.append(
            f"the start-up calibration of rank(s) {compact_ranges(again)} found no "
            "flush-0 t_min/t_diff: calibrated again at MPI_Finalize, on the same core"
        )
    if elsewhere:
        notes.append(
            f"no flush-0 t_min/t_diff for rank(s) {compact_ranges(elsewhere)}: "
            "judged with the nearest calibrated cache state"
        )
    if nowhere:
        notes.append(
            f"no usable t_min/t_diff for rank(s) {compact_ranges(nowhere)}: "
            f"{UNCALIBRATED_JUDGED} ({JUDGE_UNCALIBRATED})"
        )
    return notes
