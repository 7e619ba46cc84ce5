"""The terminal table of `perfvar calibrate`: one row per timer and cache state."""

from __future__ import annotations

from typing import Any

from perfvar.units import fmt_ns


def _v(x: Any) -> str:
    return fmt_ns(x) if isinstance(x, (int, float)) else "-"


def render(doc: dict[str, Any]) -> str:
    """The report as one string (ends with a newline); one table per rank under MPI."""
    if "ranks" in doc:
        parts = [
            f"perfvar calibrate on {doc['nranks']} MPI ranks, each on its own core\n"
        ]
        for r in doc["ranks"]:
            parts.append(f"=== rank {r['rank']} (host {r['host']})\n" + render(r))
        return "\n".join(parts)
    p = doc["params"]
    out = [
        f"perfvar calibrate on CPU {doc['cpu']}: N={p['n']} samples per distribution, "
        f"p={p['p']}, q={p['q']}, epsilon={p['epsilon']:g}, alpha={p['alpha']:g}, "
        f"budget {p['budget_s']:.1f} s per timer and state",
        "flush sizes: "
        + ", ".join(f"{k} = {v / 2**20:g} MiB" for k, v in doc["flush_bytes"].items()),
        "",
        f"{'timer':<15} {'overhead':>9} {'fluct.':>9} {'flush':>6} {'t_min':>9} "
        f"{'t_diff':>9}  status",
    ]
    for t in doc["timers"]:
        if not t["available"]:
            out.append(f"{t['name']:<15} unavailable: {t['why']}")
            continue
        for i, s in enumerate(t["states"]):
            overhead, fluct = _v(t["overhead_ns"]), _v(t["fluctuation_ns"])
            head = f"{t['name']:<15} {overhead:>9} {fluct:>9}" if i == 0 else " " * 35
            note = f" ({'; '.join(s['notes'])})" if s["notes"] else ""
            out.append(
                f"{head} {s['flush_label']:>6} {_v(s['t_min_ns']):>9} "
                f"{_v(s['t_diff_ns']):>9}  {s['status']}{note}"
            )
    out.append("")
    out.append(
        "overhead: minimal cost of an empty interval (t_e,std); fluct.: its p99.9 - "
        "p0.1; t_min: shortest interval measured with CV < epsilon; t_diff: smallest "
        "difference resolved with overlap < alpha. 'partial' = not final."
    )
    return "\n".join(out) + "\n"
