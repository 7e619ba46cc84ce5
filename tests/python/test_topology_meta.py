"""rank-N.json's "topology" read into RankMeta.topology (perfvar.read.meta): a file
written with the spec's keys, an older file without it, malformed entries, the place
the system tree gives; and, under ctest spec.rank_json_topology, the files a real run
wrote (PV_SPEC_TRACES), checked against their own JSON."""

import json
import os

import pytest
from conftest import real_rank_jsons
from perfvar._spec import RankJson as K
from perfvar._spec import RankJsonTopology as KTopo
from perfvar._spec import RankJsonTopologyCpu as KTcpu
from perfvar.read.meta import Topology, TopologyCpu, parse_topology, read_meta


def _cpu(cpu, package, numa, core):
    return {KTcpu.CPU: cpu, KTcpu.PACKAGE: package, KTcpu.NUMA: numa, KTcpu.CORE: core}


def _write(directory, rank, topology=None):
    os.makedirs(os.path.join(directory, "perfvar"), exist_ok=True)
    doc = {K.RANK: rank, K.NRANKS: 2, K.HOST: "n0", K.CPUS: [rank]}
    if topology is not None:
        doc[K.TOPOLOGY] = topology
    path = os.path.join(directory, "perfvar", f"rank-{rank}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)


def test_a_written_topology_is_read_with_each_cpu(tmp_path):
    _write(
        tmp_path,
        0,
        {
            KTopo.SOURCE: "hwloc",
            KTopo.NOTE: "",
            KTopo.PACKAGE: 1,
            KTopo.NUMA: 1,
            KTopo.CORE: 9,
            KTopo.CPUS: [_cpu(5, 1, 1, 9), _cpu(4, 1, 1, 8)],
        },
    )
    _write(tmp_path, 1)  # a file that predates the topology
    meta = read_meta(str(tmp_path), [0, 1])
    t = meta.ranks[0].topology
    assert t == Topology(
        source="hwloc",
        note="",
        package=1,
        numa=1,
        core=9,
        cpus=[TopologyCpu(4, 1, 1, 8), TopologyCpu(5, 1, 1, 9)],
    )
    assert t.place() == (1, None)  # two cores of socket 1: under the socket
    assert meta.ranks[1].topology is None
    assert meta.ranks[1].host == "n0"


def test_the_place_is_the_deepest_level_all_cpus_share():
    def topo(*cpus):
        return Topology(source="sysfs", cpus=[TopologyCpu(*c) for c in cpus])

    assert topo((2, 0, 0, 3), (3, 0, 0, 3)).place() == (0, 3)  # one core's threads
    assert topo((0, 0, 0, 0), (8, 1, 1, 0)).place() == (None, None)  # two sockets
    assert topo((0, -1, -1, -1)).place() == (None, None)  # nothing known
    assert Topology().place() == (None, None)


def test_malformed_fields_read_as_not_known():
    t = parse_topology(
        {
            KTopo.SOURCE: 3,
            KTopo.PACKAGE: "0",
            KTopo.NUMA: True,
            KTopo.CPUS: [{KTcpu.CPU: "1"}, "x", {KTcpu.CPU: 2, KTcpu.CORE: None}],
        }
    )
    assert t.source == "none" and t.note == ""
    assert (t.package, t.numa, t.core) == (-1, -1, -1)
    assert t.cpus == [TopologyCpu(2, -1, -1, -1)]
    assert parse_topology(None) is None and parse_topology([1]) is None


@pytest.mark.skipif(
    not os.environ.get("PV_SPEC_TRACES"),
    reason="PV_SPEC_TRACES names no trace (ctest spec.rank_json_topology sets it)",
)
def test_real_rank_json_topology_reads_back():
    files = real_rank_jsons()
    assert files
    for path in files:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        directory = os.path.dirname(os.path.dirname(path))
        rank = doc[K.RANK]
        t = read_meta(directory, [rank]).ranks[rank].topology
        raw = doc[K.TOPOLOGY]
        assert t.source == raw[KTopo.SOURCE] in ("hwloc", "sysfs", "none")
        assert [c.cpu for c in t.cpus] == sorted(c[KTcpu.CPU] for c in raw[KTopo.CPUS])
        if t.source != "none":
            # the CPU it started on is one of its mask's, and where it sits is known
            start = [
                c
                for c in t.cpus
                if (c.package, c.numa, c.core) == (t.package, t.numa, t.core)
            ]
            assert start and t.package >= 0 and t.core >= 0
