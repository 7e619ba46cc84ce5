"""Scoring `perfvar analyze` verdicts against injected anomalies: the one rule set that
tools/validate.py (real runs of the twin programs) and tests/python/test_synthetic.py
(synthetic traces) judge by.

An anomaly of a kind that names its rank (slow_segment, slow_core, noisy_core) that
is a verdict (``verdict_anomalies``: not flagged minor) is *named*. A named anomaly
hits an injected one of the same kind and rank (slow_segment: and the same segment
class, by its canonical key). Any other named anomaly is a wrong name; one naming a
rank nothing was injected into also names *another rank* (``other_ranks``: "nobody
else" broken; a wrong name of the injected rank, its core beside its injected class,
is not). A transient (slow_phase: a shift that came and went, which names no
anomalous core) hits an injected slow_phase of its rank whose window overlaps its
own by half of each; otherwise it is reported, neither a hit nor a wrong name
(``transients``). An injected anomaly of kind "any" (a disturbance whose verdict may
take several forms: a busy process on the rank's CPU) is hit by any verdict naming
its rank. Other kinds (migrated, shared_cpu...) are information, neither hits nor
wrong names. A wrong name of a slower core (slow_core, slow_segment) on a rank whose
CPU a witness outside perfvar measured slower (``slower_cpu_ranks``: a shared host's
vCPU running below speed) is also listed in ``slower_cpu``: the host may have made
that core slower. A wrong name of a noisy core on a rank whose CPU the kernel counted
busier with other tasks than its peers' (``busier_cpu_ranks``) is also listed in
``busier_cpu``: time the machine gave to something else, truly lost. ``host_explained``
says that every wrong name is one of these. A wrong name of a slower core, or of a slow
segment in the compute the program times itself, on a rank that timer measured slower than
its peers by at least half of the finding's shift (``own_timer``, OwnTimer) is also listed
in ``own_timer``: the rank really computed slower, by a clock perfvar does not read;
``timer_confirmed`` says that every wrong name is one of these.

The machine's levels: an injected slow node, slow socket, noisy node or node-wide
transient is ``Injected(kind, r)`` with r the lowest rank of its node or socket, as the
verdict names it (its finding's rank; a node transient also by its window). A level
named at a wrong level, or its ranks named on their own, are wrong names.

The core or the code: injected work (more work on a rank) is expected as a
load_imbalance of that rank and class (``Injected("load_imbalance", r, key)``; with no
key, in any class); a load imbalance that hits nothing injected is the code's finding,
listed apart (``code``: a real program's ranks may do different work by design),
neither a hit nor a wrong name. Injected work named as a slow segment of that rank and
class whose probes could not tell it from a slower core (its ``core_speed`` says "could
not tell") is listed in ``untold``: not the expected more work, not a slower core
either, so neither a hit nor a wrong name. A core the host witness measured slower is
expected named slower (``Injected(SLOWER, r)``): hit by a slow_core of the rank, or by any
finding on it whose probes measured a slower core (its evidence ``core_speed``): a transient
so measured is a slower core while it lasted. A transient of that rank its probes did not
measure slower is listed apart (``transients``): the rank named, not its core.

Pure functions over analysis.json's content; thread-safe.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from perfvar.detect import (
    is_code,
    is_transient,
    is_verdict,
    load_imbalance,
    node_transient,
    noisy_core,
    slow_core,
    slow_phase,
    slow_segment,
)
from perfvar.result import Analysis, Finding
from perfvar.stats import core_speed

# The kinds that say a rank's core ran slower: what a vCPU run below speed looks like.
SLOWER_CORE_KINDS = (slow_core.KIND, slow_segment.KIND)
# The kind that says a rank lost time to something else on its CPU.
BUSIER_CORE_KINDS = (noisy_core.KIND,)
# An expected kind: the rank's core named slower, by whichever finding measured it.
SLOWER = core_speed.SLOWER


@dataclass(frozen=True)
class Injected:
    """One injected anomaly, as a verdict should name it."""

    kind: str  # a verdict kind, "any" (any verdict naming the rank) or SLOWER
    rank: int
    # slow_segment, load_imbalance: the class's canonical segment key (None for a
    # load imbalance: any class)
    segment: Optional[str] = None
    window_ns: Optional[tuple[float, float]] = None  # slow_phase: ns since trace start


def slower_by_own_timer(
    line: str, stdout: str, nranks: int
) -> Optional[dict[int, float]]:
    """rank -> its own time over the median of the other ranks' minus 1 (0.10: 10 %
    slower), from a program's output lines matching ``line`` (groups: rank, time in any
    one unit, and more such pairs where one line gives several ranks, as CoMD's slowest
    and fastest); None when the output gives no positive time for every one of
    ``nranks``."""
    times = {}
    for groups in re.findall(line, stdout):
        pairs = groups if isinstance(groups, tuple) else ()
        times.update({int(r): float(t) for r, t in zip(pairs[0::2], pairs[1::2])})
    if len(times) != nranks or nranks < 2 or min(times.values()) <= 0:
        return None
    return {
        r: t / statistics.median(v for q, v in times.items() if q != r) - 1.0
        for r, t in sorted(times.items())
    }


@dataclass(frozen=True)
class OwnTimer:
    """What a program's own timer of its compute measured beside perfvar (the demo's
    stencil with --timing): rank -> how much slower than the other ranks it timed that
    compute (0.10: 10 % slower), and the segment keys of the classes it times, which
    hold most of the rank's compute (so a slower core there is the rank's)."""

    slower: Mapping[int, float]
    keys: Collection[str]

    def confirms(self, an: Finding, key_of: Mapping[Any, str]) -> bool:
        """Whether the verdict ``an``, a slower core or a slow timed class, names a rank
        the timer measured slower by at least half of the verdict's shift."""
        rank, kind = an.rank, an.kind
        if kind not in SLOWER_CORE_KINDS or rank not in self.slower:
            return False
        if kind == slow_segment.KIND and key_of.get(an.segment) not in self.keys:
            return False
        ev = an.evidence or {}
        # a slow core's shift_rel is weighted by compute time, as the timer measures
        said = ev.get("shift_rel") or 0.0
        return self.slower[rank] > 0 and self.slower[rank] >= said / 2


