"""perfvar.stats.cpu_use: each thread's CPU table, against a direct count."""

import numpy as np
import pytest

from perfvar.stats import cpu_use
from perfvar.read.samples import CPU_UNKNOWN, SAMPLE_DTYPE


def _samples(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    s = np.zeros(5000, dtype=SAMPLE_DTYPE)
    s["rank"] = rng.integers(0, 7, s.size)
    s["thread"] = rng.integers(0, 3, s.size)
    s["cpu_enter"] = rng.choice([CPU_UNKNOWN, 0, 3, 5, 130], s.size)
    s["cpu_leave"] = np.where(rng.random(s.size) < 0.8, s["cpu_enter"], 3)
    return s  # threads interleaved: the table must group them itself


def _direct(s: np.ndarray) -> dict:
    out = {}
    for rank, thread in sorted({(int(r), int(t)) for r, t in s[["rank", "thread"]]}):
        mine = s[(s["rank"] == rank) & (s["thread"] == thread)]
        e, l = mine["cpu_enter"], mine["cpu_leave"]
        started = {}
        for c in sorted(int(c) for c in e[e != CPU_UNKNOWN]):
            started[c] = started.get(c, 0) + 1
        seen = {int(c) for c in np.concatenate([e, l]) if c != CPU_UNKNOWN}
        both = (e != CPU_UNKNOWN) & (l != CPU_UNKNOWN)
        out[(rank, thread)] = cpu_use.ThreadCpus(
            started=started,
            cpus=tuple(sorted(seen)),
            crossed=int(np.count_nonzero(both & (e != l))),
            segments=int(mine.size),
        )
    return out


@pytest.mark.parametrize("by_sorting", [False, True])
def test_table_counts_what_a_direct_count_does(monkeypatch, by_sorting):
    if by_sorting:  # the path of many threads times many CPUs
        monkeypatch.setattr(cpu_use, "_MAX_BINS", 0)
    for seed in range(3):
        s = _samples(seed)
        assert cpu_use.cpu_use(s) == _direct(s)
        grouped = s[np.lexsort((s["thread"], s["rank"]))]  # as the reader gives them
        assert cpu_use.cpu_use(grouped) == _direct(s)


def test_main_cpu_and_rank_cpus():
    t = cpu_use.ThreadCpus(
        started={2: 5, 4: 5, 9: 1}, cpus=(2, 4, 9), crossed=0, segments=11
    )
    assert t.main_cpu == 2  # the lowest on a tie
    assert cpu_use.ThreadCpus({}, (), 0, 3).main_cpu is None
    use = {(0, 0): t, (0, 1): cpu_use.ThreadCpus({7: 1}, (1, 7), 1, 1)}
    assert cpu_use.rank_cpus(use) == {0: [1, 2, 4, 7, 9]}
    assert cpu_use.cpu_use(np.zeros(0, dtype=SAMPLE_DTYPE)) == {}


def _by_location(seed: int) -> np.ndarray:
    """Samples as the reader gives them: one run per (rank, thread), ascending, of
    different lengths, CPUs unknown at the start of some and changing within."""
    rng = np.random.default_rng(seed)
    runs = [(r, t, int(rng.integers(1, 900))) for r in range(5) for t in range(2)]
    s = np.zeros(sum(n for _, _, n in runs), dtype=SAMPLE_DTYPE)
    at = 0
    for rank, thread, n in runs:
        s["rank"][at : at + n], s["thread"][at : at + n] = rank, thread
        at += n
    s["cpu_enter"] = rng.choice([CPU_UNKNOWN, 1, 2, 64, 1000], s.size)
    s["cpu_leave"] = np.where(rng.random(s.size) < 0.7, s["cpu_enter"], CPU_UNKNOWN)
    return s


@pytest.mark.parametrize("chunk", [1, 7, 256, 1 << 20])
@pytest.mark.parametrize("by_sorting", [False, True])
def test_chunks_of_any_size_count_alike(monkeypatch, chunk, by_sorting):
    """Runs cut across chunks and threads met again in a later chunk add up to the
    direct count, with each thread's CPUs and the threads in ascending order."""
    monkeypatch.setattr(cpu_use, "_CHUNK", chunk)
    if by_sorting:
        monkeypatch.setattr(cpu_use, "_MAX_BINS", 0)
    for seed in range(2):
        for s in (_by_location(seed), _samples(seed)):
            got, want = cpu_use.cpu_use(s), _direct(s)
            assert got == want
            assert list(got) == list(want)
            for key, t in got.items():
                assert list(t.started) == sorted(t.started)
                assert list(t.started.items()) == list(want[key].started.items())
