"""Render an analysis result (see perfvar.analysis) as a terminal report.

Sections: header, ranks table, segment classes table (listed_classes), anomalies
(the machine's) and load imbalance (the code's) with their evidence in words,
warnings, and a final ``verdict:`` line. Every duration carries its unit (ns, us, ms
or s, chosen per value). Pure functions; thread-safe.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Optional

from perfvar.detect import (
    as_json,
    describe,
    is_code,
    is_transient,
    names_rank,
    phrase,
    subject,
)
from perfvar.detect.finding import CPU, GROUP
from perfvar.detect.levels import member_ranks, where_level
from perfvar.result import Analysis, Finding, RankRow, SegmentClass
from perfvar.units import compact_ranges, fmt_bytes, fmt_ns, fmt_pct, fmt_plus_minus
from perfvar.verdict import time_slicing


def _table(header: Sequence[str], rows: list[Sequence[str]], right: set[int]) -> list:
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row)]

    def line(cells: Sequence[str]) -> str:
        out = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths))
        ]
        return "  ".join(out).rstrip()

    return [line(header)] + [line(r) for r in rows]


def _hz(hz: float) -> str:
    for scale, unit in ((1e9, "GHz"), (1e6, "MHz"), (1e3, "kHz")):
        if hz >= scale:
            return f"{hz / scale:.3f} {unit}"
    return f"{hz:.0f} Hz"


def _cycles_line(ranks: list[RankRow]) -> Optional[str]:
    """The cycle counter's flush-0 calibration over the ranks that had it, as ranges;
    None when no rank could read the counter (the clock line already says why)."""
    got = [
        (r.rank, r.calibration_cycles or {})
        for r in ranks
        if (r.calibration_cycles or {}).get("available")
    ]
    if not got:
        return None

    def span(key: str) -> str:
        vals = [c[key] for _, c in got if c.get(key) is not None]
        if not vals:
            return "?"
        lo, hi = min(vals), max(vals)
        return f"{lo:.0f}" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f}"

    line = (
        f"cycle counter ({got[0][1].get('counter') or '?'}), flush 0, "
        f"{_plural(len(got), 'rank')}: t_min {span('t_min_cycles')} cycles, "
        f"t_diff {span('t_diff_cycles')} cycles (reported; segments are judged "
        "by the wall clock)"
    )
    partial = [r for r, c in got if c.get("status") != "complete"]
    if partial:
        line += f"; not final on rank(s) {compact_ranges(partial)}"
    return line


def _states(r: RankRow) -> str:
    """The cache states of a rank that have t_min and t_diff; partial ones say so."""
    out = []
    for st in r.calibration_states or []:
        if st["t_min_ns"] is None or st["t_diff_ns"] is None:
            continue
        partial = st["status"] not in ("complete", None)
        out.append(st["label"] + (f"({st['status']})" if partial else ""))
    return ",".join(out) or "-"


def _segment_state(s: SegmentClass) -> str:
    states = s.cache_states or {}
    if len(states) > 1:  # ranks judged with different states (different caches)
        return "/".join(f"{k}:{v}" for k, v in states.items())
    return s.cache_state or "-"


def _plural(n: int, word: str, plural: str = "") -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def off_cpu_words(cpu_time: Optional[dict[str, Any]]) -> str:
    """ "48.0% (1900 cs)": a rank's measured share off its CPU and its context
    switches; "-" where the counters did not measure it."""
    if not cpu_time:
        return "-"
    share = fmt_pct(cpu_time["off_cpu_fraction"], signed=False)
    cs = cpu_time.get("context_switches")
    return share + (f" ({cs:.0f} cs)" if cs is not None else "")


def _finding(a: Finding) -> str:
    """A short phrase for the verdict line."""
    return phrase(a)


def _cost(a: Finding) -> str:
    """'; delay cost X (Y % of wall x ranks)' where it was measured."""
    if a.cost_ns is None:
        return ""
    share = a.cost_share
    of = f" ({fmt_pct(share, signed=False)} of wall time x ranks)" if share else ""
    return f"; delay cost {fmt_ns(a.cost_ns)}{of}"


def _minor_lines(result: Analysis, labels: dict[str, str]) -> list[str]:
    """The minor findings (below --min-cost) and the consequences (of waiting, of
    time off the CPU)."""
    out = []
    minor = result.minor
    if minor:
        floor = result.params.min_cost
        below = f" below {fmt_pct(floor, signed=False)}" if floor is not None else ""
        out += [
            "",
            f"Minor (steady differences whose delay cost is{below}; "
            "they name no rank)",
        ]
        out += [f"- {describe(a, labels)}{_cost(a)}" for a in minor]
    consequences = result.consequences
    if consequences:
        out += [
            "",
            "Consequences of waiting or of time off the CPU (reported under their "
            "cause, not as anomalies)",
        ]
        out += [f"- {c.text}" for c in consequences]
    return out


def _ended_clause(result: Analysis) -> str:
    """'; rank R ended early (how, at T s)' when the job did not finish."""
    ended = result.ended
    first = ended.first_to_end
    if first is None:
        return ""
    r = next(x for x in ended.ranks if x.rank == first)
    return f"; rank {first} ended early ({r.how}, at {r.end_s:.3f} s)"


def _ended_lines(result: Analysis) -> list[str]:
    """The section on how a job that did not finish ended, rank by rank."""
    ended = result.ended
    if not ended.ended_early_ranks:
        return []
    out = [
        "",
        "The job did not finish: its trace was rebuilt from the records "
        "(each rank's trace runs up to its end)",
    ]
    for r in ended.ranks:
        where = " inside an MPI call" if r.in_mpi_call else ""
        first = "  <- first to end" if r.rank == ended.first_to_end else ""
        out.append(f"- rank {r.rank}: {r.how} at {r.end_s:.3f} s{where}{first}")
    return out


def _by_rank(findings: list[Finding]) -> list[str]:
    """ "node n07 (64 ranks 448-511: what)" per finding of a node or socket, then
    "rank 1 (host h, cpu 3: what; what)" per rank of the others, in rank order."""
    groups = [a for a in findings if subject(a.kind) == GROUP]
    parts = [f"{where_level(as_json(a))[:-1]}: {_finding(a)})" for a in groups]
    findings = [a for a in findings if subject(a.kind) != GROUP]
    for rank in sorted({a.rank for a in findings}):
        mine = [a for a in findings if a.rank == rank]
        host = mine[0].host if mine[0].host is not None else "?"
        cpu = next((a.cpu for a in mine if a.cpu is not None), "?")
        what = "; ".join(_finding(a) for a in mine)
        parts.append(f"rank {rank} (host {host}, cpu {cpu}: {what})")
    return parts


def _sharing_ranks(result: Analysis) -> list[int]:
    """The ranks whose CPU other ranks ran on too (shared_cpu findings naming other
    ranks): what they showed is time-slicing (perfvar.verdict.time_slicing)."""
    return sorted(
        a.rank
        for a in result.anomalies
        if subject(a.kind) == CPU and time_slicing.others_on_its_cpu(a.rank, a.evidence)
    )


def verdict_line(result: Analysis) -> str:
    """The last line: the anomalous ranks and what they are, or that there are none;
    how much was judged; the transients (shifts that came and went), apart."""
    summ = result.summary
    judged = summ.n_segment_classes_judged
    scope = (
        f"{_plural(summ.n_ranks, 'rank')}, "
        f"{_plural(judged, 'segment class', 'segment classes')} judged"
    )
    unreadable = ""
    if summ.unreadable_ranks:
        unreadable = f"; rank(s) {compact_ranges(summ.unreadable_ranks)} unreadable"
    minor = summ.minor_ranks
    if minor:  # named apart: below the delay cost a verdict needs
        unreadable += f"; minor: rank(s) {compact_ranges(minor)}"
    found = [a for a in result.anomalies if names_rank(a)]
    transients = [a for a in result.anomalies if is_transient(a)]
    if transients:  # came and went: a phase or the host, named apart
        unreadable += f"; transient: {'; '.join(_by_rank(transients))}"
    code = [a for a in result.anomalies if is_code(a)]
    if code:  # more work on a rank: the program's, not an anomalous core
        unreadable += f"; load imbalance: {'; '.join(_by_rank(code))}"
    sharing = _sharing_ranks(result)
    if sharing:  # their findings are consequences of the time-slicing
        unreadable += (
            f"; rank(s) {compact_ranges(sharing)} shared a CPU with other ranks, "
            "not judged: run one rank per core"
        )
    ended = _ended_clause(result)
    if found:
        parts = _by_rank(found)
        levels = Counter(a.evidence["level"] for a in found if subject(a.kind) == GROUP)
        nouns = [_plural(n, f"anomalous {level}") for level, n in levels.items()]
        if len(parts) > sum(levels.values()):
            nouns.append(_plural(len(parts) - sum(levels.values()), "anomalous rank"))
        noun = ", ".join(nouns)
        return f"verdict: {noun}: {'; '.join(parts)} ({scope}{unreadable}){ended}"
    if summ.n_segment_classes_judged == 0:
        reasons = ", ".join(f"{v} {k}" for k, v in summ.judgements.items())
        why = f": {reasons}" if reasons else ": no segment samples"
        return f"verdict: nothing could be judged ({scope}{why}{unreadable}){ended}"
    return f"verdict: no anomalous rank found ({scope}{unreadable}){ended}"


def _clock_remarks(clock: dict[str, Any], n_ranks: int) -> list[str]:
    """The clock notes (naming ranks unless all share one) and a stated frequency the
    measurement contradicts, one line each."""
    lines = []
    notes = clock.get("notes") or []
    for entry in notes:
        ranks = entry.get("ranks") or []
        who = (
            "all ranks"
            if len(notes) == 1 and len(ranks) >= n_ranks
            else f"{_plural(len(ranks), 'rank')} ({compact_ranges(ranks)})"
        )
        lines.append(f"clock note, {who}: {entry.get('note')}")
    svm = clock.get("stated_vs_measured")
    if svm:
        lines.append(
            f"clock frequency as stated ({svm.get('hz_method') or 'stated'}) "
            f"differs from the measured one by up to {svm['max_rel']:.1e} "
            f"(relative), above the measurement's error bound {svm['bound']:.1e}: "
            "ranks "
            f"{compact_ranges(svm['ranks'])}"
        )
    return lines


def _header_lines(result: Analysis) -> list[str]:
    """What was analysed: the trace, its size, the timer and the clock."""
    summ = result.summary
    out = [
        f"perfvar analysis of {result.trace}",
        f"{_plural(summ.n_ranks, 'rank')}, "
        f"{_plural(summ.n_segment_classes, 'segment class', 'segment classes')}, "
        f"timer {_hz(result.timer_resolution_hz)}, false discovery rate "
        f"{result.alpha:g}",
    ]
    clock = result.clock or {}
    if not clock.get("name"):
        return out
    err = clock.get("hz_rel_error")
    method = clock.get("hz_method") or "unknown method"
    read = f" ({clock['fenced_read']})" if clock.get("fenced_read") else ""
    line = f"clock {clock['name']}{read}: frequency {method}"
    if err:
        line += f" (relative error <= {err:.1e})"
    if clock.get("cycles_counter") is False:
        line += f"; no CPU-cycle counter: {clock.get('cycles_why') or 'unknown why'}"
    return out + [line] + _clock_remarks(clock, summ.n_ranks)


def _rank_row(r: RankRow, measured: bool) -> list[str]:
    """One rank's row of the ranks table (``measured``: with the off-CPU column)."""
    row = [
        str(r.rank),
        r.host if r.host is not None else "?",
        compact_ranges(r.cpus),
        fmt_ns(r.t_min_ns),
        fmt_ns(r.t_diff_ns),
        fmt_ns(r.timer_overhead_ns),
        _states(r),
        str(r.n_segments),
        fmt_pct(r.interrupted_fraction, signed=False),
    ]
    if measured:
        row.append(off_cpu_words(r.cpu_time))
    return row + [r.verdict + (" (migrated)" if r.migrated else "")]