@dataclass
class Score:
    """How the anomalies of one analysis compare with what was injected."""

    hits: set[int] = field(default_factory=set)  # indices of the injected that were hit
    wrong: bool = False  # a verdict named something not injected
    named: list[str] = field(default_factory=list)  # the verdicts, in words
    wrong_names: list[str] = field(default_factory=list)
    info: list[str] = field(default_factory=list)  # informational kinds, in words
    transients: list[str] = field(default_factory=list)  # transients that hit nothing
    code: list[str] = field(default_factory=list)  # load imbalance that hit nothing
    untold: list[str] = field(
        default_factory=list
    )  # injected work, core or code untold
    slower_cpu: list[str] = field(default_factory=list)  # wrong names on a slower CPU
    busier_cpu: list[str] = field(default_factory=list)  # wrong names on a busier CPU
    own_timer: list[str] = field(
        default_factory=list
    )  # wrong names the program's timer saw
    # ranks a wrong name named that nothing was injected into ("nobody else")
    other_ranks: set[int] = field(default_factory=set)

    @property
    def host_explained(self) -> bool:
        """Wrong names, each of a core the host was measured to slow down or take
        time from (slower_cpu, busier_cpu)."""
        return self.wrong and set(self.wrong_names) <= set(
            self.slower_cpu + self.busier_cpu
        )

    @property
    def timer_confirmed(self) -> bool:
        """Wrong names, each of a rank the program's own timer measured slower
        (OwnTimer.confirms)."""
        return self.wrong and set(self.wrong_names) <= set(self.own_timer)

    def exact(self, n_injected: int) -> bool:
        """Every injected anomaly hit and nothing else named."""
        return len(self.hits) == n_injected and not self.wrong


def overlap_ok(inj: tuple[float, float], rep: tuple[float, float]) -> bool:
    """Two windows (ns) overlap by at least half of each."""
    ov = min(inj[1], rep[1]) - max(inj[0], rep[0])
    return ov > 0 and ov >= 0.5 * (inj[1] - inj[0]) and ov >= 0.5 * (rep[1] - rep[0])


def describe(an: Finding, names: Mapping[Any, str]) -> str:
    """An anomaly in words: kind, rank, segment (by ``names``: id -> label), window."""
    text = f"{an.kind} r{an.rank}"
    if an.segment:
        text += f" {names.get(an.segment, an.segment)}"
    if an.kind == slow_phase.KIND:
        text += f" {an.start_ns / 1e6:.0f}-{an.end_ns / 1e6:.0f}ms"
    return text


def score(
    injected: Sequence[Injected],
    analysis: Analysis,
    labels: Optional[Mapping[str, str]] = None,
    with_minor: bool = False,
    slower_cpu_ranks: Collection[int] = (),
    busier_cpu_ranks: Collection[int] = (),
    own_timer: Optional[OwnTimer] = None,
) -> Score:
    """Score analysis.json's anomalies (its headline findings: the verdict a trial is
    judged by) against ``injected``. ``labels``: short names of segment keys for the
    text (e.g. {key_a: "A"}); other segments show their id. ``with_minor``: the minor
    findings (below the headline's cost threshold) are judged like the verdict, for a test of what the detectors found rather than of what the
    headline names. ``slower_cpu_ranks``: ranks whose CPU was measured slower, outside
    perfvar, while the run ran; ``busier_cpu_ranks``: ranks whose CPU other tasks took
    more of than their peers' CPUs, by the kernel's accounting; ``own_timer``: what the
    program's own timer of its compute measured, where it has one."""
    key_of = {x.id: x.key for x in analysis.segments}
    labels = labels or {}
    names = {x.id: labels.get(x.key, x.id) for x in analysis.segments}
    out = Score()
    found = analysis.anomalies + (analysis.minor if with_minor else [])
    for an in found:
        text = describe(an, names)
        if not is_verdict(an):
            out.info.append(text)
        elif is_transient(an):
            _score_transient(out, injected, an, text)
        elif is_code(an) and not _hit(injected, an, key_of):
            out.code.append(text)
        elif _untold_work(injected, an, key_of):
            out.untold.append(text)
        else:
            _score_named(
                out, injected, an, text, key_of,
                (slower_cpu_ranks, busier_cpu_ranks), own_timer,
            )  # fmt: skip
    return out


