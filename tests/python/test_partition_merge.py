"""The reporting process's samples: merging the parts gives the whole trace and lets
each part's trace go once copied; the samples kept after the cells keep their timing
row for row."""

import numpy as np

from conftest import normal_durations
from perfvar import partition
from perfvar.parallel import engine
from perfvar.read.samples import (
    CONTEXT_FIELDS,
    SAMPLE_DTYPE,
    TIMING_FIELDS,
    only_fields,
    timing_only,
    whole_rows,
)
from perfvar.read.trace import read_trace


def test_merge_gives_the_whole_trace_and_lets_each_part_go(trace_factory):
    path = trace_factory("parts", normal_durations(seed=3, nranks=6))
    whole = read_trace(path)
    parts = [
        partition.Part(read_trace(path, ranks=block))
        for block in partition.split(whole.ranks, 3)
    ]
    # The middle part as another MPI process sends it: its timing, its context kept
    # there (given back here as that process would answer).
    sent, kept = partition.split_context(parts[1])
    assert sent.trace.samples.dtype.names == TIMING_FIELDS and sent.context is None
    assert kept.trace is sent.trace and kept.context.dtype.names == CONTEXT_FIELDS
    parts[1] = sent
    merged = partition.merge(path, parts)
    assert all(p.trace is None for p in parts)
    parts[1].context = kept.context
    # The timing in the trace, the rest in the parts: together the whole samples.
    assert merged.samples.dtype.names == TIMING_FIELDS
    context, let_go = partition.context_rows(engine(1), parts)
    everything = np.arange(merged.samples.size)
    joined = whole_rows(merged.samples, context(everything))
    assert joined.dtype == SAMPLE_DTYPE
    assert joined.tobytes() == whole.samples.tobytes()
    some = np.sort(np.random.default_rng(1).choice(everything, 97, replace=False))
    assert context(some).tobytes() == only_fields(whole.samples[some], CONTEXT_FIELDS).tobytes()
    assert context(everything[:0]).size == 0
    assert merged.probes.tobytes() == whole.probes.tobytes()
    assert merged.locations == whole.locations
    assert merged.warnings == whole.warnings
    let_go()
    assert all(p.context is None for p in parts)


def test_timing_only_keeps_the_timing_fields_row_for_row(trace_factory):
    path = trace_factory("timing", normal_durations(seed=5, nranks=3))
    samples = read_trace(path).samples
    narrow = timing_only(samples)
    assert narrow.dtype.names == TIMING_FIELDS
    assert narrow.dtype.itemsize < SAMPLE_DTYPE.itemsize
    for name in TIMING_FIELDS:
        assert np.array_equal(narrow[name], samples[name])
    assert timing_only(narrow) is narrow  # nothing more to narrow: no copy
