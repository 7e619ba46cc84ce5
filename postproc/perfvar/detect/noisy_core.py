"""Detector "noisy core": a rank whose segments lost far more time than its peers'.

What the OS-noise filter separates is counted here, never forgotten. The paper's
filter_os is tuned to calibration runs, where noise is rare: on a CPU shared with
another runnable process it keeps most of the 4-16 ms time slices (they are many,
so the isolation forest does not isolate them) while on a quiet CPU it removes
mild tails. So an interruption is defined by size, over all samples of a cell,
removed or kept: a sample beyond the far-out fence Q3 + 3 x max(IQR, 1 % of the
median) of the cell's kept samples. Per rank, over all its cells:

* interruptions: their number;
* time lost: the sum of (sample - cell median) over them, ns, and as a fraction of
  the rank's compute time (all its segment samples);
* typical length: the length that carries the lost time (the median of the
  excesses weighted by length: half the time was lost in interruptions at least
  this long), which says what interrupted it:
  >= 1 ms is a scheduler time slice (another runnable process on the CPU),
  20 us - 1 ms a short preemption (a kernel thread, softirq or page-fault work),
  below that interrupts (timer ticks, device interrupts, IPIs).

A rank is a noisy core when it loses more time per segment than its peers
(one-sided Welch t test on the time each segment lost, 0 for the uninterrupted:
the count alone would weigh a 4 ms time slice like a 2 us tick; q < alpha after
Benjamini-Hochberg over the ranks) and its lost fraction exceeds both
``noise_floor`` plus the peers' median fraction and twice that median. Where the
counters (PERFVAR_METRICS) measured the ranks' time off their CPU
(perfvar.stats.cpu_time), the same test on that share of each counter read's
interval names the rank instead: a measurement overrules the shape, which a
virtual CPU's host also gives, unless it agrees with it but has too few reads on a
side for its test to decide (then the shape's test does). The CPU named is the one
that lost the most time.
Pure function; thread-safe.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Optional

import numpy as np

from perfvar.detect.finding import NOISE, AnomalyJson, FindingKind
from perfvar.detect.words import neighbours_clause, where
from perfvar.stats.cells import by_rank, median_without_each
from perfvar.stats.compare import fdr, welch_greater
from perfvar.stats.model import Anomaly, DetectorResult, DetectParams, Prepared
from perfvar.stats.order import percentiles
from perfvar.units import fmt_ns, fmt_pct

KIND = "noisy_core"
MIN_INTERRUPTIONS = 3
MIN_CELL = 8  # kept samples a cell needs for a fence
FENCE_IQR = 3.0  # Tukey's far-out fence
FENCE_MIN_SPREAD = 0.01  # of the median: a floor for the IQR on a quantised clock
SLICE_NS = 1e6
SHORT_NS = 2e4


@dataclass
class RankNoise:
    """The interruptions of one rank (ns)."""

    rank: int
    samples: int = 0
    compute_ns: float = 0.0
    excess_ns: list[np.ndarray] = field(default_factory=list)
    lost_by_cpu: dict[int, float] = field(default_factory=lambda: defaultdict(float))

    @property
    def count(self) -> int:
        return int(sum(e.size for e in self.excess_ns))

    @property
    def lost_ns(self) -> float:
        return self.sums[0]

    @property
    def fraction(self) -> float:
        return self.lost_ns / self.compute_ns if self.compute_ns > 0 else 0.0

    @cached_property
    def sums(self) -> tuple[float, float]:
        """(sum, sum of squares) of the ns lost per segment; computed once, when the
        interruptions are all collected."""
        return (
            sum(float(e.sum()) for e in self.excess_ns),
            sum(float(np.dot(e, e)) for e in self.excess_ns),
        )

    def lost_per_sample(self) -> np.ndarray:
        """Time each segment lost (ns; 0 for the uninterrupted ones)."""
        lost = np.zeros(self.samples)
        if self.count:
            lost[: self.count] = np.concatenate(self.excess_ns)
        return lost

    def typical_ns(self) -> Optional[float]:
        """The length that carries the lost time: half of it is in interruptions at
        least this long (the median weighted by length). Many short interrupts do
        not hide the time slices that cost the most."""
        if not self.count:
            return None
        x = np.sort(np.concatenate(self.excess_ns))
        half = np.searchsorted(np.cumsum(x), x.sum() / 2)
        return float(x[min(half, x.size - 1)])

    def median_ns(self) -> Optional[float]:
        return float(np.median(np.concatenate(self.excess_ns))) if self.count else None


def interpretation(typical_ns: Optional[float]) -> str:
    """What interruptions of this typical length are, in words."""
    if typical_ns is None:
        return "no interruption"
    if typical_ns >= SLICE_NS:
        return "scheduler time slices: another runnable process shares this CPU"
    if typical_ns >= SHORT_NS:
        return "short preemptions: kernel threads, softirqs or page faults"
    return "interrupts: timer ticks, device interrupts or IPIs"


def fence_ns(kept_ns: np.ndarray) -> float:
    """The far-out fence of a cell (ns): Q3 + 3 x max(IQR, 1 % of the median)."""
    q1, q2, q3 = percentiles(kept_ns, (25, 50, 75))
    return float(q3 + FENCE_IQR * max(q3 - q1, FENCE_MIN_SPREAD * q2))


def rank_noise(prep: Prepared) -> dict[int, RankNoise]:
    """rank -> its interruptions: the samples of its cells beyond their fence.
    Derived once per Prepared: the detector, the rank table and the HTML report
    read the same (a fence per cell: seconds at thousands of ranks)."""
    if "rank_noise" not in prep.derived:
        prep.derived["rank_noise"] = _rank_noise(prep)
    return prep.derived["rank_noise"]


def _rank_noise(prep: Prepared) -> dict[int, RankNoise]:
    out = {}
    for rank, cells in by_rank(prep).items():
        noise = RankNoise(rank)
        for cell in cells:
            noise.samples += cell.raw_n
            noise.compute_ns += float(cell.samples_ns.sum() + cell.removed_ns.sum())
            if cell.n < MIN_CELL:
                continue
            values = np.concatenate([cell.samples_ns, cell.removed_ns])
            cpus = np.concatenate([cell.samples_cpu, cell.removed_cpu])
            beyond = values > fence_ns(cell.samples_ns)
            excess = values[beyond] - cell.median_ns
            noise.excess_ns.append(excess)
            for cpu, lost in zip(cpus[beyond], excess):
                noise.lost_by_cpu[int(cpu)] += float(lost)
        out[rank] = noise
    return out


Totals = tuple[int, float, float]  # segments, ns lost, sum of squares of ns lost


def totals(noises: list[RankNoise]) -> Totals:
    """The ranks' lost time pooled, as sums (see RankNoise.sums)."""
    return (
        sum(x.samples for x in noises),
        sum(x.sums[0] for x in noises),
        sum(x.sums[1] for x in noises),
    )


