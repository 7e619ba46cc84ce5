"""The order cells are cut in (perfvar.stats.cells): by segment, then rank, then
start, ties in input order, as np.lexsort gives it, whether the samples come in the
reader's rank and start order or not."""

import numpy as np
import pytest

from perfvar.stats.cells import _by_segment_rank_start

DTYPE = np.dtype(
    [("segment", np.int32), ("rank", np.int32), ("start_ticks", np.uint64)]
)


def _samples(seed, in_order):
    rng = np.random.default_rng(seed)
    n = 5000
    s = np.zeros(n, DTYPE)
    s["rank"] = np.sort(rng.integers(0, 9, n))
    s["start_ticks"] = rng.integers(0, 300, n)  # ties within a rank
    s["segment"] = rng.integers(0, 5, n)
    if in_order:  # the reader's: each rank's samples in time
        s = s[np.lexsort((s["start_ticks"], s["rank"]))]
    else:  # a second thread's samples after the first's: not in time within a rank
        s = s[rng.permutation(n)]
    return s


@pytest.mark.parametrize("in_order", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_the_order_is_the_lexsort(seed, in_order):
    s = _samples(seed, in_order)
    want = np.lexsort((s["start_ticks"], s["rank"], s["segment"]))
    assert _by_segment_rank_start(s).tolist() == want.tolist()
    assert _by_segment_rank_start(s[:0]).size == 0
