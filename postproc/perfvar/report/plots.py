"""The figures of report.html (perfvar.report.html), as plotly figures.

Each ``*_figure`` function takes the analysis result (perfvar.analysis.analyze) and,
where it plots samples, the filtered cells (perfvar.stats.model.Prepared) and returns a
``plotly.graph_objects.Figure``, or None when there is nothing to plot. Durations are
ns in the data and shown with a unit chosen per figure; times are seconds since the
trace's time origin (where Vampir's timeline starts). Figures stay small whatever the
trace: distributions are drawn from at most ``ECDF_POINTS`` quantiles per rank and
timelines from per-bin medians (at most ``TIMELINE_POINTS`` points per figure; the
counters' timeline from per-bin rates: counts over the bin's intervals), and
more than ``MAX_PEER_LINES`` ranks that no verdict names become one band. Pure
functions; thread-safe.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any, Optional

import numpy as np

from perfvar.detect import KINDS, class_kind, is_verdict, shows_in, subject
from perfvar.detect.finding import NOISE, WINDOW
from perfvar.detect.noisy_core import RankNoise
from perfvar.detect.slow_phase import shown_classes
from perfvar.read.cache_state import label_order
from perfvar.result import Analysis, Finding
from perfvar.stats.cpu_time import RankReads
from perfvar.stats.model import Cell, Prepared
from perfvar.verdict.headline import after_waiting

ECDF_POINTS = 200  # quantiles drawn per rank in a distribution
TIMELINE_POINTS = 60_000  # points per timeline figure, over all ranks
TIMELINE_BINS = (20, 400)  # bins per rank: at least, at most
NOISE_BINS = 40  # log-spaced bins of the interruption lengths
MIN_DRAWN = 8  # kept samples a rank needs in a class for the class to be drawn
# Beyond this many grey ranks, they are drawn as one band (their median and 5-95 %
# range) instead of one line each: a thousand lines hide each other and weigh
# megabytes.
MAX_PEER_LINES = 32
# Rows of the shift heat map at most: beyond, the ranks no finding names and with no
# slow cell are drawn in bins of consecutive ranks, each bin showing per class the
# shift of largest size among its ranks (an outlier still shows).
HEATMAP_ROWS = 256
# Colours: the ranks a verdict names get a strong one each, in rank order; the
# others a muted one each when they are few enough to be told apart, else grey.
HIGHLIGHT = (
    "#d62728",
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
)
MUTED = (
    "#7f7f7f",
    "#bcbd22",
    "#9edae5",
    "#c5b0d5",
    "#98df8a",
    "#c49c94",
    "#f7b6d2",
    "#dbdb8d",
    "#aec7e8",
    "#ffbb78",
)
PEER = "rgba(110, 110, 110, 0.45)"
STATE_COLORS = ("#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")
TEMPLATE = "plotly_white"


def unit_of(value_ns: float) -> tuple[float, str]:
    """(ns per unit, unit) to show durations around ``value_ns``: ns, us, ms or s."""
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
        if abs(value_ns) >= scale:
            return scale, unit
    return 1.0, "ns"


def rank_colors(result: Analysis) -> dict[int, str]:
    """rank -> its colour in every figure: the ranks a verdict names and, when
    there are at most len(MUTED) others, those too; the rest are drawn grey."""
    named = sorted({a.rank for a in result.anomalies if is_verdict(a)})
    out = {r: HIGHLIGHT[i % len(HIGHLIGHT)] for i, r in enumerate(named)}
    others = sorted(r.rank for r in result.ranks if r.rank not in out)
    if len(others) <= len(MUTED):
        out.update({r: MUTED[i] for i, r in enumerate(others)})
    return out


def flagged(result: Analysis, segment: str) -> dict[int, list[str]]:
    """rank -> what the verdicts say of it in class ``segment``: a slow segment or
    slow phase there, or a slow or noisy core (which shows in every class); else
    "after waiting" (a consequence of waiting there) or "minor" (a minor slow
    segment there)."""
    out: dict[int, list[str]] = {}
    for a in result.anomalies:
        if not is_verdict(a):
            continue
        kind = KINDS[a.kind]
        words = out.setdefault(a.rank, [])
        if shows_in(a, segment) and kind.word not in words:
            words.append(kind.word)
    for (rank, seg), mark in slow_cells_apart(result).items():
        words = out.setdefault(rank, [])
        word = {"waited": "after waiting", "off CPU": "off its CPU"}.get(mark, "minor")
        if seg == segment and not words:
            words.append(word)
    return {r: w for r, w in out.items() if w}


def _named_classes(result: Analysis) -> list[str]:
    """The segment ids the findings name, in order: the headline's, then the minor
    findings' and the consequences of waiting's."""
    named: list[str] = []
    apart = list(result.minor)
    apart += [
        c.anomaly or Finding(c.kind, c.rank, segment=c.segment)
        for c in result.consequences
    ]
    for a in [a for a in list(result.anomalies) + apart if is_verdict(a)]:
        # A phase seen in many small classes together: those that lost the most.
        own, top = shown_classes((a.evidence or {}).get("classes", []))
        ids = [a.segment] + [c["segment"] for c in own + top]
        named += [s for s in ids if s and s not in named]
    return named


def classes_to_plot(
    result: Analysis, prep: Prepared, limit: int
) -> tuple[list[str], int, int]:
    """(segment ids to draw, how many more could be, how many have too few
    samples): the classes a verdict names first, then those of the minor findings
    and of the consequences of waiting, then the others by total time,
    each with MIN_DRAWN kept samples on at least one rank (fewer make no
    distribution); the probes' pseudo-class last when the run has one."""
    with_samples = {
        prep.segment_ids[seg] for (seg, _), c in prep.cells.items() if c.n >= MIN_DRAWN
    }
    named = _named_classes(result)
    order = [s.id for s in result.segments]  # by total time, descending
    if prep.probe_segment is not None:
        order.append(prep.segment_ids[prep.probe_segment])
    ids = [s for s in named if s in with_samples]
    ids += [s for s in order if s in with_samples and s not in ids]
    too_few = len([s for s in order if s not in with_samples])
    return ids[:limit], max(len(ids) - limit, 0), too_few


