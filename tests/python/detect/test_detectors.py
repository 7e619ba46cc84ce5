"""Slow-segment, migration and shared-CPU detectors on synthetic cells."""

import numpy as np
import pytest

from conftest import make_prepared
from perfvar.detect import migration, shared_cpu, slow_segment
from perfvar.stats.model import DetectParams


def _ranks(seed, nranks=4, n=200, loc=1000.0, scale=5.0, shift=None):
    rng = np.random.default_rng(seed)
    shift = shift or {}
    return {
        (0, r): rng.normal(loc + shift.get(r, 0.0), scale, n) for r in range(nranks)
    }


def _statuses(result):
    return {(j.segment, j.rank): j.status for j in result.judgements}


def test_flags_the_shifted_rank_with_evidence():
    prep = make_prepared(_ranks(0, shift={2: 300.0}))
    result = slow_segment.detect(prep)
    assert [(a.kind, a.rank, a.segment) for a in result.anomalies] == [
        ("slow_segment", 2, "S0")
    ]
    a = result.anomalies[0]
    assert a.excess_ns == pytest.approx(300.0, abs=5.0)
    ev = a.evidence
    assert ev["overlap"] == 0.0
    assert ev["shift_rel"] == pytest.approx(0.3, abs=0.01)
    lo, hi = ev["excess_ci_rel"]
    assert lo < ev["excess_rel"] < hi and lo > 0.25
    assert ev["q_value"] < 0.05 and ev["floor_ns"] == pytest.approx(20.0, rel=0.02)
    assert ev["median_ns"] == pytest.approx(1300.0, abs=3.0)
    assert ev["peers_median_ns"] == pytest.approx(1000.0, abs=3.0)
    assert ev["t_diff_ns"] == 4.1 and ev["t_min_ns"] == 100.0
    assert ev["n"] + ev["os_noise_removed"] == 200
    assert a.host == "h2" and a.cpu == 2
    assert _statuses(result)[("S0", 0)] == "ok"


@pytest.mark.parametrize("seed", range(8))
def test_flags_nobody_when_all_ranks_share_a_distribution(seed):
    result = slow_segment.detect(make_prepared(_ranks(seed, nranks=6)))
    assert result.anomalies == []
    assert set(_statuses(result).values()) == {"ok"}


def test_refuses_judgement_below_t_min():
    prep = make_prepared(_ranks(0, shift={1: 300.0}), t_min_ns=5000.0)
    result = slow_segment.detect(prep)
    assert result.anomalies == []
    assert set(_statuses(result).values()) == {"below precision"}


def test_shift_smaller_than_t_diff_is_not_flagged():
    # 40 ns apart with 2 ns noise: fully separated, but below t_diff = 50 ns.
    samples = _ranks(0, scale=2.0, shift={3: 40.0})
    assert (
        slow_segment.detect(make_prepared(samples, t_diff_ns=50.0)).anomalies
        == []
    )
    # The same data with a finer t_diff is flagged: the t_diff gate is what held it.
    flagged = slow_segment.detect(make_prepared(samples, t_diff_ns=10.0))
    assert [a.rank for a in flagged.anomalies] == [3]


def test_shift_within_the_noise_is_not_flagged():
    # 2 ns apart with 50 ns of noise and 200 samples: not significant.
    samples = _ranks(0, scale=50.0, shift={1: 2.0})
    assert slow_segment.detect(make_prepared(samples)).anomalies == []


def test_overlap_no_longer_vetoes_a_shift_the_distribution_shows():
    # 4 % apart with 5 % noise: most samples overlap (the paper's overlap ~1), but
    # 2000 samples put the median shift far outside the noise.
    samples = _ranks(0, n=2000, scale=50.0, shift={1: 40.0})
    result = slow_segment.detect(make_prepared(samples))
    assert [a.rank for a in result.anomalies] == [1]
    a = result.anomalies[0]
    assert a.evidence["overlap"] > 0.5
    assert a.evidence["shift_rel"] == pytest.approx(0.04, abs=0.006)