def _moments(t: Totals) -> tuple[int, float, float]:
    """(n, mean, standard deviation) from (n, sum, sum of squares)."""
    n, s1, s2 = t
    var = (s2 - s1 * s1 / n) / (n - 1) if n > 1 else 0.0
    return n, s1 / n if n else 0.0, float(np.sqrt(max(var, 0.0)))


def _greater(mine: Totals, peers: Totals) -> float:
    """p value that the mean of ``mine`` exceeds that of ``peers`` (one-sided Welch t
    test from their sums, so the peers' values are never concatenated); 1.0 with
    fewer than two values a side, both sums 0, or no finite statistic."""
    n1, m1, sd1 = _moments(mine)
    n2, m2, sd2 = _moments(peers)
    if n1 < 2 or n2 < 2 or (mine[1] == 0.0 and peers[1] == 0.0):
        return 1.0
    p = welch_greater(m1, sd1, n1, m2, sd2, n2)
    return p if np.isfinite(p) else 1.0


def _more_lost(mine: RankNoise, peers: Totals) -> float:
    """p value that ``mine`` loses more ns per segment on average than its peers
    pooled (Welch's t test over lost_per_sample)."""
    return _greater(totals([mine]), peers)


MIN_READS = 3  # counter reads a rank needs for its time off the CPU to be tested