def _cells_of(prep: Prepared, segment: str) -> dict[int, Cell]:
    seg = prep.segment_ids.index(segment)
    return {r: c for (g, r), c in sorted(prep.cells.items()) if g == seg and c.n > 0}


def _trace_style(
    rank: int, colors: dict[int, str], notes: dict[int, list[str]], first_peer: bool
) -> dict[str, Any]:
    """Line, name and legend entry of one rank's trace: thick when a verdict names
    it in this figure; a rank of its own colour has its own legend entry, the grey
    ones share one ("other ranks"; ``first_peer``: this trace shows it)."""
    if rank in notes:
        return {
            "name": f"rank {rank} ({', '.join(notes[rank])})",
            "line": {"color": colors.get(rank, HIGHLIGHT[0]), "width": 2.5},
            "legendgroup": f"rank{rank}",
            "showlegend": True,
        }
    if rank in colors:
        return {
            "name": f"rank {rank}",
            "line": {"color": colors[rank], "width": 1.2},
            "legendgroup": f"rank{rank}",
            "showlegend": True,
        }
    return {
        "name": "other ranks",
        "line": {"color": PEER, "width": 1},
        "legendgroup": "peers",
        "showlegend": first_peer,
    }


def _draw_order(ranks: Iterable[int], notes: dict[int, list[str]]) -> list[int]:
    """The ranks named in the figure last, so they are drawn on top."""
    return sorted(ranks, key=lambda r: (r in notes, r))


def layout(fig: Any, title: str, x: str, y: str, height: int = 380) -> None:
    fig.update_layout(
        template=TEMPLATE,
        title={"text": title, "font": {"size": 14}},
        xaxis_title=x,
        yaxis_title=y,
        height=height,
        margin={"l": 70, "r": 20, "t": 50, "b": 50},
        legend={"font": {"size": 11}},
    )


def slow_cells_apart(result: Analysis) -> dict[tuple[int, str], str]:
    """(rank, segment) -> how a slow cell that is no headline finding is marked:
    "waited" (a consequence of waiting, reported under its cause), "off CPU" (a
    consequence of its rank's measured time off the CPU) or "minor" (its delay
    cost is below the threshold)."""
    out = {
        (a.rank, a.segment): "minor"
        for a in result.minor
        if class_kind(a.kind) and a.segment is not None
    }
    for c in result.consequences:
        if c.segment:  # a slower core is no cell
            out[(c.rank, c.segment)] = "waited" if after_waiting(c) else "off CPU"
    return out


def _shift_cells(
    result: Analysis, ranks: list[int], classes: list[str]
) -> tuple[np.ndarray, list[list[str]], list[list[list[str]]]]:
    """The heat map's cells, rows ``ranks`` by columns ``classes``: each judged
    cell's shift (%, NaN where not judged against peers), its mark ("slow", or why it
    is apart) and its hover lines (status, class label, q value or samples)."""
    labels = {s.id: html.escape(s.label) for s in result.segments}
    col = {s: j for j, s in enumerate(classes)}
    row = {r: i for i, r in enumerate(ranks)}
    z = np.full((len(ranks), len(classes)), np.nan)
    text = [["" for _ in classes] for _ in ranks]
    apart = slow_cells_apart(result)
    info = [[["not in the trace", "", ""] for _ in classes] for _ in ranks]
    for j in result.judgements:
        i, k = row.get(j.rank), col.get(j.segment)
        if i is None or k is None:
            continue
        shift = j.shift_rel
        if shift is not None and j.status in ("ok", "slow"):
            z[i, k] = 100.0 * shift
        if j.status == "slow":
            text[i][k] = apart.get((j.rank, j.segment), "slow")
        q = j.q_value
        info[i][k] = [
            j.status,
            labels.get(j.segment, ""),
            f"q {q:.2g}" if q is not None else f"n {j.n}",
        ]
    return z, text, info


