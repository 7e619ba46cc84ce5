"""perfvar.stats.cpu_time: each rank's time off its CPU from the counter reads, and the
noisy-core verdict that rests on it (perfvar.detect.noisy_core), on reads made here."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import make_prepared
from perfvar.detect import noisy_core
from perfvar.read.samples import METRIC_DTYPE, SAMPLE_DTYPE
from perfvar.stats.cpu_time import after_start, of_reads, off_cpu_in_segments

NAMES = ["perf::TASK-CLOCK", "perf::CONTEXT-SWITCHES", "perf::CPU-MIGRATIONS"]
TICKS_PER_NS = 2.5  # a 2.5 GHz clock
INTERVAL_NS = 10e6


def reads(
    off: dict[int, float], n: int = 50, ranks: int = 4, seed: int = 0
) -> np.ndarray:
    """``n`` reads per rank of 10 ms intervals; rank r off its CPU ``off[r]`` of each
    (1 % by default, give or take 0.2 %), one context switch per ms off."""
    rng = np.random.default_rng(seed)
    rows = np.zeros(n * ranks, dtype=METRIC_DTYPE)
    rows["values"] = np.nan
    for r in range(ranks):
        part = rows[r * n : (r + 1) * n]
        part["rank"] = r
        since = np.arange(n, dtype=np.uint64) * np.uint64(INTERVAL_NS * TICKS_PER_NS)
        part["since_ticks"] = since
        part["time_ticks"] = since + np.uint64(INTERVAL_NS * TICKS_PER_NS)
        share = np.clip(off.get(r, 0.01) + rng.normal(0, 0.002, n), 0, 1)
        part["values"][:, 0] = INTERVAL_NS * (1 - share)
        part["values"][:, 1] = np.round(share * INTERVAL_NS / 1e6)
        part["values"][:, 2] = 0
        rows[r * n : (r + 1) * n] = part
    return rows


def test_off_cpu_time_is_the_interval_minus_the_task_clock():
    times = of_reads(reads({1: 0.5}), NAMES, TICKS_PER_NS)
    assert sorted(times) == [0, 1, 2, 3]
    one = times[1]
    assert one.reads == 50
    assert one.covered_ns == pytest.approx(50 * INTERVAL_NS)
    assert one.off_fraction == pytest.approx(0.5, abs=0.005)
    assert one.on_cpu_ns + one.off_cpu_ns == pytest.approx(one.covered_ns)
    assert one.switches == pytest.approx(50 * 5, abs=10) and one.migrations == 0
    assert one.page_faults is None  # not among the columns
    assert times[0].off_fraction == pytest.approx(0.01, abs=0.002)


def test_without_a_task_clock_nothing_is_measured():
    assert of_reads(reads({1: 0.5}), ["perf::CONTEXT-SWITCHES"], TICKS_PER_NS) == {}
    assert of_reads(np.zeros(0, dtype=METRIC_DTYPE), NAMES, TICKS_PER_NS) == {}


def _quiet_prepared():
    """Four ranks whose segments' durations show no interruption at all."""
    rng = np.random.default_rng(4)
    return make_prepared(
        {(0, r): rng.normal(1e6, 1e3, 400) for r in range(4)}, t_diff_ns=10.0
    )


def test_a_rank_the_counters_see_off_its_cpu_is_a_noisy_core():
    prep = _quiet_prepared()
    assert noisy_core.detect(prep).anomalies == []  # the durations alone: nobody
    prep.cpu_time = of_reads(reads({1: 0.48}), NAMES, TICKS_PER_NS)
    (found,) = noisy_core.detect(prep).anomalies
    assert found.rank == 1
    ev = found.evidence
    assert ev["named_by"] == ["time off its CPU (counters)"]
    assert ev["measured"]["off_cpu_fraction"] == pytest.approx(0.48, abs=0.005)
    assert ev["peers_off_cpu_fraction"] == pytest.approx(0.01, abs=0.002)
    text = noisy_core.describe(found.to_json(), {})
    assert "off its CPU 48.0% of the time its counter reads covered" in text
    assert "context switches" in text
    assert noisy_core.FINDING.phrase(found.to_json()) == "noisy core, 48.0% off its CPU"


def test_ranks_off_their_cpus_alike_name_nobody():
    prep = _quiet_prepared()
    prep.cpu_time = of_reads(reads({r: 0.3 for r in range(4)}), NAMES, TICKS_PER_NS)
    assert noisy_core.detect(prep).anomalies == []


def test_counters_that_see_no_more_time_off_the_cpu_overrule_the_durations():
    # Rank 1's segments take 5 ms time slices, 1 in 10: by their shape alone it is
    # a noisy core. The counters measured it off its CPU like its peers (as when the
    # host, not the guest's scheduler, delays a virtual CPU): nobody is named.
    rng = np.random.default_rng(5)
    durations = {(0, r): rng.normal(1e6, 1e3, 400) for r in range(4)}
    durations[(0, 1)][::10] += 5e6
    prep = make_prepared(durations, t_diff_ns=10.0)
    (by_shape,) = noisy_core.detect(prep).anomalies
    assert by_shape.rank == 1
    assert by_shape.evidence["named_by"] == ["interruptions in its segments' durations"]
    prep.cpu_time = of_reads(reads({r: 0.02 for r in range(4)}), NAMES, TICKS_PER_NS)
    assert noisy_core.detect(prep).anomalies == []
    prep.cpu_time = of_reads(reads({1: 0.35}), NAMES, TICKS_PER_NS)
    (both,) = noisy_core.detect(prep).anomalies
    assert both.evidence["named_by"] == ["time off its CPU (counters)"]


