"""Detector "slow phase": a rank slower than its own baseline for part of the run.

Per segment class present on two or more ranks, and per rank r with at least
``MIN_SAMPLES`` kept samples in it:

1. the class's time span is cut into B bins (about ``PER_BIN`` samples of a rank
   each, 20 <= B <= 400); in each bin d = median log-duration of r minus that of its
   peers (pooled). The peers' median removes what the application does in the
   window (all ranks enter a heavier phase together), so d is r's own speed.
2. change points on d: PELT with an L2 cost (ruptures' KernelCPD with the linear
   kernel: the L2 cost, in C), at least 5 bins per segment, penalty
   3 sigma^2 log(B) (sigma from the median absolute difference of consecutive
   bins, robust to the steps themselves; their root mean square when most
   consecutive bins are equal, as with quantised durations).
3. the baseline is the median of d over the run; a stretch between change points
   whose level (median d) exceeds it by more than ``phase_floor`` is a candidate,
   neighbouring candidates are merged; a candidate covering 80 % of the run or
   more is no phase (the rank is slow throughout: a slow segment or core), and one
   that costs less than ``MIN_COST`` (1 %) of the rank's time in the class (its
   excess times its share of the bins) is a hiccup, not a phase.
4. the candidate's bins against the other bins: one-sided Mann-Whitney U, q <
   alpha after Benjamini-Hochberg over all candidates; and its excess in ns (at
   the rank's median outside the window) must exceed the cell's t_diff.

Classes with fewer than ``MIN_SAMPLES`` samples on a rank (a real program's code
keyed by call paths splits its compute into dozens of classes of a sample per time
step) are judged together: per rank, each of their samples relative to its class's
centre over all ranks (log-duration minus the class's median), pooled into one
series that goes through steps 1-4 as a class of its own when it has at least
``MIN_POOLED`` samples (20 bins of 5). A window found there
is reported per pooled class (``pooled`` in the evidence, each with its own
excess inside the window against its peers' and the time it lost); its excess is
theirs weighted by the rank's time in each (the share of that time lost), per
segment the time lost over the segments inside.

Windows of one rank found in several classes that overlap are merged into one
anomaly (``segment`` None, the classes in the evidence). ``start_ns``/``end_ns``
are ns since the trace's time origin. :func:`outside` gives the cells without the
windows, so the steady-state detectors judge the rest of the run. Pure functions;
thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

import numpy as np

from perfvar.detect.finding import WINDOW, AnomalyJson, FindingKind
from perfvar.detect.words import probes_clause, where
from perfvar.stats.cells import (
    ClassPool,
    by_segment,
    class_pool,
    median_of_rest,
    unjudged_reason,
)
from perfvar.stats.compare import fdr, log_ns, mann_whitney_greater, rel
from perfvar.stats.core_speed import MORE, SLOWER
from perfvar.stats.model import Anomaly, Cell, DetectorResult, DetectParams, Prepared
from perfvar.stats.order import median
from perfvar.units import fmt_ns, fmt_pct

KIND = "slow_phase"
MIN_SAMPLES = 400
PER_BIN = 20
MIN_BINS, MAX_BINS = 20, 400
# The pooled series of a rank's small classes needs only MIN_BINS bins of a few
# samples: a run of a hundred time steps (a molecular-dynamics code's 100 steps in
# 4 s, a sample per class and step) has a few hundred across its classes, never 400.
MIN_POOLED = MIN_BINS * 5
MIN_SIZE = 5  # bins per stretch between change points
MAX_COVER = 0.8  # a "phase" longer than this share of the run is the whole run
MIN_PER_BIN = 3  # samples a rank (or its pooled peers) needs in a bin
# A window must cost the rank this share of its time in the class (excess x share of
# the bins): shorter hiccups (5-20 ms at +4-12 % on a shared VM's vCPU) are not
# what a user acts on, and a clean run has several.
MIN_COST = 0.01
POOLED = "pooled"  # the segment label of the pooled series' windows


@dataclass
class _Window:
    rank: int
    segment: str  # the class's id, or POOLED
    start_ns: float
    end_ns: float
    excess_rel: float
    excess_ns: float
    p_value: float
    bins: int
    bins_total: int
    t_diff_ns: float
    # The pooled series' window: (class id, its excess_rel inside the window, the
    # rank's time it lost there, ns) of each class pooled; empty for a class's own.
    parts: tuple[tuple[str, float, float], ...] = ()


def _bin_medians(x: np.ndarray, idx: np.ndarray, bins: int) -> np.ndarray:
    """Median of x per bin index (NaN for bins with fewer than MIN_PER_BIN)."""
    order = np.lexsort((x, idx))  # by bin, then by value
    return _sorted_bin_medians(x[order], idx[order], bins)


def _sorted_bin_medians(xs: np.ndarray, ids: np.ndarray, bins: int) -> np.ndarray:
    """_bin_medians of values already sorted by (bin index, value)."""
    if xs.size == 0:
        return np.full(bins, np.nan)
    cuts = np.searchsorted(ids, np.arange(bins + 1))
    lo, count = cuts[:-1], np.diff(cuts)
    full = count >= MIN_PER_BIN
    # The middle one or the mean of the middle two, as np.median.
    a = xs[np.where(full, lo + (count - 1) // 2, 0)]
    b = xs[np.where(full, lo + count // 2, 0)]
    return np.where(full, (a + b) / 2.0, np.nan)


class _PooledBins:
    """A class's pool sorted by (bin, value) once per bin count, with its bins'
    medians (_sorted_bin_medians); a rank's peers' are those without the rank's
    share of the pool (one stretch of it, ClassPool.share), found in the few bins
    that share falls in rather than by a copy of the pool for every rank: the same
    figures. Read-only once made."""

    def __init__(self, values: np.ndarray, idx: np.ndarray, bins: int) -> None:
        order = np.lexsort((values, idx))
        self.xs, self.ids = values[order], idx[order]
        self.at = np.empty(order.size, dtype=np.int64)  # pool row -> sorted position
        self.at[order] = np.arange(order.size)
        self.cuts = np.searchsorted(self.ids, np.arange(bins + 1))
        self.all = _sorted_bin_medians(self.xs, self.ids, bins)

    def without(self, lo: int, hi: int) -> np.ndarray:
        """The bins' medians of the pool without its rows ``lo``..``hi`` - 1."""
        if hi <= lo:
            return self.all
        gone = np.sort(self.at[lo:hi])
        out = self.all.copy()
        for b in np.unique(self.ids[gone]).tolist():
            a, z = int(self.cuts[b]), int(self.cuts[b + 1])
            skip = gone[(gone >= a) & (gone < z)] - a
            left = z - a - skip.size
            out[b] = (
                median_of_rest(self.xs[a:z], skip) if left >= MIN_PER_BIN else np.nan
            )
        return out


