"""A rank's speed over time, told by its own segments of other classes around each
sample, and each sample's log-duration with that speed taken away.

On a shared host a vCPU's speed swings: measured beside CloverLeaf runs, a chain of
additions took 9.3 us or 18-21 us on the same vCPU in stretches of 0.1-1 s, each
vCPU on its own. A class's segments then vary 10-15 % from one to the next on each
rank, and a block of the run (perfvar.stats.blocks: 2.5 % of it, 0.16 s there)
holds one or two of them a rank, so a rank's common shift taken per block (the
median of its other classes' block shifts) is read at other moments than the
class's own segments, and a class slower by a few % cannot be told from the swing.
Read within ``WINDOW_NS`` of each segment, the swing is nearly the same for the
segment and its neighbours:

* residual of a sample: its log-duration minus its class's centre (the median over
  the ranks of their cell log-medians), so classes of different lengths compare;
* the rank's speed at a sample of class c: the median, over the rank's other
  classes with samples within one ``WINDOW_NS`` bin of it (the sample's bin and the
  two beside it), of each class's median residual there. Only the classes that
  hold ``WITNESS_SHARE`` of the rank's compute time, the longest first, tell the
  speed: the shortest ones (a few hundred ns between two calls of one exchange)
  move with what the calls before them did. One vote a class: a class of many
  short segments does not outvote the others, and a class slower on this rank (an
  anomaly) is one vote among at least ``MIN_CLASSES``, which the median does not
  follow. Fewer classes there: no speed, the sample is not corrected;
* the class's sensitivity to that speed (sensitivities()): how much of it the
  class follows, read from how its samples move with the speed within each rank
  over the run. Not every class follows its core whole: in CloverLeaf one class
  followed 0.06-0.54 of it in 19 runs and another 0.75-1.70 (a plain slope within
  the ranks); on a rank 27 % slower than its peer, the first, taken as following
  it whole, came out 19 % faster beyond its core, the mirror image of a slow class
  on the peer;
* corrected log-duration: log-duration minus the sensitivity times that speed.

The speed holds the rank's core as well (a slower core moves every class, each as
much as it follows it), so a class compared with its peers on corrected
log-durations is judged beyond its core, stretch by stretch. With fewer than
MIN_CLASSES other classes the median would follow one class, the mirror image of a
slow class on the other ones (perfvar.detect.slow_segment keeps its per-block
offset then).

Measured on the validation kit's CloverLeaf runs (7 s, 2 ranks, about 85 segments
a class a rank): corrected, a class's samples vary 7-11 % instead of 12-15 %; the
class with +10 % injected on one rank measured +3.8..+14.7 % beyond its peer
(slow_segment's excess, 10 runs), with +3 % -1.8..+7.2 %, and the same class in
clean runs -3.2..+3.6 %. Why 30 ms: a few segments of every class (2-13 ms) fall
within a bin and its neighbours, and the host's stretches are longer.

Pure functions over a Prepared's cells, derived once per Prepared; thread-safe as
long as one thread derives them.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import numpy as np

if TYPE_CHECKING:
    from perfvar.stats.model import Prepared

# Width of a bin (ns); a sample's speed is read in its bin and the two beside it.
WINDOW_NS = 30e6
WITNESS_SHARE = 0.95  # of a rank's compute time, in the classes that tell its speed
MIN_CLASSES = (
    3  # other classes in those bins for a speed: the median is not one class's
)
# A class's sensitivity to the rank's speed is 1 +- PRIOR_SD before its samples tell
# it: CloverLeaf's classes measured 0.06-1.70 (sensitivities()).
PRIOR_SD = 0.5
MIN_SLOPE_SAMPLES = 8  # samples with a speed a rank needs to tell the slope
# The speed's swing over the run must be twice its readings' noise (in variance)
# for a class's slope to be read: below, the slope is mostly the noise's.
MIN_RELIABILITY = 0.5


@dataclass(frozen=True)
class Corrected:
    """One cell's samples with the rank's speed taken away (those that had one):
    what perfvar.stats.blocks.ClassBlocks reads of a cell."""

    # exp(corrected log-duration): ns at the scale of the class's centre
    samples_ns: np.ndarray
    start_ns: np.ndarray
    share: float  # of the cell's kept samples that had a speed
    sensitivity: float = 1.0  # of the class to the rank's speed (sensitivities())

    @property
    def n(self) -> int:
        return int(self.samples_ns.size)


def _centres(prep: Prepared, cells: list[tuple[int, int]]) -> dict[int, float]:
    """segment -> median over its ranks of their cell log-medians."""
    by_seg: dict[int, list[float]] = {}
    for s, r in cells:
        by_seg.setdefault(s, []).append(prep.cells[(s, r)].log_median)
    return {s: float(np.median(v)) for s, v in by_seg.items()}


def _window_medians(
    row: np.ndarray,
    bins: np.ndarray,
    cls: np.ndarray,
    resid: np.ndarray,
    nbins: np.ndarray,
    nclasses: int,
) -> np.ndarray:
    """(rows x bins x classes) median residual of each class over a bin and its two
    neighbours, per row (a rank; ``nbins``: its bins; NaN where the class has none
    there, and beyond the row's own bins)."""
    import pandas as pd

    spread = np.concatenate([bins - 1, bins, bins + 1])
    rows = np.tile(row, 3)
    keep = (spread >= 0) & (spread < nbins[rows])
    width = int(nbins.max())
    # One integer per (row, bin, class), ordered as the triple: pandas groups one
    # key five times faster than three, into the same groups and medians.
    key = (rows[keep] * width + spread[keep]) * nclasses + np.tile(cls, 3)[keep]
    med = pd.DataFrame({"key": key, "e": np.tile(resid, 3)[keep]}).groupby("key")
    med = med["e"].median()
    out = np.full((nbins.size, width, nclasses), np.nan)
    at = med.index.to_numpy()
    out[at // (width * nclasses), at // nclasses % width, at % nclasses] = (
        med.to_numpy()
    )
    return out


def _witnesses(cells: list) -> np.ndarray:
    """Which of a rank's cells tell its speed: the longest in total time, down to
    those that together hold WITNESS_SHARE of its compute time. The shortest
    classes (a few hundred ns between two calls of one exchange) move with what
    the calls before them did, not with the core."""
    total = np.array([float(np.sum(c.samples_ns)) for c in cells])
    order = np.argsort(-total)
    before = np.cumsum(total[order]) - total[order]  # time of the longer ones
    keep = np.zeros(len(cells), dtype=bool)
    keep[order] = before < WITNESS_SHARE * total.sum()
    return keep


@dataclass(frozen=True)
class _Told:
    """One cell's kept samples with the rank's speed read around each (NaN where
    fewer than MIN_CLASSES other classes told it). Every cell's is held at once
    until the sensitivities are known, so it holds the cell's own arrays and its
    bins' readings, 4 bytes a sample, and gives each sample's on demand."""

    samples_ns: np.ndarray  # the cell's kept samples (ns), held, not copied
    start_ns: np.ndarray  # the cell's starts, held
    # each sample's run of a bin, an index into the two below (int32)
    bin_of: np.ndarray
    speeds: np.ndarray  # the rank's speed (log) in the bin of each of the cell's runs
    noises: np.ndarray  # the variance of that reading (_reading_noise)

    @property
    def logd(self) -> np.ndarray:
        """Each sample's log-duration (ns)."""
        return np.log(self.samples_ns)

    @property
    def speed(self) -> np.ndarray:
        """The rank's speed at each sample (log)."""
        return self.speeds[self.bin_of]

    @property
    def noise(self) -> np.ndarray:
        """The variance of each sample's reading."""
        return self.noises[self.bin_of]


def _bin_runs(bins: np.ndarray, cell: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(each sample's run, the bin of each run) over a rank's samples (``bins``,
    ``cell``: each sample's bin and cell, a cell's samples side by side): a run is
    samples side by side in one cell and one bin (a cell's samples come in time
    order, so its bins in runs)."""
    new = np.r_[True, (bins[1:] != bins[:-1]) | (cell[1:] != cell[:-1])]
    new = new[: bins.size]
    return np.cumsum(new) - 1, bins[new]


# Read together, a block of ranks holds at most this many window medians (ranks x
# bins x classes, float64: 32 MB) and this many samples (each grouped in three
# windows, four columns: about 25 MB).
MAX_WINDOWS = 1 << 22
MAX_SAMPLES = 1 << 18


def _rank_speeds(
    prep: Prepared,
    ranks: list[int],
    segs: list[int],
    centres: dict[int, float],
    witnesses: set[int],
) -> dict[tuple[int, int], _Told]:
    """(segment, rank) -> _Told for the cells ``segs`` (more than MIN_CLASSES) of
    each of ``ranks``, whose cells and witnesses (witness_classes) are those same
    segments; the ranks are read together, a block of them at a time."""
    witness = np.array([s in witnesses for s in segs])
    if np.count_nonzero(witness) < MIN_CLASSES:
        return {}  # no class has MIN_CLASSES others to tell the speed
    cells = [[prep.cells[(s, r)] for s in segs] for r in ranks]
    first = [min(float(c.start_ns.min()) for c in cs) for cs in cells]
    last = [max(float(c.start_ns.max()) for c in cs) for cs in cells]
    span = max(b - a for a, b in zip(first, last))
    per_rank = (int(span // WINDOW_NS) + 1) * len(segs)
    samples = max(sum(c.n for c in cs) for cs in cells)
    block = max(1, min(MAX_WINDOWS // per_rank, MAX_SAMPLES // max(samples, 1)))
    out = {}
    for lo in range(0, len(ranks), block):
        out.update(
            _block_speeds(cells[lo : lo + block], ranks[lo : lo + block], segs,
                          centres, witness)  # fmt: skip
        )
    return out


def _block_speeds(
    cells: list[list],
    ranks: list[int],
    segs: list[int],
    centres: dict[int, float],
    witness: np.ndarray,
) -> dict[tuple[int, int], _Told]:
    """_rank_speeds of one block of ranks (``cells``: each rank's cells of
    ``segs``), with one grouping of their window medians."""
    centre = np.array([centres[s] for s in segs])
    logd, cls, bins, row = [], [], [], []
    for i, cs in enumerate(cells):
        st = np.concatenate([c.start_ns for c in cs])
        k = np.concatenate([np.full(c.n, j) for j, c in enumerate(cs)])
        logd.append(np.concatenate([np.log(c.samples_ns) for c in cs]))
        cls.append(k)
        bins.append(((st - st.min()) // WINDOW_NS).astype(np.int64))
        row.append(np.full(st.size, i))
    nbins = np.array([int(b.max()) + 1 for b in bins])
    flat = [np.concatenate(x) for x in (row, bins, cls, logd)]
    told = witness[flat[2]]  # only the witnesses' samples are read for the speed
    resid = flat[3] - centre[flat[2]]
    windows = _window_medians(
        flat[0][told], flat[1][told], flat[2][told], resid[told], nbins, len(segs)
    )
    speeds, noises = [], []
    for k in range(len(segs)):
        others = np.delete(windows, k, axis=2)
        counted = np.count_nonzero(~np.isnan(others), axis=2)
        with np.errstate(all="ignore"):
            speed = np.where(
                counted >= MIN_CLASSES,
                np.nanmedian(np.where(counted[..., None] > 0, others, 0.0), axis=2),
                np.nan,
            )
        speeds.append(speed)
        noises.append(_reading_noise(others, speed, counted))
    out = {}
    for i, r in enumerate(ranks):
        run, run_bin = _bin_runs(bins[i], cls[i])
        lo = 0
        for k, s in enumerate(segs):
            # The cell's samples are lo..lo + n of the rank's: its log-durations and
            # starts are read from the cell itself, its readings per run of a bin.
            cell = cells[i][k]
            mine = run[lo : lo + cell.n]
            lo += cell.n
            first = int(mine[0]) if mine.size else 0
            at = run_bin[first : int(mine[-1]) + 1] if mine.size else run_bin[:0]
            out[(s, r)] = _Told(
                cell.samples_ns,
                cell.start_ns,
                (mine - first).astype(np.int32),
                speeds[k][i, at],
                noises[k][i, at],
            )
    return out


def _reading_noise(
    others: np.ndarray, speed: np.ndarray, counted: np.ndarray
) -> np.ndarray:
    """Per rank and bin, the variance of the speed read there: of a median of
    ``counted`` classes' window medians ``others`` (ranks x bins x classes) that
    scatter around it, pi/2 x their variance / their number (a median's, for
    normal scatter). The classes' own responses to the speed scatter them too: an
    upper bound."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a class with no window
        apart = others - speed[..., None]
        # A class's own offset on the rank, over the bins.
        apart -= np.nanmedian(apart, axis=-2, keepdims=True)
        scatter = np.nanmean(apart**2, axis=-1)
        return np.where(counted >= MIN_CLASSES, np.pi / 2 * scatter / counted, np.nan)


def _slope(told: list[_Told]) -> Optional[tuple[float, float]]:
    """(slope, its variance) of a class's log-duration on the rank's speed within
    each rank (each rank's own means taken away, so that what a rank adds to the
    class, an anomaly among it, is not read as speed), over its samples on every
    rank with MIN_SLOPE_SAMPLES of them with a speed; None where there are none,
    or where the speed swung less than MIN_RELIABILITY allows against its
    readings' noise (then the slope would be mostly the noise's: flat)."""
    ys, xs, noise = [], [], []
    for t in told:
        speed, reading = t.speed, t.noise
        ok = ~np.isnan(speed) & ~np.isnan(reading)
        if np.count_nonzero(ok) >= MIN_SLOPE_SAMPLES:
            logd, speed = t.logd[ok], speed[ok]
            ys.append(logd - logd.mean())
            xs.append(speed - speed.mean())
            noise.append(reading[ok])
    if not xs:
        return None
    y, x = np.concatenate(ys), np.concatenate(xs)
    sxx = float(np.sum(x * x))
    if y.size <= len(xs) + 1 or sxx <= 0.0:
        return None
    if 1.0 - float(np.mean(np.concatenate(noise))) * x.size / sxx < MIN_RELIABILITY:
        return None
    slope = float(np.sum(x * y)) / sxx
    return slope, float(np.sum((y - slope * x) ** 2)) / (y.size - len(xs) - 1) / sxx


def sensitivities(
    told: dict[tuple[int, int], _Told], witnesses: dict[int, set[int]]
) -> dict[int, float]:
    """segment -> how much of its rank's speed the class follows: 1 as much as the
    classes that tell the speed (their median response is the speed), 0.2 for a
    class a slower core hardly slows.

    Each class's slope (_slope) over the median slope of the witness classes
    (what flattens every slope alike, the readings' noise and their 90 ms window,
    cancels), shrunk toward 1 by its precision: 1 + (b - 1) PRIOR_SD^2 /
    (PRIOR_SD^2 + var(b)); never below 0. Where the witnesses' slopes are not
    told, every class is 1 (the speed taken away whole)."""
    by_seg: dict[int, list[_Told]] = {}
    for (s, _), t in told.items():
        by_seg.setdefault(s, []).append(t)
    slopes = {s: _slope(ts) for s, ts in by_seg.items()}
    said = {s for ss in witnesses.values() for s in ss}
    base = [b[0] for s, b in slopes.items() if b is not None and s in said]
    ref = float(np.median(base)) if len(base) >= MIN_CLASSES else 0.0
    out = {}
    for s, b in slopes.items():
        if b is None or ref <= 0.0:
            out[s] = 1.0
            continue
        slope, var = b[0] / ref, b[1] / ref**2
        out[s] = max(0.0, 1.0 + (slope - 1.0) * PRIOR_SD**2 / (PRIOR_SD**2 + var))
    return out


def _corrected(
    told: dict[tuple[int, int], _Told], witnesses: dict[int, set[int]]
) -> dict[tuple[int, int], Corrected]:
    """Each cell's samples with its class's sensitivity times the rank's speed
    taken away, in the order of ``told``, which it empties: each cell's reading is
    let go as its correction is made, so the two are not all held at once."""
    slope = sensitivities(told, witnesses)
    out = {}
    for s, r in list(told):
        t = told.pop((s, r))
        speed = t.speed
        ok = ~np.isnan(speed)
        out[(s, r)] = Corrected(
            samples_ns=np.exp(t.logd[ok] - slope[s] * speed[ok]),
            start_ns=t.start_ns[ok],
            share=np.count_nonzero(ok) / ok.size if ok.size else 0.0,
            sensitivity=slope[s],
        )
    return out


def _segments_by_rank(judgeable: set[tuple[int, int]]) -> dict[int, list[int]]:
    """rank -> the segments of its ``judgeable`` cells, in order."""
    by_rank: dict[int, list[int]] = {}
    for s, r in sorted(judgeable):
        by_rank.setdefault(r, []).append(s)
    return by_rank


def witness_classes(
    prep: Prepared, judgeable: set[tuple[int, int]]
) -> dict[int, set[int]]:
    """rank -> the segments of its ``judgeable`` cells that tell its speed and its
    core (_witnesses: the longest, down to WITNESS_SHARE of its compute time).
    perfvar.detect.slow_segment reads a rank's core from these only: in the demo's
    stencil one class holds 99 % of a rank's time, and the short ones between its
    calls ran 40 % faster on one rank than on the other, which no core does.
    Derived once per Prepared and set of cells."""
    key = ("witness_classes", frozenset(judgeable))
    if key in prep.derived:
        return prep.derived[key]
    out = {}
    for r, segs in _segments_by_rank(judgeable).items():
        keep = _witnesses([prep.cells[(s, r)] for s in segs])
        out[r] = {s for s, k in zip(segs, keep) if k}
    prep.derived[key] = out
    return out


def corrected_cells(
    prep: Prepared, judgeable: set[tuple[int, int]]
) -> dict[tuple[int, int], Corrected]:
    """(segment, rank) -> Corrected for the ``judgeable`` cells of every rank with
    more than MIN_CLASSES of them (derived once per Prepared and set of cells)."""
    key = ("local_speed", frozenset(judgeable))
    if key in prep.derived:
        return prep.derived[key]
    centres = _centres(prep, sorted(judgeable))
    witnesses = witness_classes(prep, judgeable)
    # Ranks with the same cells and witnesses read together, in rank order after.
    by_rank = _segments_by_rank(judgeable)
    alike: dict[tuple, list[int]] = {}
    for r, segs in by_rank.items():
        if len(segs) > MIN_CLASSES:
            alike.setdefault((tuple(segs), frozenset(witnesses[r])), []).append(r)
    read: dict[tuple[int, int], _Told] = {}
    for (segs, said), ranks in alike.items():
        read.update(_rank_speeds(prep, ranks, list(segs), centres, set(said)))
    told = {
        (s, r): read.pop((s, r))
        for r, segs in by_rank.items()
        for s in segs
        if (s, r) in read
    }
    out = _corrected(told, witnesses)  # empties told
    prep.derived[key] = out
    return out
