"""perfvar.detect.slow_core._collect, one rank at a time, against the straightforward
collection of every rank's z and peer draws at once."""

import numpy as np
import pytest

from conftest import make_prepared
from perfvar.detect import slow_core
from perfvar.stats.blocks import class_blocks
from perfvar.stats.cells import by_segment, class_pool, peer_pool, unjudged_reason
from perfvar.stats.compare import evenly, log_ns, rel
from perfvar.stats.model import DetectParams


def _reference(prep, params, cap):
    """rank -> (classes, blocks, shift_log or None): every class's z of every rank
    kept until all are collected, the medians taken over them at the end."""
    out = {}
    for seg, cells in by_segment(prep, probes=True).items():
        for rank, cell in cells.items():
            reason, cal = unjudged_reason(prep, cell, params.min_samples)
            if reason:
                continue
            ref = class_pool(prep, seg).pooled_median_log(rank)
            z = log_ns(cell.samples_ns) - ref
            zp = evenly(peer_pool(prep, seg, rank).samples_log, cap) - ref
            e = out.setdefault(rank, {"z": [], "zp": [], "blocks": [], "classes": []})
            e["z"].append(z)
            e["zp"].append(zp)
            e["blocks"].append(class_blocks(prep, seg).shifts(rank))
            e["classes"].append(
                {
                    "segment": prep.segment_ids[seg],
                    "shift_rel": rel(float(np.median(z))),
                    "time_ns": float(cell.samples_ns.sum()),
                    "probe": seg == prep.probe_segment,
                    "n": cell.n,
                    "peers_median_ns": float(np.exp(ref)),
                    "t_diff_ns": float(cal.t_diff_ns),
                }
            )
    for e in out.values():
        segments = sum(c["time_ns"] for c in e["classes"] if not c["probe"])
        for c in e["classes"]:
            if c["probe"]:
                c["time_ns"] = segments
        e["shift"] = None
        if len(e["classes"]) >= 2:
            z, zp = np.concatenate(e["z"]), np.concatenate(e["zp"])
            e["shift"] = float(np.median(z) - np.median(zp))
    return out


def _prepared(seed):
    """Three classes and a probe class over 5 ranks: rank 0 has too few samples in
    the first class (so it is first judged after the others), rank 4 is judged in
    one class only, rank 2 is slower in all; cells of different sizes."""
    rng = np.random.default_rng(seed)
    samples = {}
    for seg, loc in enumerate([1000.0, 5000.0, 20000.0, 3000.0]):
        for rank in range(5):
            if rank == 4 and seg > 0:
                continue
            n = 5 if (seg, rank) == (0, 0) else int(rng.integers(150, 400))
            slow = 1.2 if rank == 2 else 1.0
            samples[(seg, rank)] = rng.normal(loc * slow, loc * 0.01, n)
    prep = make_prepared(samples)
    prep.probe_segment = 3
    return prep


@pytest.mark.parametrize("cap", [40, slow_core.TEST_CAP])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_collect_per_rank_matches_collecting_all_at_once(monkeypatch, seed, cap):
    monkeypatch.setattr(slow_core, "TEST_CAP", cap)
    prep, params = _prepared(seed), DetectParams()
    got = slow_core._collect(prep, params)
    want = _reference(_prepared(seed), params, cap)
    assert list(got) == list(want) == [1, 2, 3, 4, 0]  # first judged first
    for rank, r in got.items():
        assert r.rank == rank
        assert r.classes == want[rank]["classes"]
        assert len(r.blocks) == len(want[rank]["blocks"])
        for a, b in zip(r.blocks, want[rank]["blocks"]):
            np.testing.assert_array_equal(a, b)
        assert r.shift_log == want[rank]["shift"]
    assert got[4].shift_log is None and got[2].shift_log > 0.1
    assert any(c["probe"] for c in got[1].classes)