def heatmap_rows(
    ranks: list[int], kept: set[int], rows: int = HEATMAP_ROWS
) -> list[list[int]]:
    """The heat map's rows, in rank order: one rank each when there are at most
    ``rows`` ranks; beyond, each rank of ``kept`` alone and the others in bins of
    consecutive ranks (cut at a kept one), as many to a bin as keeps the rows
    within ``rows``."""
    if len(ranks) <= rows:
        return [[r] for r in ranks]
    free = max(1, rows - len(kept))
    per = -(-(len(ranks) - len(kept)) // free)  # ceiling division
    out: list[list[int]] = []
    current: list[int] = []
    for r in ranks:
        if r in kept:
            out += [current] if current else []
            out.append([r])
            current = []
            continue
        current.append(r)
        if len(current) == per:
            out.append(current)
            current = []
    return out + ([current] if current else [])


def _bin_cells(
    z: np.ndarray, text: list[list[str]], info: list, rows: list[list[int]], ranks
) -> tuple[np.ndarray, list[list[str]], list, list[str]]:
    """The heat map's cells by ``rows`` (heatmap_rows) of the per-rank cells: a
    bin's cell is its rank's cell of largest shift size, its hover saying which."""
    at = {r: i for i, r in enumerate(ranks)}
    zb = np.full((len(rows), z.shape[1]), np.nan)
    tb, ib, names = [], [], []
    for i, group in enumerate(rows):
        idx = [at[r] for r in group]
        if len(group) == 1:
            zb[i] = z[idx[0]]
            tb.append(text[idx[0]])
            ib.append(info[idx[0]])
            names.append(f"rank {group[0]}")
            continue
        block = z[idx]
        size = np.where(np.isnan(block), -1.0, np.abs(block))
        pick = np.argmax(size, axis=0)
        zb[i] = block[pick, np.arange(block.shape[1])]
        tb.append(["" for _ in range(block.shape[1])])
        ib.append(
            [
                [f"{len(group)} ranks {group[0]}-{group[-1]}, largest at rank "
                 f"{group[p]}: {info[idx[p]][k][0]}", info[idx[p]][k][1],
                 info[idx[p]][k][2]]  # fmt: skip
                for k, p in enumerate(pick)
            ]
        )
        names.append(f"ranks {group[0]}-{group[-1]}")
    return zb, tb, ib, names


def shift_heatmap(result: Analysis) -> Optional[Any]:
    """Ranks x segment classes: each cell's median shift against its peers (%), the
    slow ones marked ("slow"; "minor" below the delay-cost threshold, "waited" for
    a consequence of waiting, "off CPU" for one of its rank's time off the CPU);
    cells that were not judged are blank (their status on hover). Beyond
    HEATMAP_ROWS ranks, those no finding names are binned (heatmap_rows). None
    without judgements."""

    if not result.judgements:
        return None
    classes = [s.id for s in result.segments]
    ranks = sorted(r.rank for r in result.ranks)
    z, text, info = _shift_cells(result, ranks, classes)
    if np.isnan(z).all():
        return None
    named = {a.rank for a in result.anomalies + (result.minor)}
    kept = (named & set(ranks)) | {ranks[i] for i, row in enumerate(text) if any(row)}
    rows = heatmap_rows(ranks, kept)
    z, text, info, names = _bin_cells(z, text, info, rows, ranks)
    fig = shift_grid(
        z, classes, names, text, info,
        "%{y}, %{x}: %{customdata[0]}<br>shift %{z:+.3f}%"
        "<br>%{customdata[2]}<br>%{customdata[1]}<extra></extra>",
    )  # fmt: skip
    layout(
        fig, "Median shift against the peers", "segment class", "", fig.layout.height
    )
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category")
    return fig


def shift_grid(
    z: np.ndarray, x: list[str], y: list[str], text: list, info: list, hover: str
) -> Any:
    """A heat map of shifts (%), red slower and blue faster around zero, its cells
    marked with ``text`` and ``info`` for the hover (``hover``: its template); its
    height fits the rows (room for the scale)."""
    import plotly.graph_objects as go

    span = float(np.nanmax(np.abs(z))) if not np.isnan(z).all() else 0.0
    span = span or 1.0
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=x,
            y=y,
            text=text,
            texttemplate="%{text}",
            customdata=info,
            colorscale="RdBu_r",
            zmid=0.0,
            zmin=-span,
            zmax=span,
            colorbar={"title": {"text": "shift %"}},
            hovertemplate=hover,
            xgap=1,
            ygap=1,
        )
    )
    fig.update_layout(height=int(min(1400, max(240, 140 + 24 * len(y)))))
    return fig