# The ranks table lists, unless asked for all, every rank of a job of up to
# LISTED_RANKS ranks; beyond, the ranks whose verdict is not "ok" or that a finding
# names (minor ones too), the first LISTED_RANKS of them, and one line counting the
# rest by verdict: a row a rank would bury the findings of a job of thousands.
LISTED_RANKS = 32


def listed_ranks(result: Analysis, all_ranks: bool = False) -> list[RankRow]:
    """The rows of ``result.ranks`` the ranks table lists (see LISTED_RANKS)."""
    ranks = result.ranks
    if all_ranks or len(ranks) <= LISTED_RANKS:
        return ranks
    found = result.anomalies + result.minor
    named = {a.rank for a in found}
    # A node's or socket's ranks are its finding's: the node is listed by its first.
    under = {
        r
        for a in found
        if subject(a.kind) == GROUP
        for r in member_ranks(a.rank, a.evidence)
    } - named
    return [
        r
        for r in ranks
        if (r.verdict != "ok" or r.rank in named) and r.rank not in under
    ][:LISTED_RANKS]


# Beyond LISTED_RANKS ranks on more than one node, a table by node: the nodes with a
# rank not "ok" (the first LISTED_NODES), their ranks counted by verdict.
LISTED_NODES = 16


def nodes_of(result: Analysis) -> dict[str, list[RankRow]]:
    """host -> its rank rows, in rank order ("?" for ranks of unknown host)."""
    out: dict[str, list[RankRow]] = {}
    for r in sorted(result.ranks, key=lambda r: r.rank):
        out.setdefault(r.host if r.host is not None else "?", []).append(r)
    return out


