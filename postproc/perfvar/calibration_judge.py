"""The calibration judge: the one place that decides t_min and t_diff (paper §5.4).

Two searches sample and propose: the C start-up calibration (src/calib, which keeps
every distribution it measured in perfvar/calibration-rank-N.json, overhead removed)
and ``perfvar calibrate`` (perfvar.calibrate, which steers Algorithms 1 and 2 with
:func:`precise` and :func:`separation` below and records its distributions in the same
form). Neither decides. The judge decides from the recorded distributions alone, so
the same samples give the same t_min / t_diff wherever they were measured:

- a distribution is *precise* when the samples filter_os keeps have CV < epsilon
  (stats.cv, the paper's eq. 5);
- a pair is *separated* when the longer chain's kept samples overlap the shorter's
  by < alpha (stats.overlap with ties: the clock is quantised; stats.separated);
- t_min: the shortest chain length with at least p recorded distributions, all
  precise; its value (ns or cycles) is the median of the first one's kept samples;
- t_diff: the smallest step d, then the smallest base >= that t_min, whose q recorded
  pairs (base + (i-1) d, base + i d), i = 1..q, all separate; its value is the median
  gap of pair 1.

A distribution is ``{"kind": "tmin" | "pair_short" | "pair_long", "adds", "base",
"d", "pair", "samples_<unit>"}`` with unit "ns" or "cycles". The parameters (epsilon,
alpha, p, q and the forest size ``trees``) come with the distributions
(:class:`JudgeParams.of`); a document that does not name its forest size is judged
with TREES. Distributions are filtered lazily, shortest chain first, so only what
decides the answer is computed. Pure functions; thread-safe.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from perfvar.filters import filter_os
from perfvar.stats import cv, overlap, separated

TREES = (
    25  # forest size for documents that do not say: enough for a few hundred samples
)
SOURCE = "paper statistics over the start-up samples (filter_os)"


@dataclass(frozen=True)
class JudgeParams:
    """The paper's thresholds and how many confirmations each decision needs."""

    epsilon: float  # CV threshold of a precise distribution (Algorithm 1)
    alpha: float  # overlap threshold of a separated pair (Algorithm 2)
    p: int  # precise distributions at one chain length that confirm t_min
    q: int  # separated pairs at one (base, step) that confirm t_diff
    trees: int = TREES  # IsolationForest size in filter_os

    @classmethod
    def of(cls, doc: dict[str, Any]) -> JudgeParams:
        """The parameters a calibration document was measured with."""
        return cls(
            epsilon=float(doc["epsilon"]),
            alpha=float(doc["alpha"]),
            p=int(doc["p"]),
            q=int(doc["q"]),
            trees=int(doc.get("trees") or TREES),
        )


def kept(samples: Any, trees: int) -> np.ndarray:
    """The samples filter_os keeps (the OS-noise filter of every judgement)."""
    x = np.asarray(samples, dtype=np.float64)
    return x[filter_os(x, trees)[0]]


def precise(kept_samples: np.ndarray, epsilon: float) -> tuple[bool, float]:
    """(CV < epsilon, CV) of a distribution's kept samples; a set too small to have a
    CV is not precise."""
    if len(kept_samples) < 2:
        return False, float("inf")
    c = cv(kept_samples)
    return c < epsilon, c


def separation(short: np.ndarray, long: np.ndarray, alpha: float) -> tuple[bool, float]:
    """(separated, overlap) of one pair's kept samples."""
    ov = overlap(short, long, ties=True)
    return separated(ov, alpha), ov


