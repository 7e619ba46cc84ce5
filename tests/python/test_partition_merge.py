"""The reporting process's samples: merging the parts gives the whole trace and lets
each part's trace go once copied."""

from conftest import normal_durations
from perfvar import partition
from perfvar.read.samples import SAMPLE_DTYPE
from perfvar.read.trace import read_trace


def test_merge_gives_the_whole_trace_and_lets_each_part_go(trace_factory):
    path = trace_factory("parts", normal_durations(seed=3, nranks=6))
    whole = read_trace(path)
    parts = [
        partition.Part(read_trace(path, ranks=block))
        for block in partition.split(whole.ranks, 3)
    ]
    merged = partition.merge(path, parts)
    assert all(p.trace is None for p in parts)
    assert merged.samples.dtype == SAMPLE_DTYPE
    assert merged.samples.tobytes() == whole.samples.tobytes()
    assert merged.probes.tobytes() == whole.probes.tobytes()
    assert merged.locations == whole.locations
    assert merged.warnings == whole.warnings
