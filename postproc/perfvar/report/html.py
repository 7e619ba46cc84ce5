"""Write an analysis as one self-contained HTML page (DIR/report.html by default).

The page holds the verdicts in words (the sentences of perfvar.report.text): the
headline findings ranked by their delay cost (time, and share of wall time x ranks),
the minor findings apart, the consequences of waiting under their cause, and the
share of the compute time the verdict judged; then the ranks, the wait states per
rank (how long each waited and for whom, how long the others waited for it, as a
table and a bar plot), a rank x segment-class heat map of the shifts against the
peers, the distribution and the course over the run of the largest segment classes
per rank (the anomalous ranks highlighted, slow phases shaded), the compute time
lost to interruptions per CPU and by length, the calibration of every rank per
cache state, the segment classes and the warnings. Plots are plotly figures
(perfvar.report.plots); plotly.js is inlined once, so the file opens anywhere
without a network (about 5 MB whatever the trace). The samples come from the
filtered cells (perfvar.stats.model.Prepared); without them (a report from analysis.json
alone) those plots are left out and the page says so. Durations carry their unit.
Needs plotly. Pure apart from :func:`write_html`, which raises OSError when the file
cannot be written.
"""

from __future__ import annotations

import html
import os
from collections import Counter
from collections.abc import Sequence
from typing import Any, Optional

from perfvar._spec import RunJson
from perfvar.detect import describe, is_code, is_verdict, names_rank, subject
from perfvar.detect import word as kind_word
from perfvar.detect.finding import NOISE
from perfvar.detect.noisy_core import RankNoise, interpretation, rank_noise
from perfvar.read.cache_state import label_order
from perfvar.report.node_view import listed_nodes, node_heatmap
from perfvar.report.plots import (
    MAX_PEER_LINES,
    MIN_DRAWN,
    calibration_figure,
    classes_to_plot,
    counter_timeline_figure,
    distribution_figure,
    noise_by_cpu_figure,
    noise_lengths_figure,
    rank_colors,
    shift_heatmap,
    timeline_figure,
    waits_by_rank,
    waits_figure,
)
from perfvar.report.text import (
    LISTED_RANKS,
    counts_words,
    judged_share_lines,
    listed_ranks,
    off_cpu_words,
    unlisted_ranks,
    verdict_line,
)
from perfvar.result import Analysis, Consequence, Finding, RankRow
from perfvar.stats.model import Prepared
from perfvar.units import compact_ranges, fmt_bytes, fmt_ns, fmt_plus_minus
from perfvar.verdict.headline import after_waiting
from perfvar.verdict.time_slicing import SHARED_CPU
from perfvar.verdict.wait_summary import TOP_CAUSES

REPORT_FILE = "report.html"
MAX_CLASSES = 8  # segment classes drawn (distributions, timelines); the rest listed
PATTERN_WORDS = {
    "late_sender": "late sender",
    "late_receiver": "late receiver",
    "wait_nxn": "wait at N x N",
    "wait_barrier": "wait at barrier",
    "wait_rooted": "rooted collective",
}
# No plotly logo: it is a link to a web site, and the page must need no network.
PLOT_CONFIG = {"displaylogo": False, "responsive": True}

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
  color: #222; margin: 0; }
header, main { max-width: 1280px; margin: 0 auto; padding: 0 24px; }
header { padding-top: 16px; }
nav { position: sticky; top: 0; background: #fff; border-bottom: 1px solid #ddd;
  padding: 6px 24px; z-index: 10; font-size: 13px; }