START_NAMES = ["perf::TASK-CLOCK:k=1", "perf::CONTEXT-SWITCHES:k=1"]


def _start_and_run(threads: dict[tuple[int, int], list[tuple[int, int]]]) -> np.ndarray:
    """METRIC_DTYPE rows from (rank, thread) -> [(wall ns, task clock ns)], each
    thread's intervals back to back from 0, the threads' rows interleaved (a
    trace's rows come location by location, not in time order)."""
    rows = []
    for (rank, thread), intervals in threads.items():
        t = 0
        for i, (wall, on) in enumerate(intervals):
            values = np.full(METRIC_DTYPE["values"].shape, np.nan)
            values[0], values[1] = on, 1
            rows.append((rank, thread, i, i, t + wall, t, values))
            t += wall
    out = np.array(rows, dtype=METRIC_DTYPE)
    return out[::-1]  # the rule must not rely on the rows' order


def test_first_read_of_each_thread_is_the_start_not_the_run():
    # Each thread's first interval holds its first call: MPI_Init, asleep for 680 ms
    # while the other processes start; then 100 reads of 1 ms, 1 % off the CPU.
    run = [(1_000_000, 990_000)] * 100
    start = [(680_000_000, 10_000_000)]
    rows = _start_and_run({(r, k): start + run for r in (0, 1) for k in (0, 1)})

    kept = after_start(rows)
    assert kept.size == rows.size - 4
    assert not np.any(kept["since_ticks"] == 0)  # every start interval gone
    by_rank = of_reads(kept, START_NAMES, 1.0)
    for r in (0, 1):
        assert by_rank[r].reads == 200
        assert abs(by_rank[r].off_fraction - 0.01) < 1e-9
    # Without the rule the start dominates: the share a clean run showed.
    whole = of_reads(rows, START_NAMES, 1.0)
    assert whole[0].off_fraction > 0.8


def test_a_thread_with_one_read_keeps_none():
    empty = np.zeros(0, dtype=METRIC_DTYPE)
    assert after_start(empty).size == 0
    one = _start_and_run({(0, 0): [(1000, 1000)]})
    assert after_start(one).size == 0


def test_time_off_the_cpu_is_given_to_a_reads_segments_by_their_share():
    # One read over 10 us: two segments of 3 and 5 us (8 us in all) and 2 us of
    # MPI calls, 1 us off the CPU; a second read whose segment indexes are broken.
    samples = np.zeros(3, dtype=SAMPLE_DTYPE)
    samples["duration_ns"] = [3000.0, 5000.0, 1000.0]
    rows = []
    for first, sample, on in ((0, 1, 9000.0), (2, 7, 9000.0)):
        values = np.full(METRIC_DTYPE["values"].shape, np.nan)
        values[0] = on
        rows.append((0, 0, sample, first, 10_000, 0, values))
    metrics = np.array(rows, dtype=METRIC_DTYPE)
    off = off_cpu_in_segments(metrics, START_NAMES, samples, 1.0)
    assert off[0] == pytest.approx(800.0) and np.isnan(off[1])
    assert off_cpu_in_segments(metrics, ["perf::CONTEXT-SWITCHES"], samples, 1.0) is None


def _reads_of(shares: dict[int, list[float]]) -> np.ndarray:
    """METRIC_DTYPE rows of 10 ms intervals, rank -> the share off the CPU of each."""
    rows = []
    for rank, values in shares.items():
        for i, share in enumerate(values):
            v = np.full(METRIC_DTYPE["values"].shape, np.nan)
            v[0], v[1], v[2] = INTERVAL_NS * (1 - share), 1, 0
            t0 = int(i * INTERVAL_NS * TICKS_PER_NS)
            rows.append((rank, 0, i, i, t0 + int(INTERVAL_NS * TICKS_PER_NS), t0, v))
    return np.array(rows, dtype=METRIC_DTYPE)


def test_counters_too_few_to_decide_leave_it_to_the_durations():
    # Rank 1 takes 5 ms time slices, 1 in 10, and its 50 reads say 35 % off its CPU;
    # its peer's segments are short and read the counters 3 times, once while
    # something else ran there. The counters agree but cannot decide (3 reads): the
    # durations' shape names rank 1.
    rng = np.random.default_rng(5)
    durations = {(0, r): rng.normal(1e6, 1e3, 400) for r in range(2)}
    durations[(0, 1)][::10] += 5e6
    prep = make_prepared(durations, t_diff_ns=10.0)
    prep.cpu_time = of_reads(
        _reads_of({0: [0.01, 0.01, 0.30], 1: [0.35] * 50}), NAMES, TICKS_PER_NS
    )
    (found,) = noisy_core.detect(prep).anomalies
    assert found.rank == 1 and found.evidence["measured_q_value"] >= 0.05
    assert found.evidence["named_by"] == ["interruptions in its segments' durations"]
    # Counters that measured rank 1 like its peer still overrule the shape.
    prep.cpu_time = of_reads(
        _reads_of({0: [0.01, 0.01, 0.30], 1: [0.10] * 50}), NAMES, TICKS_PER_NS
    )
    assert noisy_core.detect(prep).anomalies == []
