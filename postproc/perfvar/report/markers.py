"""Write the anomalies of an analysis into its trace as OTF2 markers, for Vampir.

OTF2 keeps markers in a file beside the archive (``DIR/traces.marker``), which a tool
may rewrite after the trace was made; Vampir lists them and draws each on the timeline
row of its scope. One marker per anomaly of ``analysis.json``:

- group ``perfvar``; category: the anomaly's kind and its severity
  (``slow_segment high``), or the kind alone for the informational kinds
  (``migrated``, ``shared_cpu``: severity NONE). One OTF2 marker definition per
  category, as OTF2's tools want a category to have one severity.
- severity from the anomaly's relative cost: ``excess_rel`` (slow_segment,
  slow_phase), ``shift_rel`` (slow_core), ``lost_fraction`` (noisy_core): LOW below
  5 %, MEDIUM below 20 %, HIGH from 20 % on.
- time: a slow_phase's window; the whole trace for the others, which judge the whole
  run. The C tool converts ns since the trace's origin into the trace's ticks.
- scope: the rank's master thread (its first location, thread 0 as the trace reader
  numbers threads); a thread the anomaly names (``migrated``) its own location.
- text: the sentence the text report gives for it, with its delay cost where it
  was measured.

The findings apart from the headline are markers too, each in a category of its own
so Vampir can show or hide them together:

- a minor finding (its delay cost below the threshold): category ``minor <kind>``,
  severity LOW whatever its relative cost, text ``minor: <sentence>; delay cost``;
- a consequence of waiting (a slow segment that follows its rank's longer waits):
  category ``consequence of waiting``, severity NONE, on the waiting rank's master
  thread, its text the analysis's ("rank 0's S3 +108 % after waiting 11.8 ms for
  rank 1 in MPI_Allreduce") followed by its cause: the cause rank's headline
  findings (their categories, as Vampir lists them) or that it has none;
- a consequence of time off the CPU (a slower core or segment that the rank's
  measured time off its CPU explains): category ``consequence of time off the
  CPU``, severity NONE, on the rank's master thread, followed by its own noisy
  core's category;
- a consequence of a shared CPU (what a rank whose CPU other ranks ran on showed):
  category ``consequence of a shared CPU``, severity NONE, on the rank's master
  thread.

The file is written by ``perfvar-markers`` (C, installed with perfvar's programs),
which replaces every marker of group ``perfvar`` and keeps those of other groups, so
analysing again leaves one set. Not thread-safe (it runs a program on the trace).
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Optional

from perfvar._spec import (
    MARKER_FIELDS,
    MARKER_GROUP,
    MARKER_SCOPE_ID_SEPARATOR,
    MARKER_SEPARATOR,
    MARKER_WHOLE_RUN,
    MarkerScope,
    MarkerSeverity,
)
from perfvar.detect import describe, is_verdict, size, subject
from perfvar.detect.finding import PLACEMENT
from perfvar.installation import find_tool
from perfvar.read.otf2 import rank_location_ids
from perfvar.result import Analysis, Consequence, Finding
from perfvar.units import fmt_ns
from perfvar.verdict.headline import after_waiting
from perfvar.verdict.time_slicing import SHARED_CPU

TOOL = "perfvar-markers"
GROUP = MARKER_GROUP  # the group perfvar-markers replaces (its default: none is passed)
MINOR_SEVERITY = MarkerSeverity.LOW
CONSEQUENCE = "consequence of waiting"  # its category; severity NONE
SYMPTOM = "consequence of time off the CPU"  # its category; severity NONE
TIME_SLICED = "consequence of a shared CPU"  # its category; severity NONE
# (upper bound of the relative cost, severity), in order; above the last: HIGH.
SEVERITY_STEPS = ((0.05, MarkerSeverity.LOW), (0.20, MarkerSeverity.MEDIUM))


def marker_tool() -> Optional[str]:
    """perfvar-markers, where perfvar.installation.find_tool finds it."""
    return find_tool(TOOL)


def severity(anomaly: Finding) -> str:
    """NONE for an informational kind; else LOW, MEDIUM or HIGH by the relative cost
    (LOW when the evidence gives none)."""
    if not is_verdict(anomaly):
        return MarkerSeverity.NONE
    cost = size(anomaly)
    if cost is None:
        return MarkerSeverity.LOW
    for bound, name in SEVERITY_STEPS:
        if abs(cost) < bound:
            return name
    return MarkerSeverity.HIGH


def category(anomaly: Finding, sev: str) -> str:
    if sev == MarkerSeverity.NONE:
        return anomaly.kind
    return f"{anomaly.kind} {sev.lower()}"


def minor_category(anomaly: Finding) -> str:
    """The category of a minor finding: ``minor <kind>`` (severity MINOR_SEVERITY)."""
    return f"minor {anomaly.kind}"


def cost_words(anomaly: Finding) -> str:
    """'; delay cost 1.1 s (22.0% of wall time x ranks)' where it was measured."""
    if anomaly.cost_ns is None:
        return ""
    share = anomaly.cost_share
    of = ""
    if share is not None:  # as the text report writes it
        of = f" ({100 * share:.{2 if 100 * share < 1 else 1}f}% of wall time x ranks)"
    return f"; delay cost {fmt_ns(anomaly.cost_ns)}{of}"


def consequence_text(result: Analysis, c: Consequence) -> str:
    """A consequence's sentence and where its cause is marked: the cause rank's
    headline findings by category, its minor ones, or that no finding names it."""
    cause = c.cause_rank
    text = c.text
    if c.cause == SHARED_CPU:
        return f"{text}; reported under that sharing, not as an anomaly"
    if cause is None:
        return f"{text}; reported under its cause, not as an anomaly"
    head = [
        category(a, severity(a))
        for a in result.anomalies
        if a.rank == cause and is_verdict(a)
    ]
    minor = [minor_category(a) for a in result.minor if a.rank == cause]
    if head:
        where = f"rank {cause}'s marker(s) {', '.join(dict.fromkeys(head))}"
    elif minor:
        where = f"rank {cause}'s marker(s) {', '.join(dict.fromkeys(minor))}"
    else:
        where = f"rank {cause}, which no finding names"
    return f"{text}; caused by {where}"


def rank_locations(anchor: str) -> dict[int, list[int]]:
    """Each rank's location ids, thread 0 first, from the trace's definitions, ranks
    and threads told as the trace reader tells them (read.otf2.rank_location_ids:
    the definitions the analysis read, not read again)."""
    return rank_location_ids(os.path.dirname(anchor) or ".")


def _one_line(text: str) -> str:
    return " ".join(text.replace(MARKER_SEPARATOR, " ").splitlines())


def _location(loc: int) -> str:
    """The scope of one location: LOCATION:<id>."""
    return f"{MarkerScope.LOCATION}{MARKER_SCOPE_ID_SEPARATOR}{loc}"


def _line(cat: str, sev: str, window: tuple[str, str], scope: str, text: str) -> str:
    """One input line of perfvar-markers, its fields in the order src/spec gives."""
    start_ns, end_ns = window
    fields = {
        "category": cat,
        "severity": sev,
        "start_ns": start_ns,
        "end_ns": end_ns,
        "scope": scope,
        "text": text,
    }
    return MARKER_SEPARATOR.join(fields[name] for name in MARKER_FIELDS)


def _scope(a: Finding, locs: list[int]) -> str:
    """The rank's master thread, or the thread a ``migrated`` finding names."""
    loc = locs[0]
    thread = (a.evidence or {}).get("thread") if subject(a.kind) == PLACEMENT else None
    if isinstance(thread, int) and thread > 0:
        loc = locs[min(thread, len(locs) - 1)]
    return _location(loc)