def test_significant_shift_below_the_relative_floor_is_not_flagged():
    # 0.5 % apart, 0.05 % noise: significant, but a single class cannot tell a
    # segment from its core, so the core floor (2 %) applies; lowered, it is named.
    samples = _ranks(0, scale=0.5, shift={2: 5.0})
    prep = make_prepared(samples, t_diff_ns=1.0)
    assert slow_segment.detect(prep).anomalies == []
    judged = {j.rank: j for j in slow_segment.detect(prep).judgements}
    assert judged[2].q_value < 1e-4 and judged[2].floor_ns == pytest.approx(20, 0.01)
    low = DetectParams(core_floor=0.001)
    assert [a.rank for a in slow_segment.detect(prep, low).anomalies] == [2]


def test_faster_rank_is_not_flagged():
    samples = _ranks(0, shift={0: -300.0})
    assert slow_segment.detect(make_prepared(samples)).anomalies == []


def test_cells_without_samples_or_calibration_are_counted_not_judged():
    samples = _ranks(0, shift={1: 300.0, 3: 300.0})
    samples[(0, 2)] = samples[(0, 2)][:5]
    result = slow_segment.detect(make_prepared(samples, calibrated={0, 2}))
    st = _statuses(result)
    assert st[("S0", 2)] == "too few samples"
    assert st[("S0", 1)] == "no calibration" and st[("S0", 3)] == "no calibration"
    assert result.anomalies == []


def test_segment_on_a_single_rank_is_not_judged():
    prep = make_prepared({(0, 0): np.random.default_rng(0).normal(1000, 5, 50)})
    result = slow_segment.detect(prep)
    assert _statuses(result) == {("S0", 0): "single rank"}


def test_several_slow_ranks_do_not_mask_each_other():
    samples = _ranks(4, nranks=8, shift={5: 300.0, 6: 310.0})
    robust = slow_segment.detect(make_prepared(samples))
    assert sorted(a.rank for a in robust.anomalies) == [5, 6]
    assert [a.evidence["peer_ranks"] for a in robust.anomalies] == [6, 6]
    # Pooling every other rank: the median of the peer medians is not moved by
    # them either (the paper's max(peers) was).
    pooled = slow_segment.detect(
        make_prepared(samples), DetectParams(peers="all")
    )
    assert sorted(a.rank for a in pooled.anomalies) == [5, 6]
    assert [a.evidence["peer_ranks"] for a in pooled.anomalies] == [7, 7]


def test_alpha_is_the_false_discovery_rate():
    # A weak shift whose q value lies between 0.05 and 0.5; floors off. (0.6 ns on
    # 5 ns of noise: the test is over the run's 40 blocks of 5 samples each.)
    samples = _ranks(1, scale=5.0, shift={0: 0.6})
    floors = dict(segment_floor=0.0, core_floor=0.0)
    strict = slow_segment.detect(
        make_prepared(samples, t_diff_ns=0.0), DetectParams(alpha=0.05, **floors)
    )
    loose = slow_segment.detect(
        make_prepared(samples, t_diff_ns=0.0), DetectParams(alpha=0.5, **floors)
    )
    q = {j.rank: j.q_value for j in strict.judgements}
    assert 0.05 < q[0] < 0.5
    assert strict.anomalies == []
    assert 0 in [a.rank for a in loose.anomalies]
    q_loose = {j.rank: j.q_value for j in loose.judgements}
    assert all(q_loose[a.rank] < 0.5 for a in loose.anomalies)


def test_migration_detector():
    prep = make_prepared(_ranks(0, nranks=3))
    mine = prep.samples["rank"] == 1
    cpus = np.where(np.arange(mine.sum()) % 4 == 0, 7, 1)
    prep.samples["cpu_enter"][mine] = cpus
    prep.samples["cpu_leave"][mine] = 1
    result = migration.detect(prep)
    assert [(a.kind, a.rank, a.cpu) for a in result.anomalies] == [("migrated", 1, 1)]
    ev = result.anomalies[0].evidence
    assert ev["cpus"] == [1, 7]
    assert ev["segments_migrated_inside"] == 50
    assert ev["segments_started_per_cpu"] == {"1": 150, "7": 50}


def _threads(prep, nthreads):
    """Spread each rank's samples over nthreads threads, thread k on CPU rank + 10k."""
    s = prep.samples
    for rank in np.unique(s["rank"]):
        mine = np.nonzero(s["rank"] == rank)[0]
        k = np.arange(mine.size) % nthreads
        s["thread"][mine] = k
        s["cpu_enter"][mine] = s["cpu_leave"][mine] = rank + 10 * k
    return prep