@dataclass
class Decision:
    """What the judge decided for one cache state (None where not confirmed)."""

    unit: str  # "ns" or "cycles"
    t_min_adds: Optional[int] = None
    t_min: Optional[float] = None  # in ``unit``
    t_min_cv: Optional[float] = None
    t_diff_adds: Optional[int] = None
    t_diff: Optional[float] = None  # in ``unit``
    t_diff_overlap: Optional[float] = None

    @property
    def confirmed(self) -> bool:
        return self.t_min is not None and self.t_diff is not None

    @property
    def missing(self) -> Optional[str]:
        """The first value not confirmed ("t_min" or "t_diff"), None when both are."""
        if self.t_min is None:
            return "t_min"
        return None if self.t_diff is not None else "t_diff"

    def to_json(self) -> dict[str, Any]:
        u = self.unit
        return {
            "t_min_adds": self.t_min_adds,
            f"t_min_{u}": self.t_min,
            "t_min_cv": self.t_min_cv,
            "t_diff_adds": self.t_diff_adds,
            f"t_diff_{u}": self.t_diff,
            "t_diff_overlap": self.t_diff_overlap,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any], unit: str) -> Decision:
        return cls(
            unit,
            raw.get("t_min_adds"),
            raw.get(f"t_min_{unit}"),
            raw.get("t_min_cv"),
            raw.get("t_diff_adds"),
            raw.get(f"t_diff_{unit}"),
            raw.get("t_diff_overlap"),
        )


def decide(
    distributions: Sequence[dict[str, Any]],
    params: JudgeParams,
    unit: str = "ns",
    kept_of: Optional[dict[int, np.ndarray]] = None,
) -> Decision:
    """t_min and t_diff of one cache state from its recorded distributions.

    ``kept_of``: kept samples already computed, by index into ``distributions`` (the
    searches filter as they steer; the judge reuses that work and fills the rest)."""
    memo = kept_of if kept_of is not None else {}
    key = f"samples_{unit}"

    def kept_at(i: int) -> np.ndarray:
        if i not in memo:
            memo[i] = kept(distributions[i][key], params.trees)
        return memo[i]

    tmin: dict[int, list[int]] = defaultdict(list)
    pairs: dict[tuple[int, int], dict[int, dict[str, int]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for i, d in enumerate(distributions):
        if d["kind"] == "tmin":
            tmin[int(d["adds"])].append(i)
        else:
            pairs[(int(d["base"]), int(d["d"]))][int(d["pair"])][d["kind"]] = i
    out = Decision(unit)
    for adds in sorted(tmin):
        if len(tmin[adds]) < params.p:
            continue
        cvs = []
        for i in tmin[adds]:
            ok, c = precise(kept_at(i), params.epsilon)
            if not ok:
                break
            cvs.append(c)
        else:
            out.t_min_adds, out.t_min_cv = adds, max(cvs)
            out.t_min = float(np.median(kept_at(tmin[adds][0])))
            break
    if out.t_min_adds is None:
        return out
    wanted = list(range(1, params.q + 1))
    for base, step in sorted(pairs, key=lambda bd: (bd[1], bd[0])):
        got = pairs[(base, step)]
        if base < out.t_min_adds or sorted(got) != wanted:
            continue
        if any(len(got[i]) != 2 for i in wanted):
            continue
        worst, gap = 0.0, None
        for i in wanted:
            short, long = kept_at(got[i]["pair_short"]), kept_at(got[i]["pair_long"])
            ok, ov = separation(short, long, params.alpha)
            worst = max(worst, ov)
            if gap is None:
                gap = float(np.median(long) - np.median(short))
            if not ok:
                break
        else:
            out.t_diff_adds, out.t_diff_overlap, out.t_diff = step, worst, gap
            break
    return out


def judge_document(doc: dict[str, Any]) -> dict[str, Any]:
    """Every decision one calibration document allows: ``{"states": {label:
    Decision.to_json()}, "cycles": Decision.to_json() or None}``. Flush 0 is the
    top-level distributions, the flushed states are ``doc["states"]`` by label, the
    cycle counter's pass is ``doc["cycles"]``. A state without distributions is left
    out. Raises KeyError/TypeError/ValueError on a malformed document."""
    params = JudgeParams.of(doc)
    states: dict[str, Any] = {}
    if doc.get("distributions"):
        states["0"] = decide(doc["distributions"], params).to_json()
    for raw in doc.get("states") or []:
        if isinstance(raw, dict) and raw.get("distributions"):
            states[str(raw["label"])] = decide(raw["distributions"], params).to_json()
    cycles = doc.get("cycles")
    judged_cycles = None
    if isinstance(cycles, dict) and cycles.get("distributions"):
        judged_cycles = decide(cycles["distributions"], params, "cycles").to_json()
    return {"states": states, "cycles": judged_cycles}