def _window(a: Finding) -> tuple[str, str]:
    """(start, end) ns since the trace's origin, "-" for the whole run."""
    if a.start_ns is not None and a.end_ns is not None:
        return repr(float(a.start_ns)), repr(float(a.end_ns))
    return MARKER_WHOLE_RUN, MARKER_WHOLE_RUN


def marker_lines(result: Analysis, locations: dict[int, list[int]]) -> list[str]:
    """perfvar-markers' input for the findings of ``result``: category, severity,
    start and end (ns since the trace's origin, "-": the trace's start or end), scope
    and text, tab-separated. The headline anomalies first (in their order, by delay
    cost), then the minor findings, then the consequences of waiting. Findings of a
    rank without a location are left out."""
    labels = result.labels()
    lines = []
    for a in result.anomalies:
        locs = locations.get(a.rank)
        if not locs:
            continue
        sev = severity(a)
        text = _one_line(describe(a, labels) + cost_words(a))
        lines.append(_line(category(a, sev), sev, _window(a), _scope(a, locs), text))
    for a in result.minor:
        locs = locations.get(a.rank)
        if not locs:
            continue
        text = _one_line(f"minor: {describe(a, labels)}{cost_words(a)}")
        scope = _scope(a, locs)
        lines.append(_line(minor_category(a), MINOR_SEVERITY, _window(a), scope, text))
    for c in result.consequences:
        locs = locations.get(c.rank)
        if not locs:
            continue
        text = _one_line(consequence_text(result, c))
        whole = (MARKER_WHOLE_RUN, MARKER_WHOLE_RUN)
        scope = _location(locs[0])
        kind = (
            TIME_SLICED
            if c.cause == SHARED_CPU
            else CONSEQUENCE if after_waiting(c) else SYMPTOM
        )
        lines.append(_line(kind, MarkerSeverity.NONE, whole, scope, text))
    return lines


def write_markers(result: Analysis) -> Optional[str]:
    """Replace the perfvar markers of the analysed trace with one per finding of
    ``result`` (marker_lines; none: the old ones are removed). Returns the marker
    file, or None when nothing was written: perfvar-markers is not installed
    (silently: a source checkout without a build) or failed (one warning line on
    stderr; the analysis stands)."""
    tool = marker_tool()
    if tool is None:
        return None
    anchor = os.path.join(result.trace, "traces.otf2")
    try:
        lines = marker_lines(result, rank_locations(anchor))
        run = subprocess.run(
            [tool, anchor],
            input="".join(f"{line}\n" for line in lines),
            capture_output=True,
            text=True,
            check=False,
        )
        why = (run.stderr or run.stdout).strip().splitlines() if run.returncode else []
    except Exception as exc:  # markers are an extra: never lose the analysis for them
        why = [f"{type(exc).__name__}: {exc}"]
    if why:
        sys.stderr.write(f"perfvar: warning: OTF2 markers not written: {why[-1]}\n")
        return None
    return anchor[: -len(".otf2")] + ".marker"
