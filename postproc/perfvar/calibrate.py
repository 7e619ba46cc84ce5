"""Timer calibration as the paper defines it (§5.4, Algorithms 1 and 2).

For a timer and a cache state, with ``measure(adds)`` giving N samples (ns) of a chain
of ``adds`` dependent ADDs:

- t_e,std (filter_cost): the minimal cost of an empty timed interval (adds = 0);
  fluctuation = p99.9 - p0.1 of those samples.
- t_min (Algorithm 1): the chain length is raised in steps of ``step`` ADDs (10000,
  then /10 down to 1) until the filtered samples have CV < epsilon and that is
  confirmed ``p`` more times; each refinement restarts from the last failing length.
  The paper's pseudo-code ends on its last failing length; we report the smallest
  confirmed one (its intent: the shortest time measured to within epsilon).
- t_diff (Algorithm 2): the extra length d (steps 100, then /10 down to 1) is raised
  until for all ``q`` pairs (t_min + (i-1) d, t_min + i d) the longer chain's samples
  overlap the shorter's by < alpha (overlap = fraction not above the shorter's max:
  ties count, the clocks are quantised; an overlap equal to alpha is not accepted,
  stats.separated). t_diff_ns = the median difference of the first accepted pair.
Each distribution is filtered: filter_cost (subtract t_e,std), then filter_os
(IsolationForest, β search). A search that runs out of its time budget stops and is
marked "partial"; one stopped by Ctrl-C (KeyboardInterrupt) raises Interrupted with
its result marked "interrupted". Neither is ever presented as final. Distributions
drawn through ``sample(adds, n)`` are taken in chunks of about CHUNK_S seconds, and
the deadline is checked between chunks, so a state with a large cache flush per
sample cannot overrun its budget by a whole distribution. Pure over
``measure``/``sample``; not thread-safe.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from perfvar.filters import N_ESTIMATORS, filter_cost, filter_os
from perfvar.stats import overlap, separated

Measure = Callable[[int], np.ndarray]  # adds -> the N samples of one distribution
Sample = Callable[[int, int], np.ndarray]  # (adds, n) -> n samples
CHUNK_S = 0.25  # seconds of sampling between two deadline checks
FIRST_CHUNK = 8  # samples taken to time a distribution's sampling


@dataclass
class CalibParams:
    """The paper's parameters (defaults) and the search's limits."""

    epsilon: float = 0.01  # CV threshold (Algorithm 1)
    alpha: float = 0.05  # overlap threshold (Algorithm 2)
    n: int = 10000  # samples per distribution
    p: int = 30  # confirmations of t_min
    q: int = 80  # pairs that must separate for t_diff
    tmin_step: int = 10000  # Algorithm 1's first step, ADDs
    tdiff_step: int = 100  # Algorithm 2's first step, ADDs
    min_step: int = 1  # refine down to this step
    max_adds: int = 10_000_000  # give up beyond this chain length
    trees: int = N_ESTIMATORS  # IsolationForest size in filter_os
    budget_s: float = 600.0  # per (timer, cache state)

    @classmethod
    def quick(cls) -> CalibParams:
        """A bounded run: smaller distributions, fewer confirmations, coarser steps."""
        return cls(
            n=200, p=3, q=3, tmin_step=1000, tdiff_step=100, min_step=10, trees=25
        )


@dataclass
class StateResult:
    """t_min / t_diff of one timer in one cache state."""

    flush_bytes: int
    flush_label: str
    # "complete" only when both searches finished in budget; "partial" (budget spent or
    # no answer), "interrupted" (Ctrl-C during it), "not measured" (never started)
    status: str = "partial"
    t_min_adds: Optional[int] = None
    t_min_ns: Optional[float] = None
    t_min_cv: Optional[float] = None
    t_diff_adds: Optional[int] = None
    t_diff_ns: Optional[float] = None
    t_diff_overlap: Optional[float] = None
    distributions: int = 0
    elapsed_s: float = 0.0
    budget_s: Optional[float] = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "flush": self.flush_bytes,
            "flush_label": self.flush_label,
            "status": self.status,
            "t_min_ns": self.t_min_ns,
            "t_diff_ns": self.t_diff_ns,
            "t_min_adds": self.t_min_adds,
            "t_diff_adds": self.t_diff_adds,
            "t_min_cv": self.t_min_cv,
            "t_diff_overlap": self.t_diff_overlap,
            "distributions": self.distributions,
            "elapsed_s": self.elapsed_s,
            "budget_s": self.budget_s,
            "notes": self.notes,
        }


class _OverBudget(Exception):
    pass


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during calibrate_state; ``result`` holds what was measured, marked
    "interrupted"."""

    def __init__(self, result: StateResult) -> None:
        super().__init__()
        self.result = result


def warm_up(trees: int = N_ESTIMATORS) -> None:
    """Import scikit-learn and fit one small forest, so that the first distribution of
    a timed search does not pay for it (about 2 s on a small VM)."""
    filter_os(np.linspace(0.0, 1.0, 64) ** 2, trees)


