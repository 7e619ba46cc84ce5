"""Duration modes (perfvar.read.modes): a class whose segments are two kinds of work
far apart, in the same proportion on every rank, is split in two and judged as two;
one kind, a slowdown of tens of %, or a process lengthening one rank's segments is
not split."""

from __future__ import annotations

import numpy as np

from conftest import make_prepared
from perfvar.detect import run_all
from perfvar.read.modes import split_modes, split_threshold
from perfvar.read.samples import SAMPLE_DTYPE, TraceSamples
from perfvar.read.segments import mode_key, parse_segment_key, segment_key
from perfvar.stats.model import DetectParams

SITE = "MPI_Sendrecv@/app+0x96a2"
KEY = segment_key(f"{SITE}</app+0x62e8", f"{SITE}</app+0x62c8")
SHORT_NS, LONG_NS = 200_000.0, 30_000_000.0  # packing between axes, the force loop


def _mixture(
    seed: int, n: int = 300, long_every: int = 3, long_factor: dict | None = None
):
    """Per rank: one long segment for every ``long_every`` - 1 short ones (as the
    loop makes them, in order), 5 % noise; ``long_factor[rank]`` slows that rank's
    long kind."""
    rng = np.random.default_rng(seed)
    out = {}
    for rank in (0, 1):
        kind_long = np.arange(n) % long_every == long_every - 1
        d = np.where(kind_long, LONG_NS * (long_factor or {}).get(rank, 1.0), SHORT_NS)
        out[rank] = d * (1 + 0.05 * rng.standard_normal(n))
    return out


def _pooled(per_rank: dict[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    d = np.concatenate(list(per_rank.values()))
    r = np.concatenate([np.full(v.size, k) for k, v in per_rank.items()])
    return d, r


def _trace(per_rank: dict[int, np.ndarray]) -> TraceSamples:
    rows = []
    for rank, d in per_rank.items():
        chunk = np.zeros(d.size, dtype=SAMPLE_DTYPE)
        chunk["rank"], chunk["duration_ns"] = rank, d
        chunk["start_ticks"] = np.arange(d.size) * 50_000_000
        rows.append(chunk)
    return TraceSamples("t", 1e9, [KEY], np.concatenate(rows), [])


def test_two_kinds_of_work_split_between_them():
    t = split_threshold(*_pooled(_mixture(1)))
    assert t is not None and SHORT_NS * 1.5 < t < LONG_NS / 1.5


def test_one_kind_or_a_slowdown_of_tens_of_percent_is_not_split():
    rng = np.random.default_rng(2)
    one = {r: SHORT_NS * np.exp(0.3 * rng.standard_normal(300)) for r in (0, 1)}
    assert split_threshold(*_pooled(one)) is None
    # rank 1 doubles half of its segments: a slower stretch, still one kind of work
    one[1][150:] *= 2.0
    assert split_threshold(*_pooled(one)) is None


def test_a_process_lengthening_one_ranks_segments_is_not_split():
    # A time slice of 4-8 ms in 40 % of rank 1's 0.2 ms segments: 20-40x, far apart,
    # but on one rank only.
    rng = np.random.default_rng(3)
    one = {r: SHORT_NS * (1 + 0.05 * rng.standard_normal(300)) for r in (0, 1)}
    hit = rng.random(300) < 0.4
    one[1][hit] += rng.uniform(4e6, 8e6, int(hit.sum()))
    assert split_threshold(*_pooled(one)) is None


def test_split_parts_keep_the_call_sites_and_say_their_side():
    trace = split_modes(_trace(_mixture(4)))
    assert len(trace.segments) == 2
    below, up = (parse_segment_key(k) for k in trace.segments)
    plain = parse_segment_key(KEY)
    assert below.start == up.start == plain.start and below.end == up.end == plain.end
    threshold = up.mode[1]
    assert below.mode == ("below", threshold) and up.mode[0] == "above"
    assert SHORT_NS * 1.5 < threshold < LONG_NS / 1.5
    long_rows = trace.samples["segment"] == 1
    assert np.all(trace.samples["duration_ns"][long_rows] > threshold)
    assert long_rows.sum() == 200  # one in three of each rank's 300
    assert parse_segment_key(mode_key(KEY, "above", 2.4e6)).mode == ("above", 2.4e6)


def _named(per_class: dict[tuple[int, int], np.ndarray]) -> list[tuple]:
    found, _ = run_all(make_prepared(per_class, t_diff_ns=10.0), DetectParams())
    return sorted((a.kind, a.rank, a.segment) for a in found if a.kind != "migrated")


def test_a_slower_long_kind_is_found_once_the_class_is_split():
    # Rank 1's force loop 10 % slower: the mixture's median is the short kind's, so
    # judged whole the class shows nothing; split, its long part names rank 1.
    mix = _mixture(5, long_factor={1: 1.10})
    assert _named({(0, r): d for r, d in mix.items()}) == []
    trace = split_modes(_trace(mix))
    s = trace.samples
    cells = {
        (int(g), int(r)): s["duration_ns"][(s["segment"] == g) & (s["rank"] == r)]
        for g in (0, 1)
        for r in (0, 1)
    }
    assert _named(cells) == [("slow_segment", 1, "S1")]
