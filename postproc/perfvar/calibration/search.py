"""Timer calibration as the paper defines it (§5.4, Algorithms 1 and 2).

For a timer and a cache state, with ``measure(adds)`` giving N samples (ns) of a chain
of ``adds`` dependent ADDs:

- t_e,std (filter_cost): the minimal cost of an empty timed interval (adds = 0);
  fluctuation = p99.9 - p0.1 of those samples.
- t_min (Algorithm 1): the chain length is raised in steps of ``step`` ADDs (10000,
  then /10 down to 1) until a distribution is precise and that is confirmed ``p``
  more times; each refinement restarts from the last failing length.
- t_diff (Algorithm 2): the extra length d (steps 100, then /10 down to 1) is raised
  until all ``q`` pairs (t_min + (i-1) d, t_min + i d) are separated.
"Precise" and "separated" are perfvar.calibration.judge's tests, and the search only
steers: every distribution it draws (filter_cost applied: t_e,std subtracted) is
recorded in the form the C start-up calibration stores (``StateResult.recorded``),
and the reported t_min / t_diff are the judge's decision over them, the same one
``perfvar analyze`` makes over the start-up samples. A search that runs out of its
time budget stops and is marked "partial"; one stopped by Ctrl-C (KeyboardInterrupt)
raises Interrupted with its result marked "interrupted". Neither is ever presented
as final. Distributions drawn through ``sample(adds, n)`` are taken in chunks of
about CHUNK_S seconds, and the deadline is checked between chunks, so a state with a
large cache flush per sample cannot overrun its budget by a whole distribution.
Pure over ``measure``/``sample``; not thread-safe.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from perfvar.calibration import judge
from perfvar.stats.filters import N_ESTIMATORS, filter_cost

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
    trees: int = N_ESTIMATORS  # isolation-forest size in filter_os
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
    # Every distribution drawn, as calibration_judge reads them (samples_ns after
    # filter_cost); not in to_json (perfvar calibrate --samples writes them).
    recorded: list[dict] = field(default_factory=list, repr=False)

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


class _Search:
    """One (timer, state) search: filtered distributions within a deadline."""

    def __init__(
        self,
        measure: Optional[Measure],
        overhead_ns: float,
        params: CalibParams,
        sample: Optional[Sample] = None,
        resolution: float = 0.0,
    ):
        self.measure, self.overhead, self.params = measure, overhead_ns, params
        self.sample, self.resolution = sample, resolution
        self.deadline = time.monotonic() + params.budget_s
        self.count = 0
        self.recorded: list[dict] = []
        self.kept_of: dict[int, np.ndarray] = {}  # index into recorded -> kept

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

    def dist(
        self, adds: int, kind: str = "tmin", base: int = 0, d: int = 0, pair: int = 0
    ) -> np.ndarray:
        """One distribution's kept samples (ns), recorded for the judge."""
        if time.monotonic() > self.deadline:
            raise _OverBudget()
        self.count += 1
        x = filter_cost(self._draw(adds), self.overhead)
        kept = judge.kept(x, self.params.trees)
        self.kept_of[len(self.recorded)] = kept
        self.recorded.append(
            {
                "kind": kind,
                "adds": adds,
                "base": base,
                "d": d,
                "pair": pair,
                "samples_ns": x.tolist(),
            }
        )
        return kept

    def precise(self, adds: int) -> tuple[bool, float]:
        return judge.precise(self.dist(adds), self.params.epsilon, self.resolution)

    def judge_params(self) -> judge.JudgeParams:
        P = self.params
        return judge.JudgeParams(P.epsilon, P.alpha, P.p, P.q, P.trees, self.resolution)


def t_min_search(s: _Search, r: StateResult) -> None:
    """Algorithm 1; fills r.t_min_* (raises _OverBudget when the time is up)."""
    P = s.params
    start, t, step = 0, 0, P.tmin_step
    while step >= P.min_step:
        while True:
            t += step
            if t > P.max_adds:
                r.notes.append(f"no chain up to {P.max_adds} ADDs had CV < {P.epsilon}")
                return
            if not s.precise(t)[0]:
                start = t
                continue
            if all(s.precise(t)[0] for _ in range(P.p)):
                r.t_min_adds = t
                break
            start = t
        t, step = start, step // 10


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
            ok = True
            for i in range(1, P.q + 1):
                a0 = s.dist(base + (i - 1) * d, "pair_short", base, d, i)
                a1 = s.dist(base + i * d, "pair_long", base, d, i)
                if not judge.separation(a0, a1, P.alpha)[0]:
                    ok = False
                    break
            if ok:
                r.t_diff_adds = d
                break
            start = d
        d, step = start, step // 10


def _decide(s: _Search, r: StateResult) -> None:
    """The judge's t_min / t_diff over everything the search drew (see the module
    docstring); the search's own proposal only steered."""
    d = judge.decide(s.recorded, s.judge_params(), kept_of=s.kept_of)
    r.t_min_adds, r.t_min_ns, r.t_min_cv = d.t_min_adds, d.t_min, d.t_min_cv
    r.t_diff_adds, r.t_diff_ns, r.t_diff_overlap = (
        d.t_diff_adds,
        d.t_diff,
        d.t_diff_overlap,
    )
    r.distributions, r.recorded = s.count, s.recorded


def calibrate_state(
    measure: Optional[Measure],
    overhead_ns: float,
    flush_bytes: int,
    flush_label: str,
    params: CalibParams,
    sample: Optional[Sample] = None,
    resolution: float = 0.0,
) -> StateResult:
    """t_min and t_diff of one timer in one cache state, within params.budget_s.

    Distributions come from ``measure(adds)`` or, when given, ``sample(adds, n)``
    (chunked, see the module docstring); ``resolution`` is the step the timer reads
    in (judge.precise; 0: unknown). Raises Interrupted on KeyboardInterrupt."""
    r = StateResult(flush_bytes, flush_label, budget_s=params.budget_s)
    s = _Search(measure, overhead_ns, params, sample, resolution)
    began = time.monotonic()
    finished = False
    try:
        t_min_search(s, r)
        if r.t_min_adds is not None:
            t_diff_search(s, r)
        finished = r.t_min_adds is not None and r.t_diff_adds is not None
    except _OverBudget as exc:
        r.notes.append(str(exc) or f"time budget of {params.budget_s:.2g} s spent")
    except KeyboardInterrupt as exc:
        r.status = "interrupted"
        r.notes.append("interrupted (Ctrl-C) while measured: not final")
        _decide(s, r)
        r.elapsed_s = time.monotonic() - began
        raise Interrupted(r) from exc
    _decide(s, r)
    if finished and r.t_min_ns is not None and r.t_diff_ns is not None:
        r.status = "complete"
    elif finished:
        r.notes.append("the judge does not confirm the search's proposal")
    r.elapsed_s = time.monotonic() - began
    return r


def timer_overhead(samples_ns: np.ndarray) -> tuple[float, float]:
    """(t_e,std, fluctuation) of empty intervals: minimum, and p99.9 - p0.1 (ns)."""
    x = np.asarray(samples_ns, dtype=np.float64)
    return float(np.min(x)), float(np.percentile(x, 99.9) - np.percentile(x, 0.1))