class _Search:
    """One (timer, state) search: filtered distributions within a deadline."""

    def __init__(
        self,
        measure: Optional[Measure],
        overhead_ns: float,
        params: CalibParams,
        sample: Optional[Sample] = None,
    ):
        self.measure, self.overhead, self.params = measure, overhead_ns, params
        self.sample = sample
        self.deadline = time.monotonic() + params.budget_s
        self.count = 0

    def _draw(self, adds: int) -> np.ndarray:
        """params.n samples; through ``sample`` in chunks, checking the deadline."""
        if self.sample is None:
            assert self.measure is not None
            return self.measure(adds)
        n = self.params.n
        parts, got, size = [], 0, min(FIRST_CHUNK, n)
        while got < n:
            t0 = time.monotonic()
            parts.append(self.sample(adds, size))
            got += size
            now = time.monotonic()
            per = (now - t0) / size
            if got < n and now + per * (n - got) > self.deadline:
                raise _OverBudget(
                    f"stopped within its {self.params.budget_s:.2g} s budget: one "
                    f"distribution of {n} samples takes ~{per * n:.2g} s here, more "
                    "than the time left"
                )
            size = n - got if per <= 0 else min(n - got, max(1, int(CHUNK_S / per)))
        return np.concatenate(parts)

    def dist(self, adds: int) -> np.ndarray:
        if time.monotonic() > self.deadline:
            raise _OverBudget()
        self.count += 1
        x = filter_cost(self._draw(adds), self.overhead)
        mask, _ = filter_os(x, self.params.trees)
        return x[mask]

    def cv(self, adds: int) -> float:
        x = self.dist(adds)
        m = float(np.mean(x))
        return float(np.std(x, ddof=1) / m) if m > 0 and len(x) > 1 else float("inf")


def t_min_search(s: _Search, r: StateResult) -> None:
    """Algorithm 1; fills r.t_min_* (raises _OverBudget when the time is up)."""
    P = s.params
    start, t, step, best = 0, 0, P.tmin_step, None
    while step >= P.min_step:
        while True:
            t += step
            if t > P.max_adds:
                r.notes.append(f"no chain up to {P.max_adds} ADDs had CV < {P.epsilon}")
                return
            cv = s.cv(t)
            if cv >= P.epsilon:
                start = t
                continue
            confirmed = all(s.cv(t) < P.epsilon for _ in range(P.p))
            if confirmed:
                best = t
                r.t_min_adds, r.t_min_cv = t, cv
                break
            start = t
        t, step = start, step // 10
    if best is not None:
        r.t_min_ns = float(np.median(s.dist(best)))


def t_diff_search(s: _Search, r: StateResult) -> None:
    """Algorithm 2 from r.t_min_adds; fills r.t_diff_* (raises _OverBudget)."""
    P = s.params
    base = r.t_min_adds
    start, d, step = 0, 0, P.tdiff_step
    while step >= P.min_step:
        while True:
            d += step
            if d > max(base, P.tdiff_step) * 10:
                r.notes.append(f"no difference up to {d - step} ADDs separated")
                return
            worst, first_gap, ok = 0.0, None, True
            for i in range(1, P.q + 1):
                a0, a1 = s.dist(base + (i - 1) * d), s.dist(base + i * d)
                ov = overlap(a0, a1, ties=True)
                worst = max(worst, ov)
                if first_gap is None:
                    first_gap = float(np.median(a1) - np.median(a0))
                if not separated(ov, P.alpha):
                    ok = False
                    break
            if ok:
                r.t_diff_adds, r.t_diff_ns, r.t_diff_overlap = d, first_gap, worst
                break
            start = d
        d, step = start, step // 10


def calibrate_state(
    measure: Optional[Measure],
    overhead_ns: float,
    flush_bytes: int,
    flush_label: str,
    params: CalibParams,
    sample: Optional[Sample] = None,
) -> StateResult:
    """t_min and t_diff of one timer in one cache state, within params.budget_s.

    Distributions come from ``measure(adds)`` or, when given, ``sample(adds, n)``
    (chunked, see the module docstring). Raises Interrupted on KeyboardInterrupt."""
    r = StateResult(flush_bytes, flush_label, budget_s=params.budget_s)
    s = _Search(measure, overhead_ns, params, sample)
    began = time.monotonic()
    try:
        t_min_search(s, r)
        if r.t_min_adds is not None:
            t_diff_search(s, r)
        if r.t_min_adds is not None and r.t_diff_adds is not None:
            r.status = "complete"
    except _OverBudget as exc:
        r.notes.append(str(exc) or f"time budget of {params.budget_s:.2g} s spent")
    except KeyboardInterrupt as exc:
        r.status = "interrupted"
        r.notes.append("interrupted (Ctrl-C) while measured: not final")
        r.distributions, r.elapsed_s = s.count, time.monotonic() - began
        raise Interrupted(r) from exc
    r.distributions, r.elapsed_s = s.count, time.monotonic() - began
    return r


def timer_overhead(samples_ns: np.ndarray) -> tuple[float, float]:
    """(t_e,std, fluctuation) of empty intervals: minimum, and p99.9 - p0.1 (ns)."""
    x = np.asarray(samples_ns, dtype=np.float64)
    return float(np.min(x)), float(np.percentile(x, 99.9) - np.percentile(x, 0.1))
