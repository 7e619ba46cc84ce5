"""Isolation-forest scores of one-dimensional samples, many distributions at once.

The algorithm of Liu, Ting and Zhou (ICDM 2008) with the choices of scikit-learn's
``IsolationForest(n_estimators=T, max_samples="auto").score_samples``, so that the
scores have the same distribution as scikit-learn's (not the same bits: the random
draws differ; tests/python/stats/test_isolation.py compares the two):

- each of the T trees sees psi = min(256, n) of the n samples, drawn without
  replacement;
- a node splits at a threshold drawn uniformly in [min, max) of its samples (a value
  <= the threshold goes left) until it holds one sample, only equal samples, or sits
  at depth ceil(log2 psi);
- a point's path length in a tree is its leaf's depth plus c(m) for a leaf of m
  samples, c the average path length of an unsuccessful binary-search-tree search
  (c(1) = 0, c(2) = 1, c(m) = 2 (ln(m - 1) + Euler's gamma) - 2 (m - 1) / m);
- its score is -2^(-mean path length / c(psi)), in [-1, 0); lower = more isolated.

Why not scikit-learn's own: its fit costs about 1.4 ms per tree whatever n (Python
work per tree), i.e. ~35 ms for a 25-tree calibration forest and ~0.3 s for a cell's
100-tree forest, and an analysis needs one forest per cell and per calibration
distribution it judges: minutes at a few dozen ranks. Here the samples are one
column, so a node is a contiguous run of a tree's sorted subsample; every node of
every tree of every distribution at one depth is split by the same few numpy
operations, and every sample is scored at once by a cumulative sum over the leaves'
boundaries in the sorted samples: O(T psi + n log n) per distribution.

The random numbers are a hash of (seed, tree, node) and of (seed, tree, draw), not a
stream: a distribution's scores depend on its samples and the seed alone, never on
what it is scored together with, so serial and parallel analyses agree exactly.

Where the package's libperfvar_stats is found (src/stats/isolation.h), each forest
is grown there instead, from the same random numbers and with every addition to a
path length in the same order: the same scores to the bit, about 3 times faster
(1024 groups of 500 samples: 0.46 s against 1.4-1.5 s; tests/python/stats/
test_isolation.py compares the two). Pure functions; thread-safe.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from functools import cache, lru_cache
from typing import Optional

import numpy as np

from perfvar.installation import library_candidates

MAX_SAMPLES = 256  # psi, scikit-learn's max_samples="auto"
_BATCH_NODES = 1 << 21  # subsample entries (trees x psi) built in one batch
_KEYS_UP_TO = 2048  # up to this n, a subsample is the psi smallest random keys
_DRAW_MARGIN = 64  # extra candidates beyond psi when drawing from larger n
_SPLIT, _SAMPLE = 1, 2  # purposes of the hashed random numbers
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def average_path_length(m: np.ndarray) -> np.ndarray:
    """c(m): the average path length of an unsuccessful search in a binary search
    tree of m nodes (float64, same shape as ``m``)."""
    m = np.asarray(m, dtype=np.float64)
    out = np.where(m == 2.0, 1.0, 0.0)
    big = m > 2.0
    mb = m[big]
    out[big] = 2.0 * (np.log(mb - 1.0) + np.euler_gamma) - 2.0 * (mb - 1.0) / mb
    return out


_C_OF_SIZE = average_path_length(np.arange(MAX_SAMPLES + 1))


def _depth_limit(psi: np.ndarray) -> np.ndarray:
    """The depth at which every node of a tree of ``psi`` samples is a leaf:
    ceil(log2 psi), at least 1 (int64, same shape as ``psi``)."""
    return np.ceil(np.log2(np.maximum(psi, 2))).astype(np.int64)


def scores(values: np.ndarray, trees: int, seed: int = 0) -> np.ndarray:
    """Isolation-forest score of each of ``values`` (1-D, >= 2 samples) under a
    forest of ``trees`` trees grown on them; float64 in [-1, 0), lower = outlier."""
    return scores_many([values], trees, seed)[0]


def scores_many(
    groups: Sequence[np.ndarray], trees: int, seed: int = 0
) -> list[np.ndarray]:
    """:func:`scores` of each group, one forest per group, in batches."""
    arrays = [np.asarray(g, dtype=np.float64).ravel() for g in groups]
    if any(a.size < 2 for a in arrays):
        raise ValueError("an isolation forest needs at least 2 samples")
    if trees < 1:
        raise ValueError("an isolation forest needs at least 1 tree")
    lib = native()
    if lib is not None:
        return [_score_native(lib, a, trees, seed) for a in arrays]
    out: list[np.ndarray] = []
    batch: list[np.ndarray] = []
    entries = 0
    for a in arrays:
        size = trees * min(MAX_SAMPLES, a.size)
        if batch and entries + size > _BATCH_NODES:
            out.extend(_score_batch(batch, trees, seed))
            batch, entries = [], 0
        batch.append(a)
        entries += size
    if batch:
        out.extend(_score_batch(batch, trees, seed))
    return out


LIBRARY = "libperfvar_stats.so"


@cache
def native() -> Optional[ctypes.CDLL]:
    """libperfvar_stats with its prototype declared, or None where it is not found
    (the forests are then grown with numpy)."""
    f64p = np.ctypeslib.ndpointer(np.float64, flags="C_CONTIGUOUS")
    i64p = np.ctypeslib.ndpointer(np.int64, flags="C_CONTIGUOUS")
    for path in library_candidates(LIBRARY, "LIBPERFVAR_STATS"):
        try:
            lib = ctypes.CDLL(path)
            fn = lib.perfvar_iforest_paths
        except (OSError, AttributeError):
            continue
        i64 = ctypes.c_int64
        fn.argtypes = [f64p, i64, i64p, i64, i64, f64p, i64, f64p, i64, f64p]
        fn.restype = ctypes.c_int
        return lib
    return None


def _score_native(lib: ctypes.CDLL, a: np.ndarray, trees: int, seed: int) -> np.ndarray:
    """:func:`scores` of one group by libperfvar_stats: the same bits as
    _score_batch."""
    n = a.size
    psi = min(MAX_SAMPLES, n)
    perm = np.argsort(a, kind="stable")
    values = np.ascontiguousarray(a[perm])
    draws = _split_draws(seed, trees)
    paths = np.empty(n)
    limit = int(_depth_limit(np.array(psi)))
    rc = lib.perfvar_iforest_paths(
        values, n, _subsample(n, trees, seed), trees, psi, draws, draws.shape[1],
        _C_OF_SIZE, limit, paths,
    )  # fmt: skip
    if rc != 0:
        raise MemoryError("isolation forest: no memory for its work space")
    norm = average_path_length(np.array([psi]))[0] * trees
    score = np.empty(n)
    score[perm] = -np.exp2(-paths / norm)
    return score


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (uint64 in, uint64 out; wraps modulo 2^64)."""
    z = z ^ (z >> np.uint64(30))
    z = z * np.uint64(0xBF58476D1CE4E5B9)
    z = z ^ (z >> np.uint64(27))
    z = z * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _uniform(seed: int, purpose: int, tree: np.ndarray, item: np.ndarray) -> np.ndarray:
    """A uniform float64 in [0, 1) for each (tree, item): a hash, not a stream."""
    base = np.uint64((seed * 4 + purpose) * int(_GOLDEN) % (1 << 64))
    z = _mix(base + np.asarray(tree, dtype=np.uint64) * _GOLDEN)
    z = _mix(z + np.asarray(item, dtype=np.uint64) * _GOLDEN)
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