def test_threads_on_their_own_cpus_are_not_a_migration_nor_shared():
    prep = _threads(make_prepared(_ranks(0, nranks=3)), 4)
    prep.hosts = {r: "node" for r in prep.hosts}
    assert migration.detect(prep).anomalies == []
    assert shared_cpu.detect(prep).anomalies == []
    # Thread 2 of rank 1 moves between CPUs 21 and 30 (another rank's thread's CPU
    # only now and then: its main CPU stays 21).
    s = prep.samples
    moving = np.nonzero((s["rank"] == 1) & (s["thread"] == 2))[0]
    s["cpu_enter"][moving[::5]] = 30
    prep.cpu_use = None  # the samples changed: their CPU table is made again
    result = migration.detect(prep)
    assert [(a.rank, a.cpu, a.evidence["thread"]) for a in result.anomalies] == [
        (1, 21, 2)
    ]
    assert result.anomalies[0].evidence["cpus"] == [21, 30]


def test_shared_cpu_detector_names_threads_of_a_rank_on_one_cpu():
    prep = _threads(make_prepared(_ranks(0, nranks=2)), 3)
    s = prep.samples
    s["cpu_enter"][s["rank"] == 1] = 1  # rank 1 bound to one core, its threads share it
    result = shared_cpu.detect(prep)
    assert [(a.kind, a.rank, a.cpu) for a in result.anomalies] == [("shared_cpu", 1, 1)]
    assert result.anomalies[0].evidence == {
        "cpu": 1,
        "ranks": [1],
        "threads": [[1, 0], [1, 1], [1, 2]],
    }


def test_shared_cpu_detector_names_ranks_on_one_cpu_of_one_host():
    prep = make_prepared(_ranks(0, nranks=4))
    prep.hosts = {r: "node" for r in prep.hosts}
    assert shared_cpu.detect(prep).anomalies == []  # one CPU per rank
    prep.samples["cpu_enter"][
        prep.samples["rank"] == 3
    ] = 1  # rank 3 joins rank 1's CPU
    prep.cpu_use = None  # the samples changed: their CPU table is made again
    result = shared_cpu.detect(prep)
    assert [(a.kind, a.rank, a.cpu) for a in result.anomalies] == [
        ("shared_cpu", 1, 1),
        ("shared_cpu", 3, 1),
    ]
    assert result.anomalies[0].evidence == {"cpu": 1, "ranks": [1, 3]}
    prep.hosts[3] = "other-host"  # the same CPU number on another host is not shared
    assert shared_cpu.detect(prep).anomalies == []


def test_noisy_ranks_are_not_left_out_as_already_slow():
    # Segment noise (500 ns) far above t_diff (4.1 ns): rank medians differ by tens
    # of ns, which must not make a normal rank "already slow".
    samples = _ranks(9, nranks=8, loc=540_000.0, scale=500.0, shift={2: 1e5, 7: 1e5})
    result = slow_segment.detect(make_prepared(samples))
    assert sorted(a.rank for a in result.anomalies) == [2, 7]
    for a in result.anomalies:
        assert a.evidence["peer_ranks_excluded"] == [7 if a.rank == 2 else 2]
        assert a.evidence["peer_ranks"] == 6


def test_a_cell_whose_peers_are_below_t_min_is_not_judged():
    # 130 ns on the peer (below its 500 ns t_min) against 1.3 us: the timer cannot
    # resolve the reference, so neither side is judged.
    rng = np.random.default_rng(3)
    samples = {
        (0, 0): rng.normal(130.0, 5.0, 200),
        (0, 1): rng.normal(1300.0, 5.0, 200),
    }
    result = slow_segment.detect(make_prepared(samples, t_min_ns=500.0))
    assert result.anomalies == []
    assert set(_statuses(result).values()) == {"below precision"}


