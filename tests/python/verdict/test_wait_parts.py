"""The wait states, their summary, the delay costs and the consequences found in
parts of the ranks (perfvar.verdict.parts) are those found in one part, to the bit:
how the ranks are split (the processes of `mpiexec -n K perfvar analyze`) changes
nothing in analysis.json."""

import numpy as np
import pytest

from perfvar.read.samples import SAMPLE_DTYPE, TraceSamples, durations_only
from perfvar.read.segments import segment_key
from perfvar.stats.model import Anomaly
from perfvar.verdict import headline, wait_states, wait_summary
from perfvar.verdict.parts import LocalParts

APP = "/opt/app/bin/solver"
SITES = {
    "allreduce": f"MPI_Allreduce@{APP}+0x10",
    "bcast": f"MPI_Bcast@{APP}+0x20",
    "bcast2": f"MPI_Bcast@{APP}+0x28",
    "recv": f"MPI_Recv@{APP}+0x30",
    "send": f"MPI_Send@{APP}+0x40",
}
LAT_NS = 300.0


def _run(nranks, steps, seed, uneven, grid=None):
    """Ranks that compute, meet in an Allreduce, the upper half also in a Bcast
    every other step (from one of two sites), and exchange with a neighbour in a
    Send or a Recv; durations drawn at random, a few ranks slower. ``uneven``: the
    ranks' sequences of collectives differ (the Bcasts), so they are matched per
    function and per site, not by position. ``grid`` (ns): durations on it, so that
    ranks enter MPI at the same time (ties); else fractions of a ns, so that sums
    round."""
    rng = np.random.default_rng(seed)
    keys, index = [], {}

    def seg(a, b):
        k = segment_key(SITES[a], SITES[b])
        if k not in index:
            index[k] = len(keys)
            keys.append(k)
        return index[k]

    t = np.full(nranks, 10_000.0)
    last = ["recv"] * nranks
    rows = []
    slow = 1.0 + 0.3 * (np.arange(nranks) % 3 == 1)

    def compute(r, call, mean):
        d = mean * slow[r] * (1 + 0.2 * rng.random())
        if grid:
            d = float(grid * round(d / grid))
        rows.append((seg(last[r], call), r, 0, int(t[r]), d, r, r, -1))
        last[r] = call
        return t[r] + d

    for k in range(steps):
        enter = np.array([compute(r, "allreduce", 50_000.0) for r in range(nranks)])
        t[:] = enter.max() + LAT_NS
        upper = np.arange(nranks) >= nranks // 2 if uneven else np.ones(nranks, bool)
        if k % 2 == 0:
            site = "bcast" if (k // 2) % 2 else "bcast2"
            e = {r: compute(r, site, 5_000.0) for r in np.flatnonzero(upper)}
            top = max(e.values())
            for r in e:
                t[r] = max(e[r], top - 2000.0 * (r % 2)) + LAT_NS
        if grid:
            t[:] = grid * np.round(t / grid)
        call = ["send" if r % 2 else "recv" for r in range(nranks)]
        enter = np.array([compute(r, call[r], 20_000.0) for r in range(nranks)])
        peer = np.roll(enter, 1)
        t[:] = np.maximum(enter, peer) + LAT_NS
        if grid:
            t[:] = grid * np.round(t / grid)
    samples = np.array(rows, dtype=SAMPLE_DTYPE)
    order = np.lexsort((samples["start_ticks"], samples["rank"]))
    return TraceSamples("sim", 1e9, keys, samples[order], [])


def _parts(trace, blocks):
    """The trace's calls in parts of the ranks' ``blocks``, narrowed as the
    analysis narrows them."""
    out = []
    for block in blocks:
        rows = trace.samples[np.isin(trace.samples["rank"], block)]
        out.append(
            wait_states.part_of(
                rows, trace.segments, trace.trace_ns, keep=durations_only
            )
        )
    return LocalParts(out)


def _findings(trace, ids):
    """Findings given by hand: a slow class, a slow core, a noisy core."""
    return [
        Anomaly("slow_segment", 1, "h", 1, ids[0], 8000.0, {"excess_rel": 0.3}),
        Anomaly("slow_core", 4, "h", 4, None, None, {"shift_rel": 0.3}),
        Anomaly("noisy_core", 7, "h", 7, None, None, {"lost_fraction": 0.1}),
        Anomaly("slow_segment", 2, "h", 2, ids[1], 100.0, {"excess_rel": 0.01}),
    ]


@pytest.mark.parametrize("grid", [None, 1000.0])
@pytest.mark.parametrize("uneven", [False, True])
# [0, 4]: a part with no rank (none of its ranks' locations could be read).
@pytest.mark.parametrize("cut", [[1], [3, 4], [2, 5, 6], list(range(1, 9)), [0, 4]])
def test_the_calls_in_parts_give_what_one_part_gives(grid, uneven, cut):
    nranks = 9
    trace = _run(nranks, 40, seed=len(cut), uneven=uneven, grid=grid)
    ids = [f"S{i}" for i in range(len(trace.segments))]
    blocks = np.split(np.arange(nranks), cut)
    whole, split = _parts(trace, [np.arange(nranks)]), _parts(trace, blocks)
    one, many = (wait_states.find_in_parts(p) for p in (whole, split))
    assert one == many
    assert one.synchronised and one.matched > 0 and one.p2p_calls > 0
    ws = whole.parts[0].ws
    assert ws.waiting_ns.max() > 1000.0
    calls = whole.parts[0].tl
    for block, part in zip(blocks, split.parts):
        mine = np.isin(calls.rank, block)
        for name in ("waiting_ns", "cause", "cause_local", "pattern", "sync"):
            np.testing.assert_array_equal(getattr(part.ws, name), getattr(ws, name)[mine])
    assert wait_summary.summarise(whole, one) == wait_summary.summarise(split, many)
    narrow = TraceSamples("sim", 1e9, trace.segments, durations_only(trace.samples), [])
    a = headline.rank_findings(_findings(trace, ids), narrow, ids, parts=whole)
    b = headline.rank_findings(_findings(trace, ids), narrow, ids, parts=split)
    assert [x.to_json() for x in a.anomalies] == [x.to_json() for x in b.anomalies]
    assert [x.to_json() for x in a.minor] == [x.to_json() for x in b.minor]
    assert a.consequences == b.consequences and a.waits == b.waits
    costs = [x.cost_ns for x in a.anomalies + a.minor]
    assert all(c is not None for c in costs) and max(costs) > 0


def test_uneven_collectives_are_matched_per_function_then_per_site():
    """The upper ranks' Bcasts make their sequences differ: the Allreduces are
    matched per function (every rank made as many), the Bcasts per site among the
    upper ranks (the lower ones made none)."""
    trace = _run(6, 40, seed=1, uneven=True)
    parts = _parts(trace, [np.arange(6)])
    job = wait_states.find_in_parts(parts)
    assert job.matched == 40  # the Allreduces: the rooted Bcasts are not N x N
    tl, ws = parts.parts[0].tl, parts.parts[0].ws
    names = tl.names()[tl.function]
    bcast = names == "bcast"
    assert ws.sync[bcast].all() and (tl.rank[bcast] >= 3).all()
    assert set(ws.cause[bcast & (ws.waiting_ns > 0)].tolist()) <= {3, 4, 5}
    assert set(ws.pattern[bcast & (ws.waiting_ns > 0)]) == {wait_states.WAIT_ROOTED}


@pytest.mark.parametrize("chunk", [1, 7, 50])
def test_the_summary_summed_a_few_ranks_at_a_time_is_that_of_all_at_once(
    monkeypatch, chunk
):
    """Per-rank sums in blocks of whole ranks of about ``chunk`` calls (rank 4
    has one segment and so no call: a rank with no calls among them) give what
    one block gives."""
    trace = _run(9, 30, seed=4, uneven=True)
    four = np.flatnonzero(trace.samples["rank"] == 4)
    trace.samples = np.delete(trace.samples, four[1:])
    parts = _parts(trace, [np.arange(9)])
    job = wait_states.find_in_parts(parts)
    want = wait_summary.summarise(parts, job)
    monkeypatch.setattr(wait_summary, "_PAIR_CHUNK", chunk)
    assert wait_summary.summarise(parts, job) == want
    assert want["total_ns"] > 0


@pytest.mark.parametrize("top", [1, 2, 5])
def test_the_largest_pairs_of_the_parts_are_those_of_the_job(monkeypatch, top):
    """Each part sends its own largest pairs only: the job's largest, ties in pair
    order (entries on a grid), are among them."""
    monkeypatch.setattr(wait_summary, "TOP_PAIRS", top)
    trace = _run(9, 30, seed=2, uneven=False, grid=1000.0)
    whole = _parts(trace, [np.arange(9)])
    split = _parts(trace, np.split(np.arange(9), [2, 3, 7]))
    one, many = (wait_states.find_in_parts(p) for p in (whole, split))
    want = wait_summary.summarise(whole, one)
    assert len(want["by_rank_pair_ns"]) == top
    assert wait_summary.summarise(split, many) == want