@lru_cache(maxsize=8)
def _split_draws(seed: int, trees: int) -> np.ndarray:
    """The uniform draw of each (tree, heap number) a split can use: shape (trees,
    2^(depth limit + 1)); the same for every forest of ``seed`` and ``trees``."""
    heaps = 2 << int(np.ceil(np.log2(MAX_SAMPLES)))
    tree = np.arange(trees, dtype=np.uint64)[:, None]
    return _uniform(seed, _SPLIT, tree, np.arange(heaps, dtype=np.uint64)[None, :])


@lru_cache(maxsize=64)
def _subsample(n: int, trees: int, seed: int) -> np.ndarray:
    """psi sorted distinct indices in [0, n) for each tree: shape (trees, psi);
    the same for every forest of n samples (read-only)."""
    psi = min(MAX_SAMPLES, n)
    tree = np.arange(trees, dtype=np.uint64)[:, None]
    if psi == n:
        one = np.broadcast_to(np.arange(n), (trees, n))
    elif n <= _KEYS_UP_TO:
        keys = _uniform(seed, _SAMPLE, tree, np.arange(n, dtype=np.uint64)[None, :])
        one = np.sort(np.argpartition(keys, psi - 1, axis=1)[:, :psi], axis=1)
    else:
        one = _first_distinct_draws(n, psi, tree, seed)
    one = np.ascontiguousarray(one)
    one.flags.writeable = False
    return one


