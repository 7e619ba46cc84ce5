"""A rank's core speed from its fixed-work probes, against its peers' in one window.

Every probe runs the same ADDs in independent chains on every rank
(perfvar.stats.probes; src/calib/add_lanes.h: paced by the core's clock and the issue
slots its thread gets),
so a rank whose probes take longer than its peers' in a stretch of the run had a
slower core there, whatever work the application gave it; a rank whose segments take
longer while its probes run at its peers' speed did more work. This module measures
the first and decides between the two for a finding of a given size:

* ``of_rank``: the interquartile mean of the log-durations of the rank's kept probes in
  a window minus that of its peers' probes in the same window (``shift_rel``,
  relative), with a 95 % bootstrap interval of that difference (seeded: the same
  trace gives the same figures). Not the median: a probe's duration takes a few
  discrete values (the core's clock steps, 750, 770 and 810 ns on one host), and with
  a dozen probes a side the median jumps between two of them on a shift of one probe;
  the interquartile mean moves by its share;
* ``decide``: against a finding's relative excess ``e`` (its shift beyond what its
  core already explained, ``explained_rel``), the interval of the probes' shift
  beyond ``explained_rel``, widened by ``SYSTEMATIC`` on each side, decides: all of
  it at or above ``CORE_SHARE`` of ``e``, a *slower core*; all of it below, *more
  work* (the probes ran at their usual speed against the peers'); across it, or with
  fewer than ``MIN_PROBES`` probes a side in the window, *could not tell*.

Why ``SYSTEMATIC``: the bootstrap interval covers the probes' sampling, not what
differs between two cores' probes with nothing different on the cores. Each probe
runs its kernel once untimed first (src/calib/work_probe.h). Measured with the single
dependent chain the probes ran before their lanes: timed cold, right after
the application's code had evicted the chain's, the two ranks' median probes differed
by 8.5 % (median) and up to 30 % in 30 clean runs whose segments and host witness
agreed within 3 %. Run warm, 30 clean runs of three programs (the stencil,
CloverLeaf, HPCCG; 2-vCPU Intel Xeon KVM guest, docs/measurements.md) differed by
0.61 % at the 90th percentile and 0.90 % at most (interquartile means; 1.49 % at most
in 30 runs with extra work on one rank); ``SYSTEMATIC``, added to each side of the
interval, is above both.

The same 0.5 is perfvar.stats.work's share for instructions: a finding whose probes
explain half of it or more is the core's. Pure functions; thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from perfvar.stats.compare import evenly, log_ns, rel
from perfvar.stats.model import Prepared

MIN_PROBES = 5  # kept probes each side in the window
CORE_SHARE = 0.5  # of a finding's excess, the probes' part that makes it the core's
SYSTEMATIC = 0.02  # relative; the rank-to-rank probe difference with nothing different
RESAMPLES = 999
# Probes a side the interval is resampled from, at most (spread over the window): with
# thousands of ranks the peers' probes are millions, and 5000 tell their typical value
# to a fraction of a percent; resampled 100 at a time, memory stays a few MB.
MAX_PROBES = 5000
BATCH = 100
SEED = 20261207
SLOWER = "slower core"
MORE = "more work"
UNTOLD = "could not tell"
# What decided (a finding's ``core_speed.decided_by``).
BY_INSTRUCTIONS = "instructions"
BY_PROBES = "fixed-work probes"


@dataclass(frozen=True)
class CoreSpeed:
    """A rank's probes against its peers' in ``[start_ns, end_ns)`` (ns since the
    trace's origin; None: the whole run)."""

    shift_rel: float  # rank's typical probe / peers' typical probe - 1
    ci_rel: tuple[float, float]  # 95 % bootstrap interval of shift_rel
    n: int  # the rank's kept probes in the window
    peers_n: int  # the peers' kept probes in the window
    rank_typical_ns: float  # exp of the interquartile mean of the log-durations, ns
    peers_typical_ns: float
    start_ns: Optional[float] = None
    end_ns: Optional[float] = None

    def to_json(self) -> dict[str, Any]:
        return {
            "probes_shift_rel": self.shift_rel,
            "probes_ci_rel": list(self.ci_rel),
            "probes_n": self.n,
            "peers_probes_n": self.peers_n,
            "probe_typical_ns": self.rank_typical_ns,
            "peers_probe_typical_ns": self.peers_typical_ns,
            "window_ns": (
                None if self.start_ns is None else [self.start_ns, self.end_ns]
            ),
        }


def _in_window(
    prep: Prepared, rank: int, start_ns: Optional[float], end_ns: Optional[float]
) -> np.ndarray:
    cell = prep.cells.get((prep.probe_segment, rank))
    if cell is None:
        return np.empty(0)
    keep = np.ones(cell.n, bool)
    if start_ns is not None:
        keep &= cell.start_ns >= start_ns
    if end_ns is not None:
        keep &= cell.start_ns < end_ns
    return log_ns(cell.samples_ns[keep])


TRIM = 0.25  # cut from each end: the interquartile mean


def _typical(a: np.ndarray, axis: int = -1) -> np.ndarray:
    """scipy.stats.trim_mean(a, TRIM, axis), computed as it does (the same partition,
    so the same figure), without importing scipy.stats on the path of every analysis
    (about half a second)."""
    a = np.asarray(a)
    n = a.shape[axis]
    low = int(TRIM * n)
    high = n - low
    if n == 0:
        return np.float64(np.nan)
    part = np.partition(a, (low, high - 1), axis)
    kept = [slice(None)] * part.ndim
    kept[axis] = slice(low, high)  # a view, as scipy's: a copy can sum in another order
    return np.mean(part[tuple(kept)], axis=axis)


def typical_log(samples_ns: np.ndarray) -> float:
    """A rank's typical probe: the interquartile mean of the log-durations (log ns)."""
    return float(_typical(log_ns(samples_ns)))


def _typical_difference(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return _typical(a, axis) - _typical(b, axis)


def _sides(
    prep: Prepared, rank: int, start_ns: Optional[float], end_ns: Optional[float]
) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """(the rank's probes, its peers' probes) that started in the window, log ns;
    None without probes there (a run without them, or fewer than MIN_PROBES kept a
    side)."""
    if prep.probe_segment is None:
        return None
    mine = _in_window(prep, rank, start_ns, end_ns)
    peers = [
        _in_window(prep, r, start_ns, end_ns)
        for (s, r) in prep.cells
        if s == prep.probe_segment and r != rank
    ]
    theirs = np.concatenate(peers) if peers else np.empty(0)
    if mine.size < MIN_PROBES or theirs.size < MIN_PROBES:
        return None
    return mine, theirs


def may_be_more(prep: Prepared, rank: int, excess_rel: float) -> bool:
    """Whether ``decide(of_rank(prep, rank), excess_rel)`` can be MORE, from the
    probes' point shift alone: of_rank's interval reaches up to that point at least,
    so a point at or above ``CORE_SHARE * excess_rel - SYSTEMATIC`` rules MORE out
    without the bootstrap (and scipy.stats' import, half a second). A clean run's
    ranks are ruled out so."""
    sides = _sides(prep, rank, None, None)
    if sides is None or excess_rel <= 0:
        return False
    point = rel(float(_typical_difference(*sides)))
    return point < CORE_SHARE * excess_rel - SYSTEMATIC


def may_be_less(prep: Prepared, rank: int, faster_rel: float) -> bool:
    """Whether ``not_faster(of_rank(prep, rank), faster_rel)`` can hold, from the
    probes' point shift alone (may_be_more's mirror): of_rank's interval reaches down
    to that point at least, so a point at or below ``CORE_SHARE * faster_rel +
    SYSTEMATIC`` rules it out without the bootstrap."""
    sides = _sides(prep, rank, None, None)
    if sides is None or faster_rel >= 0:
        return False
    point = rel(float(_typical_difference(*sides)))
    return point > CORE_SHARE * faster_rel + SYSTEMATIC


def of_rank(
    prep: Prepared,
    rank: int,
    start_ns: Optional[float] = None,
    end_ns: Optional[float] = None,
) -> Optional[CoreSpeed]:
    """The rank's core speed against its peers' from the probes that started in the
    window; None without probes there (a run without them, or fewer than MIN_PROBES
    kept a side)."""
    sides = _sides(prep, rank, start_ns, end_ns)
    if sides is None:
        return None
    mine, theirs = sides
    d = float(_typical_difference(mine, theirs))
    from scipy.stats import bootstrap  # only for a rank judged: its import is slow

    ci = bootstrap(
        (evenly(mine, MAX_PROBES), evenly(theirs, MAX_PROBES)),
        _typical_difference,
        n_resamples=RESAMPLES,
        confidence_level=0.95,
        method="percentile",
        batch=BATCH,
        random_state=np.random.default_rng(SEED),
    ).confidence_interval
    lo, hi = float(ci.low), float(ci.high)
    if not np.isfinite(lo) or not np.isfinite(hi):  # every resample alike
        lo = hi = d
    return CoreSpeed(
        shift_rel=rel(d),
        ci_rel=(rel(min(lo, d)), rel(max(hi, d))),
        n=int(mine.size),
        peers_n=int(theirs.size),
        rank_typical_ns=float(np.exp(_typical(mine))),
        peers_typical_ns=float(np.exp(_typical(theirs))),
        start_ns=start_ns,
        end_ns=end_ns,
    )


def decide(
    speed: Optional[CoreSpeed], excess_rel: float, explained_rel: float = 0.0
) -> str:
    """SLOWER, MORE or UNTOLD for a finding ``excess_rel`` beyond ``explained_rel``
    (the core shift its detector already took away), from ``speed``."""
    if speed is None or excess_rel <= 0:
        return UNTOLD
    beyond_lo = (1 + speed.ci_rel[0]) / (1 + explained_rel) - 1 - SYSTEMATIC
    beyond_hi = (1 + speed.ci_rel[1]) / (1 + explained_rel) - 1 + SYSTEMATIC
    if beyond_lo >= CORE_SHARE * excess_rel:
        return SLOWER
    if beyond_hi < CORE_SHARE * excess_rel:
        return MORE
    return UNTOLD


def not_faster(speed: Optional[CoreSpeed], faster_rel: float) -> bool:
    """Whether ``speed`` rules out a core faster by CORE_SHARE of ``faster_rel`` (< 0:
    a rank's common shift in its classes): all of the probes' interval, widened by
    SYSTEMATIC, above it. A rank faster in every class while its probes ran at its
    peers' speed does less work there, not on a faster core (False without
    probes)."""
    return speed is not None and speed.ci_rel[0] - SYSTEMATIC > CORE_SHARE * faster_rel


def slower_beyond_margin(speed: Optional[CoreSpeed]) -> bool:
    """Whether the rank's probes ran slower than its peers' with all of their
    interval beyond SYSTEMATIC (False without probes): the probes alone then tell a
    slower core, whatever finding they are asked of."""
    return speed is not None and speed.ci_rel[0] > SYSTEMATIC


def evidence(
    speed: Optional[CoreSpeed], excess_rel: float, explained_rel: float = 0.0
) -> dict[str, Any]:
    """A finding's ``core_speed`` evidence: the decision and the probes' figures (only
    the decision and why where the window had too few probes)."""
    verdict = decide(speed, excess_rel, explained_rel)
    if speed is None:
        return {"verdict": verdict, "reason": "no fixed-work probes in its window"}
    return {
        "verdict": verdict,
        "explained_rel": explained_rel,
        "systematic_rel": SYSTEMATIC,
        **speed.to_json(),
    }