def _measured_tests(prep: Prepared) -> dict[int, tuple[Any, float, float]]:
    """rank -> (its RankCpuTime, p value that its reads spent a larger share of their
    intervals off the CPU than its peers' reads, the peers' median off-CPU fraction),
    for the ranks the counters measured (perfvar.stats.cpu_time); {} with fewer than
    two such ranks."""
    measured = [t for _, t in sorted(prep.cpu_time.items()) if t.reads >= MIN_READS]
    if len(measured) < 2:
        return {}
    others = median_without_each(np.array([t.off_fraction for t in measured]))
    # Each rank's shares as sums: its peers' are the whole's minus its own.
    sums = [
        (x.size, float(x.sum()), float(np.dot(x, x)))
        for x in (t.off_share_per_read for t in measured)
    ]
    whole = tuple(map(sum, zip(*sums)))
    out = {}
    for i, mine in enumerate(measured):
        own = sums[i]
        peers = (whole[0] - own[0], whole[1] - own[1], whole[2] - own[2])
        (_, m1, sd1), (_, m2, sd2) = _moments(own), _moments(peers)
        if sd1 == 0 and sd2 == 0:  # every read alike on both sides: no test needed
            p = 0.0 if m1 > m2 else 1.0
        else:
            p = _greater(own, peers)
        out[mine.rank] = (mine, p, float(others[i]))
    return out


def _beyond(fraction: float, peers: float, params: DetectParams) -> bool:
    """A share of time lost that is the peers' plus the floor, and twice theirs."""
    return fraction > peers + params.noise_floor and fraction > 2 * peers


def _shape_tests(noise: dict[int, RankNoise]) -> dict[int, tuple[tuple, float]]:
    """rank -> ((its RankNoise, p value that it lost more per segment than its
    peers, the peers' median lost fraction, the peers' interruptions and samples),
    q value over the ranks), for the ranks with MIN_INTERRUPTIONS or more."""
    tests = []
    # Every rank's peers are all the others with segments: their sums are the
    # whole's minus its own, their median fraction the median without its own.
    present = [n for _, n in sorted(noise.items()) if n.samples > 0]
    whole = totals(present)
    all_count = sum(n.count for n in present)
    others_fraction = median_without_each(np.array([n.fraction for n in present]))
    for i, mine in enumerate(present):
        if len(present) < 2 or mine.count < MIN_INTERRUPTIONS:
            continue
        own = totals([mine])
        peers = (whole[0] - own[0], whole[1] - own[1], whole[2] - own[2])
        k_ref, n_ref = all_count - mine.count, peers[0]
        p = _more_lost(mine, peers)
        tests.append((mine, p, float(others_fraction[i]), k_ref, n_ref))
    return {t[0].rank: (t, q) for t, q in zip(tests, fdr([t[1] for t in tests]))}


