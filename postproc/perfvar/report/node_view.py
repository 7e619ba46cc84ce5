"""The views by node and socket of an analysis of ranks on several nodes.

A node x socket heat map (each cell: the median over its ranks of their median shift
against their peers in the judged segment classes, %, marked with the finding of that
node or socket if there is one), and per node with a finding the ranks under it, for
report.html. Beyond ``HEATMAP_ROWS`` nodes, the nodes no finding touches are binned
(perfvar.report.plots.heatmap_rows over node indexes). Pure functions over the
analysis (perfvar.result); thread-safe.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from perfvar.detect import KINDS, subject
from perfvar.detect.finding import GROUP
from perfvar.report.plots import HEATMAP_ROWS, heatmap_rows, layout, shift_grid
from perfvar.report.text import (
    LISTED_RANKS,
    counts_words,
    nodes_of,
    verdict_counts,
)
from perfvar.result import Analysis, RankRow
from perfvar.units import compact_ranges

# Nodes listed with their ranks (the ones with a finding first), at most.
LISTED_NODES = 32


def _rank_shifts(result: Analysis) -> dict[int, float]:
    """rank -> the median of its judged classes' shifts against their peers (rel)."""
    by_rank: dict[int, list[float]] = {}
    for j in result.judgements:
        if j.shift_rel is not None:
            by_rank.setdefault(j.rank, []).append(j.shift_rel)
    return {r: float(np.median(v)) for r, v in by_rank.items()}


def level_marks(result: Analysis) -> dict[tuple[str, Optional[int]], str]:
    """(node, socket or None for the whole node) -> the words of its findings."""
    out: dict[tuple[str, Optional[int]], list[str]] = {}
    for a in result.anomalies + result.minor:
        if subject(a.kind) != GROUP:
            continue
        key = (a.evidence["node"], a.evidence.get("socket"))
        out.setdefault(key, []).append(KINDS[a.kind].word)
    return {k: ", ".join(dict.fromkeys(v)) for k, v in out.items()}


def _sockets(nodes: dict[str, list[RankRow]]) -> list[Optional[int]]:
    found = {r.socket for rows in nodes.values() for r in rows}
    known = sorted(s for s in found if s is not None)
    return known + ([None] if None in found else [])


def node_heatmap(result: Analysis) -> Optional[Any]:
    """Nodes x sockets, each cell the median of its ranks' shifts (%), marked with
    its finding; None for a job on one node, or of a few ranks (LISTED_RANKS: their
    table says it all)."""
    nodes = nodes_of(result)
    if len(nodes) < 2 or len(result.ranks) <= LISTED_RANKS:
        return None
    sockets = _sockets(nodes)
    shifts, marks = _rank_shifts(result), level_marks(result)
    names = list(nodes)
    kept = {
        i
        for i, n in enumerate(names)
        if any(k[0] == n for k in marks) or set(verdict_counts(nodes[n])) != {"ok"}
    }
    rows = heatmap_rows(list(range(len(names))), kept, HEATMAP_ROWS)
    z = np.full((len(rows), len(sockets)), np.nan)
    text = [["" for _ in sockets] for _ in rows]
    info = [["" for _ in sockets] for _ in rows]
    for i, group in enumerate(rows):
        for k, sock in enumerate(sockets):
            mine = [r for g in group for r in nodes[names[g]] if r.socket == sock]
            v = [shifts[r.rank] for r in mine if r.rank in shifts]
            z[i, k] = 100 * float(np.median(v)) if v else np.nan
            if len(group) == 1:
                node = names[group[0]]
                text[i][k] = marks.get((node, sock)) or marks.get((node, None), "")
            info[i][k] = _cell_words(mine)
    labels = [
        names[g[0]] if len(g) == 1 else f"{len(g)} nodes {names[g[0]]}..{names[g[-1]]}"
        for g in rows
    ]
    sockets_x = [f"socket {s}" if s is not None else "socket ?" for s in sockets]
    hover = "%{y}, %{x}: median shift %{z:+.3f}%<br>%{customdata}<extra></extra>"
    fig = shift_grid(z, sockets_x, labels, text, info, hover)
    title = "Nodes and sockets: median shift of their ranks"
    layout(fig, title, "", "", fig.layout.height)
    fig.update_yaxes(autorange="reversed", type="category")
    return fig


def _cell_words(rows: list[RankRow]) -> str:
    """ "32 ranks 0-31: 31 ok, 1 noisy core"."""
    if not rows:
        return "no rank"
    words = counts_words(verdict_counts(rows))
    return f"{len(rows)} ranks {compact_ranges(r.rank for r in rows)}: {words}"


def listed_nodes(result: Analysis) -> list[tuple[str, str, list[list[str]]]]:
    """The nodes a finding touches or with a rank not ok (LISTED_NODES at most):
    (node, its findings' words or its ranks' verdicts, rows of [rank, socket, cpus,
    verdict])."""
    nodes, marks = nodes_of(result), level_marks(result)
    out = []
    for node, rows in nodes.items():
        words = ", ".join(
            f"{w} (socket {s})" if s is not None else w
            for (n, s), w in marks.items()
            if n == node
        )
        if not words and set(verdict_counts(rows)) == {"ok"}:
            continue
        table = [
            [
                str(r.rank),
                str(r.socket) if r.socket is not None else "?",
                compact_ranges(r.cpus),
                r.verdict,
            ]
            for r in rows
        ]
        out.append((node, words or _cell_words(rows), table))
    return out[:LISTED_NODES]