def _first_distinct_draws(n: int, psi: int, tree: np.ndarray, seed: int) -> np.ndarray:
    """For each tree, the first psi distinct values of its draws floor(u_c * n),
    c = 0, 1, ...: sequential sampling with rejection, i.e. uniform without
    replacement. Sorted, shape (trees, psi)."""
    count = psi + _DRAW_MARGIN
    while True:
        drawn = np.floor(
            _uniform(seed, _SAMPLE, tree, np.arange(count, dtype=np.uint64)[None, :])
            * n
        ).astype(np.int64)
        order = np.argsort(drawn, axis=1, kind="stable")
        ordered = np.take_along_axis(drawn, order, axis=1)
        first = np.ones_like(ordered, dtype=bool)
        first[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
        at = np.sort(np.where(first, order, count), axis=1)[:, :psi]
        if np.all(at < count):
            return np.sort(np.take_along_axis(drawn, at, axis=1), axis=1)
        count *= 2  # too many repeats: draw more (the first draws stay the same)


@lru_cache(maxsize=64)
def _below(n: int, trees: int, seed: int) -> np.ndarray:
    """below[t, c]: how many of tree t's subsample indices are < c, c = 0..n;
    shape (trees, n + 1) (read-only)."""
    marks = np.zeros((trees, n + 1), dtype=np.int32)
    np.put_along_axis(marks, _subsample(n, trees, seed) + 1, 1, axis=1)
    out = np.cumsum(marks, axis=1, dtype=np.int32)
    out.flags.writeable = False
    return out


def _score_batch(arrays: list[np.ndarray], trees: int, seed: int) -> list[np.ndarray]:
    """One forest per array, all grown level by level together."""
    by_size = sorted(range(len(arrays)), key=lambda i: arrays[i].size)
    sizes = np.array([arrays[i].size for i in by_size], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    total = int(starts[-1])
    # Each group's samples sorted, one group after the other: xs = flat[perm].
    flat = np.concatenate([arrays[i] for i in by_size])
    perm = np.concatenate(
        [
            np.argsort(arrays[i], kind="stable") + starts[at]
            for at, i in enumerate(by_size)
        ]
    )
    space = _SplitSpace(flat[perm], starts)
    psi = np.minimum(MAX_SAMPLES, sizes)
    limit = _depth_limit(psi)

    # Subsamples: a row is one tree of one group, its psi indices into xs; rows go
    # group by group, the groups of one size adjacent.
    classes = [(int(n), np.nonzero(sizes == n)[0]) for n in np.unique(sizes)]
    sub = np.concatenate(
        [
            (_subsample(n, trees, seed)[None] + starts[m, None, None]).ravel()
            for n, m in classes
        ]
    )
    row_group = np.repeat(np.arange(len(arrays)), trees)
    row_tree = np.tile(np.arange(trees), len(arrays))
    row_len = psi[row_group]
    row_start = np.concatenate([[0], np.cumsum(row_len)])
    vals = space.values[sub]
    in_row = _InRow(classes, sub, row_start, starts[row_group], trees, seed)

    # Level by level: a node is (row, lo, hi) in ``sub`` with at least 2 samples,
    # its share [cut, end) of all the group's samples in xs, and its heap number
    # (root 1). A point's path length is the number of splits above its leaf plus
    # c(leaf size), so a split adds 1 over its node's share and a leaf adds c(size)
    # over its share (nothing for one sample: a node of one sample is never made).
    # Each addition is +w at cut and -w at end, one bin more per group so that a
    # group's last share ends in a bin of its own.
    draws = _split_draws(seed, trees)
    node_row = np.arange(row_len.size)
    lo, hi = row_start[:-1].copy(), row_start[1:].copy()
    cut, end = starts[row_group].copy(), starts[row_group + 1].copy()
    heap = np.ones(row_len.size, dtype=np.int64)
    bins: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    depth = 0
    while node_row.size:
        vmin, vmax = vals[lo], vals[hi - 1]
        grp = row_group[node_row]
        leaf = (vmin == vmax) | (depth >= limit[grp])
        if leaf.any():
            c = _C_OF_SIZE[hi[leaf] - lo[leaf]]
            bins += [cut[leaf] + grp[leaf], end[leaf] + grp[leaf]]
            weights += [c, -c]
            go = ~leaf
            node_row, lo, hi, heap = node_row[go], lo[go], hi[go], heap[go]
            cut, end, vmin, vmax, grp = cut[go], end[go], vmin[go], vmax[go], grp[go]
        ones = np.ones(node_row.size)
        bins += [cut + grp, end + grp]
        weights += [ones, -ones]
        threshold = vmin + draws[row_tree[node_row], heap] * (vmax - vmin)
        threshold = np.where(threshold >= vmax, vmin, threshold)
        split_cut = space.right_share(grp, threshold)
        mid = in_row(node_row, split_cut)
        # Children interleaved (left, right) keep the nodes ordered by (row, lo).
        lo, hi = _interleave(lo, mid), _interleave(mid, hi)
        keep = hi - lo >= 2
        lo, hi = lo[keep], hi[keep]
        node_row = np.repeat(node_row, 2)[keep]
        cut = _interleave(cut, split_cut)[keep]
        end = _interleave(split_cut, end)[keep]
        heap = _interleave(2 * heap, 2 * heap + 1)[keep]
        depth += 1

    # Summed over the trees, every sample's path length at once.
    step_at = np.bincount(
        np.concatenate(bins),
        weights=np.concatenate(weights),
        minlength=total + len(arrays),
    )
    norm = average_path_length(psi) * trees
    out: list[np.ndarray] = [np.empty(0)] * len(arrays)
    for at, i in enumerate(by_size):
        # Summed group by group, so that the bits do not depend on the batch.
        a, b = starts[at], starts[at + 1]
        score = np.empty(b - a)
        score[perm[a:b] - a] = -np.exp2(-np.cumsum(step_at[a + at : b + at]) / norm[at])
        out[i] = score
    return out


class _SplitSpace:
    """The values the splits are drawn in, and where a split's right child's share
    starts (the index of the group's first sample > threshold).

    A forest's scores do not change under an increasing affine map of its samples,
    so each group is mapped to 2 g + (x - min) / (max - min): then all groups sort
    together and one search serves every node of the batch. That holds while the map
    keeps every two distinct samples of a group apart (float64: unless they differ
    by less than ~1e-9 of their group's range); otherwise the samples are used as
    they are, with one search per group."""

    def __init__(self, xs: np.ndarray, starts: np.ndarray) -> None:
        self.starts = starts
        groups = starts.size - 1
        group = np.repeat(np.arange(groups), np.diff(starts))
        low, high = xs[starts[:-1]], xs[starts[1:] - 1]
        scale = 1.0 / np.where(high > low, high - low, 1.0)
        keys = 2.0 * group + (xs - low[group]) * scale[group]
        self.joint = not np.any((keys[1:] == keys[:-1]) & (xs[1:] != xs[:-1]))
        self.values = keys if self.joint else xs
        self.group_bounds = np.arange(groups + 1)

    def right_share(self, grp: np.ndarray, threshold: np.ndarray) -> np.ndarray:
        if self.joint:
            return np.searchsorted(self.values, threshold, "right")
        out = np.empty(grp.size, dtype=np.int64)
        seg = np.searchsorted(grp, self.group_bounds)
        for g in np.nonzero(seg[1:] > seg[:-1])[0]:
            a, b, first = seg[g], seg[g + 1], self.starts[g]
            mine = self.values[first : self.starts[g + 1]]
            out[a:b] = first + np.searchsorted(mine, threshold[a:b], "right")
        return out


class _InRow:
    """Where a split's right child starts in its row of ``sub``: the row's first
    entry >= the right share's start. From each tree's cached counts (_below) when
    every group is at most a few times a subsample, else by one search over (row,
    index) keys."""

    def __init__(self, classes, sub, row_start, row_first, trees, seed) -> None:
        self.row_start, self.row_first = row_start, row_first
        self.tabled = all(n < 4 * min(n, MAX_SAMPLES) for n, _ in classes)
        if self.tabled:
            tables = [_below(n, trees, seed) for n, _ in classes]
            offsets = np.concatenate([[0], np.cumsum([t.size for t in tables])])
            self.table = np.concatenate([t.ravel() for t in tables])
            # Row r's counts start at table_at[r]: tree t of a group of n at t (n + 1).
            self.table_at = np.concatenate(
                [
                    np.tile(offsets[k] + np.arange(trees) * (n + 1), len(m))
                    for k, (n, m) in enumerate(classes)
                ]
            )
        else:
            self.span = int(sub.max()) + 1
            rows = np.repeat(np.arange(row_start.size - 1), np.diff(row_start))
            self.keys = rows * self.span + sub

    def __call__(self, row: np.ndarray, share_start: np.ndarray) -> np.ndarray:
        if self.tabled:
            at = self.table_at[row] + share_start - self.row_first[row]
            return self.row_start[row] + self.table[at]
        return np.searchsorted(self.keys, row * self.span + share_start, "left")


def _interleave(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """[left[0], right[0], left[1], right[1], ...]."""
    out = np.empty(2 * left.size, dtype=left.dtype)
    out[0::2], out[1::2] = left, right
    return out