def _named_by(
    rank: int,
    shape: Optional[tuple],
    q: float,
    measured: dict[int, tuple[Any, float, float]],
    measured_q: dict[int, float],
    params: DetectParams,
) -> list[str]:
    """What names ``rank`` a noisy core: its durations' shape (``shape``, ``q``:
    _shape_tests' entry) or its measured time off the CPU; [] if nothing does."""
    named_by = []
    off_beyond = False
    if rank in measured:
        cpu_time, _, peers_off = measured[rank]
        off_beyond = _beyond(cpu_time.off_fraction, peers_off, params)
    # Where the counters measured the rank's time off its CPU, they overrule the
    # durations' shape, which only infers it: on a virtual CPU the host's hiccups
    # take the same shape without the rank ever leaving its CPU. Where the measured
    # share agrees (beyond the peers' as the floors ask) but its test has too few
    # reads on one side to decide (a code of short segments reads its counters
    # rarely: TeaLeaf's rank with 5 reads in 3.5 s against 164 on the rank that
    # shared its CPU), the shape's test decides.
    undecided = off_beyond and measured_q.get(rank, 1.0) >= params.alpha
    if shape is not None and q < params.alpha and (rank not in measured or undecided):
        mine, _, peer_fraction, _, _ = shape
        if _beyond(mine.fraction, peer_fraction, params):
            named_by.append("interruptions in its segments' durations")
    if off_beyond and measured_q[rank] < params.alpha:
        named_by.append("time off its CPU (counters)")
    return named_by


def detect(prep: Prepared, params: Optional[DetectParams] = None) -> DetectorResult:
    """Name the noisy cores; one anomaly per rank with its interruptions."""
    params = params or DetectParams()
    result = DetectorResult()
    noise = rank_noise(prep)
    by_shape = _shape_tests(noise)
    measured = _measured_tests(prep)
    measured_q = dict(zip(measured, fdr([m[1] for m in measured.values()])))
    for rank in sorted(set(by_shape) | set(measured)):
        shape, q = by_shape.get(rank, (None, 1.0))
        named_by = _named_by(rank, shape, q, measured, measured_q, params)
        if not named_by:
            continue
        mine = noise.get(rank) or RankNoise(rank)
        _, p, peer_fraction, k_ref, n_ref = shape or (mine, 1.0, 0.0, 0, 0)
        typical = mine.typical_ns()
        cpu = max(mine.lost_by_cpu, key=mine.lost_by_cpu.get, default=None)
        result.anomalies.append(
            Anomaly(
                kind=KIND,
                rank=mine.rank,
                host=prep.hosts.get(mine.rank),
                cpu=None if cpu is None or cpu < 0 else cpu,
                segment=None,
                excess_ns=(
                    mine.lost_ns
                    if mine.count or rank not in measured
                    else measured[rank][0].off_cpu_ns
                ),
                evidence={
                    "interruptions": mine.count,
                    "samples": mine.samples,
                    "typical_ns": typical,
                    "median_interruption_ns": mine.median_ns(),
                    "lost_ns": mine.lost_ns,
                    "compute_ns": mine.compute_ns,
                    "lost_fraction": mine.fraction,
                    "peers_lost_fraction": peer_fraction,
                    "peers_interruptions": k_ref,
                    "peers_samples": n_ref,
                    "lost_by_cpu_ns": {str(c): v for c, v in mine.lost_by_cpu.items()},
                    "interpretation": interpretation(typical),
                    "fence": "Q3 + 3 x max(IQR, 1% of the median) of each cell",
                    "test": "one-sided Welch t test, time lost per segment vs peers",
                    "p_value": p,
                    "q_value": q,
                    "alpha": params.alpha,
                    "floor": params.noise_floor,
                    "named_by": named_by,
                    **_measured_evidence(
                        measured.get(rank),
                        measured_q.get(rank),
                        _peers_counts(prep, rank),
                    ),
                },
            )
        )
    return result


def _peers_counts(prep: Prepared, rank: int) -> dict[str, Optional[float]]:
    """The median over the other measured ranks of each count (context switches,
    migrations, page faults), None where they have none."""
    out: dict[str, Optional[float]] = {}
    for key in ("switches", "migrations", "page_faults"):
        values = [
            getattr(t, key)
            for r, t in prep.cpu_time.items()
            if r != rank and getattr(t, key) is not None
        ]
        out[key] = float(np.median(values)) if values else None
    return out


