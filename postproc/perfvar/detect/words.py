"""Phrases the detectors' descriptions share: where a finding is, its statistics,
the calibration state it was judged with, what its instruction counts say. Each
takes an anomaly (or its evidence) as analysis.json holds it. Pure functions;
thread-safe.
"""

from __future__ import annotations

from typing import Any, Optional

from perfvar.read.meta import RELATIVE_ONLY_FACTOR
from perfvar.stats.cells import RELATIVE_ONLY
from perfvar.stats.core_speed import BY_INSTRUCTIONS, SLOWER
from perfvar.stats.core_speed import MORE as MORE_WORK  # work.py has its own MORE
from perfvar.stats.work import BOTH, MORE, SAME_WORK, UNTOLD
from perfvar.units import fmt_bytes, fmt_ms, fmt_ns, fmt_pct


def where(a: dict[str, Any]) -> str:
    """ "rank 1 (host n01, cpu 3)", "?" for what is not known."""
    host = a["host"] if a["host"] is not None else "?"
    cpu = a["cpu"] if a["cpu"] is not None else "?"
    return f"rank {a['rank']} (host {host}, cpu {cpu})"


def state_of(ev: dict[str, Any]) -> str:
    """ ", flush-0 calibration" or ", 4xL2 calibration after 6.0 MiB moved" etc."""
    state = ev.get("cache_state")
    if state is None:
        return ""
    if state == RELATIVE_ONLY:
        return (
            ", the relative floor alone (no t_min/t_diff on its rank; its segments "
            f"are over {RELATIVE_ONLY_FACTOR}x its timer overhead)"
        )
    moved = ev.get("context_bytes")
    after = f" after {fmt_bytes(moved)} moved" if moved is not None else ""
    return f", {'flush-0' if state == '0' else state} calibration{after}"


def stats(ev: dict[str, Any], ci_key: str) -> str:
    """ "95% CI +0.8%..+1.3%, q 1e-12 < 0.05, steady in 19 of 20 blocks" from an
    anomaly's evidence (the blocks' part where the test was over blocks of the run)."""
    lo, hi = ev.get(ci_key) or (None, None)
    text = (
        f"95% CI {fmt_pct(lo)}..{fmt_pct(hi)}, q {ev['q_value']:.1g} < {ev['alpha']:g}"
    )
    if ev.get("blocks"):
        text += f", steady in {ev['blocks_above_floor']} of {ev['blocks']} blocks"
    return text


# Without an instruction counter: what would have told, in one short clause.
NO_INSTRUCTIONS = (
    " (more work or a slower core: no instruction counter to tell; the fixed-work "
    "probes, PERFVAR_PROBE, tell a slower core)"
)


def work_clause(work: Optional[dict[str, Any]], probes_said: str = "") -> str:
    """What the instruction counts say of a slow rank (its evidence ``work``, made by
    perfvar.stats.work.tell): "; 49.8% more instructions than its peers: more
    work", "; the same instructions as its peers (+0.2%): a slower core", or why it
    could not tell. ``probes_said``: the clause to give instead when the run had no
    instruction counter but fixed-work probes, which the detector used; "" for an
    evidence without ``work`` (an older analysis.json)."""
    if not work:
        return ""
    if work["verdict"] == UNTOLD:
        if work["reason"] != "no instruction counter":
            return " (more work or a slower core: too few counter reads to tell)"
        return probes_said if work.get("probes") and probes_said else NO_INSTRUCTIONS
    d = work["instructions_rel"]
    if work["verdict"] == MORE:
        return (
            f"; {fmt_pct(d, signed=False)} more instructions than its peers: more work"
        )
    if work["verdict"] == BOTH:
        return (
            f"; {fmt_pct(d, signed=False)} more instructions than its peers, less "
            "than its excess: more work and a slower core"
        )
    if abs(d) < SAME_WORK * work["excess_rel"]:
        return f"; the same instructions as its peers ({fmt_pct(d)}): a slower core"
    fewer = fmt_pct(-d, signed=False)
    return f"; {fewer} fewer instructions than its peers: a slower core"