def distribution_figure(
    result: Analysis, prep: Prepared, segment: str
) -> Optional[Any]:
    """Empirical CDF of one class's kept samples, one line per rank (many grey
    ranks: one band); the ranks a verdict names in it highlighted. None when no
    rank has samples."""
    import plotly.graph_objects as go

    cells = _cells_of(prep, segment)
    if not cells:
        return None
    notes, colors = flagged(result, segment), rank_colors(result)
    pooled_median = float(np.median([np.median(c.samples_ns) for c in cells.values()]))
    scale, unit = unit_of(pooled_median)
    fig = go.Figure()
    lo, hi = np.inf, -np.inf
    lines, grey = _split(cells, notes, colors)
    if grey:
        levels = np.linspace(0.0, 1.0, ECDF_POINTS)
        q = np.array([np.quantile(cells[r].samples_ns, levels) for r in grey]) / scale
        _band(fig, np.percentile(q, [5, 50, 95], axis=0), levels, len(grey), "x")
        lo, hi = float(q[:, 1].min()), float(q[:, -2].max())
    first_peer = True
    for rank in lines:
        values = cells[rank].samples_ns
        levels = np.linspace(0.0, 1.0, min(values.size, ECDF_POINTS))
        x = np.quantile(values, levels) / scale
        lo = min(lo, float(np.quantile(values, 0.005)) / scale)
        hi = max(hi, float(np.quantile(values, 0.995)) / scale)
        style = _trace_style(rank, colors, notes, first_peer)
        first_peer = first_peer and style["legendgroup"] != "peers"
        fig.add_trace(
            go.Scatter(
                x=x.astype(np.float32),
                y=levels.astype(np.float32),
                mode="lines",
                line_shape="hv",
                hovertemplate=f"rank {rank}: %{{y:.0%}} of {values.size} segments "
                f"<= %{{x:.4g}} {unit}<extra></extra>",
                **style,
            )
        )
    label = _label(result, segment)
    layout(
        fig,
        f"{segment} {label}: distribution of the kept samples",
        f"segment duration ({unit})",
        "fraction of segments",
    )
    pad = 0.02 * (hi - lo) if hi > lo else 0.5
    fig.update_xaxes(range=[lo - pad, hi + pad])
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%")
    return fig


def _split(
    ranks: Iterable[int], notes: dict[int, list[str]], colors: dict[int, str]
) -> tuple[list[int], list[int]]:
    """(ranks drawn as lines, in drawing order; grey ranks drawn as one band, or
    none when they are few enough to be lines too)."""
    ranks = list(ranks)
    grey = [r for r in ranks if r not in notes and r not in colors]
    if len(grey) <= MAX_PEER_LINES:
        return _draw_order(ranks, notes), []
    return _draw_order([r for r in ranks if r not in grey], notes), grey


def _band(
    fig: Any,
    pct: np.ndarray,
    along: np.ndarray,
    n: int,
    axis: str,
    row: Optional[int] = None,
) -> None:
    """The grey ranks as one band: ``pct`` rows are their 5th, 50th and 95th
    percentiles at each point of ``along``; ``axis``: the axis ``pct`` is on
    ("x" for a distribution, "y" for a course over time); ``row``: the subplot
    row of a figure of several (its legend entry only in the first)."""
    import plotly.graph_objects as go

    name = f"other ranks ({n}): median, 5-95%"
    low, mid, high = (values.astype(np.float32) for values in pct)
    fill = "tonextx" if axis == "x" else "tonexty"
    common = {"mode": "lines", "legendgroup": "band", "hoverinfo": "skip"}
    mid_style = {"line": {"color": PEER, "width": 1.5}, "name": name}
    for values, extra in (
        (high, {"line": {"width": 0}, "showlegend": False}),
        (low, {"line": {"width": 0}, "fill": fill, "showlegend": False}),
        (mid, mid_style | {"showlegend": row in (None, 1)}),
    ):
        xy = {"x": values, "y": along} if axis == "x" else {"x": along, "y": values}
        fig.add_trace(
            go.Scatter(**xy, fillcolor="rgba(110, 110, 110, 0.2)", **common, **extra),
            row=row,
            col=None if row is None else 1,
        )


def _label(result: Analysis, segment: str) -> str:
    """The class's call sites, escaped: plotly reads its text as HTML, and a C++
    name (``std::vector<int>``) would lose its template arguments."""
    for s in result.segments:
        if s.id == segment:
            return f"[{html.escape(s.label)}]"
    return "[fixed-work probes]" if segment == "probe" else ""