def _measured_evidence(
    test: Optional[tuple[Any, float, float]],
    q: Optional[float],
    peers_counts: dict[str, Optional[float]],
):
    """The counters' part of a noisy core's evidence; {} where they did not measure."""
    if test is None:
        return {}
    cpu_time, p, peers_off = test
    return {
        "measured": cpu_time.to_json(),
        "peers_measured": peers_counts,
        "peers_off_cpu_fraction": peers_off,
        "measured_test": "one-sided Welch t test, share of each counter read's "
        "interval off the CPU vs peers' reads",
        "measured_p_value": p,
        "measured_q_value": q,
    }


def _measured_words(ev: dict) -> str:
    """ "off its CPU 48.0% of the time its counter reads covered (1.2 s of 2.5 s; peers
    0.3%), in 1900 context switches; " where the counters measured it."""
    m = ev.get("measured")
    if not m:
        return ""
    # The context switches always; migrations and page faults where they are more than
    # twice the peers' (the same program faults alike on every rank).
    peers = ev.get("peers_measured") or {}
    counts = [
        f"{m[key]:.0f} {word} (peers {peers.get(short) or 0:.0f})"
        for key, short, word in (
            ("context_switches", "switches", "context switches"),
            ("migrations", "migrations", "CPU migrations"),
            ("page_faults", "page_faults", "page faults"),
        )
        if m.get(key) is not None
        and (key == "context_switches" or m[key] > 2 * (peers.get(short) or 0))
    ]
    return (
        f"off its CPU {fmt_pct(m['off_cpu_fraction'], signed=False)} of the time its "
        f"counter reads covered ({fmt_ns(m['off_cpu_ns'])} of "
        f"{fmt_ns(m['covered_ns'])}; "
        f"peers {fmt_pct(ev['peers_off_cpu_fraction'], signed=False)}; q "
        f"{ev['measured_q_value']:.1g})"
        + (f", in {', '.join(counts)}" if counts else "")
        + "; "
    )


def describe(a: AnomalyJson, labels: dict[str, str]) -> str:
    """One sentence with the evidence of a noisy core: the time the counters measured
    off its CPU, where they did, and the interruptions its segments' durations show."""
    ev = a["evidence"]
    cpu = f"cpu {a['cpu']}" if a["cpu"] is not None else "its CPU"
    by_shape = "interruptions in its segments' durations" in ev.get("named_by", [])
    if not by_shape and ev.get("measured"):  # the counters alone named it
        shape = (
            "its segments' durations show "
            f"{fmt_pct(ev['lost_fraction'], signed=False)} of its compute time lost "
            f"in {ev['interruptions']} interruptions"
        )
    else:
        shape = (
            f"{cpu} lost {fmt_pct(ev['lost_fraction'], signed=False)} of its compute "
            f"time ({fmt_ns(ev['lost_ns'])} of {fmt_ns(ev['compute_ns'])}) in "
            f"{ev['interruptions']} interruptions, half of it in ones of "
            f"~{fmt_ns(ev['typical_ns'])} or longer: {ev['interpretation']} "
            "(peers lost "
            f"{fmt_pct(ev['peers_lost_fraction'], signed=False)}; Welch t test "
            f"q {ev['q_value']:.1g} < {ev['alpha']:g})"
        )
    return (
        f"{where(a)} is a noisy core: {_measured_words(ev)}{shape}"
        f"{neighbours_clause(ev)}"
    )


def _phrase(a: AnomalyJson) -> str:
    """The verdict line's phrase: the measured share off the CPU, else the lost one."""
    ev = a["evidence"]
    if ev.get("measured"):
        off = fmt_pct(ev["measured"]["off_cpu_fraction"], signed=False)
        return f"noisy core, {off} off its CPU"
    return f"noisy core, {fmt_pct(ev['lost_fraction'], signed=False)} lost"


FINDING = FindingKind(
    name=KIND,
    verdict=True,
    word="noisy core",
    describe=describe,
    phrase=_phrase,
    size_key="lost_fraction",
    subject=NOISE,
    summary_key="noisy_ranks",
)
