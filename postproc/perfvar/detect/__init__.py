"""The detectors and the one table of the kinds of findings they make.

Each module here finds one kind of finding in the prepared cells
(perfvar.stats.model.Prepared) and declares how it is reported (``FINDING``, a
perfvar.detect.finding.FindingKind); ``KINDS`` registers them, in the order the
reports list them. The reports, the markers and analysis.json read ``KINDS``; a new
detector is a module with ``KIND``, ``detect()`` and ``FINDING``, added to
``_MODULES`` and called in ``run_all``. Imports only the stages below it (read,
calibration, statistics, model). Thread-safe: the table is immutable after import.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import numpy as np

from perfvar.detect import (
    load_imbalance,
    migration,
    node_transient,
    noisy_core,
    noisy_node,
    shared_cpu,
    slow_core,
    slow_node,
    slow_phase,
    slow_segment,
    slow_socket,
)
from perfvar.detect.finding import MACHINE, AnomalyJson, FindingKind
from perfvar.detect.levels import Place
from perfvar.detect.words import where
from perfvar.stats.blocks import MIN_BLOCKS, class_blocks
from perfvar.stats.model import (
    Anomaly,
    DetectorResult,
    DetectParams,
    Judgement,
    Prepared,
)

_MODULES = (
    slow_node,
    slow_socket,
    noisy_node,
    node_transient,
    slow_segment,
    slow_core,
    noisy_core,
    slow_phase,
    load_imbalance,
    migration,
    shared_cpu,
)
# The machine's levels, largest first: a node's ranks folded into the node before its
# sockets are looked at.
_LEVELS = (slow_node, slow_socket, noisy_node, node_transient)
KINDS: dict[str, FindingKind] = {m.FINDING.name: m.FINDING for m in _MODULES}


def verdict_kind(name: str) -> bool:
    """Whether findings of kind ``name`` are findings of a rank (drawn, marked and
    costed); the others (migrated, shared_cpu) inform, and so does a kind no
    detector declares."""
    kind = KINDS.get(name)
    return kind is not None and kind.verdict


def verdict_kinds() -> tuple[str, ...]:
    """The kinds of findings of a rank, in the table's order."""
    return tuple(name for name in KINDS if verdict_kind(name))


def naming_kind(name: str) -> bool:
    """Whether findings of kind ``name`` name their rank as anomalous: the machine's
    verdict kinds but the transients (a shift that came and went is a phase or the
    host, not an anomalous core; more work is the code's, not the core's)."""
    kind = KINDS.get(name)
    return (
        kind is not None
        and kind.verdict
        and not kind.transient
        and kind.owner == MACHINE
    )


def naming_kinds() -> tuple[str, ...]:
    """The kinds that name an anomalous rank, in the table's order."""
    return tuple(name for name in KINDS if naming_kind(name))


def transient_kinds() -> tuple[str, ...]:
    """The verdict kinds that came and went: reported, naming no anomalous core."""
    return tuple(name for name in verdict_kinds() if KINDS[name].transient)


def code_kinds() -> tuple[str, ...]:
    """The verdict kinds that are the code's (more work on a rank), not the
    machine's."""
    return tuple(name for name in verdict_kinds() if KINDS[name].owner != MACHINE)


def subject(name: str) -> Optional[str]:
    """What findings of kind ``name`` are about (perfvar.detect.finding.SUBJECTS);
    None for a kind no detector declares."""
    kind = KINDS.get(name)
    return kind.subject if kind is not None else None


def summary_keys() -> dict[str, str]:
    """analysis.json's summary key of each kind that has one -> the kind, in the
    table's order."""
    return {k.summary_key: name for name, k in KINDS.items() if k.summary_key}


def class_kind(name: str) -> bool:
    """Whether findings of kind ``name`` are of one segment class on one rank when
    they name a segment (a slower cell: their excess is per segment of it)."""
    kind = KINDS.get(name)
    return kind is not None and kind.of_class


# The helpers below take a finding as the reports hold it (perfvar.result.Finding)
# or as analysis.json holds it (AnomalyJson, what the FindingKind callables take).
Found = Any


def as_json(anomaly: Found) -> AnomalyJson:
    """The finding as analysis.json holds it, for the FindingKind callables."""
    return anomaly if isinstance(anomaly, dict) else anomaly.to_json()


def _kind_of(anomaly: Found) -> str:
    return anomaly["kind"] if isinstance(anomaly, dict) else anomaly.kind


def is_verdict(anomaly: Found) -> bool:
    """Whether the finding is a finding of its rank."""
    return verdict_kind(_kind_of(anomaly))


def names_rank(anomaly: Found) -> bool:
    """Whether the finding names its rank as anomalous (a verdict, not a transient)."""
    return naming_kind(_kind_of(anomaly))


def is_transient(anomaly: Found) -> bool:
    """Whether the finding is a transient: a shift of its rank that came and went."""
    return _kind_of(anomaly) in transient_kinds()


def is_code(anomaly: Found) -> bool:
    """Whether the finding is the code's (load imbalance), not the machine's."""
    return _kind_of(anomaly) in code_kinds()


