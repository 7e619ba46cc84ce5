"""What else ran on a noisy or slow core's CPU (perfvar.verdict.neighbours), from
rank-N.json's "neighbours" as the library writes it (src/metrics/neighbours.h), the
hypervisor under it (clock_caps), and how a finding says it."""

import json

from perfvar.detect import slow_core
from perfvar.detect.words import neighbours_clause, virtual_clause
from perfvar.read.meta import read_meta
from perfvar.stats.model import Anomaly
from perfvar.verdict import neighbours

MS = 1e6


def _record(self_ms=400.0, user_ms=880.0, tasks=None):
    """rank-N.json "neighbours" of a rank on cpu 1 over 1 s, with another CPU listed."""
    cpu = {
        "user_ns": 0.0,
        "nice_ns": 0.0,
        "system_ns": 0.0,
        "idle_ns": 0.0,
        "iowait_ns": 0.0,
        "irq_ns": 0.0,
        "softirq_ns": 0.0,
        "steal_ns": 0.0,
    }
    return {
        "span_ns": 1000 * MS,
        "tick_ns": 10 * MS,
        "self_ns": self_ms * MS,
        "cpus": [
            dict(cpu, cpu=0, user_ns=990 * MS),
            dict(
                cpu,
                cpu=1,
                user_ns=user_ms * MS,
                system_ns=20 * MS,
                irq_ns=10 * MS,
                softirq_ns=5 * MS,
                steal_ns=30 * MS,
            ),
        ],
        "tasks": (
            tasks
            if tasks is not None
            else [
                {"pid": 7, "tid": 7, "comm": "pv-busy", "cpu": 1, "ns": 480 * MS},
                {"pid": 3, "tid": 3, "comm": "elsewhere", "cpu": 0, "ns": 300 * MS},
                {"pid": 71, "tid": 71, "comm": "kdamond.0", "cpu": 1, "ns": 20 * MS},
            ]
        ),
    }


def test_the_cpu_s_time_is_split_between_the_rank_and_the_rest():
    got = neighbours.on_cpu(_record(), 1, [1])
    # user + system of cpu 1 (900 ms) minus the rank's own 400 ms
    assert got["others_ns"] == 500 * MS
    assert got["interrupts_ns"] == 15 * MS and got["steal_ns"] == 30 * MS
    # only the tasks last seen on that CPU, most time first
    assert [t["comm"] for t in got["tasks"]] == ["pv-busy", "kdamond.0"]


def test_a_rank_on_several_cpus_has_no_share_of_one():
    got = neighbours.on_cpu(_record(), 1, [0, 1])
    assert got["others_ns"] is None and got["tasks"][0]["comm"] == "pv-busy"


def test_nothing_without_the_record_or_for_a_cpu_it_does_not_list():
    assert neighbours.on_cpu(None, 1, [1]) is None
    assert neighbours.on_cpu(_record(), None, [1]) is None
    assert neighbours.on_cpu(_record(), 5, [5]) is None


def test_only_findings_about_a_core_get_it():
    class Meta:
        cpus = [1]
        neighbours = _record()
        caps = {"hypervisor": "KVMKVMKVM"}

    noisy = Anomaly("noisy_core", 1, "h", 1, None, 1.0, {"lost_fraction": 0.5})
    core = Anomaly("slow_core", 1, "h", 1, None, 1.0, {})
    segment = Anomaly("slow_segment", 1, "h", 1, "S0", 1.0, {})
    other_rank = Anomaly("noisy_core", 0, "h", 0, None, 1.0, {})
    neighbours.attach([noisy, core, segment, other_rank], {1: Meta()})
    assert noisy.evidence["on_its_cpu"]["others_ns"] == 500 * MS
    assert noisy.evidence["lost_fraction"] == 0.5  # the rest of the evidence kept
    assert core.evidence["on_its_cpu"]["hypervisor"] == "KVM"
    assert (
        "on_its_cpu" not in segment.evidence and "on_its_cpu" not in other_rank.evidence
    )


def test_the_finding_says_who_ran_there():
    ev = {"on_its_cpu": neighbours.on_cpu(_record(), 1, [1])}
    text = neighbours_clause(ev)
    assert text.startswith("; on cpu 1 over the run (1.0 s): other tasks 500.0 ms")
    assert "host steal 30.0 ms" in text
    assert text.endswith(
        "most there: pv-busy (pid 7) 480.0 ms, kdamond.0 (pid 71) 20.0 ms"
    )
    assert neighbours_clause({}) == ""
    quiet = neighbours.on_cpu(_record(tasks=[]), 1, [0, 1])
    assert "other tasks" not in neighbours_clause({"on_its_cpu": quiet})
    assert "most there" not in neighbours_clause({"on_its_cpu": quiet})


def test_the_reader_keeps_the_record(tmp_path):
    (tmp_path / "perfvar").mkdir()
    doc = {"rank": 0, "nranks": 1, "host": "h", "cpus": [1], "neighbours": _record()}
    (tmp_path / "perfvar" / "rank-0.json").write_text(json.dumps(doc))
    assert read_meta(str(tmp_path), [0]).ranks[0].neighbours == _record()
    doc["neighbours"] = None  # a rank that died before its stop
    (tmp_path / "perfvar" / "rank-0.json").write_text(json.dumps(doc))
    assert read_meta(str(tmp_path), [0]).ranks[0].neighbours is None


def test_a_virtual_cpu_is_named_by_its_hypervisor():
    assert neighbours.hypervisor_name("KVMKVMKVM") == "KVM"
    assert neighbours.hypervisor_name("Microsoft Hv") == "Hyper-V"
    assert neighbours.hypervisor_name("bhyve bhyve ") == "bhyve"
    assert neighbours.hypervisor_name("NewVisorXYZ") == "NewVisorXYZ"
    for none in ("", "   ", None, 0):
        assert neighbours.hypervisor_name(none) is None


def test_a_slow_core_on_a_virtual_cpu_says_what_a_host_can_do():
    on = dict(neighbours.on_cpu(_record(), 1, [1]), hypervisor="KVM")
    text = virtual_clause({"on_its_cpu": on})
    assert text.startswith("; its CPU is virtual (KVM): a host can run one virtual CPU")
    # bare metal, or no record: nothing said
    bare = dict(on, hypervisor=None)
    assert virtual_clause({"on_its_cpu": bare}) == ""
    assert virtual_clause({}) == ""
    # the slow core's sentence carries it after what ran beside it
    ev = {
        "shift_rel": 0.12,
        "segment_shift_rel": 0.11,
        "shift_ci_rel": [0.08, 0.15],
        "ci_level": 0.95,
        "q_value": 1e-6,
        "alpha": 0.05,
        "test": "one-sided sign test over 40 blocks",
        "floor_rel": 0.02,
        "classes": [{"segment": "S0", "shift_rel": 0.12, "probe": False}],
        "on_its_cpu": on,
    }
    an = {"kind": "slow_core", "rank": 1, "host": "h", "cpu": 1, "excess_ns": 5e5}
    text = slow_core.describe(dict(an, evidence=ev), {})
    assert text.endswith(virtual_clause(ev)) and "; on cpu 1 over the run" in text
    text = slow_core.describe(dict(an, evidence=dict(ev, on_its_cpu=bare)), {})
    assert "virtual" not in text
