"""Phrases the detectors' descriptions share: where a finding is, its statistics,
the calibration state it was judged with. Each takes an anomaly (or its evidence) as
analysis.json holds it. Pure functions; thread-safe.
"""

from __future__ import annotations

from typing import Any

from perfvar.units import fmt_bytes, fmt_pct


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
