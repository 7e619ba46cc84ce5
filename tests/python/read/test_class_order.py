"""The class order and counts over every sample (perfvar.read.samples): numpy's
stable argsort and np.unique, row for row."""

import numpy as np

from perfvar.read.samples import class_order, class_rows, distinct_counts


def test_the_class_order_and_counts_are_numpy_s_sort_and_unique():
    # The radix order and the counts stand in for the stable argsort and np.unique
    # over every sample: the same rows and figures, whatever the values.
    rng = np.random.default_rng(5)
    for values in (
        rng.integers(0, 7, 10_000).astype(np.int32),
        rng.integers(0, 70_000, 10_000).astype(np.int32),  # beyond 16 bits
        rng.integers(-3, 4, 1_000).astype(np.int32),  # negative: the sort's way
        np.zeros(0, dtype=np.int32),
    ):
        assert np.array_equal(class_order(values), np.argsort(values, kind="stable"))
        got, want = distinct_counts(values), np.unique(values, return_counts=True)
        assert np.array_equal(got[0], want[0]) and got[0].dtype == want[0].dtype
        assert np.array_equal(got[1], want[1])


def test_the_class_rows_are_each_class_s_rows_in_order():
    rng = np.random.default_rng(6)
    segment = rng.integers(0, 5, 2_000).astype(np.int32)
    order, bounds = class_rows(segment, 7)  # two classes with no row
    for g in range(7):
        assert np.array_equal(
            order[bounds[g] : bounds[g + 1]], np.flatnonzero(segment == g)
        )
