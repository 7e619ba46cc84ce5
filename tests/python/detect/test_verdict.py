"""The verdict on synthetic cells: slow segment beyond the core, slow core, noisy
core, slow phase, and clean runs that name nobody (perfvar.detect.run_all)."""

import numpy as np
import pytest

from conftest import STEP_NS, make_prepared
from perfvar.detect import describe, run_all, slow_core, slow_segment
from perfvar.read.meta import Calibration
from perfvar.stats.cells import RELATIVE_ONLY
from perfvar.stats.model import DetectParams
from perfvar.units import fmt_pct


def _cells(seed, nranks=2, n=1000, classes=(20_000.0, 20_000.0), cv=0.01, slow=None):
    """samples[(class, rank)]: normal noise of ``cv``; ``slow[(class, rank)]`` is a
    factor, or a function of the sample index giving one."""
    rng = np.random.default_rng(seed)
    slow = slow or {}
    out = {}
    for c, loc in enumerate(classes):
        for r in range(nranks):
            f = slow.get((c, r), 1.0)
            factor = f(np.arange(n)) if callable(f) else f
            out[(c, r)] = loc * factor * (1 + cv * rng.standard_normal(n))
    return out


def _named(samples, **kw):
    found, _ = run_all(make_prepared(samples, t_diff_ns=10.0), DetectParams(**kw))
    return found


def _kinds(found):
    return sorted((a.kind, a.rank, a.segment) for a in found if a.kind != "migrated")


@pytest.mark.parametrize("seed", range(4))
def test_clean_runs_name_nobody(seed):
    assert _kinds(_named(_cells(seed, nranks=4))) == []


@pytest.mark.parametrize("rank", [0, 1])
def test_one_class_slow_on_two_ranks_names_that_cell_and_no_ghost(rank):
    found = _named(_cells(1, slow={(0, rank): 1.01}))
    assert _kinds(found) == [("slow_segment", rank, "S0")]
    ev = found[0].evidence
    assert ev["excess_rel"] == pytest.approx(0.01, abs=0.002)
    assert ev["excess_ci_rel"][0] > 0 and ev["q_value"] < 0.05


@pytest.mark.parametrize("rank", [0, 1])
def test_a_core_slightly_slower_than_its_peer_is_no_slow_segment_of_its_own(rank):
    # Two ranks, the peer's core 1 % slower than the slowed rank's, which is 10 %
    # slower in S0: the peer's S1 is 1 % slower than the rank's S1, and its only
    # other class is S0, where the rank is slow. The larger slowdown explains it.
    peer = 1 - rank
    slow = {(0, rank): 1.10, (0, peer): 1.01, (1, peer): 1.01}
    assert _kinds(_named(_cells(5, slow=slow))) == [("slow_segment", rank, "S0")]


def test_one_slow_class_on_a_slightly_slower_core_is_no_slow_core():
    # +10 % in S0 and +1.5 % (a core a little slower than its peer's) in S1 pool
    # to a shift above the core floor, but only S0 is shifted by more than it.
    slow = {(0, 1): 1.10 * 1.015, (1, 1): 1.015}
    assert _kinds(_named(_cells(6, slow=slow))) == [("slow_segment", 1, "S0")]


def test_one_slow_class_holding_most_of_the_time_is_no_slow_core():
    # The demo's case: rank 1 triples its long class S0, most of its compute time, and
    # runs the short S1 as its peer does. With more samples of S0 than of S1 the pooled
    # shift is far above the floor, and S0 alone holds two thirds of the time, but one
    # class shifted is a slow segment.
    samples = _cells(7, classes=(1_000_000.0, 2_000.0), slow={(0, 1): 3.0})
    samples[(1, 1)] = samples[(1, 1)][:600]
    assert _kinds(_named(samples)) == [("slow_segment", 1, "S0")]