def _step_sigma(steps: np.ndarray) -> float:
    """The noise sigma of the bins from their consecutive differences: the median
    absolute difference (robust to the steps themselves), or, when more than half
    the differences are 0 (bin medians on a grid: work that takes the same ticks
    every time), their root mean square, which is 0 only when d is constant. With
    the median alone such a run had sigma 0 and no change point however large its
    step."""
    sigma = median(np.abs(steps)) / (0.6745 * np.sqrt(2))
    if sigma > 0:
        return sigma
    return float(np.sqrt(np.mean(steps**2))) / np.sqrt(2)


def _stretches(d: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) index ranges of d between change points (PELT, L2 cost)."""
    import ruptures

    n = d.size
    steps = np.diff(d)
    sigma = _step_sigma(steps) if n > 1 else 0.0
    if n < 2 * MIN_SIZE or sigma <= 0:
        return [(0, n)]
    # The linear kernel's cost is the L2 cost: the change points of
    # ruptures.Pelt(model="l2"), found by ruptures' C code instead of its Python.
    algo = ruptures.KernelCPD(kernel="linear", min_size=MIN_SIZE, jump=1)
    ends = [
        int(e)
        for e in algo.fit(d.reshape(-1, 1)).predict(pen=3.0 * sigma**2 * np.log(n))
    ]
    starts = [0] + ends[:-1]
    return list(zip(starts, ends))


def _windows_of_cell(
    cell: Cell, pool: ClassPool, seg_id: str, t_diff_ns: float, floor: float
) -> list[_Window]:
    rank = cell.rank
    t0, t1 = pool.first_ns, pool.last_ns
    bins = int(np.clip(cell.n // PER_BIN, MIN_BINS, MAX_BINS))
    if t1 <= t0:
        return []
    edges = np.linspace(t0, t1, bins + 1)

    def index(start: np.ndarray) -> np.ndarray:
        return np.clip(np.searchsorted(edges, start, side="right") - 1, 0, bins - 1)

    mine = _bin_medians(log_ns(cell.samples_ns), index(cell.start_ns), bins)
    if ("bins", bins) not in pool.memo:
        pool.memo[("bins", bins)] = _PooledBins(
            pool.samples_log, index(pool.start_ns), bins
        )
    theirs = pool.memo[("bins", bins)].without(*pool.share(rank))
    valid = np.nonzero(np.isfinite(mine) & np.isfinite(theirs))[0]
    if valid.size < 2 * MIN_SIZE:
        return []
    d = (mine - theirs)[valid]
    baseline = median(d)
    flagged = np.zeros(d.size, dtype=bool)
    # A stretch's median is at most d's largest bin: with no bin above the floor no
    # stretch can be, and the change points (and ruptures' import) are not needed.
    if float(d.max()) - baseline <= np.log1p(floor):
        return []
    for lo, hi in _stretches(d):
        if median(d[lo:hi]) - baseline > np.log1p(floor):
            flagged[lo:hi] = True
    out = []
    for lo, hi in _runs(flagged):
        if hi - lo >= MAX_COVER * d.size:
            continue
        inside = d[lo:hi]
        rest = np.concatenate([d[:lo], d[hi:]])
        level = median(inside) - median(rest)
        if rel(level) * (hi - lo) / d.size < MIN_COST:
            continue
        p = mann_whitney_greater(inside, rest)
        start, end = edges[valid[lo]], edges[valid[hi - 1] + 1]
        outside = (cell.start_ns < start) | (cell.start_ns >= end)
        base_ns = median(cell.samples_ns[outside])
        excess = rel(level)
        out.append(
            _Window(
                rank, seg_id, float(start), float(end), excess, base_ns * excess, p,
                hi - lo, int(d.size), t_diff_ns,
            )  # fmt: skip
        )
    return out


def _class_centre_log(prep: Prepared, segment: int) -> float:
    """The median log-duration of a class over all its ranks, derived once."""
    pool = class_pool(prep, segment)
    if "centre_log" not in pool.memo:
        pool.memo["centre_log"] = float(np.median(pool.samples_log))
    return pool.memo["centre_log"]


def _pooled(prep: Prepared, cells: list[Cell]) -> Cell:
    """One cell of ``cells``' samples in time order, each relative to its class's
    median over all ranks: exp(log-duration - that median)."""
    z = [
        np.exp(log_ns(c.samples_ns) - _class_centre_log(prep, c.segment)) for c in cells
    ]
    start = np.concatenate([c.start_ns for c in cells])
    order = np.argsort(start, kind="stable")
    values = np.concatenate(z)[order]
    return Cell(-1, cells[0].rank, int(values.size), values, cells[0].os_info,
                start_ns=start[order])  # fmt: skip


def _class_excess(cells: dict[int, Cell], rank: int, start: float, end: float) -> float:
    """Class ``cells``' (rank -> cell) excess (relative) on ``rank`` inside
    [start, end) over outside, beyond the same ratio of its peers (their median);
    0 with fewer than MIN_PER_BIN samples on a side."""

    def ratio(c: Cell) -> float:
        inside = (c.start_ns >= start) & (c.start_ns < end)
        if min(inside.sum(), (~inside).sum()) < MIN_PER_BIN:
            return float("nan")
        return float(np.median(c.samples_ns[inside]) / np.median(c.samples_ns[~inside]))

    peers = np.array([ratio(c) for q, c in cells.items() if q != rank])
    if not np.isfinite(peers).any():
        return 0.0
    x = ratio(cells[rank]) / float(np.nanmedian(peers)) - 1.0
    return float(x) if np.isfinite(x) else 0.0


def _pooled_windows(
    prep: Prepared, params: DetectParams, small: dict[int, list[tuple[Cell, float]]]
) -> list[_Window]:
    """The windows of each rank's small classes pooled (``small``: rank -> its
    judgeable cells of fewer than MIN_SAMPLES samples, with their t_diff in ns; at
    least MIN_POOLED samples together, on two ranks or more). A window's excess is
    its classes' excesses weighted by the rank's time in each inside it (the share
    of the rank's time lost there); per segment, the time lost over the segments
    inside."""
    pooled = {r: _pooled(prep, [c for c, _ in cells]) for r, cells in small.items()
              if sum(c.n for c, _ in cells) >= MIN_POOLED}  # fmt: skip
    if len(pooled) < 2:
        return []
    classes = by_segment(prep)
    pool = ClassPool(pooled)
    out = []
    for rank, cell in pooled.items():
        t_diff = max(td for _, td in small[rank])
        for w in _windows_of_cell(cell, pool, POOLED, t_diff, params.phase_floor):
            parts, times, count = [], [], 0
            for c, _ in small[rank]:
                inside = (c.start_ns >= w.start_ns) & (c.start_ns < w.end_ns)
                t = float(c.samples_ns[inside].sum())
                e = _class_excess(classes[c.segment], rank, w.start_ns, w.end_ns)
                parts.append((prep.segment_ids[c.segment], e, t * e / (1 + e)))
                times.append(t)
                count += int(inside.sum())
            x = [e for _, e, _ in parts]
            excess = float(np.average(x, weights=times)) if sum(times) > 0 else 0.0
            lost = sum(p[2] for p in parts)
            out.append(replace(w, excess_rel=excess, excess_ns=lost / max(count, 1),
                               parts=tuple(parts)))  # fmt: skip
    return out


def _runs(flags: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of the runs of True in flags."""
    edges = np.diff(np.concatenate([[0], flags.astype(np.int8), [0]]))
    return list(zip(np.nonzero(edges == 1)[0], np.nonzero(edges == -1)[0]))


def _merge(windows: list[_Window]) -> list[list[_Window]]:
    """Group one rank's windows that overlap in time."""
    groups: list[list[_Window]] = []
    for w in sorted(windows, key=lambda w: w.start_ns):
        if groups and w.start_ns < max(x.end_ns for x in groups[-1]):
            groups[-1].append(w)
        else:
            groups.append([w])
    return groups


def detect(prep: Prepared, params: Optional[DetectParams] = None) -> DetectorResult:
    """Name the slow phases of every rank; one anomaly per merged window."""
    params = params or DetectParams()
    result = DetectorResult()
    found: list[_Window] = []
    small: dict[int, list[tuple[Cell, float]]] = {}  # pooled below (not the probes)
    for seg, cells in by_segment(prep, probes=True).items():
        for cell in cells.values():
            reason, cal = unjudged_reason(prep, cell, params.min_samples)
            if reason:
                continue
            if cell.n < MIN_SAMPLES:
                if seg != prep.probe_segment:
                    small.setdefault(cell.rank, []).append((cell, float(cal.t_diff_ns)))
                continue
            found += _windows_of_cell(
                cell, class_pool(prep, seg), prep.segment_ids[seg],
                float(cal.t_diff_ns), params.phase_floor,
            )  # fmt: skip
    found += _pooled_windows(prep, params, small)
    qs = fdr([w.p_value for w in found])
    kept = [
        (w, q)
        for w, q in zip(found, qs)
        if q < params.alpha and w.excess_ns > w.t_diff_ns
    ]
    for rank in sorted({w.rank for w, _ in kept}):
        mine = [w for w, _ in kept if w.rank == rank]
        q_of = {id(w): q for w, q in kept}
        for group in _merge(mine):
            result.anomalies.append(_anomaly(prep, rank, group, q_of, params))
    return result


def _anomaly(
    prep: Prepared,
    rank: int,
    group: list[_Window],
    q_of: dict[int, float],
    params: DetectParams,
) -> Anomaly:
    start = min(w.start_ns for w in group)
    end = max(w.end_ns for w in group)
    top = max(group, key=lambda w: w.excess_rel)
    cells = [c for (_, r), c in prep.cells.items() if r == rank and c.cpu is not None]
    return Anomaly(
        kind=KIND,
        rank=rank,
        host=prep.hosts.get(rank),
        cpu=cells[0].cpu if cells else None,
        segment=(
            group[0].segment if len(group) == 1 and group[0].segment != POOLED else None
        ),
        excess_ns=top.excess_ns,
        start_ns=start,
        end_ns=end,
        evidence={
            "excess_rel": top.excess_rel,
            "duration_ns": end - start,
            "classes": [entry for w in group for entry in _class_entries(w, q_of)],
            "test": "PELT change points (ruptures, L2) on the rank's per-bin median "
            "log-duration relative to its peers; window vs rest: one-sided "
            "Mann-Whitney U",
            "alpha": params.alpha,
            "floor_rel": params.phase_floor,
        },
    )


def _class_entries(w: _Window, q_of: dict[int, float]) -> list[dict]:
    """The evidence's entries of one window: its class, or each class it pooled
    (``pooled`` true, the class's own excess, the pooled series' test)."""
    common = {
        "start_ns": w.start_ns,
        "end_ns": w.end_ns,
        "bins": w.bins,
        "bins_total": w.bins_total,
        "p_value": w.p_value,
        "q_value": q_of[id(w)],
    }
    if not w.parts:
        entry = {"segment": w.segment, "pooled": False, "excess_rel": w.excess_rel}
        return [dict(entry, excess_ns=w.excess_ns, **common)]
    return [
        {"segment": seg, "pooled": True, "excess_rel": x, "lost_ns": lost, **common}
        for seg, x, lost in w.parts
    ]


SHOWN_POOLED = 3  # pooled classes a report names for a window: those that lost the most


def shown_classes(classes: list[dict]) -> tuple[list[dict], list[dict]]:
    """A slow phase's evidence ``classes`` as the reports show them: (the classes
    with a series of their own, the SHOWN_POOLED pooled ones that lost the most time,
    most first)."""
    own = [c for c in classes if not c.get("pooled")]
    pooled = sorted(
        (c for c in classes if c.get("pooled")), key=lambda c: -c["lost_ns"]
    )
    return own, pooled[:SHOWN_POOLED]


def outside(prep: Prepared, phases: list[Anomaly]) -> Prepared:
    """``prep`` with each rank's samples inside its slow-phase windows left out, the
    kept ones and those the OS-noise filter removed alike (``raw_n``: the rest)."""
    windows: dict[int, list[tuple[float, float]]] = {}
    for a in phases:
        windows.setdefault(a.rank, []).append((a.start_ns, a.end_ns))
    if not windows:
        return prep

    def out_of(starts: np.ndarray, rank: int) -> np.ndarray:
        keep = np.ones(starts.size, dtype=bool)
        for lo, hi in windows.get(rank, []):
            keep &= (starts < lo) | (starts >= hi)
        return keep

    cells = {}
    for key, cell in prep.cells.items():
        keep = out_of(cell.start_ns, cell.rank)
        gone = out_of(cell.removed_start_ns, cell.rank)
        if not (keep.all() and gone.all()):
            cell = replace(
                cell,
                raw_n=int(np.count_nonzero(keep) + np.count_nonzero(gone)),
                samples_ns=cell.samples_ns[keep],
                start_ns=cell.start_ns[keep],
                samples_cpu=cell.samples_cpu[keep],
                removed_ns=cell.removed_ns[gone],
                removed_start_ns=cell.removed_start_ns[gone],
                removed_cpu=cell.removed_cpu[gone],
            )
        cells[key] = cell
    return replace(prep, cells=cells)


def _where_seen(classes: list[dict]) -> str:
    """Where a slow phase was seen: its classes, those judged together as one
    series (classes of too few segments each) summed up with the largest."""
    own, top = shown_classes(classes)
    parts = ["segments " + ", ".join(c["segment"] for c in own)] if own else []
    if top:
        n_pooled = sum(1 for c in classes if c.get("pooled"))
        lost = ", ".join(f"{c['segment']} {fmt_pct(c['excess_rel'])}" for c in top)
        parts.append(
            f"its {n_pooled} classes of too few segments each for a series of "
            f"their own, judged together (most time lost: {lost})"
        )
    return "in " + " and ".join(parts)


def describe(a: AnomalyJson, labels: dict[str, str]) -> str:
    """One sentence with the evidence of a slow phase."""
    ev = a["evidence"]
    seen = (
        f"in segment {a['segment']} [{labels.get(a['segment'], '?')}]"
        if a["segment"]
        else _where_seen(ev["classes"])
    )
    q = min(c["q_value"] for c in ev["classes"])
    return (
        f"{where(a)} was slow {seen} from {fmt_ns(a['start_ns'])} to "
        f"{fmt_ns(a['end_ns'])} (trace time; {fmt_ns(ev['duration_ns'])}): "
        f"{fmt_pct(ev['excess_rel'])} over its own baseline relative to its peers, "
        f"{fmt_ns(a['excess_ns'], signed=True)} per segment (change points; "
        f"q {q:.1g} < {ev['alpha']:g}, floor {fmt_pct(ev['floor_rel'], signed=False)})"
        f"{_while_it_lasted(ev)}"
    )


def _while_it_lasted(ev: dict) -> str:
    """What the probes of its window say: a slower core while it lasted, or a phase
    of the program; "" without probes there."""
    verdict = (ev.get("core_speed") or {}).get("verdict")
    if verdict == SLOWER:
        return f"; a slower core while it lasted: {probes_clause(ev)}"
    if verdict == MORE:
        return f"; a phase of the program (more work for a while): {probes_clause(ev)}"
    return f"; {probes_clause(ev)}" if probes_clause(ev) else ""


def _phrase(a: AnomalyJson) -> str:
    return (
        f"slow phase {fmt_ns(a['start_ns'])}-{fmt_ns(a['end_ns'])} "
        f"{fmt_pct(a['evidence']['excess_rel'])}"
    )


def _in_class(a: AnomalyJson, segment: str) -> bool:
    classes = [c["segment"] for c in a["evidence"].get("classes", [])]
    return segment in classes or a["segment"] == segment


FINDING = FindingKind(
    name=KIND,
    verdict=True,
    word="slow phase",
    describe=describe,
    phrase=_phrase,
    size_key="excess_rel",
    in_class=_in_class,
    transient=True,
    subject=WINDOW,
    summary_key="slow_phase_ranks",
)
