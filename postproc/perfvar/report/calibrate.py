"""The terminal table of `perfvar calibrate`: one row per timer and cache state."""

from __future__ import annotations

from typing import Any

from perfvar.units import fmt_ns


def _v(x: Any, unit: str = "ns") -> str:
    if not isinstance(x, (int, float)):
        return "-"
    return fmt_ns(x) if unit == "ns" else f"{x:.0f} cyc"


def _get(d: dict[str, Any], name: str, unit: str) -> Any:
    """d["<name>_ns"], or d["<name>_cycles"] for a cycles timer (see in_unit)."""
    return d.get(f"{name}_{unit}")


def _clock_lines(clock: Any) -> list[str]:
    """The clock perfvar reads (the barrier timer's), its frequency and any fallback."""
    if not isinstance(clock, dict):
        return ["clock: unknown (this libperfvar does not describe its clock)"]
    rate = f"{clock['hz'] / 1e9:.6g} GHz ({clock['hz_method']}"
    if clock.get("hz_rel_error"):
        rate += f", rel. error {clock['hz_rel_error']:.1e}"
    rate += ")"
    how = (
        "serialized (fenced reads): the barrier timer"
        if clock["serialized"]
        else "NOT serialized: the barrier timer is this unfenced fallback, not a "
        "fenced read"
    )
    out = [f"clock: {clock['name']}, {rate}, {how}"]
    if clock.get("note"):
        out.append(f"clock note: {clock['note']}")
    return out


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
    total = doc.get("total_budget_s")
    budget = (
        f"budget {total:g} s in all (each timer and state gets the time left / the "
        "states left)"
        if total
        else f"budget {p['budget_s']:.1f} s per timer and state"
    )
    out = [
        f"perfvar calibrate on CPU {doc['cpu']}: N={p['n']} samples per distribution, "
        f"p={p['p']}, q={p['q']}, epsilon={p['epsilon']:g}, alpha={p['alpha']:g}, "
        + budget,
        *(_clock_lines(doc["clock"]) if "clock" in doc else []),
        "flush sizes: "
        + ", ".join(f"{k} = {v / 2**20:g} MiB" for k, v in doc["flush_bytes"].items()),
        "",
        f"{'timer':<15} {'overhead':>9} {'fluct.':>9} {'flush':>6} {'t_min':>9} "
        f"{'t_diff':>9}  status",
    ]
    for t in doc["timers"]:
        unit = t.get("unit", "ns")
        if not t["available"]:
            what = " (CPU cycles)" if unit == "cycles" else ""
            out.append(f"{t['name']:<15} unavailable{what}: {t['why']}")
            continue
        if t.get("serialized") is False:
            out.append(f"{t['name']:<15} (= {t['clock']}, unfenced: see clock above)")
        for i, s in enumerate(t["states"]):
            overhead = _v(_get(t, "overhead", unit), unit)
            fluct = _v(_get(t, "fluctuation", unit), unit)
            head = f"{t['name']:<15} {overhead:>9} {fluct:>9}" if i == 0 else " " * 35
            note = f" ({'; '.join(s['notes'])})" if s["notes"] else ""
            out.append(
                f"{head} {s['flush_label']:>6} {_v(_get(s, 't_min', unit), unit):>9} "
                f"{_v(_get(s, 't_diff', unit), unit):>9}  {s['status']}{note}"
            )
    out.append("")
    out.append(
        "overhead: minimal cost of an empty interval (t_e,std); fluct.: its p99.9 - "
        "p0.1; t_min: shortest interval measured with CV < epsilon; t_diff: smallest "
        "difference resolved with overlap < alpha. 'partial' = not final. "
        "'cyc' = CPU cycles of the core (the cycles and papi_read timers), not time."
    )
    if doc.get("interrupted"):
        out.append(
            "INTERRUPTED: the run was stopped (Ctrl-C); 'interrupted' and 'not "
            "measured' rows are not results."
        )
    elif doc.get("complete") is False:
        out.append("Not every state completed: values marked 'partial' are not final.")
    return "\n".join(out) + "\n"