def describe(anomaly: Found, labels: dict[str, str]) -> str:
    """One sentence with the evidence of ``anomaly``; labels: segment id -> class
    label. A kind no detector declares (an analysis.json of another version) is
    printed with its raw evidence."""
    doc = as_json(anomaly)
    kind = KINDS.get(doc["kind"])
    if kind is None:
        return f"{where(doc)}: {doc['kind']} {doc['evidence']}"
    return kind.describe(doc, labels)


def phrase(anomaly: Found) -> str:
    """The kind's short phrase for the verdict line; the kind's name without one."""
    kind = KINDS.get(_kind_of(anomaly))
    if kind is None or kind.phrase is None:
        return _kind_of(anomaly)
    return kind.phrase(as_json(anomaly))


def size(anomaly: Found) -> Optional[float]:
    """The finding's size relative to the work (its kind's size_key in its evidence;
    None: the kind has none, or the evidence lacks it)."""
    doc = as_json(anomaly)
    kind = KINDS.get(doc["kind"])
    if kind is None or kind.size_key is None:
        return None
    return (doc.get("evidence") or {}).get(kind.size_key)


def shows_in(anomaly: Found, segment: str) -> bool:
    """Whether the finding shows in segment class ``segment`` (the plots); a kind
    no detector declares shows nowhere."""
    kind = KINDS.get(_kind_of(anomaly))
    return kind is not None and kind.in_class(as_json(anomaly), segment)


def word(anomaly: Found) -> str:
    """The kind's few words; an unknown kind's name with spaces."""
    kind = KINDS.get(_kind_of(anomaly))
    return kind.word if kind is not None else _kind_of(anomaly).replace("_", " ")


def kinds_json() -> dict[str, Any]:
    """analysis.json's ``kinds``: what each kind of finding is."""
    return {name: k.to_json() for name, k in KINDS.items()}


def run_all(
    prep: Prepared, params: DetectParams
) -> tuple[list[Anomaly], list[Judgement]]:
    """Every detector over the prepared cells: (anomalies, one judgement per cell).

    Phases first: a window of the run is named as such, and the steady-state
    detectors (the noisy core's too) judge the rest of the run, so one phase is not
    also a slow core.
    Where the phases of the two sides cover so much of the run that a cell keeps
    too few blocks for a test, that cell is judged over the whole run (measured on
    TeaLeaf: the host's slow phases of either rank, +45-76 % for 0.1-1 s each, left
    the largest class 4 blocks of 40, and +10 % injected there went unjudged).
    Slow segments and slow cores then go through the core-or-code question
    (perfvar.detect.load_imbalance): those that were more work are load imbalance.
    """
    phases = slow_phase.detect(prep, params)
    steady = slow_phase.outside(prep, phases.anomalies)
    # Interruptions counted outside the phases too: a rank's +10 % for a third of the
    # run widens its cells' spread, so the fence past which a sample counts as
    # interrupted rises there, and its peer's ordinary tail, counted against a lower
    # fence, named that peer a noisy core (the stencil: 4 of 10 trials).
    noisy = noisy_core.detect(steady, params)
    cores = slow_core.detect(steady, params)
    slow = slow_segment.detect(steady, params, cores=cores.cores)
    if steady is not prep:
        _judge_whole_run(slow, prep, params, cores.cores)
    informative = migration.detect(prep, params).anomalies
    informative += shared_cpu.detect(prep, params).anomalies
    # The core or the code: what the probes (or instructions) measured as more work
    # is load imbalance; judged on the steady run's cells, as the findings were.
    found = cores.anomalies + slow.anomalies
    told = load_imbalance.detect(steady, params, found, whole=prep).anomalies
    found = told + noisy.anomalies + load_imbalance.in_phases(prep, phases.anomalies)
    return found + informative, slow.judgements


def fold_levels(found: list[Anomaly], places: Mapping[int, Place]) -> list[Anomaly]:
    """The findings with those of the ranks of a node or socket found alike folded
    into one finding of that node or socket (perfvar.detect.levels), level findings
    first. ``places``: rank -> where it ran. Run once the findings are costed: a
    level's cost is the sum of its members'."""
    named: list[Anomaly] = []
    for m in _LEVELS:
        result, found = m.detect(found, places)
        named += result.anomalies
    return named + found


def _judge_whole_run(
    slow: DetectorResult,
    prep: Prepared,
    params: DetectParams,
    cores: dict[int, float],
) -> None:
    """The cells the phases left with too few blocks (slow_segment's judgements with
    that status) that have enough over the whole run, judged again there, into
    ``slow``."""
    index = {sid: seg for seg, sid in enumerate(prep.segment_ids)}
    untested = {
        (j.segment, j.rank)
        for j in slow.judgements
        if j.status == slow_segment.TOO_FEW
        and np.count_nonzero(
            ~np.isnan(class_blocks(prep, index[j.segment]).shifts(j.rank))
        )
        >= MIN_BLOCKS
    }
    if not untested:
        return
    whole = slow_segment.detect(prep, params, cores=cores)
    again = {
        (j.segment, j.rank): j
        for j in whole.judgements
        if (j.segment, j.rank) in untested and j.status != slow_segment.TOO_FEW
    }
    slow.judgements = [again.get((j.segment, j.rank), j) for j in slow.judgements]
    slow.anomalies += [a for a in whole.anomalies if (a.segment, a.rank) in again]