def test_peer_pools_over_the_cap_take_each_rank_evenly(monkeypatch):
    from perfvar.stats import cells as cells_mod

    sizes = np.array([200, 150, 200, 7, 200, 180])
    every = cells_mod.peer_shares(sizes)
    assert all(np.array_equal(t, np.arange(n)) for t, n in zip(every, sizes))
    monkeypatch.setattr(cells_mod, "PEER_CAP", 100)
    shares = cells_mod.peer_shares(sizes)
    assert sum(t.size for t in shares) == pytest.approx(100, abs=sizes.size)
    for t, n in zip(shares, sizes):
        j, k = np.arange(t.size), t.size  # one sample in each stretch of the run
        assert np.all(t >= np.floor(j * n / k)) and np.all(t < np.ceil((j + 1) * n / k))
        assert np.all(np.diff(t) > 0) and t[-1] < n
    assert [t.size for t in shares][3] == 1  # at least one of each rank's
    # Ranks in step give samples from different moments: 500 ranks of one sample
    # each (the cap is 100) cover the run evenly, about 50 in each tenth.
    moments = np.concatenate(cells_mod.peer_shares(np.full(500, 1000)))
    assert moments.size == 500
    assert np.histogram(moments, bins=10, range=(0, 1000))[0].min() >= 40

    prep = make_prepared(_ranks(3, nranks=6, n=200))
    peers = cells_mod.peer_pool(prep, 0, 2, leave_out={4})
    assert peers.used == [0, 1, 3, 5] and peers.excluded == [4]
    pool = cells_mod.class_pool(prep, 0)
    mine = np.isin(pool.ranks[pool.owner], peers.used)
    np.testing.assert_array_equal(peers.samples_ns, pool.samples_ns[mine])
    logs = [prep.cells[(0, q)].log_median for q in peers.used]
    assert peers.center_log == float(np.median(logs))
    # Leaving out every peer leaves none out.
    assert cells_mod.peer_pool(prep, 0, 2, leave_out={0, 1, 3, 4, 5}).excluded == []


def test_median_without_each_is_the_median_of_the_others():
    from perfvar.stats.cells import median_without_each

    rng = np.random.default_rng(0)
    for m in (2, 3, 4, 7, 10):
        v = np.round(rng.normal(0.0, 1.0, m), 1)  # ties too
        expected = [np.median(np.delete(v, i)) for i in range(m)]
        np.testing.assert_array_equal(median_without_each(v), expected)


def test_a_slow_rank_is_named_with_capped_peer_pools(monkeypatch):
    from perfvar.stats import cells as cells_mod

    monkeypatch.setattr(cells_mod, "PEER_CAP", 150)  # 7 peers x 200 samples: capped
    prep = make_prepared(_ranks(5, nranks=8, shift={6: 100.0}))
    result = slow_segment.detect(prep)
    assert [(a.rank, a.segment) for a in result.anomalies] == [(6, "S0")]


def test_noisy_cores_t_test_from_sums_is_welchs_over_the_samples():
    from scipy.stats import ttest_ind

    from perfvar.detect.noisy_core import RankNoise, _more_lost, totals

    rng = np.random.default_rng(8)

    def noise(rank, samples, k, scale):
        x = RankNoise(rank)
        x.samples = samples
        x.excess_ns = [rng.exponential(scale, k // 2), rng.exponential(scale, k - k // 2)]
        return x

    mine = noise(0, 900, 60, 4e6)
    peers = [noise(r, 1000 + r, 15, 1e6) for r in range(1, 5)]
    theirs = np.concatenate([p.lost_per_sample() for p in peers])
    expected = ttest_ind(mine.lost_per_sample(), theirs, equal_var=False, alternative="greater")
    got = _more_lost(mine, totals(peers))
    assert got == pytest.approx(float(expected.pvalue), rel=1e-9)
    quiet = [noise(r, 500, 0, 1.0) for r in range(1, 3)]
    assert _more_lost(noise(0, 500, 0, 1.0), totals(quiet)) == 1.0


def test_pooled_median_without_a_rank_is_the_median_of_its_peers_pool(monkeypatch):
    from perfvar.stats import cells as cells_mod

    monkeypatch.setattr(cells_mod, "PEER_CAP", 300)  # shares, not whole cells
    rng = np.random.default_rng(3)
    for nranks in (1, 2, 5, 9):
        samples = _ranks(0, nranks=nranks, n=int(rng.integers(20, 120)))
        # Quantised: equal values within a rank's share and across ranks.
        prep = make_prepared({k: np.round(v / 7.0) * 7.0 for k, v in samples.items()})
        pool = cells_mod.class_pool(prep, 0)
        for rank in list(range(nranks)) + [nranks + 5]:  # and a rank not in it
            peers = pool.peers(rank)
            expected = np.median(peers.samples_log) if peers.samples_log.size else None
            got = pool.pooled_median_log(rank)
            assert (np.isnan(got) if expected is None else got == expected), rank