def _score_transient(
    out: Score, injected: Sequence[Injected], an: Finding, text: str
) -> None:
    """A transient hits an injected slow_phase, or, where its probes measured a
    slower core, a slower core of its rank (for as long as it lasted), or is reported
    apart."""
    hit = _phase_hit(injected, an)
    if hit is None and _slower_core(an):
        hit = next(
            (
                i
                for i, x in enumerate(injected)
                if x.kind == SLOWER and x.rank == an.rank
            ),
            None,
        )
    if hit is None:
        out.transients.append(text)
    else:
        out.hits.add(hit)
        out.named.append(text)


def _score_named(
    out: Score,
    injected: Sequence[Injected],
    an: Finding,
    text: str,
    key_of: Mapping[Any, str],
    cpu_ranks: tuple[Collection[int], Collection[int]],
    own_timer: Optional[OwnTimer],
) -> None:
    """A verdict naming a rank: hits the injected it matches, else is a wrong name
    (also listed in slower_cpu when it is a slower core on a CPU measured slower, in
    busier_cpu when it is a noisy core on a CPU other tasks took more of: ``cpu_ranks``
    holds those two sets of ranks; in own_timer when the program's timer confirms it).
    """
    slower_cpu_ranks, busier_cpu_ranks = cpu_ranks
    out.named.append(text)
    same = _hit(injected, an, key_of)
    if same:
        out.hits.update(same)
        return
    out.wrong = True
    out.wrong_names.append(text)
    if all(inj.rank != an.rank for inj in injected):
        out.other_ranks.add(an.rank)
    if an.kind in SLOWER_CORE_KINDS and an.rank in slower_cpu_ranks:
        out.slower_cpu.append(text)
    if an.kind in BUSIER_CORE_KINDS and an.rank in busier_cpu_ranks:
        out.busier_cpu.append(text)
    if own_timer is not None and own_timer.confirms(an, key_of):
        out.own_timer.append(text)


def _hit(
    injected: Sequence[Injected], an: Finding, key_of: Mapping[Any, str]
) -> list[int]:
    """The indices of the injected anomalies the verdict ``an`` names."""
    return [i for i, inj in enumerate(injected) if _names(an, inj, key_of)]


def _untold_work(
    injected: Sequence[Injected], an: Finding, key_of: Mapping[Any, str]
) -> bool:
    """Whether ``an`` names injected work where the probes could not tell it from a
    slower core: a slow segment of the injected rank and class saying so."""
    told = (an.evidence or {}).get("core_speed") or {}
    if an.kind != slow_segment.KIND or told.get("verdict") != core_speed.UNTOLD:
        return False
    as_work = replace(an, kind=load_imbalance.KIND)
    return any(
        inj.kind == load_imbalance.KIND and _names(as_work, inj, key_of)
        for inj in injected
    )


def _slower_core(an: Finding) -> bool:
    """Whether the verdict says its rank's core ran slower: a slow core, or a finding
    whose probes (or instructions) measured a slower core."""
    told = (an.evidence or {}).get("core_speed") or {}
    return an.kind == slow_core.KIND or told.get("verdict") == core_speed.SLOWER


def _names(an: Finding, inj: Injected, key_of: Mapping[Any, str]) -> bool:
    """Whether the verdict ``an`` names the injected ``inj``: its kind (or "any", or
    SLOWER and a slower core) and rank, and for a slow_segment or load_imbalance its
    segment class (key_of: segment id -> key; a load imbalance injected in no one
    class: any)."""
    if inj.rank != an.rank:
        return False
    if inj.kind == SLOWER:
        return _slower_core(an)
    if inj.kind not in (an.kind, "any"):
        return False
    if inj.kind == slow_segment.KIND or (
        inj.kind == load_imbalance.KIND and inj.segment is not None
    ):
        return inj.segment is not None and key_of.get(an.segment) == inj.segment
    return True


def _phase_hit(injected: Sequence[Injected], an: Finding) -> Optional[int]:
    """The index of the injected slow_phase that the transient ``an`` hits (its rank,
    windows overlapping by half of each), or None."""
    for i, inj in enumerate(injected):
        if (
            inj.kind in (slow_phase.KIND, node_transient.KIND)
            and inj.kind == an.kind
            and inj.rank == an.rank
            and inj.window_ns is not None
            and overlap_ok(inj.window_ns, (an.start_ns, an.end_ns))
        ):
            return i
    return None
