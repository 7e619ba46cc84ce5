"""t_min / t_diff by the paper's statistics over the start-up calibration's raw samples.

The C runtime's start-up search (src/calib) steers with a cheap outlier trim and keeps
every distribution it measured in perfvar/calibration-rank-N.json (overhead already
removed). Here they are judged as the paper defines it, with filter_os:
- t_min: the shortest chain length whose stored distributions are at least p and all
  have CV < epsilon after filter_os;
- t_diff: the smallest step d whose q stored pairs (base + (i-1) d, base + i d), base
  at or above that t_min, all overlap < alpha after filter_os (ties count: the clock
  is quantised).
Distributions are filtered lazily, shortest chain first, so only what decides the
answer is computed. The same holds for the cycle counter's pass (unit "cycles":
samples_cycles in, t_min_cycles / t_diff_cycles out). Pure over the document; not
thread-safe.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Optional

import numpy as np

from perfvar.filters import filter_os
from perfvar.stats import overlap, separated

TREES = 25  # forest size: enough for a few hundred samples, fast enough per rank
SOURCE = "paper statistics over the start-up samples (filter_os)"


def _filtered(samples: list[float]) -> np.ndarray:
    x = np.asarray(samples, dtype=np.float64)
    return x[filter_os(x, TREES)[0]]


def recheck(doc: dict[str, Any], unit: str = "ns") -> dict[str, Optional[float]]:
    """{t_min_adds, t_min_<unit>, t_min_cv, t_diff_adds, t_diff_<unit>,
    t_diff_overlap}; None where the stored samples do not confirm a value."""
    samples = f"samples_{unit}"
    eps, alpha = float(doc["epsilon"]), float(doc["alpha"])
    p, q = int(doc["p"]), int(doc["q"])
    tmin: dict[int, list] = defaultdict(list)
    pairs: dict[tuple[int, int], dict[int, dict[str, list]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for d in doc.get("distributions", []):
        if d["kind"] == "tmin":
            tmin[int(d["adds"])].append(d[samples])
        else:
            pairs[(int(d["base"]), int(d["d"]))][int(d["pair"])][d["kind"]] = d[samples]
    out: dict[str, Optional[float]] = dict.fromkeys(
        (
            "t_min_adds",
            f"t_min_{unit}",
            "t_min_cv",
            "t_diff_adds",
            f"t_diff_{unit}",
            "t_diff_overlap",
        )
    )
    for k in sorted(tmin):
        if len(tmin[k]) < p:
            continue
        xs = [_filtered(s) for s in tmin[k]]
        cvs = [float(np.std(x, ddof=1) / np.mean(x)) for x in xs]
        if max(cvs) < eps:
            out.update(t_min_adds=k, t_min_cv=max(cvs))
            out[f"t_min_{unit}"] = float(np.median(xs[0]))
            break
    if out["t_min_adds"] is None:
        return out
    for base, step in sorted(pairs, key=lambda bd: (bd[1], bd[0])):
        if base < out["t_min_adds"]:
            continue
        got = pairs[(base, step)]
        if sorted(got) != list(range(1, q + 1)) or any(
            len(v) != 2 for v in got.values()
        ):
            continue
        worst, gap = 0.0, None
        for i in range(1, q + 1):
            a0, a1 = _filtered(got[i]["pair_short"]), _filtered(got[i]["pair_long"])
            ov = overlap(a0, a1, ties=True)
            worst = max(worst, ov)
            gap = gap if gap is not None else float(np.median(a1) - np.median(a0))
            if not separated(ov, alpha):
                break
        else:
            out.update(t_diff_adds=step, t_diff_overlap=worst)
            out[f"t_diff_{unit}"] = gap
            break
    return out