def verdict_counts(rows: Sequence[RankRow]) -> Counter:
    """verdict -> how many of ``rows`` have it."""
    return Counter(r.verdict for r in rows)


def counts_words(counts: Counter) -> str:
    """ "998 ok, 2 noisy core": the most common first."""
    return ", ".join(f"{n} {what}" for what, n in counts.most_common())


def _node_lines(result: Analysis, all_ranks: bool) -> list[str]:
    """The nodes table of a job of many ranks on many nodes (LISTED_NODES)."""
    nodes = nodes_of(result)
    if all_ranks or len(result.ranks) <= LISTED_RANKS or len(nodes) < 2:
        return []
    rows = []
    for host, mine in nodes.items():
        verdicts = verdict_counts(mine)
        if set(verdicts) != {"ok"}:
            rows.append(
                [host, compact_ranges(r.rank for r in mine), counts_words(verdicts)]
            )
    out = ["Nodes"] + _table(["node", "ranks", "verdicts"], rows[:LISTED_NODES], {})
    ok = len(nodes) - len(rows)
    more = (
        f"{len(rows) - LISTED_NODES} more nodes with findings and "
        if len(rows) > LISTED_NODES
        else ""
    )
    return out + [f"... and {more}{ok} nodes all ok", ""]


def unlisted_ranks(result: Analysis, listed: list[RankRow]) -> Optional[str]:
    """The ranks a table leaves out, counted by verdict ("1000 more ranks: 998 ok,
    2 minor"); None when it lists them all."""
    shown = {r.rank for r in listed}
    rest = Counter(r.verdict for r in result.ranks if r.rank not in shown)
    if not rest:
        return None
    counts = counts_words(rest)
    return f"{sum(rest.values())} more ranks: {counts}"


