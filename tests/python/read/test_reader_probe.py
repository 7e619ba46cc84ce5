"""Reading fixed-work probes (PERFVAR_PROBE) back: the ``perfvar:probe`` region of the
trace into ``TraceSamples.probes`` and rank-N.json's ``probe`` into ``RankMeta.probe``.

The trace is written by conftest.write_trace as perfvar writes it
(docs/trace-format.md): per traced call, segment Enter/Leave (with a ``perfvar:user``
region nested), then, when due, the probe's Enter/Leave with the ``cpu`` attribute,
then the MPI region.
"""

import json
import os

import numpy as np

from conftest import SEG_A, SEG_B, TICK_NS, Probes, write_trace
from perfvar.read.meta import read_meta
from perfvar.read.samples import PROBE_DTYPE, SAMPLE_DTYPE, TraceSamples
from perfvar.read.trace import read_trace


def write_probe_trace(
    path,
    ranks=2,
    threads=1,
    calls=30,
    probe_every=3,
    probe_meta=True,
    with_probes=True,
    migrate=None,
):
    """Each location makes ``calls`` traced calls (segments of 1000 + 7 j ticks,
    j < calls, classes A and B in turn); every ``probe_every``-th runs a probe of
    400 + 10 * rank + call ticks on CPU rank + 10 * thread (``migrate``: the
    (rank, call) whose probe ends on another CPU); ``probe_meta``: rank-N.json's
    "probe" says so, else it is null. Returns the probes written as
    {(rank, thread): [(start, ticks, cpu)]}."""

    def probe_ticks(rank, i):
        due = with_probes and i % probe_every == probe_every - 1
        return 400 + 10 * rank + i if due else None

    probes = Probes(
        probe_ticks, moved=frozenset([migrate] if migrate else []), meta=probe_meta
    )
    seg_ticks = 1000 + 7 * np.arange(calls)
    per_rank = {SEG_A: seg_ticks[0::2] * TICK_NS, SEG_B: seg_ticks[1::2] * TICK_NS}
    durations = {rank: per_rank for rank in range(ranks)}
    write_trace(path, durations, threads=threads, cpu_every_event=True, probes=probes)
    return probes.written


def test_probes_are_read_per_location_with_ns_durations_and_cpu(tmp_path):
    path = str(tmp_path / "t")
    written = write_probe_trace(path, ranks=2, threads=2, migrate=(1, 8))
    trace = read_trace(path)
    p = trace.probes
    assert p.dtype == PROBE_DTYPE
    assert len(p) == sum(len(v) for v in written.values()) == 2 * 2 * 10
    for (rank, k), rows in written.items():
        mine = p[(p["rank"] == rank) & (p["thread"] == k)]
        assert mine["start_ticks"].tolist() == [r[0] for r in rows]
        np.testing.assert_allclose(mine["duration_ns"], [r[1] * TICK_NS for r in rows])
        assert mine["cpu"].tolist() == [r[2] for r in rows]
    # the probe that ended on another CPU is attributed to none
    assert (p["cpu"] == -1).sum() == 2  # rank 1's call 8, on both of its threads
    assert [(loc.rank, loc.thread, loc.probes) for loc in trace.locations] == [
        (r, k, 10) for r in range(2) for k in range(2)
    ]
    assert all(
        loc.unclosed == 0 and loc.unmatched_leaves == 0 for loc in trace.locations
    )


def test_probes_do_not_disturb_segments(tmp_path):
    with_p, without = str(tmp_path / "with"), str(tmp_path / "without")
    write_probe_trace(with_p)
    write_probe_trace(without, with_probes=False)
    a, b = read_trace(with_p), read_trace(without)
    assert a.segments == b.segments
    assert len(a.samples) == len(b.samples) == 2 * 30
    # Same segments, durations and CPUs; only the start of the later ones moved by the
    # probes' time, which belongs to no segment.
    for field in ("segment", "rank", "thread", "duration_ns", "cpu_enter", "cpu_leave"):
        np.testing.assert_array_equal(a.samples[field], b.samples[field])
    assert [loc.user_regions for loc in a.locations] == [30, 30]
    assert len(b.probes) == 0 and b.probes.dtype == PROBE_DTYPE


def test_public_callback_path_reads_the_same_probes(tmp_path, monkeypatch):
    import perfvar.read.python_loop as reader

    path = str(tmp_path / "t")
    write_probe_trace(path, threads=2, migrate=(0, 2))
    fast = read_trace(path)
    monkeypatch.setattr(reader, "_set_raw_callbacks", lambda callbacks, scanner: False)
    monkeypatch.setattr(reader, "_raw_get_uint32", lambda: None)
    slow = read_trace(path)
    np.testing.assert_array_equal(fast.probes, slow.probes)
    np.testing.assert_array_equal(fast.samples, slow.samples)


def test_trace_samples_made_without_probes_has_an_empty_array():
    t = TraceSamples("x", 1e9, [], np.empty(0, dtype=SAMPLE_DTYPE), [])
    assert t.probes.dtype == PROBE_DTYPE and len(t.probes) == 0
    u = TraceSamples("y", 1e9, [], np.empty(0, dtype=SAMPLE_DTYPE), [])
    assert u.probes is not t.probes  # not one shared default array


def test_meta_reads_the_probe_object_or_none(tmp_path):
    path = str(tmp_path / "t")
    written = write_probe_trace(path, ranks=2, threads=2)
    meta = read_meta(path, [0, 1])
    for rank in range(2):
        probe = meta.ranks[rank].probe
        assert probe["period_ms"] == 10 and probe["adds"] == 3000
        assert probe["k_source"] == "fixed"
        assert probe["count"] == sum(len(written[rank, k]) for k in range(2))
        assert [x["thread"] for x in probe["threads"]] == [0, 1]
    off = str(tmp_path / "off")
    write_probe_trace(off, probe_meta=False)
    assert read_meta(off, [0]).ranks[0].probe is None
    # a file that predates probes, or a malformed value: None, the rest still read
    for value in ("absent", [1, 2]):
        doc_path = os.path.join(off, "perfvar", "rank-1.json")
        with open(doc_path) as fh:
            doc = json.load(fh)
        if value == "absent":
            doc.pop("probe")
        else:
            doc["probe"] = value
        with open(doc_path, "w") as fh:
            json.dump(doc, fh)
        m = read_meta(off, [1]).ranks[1]
        assert m.probe is None and m.calibrated