nav a { margin-right: 14px; color: #1f4e9c; text-decoration: none; }
h1 { font-size: 22px; margin: 4px 0 8px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #eee; }
.meta { color: #555; font-size: 13px; margin: 2px 0; }
.verdict { font-size: 16px; font-weight: 600; padding: 10px 14px;
  border-left: 5px solid #2ca02c; background: #f3faf3; }
.verdict.found { border-color: #d62728; background: #fdf3f3; }
ul.anomalies li { margin: 6px 0; }
.kind { display: inline-block; font-size: 12px; font-weight: 600; color: #fff;
  background: #d62728; border-radius: 3px; padding: 0 6px; margin-right: 6px; }
.kind.info { background: #777; }
.kind.minor { background: #e08a1e; }
.kind.waited { background: #4a78b8; }
.kind.off-cpu { background: #8a6d3b; }
.cost { display: inline-block; font-size: 12px; font-weight: 600; color: #7a1a1a;
  background: #fbe3e3; border-radius: 3px; padding: 0 6px; margin-right: 6px; }
.cost.small { color: #6b4a12; background: #fbf0dc; }
h3 { font-size: 15px; margin: 18px 0 4px; }
ul.minor li, ul.consequences li { margin: 5px 0; }
td.bar { min-width: 120px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
th, td { border-bottom: 1px solid #e5e5e5; padding: 3px 10px; text-align: left;
  vertical-align: top; }
th { background: #f5f5f5; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.anomalous td { background: #fdecec; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px;
  margin-right: 4px; }
.note { color: #555; font-size: 13px; max-width: 980px; }
.figure { margin: 8px 0 18px; }
code { font-size: 12px; }
"""


def default_path(result: Analysis, json_path: Optional[str] = None) -> str:
    """DIR/report.html, or report.html beside ``json_path`` when it is given."""
    where = os.path.dirname(os.path.abspath(json_path)) if json_path else None
    return os.path.join(where or result.trace, REPORT_FILE)


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _pct(x: Optional[float], digits: int = 2) -> str:
    return "n/a" if x is None else f"{100 * x:.{digits}f}%"


def _table(
    header: Sequence[str],
    rows: list[Sequence[str]],
    numeric: Sequence[int] = (),
    classes: Optional[Sequence[str]] = None,
) -> str:
    """An HTML table; cells are HTML already (escape text with _e)."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        cls = f' class="{classes[i]}"' if classes and classes[i] else ""
        cells = "".join(
            f'<td class="num">{c}</td>' if j in numeric else f"<td>{c}</td>"
            for j, c in enumerate(row)
        )
        body.append(f"<tr{cls}>{cells}</tr>")
    rows_html = "".join(body)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows_html}</tbody></table>"


class _Figures:
    """Turns plotly figures into <div>s; plotly.js itself is inlined once, in the
    page head (pio.to_html with include_plotlyjs=False)."""

    def div(self, fig: Any, name: str, caption: str = "") -> str:
        import plotly.io as pio

        if fig is None:
            return ""
        plot = pio.to_html(
            fig,
            include_plotlyjs=False,
            full_html=False,
            config=PLOT_CONFIG,
            div_id=f"fig-{name}",
        )
        note = f'<p class="note">{caption}</p>' if caption else ""
        return f'<div class="figure" data-figure="{_e(name)}">{plot}{note}</div>'


def _noisy(rank_row: RankRow) -> bool:
    """Whether analysis.json's row of a rank lists a finding of its CPU's
    interruptions (a noisy core) among its anomalies."""
    return any(subject(kind) == NOISE for kind in rank_row.anomalies)


def _header(result: Analysis) -> str:
    run = result.run or {}  # run.json as the run wrote it
    summ = result.summary
    lines = [f"<h1>perfvar report: {_e(os.path.basename(result.trace))}</h1>"]
    lines.append(f'<p class="meta">trace <code>{_e(result.trace)}</code></p>')
    if run.get(RunJson.COMMAND):
        command = _e(run[RunJson.COMMAND])
        lines.append(f'<p class="meta">command <code>{command}</code></p>')
    facts = [
        f"{summ.n_ranks} ranks",
        f"{summ.n_segment_classes} segment classes "
        f"({summ.n_segment_classes_judged} judged)",
        f"false discovery rate {result.alpha:g}",
    ]
    if run.get(RunJson.START_UTC):
        facts.insert(0, f"started {run[RunJson.START_UTC]}")
    if run.get(RunJson.MPI_LIBRARY):
        facts.append(str(run[RunJson.MPI_LIBRARY]).split(",")[0])
    clock = result.clock or {}
    if clock.get("name"):
        facts.append(
            f"clock {clock['name']} ({clock.get('hz_method') or 'frequency as stated'})"
        )
    lines.append(f'<p class="meta">{_e("; ".join(facts))}</p>')
    lines.append(f'<p class="meta">{_e(result.generated_by)}</p>')
    return "\n".join(lines)


def _share(x: Optional[float]) -> str:
    """A share (0.0012) as a percentage with two significant digits (0.12 %)."""
    if x is None:
        return "n/a"
    v = 100 * x
    return f"{v:.1f} %" if v >= 10 else f"{v:.2g} %"


def cost_html(a: Finding, small: bool = False) -> str:
    """The finding's delay cost as a badge ("delay cost 1.1 s = 22 % of wall time x
    ranks"); "" where it was not measured (one rank, an unsynchronised timeline,
    an informational kind)."""
    if a.cost_ns is None:
        return ""
    share = a.cost_share
    of = f" = {_share(share)} of wall time x ranks" if share is not None else ""
    cls = "cost small" if small else "cost"
    title = (
        "delay cost: the waiting this finding caused on the other ranks (Boehme et "
        "al.), summed over the run"
    )
    return (
        f'<span class="{cls}" data-cost-ns="{a.cost_ns:.0f}" title="{title}">'
        f"delay cost {_e(fmt_ns(a.cost_ns))}{_e(of)}</span>"
    )


def _finding_id(i: int) -> str:
    return f"finding-{i}"


def _finding_items(result: Analysis, labels: dict[str, str], code: bool) -> list[str]:
    """The headline findings of the machine (``code`` False) or of the code (load
    imbalance), in the order of analysis.json, each with its badge, cost and
    sentence; ids by the finding's place in analysis.json."""
    items = []
    for i, a in enumerate(result.anomalies):
        if is_code(a) != code:
            continue
        informative = not is_verdict(a)
        word = kind_word(a)
        cls = "kind info" if informative else "kind"
        badge = f'<span class="{cls}">{_e(word)}</span>'
        items.append(
            f'<li class="anomaly" id="{_finding_id(i)}" data-kind="{_e(a.kind)}" '
            f'data-rank="{a.rank}" data-segment="{_e(a.segment or "")}">'
            f"{badge}{cost_html(a)}{_e(describe(a, labels))}</li>"
        )
    return items


def _headline(result: Analysis, labels: dict[str, str]) -> str:
    """The headline findings, ranked by delay cost (the order of analysis.json): the
    machine's, then the code's (load imbalance) under a heading of their own."""
    items = _finding_items(result, labels, code=False)
    code = _finding_items(result, labels, code=True)
    summ = result.summary
    known = summ.cost_known
    if known is None:  # an analysis made before delay costs
        order = ""
    elif known:
        order = (
            '<p class="note">Ranked by delay cost: the waiting each finding caused '
            "on the other ranks over the run, and that as a share of wall time x "
            "ranks. A finding must cost at least "
            f"{_e(_share(result.params.min_cost))} of wall time "
            "x ranks to name its rank; cheaper ones are listed as minor.</p>"
        )
    else:
        order = (
            '<p class="note">No delay cost could be measured (one rank, or ranks '
            "whose MPI calls are not on one synchronised time line): every finding "
            "stays in the headline, as the detectors named it.</p>"
        )
    machine = f'<ul class="anomalies">{"".join(items)}</ul>' if items else ""
    if code:
        machine += (
            '<h3 id="the-code">Load imbalance (the code)</h3>'
            '<p class="note">Ranks that do more work than their peers in a segment '
            "class: their segments ran slower while their fixed-work probes (or the "
            "instructions counted) measured their cores at their peers' speed. The "
            "program's finding, not an anomalous core.</p>"
            f'<ul class="anomalies">{"".join(code)}</ul>'
        )
    return f"{machine}{order}"


def _minor(result: Analysis, labels: dict[str, str]) -> str:
    """The minor findings: verdict kinds whose delay cost is below the threshold."""
    minor = result.minor
    if not minor:
        return ""
    floor = result.params.min_cost
    below = f" below {_share(floor)} of wall time x ranks" if floor is not None else ""
    items = []
    for a in minor:
        word = kind_word(a)
        items.append(
            f'<li class="minor" data-kind="{_e(a.kind)}" data-rank="{a.rank}" '
            f'data-segment="{_e(a.segment or "")}">'
            f'<span class="kind minor">minor {_e(word)}</span>'
            f"{cost_html(a, small=True)}{_e(describe(a, labels))}</li>"
        )
    return (
        '<h3 id="minor-findings">Minor</h3>'
        f'<p class="note">Steady differences whose delay cost is{_e(below)}: real, '
        "but they cost the job too little to name their rank.</p>"
        f'<ul class="minor">{"".join(items)}</ul>'
    )


def _cause_link(result: Analysis, cause: Optional[int]) -> str:
    """' Its cause: rank 1, <a>slow segment S0</a>.' pointing at the cause rank's
    headline findings (or its minor ones), or saying it has none."""
    if cause is None:
        return ""
    links = [
        f'<a href="#{_finding_id(i)}">'
        f"{_e(kind_word(a))}"
        f"{' ' + _e(a.segment) if a.segment else ''}</a>"
        for i, a in enumerate(result.anomalies)
        if a.rank == cause and is_verdict(a)
    ]
    if links:
        return f" Its cause: rank {cause}'s {', '.join(links)}."
    if any(a.rank == cause for a in result.minor):
        return (
            f' Its cause: rank {cause}\'s <a href="#minor-findings">minor '
            "findings</a>."
        )
    return f" Rank {cause} made it wait; no finding names rank {cause}."


def _consequence_item(result: Analysis, c: Consequence) -> str:
    """One consequence as a list item: of waiting (with its cause rank's link) or of
    its own rank's time off the CPU."""
    cause = c.cause_rank
    attrs = (
        f'class="consequence" data-rank="{c.rank}" '
        f'data-segment="{_e(c.segment or "")}" '
        f'data-cause-rank="{"" if cause is None else cause}"'
    )
    if c.cause == SHARED_CPU:
        shared = '<span class="kind off-cpu">shared CPU</span>'
        return f"<li {attrs}>{shared}{_e(c.text)}.</li>"
    if not after_waiting(c):
        off = '<span class="kind off-cpu">off its CPU</span>'
        return f"<li {attrs}>{off}{_e(c.text)}.</li>"
    peers = c.figures.get("peers_waiting_ns")
    vs = f" (its peers waited {fmt_ns(peers)} there)" if peers is not None else ""
    return (
        f'<li {attrs}><span class="kind waited">after waiting</span>'
        f"{_e(c.text)}{_e(vs)}.{_cause_link(result, cause)}</li>"
    )


def _consequences(result: Analysis) -> str:
    """The findings reported under their cause: slower segments after their rank
    waited longer than its peers; a slower core or segment that its rank's measured
    time off the CPU explains."""
    consequences = result.consequences
    if not consequences:
        return ""
    items = "".join(_consequence_item(result, c) for c in consequences)
    return (
        '<h3 id="consequences">Consequences of waiting or of time off the CPU</h3>'
        '<p class="note">Slower segments that follow a longer wait of their rank than '
        "its peers' (and, where the rank's segments follow both, slower after the long "
        "waits), reported under the rank that made it wait; a slower core or segment "
        "that its rank's time off the CPU, measured by the counters, explains, "
        "reported under that rank's noisy core; what a rank that shared its CPU with "
        "other ranks showed, reported under that sharing. Not anomalies of their "
        "own.</p>"
        f'<ul class="consequences">{items}</ul>'
    )


def _verdict(result: Analysis) -> str:
    found = [a for a in result.anomalies if names_rank(a)]
    cls = "verdict found" if found else "verdict"
    out = [f'<p id="verdict-line" class="{cls}">{_e(verdict_line(result))}</p>']
    judged = judged_share_lines(result)
    if judged:
        out.append(f'<p id="judged-share" class="meta">{_e(judged[0])}</p>')
    labels = {s.id: s.label for s in result.segments}
    if result.anomalies:
        out.append(_headline(result, labels))
    else:
        apart = result.minor or result.consequences
        out.append(
            '<p class="note">No anomaly: no finding costs the job enough to name a '
            "rank.</p>"
            if apart
            else '<p class="note">No anomaly: every judged rank runs like its '
            "peers.</p>"
        )
    out.append(_minor(result, labels))
    out.append(_consequences(result))
    ended = result.ended
    if ended.ended_early_ranks:
        rows = [
            [
                str(r.rank),
                _e(r.how),
                f"{r.end_s:.3f} s",
                "yes" if r.in_mpi_call else "no",
                "first to end" if r.rank == ended.first_to_end else "",
            ]
            for r in ended.ranks
        ]
        out.append(
            '<p class="note">The job did not finish: its trace was rebuilt from the '
            "records, each rank's up to its end.</p>"
        )
        out.append(
            _table(["rank", "how it ended", "at", "in an MPI call", ""], rows, [0, 2])
        )
    return "\n".join(out)


def _rank_verdict(result: Analysis, r: RankRow) -> str:
    """A rank's verdict in its row, with its minor findings and its consequences
    (of waiting, of its time off the CPU) in parentheses."""
    verdict = r.verdict + (" (migrated)" if r.migrated else "")
    minor = [kind_word(a) for a in result.minor if a.rank == r.rank]
    if minor:
        verdict += f" (minor: {', '.join(dict.fromkeys(minor))})"
    mine = [c for c in result.consequences if c.rank == r.rank]
    waited = [c.segment for c in mine if after_waiting(c)]
    if waited:
        verdict += f" ({', '.join(waited)} slower after waiting)"
    off = [c.segment or "core" for c in mine if not after_waiting(c)]
    if off:
        verdict += f" ({', '.join(off)} slower for its time off the CPU)"
    return verdict


def _ranks(result: Analysis) -> str:
    colors = rank_colors(result)
    rows, classes = [], []
    measured = any(r.cpu_time for r in result.ranks)
    listed = listed_ranks(result)
    for r in listed:
        swatch = (
            f'<span class="swatch" style="background:{colors[r.rank]}"></span>'
            if r.rank in colors
            else ""
        )
        verdict = _rank_verdict(result, r)
        rows.append(
            [
                f"{swatch}{r.rank}",
                _e(r.host if r.host is not None else "?"),
                _e(compact_ranges(r.cpus)),
                str(r.n_segments),
                _e(fmt_ns(r.t_min_ns)),
                _e(fmt_ns(r.t_diff_ns)),
                _e(_pct(r.interrupted_fraction)),
            ]
            + ([_e(off_cpu_words(r.cpu_time))] if measured else [])
            + [_e(verdict), _e(r.problem or "")]
        )
        classes.append("anomalous" if r.anomalies else "")
    header = ["rank", "host", "cpus", "segments", "t_min", "t_diff", "interrupted"]
    header += (["off CPU (counters)"] if measured else []) + ["verdict", "problem"]
    numeric = [0, 3, 4, 5, 6] + ([7] if measured else [])
    rest = unlisted_ranks(result, listed)
    note = (
        f'<p class="note">Not listed: {_e(rest)} (analysis.json has them all).</p>'
        if rest
        else ""
    )
    return _table(header, rows, numeric=numeric, classes=classes) + note


def _nodes(result: Analysis, figs: _Figures) -> str:
    """The view by node and socket (perfvar.report.node_view): the heat map, then the
    ranks of each node with a finding, folded; "" for a job on one node."""
    fig = node_heatmap(result)
    if fig is None:
        return ""
    out = [
        figs.div(
            fig,
            "node-heatmap",
            "Each cell: the median over a socket's ranks of their median shift "
            "against their peers in the judged segment classes, marked with the "
            "finding of that node or socket. Nodes no finding touches are binned "
            "beyond a few hundred.",
        )
    ]
    for node, words, rows in listed_nodes(result):
        cells = [[_e(c) for c in row] for row in rows]
        table = _table(["rank", "socket", "cpus", "verdict"], cells, [0, 1])
        out.append(
            f"<details><summary>{_e(node)}: {_e(words)}</summary>{table}</details>"
        )
    return "\n".join(out)


def _waits_words(ws: dict[str, Any], n_ranks: int) -> str:
    """The waiting in one sentence: total, share of wall time x ranks, by pattern and
    by MPI function."""
    wall = ws.get("wall_ns") or 0.0
    total = ws.get("total_ns") or 0.0
    of = f" ({_share(total / (wall * n_ranks))} of wall time x ranks)" if wall else ""
    patterns = ", ".join(
        f"{PATTERN_WORDS.get(k, k)} {fmt_ns(v)}"
        for k, v in sorted(ws.get("by_pattern_ns", {}).items(), key=lambda kv: -kv[1])
    )
    functions = ", ".join(
        f"{k} {fmt_ns(v)}" for k, v in (ws.get("by_function_ns") or {}).items()
    )
    words = f"The ranks waited {fmt_ns(total)} in MPI calls{of}"
    if patterns:
        words += f": {patterns}"
    if functions:
        words += f"; in {functions}"
    return words


def _waits_table(result: Analysis, wall: float) -> str:
    """Per rank: how long it waited, for whom, and how long it made others wait;
    the ranks the verdict names marked. Empty without ranks."""
    rows, classes = [], []
    named = {a.rank for a in result.anomalies if names_rank(a)}
    per = waits_by_rank(result)
    shown = _waits_listed(per, named)
    for rank, v in per.items():
        if rank not in shown:
            continue
        causes = list(v["for"].items())[:TOP_CAUSES]
        whom = ", ".join(f"rank {q}: {fmt_ns(t)}" for q, t in causes)
        if v["for_ranks"] > len(causes):
            whom += f" and {v['for_ranks'] - len(causes)} more"
        rows.append(
            [
                str(rank),
                _e(fmt_ns(v["waited_ns"])),
                _e(_share(v["waited_ns"] / wall) if wall else "n/a"),
                _e(whom or "-"),
                _e(fmt_ns(v["caused_ns"])),
                _e(_share(v["caused_ns"] / wall) if wall else "n/a"),
            ]
        )
        classes.append("anomalous" if rank in named else "")
    header = ["rank", "waited", "of the wall time", "waited for"]
    header += ["made others wait", "of the wall time"]
    if not rows:
        return ""
    left = len(per) - len(rows)
    note = (
        f'<p class="note">Not listed: {left} more ranks, who waited and made others '
        "wait less (analysis.json wait_states.by_rank has them all).</p>"
        if left
        else ""
    )
    return _table(header, rows, numeric=[0, 1, 2, 4, 5], classes=classes) + note


def _waits_listed(per: dict[int, dict[str, Any]], named: set[int]) -> set[int]:
    """The ranks the waiting table lists: all of a job of up to LISTED_RANKS ranks;
    beyond, the ranks the verdict names and those that waited or made others wait
    the most, LISTED_RANKS in all."""
    if len(per) <= LISTED_RANKS:
        return set(per)
    most = sorted(per, key=lambda r: -max(per[r]["waited_ns"], per[r]["caused_ns"]))
    shown = [r for r in per if r in named][:LISTED_RANKS]
    shown += [r for r in most if r not in named][: LISTED_RANKS - len(shown)]
    return set(shown)


def _waits(result: Analysis, figs: _Figures) -> str:
    """The wait states: in words (total, by pattern, by MPI function), a table per
    rank (waited, for whom, made others wait) and a bar plot of the same."""
    ws = result.wait_states
    if not ws:
        return '<p class="note">Not in this analysis (made before wait states).</p>'
    if not ws.get("synchronised"):
        return (
            '<p class="note">No wait state read: the ranks\' MPI calls are not on one '
            "synchronised time line (most collectives let a rank leave before the "
            "last one entered: clocks not aligned, or ranks that ran apart), so no "
            "waiting is charged and no delay cost measured.</p>"
        )
    words = _waits_words(ws, result.summary.n_ranks)
    out = [
        f'<p id="waits-total">{_e(words)}.</p>',
        '<p class="note">Waiting at a collective: '
        "from a rank's entry to the last rank's; at a blocking receive, wait or "
        "send: until the peer that released it entered MPI (Scalasca's "
        "patterns). Made others wait: the waiting this rank caused, including "
        "waiting it passed on.</p>",
    ]
    table = _waits_table(result, ws.get("wall_ns") or 0.0)
    if table:
        out.append(table)
    out.append(
        figs.div(
            waits_figure(result),
            "waits",
            "Blue: the time a rank spent waiting for others in MPI calls; red: the "
            "time the others spent waiting for it. A rank that delays the job has a "
            "tall red bar; its partners, the blue ones.",
        )
    )
    return "\n".join(out)


def _segments(result: Analysis) -> str:
    if not result.segments:
        return '<p class="note">No perfvar:segment samples in the trace.</p>'
    rows = []
    for s in result.segments:
        states = s.cache_states or {}
        state = (
            "/".join(f"{k}:{v}" for k, v in states.items())
            if len(states) > 1
            else (s.cache_state or "-")
        )
        rows.append(
            [
                _e(s.id),
                str(s.n),
                str(s.n_kept),
                str(s.n_ranks),
                _e(fmt_ns(s.median_ns)),
                _e(fmt_ns(s.total_ns)),
                _e(fmt_bytes(s.context_bytes)),
                _e(state),
                _e(fmt_plus_minus(s.resolution_rel)),
                _e(s.label),
            ]
        )
    header = ["id", "n", "kept", "ranks", "median", "total", "moved", "state"]
    header += ["resolves", "from -> to"]
    return _table(header, rows, numeric=[1, 2, 3, 4, 5, 6, 8]) + (
        '<p class="note">kept: after the OS-noise filter; moved: bytes the MPI call '
        "before the segment moved (median); state: the cache state whose t_min/t_diff "
        "judged it; resolves: half the widest 95 % interval of a rank's excess over "
        "the blocks of the run, the smallest difference this run could tell in the "
        "class.</p>"
    )


def _noise_table(result: Analysis, noise: dict[int, RankNoise]) -> str:
    """One row per rank; of many ranks, only those that were interrupted, and of
    more than LISTED_RANKS of them the ranks a noisy-core finding names and the
    most interrupted, LISTED_RANKS in all."""
    rows, classes = [], []
    ranks = result.ranks
    quiet = []
    if len(ranks) > MAX_PEER_LINES:
        quiet = [r.rank for r in ranks if not r.interruptions]
        ranks = [r for r in ranks if r.interruptions]
    interrupted = len(ranks)
    if interrupted > LISTED_RANKS:
        first = sorted(
            ranks,
            key=lambda r: (
                not _noisy(r),
                -(r.interrupted_fraction or 0.0),
            ),
        )[:LISTED_RANKS]
        chosen = {r.rank for r in first}
        ranks = [r for r in ranks if r.rank in chosen]
    for r in ranks:
        n = noise.get(r.rank)
        typical = n.typical_ns() if n is not None else None
        by_cpu = ""
        if n is not None and n.lost_by_cpu:
            by_cpu = ", ".join(
                f"cpu {c}: {fmt_ns(v)}"
                for c, v in sorted(n.lost_by_cpu.items())
                if v > 0
            )
        rows.append(
            [
                str(r.rank),
                str(r.interruptions),
                _e(fmt_ns(r.interrupted_ns)),
                _e(_pct(r.interrupted_fraction)),
                _e(fmt_ns(typical) if typical is not None else "-"),
                _e(interpretation(typical) if n is not None else "-"),
                _e(by_cpu),
            ]
        )
        classes.append("anomalous" if _noisy(r) else "")
    header = ["rank", "interruptions", "time lost", "of compute", "typical length"]
    header += ["what it looks like", "lost by CPU"]
    out = _table(header, rows, numeric=[0, 1, 2, 3, 4], classes=classes) if rows else ""
    if interrupted > len(rows):
        out += (
            f'<p class="note">Not listed: {interrupted - len(rows)} more interrupted '
            "ranks, that lost a smaller share of their compute time (analysis.json "
            "has them all).</p>"
        )
    if quiet:
        out += (
            f'<p class="note">No interruption on {len(quiet)} ranks: '
            f"{_e(compact_ranges(quiet))}.</p>"
        )
    return out


def _state_cell(st: Optional[dict[str, Any]]) -> str:
    """One cache state of a rank: "t_min / t_diff" (and its status when not final),
    else why it has none, with the note on hover."""
    if st is None or st.get("t_min_ns") is None:
        why = st["status"] if st is not None else "-"
        return f'<span title="{_e(st.get("note", "") if st else "")}">{_e(why)}</span>'
    partial = "" if st["status"] in ("complete", None) else f" ({st['status']})"
    return _e(f"{fmt_ns(st['t_min_ns'])} / {fmt_ns(st['t_diff_ns'])}{partial}")


def _cycles_table(ranks: list[RankRow]) -> str:
    """The cycle counter's flush-0 calibration of the ranks that had one; "" if
    none."""
    cycles = [r for r in ranks if (r.calibration_cycles or {}).get("available")]
    if not cycles:
        return ""
    rows = [
        [
            str(r.rank),
            _e(r.calibration_cycles.get("counter") or "?"),
            _e(_cycles(r.calibration_cycles.get("t_min_cycles"))),
            _e(_cycles(r.calibration_cycles.get("t_diff_cycles"))),
            _e(r.calibration_cycles.get("status") or "-"),
        ]
        for r in cycles
    ]
    return (
        '<p class="note">CPU-cycle counter, flush 0 (reported; segments are '
        "judged by the wall clock):</p>"
    ) + _table(["rank", "counter", "t_min", "t_diff", "status"], rows, [0, 2, 3])


def _calibration_table(result: Analysis) -> str:
    """Per rank: timer overhead, t_min / t_diff per calibrated cache state, status
    and source; then the cycle counter's calibration where there was one."""
    labels = sorted(
        {st["label"] for r in result.ranks for st in r.calibration_states or []},
        key=label_order,
    )
    rows = []
    listed = listed_ranks(result)
    for r in listed:
        states = {st["label"]: st for st in r.calibration_states or []}
        row = [
            str(r.rank),
            _e(r.host if r.host is not None else "?"),
            _e(fmt_ns(r.timer_overhead_ns)),
        ]
        row += [_state_cell(states.get(label)) for label in labels]
        row.append(_e(r.calibration_status or "-"))
        row.append(_e(r.calibration_source or ""))
        rows.append(row)
    if len(listed) < len(result.ranks):
        rows.append(_calibration_span(result.ranks, labels))
    header = ["rank", "host", "timer overhead"]
    header += [f"{'flush 0' if s == '0' else s}: t_min / t_diff" for s in labels]
    header += ["status", "source"]
    out = _table(header, rows, numeric=list(range(2, 3 + len(labels))))
    return out + _cycles_table(listed)


def _calibration_span(ranks: list[RankRow], labels: list[str]) -> list[str]:
    """The calibration table's row for all ranks: per cache state, the lowest and
    highest t_min and t_diff over the ranks, and how many ranks have them."""

    def span(values: list[Optional[float]]) -> str:
        known = [v for v in values if v is not None]
        if not known:
            return "?"
        lo, hi = min(known), max(known)
        return fmt_ns(lo) if lo == hi else f"{fmt_ns(lo)}-{fmt_ns(hi)}"

    overheads = [r.timer_overhead_ns for r in ranks]
    row = [f"all {len(ranks)}", "", _e(span(overheads))]
    for label in labels:
        got = [
            st
            for r in ranks
            for st in r.calibration_states or []
            if st["label"] == label and st.get("t_min_ns") is not None
        ]
        row.append(
            _e(
                f"{span([st['t_min_ns'] for st in got])} / "
                f"{span([st['t_diff_ns'] for st in got])} ({len(got)} ranks)"
            )
            if got
            else "-"
        )
    statuses = Counter(r.calibration_status or "-" for r in ranks)
    row.append(_e(counts_words(statuses)))
    return row + [""]


def _cycles(value: Optional[float]) -> str:
    return "?" if value is None else f"{value:.0f} cycles"


def render_html(result: Analysis, prep: Optional[Prepared] = None) -> str:
    """The whole page as one string. ``prep``: the filtered cells analyze() worked
    on (its ``on_prepared``); None leaves out the plots of samples."""
    from plotly.offline import get_plotlyjs

    figs = _Figures()
    sections: list[tuple[str, str, str]] = []  # (anchor, title, body)
    sections.append(("verdict", "Verdict", _verdict(result)))
    sections.append(
        (
            "ranks",
            "Ranks",
            _ranks(result)
            + '<p class="note">t_min/t_diff: flush 0; interrupted: share of the '
            "compute time lost to interruptions. Tinted rows: the ranks a verdict "
            "names (minor findings and consequences of waiting name no rank). "
            "Each rank keeps its colour in every plot (grey: one of many ranks no "
            "verdict names).</p>",
        )
    )
    nodes = _nodes(result, figs)
    if nodes:
        sections.append(("nodes", "Nodes and sockets", nodes))
    sections.append(("waits", "Waiting", _waits(result, figs)))
    sections.append(
        (
            "shifts",
            "Shifts against the peers",
            figs.div(
                shift_heatmap(result),
                "shift-heatmap",
                "Each cell: how much slower (red) or faster (blue) a rank runs a "
                "segment class than its peers, median against median; 'slow' marks "
                "the cells judged slow (rank test, false discovery rate, effect "
                "floor), 'minor' those whose delay cost is below the threshold, "
                "'waited' those that are a consequence of waiting, 'off CPU' those "
                "that the rank's measured time off the CPU explains. Blank cells were "
                "not judged (hover for why).",
            )
            or '<p class="note">No cell could be judged.</p>',
        )
    )
    no_samples = (
        '<p class="note">Not available: this report was built without the '
        "samples.</p>"
    )
    dist, line, noise_html = no_samples, no_samples, ""
    noise = rank_noise(prep) if prep is not None else {}
    if prep is not None:
        ids, more, too_few = classes_to_plot(result, prep, MAX_CLASSES)
        left_out = []
        if more:
            left_out.append(
                f"{more} more segment classes are not drawn (drawn: every class a "
                "verdict names, then the largest by total time)."
            )
        if too_few:
            left_out.append(
                f"{too_few} segment classes have fewer than {MIN_DRAWN} kept "
                "samples on every rank and are not drawn."
            )
        rest = f'<p class="note">{" ".join(left_out)}</p>' if left_out else ""
        dist = "".join(
            figs.div(distribution_figure(result, prep, s), f"dist-{s}") for s in ids
        )
        dist = (
            '<p class="note">Per segment class, the fraction of each rank\'s kept '
            "segments (after the OS-noise filter) that took at most a given time: a "
            "curve to the right is a slower rank; a flatter one a noisier rank.</p>"
            + dist
            + rest
        )
        line = "".join(
            figs.div(timeline_figure(result, prep, s), f"timeline-{s}") for s in ids
        )
        line = (
            '<p class="note">Per segment class, each rank\'s segment durations over '
            "the run (median per time bin for long runs): a slow phase is a bump on "
            "one rank; shaded windows are the slow phases found.</p>" + line + rest
        )
        line += figs.div(
            counter_timeline_figure(result, prep),
            "counters",
            "Per rank, the counters read at the end of long segments "
            "(PERFVAR_METRICS), as rates over each read's interval (per traced "
            "thread; per time bin for long runs): the share of wall time off the "
            "CPU (1 - task clock / wall time) and each counter's count per second. "
            "A rank another process shares a CPU with is off it more and switches "
            "context more often.",
        )
        noise_html = figs.div(
            noise_by_cpu_figure(result, noise),
            "noise-cpu",
            "Interruption: a segment beyond Q3 + 3 x max(IQR, 1% of the median) of "
            "its cell; the time it lost is its excess over the cell's median.",
        ) + figs.div(
            noise_lengths_figure(result, noise),
            "noise-lengths",
            "Lengths of 1 ms and more are scheduler time slices (another runnable "
            "process on the CPU); 20 us - 1 ms short preemptions; below, interrupts.",
        )
    sections.append(("distributions", "Distributions", dist))
    sections.append(("timelines", "Over the run", line))
    sections.append(
        (
            "noise",
            "Time lost to interruptions",
            _noise_table(result, noise) + (noise_html or ""),
        )
    )
    sections.append(
        (
            "calibration",
            "Calibration",
            '<p class="note">Per rank and cache state (bytes flushed before each '
            "sample): t_min, the shortest segment the timer measures to within 1%; "
            "t_diff, the smallest difference it resolves. Segments are judged "
            "against their rank's values for their cache state.</p>"
            + _calibration_table(result)
            + figs.div(calibration_figure(result), "calibration"),
        )
    )
    sections.append(("segments", "Segment classes", _segments(result)))
    if result.warnings:
        items = "".join(f"<li>{_e(w)}</li>" for w in result.warnings)
        sections.append(("warnings", "Warnings", f"<ul>{items}</ul>"))

    nav = "".join(f'<a href="#{a}">{_e(t)}</a>' for a, t, _ in sections)
    body = "\n".join(
        f'<section id="{a}"><h2>{_e(t)}</h2>\n{b}\n</section>' for a, t, b in sections
    )
    title = f"perfvar report: {os.path.basename(result.trace)}"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{CSS}</style>\n"
        f'<script type="text/javascript">{get_plotlyjs()}</script>\n'
        "</head>\n<body>\n"
        f"<header>{_header(result)}</header>\n<nav>{nav}</nav>\n"
        "<noscript><p>The plots need JavaScript; the text and tables do not.</p>"
        "</noscript>\n"
        f"<main>\n{body}\n</main>\n</body>\n</html>\n"
    )


def write_html(
    result: Analysis,
    prep: Optional[Prepared] = None,
    path: Optional[str] = None,
    page: Optional[str] = None,
) -> str:
    """Write the page to ``path`` (default DIR/report.html); returns the path.

    ``page``: the page from :func:`render_html` when it was rendered already. It is
    written to a temporary file first, so a reader never sees half a report.
    """
    path = path or default_path(result)
    page = page if page is not None else render_html(result, prep)
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(page)
    os.replace(tmp, path)
    return path