def _unlisted_ranks_line(result: Analysis, listed: list[RankRow]) -> list[str]:
    """One line for the ranks the table leaves out, counted by verdict."""
    rest = unlisted_ranks(result, listed)
    if rest is None:
        return []
    return [
        f"... and {rest} (perfvar analyze --all-ranks lists them; analysis.json has "
        "them all)"
    ]


def _rank_lines(result: Analysis, all_ranks: bool = False) -> list[str]:
    """The ranks table (listed_ranks), its legend and the cycle counter's
    calibration."""
    measured = any(r.cpu_time for r in result.ranks)
    listed = listed_ranks(result, all_ranks)
    rows = [_rank_row(r, measured) for r in listed]
    header = ["rank", "host", "cpus", "t_min", "t_diff", "timer ovh", "cache states"]
    header += ["segments", "interrupted"] + (["off CPU"] if measured else [])
    header += ["verdict"]
    out = ["Ranks"] + _table(
        header, rows, right={0, 3, 4, 5, 7, 8, 9} if measured else {0, 3, 4, 5, 7, 8}
    )
    out += _unlisted_ranks_line(result, listed)
    out.append(
        "t_min/t_diff: flush 0. cache states: those calibrated (t_min and t_diff "
        "known); 'partial' ones are not final, 'borrowed' ones are the largest of "
        "the host's other ranks, or of a perfvar calibrate file (--calibration), this "
        "rank's own found none (the notes say which). interrupted: share of "
        "the compute time lost in segments the OS-noise filter took out."
        + (
            " off CPU: share of the time its counter reads covered (long compute "
            "segments and the calls between them, after MPI_Init) that the rank was "
            "off its CPU, "
            "wall time minus the task clock (PERFVAR_METRICS)."
            if measured
            else ""
        )
    )
    cycles = _cycles_line(result.ranks)
    return out + ([cycles] if cycles else [])


# The segment classes table lists, unless asked for all, the largest classes that
# hold this share of the compute time, and every class a finding names: a real code
# has tens of classes of a few us or ns each (CloverLeaf: 58, 25 of them under 1 us)
# that would bury the ones that matter.
LISTED_SHARE = 0.99


def _compute_ns(result: Analysis) -> float:
    """The compute time of all classes together (ns; 1 when none: a divisor)."""
    return sum(s.total_ns for s in result.segments) or 1.0


def _named_classes(result: Analysis) -> set[str]:
    """The ids of the classes the findings, minor ones and consequences speak of."""
    found = result.anomalies + result.minor + result.consequences
    return {f.segment for f in found if f.segment}


