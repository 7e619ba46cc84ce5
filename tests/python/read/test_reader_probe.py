"""Reading fixed-work probes (PERFVAR_PROBE) back: the ``perfvar:probe`` region of the
trace into ``TraceSamples.probes`` and rank-N.json's ``probe`` into ``RankMeta.probe``.

The trace is written as perfvar writes it (docs/trace-format.md): per traced call,
segment Enter/Leave (with a ``perfvar:user`` region nested), then, when due, the
probe's Enter/Leave with the ``cpu`` attribute, then the MPI region.
"""

import json
import os

import numpy as np

from conftest import RESOLUTION_HZ, SEG_A, SEG_B
from perfvar.read.meta import read_meta
from perfvar.read.samples import PROBE_DTYPE, SAMPLE_DTYPE, TraceSamples
from perfvar.read.trace import read_trace

TICK_NS = 1e9 / RESOLUTION_HZ


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
    """Each location makes ``calls`` traced calls; every ``probe_every``-th runs a probe
    of 400 + 10 * rank + call ticks on CPU rank + 10 * thread (``migrate``: the
    (rank, call) whose probe ends on another CPU). Returns the probes written as
    {(rank, thread): [(start, ticks, cpu)]}."""
    import otf2
    from otf2.enums import Paradigm, RegionRole, Type

    written = {}
    with otf2.writer.open(path, timer_resolution=RESOLUTION_HZ) as trace:
        defs = trace.definitions
        node = defs.system_tree_node("node0", parent=defs.system_tree_node("machine"))
        cpu_attr = defs.attribute("cpu", "CPU the clock was read on", Type.UINT32)
        mpi = defs.region(
            "MPI_Allreduce",
            canonical_name="MPI_Allreduce",
            region_role=RegionRole.COLL_ALL2ALL,
            paradigm=Paradigm.MPI,
        )
        probe = defs.region(
            "perfvar:probe",
            canonical_name="perfvar:probe",
            region_role=RegionRole.ARTIFICIAL,
            paradigm=Paradigm.MEASUREMENT_SYSTEM,
        )
        user = defs.region(
            "halo",
            canonical_name="perfvar:user:halo",
            region_role=RegionRole.FUNCTION,
            paradigm=Paradigm.USER,
        )
        segs = [
            defs.region(
                k.split(":", 2)[2],
                canonical_name=k,
                region_role=RegionRole.CODE,
                paradigm=Paradigm.USER,
            )
            for k in (SEG_A, SEG_B)
        ]
        for rank in range(ranks):
            group = defs.location_group(f"MPI Rank {rank}", system_tree_parent=node)
            for k in range(threads):
                loc = defs.location(
                    f"Thread {k}" if k else "Master thread", group=group
                )
                w = trace.event_writer_from_location(loc)
                cpu = rank + 10 * k
                mine = written.setdefault((rank, k), [])
                t = 1000
                for i in range(calls):
                    seg = segs[i % 2]
                    w.enter(t, seg, attributes={cpu_attr: cpu})
                    w.enter(t + 1, user)
                    w.leave(t + 2, user)
                    t += 1000 + 7 * i
                    w.leave(t, seg, attributes={cpu_attr: cpu})
                    if with_probes and i % probe_every == probe_every - 1:
                        ticks = 400 + 10 * rank + i
                        end_cpu = cpu + 1 if migrate == (rank, i) else cpu
                        w.enter(t + 5, probe, attributes={cpu_attr: cpu})
                        w.leave(t + 5 + ticks, probe, attributes={cpu_attr: end_cpu})
                        mine.append((t + 5, ticks, cpu if end_cpu == cpu else -1))
                        t += 5 + ticks
                    w.enter(t, mpi)
                    t += 300
                    w.leave(t, mpi)
    meta = os.path.join(path, "perfvar")
    os.makedirs(meta, exist_ok=True)
    for rank in range(ranks):
        doc = {
            "rank": rank,
            "nranks": ranks,
            "host": "node0",
            "cpus": [rank],
            "calibration": {"status": "complete", "t_min_ns": 150.0, "t_diff_ns": 4.0},
        }
        if probe_meta:
            per = [
                {
                    "thread": k,
                    "count": len(written[rank, k]),
                    "total_ns": sum(x[1] for x in written[rank, k]) * TICK_NS,
                }
                for k in range(threads)
            ]
            doc["probe"] = {
                "period_ms": 10,
                "adds": 864,
                "k_source": "calibration t_min",
                "count": sum(p["count"] for p in per),
                "total_ns": sum(p["total_ns"] for p in per),
                "threads": per,
            }
        else:
            doc["probe"] = None
        with open(os.path.join(meta, f"rank-{rank}.json"), "w") as fh:
            json.dump(doc, fh)
    return written


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
        assert probe["period_ms"] == 10 and probe["adds"] == 864
        assert probe["k_source"] == "calibration t_min"
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
