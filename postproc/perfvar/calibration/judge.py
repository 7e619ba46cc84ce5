"""The calibration judge: the one place that decides t_min and t_diff (paper §5.4).

Two searches sample and propose: the C start-up calibration (src/calib, which keeps
every distribution it measured in perfvar/calibration-rank-N.json, overhead removed)
and ``perfvar calibrate`` (perfvar.calibration.search, which steers Algorithms 1 and 2
with :func:`precise` and :func:`separation` below and records its distributions in the
same form). Neither decides. The judge decides from the recorded distributions alone, so
the same samples give the same t_min / t_diff wherever they were measured:

- a distribution is *precise* when the samples filter_os keeps have CV < epsilon
  (stats.cv, the paper's eq. 5) and a median of at least resolution / epsilon: one
  step of the clock (``clock_granularity_ns``, the step it reads in) within epsilon
  of the chain, since a chain read as one repeated value has CV 0 on a stepped clock
  whatever its length (0, a document that does not give it: CV alone);
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
with TREES. Distributions are filtered lazily, shortest chain first (a chain
length's p distributions, or a pair set's 2 q, at a time), so only what decides
the answer is computed; :func:`decide_many` and :func:`judge_documents` decide many
states and ranks in step, each step's forests grown in one batch. Pure functions;
thread-safe.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Optional

import numpy as np

from perfvar._spec import CalibrationJson as K
from perfvar._spec import CalibrationJsonCycles as KCycles
from perfvar._spec import CalibrationJsonState as KState
from perfvar.stats.filters import filter_os, filter_os_many
from perfvar.stats.summary import cv, overlap, separated

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
    trees: int = TREES  # isolation-forest size in filter_os
    resolution: float = 0.0  # the clock's step, in the samples' unit (0: unknown)

    @classmethod
    def of(cls, doc: dict[str, Any]) -> JudgeParams:
        """The parameters a calibration document was measured with (its cycle pass
        reads in its own step: _cases_of)."""
        return cls(
            epsilon=float(doc[K.EPSILON]),
            alpha=float(doc[K.ALPHA]),
            p=int(doc[K.P]),
            q=int(doc[K.Q]),
            trees=int(doc.get("trees") or TREES),  # `perfvar calibrate`'s file only
            resolution=float(doc.get(K.CLOCK_GRANULARITY_NS) or 0.0),
        )


def kept(samples: Any, trees: int) -> np.ndarray:
    """The samples filter_os keeps (the OS-noise filter of every judgement)."""
    x = np.asarray(samples, dtype=np.float64)
    return x[filter_os(x, trees)[0]]


def precise(
    kept_samples: np.ndarray, epsilon: float, resolution: float = 0.0
) -> tuple[bool, float]:
    """(precise, CV) of a distribution's kept samples: CV < epsilon, and one clock
    step (``resolution``, same unit) within epsilon of the median; a set too small to
    have a CV is not precise."""
    if len(kept_samples) < 2:
        return False, float("inf")
    c = cv(kept_samples)
    return c < epsilon and float(np.median(kept_samples)) * epsilon >= resolution, c


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


Case = tuple[Sequence[dict[str, Any]], JudgeParams, str]  # distributions, params, unit
Steps = Generator[list[tuple[int, np.ndarray]], None, Decision]


def decide(
    distributions: Sequence[dict[str, Any]],
    params: JudgeParams,
    unit: str = "ns",
    kept_of: Optional[dict[int, np.ndarray]] = None,
) -> Decision:
    """t_min and t_diff of one cache state from its recorded distributions.

    ``kept_of``: kept samples already computed, by index into ``distributions`` (the
    searches filter as they steer; the judge reuses that work and fills the rest)."""
    return decide_many([(distributions, params, unit)], [kept_of])[0]


def decide_many(
    cases: Sequence[Case],
    kept_of: Optional[Sequence[Optional[dict[int, np.ndarray]]]] = None,
) -> list[Any]:
    """:func:`decide` of every case, the cases stepping together: each step filters
    what all of them need next in one batch of forests (perfvar.stats.isolation), so
    that many ranks and states cost little more than their samples. A case whose
    distributions are malformed gets the exception (KeyError, TypeError,
    ValueError, AttributeError) in place of its Decision; the others are decided
    as usual. ``kept_of``: each case's memo of kept samples (see decide), filled."""
    given = kept_of if kept_of is not None else [None] * len(cases)
    memos = [m if m is not None else {} for m in given]
    out: list[Any] = [None] * len(cases)
    steppers: dict[int, Steps] = {}
    asks: dict[int, list[tuple[int, np.ndarray]]] = {}

    def advance(k: int) -> None:
        try:
            asks[k] = next(steppers[k])
        except StopIteration as done:
            out[k] = done.value
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            out[k] = exc

    for k, (distributions, params, unit) in enumerate(cases):
        steppers[k] = _steps(distributions, params, unit, memos[k])
        advance(k)
    while asks:
        pending, asks = asks, {}
        by_trees: dict[int, list[tuple[int, int, np.ndarray]]] = defaultdict(list)
        for k, wanted in pending.items():
            for i, x in wanted:
                by_trees[cases[k][1].trees].append((k, i, x))
        for trees, items in by_trees.items():
            masks = filter_os_many([x for _, _, x in items], trees)
            for (k, i, x), (mask, _) in zip(items, masks):
                memos[k][i] = x[mask]
        for k in pending:
            advance(k)
    return out