def off_cpu_clause(ev: dict[str, Any]) -> str:
    """The part of a slow segment that its rank spent off the CPU inside the class
    beyond its peers (its evidence ``off_cpu``, set by perfvar.verdict.off_cpu):
    "; 0.2 ms a segment of it off the CPU beyond its peers' (0.3 ms against 0.1 ms),
    not charged to the segment"; "" without it."""
    off = ev.get("off_cpu")
    if not off:
        return ""
    return (
        f"; {fmt_ms(off['beyond_ns'])} a segment of it off the CPU beyond its peers' "
        f"({fmt_ms(off['rank_ns'])} against {fmt_ms(off['peers_ns'])}), not charged "
        "to the segment"
    )


def virtual_clause(ev: dict[str, Any]) -> str:
    """For a core on a virtual CPU (its evidence ``on_its_cpu`` names the hypervisor):
    "; its CPU is virtual (KVM): a host can run ..."; "" on a CPU not known to be
    virtual. How to tell a slower CPU from more work is work_clause's to say."""
    name = (ev.get("on_its_cpu") or {}).get("hypervisor")
    if not name:
        return ""
    return (
        f"; its CPU is virtual ({name}): a host can run one virtual CPU slower than "
        "another, for seconds or whole runs, without counting steal time"
    )


def neighbours_clause(ev: dict[str, Any]) -> str:
    """What else ran on a core's CPU over the run (its evidence ``on_its_cpu``, set by
    perfvar.verdict.neighbours): "; on cpu 1 over the run (2.8 s): other tasks 1.4 s,
    interrupts 10 ms, host steal 0 ns; most there: python3 (pid 2129) 1.4 s"; "" without
    it. The tasks are those last seen on that CPU."""
    n = ev.get("on_its_cpu")
    if not n:
        return ""
    others = ""
    if n.get("others_ns") is not None:  # the rank alone on it: the rest is others'
        others = f"other tasks {fmt_ns(n['others_ns'])}, "
    tasks = ", ".join(
        f"{t['comm']} (pid {t['pid']}) {fmt_ns(t['ns'])}" for t in n.get("tasks", [])
    )
    return (
        f"; on cpu {n['cpu']} over the run ({fmt_ns(n['span_ns'])}): {others}"
        f"interrupts {fmt_ns(n['interrupts_ns'])}, host steal {fmt_ns(n['steal_ns'])}"
        + (f"; most there: {tasks}" if tasks else "")
    )


def probes_clause(ev: dict[str, Any]) -> str:
    """What the probes measured of a finding (its ``core_speed``), in one clause:
    "its fixed-work probes ran at its peers' speed (+0.4 %, 95 % CI ...) in the same
    window"; "" without probes."""
    cs = ev.get("core_speed") or {}
    if cs.get("probes_shift_rel") is None:
        return ""
    lo, hi = cs["probes_ci_rel"]
    figure = (
        f"{fmt_pct(cs['probes_shift_rel'])}, 95% CI {fmt_pct(lo)}..{fmt_pct(hi)}, "
        f"{cs['probes_n']} probes vs {cs['peers_probes_n']}"
    )
    if cs["verdict"] == SLOWER:
        return f"its fixed-work probes ran {figure} over its peers' in the same window"
    if cs["verdict"] != MORE_WORK:
        return (
            f"its fixed-work probes ran {figure} against its peers' in the same window"
        )
    if cs["probes_shift_rel"] < 0:
        return (
            f"its fixed-work probes ran no slower than its peers' ({figure}) in the "
            "same window"
        )
    return (
        f"its fixed-work probes ran at its peers' speed ({figure}) in the same window"
    )


def core_clause(ev: dict[str, Any], instructions_said: str) -> str:
    """What told a slow rank's core from more work, for a finding that stayed the
    machine's: "; a slower core: its fixed-work probes ran +100.3% ..." where its
    probes (``core_speed``) decided, "; more work or a slower core, not told apart:
    ..." where they could not; ``instructions_said`` (work_clause's) where the
    instructions decided or the run had no probes."""
    cs = ev.get("core_speed") or {}
    if cs.get("decided_by") == BY_INSTRUCTIONS or cs.get("probes_shift_rel") is None:
        return instructions_said
    if cs["verdict"] == SLOWER:
        return f"; a slower core: {probes_clause(ev)}"
    return f"; more work or a slower core, not told apart: {probes_clause(ev)}"
