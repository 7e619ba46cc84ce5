"""Formatting helpers for reports: durations with units, percentages, bytes, CPU and
rank ranges.

Pure functions, thread-safe.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Optional


def fmt_ns(value_ns: Optional[float], signed: bool = False) -> str:
    """A duration given in ns, printed with a unit chosen for it: ns, us, ms or s.

    ``fmt_ns(812400) == "812.4 us"``; None or NaN gives ``"n/a"``.
    """
    if value_ns is None or not math.isfinite(value_ns):
        return "n/a"
    sign = "+" if signed and value_ns >= 0 else ("-" if value_ns < 0 else "")
    v = abs(value_ns)
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
        if v >= scale:
            return f"{sign}{v / scale:.1f} {unit}"
    return f"{sign}{v:.1f} ns"


def compact_ranges(values: Iterable[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2,5"``; empty input gives ``"-"``."""
    vals = sorted(set(values))
    if not vals:
        return "-"
    parts: list[str] = []
    i = 0
    while i < len(vals):
        j = i
        while j + 1 < len(vals) and vals[j + 1] == vals[j] + 1:
            j += 1
        parts.append(str(vals[i]) if i == j else f"{vals[i]}-{vals[j]}")
        i = j + 1
    return ",".join(parts)


def fmt_pct(x: Optional[float], signed: bool = True) -> str:
    """A relative effect (0.012) as a percentage ("+1.2%"); small ones keep digits;
    None gives ``"n/a"``."""
    if x is None:
        return "n/a"
    v = 100 * x
    digits = 2 if abs(v) < 1 else 1
    return f"{v:+.{digits}f}%" if signed else f"{v:.{digits}f}%"


def fmt_plus_minus(half_width: Optional[float]) -> str:
    """An interval's half-width (0.021) as "+/-2.1%", "-" without one (ASCII, as the
    reports are, for any terminal's encoding)."""
    if half_width is None:
        return "-"
    return "+/-" + fmt_pct(half_width, signed=False)


def signed_pct(rel: Optional[float]) -> str:
    """ " +55%" (" +0.4%" below 1 %), "" without a size: a finding's size inside a
    sentence."""
    if rel is None:
        return ""
    return f" {rel:+.0%}" if abs(rel) >= 0.01 else f" {rel:+.1%}"


def fmt_ms(ns: float) -> str:
    """ns as "4.4 ms", or "35 us" below 0.1 ms: a waiting time inside a sentence."""
    return f"{ns / 1e6:.1f} ms" if ns >= 1e5 else f"{ns / 1e3:.0f} us"


def fmt_bytes(n: Optional[int]) -> str:
    """Bytes with a binary unit (B, KiB, MiB, GiB); "?" when unknown."""
    if n is None:
        return "?"
    v = float(n)
    for unit in ("B", "KiB", "MiB"):
        if v < 1024:
            return f"{v:.0f} {unit}" if unit == "B" else f"{v:.1f} {unit}"
        v /= 1024
    return f"{v:.1f} GiB"