Ask = Callable[[list[int]], list[tuple[int, np.ndarray]]]
Pairs = dict[tuple[int, int], dict[int, dict[str, int]]]  # (base, d) -> pair -> kind


def _steps(
    distributions: Sequence[dict[str, Any]],
    params: JudgeParams,
    unit: str,
    memo: dict[int, np.ndarray],
) -> Steps:
    """decide() as steps: yields the (index, samples) to filter next, which the
    caller puts into ``memo`` as kept samples, and returns the Decision."""
    key = f"samples_{unit}"

    def ask(indices: list[int]) -> list[tuple[int, np.ndarray]]:
        return [
            (i, np.asarray(distributions[i][key], dtype=np.float64).ravel())
            for i in indices
            if i not in memo
        ]

    tmin: dict[int, list[int]] = defaultdict(list)
    pairs: Pairs = defaultdict(lambda: defaultdict(dict))
    for i, d in enumerate(distributions):
        if d["kind"] == "tmin":
            tmin[int(d["adds"])].append(i)
        else:
            pairs[(int(d["base"]), int(d["d"]))][int(d["pair"])][d["kind"]] = i
    out = Decision(unit)
    yield from _t_min_steps(tmin, params, memo, ask, out)
    if out.t_min_adds is not None:
        yield from _t_diff_steps(pairs, params, memo, ask, out)
    return out


def _t_min_steps(
    tmin: dict[int, list[int]],
    params: JudgeParams,
    memo: dict[int, np.ndarray],
    ask: Ask,
    out: Decision,
) -> Generator[list[tuple[int, np.ndarray]], None, None]:
    """t_min into ``out``: the shortest length with p recorded distributions, all
    precise (steps as _steps)."""
    for adds in sorted(tmin):
        if len(tmin[adds]) < params.p:
            continue
        wanted = ask(tmin[adds])
        if wanted:
            yield wanted
        cvs = []
        for i in tmin[adds]:
            ok, c = precise(memo[i], params.epsilon, params.resolution)
            if not ok:
                break
            cvs.append(c)
        else:
            out.t_min_adds, out.t_min_cv = adds, max(cvs)
            out.t_min = float(np.median(memo[tmin[adds][0]]))
            return