def test_a_rank_faster_in_its_short_classes_only_has_no_faster_core():
    # The demo's stencil, clean: one long class, 99 % of each rank's time and as fast on
    # both, and three short ones between calls that rank 1 runs 40 % faster. Those
    # carry none of the compute time: they do not tell rank 1's core, and its long
    # class is not slow beyond a core 40 % faster.
    slow = {(c, 1): 0.6 for c in (1, 2, 3)}
    samples = _cells(8, classes=(1_000_000.0, 2_000.0, 2_000.0, 2_000.0), slow=slow)
    found = _kinds(_named(samples))
    assert [k for k in found if k[2] == "S0" or k[0] == "slow_core"] == []


def test_slow_core_is_named_once_not_per_segment():
    slow = {(0, 2): 1.05, (1, 2): 1.05}
    found = _named(_cells(2, nranks=4, slow=slow))
    assert _kinds(found) == [("slow_core", 2, None)]
    ev = found[0].evidence
    assert ev["shift_rel"] == pytest.approx(0.05, abs=0.005)
    assert ev["shift_ci_rel"][0] < 0.05 < ev["shift_ci_rel"][1]
    assert [c["segment"] for c in ev["classes"]] == ["S0", "S1"]


@pytest.mark.parametrize("slow_of_five, named", [(3, False), (4, True)])
def test_a_core_is_slow_over_most_of_the_run(slow_of_five, named):
    # Rank 1 +5 % in both classes in ``slow_of_five`` of every five stretches of 25
    # steps (a block of the run each), scattered over the run as a host's slow
    # stretches are: in 60 % of the blocks it comes and goes (the host), in 80 % it is
    # a slow core.
    def part(i):
        return np.where((i // 25) % 5 < slow_of_five, 1.05, 1.0)

    found = _kinds(_named(_cells(4, nranks=4, slow={(0, 1): part, (1, 1): part})))
    assert (("slow_core", 1, None) in found) == named


def test_slow_core_says_the_estimate_its_interval_belongs_to():
    # Rank 2 is +3 % in a short class and +10 % in one 100x as long: the pooled
    # samples weigh both alike, the blocks by compute time. The size is the blocks'
    # estimate, inside its interval, and the time lost is the compute time at it.
    slow = {(0, 2): 1.03, (1, 2): 1.10}
    found = _named(_cells(2, nranks=4, classes=(20_000.0, 2_000_000.0), slow=slow))
    core = next(a for a in found if a.kind == "slow_core")
    ev = core.evidence
    lo, hi = ev["shift_ci_rel"]
    assert ev["shift_rel"] == pytest.approx(0.10, abs=0.01)
    assert lo <= ev["shift_rel"] <= hi
    assert ev["segment_shift_rel"] < 0.08  # the pooled samples' median
    lost = ev["compute_ns"] * ev["shift_rel"] / (1 + ev["shift_rel"]) / ev["n"]
    assert core.excess_ns == pytest.approx(lost, rel=1e-6)
    text = slow_core.describe(core.to_json(), {})
    assert (
        f"a slow core: {fmt_pct(ev['shift_rel'])} in all its segment classes by "
        f"compute time (95% CI {fmt_pct(lo)}..{fmt_pct(hi)}" in text
    )
    assert f"its median segment {fmt_pct(ev['segment_shift_rel'])}" in text


def test_slow_segment_says_the_excess_its_interval_belongs_to():
    # A slow segment of miniGhost on a core at its peer's speed: 38 segments, one
    # a block, so the blocks' median (+23.8 %, the excess per segment and its
    # interval) is not the whole run's medians' ratio (+9.8 %, said by the medians).
    ev = {
        "median_ns": 1_122_714.7, "peers_median_ns": 1_022_817.4, "shift_rel": 0.0976,
        "core_shift_rel": 0.0, "speed_sensitivity": 1.0, "excess_rel": 0.2377,
        "excess_ci_rel": [0.1284, 0.3447], "q_value": 4e-4, "alpha": 0.05,
        "blocks": 33, "blocks_above_floor": 28, "floor_ns": 2045.6,
        "t_diff_ns": 70.0, "floor_rel": 0.002, "cache_state": "4xL1",
        "context_bytes": 832_307, "n": 38, "os_noise_removed": 2, "overlap": 0.895,
        "iqr_ns": 399_800.0, "peers_iqr_ns": 302_300.0, "peer_ranks": 1,
    }  # fmt: skip
    a = {"kind": "slow_segment", "rank": 0, "host": "vm", "cpu": 0, "segment": "S4",
         "excess_ns": 243_164.0, "evidence": ev}  # fmt: skip
    text = slow_segment.describe(a, {})
    assert (
        "median 1.1 ms vs peers 1.0 ms, +243.2 us per segment (+23.8%; 95% CI " in text
    )


def test_segment_slow_beyond_its_slow_core():
    # Rank 1's core is 3 % slow, and its class S1 a further 2 %.
    slow = {(0, 1): 1.03, (1, 1): 1.03 * 1.02}
    found = _named(_cells(3, nranks=4, slow=slow))
    assert _kinds(found) == [("slow_core", 1, None), ("slow_segment", 1, "S1")]
    seg = next(a for a in found if a.kind == "slow_segment")
    assert seg.evidence["excess_rel"] == pytest.approx(0.02, abs=0.006)
    assert seg.evidence["core_shift_rel"] > 0.02


def test_noisy_core_counts_interruptions_whether_or_not_the_filter_took_them():
    samples = _cells(4, nranks=2)
    rng = np.random.default_rng(4)
    for c in (0, 1):
        # 3 % of rank 1's segments hold a 4 ms time slice; 10 % of rank 0's have a
        # mild tail (+15 %), which is no interruption whatever the filter does.
        hit = rng.random(1000) < 0.03
        samples[(c, 1)][hit] += 4e6 * (1 + 0.1 * rng.standard_normal(hit.sum()))
        tail = rng.random(1000) < 0.10
        samples[(c, 0)][tail] *= 1.15
    found = _named(samples)
    assert _kinds(found) == [("noisy_core", 1, None)]
    ev = found[0].evidence
    assert ev["typical_ns"] == pytest.approx(4e6, rel=0.1)
    assert ev["lost_fraction"] > 0.5 and ev["peers_lost_fraction"] < 0.05
    assert "another runnable process" in ev["interpretation"]
    assert ev["interruptions"] == pytest.approx(60, abs=20)


def test_slow_phase_is_named_with_its_window_and_not_as_a_core():
    def phase(i):
        return np.where((i >= 400) & (i < 700), 1.10, 1.0)

    found = _named(_cells(5, nranks=2, slow={(0, 0): phase, (1, 0): phase}))
    assert _kinds(found) == [("slow_phase", 0, None)]
    a = found[0]
    assert a.start_ns == pytest.approx(400 * STEP_NS, abs=40 * STEP_NS)
    assert a.end_ns == pytest.approx(700 * STEP_NS, abs=40 * STEP_NS)
    assert a.evidence["excess_rel"] == pytest.approx(0.10, abs=0.02)
    assert sorted(c["segment"] for c in a.evidence["classes"]) == ["S0", "S1"]


def _many_small_classes(seed, slow=None):
    """A real program's shape: 30 classes of 100 samples each (one a time step),
    too few each for a series of its own, of 5 to 200 us, 5 % noise."""
    classes = tuple(np.geomspace(5_000.0, 200_000.0, 30))
    return _cells(seed, nranks=2, n=100, classes=classes, cv=0.05, slow=slow)


@pytest.mark.parametrize("seed", range(3))
def test_a_phase_over_many_small_classes_is_found_in_them_together(seed):
    # +10 % in every class of rank 1 for steps 40-70: no class has the samples for
    # change points of its own; pooled, relative to each class's centre, they do.
    def phase(i):
        return np.where((i >= 40) & (i < 70), 1.10, 1.0)

    slow = {(c, 1): phase for c in range(30)}
    found = _named(_many_small_classes(seed, slow))
    assert _kinds(found) == [("slow_phase", 1, None)]
    a = found[0]
    assert a.start_ns == pytest.approx(40 * STEP_NS, abs=6 * STEP_NS)
    assert a.end_ns == pytest.approx(70 * STEP_NS, abs=6 * STEP_NS)
    assert a.evidence["excess_rel"] == pytest.approx(0.10, abs=0.03)
    classes = a.evidence["classes"]
    assert len(classes) == 30 and all(c["pooled"] for c in classes)
    assert all(c["lost_ns"] > 0 for c in classes if c["excess_rel"] > 0.02)


@pytest.mark.parametrize("seed", range(3))
def test_many_small_classes_of_a_clean_run_give_no_phase(seed):
    assert _kinds(_named(_many_small_classes(seed))) == []


def _few_steps(seed, slow=None):
    """A short run: 4 classes of 40 samples each (40 time steps), 1 % noise; 160
    samples a rank, well under a class's MIN_SAMPLES."""
    return _cells(seed, nranks=2, n=40, classes=(30_000.0, 10_000.0, 5_000.0, 2_000.0),
                  slow=slow)  # fmt: skip


@pytest.mark.parametrize("seed", range(3))
def test_a_phase_of_a_run_of_few_steps_is_found_pooled(seed):
    def phase(i):
        return np.where((i >= 16) & (i < 28), 1.10, 1.0)

    found = _named(_few_steps(seed, {(c, 0): phase for c in range(4)}))
    assert _kinds(found) == [("slow_phase", 0, None)]
    assert found[0].start_ns == pytest.approx(16 * STEP_NS, abs=3 * STEP_NS)
    assert found[0].end_ns == pytest.approx(28 * STEP_NS, abs=3 * STEP_NS)


@pytest.mark.parametrize("seed", range(3))
def test_a_clean_run_of_few_steps_gives_no_phase(seed):
    assert _kinds(_named(_few_steps(seed))) == []


def test_slow_phase_is_named_when_the_durations_are_on_a_grid():
    # Work that takes the same ticks every time: rounded to 1 us, every bin's median
    # equals its neighbour's outside the step, so the bins' median absolute
    # difference is 0. The step must still be a change point.
    def phase(i):
        return np.where((i >= 400) & (i < 700), 1.5, 1.0)

    samples = _cells(12, nranks=2, slow={(0, 0): phase, (1, 0): phase})
    samples = {k: np.round(v / 1000.0) * 1000.0 for k, v in samples.items()}
    found = _named(samples)
    assert _kinds(found) == [("slow_phase", 0, None)]
    assert found[0].start_ns == pytest.approx(400 * STEP_NS, abs=40 * STEP_NS)
    assert found[0].evidence["excess_rel"] == pytest.approx(0.5, abs=0.05)


def test_floors_are_options():
    samples = _cells(6, slow={(0, 1): 1.01})
    assert _kinds(_named(samples, segment_floor=0.02)) == []


def _with_probe_class(samples, probe_factor, index=1):
    """Two ranks, the segment classes of ``samples`` (one by default, S0), plus probes
    as class ``index``; rank 1's probes run ``probe_factor`` slower."""
    rng = np.random.default_rng(7)
    for r in (0, 1):
        f = probe_factor if r == 1 else 1.0
        samples[(index, r)] = 900.0 * f * (1 + 0.005 * rng.standard_normal(1000))
    prep = make_prepared(samples, t_diff_ns=10.0)
    prep.probe_segment = index
    prep.segment_ids[index] = "probe"
    return prep


@pytest.mark.parametrize("probe_factor", [2.0, 1.03, 1.0])
def test_probes_tell_a_slow_core_from_a_slow_segment(probe_factor):
    # Rank 1's only segment class takes twice as long. Probes twice as long too: its
    # core, said with the probes' figure. Probes as fast as the peer's: more work in
    # the segment, the code's finding (load imbalance), not a slow core or segment.
    # Probes 3 % slower beside the class's +100 %: no common shift, no slow core;
    # the class beyond them is more work.
    samples = {k: v for k, v in _cells(8, classes=(20_000.0,)).items()}
    samples[(0, 1)] = samples[(0, 1)] * 2.0
    found, judgements = run_all(
        _with_probe_class(samples, probe_factor), DetectParams()
    )
    assert "probe" not in {j.segment for j in judgements}
    if probe_factor == 2.0:
        assert _kinds(found) == [("slow_core", 1, None)]
        by_class = {c["segment"]: c for c in found[0].evidence["classes"]}
        assert by_class["probe"]["shift_rel"] == pytest.approx(1.0, abs=0.01)
        told = found[0].evidence["core_speed"]
        assert told["probes_shift_rel"] == pytest.approx(1.0, abs=0.01)
        assert told["verdict"] == "slower core"
    else:
        assert _kinds(found) == [("load_imbalance", 1, "S0")]
        told = found[0].evidence["core_speed"]
        assert told["verdict"] == "more work"
        assert told["decided_by"] == "fixed-work probes"
        assert told["probes_ci_rel"][1] < probe_factor - 1 + 0.015
        assert found[0].evidence["as"] == "slow_segment"


def test_a_short_hiccup_is_not_a_phase():
    # +8 % for 10 % of the run costs 0.8 % of the rank's time: below the 1 % a
    # phase must cost, though the change points find it.
    def hiccup(i):
        return np.where((i >= 500) & (i < 600), 1.08, 1.0)

    found = _named(_cells(9, nranks=2, slow={(0, 0): hiccup, (1, 0): hiccup}))
    assert _kinds(found) == []


def test_phase_change_points_are_those_of_pelt_with_the_l2_cost():
    # The detector finds them with ruptures' C code (KernelCPD, linear kernel); they
    # must be PELT's with the L2 cost, as the method states.
    import ruptures

    from perfvar.detect.slow_phase import MIN_SIZE, _stretches

    rng = np.random.default_rng(11)
    for _ in range(20):
        n = int(rng.integers(2 * MIN_SIZE, 400))
        d = rng.normal(0.0, 0.01, n)
        start = int(rng.integers(0, n - MIN_SIZE))
        d[start : start + int(rng.integers(MIN_SIZE, n))] += 0.05
        steps = np.abs(np.diff(d))
        sigma = float(np.median(steps)) / (0.6745 * np.sqrt(2))
        pelt = ruptures.Pelt(model="l2", min_size=MIN_SIZE, jump=1).fit(d[:, None])
        ends = pelt.predict(pen=3.0 * sigma**2 * np.log(n))
        assert [e for _, e in _stretches(d)] == ends


# The two ranks' slow phases in turn over the whole run (rank, first and last share of
# the steps), each +60 % in every class, as a shared host's vCPUs gave TeaLeaf.
PHASES_IN_TURN = [(0, 0.01, 0.26), (1, 0.25, 0.51), (0, 0.50, 0.76), (1, 0.75, 1.0)]


def _phases_in_turn(seed, inject):
    """Three classes a step on two ranks; the host's phases of PHASES_IN_TURN; rank 0
    ``inject`` slower in class 0 all run."""
    rng = np.random.default_rng(seed)
    samples, starts = {}, {}
    steps = np.arange(2000)
    for rank in (0, 1):
        phase = np.ones(steps.size)
        for r, lo, hi in PHASES_IN_TURN:
            if r == rank:
                phase[(steps >= lo * steps.size) & (steps < hi * steps.size)] *= 1.6
        for k in range(3):
            extra = 1 + inject if (k, rank) == (0, 0) else 1.0
            noise = np.exp(rng.normal(0, 0.02, steps.size))
            samples[(k, rank)] = 1e5 * (1 + 0.5 * k) * phase * extra * noise
            starts[(k, rank)] = steps * 1e6 + k * 3e5
    found, _ = run_all(make_prepared(samples, starts=starts), DetectParams())
    return [(a.kind, a.rank, a.segment) for a in found if a.kind != "slow_phase"]


@pytest.mark.parametrize("seed", range(3))
def test_a_cell_the_phases_leave_too_few_blocks_is_judged_over_the_run(seed):
    # Outside the phases a few blocks are left, too few for a test: the class slower
    # all run is judged over the whole run and named; nothing is named without it.
    assert _phases_in_turn(seed, 0.10) == [("slow_segment", 0, "S0")]
    assert _phases_in_turn(seed, 0.0) == []


@pytest.mark.parametrize("faster", [1.0, 0.7])
def test_classes_whose_shifts_go_both_ways_make_no_slow_core(faster):
    # Rank 1 runs three of its four classes 30 % slower. With the fourth at its
    # peers' speed, a slow core; with the fourth 30 % faster (a quarter of its time),
    # its classes differ by design, not by core: no slow core.
    slow = {(c, 1): 1.3 for c in range(3)} | {(3, 1): faster}
    found = _named(_cells(4, nranks=4, classes=(20_000.0,) * 4, slow=slow))
    cores = [a for a in found if a.kind == "slow_core"]
    if faster == 1.0:
        assert [a.rank for a in cores] == [1]
    else:
        assert cores == []


@pytest.mark.parametrize("probes_too", [True, False])
def test_a_phase_whose_probes_ran_slower_was_a_slower_core_while_it_lasted(probes_too):
    # Rank 1 runs both classes twice as long from sample 400 to 700; its probes too
    # (the host took its CPU) or not (the program did more work for a while).
    def window(i):
        return np.where((i >= 400) & (i < 700), 2.0, 1.0)

    samples = _cells(12, nranks=2, slow={(0, 1): window, (1, 1): window})
    rng = np.random.default_rng(3)
    for r in (0, 1):
        f = window(np.arange(1000)) if (probes_too and r == 1) else 1.0
        samples[(2, r)] = 900.0 * f * (1 + 0.005 * rng.standard_normal(1000))
    prep = make_prepared(samples, t_diff_ns=10.0)
    prep.probe_segment = 2
    prep.segment_ids[2] = "probe"
    found, _ = run_all(prep, DetectParams())
    phases = [a for a in found if a.kind == "slow_phase" and a.rank == 1]
    assert phases, _kinds(found)
    told = {a.evidence["core_speed"]["verdict"] for a in phases}
    assert told == ({"slower core"} if probes_too else {"more work"})
    text = describe(phases[0].to_json(), {})
    said = "a slower core while it lasted" if probes_too else "a phase of the program"
    assert said in text


def test_more_work_in_one_large_class_is_said_there_not_over_all_classes():
    # Rank 1 does 3x the work in its one large class, its probes 3 % slower: a slow
    # core by the pooled rule, more work by its probes; its class says where.
    samples = _cells(14, classes=(20_000.0, 500.0), slow={(0, 1): 3.0})
    found, _ = run_all(_with_probe_class(samples, 1.03, index=2), DetectParams())
    assert _kinds(found) == [("load_imbalance", 1, "S0")]


def test_a_rank_without_calibration_is_judged_in_long_classes_probes_included():
    # No t_min/t_diff on any rank, a timer overhead of 15 ns: the 20 us classes are
    # over 1000x that and judged with the relative floor alone; rank 1's core and
    # probes at half speed make a slow core, which its probes tell.
    samples = _cells(15, slow={(0, 1): 2.0, (1, 1): 2.0})
    prep = _with_probe_class(samples, 2.0, index=2)
    for r in prep.calibration:
        prep.calibration[r] = Calibration(timer_overhead_ns=15.0)
    found, judgements = run_all(prep, DetectParams())
    assert _kinds(found) == [("slow_core", 1, None)]
    assert found[0].evidence["core_speed"]["verdict"] == "slower core"
    assert {(j.status, j.cache_state) for j in judgements} == {("ok", RELATIVE_ONLY)}


@pytest.mark.parametrize("seed", range(3))
def test_a_peers_phase_does_not_make_a_rank_a_noisy_core(seed):
    # Both ranks' segments take 20 us, one in ten 30 % longer (a program's own tail,
    # 3 % of its time); rank 1 runs +30 % for steps 300-700. Its phase widens its
    # spread, so its fence rose past its tail; counted against that, rank 0's
    # ordinary tail named rank 0 a noisy core.
    rng = np.random.default_rng(seed)
    tail = rng.random(1000) < 0.1

    def shape(i):
        return np.where(tail[i], 1.30, 1.0)

    def phase(i):
        return shape(i) * np.where((i >= 300) & (i < 700), 1.30, 1.0)

    found = _named(_cells(seed, nranks=2, classes=(20_000.0,), cv=0.002,
                          slow={(0, 0): shape, (0, 1): phase}))  # fmt: skip
    assert _kinds(found) == [("slow_phase", 1, "S0")]