def listed_classes(result: Analysis, all_classes: bool = False) -> list[SegmentClass]:
    """The segment classes the text report lists (in analysis order: largest total
    first): every one, or those up to LISTED_SHARE of the compute time and those a
    finding names."""
    segments = result.segments
    if all_classes:
        return list(segments)
    named = _named_classes(result)
    whole = _compute_ns(result)
    listed, held = [], 0.0
    for s in segments:
        if held < LISTED_SHARE * whole or s.id in named:
            listed.append(s)
        held += s.total_ns
    return listed


def _unlisted_line(result: Analysis, listed: list[SegmentClass]) -> list[str]:
    """How many classes the table left out and how much compute time they hold."""
    shown = {s.id for s in listed}
    rest = [s for s in result.segments if s.id not in shown]
    if not rest:
        return []
    share = sum(s.total_ns for s in rest) / _compute_ns(result)
    return [
        f"... and {_plural(len(rest), 'more class', 'more classes')}, "
        f"{fmt_pct(share, signed=False)} of the compute time (perfvar analyze "
        "--all-classes lists them; analysis.json has them all)"
    ]


def _segment_lines(result: Analysis, all_classes: bool = False) -> list[str]:
    """The segment classes table and its legend."""
    if not result.segments:
        return ["Segment classes", "(none: no perfvar:segment samples in the trace)"]
    listed = listed_classes(result, all_classes)
    rows = [
        [
            s.id,
            str(s.n),
            str(s.n_ranks),
            fmt_ns(s.median_ns),
            fmt_bytes(s.context_bytes),
            _segment_state(s),
            fmt_plus_minus(s.resolution_rel),
            s.label,
        ]
        for s in listed
    ]
    header = ["id", "n", "ranks", "median", "moved", "state", "resolves", "from -> to"]
    return (
        ["Segment classes"]
        + _table(header, rows, right={1, 2, 3, 4, 6})
        + _unlisted_line(result, listed)
        + [
            "moved: bytes the MPI call before the segment moved (median); state: the "
            "cache state whose t_min/t_diff judged it (the largest flush <= moved; "
            "unknown -> 0; nearest calibrated one if that one is not); resolves: "
            "half the widest 95 % interval of a rank's excess over the blocks of the "
            "run, the smallest difference this run could tell in the class ('-': "
            "not tested)."
        ]
    )


def _finding_lines(result: Analysis) -> list[str]:
    """The headline findings (ranked by delay cost), the minor ones, the consequences
    of waiting, how a job that did not finish ended, and the warnings."""
    labels = {s.id: s.label for s in result.segments}
    machine = [a for a in result.anomalies if not is_code(a)]
    code = [a for a in result.anomalies if is_code(a)]
    out = ["Anomalies (the machine: cores and CPUs)"]
    if machine:
        out += [f"- {describe(a, labels)}{_cost(a)}" for a in machine]
    else:
        out.append("(none)")
    if code:
        out += ["", "Load imbalance (the code: more work on a rank, not a slower core)"]
        out += [f"- {describe(a, labels)}{_cost(a)}" for a in code]
    out += _minor_lines(result, labels)
    out += _ended_lines(result)
    if result.warnings:
        out += ["", "Warnings"] + [f"- {w}" for w in result.warnings]
    return out


def render(result: Analysis, all_classes: bool = False, all_ranks: bool = False) -> str:
    """The whole report as one string (ends with the verdict line and a newline);
    ``all_classes``: list every segment class, not only listed_classes';
    ``all_ranks``: every rank, not only listed_ranks'."""
    out = _header_lines(result) + [""]
    out += _rank_lines(result, all_ranks) + [""]
    out += _node_lines(result, all_ranks)
    out += _segment_lines(result, all_classes) + [""]
    out += _finding_lines(result) + [""]
    out += judged_share_lines(result)
    out.append(verdict_line(result))
    return "\n".join(out) + "\n"


def judged_share_lines(result: Analysis) -> list[str]:
    """How much of the compute time the verdict could judge, and in how many
    families of classes merged because they differ only by helper frames."""
    summ = result.summary
    share = summ.judged_compute_share
    if share is None:
        return []
    families = summ.n_segment_families or 0
    merged = (
        f"; {_plural(families, 'family', 'families')} of classes that differ only by "
        "helper routines judged as one class each"
        if families
        else ""
    )
    return [f"judged: {100 * share:.1f} % of the compute time{merged}"]