def _t_diff_steps(
    pairs: Pairs,
    params: JudgeParams,
    memo: dict[int, np.ndarray],
    ask: Ask,
    out: Decision,
) -> Generator[list[tuple[int, np.ndarray]], None, None]:
    """t_diff into ``out``: the smallest step, then base >= out.t_min_adds, whose q
    recorded pairs all separate (steps as _steps)."""
    assert out.t_min_adds is not None
    numbers = list(range(1, params.q + 1))
    for base, step in sorted(pairs, key=lambda bd: (bd[1], bd[0])):
        got = pairs[(base, step)]
        if base < out.t_min_adds or sorted(got) != numbers:
            continue
        if any(len(got[i]) != 2 for i in numbers):
            continue
        wanted = ask(
            [got[i][kind] for i in numbers for kind in ("pair_short", "pair_long")]
        )
        if wanted:
            yield wanted
        worst, gap = 0.0, None
        for i in numbers:
            short, long = memo[got[i]["pair_short"]], memo[got[i]["pair_long"]]
            ok, ov = separation(short, long, params.alpha)
            worst = max(worst, ov)
            if gap is None:
                gap = float(np.median(long) - np.median(short))
            if not ok:
                break
        else:
            out.t_diff_adds, out.t_diff_overlap, out.t_diff = step, worst, gap
            return


def judge_document(doc: dict[str, Any]) -> dict[str, Any]:
    """Every decision one calibration document allows: ``{"states": {label:
    Decision.to_json()}, "cycles": Decision.to_json() or None}``. Flush 0 is the
    top-level distributions, the flushed states are ``doc["states"]`` by label, the
    cycle counter's pass is ``doc["cycles"]``. A state without distributions is left
    out. Raises KeyError/TypeError/ValueError on a malformed document."""
    judged = judge_documents([doc])[0]
    if isinstance(judged, Exception):
        raise judged
    return judged


def _cases_of(doc: dict[str, Any]) -> list[tuple[Case, Optional[str]]]:
    """Each state a document holds as a case of :func:`decide_many`, with its label:
    "0" for flush 0, the flushed states' labels, None for the cycle counter's pass
    (judged with its own clock step). Raises on a malformed document."""
    params = JudgeParams.of(doc)
    mine: list[tuple[Case, Optional[str]]] = []
    if doc.get(K.DISTRIBUTIONS):
        mine.append(((doc[K.DISTRIBUTIONS], params, "ns"), "0"))
    for raw in doc.get(K.STATES) or []:
        if isinstance(raw, dict) and raw.get(KState.DISTRIBUTIONS):
            mine.append(
                ((raw[KState.DISTRIBUTIONS], params, "ns"), str(raw[KState.LABEL]))
            )
    cycles = doc.get(K.CYCLES)
    if isinstance(cycles, dict) and cycles.get(KCycles.DISTRIBUTIONS):
        step = float(cycles.get(KCycles.CLOCK_GRANULARITY_CYCLES) or 0.0)
        in_cycles = replace(params, resolution=step)
        mine.append(((cycles[KCycles.DISTRIBUTIONS], in_cycles, "cycles"), None))
    return mine


def judge_documents(docs: Sequence[Any]) -> list[Any]:
    """:func:`judge_document` of each document, all decided together
    (:func:`decide_many`); a malformed document gets its exception instead."""
    cases: list[Case] = []
    where: list[tuple[int, Optional[str]]] = []  # (document, state label or None)
    out: list[Any] = [None] * len(docs)
    for n, doc in enumerate(docs):
        try:
            mine = _cases_of(doc)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            out[n] = exc
            continue
        out[n] = {"states": {}, "cycles": None}
        for case, label in mine:
            cases.append(case)
            where.append((n, label))
    for (n, label), decided in zip(where, decide_many(cases)):
        if isinstance(out[n], Exception):
            continue
        if isinstance(decided, Exception):
            out[n] = decided
        elif label is None:
            out[n]["cycles"] = decided.to_json()
        else:
            out[n]["states"][label] = decided.to_json()
    return out
