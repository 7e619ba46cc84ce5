"""Kind "load imbalance": a rank that does more work than its peers, the code's finding.

A rank slower than its peers in a segment class (perfvar.detect.slow_segment), or in
all of them (perfvar.detect.slow_core), either ran on a slower core or did more work
there. Only the first is an anomalous core. Two measurements tell them apart on the
same run:

* the fixed-work probes (perfvar.stats.core_speed): the same ADDs on every
  rank; where the rank's probes ran at its peers' speed in the finding's window
  while its segments ran slower, the rank did more work (``core_speed.MORE``); where
  they ran slower by at least half the finding, it is its core (``SLOWER``);
* the instructions counted per segment where the machine has a PMU
  (perfvar.stats.work): more instructions is more work, the same ones a slower core.
  Where both speak, the instructions decide (they count the work itself) and the
  probes' figure is kept beside them.

``detect`` turns every slow segment and slow core that the measurement says is more
work into a load_imbalance finding with the same statistics (its excess, interval,
delay cost) and the deciding evidence: ``core_speed`` (the probes' shift, interval
and window) and ``decided_by``. What could not be told stays the detector's kind and
says so; what is the core's stays too, with the probes' figure in its sentence. A
load imbalance names no anomalous core: it is reported in its own section, "the
code", as Scalasca reports imbalance, and measured apart from the hardware.
Pure functions; thread-safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Optional

from perfvar.detect import slow_core, slow_segment
from perfvar.detect.finding import CLASS, CODE, AnomalyJson, FindingKind
from perfvar.detect.words import probes_clause, stats, where
from perfvar.stats import core_speed, work
from perfvar.stats.model import Anomaly, DetectorResult, DetectParams, Prepared
from perfvar.units import fmt_ns, fmt_pct

KIND = "load_imbalance"
CLASS_KINDS = (KIND, slow_segment.KIND)  # the findings of one class of a rank


def _window(prep: Prepared, a: Anomaly) -> tuple[Optional[float], Optional[float]]:
    """The span of the finding's class on its rank (ns since the origin); the whole
    run for a core."""
    if a.segment is None or a.segment not in prep.segment_ids:
        return None, None
    cell = prep.cells.get((prep.segment_ids.index(a.segment), a.rank))
    if cell is None or not cell.n:
        return None, None
    end = cell.start_ns + cell.samples_ns
    return float(cell.start_ns.min()), float(end.max())


def _size(a: Anomaly) -> tuple[float, float]:
    """(the finding's relative size, the core shift its detector took away)."""
    ev = a.evidence
    if a.kind == slow_segment.KIND:
        return float(ev["excess_rel"]), float(ev.get("core_shift_rel") or 0.0)
    return float(ev["shift_rel"]), 0.0


def core_or_code(
    prep: Prepared, a: Anomaly, whole: Optional[Prepared] = None
) -> dict[str, Any]:
    """The ``core_speed`` evidence of a slow segment or slow core: what its probes
    measured in its window and what that makes it, with ``decided_by`` where the
    instructions counted decided instead. The probes are those of ``prep`` (the
    steady run the finding was judged on), else, where the slow phases of the ranks
    left too few there, those of ``whole`` (the whole run) in the same window."""
    size, explained = _size(a)
    start, end = _window(prep, a)
    speed = core_speed.of_rank(prep, a.rank, start, end)
    if speed is None and whole is not None:
        speed = core_speed.of_rank(whole, a.rank, start, end)
    out = core_speed.evidence(speed, size, explained)
    told = (a.evidence.get("work") or {}).get("verdict")
    if told in (work.MORE, work.SLOWER):
        out["verdict"] = core_speed.MORE if told == work.MORE else core_speed.SLOWER
        out["decided_by"] = core_speed.BY_INSTRUCTIONS
    elif out["verdict"] != core_speed.UNTOLD:
        out["decided_by"] = core_speed.BY_PROBES
    return out


def in_phases(prep: Prepared, phases: Sequence[Anomaly]) -> list[Anomaly]:
    """The slow phases, each given its ``core_speed`` evidence: the probes of its
    window against the peers' in the same window (``prep``: the whole run's cells).
    A phase whose probes ran slower by half of it or more was a slower core while it
    lasted (the host took the CPU); one whose probes ran at their peers' speed was a
    phase of the program. Either way it stays a transient."""
    out = []
    for a in phases:
        speed = core_speed.of_rank(prep, a.rank, a.start_ns, a.end_ns)
        told = core_speed.evidence(speed, float(a.evidence["excess_rel"]))
        out.append(replace(a, evidence={**a.evidence, "core_speed": told}))
    return out


def detect(
    prep: Prepared,
    params: Optional[DetectParams] = None,
    found: Sequence[Anomaly] = (),
    whole: Optional[Prepared] = None,
) -> DetectorResult:
    """The findings ``found`` by the other detectors on ``prep``, each slow segment and
    slow core given its ``core_speed`` evidence (core_or_code; ``whole``: the whole
    run's cells) and those that are more work made load_imbalance findings
    (``params``: unused, the detectors' signature). A finding over all of a rank's
    classes that its probes did not measure as a slower core (more work, or not told
    apart) is left out where classes of that rank are named: they say where the time
    went (the demo's rank with 3x the work in its one large class was a slow core of
    +108 % by compute time, its probes +33.7 %, beside that class's +202 %)."""
    out = []
    for a in found:
        if a.kind not in (slow_segment.KIND, slow_core.KIND):
            out.append(a)
            continue
        told = core_or_code(prep, a, whole)
        a = replace(a, evidence={**a.evidence, "core_speed": told})
        if told["verdict"] == core_speed.MORE:
            # Its size under the one key of the kind: a core's shift by compute time
            # is its excess over all its classes.
            size = {"excess_rel": a.evidence["shift_rel"]} if a.segment is None else {}
            a = replace(a, kind=KIND, evidence={**a.evidence, **size, "as": a.kind})
        out.append(a)
    in_class = {a.rank for a in out if a.kind in CLASS_KINDS and a.segment is not None}
    out = [a for a in out if not _said_by_its_classes(a, in_class)]
    return DetectorResult(anomalies=out)


def _said_by_its_classes(a: Anomaly, in_class: set[int]) -> bool:
    """Whether ``a`` is a finding over all its rank's classes that its probes
    measured and did not find a slower core, of a rank with classes named
    (``in_class``). Without probes in its window a slow core stays as its rule
    named it."""
    if a.segment is not None or a.rank not in in_class:
        return False
    told = a.evidence.get("core_speed") or {}
    probed = told.get("probes_shift_rel") is not None
    not_slower = probed and told.get("verdict") != core_speed.SLOWER
    return a.kind == KIND or (a.kind == slow_core.KIND and not_slower)


def _what(a: AnomalyJson, labels: dict[str, str]) -> str:
    if a["segment"] is None:
        return "in all its segment classes"
    return f"in segment {a['segment']} [{labels.get(a['segment'], '?')}]"


def describe(a: AnomalyJson, labels: dict[str, str]) -> str:
    """One sentence: which rank, which class, how much more, and what told it."""
    ev = a["evidence"]
    by = (ev.get("core_speed") or {}).get("decided_by")
    if a["segment"] is None:
        ci = stats(ev, "shift_ci_rel")
        size = f"{fmt_pct(ev['shift_rel'])} by compute time ({ci})"
    else:
        size = (
            f"median {fmt_ns(ev['median_ns'])} vs peers "
            f"{fmt_ns(ev['peers_median_ns'])}, {fmt_ns(a['excess_ns'], signed=True)} "
            f"per segment ({fmt_pct(ev['excess_rel'])}; {stats(ev, 'excess_ci_rel')})"
        )
    told = probes_clause(ev)
    if by == core_speed.BY_INSTRUCTIONS:
        d = (ev.get("work") or {}).get("instructions_rel")
        told = f"it counted {fmt_pct(d, signed=False)} more instructions than its " + (
            f"peers; {told}" if told else "peers"
        )
    return (
        f"{where(a)} does more work {_what(a, labels)}: {size}; more work, not a "
        f"slower core: {told} (load imbalance)"
    )


def _phrase(a: AnomalyJson) -> str:
    ev = a["evidence"]
    if a["segment"] is None:
        return f"more work in all classes {fmt_pct(ev['shift_rel'])}"
    return f"more work in {a['segment']} {fmt_pct(ev['excess_rel'])}"


FINDING = FindingKind(
    name=KIND,
    verdict=True,
    word="load imbalance",
    describe=describe,
    phrase=_phrase,
    size_key="excess_rel",
    in_class=lambda a, segment: a["segment"] in (None, segment),
    owner=CODE,
    subject=CLASS,
)