def binned_medians(
    start_ns: np.ndarray, values: np.ndarray, edges: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(bin centres, median of ``values`` per bin) over the bins with samples.

    ``edges``: ascending bin edges (same unit as ``start_ns``); samples outside
    them go to the first or last bin. Vectorised: one sort, no loop over bins.
    """
    nbins = len(edges) - 1
    which = np.clip(np.searchsorted(edges, start_ns, side="right") - 1, 0, nbins - 1)
    order = np.lexsort((values, which))
    which, values = which[order], values[order]
    counts = np.bincount(which, minlength=nbins)
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    has = counts > 0
    lo = first[has] + (counts[has] - 1) // 2
    hi = first[has] + counts[has] // 2
    centres = 0.5 * (edges[:-1] + edges[1:])
    return centres[has], 0.5 * (values[lo] + values[hi])


def time_bins(t0: float, t1: float, per_rank: int, traces: int) -> np.ndarray:
    """Edges of the time bins of a timeline from ``t0`` to ``t1`` (ns): about four
    values of a rank per bin, within TIMELINE_BINS, and at most TIMELINE_POINTS
    points over the figure's ``traces`` traces (a band counts three)."""
    budget = TIMELINE_POINTS // max(traces, 1)
    nbins = int(np.clip(min(per_rank // 4, budget), *TIMELINE_BINS))
    return np.linspace(t0, t1 if t1 > t0 else t0 + 1.0, nbins + 1)


def timeline_figure(result: Analysis, prep: Prepared, segment: str) -> Optional[Any]:
    """One class's segment durations over the run, one line per rank (per-bin
    medians of the kept samples; many grey ranks: one band); slow-phase windows
    shaded. None without samples."""
    import plotly.graph_objects as go

    cells = _cells_of(prep, segment)
    if not cells:
        return None
    notes, colors = flagged(result, segment), rank_colors(result)
    lines, grey = _split(cells, notes, colors)
    starts = np.concatenate([c.start_ns for c in cells.values()])
    per_rank = max(c.n for c in cells.values())
    traces = len(lines) + 3 * bool(grey)
    edges = time_bins(float(starts.min()), float(starts.max()), per_rank, traces)
    nbins = len(edges) - 1
    pooled_median = float(np.median([np.median(c.samples_ns) for c in cells.values()]))
    scale, unit = unit_of(pooled_median)
    fig = go.Figure()
    if grey:
        medians = np.full((len(grey), nbins), np.nan)
        centres = 0.5 * (edges[:-1] + edges[1:])
        for i, rank in enumerate(grey):
            x, y = binned_medians(cells[rank].start_ns, cells[rank].samples_ns, edges)
            medians[i, np.searchsorted(centres, x)] = y / scale
        seen = ~np.isnan(medians).all(axis=0)
        pct = np.nanpercentile(medians[:, seen], [5, 50, 95], axis=0)
        _band(fig, pct, centres[seen] / 1e9, len(grey), "y")
    first_peer = True
    for rank in lines:
        cell = cells[rank]
        if cell.n <= nbins:  # few samples: each one, not medians of one
            x, y = cell.start_ns, cell.samples_ns
        else:
            x, y = binned_medians(cell.start_ns, cell.samples_ns, edges)
        style = _trace_style(rank, colors, notes, first_peer)
        first_peer = first_peer and style["legendgroup"] != "peers"
        fig.add_trace(
            go.Scatter(
                x=(x / 1e9).astype(np.float64),
                y=(y / scale).astype(np.float32),
                mode="lines" if x.size > 1 else "markers",
                hovertemplate=f"rank {rank}: %{{y:.4g}} {unit} at %{{x:.3f}} s"
                "<extra></extra>",
                **style,
            )
        )
    for a in result.anomalies:
        if subject(a.kind) != WINDOW:
            continue
        windows = [
            (c["start_ns"], c["end_ns"])
            for c in a.evidence.get("classes", [])
            if c.get("segment") == segment
        ]
        if not windows and a.segment == segment:
            windows = [(a.start_ns, a.end_ns)]
        for begin, end in windows:
            fig.add_vrect(
                x0=begin / 1e9,
                x1=end / 1e9,
                fillcolor=colors.get(a.rank, HIGHLIGHT[0]),
                opacity=0.12,
                line_width=0,
                annotation_text=f"rank {a.rank} slow phase",
                annotation_position="top left",
            )
    binned = "" if per_rank <= nbins else f", median per time bin ({nbins} bins)"
    layout(
        fig,
        f"{segment} {_label(result, segment)}: duration over the run{binned}",
        "time since the trace's origin (s)",
        f"segment duration ({unit})",
    )
    return fig


def binned_ratio(
    x: np.ndarray, num: np.ndarray, den: np.ndarray, edges: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(bin centres, sum of ``num`` / sum of ``den`` per bin) over the bins whose
    ``den`` sums above 0; ``x`` outside ``edges`` goes to the first or last bin.
    A rate over several reads weighs each by its interval, as one long read would."""
    nbins = len(edges) - 1
    which = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, nbins - 1)
    top = np.bincount(which, weights=num, minlength=nbins)
    bottom = np.bincount(which, weights=den, minlength=nbins)
    has = bottom > 0
    centres = 0.5 * (edges[:-1] + edges[1:])
    return centres[has], top[has] / bottom[has]


def verdict_words(result: Analysis) -> dict[int, list[str]]:
    """rank -> the words of the verdicts that name it, whatever their class (for
    figures of whole ranks)."""
    out: dict[int, list[str]] = {}
    for a in result.anomalies:
        if not is_verdict(a):
            continue
        kind = KINDS.get(a.kind)
        word = kind.word if kind is not None else a.kind
        words = out.setdefault(a.rank, [])
        if word not in words:
            words.append(word)
    return out


OFF_CPU = None  # the panel of the share of wall time off the CPU (the task clock)


def _counter_panels(counters: dict[int, RankReads]) -> list[Optional[str]]:
    """The panels of the counter timeline: the off-CPU share when a rank counted
    a task clock, then each counter in the trace's column order."""
    panels: list[Optional[str]] = []
    if any(r.off_cpu_ns is not None for r in counters.values()):
        panels.append(OFF_CPU)
    for reads in counters.values():
        panels += [name for name in reads.deltas if name not in panels]
    return panels


def _counter_reads(
    reads: RankReads, panel: Optional[str]
) -> Optional[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(interval midpoints ns, what the panel counts in each, interval ns) of one
    rank's reads: the time off the CPU or a counter's delta. None when the rank
    did not count it."""
    num = reads.off_cpu_ns if panel is OFF_CPU else reads.deltas.get(panel)
    if num is None:
        return None
    keep = np.isfinite(num)  # a thread of the rank that did not count it
    if not keep.any():
        return None
    mid = 0.5 * (reads.since_ns + reads.end_ns)
    return mid[keep], num[keep], reads.wall_ns[keep]


def _counter_course(
    reads: RankReads, panel: Optional[str], edges: np.ndarray, binned: bool
) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """(times s, values) of one rank in one panel, per time bin or (``binned``
    False) per read: the share off the CPU or the count per second of wall time."""
    got = _counter_reads(reads, panel)
    if got is None:
        return None
    mid, num, wall = got
    x, y = binned_ratio(mid, num, wall, edges) if binned else (mid, num / wall)
    return x / 1e9, y * (1.0 if panel is OFF_CPU else 1e9)


def _counter_band(
    fig: Any,
    counters: dict[int, RankReads],
    grey: list[int],
    panel: Optional[str],
    edges: np.ndarray,
    row: int,
) -> None:
    """The grey ranks of one panel as one band over the time bins."""
    centres = 0.5 * (edges[:-1] + edges[1:]) / 1e9
    values = np.full((len(grey), centres.size), np.nan)
    for i, rank in enumerate(grey):
        got = _counter_course(counters[rank], panel, edges, binned=True)
        if got is not None:
            values[i, np.searchsorted(centres, got[0])] = got[1]
    seen = ~np.isnan(values).all(axis=0)
    if seen.any():
        pct = np.nanpercentile(values[:, seen], [5, 50, 95], axis=0)
        _band(fig, pct, centres[seen], len(grey), "y", row=row)


def _panel_title(panel: Optional[str]) -> str:
    if panel is OFF_CPU:
        return "off its CPU (share of wall time)"
    return f"{html.escape(panel)} per second"


def _counter_hover(rank: int, panel: Optional[str]) -> str:
    if panel is OFF_CPU:
        return f"rank {rank}: %{{y:.1%}} off its CPU at %{{x:.3f}} s<extra></extra>"
    return (
        f"rank {rank}: %{{y:.4g}} {html.escape(panel)} per s at %{{x:.3f}} s"
        "<extra></extra>"
    )


def _counter_lines(
    fig: Any,
    result: Analysis,
    counters: dict[int, RankReads],
    ranks: list[int],
    panel: Optional[str],
    edges: np.ndarray,
    row: int,
) -> None:
    """One line per rank of ``ranks`` in one panel, styled as in every figure; the
    legend entries in the first panel only (the panels share them)."""
    import plotly.graph_objects as go

    notes, colors = verdict_words(result), rank_colors(result)
    first_peer = row == 1
    for rank in ranks:
        many = counters[rank].end_ns.size > len(edges) - 1  # else each read
        got = _counter_course(counters[rank], panel, edges, binned=many)
        if got is None:
            continue
        style = _trace_style(rank, colors, notes, first_peer)
        first_peer = first_peer and style["legendgroup"] != "peers"
        style["showlegend"] = style["showlegend"] and row == 1
        fig.add_trace(
            go.Scatter(
                x=got[0],
                y=got[1].astype(np.float32),
                mode="lines" if got[0].size > 1 else "markers",
                hovertemplate=_counter_hover(rank, panel),
                **style,
            ),
            row=row,
            col=1,
        )


def counter_timeline_figure(result: Analysis, prep: Prepared) -> Optional[Any]:
    """Per rank, the counters (PERFVAR_METRICS) over the run, one panel each: the
    share of wall time off the CPU (1 - task clock / interval of each read) where
    a task clock was counted, then every other counter's count per second of wall
    time, per traced thread. One line per rank (many grey ranks: one band), the
    ranks a verdict names highlighted; per time bin for long runs. None without
    counter reads."""
    from plotly.subplots import make_subplots

    counters = prep.counters
    panels = _counter_panels(counters)
    if not panels:
        return None
    lines, grey = _split(counters, verdict_words(result), rank_colors(result))
    per_rank = max(r.end_ns.size for r in counters.values())
    edges = time_bins(
        min(float(r.since_ns.min()) for r in counters.values()),
        max(float(r.end_ns.max()) for r in counters.values()),
        per_rank,
        len(panels) * (len(lines) + 3 * bool(grey)),
    )
    fig = make_subplots(
        rows=len(panels),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=min(0.08, 0.3 / len(panels)),
        subplot_titles=[_panel_title(p) for p in panels],
    )
    for row, panel in enumerate(panels, start=1):
        if grey:
            _counter_band(fig, counters, grey, panel, edges, row)
        _counter_lines(fig, result, counters, lines, panel, edges, row)
    nbins = len(edges) - 1
    binned = "" if per_rank <= nbins else f", per time bin ({nbins} bins)"
    layout(
        fig,
        f"Counters over the run, per rank{binned}",
        "",
        "",
        height=int(min(2400, 110 + 190 * len(panels))),
    )
    fig.update_xaxes(title_text="time since the trace's origin (s)", row=len(panels))
    fig.update_yaxes(rangemode="tozero")
    if panels[0] is OFF_CPU:
        fig.update_yaxes(tickformat=".0%", row=1)
    return fig


def noise_by_cpu_figure(result: Analysis, noise: dict[int, RankNoise]) -> Optional[Any]:
    """Compute time lost to interruptions on each CPU (ms), stacked by rank (the
    grey ranks summed into one bar). None when nothing was lost."""
    import plotly.graph_objects as go

    cpus = sorted({c for n in noise.values() for c, v in n.lost_by_cpu.items() if v})
    if not cpus:
        return None
    names = {c: "cpu ?" if c < 0 else f"cpu {c}" for c in cpus}
    colors = rank_colors(result)
    fig = go.Figure()
    others: dict[int, float] = {}
    for rank, n in sorted(noise.items()):
        lost = {c: v / 1e6 for c, v in sorted(n.lost_by_cpu.items()) if v > 0}
        if not lost:
            continue
        if rank not in colors:
            for c, v in lost.items():
                others[c] = others.get(c, 0.0) + v
            continue
        fig.add_trace(
            go.Bar(
                x=[names[c] for c in lost],  # only its own CPUs: sparse, small
                y=list(lost.values()),
                name=f"rank {rank}",
                marker_color=colors[rank],
                hovertemplate=f"rank {rank}, %{{x}}: %{{y:.3g}} ms lost "
                f"({n.fraction:.2%} of the rank's compute time)<extra></extra>",
            )
        )
    if others:
        fig.add_trace(
            go.Bar(
                x=[names[c] for c in sorted(others)],
                y=[others[c] for c in sorted(others)],
                name="other ranks",
                marker_color=PEER,
                hovertemplate="other ranks, %{x}: %{y:.3g} ms lost<extra></extra>",
            )
        )
    layout(
        fig,
        "Compute time lost to interruptions, per CPU",
        "CPU the segment began on",
        "time lost (ms)",
    )
    fig.update_layout(barmode="stack", legend_traceorder="normal")
    fig.update_xaxes(
        type="category", categoryorder="array", categoryarray=list(names.values())
    )
    return fig


def noise_lengths_figure(
    result: Analysis, noise: dict[int, RankNoise]
) -> Optional[Any]:
    """What the interruptions cost by their length: per rank, the compute time lost
    (ms) in interruptions of each length (time lost per interrupted segment,
    log-spaced bins), so the few long time slices that cost the most stand out
    from the many short interrupts; noisy ranks highlighted, the grey ranks as
    their mean per rank. None without interruptions."""
    import plotly.graph_objects as go

    lengths = {r: np.concatenate(n.excess_ns) for r, n in noise.items() if n.excess_ns}
    lengths = {r: v[v > 0] for r, v in lengths.items()}
    lengths = {r: v for r, v in lengths.items() if v.size}
    if not lengths:
        return None
    pooled = np.concatenate(list(lengths.values()))
    lo, hi = float(pooled.min()), float(pooled.max())
    edges = np.geomspace(lo, hi * 1.0001 if hi > lo else lo * 2, NOISE_BINS + 1)
    centres = np.sqrt(edges[:-1] * edges[1:])
    scale, unit = unit_of(float(np.median(pooled)))
    colors = rank_colors(result)
    noisy = {a.rank for a in result.anomalies if subject(a.kind) == NOISE}
    notes = {r: ["noisy core"] for r in noisy}
    fig = go.Figure()

    def add(name: str, values: np.ndarray, ranks: int, style: dict[str, Any]) -> None:
        counts, _ = np.histogram(values, edges)
        lost, _ = np.histogram(values, edges, weights=values)
        fig.add_trace(
            go.Scatter(
                x=centres / scale,
                y=lost / 1e6 / ranks,
                customdata=counts / ranks,
                mode="lines",
                line_shape="hvh",
                hovertemplate=f"{name}: %{{y:.3g}} ms lost in %{{customdata:.3g}} "
                f"interruptions of ~%{{x:.3g}} {unit}<extra></extra>",
                **style,
            )
        )

    grey = [r for r in lengths if r not in colors and r not in notes]
    if grey:
        pooled_grey = np.concatenate([lengths[r] for r in grey])
        style = _trace_style(grey[0], colors, notes, True)
        style["name"] = f"other ranks ({len(grey)}), mean per rank"
        add("other ranks, per rank", pooled_grey, len(grey), style)
    for rank in _draw_order([r for r in lengths if r not in grey], notes):
        add(f"rank {rank}", lengths[rank], 1, _trace_style(rank, colors, notes, True))
    layout(
        fig,
        "Time lost by interruption length",
        f"interruption length: time lost per interrupted segment ({unit}, log scale)",
        "time lost (ms)",
    )
    fig.update_xaxes(type="log", dtick=1)  # a label per decade, no minor clutter
    return fig


def calibration_figure(result: Analysis) -> Optional[Any]:
    """t_min and t_diff (ns, log scale) of every rank in each calibrated cache
    state, side by side. None when no rank has a calibration."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    points: dict[str, dict[str, list]] = {}
    for r in result.ranks:
        for st in r.calibration_states or []:
            if st.get("t_min_ns") is None or st.get("t_diff_ns") is None:
                continue
            got = points.setdefault(st["label"], {"rank": [], "min": [], "diff": []})
            got["rank"].append(r.rank)
            got["min"].append(st["t_min_ns"])
            got["diff"].append(st["t_diff_ns"])
    if not points:
        return None
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("t_min (precision)", "t_diff (sensitivity)")
    )
    symbols = ("circle", "square", "diamond", "triangle-up", "x")
    for i, (label, got) in enumerate(
        sorted(points.items(), key=lambda item: label_order(item[0]))
    ):
        name = "flush 0" if label == "0" else label
        color = STATE_COLORS[i % len(STATE_COLORS)]
        for col, key in ((1, "min"), (2, "diff")):
            fig.add_trace(
                go.Scatter(
                    # Arrays, not lists: plotly writes them in binary (a thousand
                    # ranks' points in kB, not hundreds of kB of decimals).
                    x=np.array(got["rank"], dtype=np.int32),
                    y=np.array(got[key], dtype=np.float32),
                    mode="markers",
                    name=name,
                    legendgroup=label,
                    showlegend=col == 1,
                    marker={
                        "symbol": symbols[i % len(symbols)],
                        "size": 9,
                        "color": color,
                    },
                    hovertemplate=f"rank %{{x}}, {name}: t_{key} %{{y:.4g}} ns"
                    "<extra></extra>",
                ),
                row=1,
                col=col,
            )
    layout(fig, "Calibration per rank and cache state", "", "", 380)
    fig.update_layout(margin={"t": 80})
    fig.update_yaxes(type="log", title_text="ns (log scale)", dtick="D2")
    fig.update_xaxes(title_text="rank", type="category")
    return fig


def waits_by_rank(result: Analysis) -> dict[int, dict[str, Any]]:
    """rank -> ``waited_ns`` (time its MPI calls spent waiting for other ranks),
    ``caused_ns`` (time the other ranks spent waiting for it), ``for`` (cause rank
    -> ns it waited for that rank, the largest few first) and ``for_ranks`` (how
    many ranks it waited for), from ``wait_states`` ``by_rank``. Every rank of the
    result is there (zeros when it neither waited nor made others wait); {}
    without wait states."""
    ws = result.wait_states
    if ws.get("by_rank") is None:
        return {}

    def blank() -> dict[str, Any]:
        return {"waited_ns": 0.0, "caused_ns": 0.0, "for": {}, "for_ranks": 0}

    out = {r.rank: blank() for r in result.ranks}
    for e in ws["by_rank"]:
        out[e["rank"]] = {
            "waited_ns": e["waited_ns"],
            "caused_ns": e["caused_ns"],
            "for": {q: ns for q, ns in e["waited_for"]},
            "for_ranks": e["waited_for_ranks"],
        }
    return dict(sorted(out.items()))


def waits_figure(result: Analysis) -> Optional[Any]:
    """Per rank, the time it waited in MPI calls for other ranks and the time the
    other ranks waited for it (its delays, passed-on waiting included), as bars
    with a unit chosen for the largest. Beyond HEATMAP_ROWS ranks, those no finding
    names are binned as in the heat map (heatmap_rows), each bin's bars the largest
    of its ranks'. None when nobody waited."""
    import plotly.graph_objects as go

    per = waits_by_rank(result)
    top = max((max(v["waited_ns"], v["caused_ns"]) for v in per.values()), default=0.0)
    if top <= 0:
        return None
    scale, unit = unit_of(top)
    named = {a.rank for a in result.anomalies + (result.minor)}
    groups = heatmap_rows(list(per), named & set(per))
    x = [f"rank {g[0]}" if len(g) == 1 else f"ranks {g[0]}-{g[-1]}" for g in groups]
    wall = result.wait_states.get("wall_ns") or 0.0

    def share(ns: float) -> str:
        return f" ({ns / wall:.1%} of the wall time)" if wall > 0 else ""

    fig = go.Figure()
    for key, name, color, verb in (
        ("waited_ns", "waited for others", "#1f77b4", "waited"),
        ("caused_ns", "others waited for it", "#d62728", "made others wait"),
    ):
        values = [max(per[r][key] for r in g) for g in groups]
        fig.add_trace(
            go.Bar(
                x=x,
                y=[v / scale for v in values],
                name=name,
                marker_color=color,
                customdata=[
                    share(v) + (", the most of them" if len(g) > 1 else "")
                    for v, g in zip(values, groups)
                ],
                hovertemplate=f"%{{x}} {verb} %{{y:.4g}} {unit}%{{customdata}}"
                "<extra></extra>",
            )
        )
    layout(
        fig,
        "Waiting in MPI calls, per rank: suffered and caused",
        "",
        f"time ({unit})",
        300,
    )
    fig.update_layout(barmode="group", legend_traceorder="normal")
    fig.update_xaxes(type="category")
    return fig
