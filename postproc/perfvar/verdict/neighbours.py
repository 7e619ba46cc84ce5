"""What else ran on the CPU of a core found noisy or slow: a candidate cause.

The library records, per rank, two snapshots of the kernel's accounting, at its start
and its stop (rank-N.json ``neighbours``, src/metrics/neighbours.h): each CPU's time by
the kernel's columns, and the tasks of other processes that ran last on one of the
rank's CPUs. For a noisy_core or slow_core finding on one CPU (its ``cpu``), this
splits that CPU's busy time between the rank and the rest:

* ``others_ns``: user + nice + system time of the CPU minus the rank's own process's
  CPU time, when the rank ran on that CPU alone (its ``cpus`` are that one); else
  None (several CPUs: the rank's time cannot be told apart per CPU);
* ``interrupts_ns``: irq + softirq time, where the kernel accounts it apart (else 0);
* ``steal_ns``: the time the host ran something else on that virtual CPU;
* ``tasks``: the other processes' tasks last seen on that CPU, most time first
  (``TASKS_SHOWN``), each with its CPU time. A task that moved between CPUs counts
  where it ran last, so a task listed may have taken its time elsewhere;
* ``hypervisor``: the hypervisor the rank's CPU ran under (rank-N.json
  ``clock_caps.hypervisor``, CPUID's vendor signature, by the name users know it:
  "KVM"), None on bare metal or where it is not known. Such a CPU shares a host
  with other guests, which can run it slower without any steal time counted.

Figures are in ns, within one kernel tick (10 ms at USER_HZ 100) each. The finding
gets them as its evidence ``on_its_cpu``; perfvar.detect.words.neighbours_clause puts
them in words. ``on_cpu`` is a pure function; ``attach`` sets the evidence of the
anomalies it is given, in place. Thread-safe on distinct anomalies.
"""

from __future__ import annotations

from typing import Any, Optional

from perfvar._spec import RankJsonCaps as KCaps
from perfvar._spec import RankJsonNeighbourCpu as KCpu
from perfvar._spec import RankJsonNeighbours as K
from perfvar._spec import RankJsonNeighbourTask as KTask
from perfvar.detect import subject
from perfvar.detect.finding import CORE, NOISE
from perfvar.stats.model import Anomaly

# Findings about a core, whose cause may have run beside it.
SUBJECTS = (NOISE, CORE)
TASKS_SHOWN = 3
# CPUID leaf 0x40000000's vendor signatures (blanks stripped) by their usual names.
HYPERVISORS = {
    "KVMKVMKVM": "KVM",
    "Microsoft Hv": "Hyper-V",
    "VMwareVMware": "VMware",
    "XenVMMXenVMM": "Xen",
    "TCGTCGTCGTCG": "QEMU TCG",
    "bhyve bhyve": "bhyve",
    "VBoxVBoxVBox": "VirtualBox",
    "ACRNACRNACRN": "ACRN",
}


def hypervisor_name(signature: Any) -> Optional[str]:
    """The usual name of a CPUID hypervisor signature ("KVMKVMKVM": "KVM"), the
    signature itself where it is not one of HYPERVISORS, None for none."""
    if not isinstance(signature, str) or not signature.strip():
        return None
    return HYPERVISORS.get(signature.strip(), signature.strip())


def on_cpu(
    neighbours: Optional[dict[str, Any]], cpu: Optional[int], rank_cpus: list[int]
) -> Optional[dict[str, Any]]:
    """What ran on ``cpu`` beside the rank (see the module docstring), from its
    rank-N.json ``neighbours``; None where that was not recorded or ``cpu`` is not
    one of the CPUs it lists."""
    if not neighbours or cpu is None:
        return None
    row = next((c for c in neighbours.get(K.CPUS, []) if c.get(KCpu.CPU) == cpu), None)
    if row is None:
        return None
    busy = sum(
        float(row.get(k, 0.0)) for k in (KCpu.USER_NS, KCpu.NICE_NS, KCpu.SYSTEM_NS)
    )
    alone = list(rank_cpus) == [cpu]
    others = max(busy - float(neighbours.get(K.SELF_NS, 0.0)), 0.0) if alone else None
    tasks = [t for t in neighbours.get(K.TASKS, []) if t.get(KTask.CPU) == cpu]
    return {
        "cpu": cpu,
        "span_ns": float(neighbours.get(K.SPAN_NS, 0.0)),
        "tick_ns": float(neighbours.get(K.TICK_NS, 0.0)),
        "others_ns": others,
        "interrupts_ns": float(row.get(KCpu.IRQ_NS, 0.0))
        + float(row.get(KCpu.SOFTIRQ_NS, 0.0)),
        "steal_ns": float(row.get(KCpu.STEAL_NS, 0.0)),
        "tasks": [
            {
                "comm": t.get(KTask.COMM, "?"),
                "pid": t.get(KTask.PID),
                "ns": float(t.get(KTask.NS, 0.0)),
            }
            for t in tasks[:TASKS_SHOWN]
        ],
    }


def attach(anomalies: list[Anomaly], metas: dict[int, Any]) -> None:
    """Give each noisy_core and slow_core in ``anomalies`` (a rank and its CPU) the
    evidence ``on_its_cpu`` from its rank's metadata (``metas``: rank -> RankMeta:
    its neighbours record and its clock_caps' hypervisor); others, and ranks without
    the record, are left as they are."""
    for a in anomalies:
        if subject(a.kind) not in SUBJECTS or a.rank not in metas:
            continue
        m = metas[a.rank]
        found = on_cpu(m.neighbours, a.cpu, m.cpus)
        if found is not None:
            found["hypervisor"] = hypervisor_name(m.caps.get(KCaps.HYPERVISOR))
            a.evidence = {**(a.evidence or {}), "on_its_cpu": found}
