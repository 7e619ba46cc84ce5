"""Findings that are time off the CPU: another process ran where the rank should have,
or the rank slept in a system call.

The counters' task clock (perfvar.stats.cpu_time) says how long a rank was off its
CPU between two reads. Two rules take that time out of the findings it explains:

* **a measured noisy core** (symptom_of): a rank off its CPU a share f of the time,
  its peers f_p, takes (1 - f_p) / (1 - f) times as long for the same work; a
  slow_core or slow_segment of that rank whose shift this explains by at least
  ``OFF_CPU_EXPLAINS`` (log scale) is a consequence, and the noisy core carries the
  cost;
* **time off the CPU inside one class** (ClassOffCpu, in_class): where the rank
  leaves its CPU at the same point of every step (another process woken there,
  say by the output it writes, or a system call that sleeps), the rank's
  segments of that class are off the CPU longer than its peers' are, and nothing
  else on the rank is. Per read that closes a segment of the class,
  the time off the CPU inside its segments (cpu_time.off_cpu_in_segments); the
  rank's median minus the median of its peers' reads of the class, where a
  one-sided Mann-Whitney U finds the rank's greater (p < alpha), is the time off
  the CPU per segment beyond the peers'. When that is at least OFF_CPU_EXPLAINS of
  a slow_segment's excess per segment, the finding is a consequence; when less,
  the finding stays with that part named in its evidence (``off_cpu``) and its
  delay cost counts only the rest (perfvar.verdict.delay_cost), since the
  segment's own work did not take it. Measured on CloverLeaf (2 ranks): in clean
  runs rank 0, which writes its step report to stdout and stderr in one class,
  was off its CPU 0.33-0.37 ms in the median segment of that class against
  0.05-0.09 ms on rank 1, with 4 context switches per segment against 1; +10 % or
  +3 % injected into one class moved that class's time off the CPU by at most 8 %
  of its excess.

Pure functions; thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from perfvar.detect import class_kind, subject
from perfvar.detect.finding import CLASS, CORE, NOISE
from perfvar.read.samples import TraceSamples
from perfvar.stats import cpu_time
from perfvar.stats.compare import mann_whitney_greater
from perfvar.stats.model import Anomaly
from perfvar.units import fmt_ms, signed_pct
from perfvar.verdict.consequence import consequence

# What a consequence follows ("cause" in analysis.json) when it is the rank's time
# off the CPU that the counters measured.
OFF_CPU = "time off the CPU"

# The time off the CPU must explain at least this share of a finding's shift (on the
# log scale) or excess per segment to make it a consequence.
OFF_CPU_EXPLAINS = 0.5

CLASS_TEST = (
    "one-sided Mann-Whitney U on the time off the CPU inside the class's segments "
    "per counter read, the rank's vs its peers'"
)


def noisy_cores(anomalies: list[Anomaly]) -> dict[int, Anomaly]:
    """rank -> its noisy_core finding, where the counters measured its time off the
    CPU (the evidence perfvar.detect.noisy_core gives then): symptom_of's causes."""
    return {
        a.rank: a
        for a in anomalies
        if subject(a.kind) == NOISE and "measured" in (a.evidence or {})
    }


def symptom_of(a: Anomaly, causes: dict[int, Anomaly]) -> Optional[dict[str, Any]]:
    """The slow_core or slow_segment ``a`` as a symptom of its rank's measured time
    off the CPU (a JSON-ready dict), or None.

    A rank off its CPU a share f of the time, its peers f_p, runs (1 - f) / (1 - f_p)
    of the wall time they run: every segment that long on the CPU takes
    (1 - f_p) / (1 - f) times as long. When that explains at least
    OFF_CPU_EXPLAINS of the finding's shift (log scale), the finding is the time
    off the CPU seen in the durations, reported under the noisy core that measured
    it. A shift beyond twice what the time off the CPU makes, on the log scale
    (beyond (1 + e)^2 - 1 for its +e), stays a finding of its own."""
    cause = causes.get(a.rank)
    if cause is None or subject(a.kind) not in (CORE, CLASS):
        return None
    ev, cev = a.evidence or {}, cause.evidence or {}
    off = float(cev["measured"].get("off_cpu_fraction") or 0.0)
    peers = float(cev.get("peers_off_cpu_fraction") or 0.0)
    shift = ev.get("shift_rel")
    if shift is None or shift <= 0 or off >= 1 or off <= peers:
        return None
    explained = float(np.log((1 - peers) / (1 - off)))
    if explained < OFF_CPU_EXPLAINS * float(np.log1p(shift)):
        return None
    what = f"{a.segment}" if a.segment else "core"
    text = (
        f"rank {a.rank}'s slower {what} ({signed_pct(shift).strip()}) is its time "
        f"off the CPU ({off:.0%} against its peers' {peers:.0%}, which makes "
        f"{signed_pct(float(np.expm1(explained))).strip()})"
    )
    test = (
        "the slowdown the measured time off the CPU makes, "
        "(1 - peers' share) / (1 - the rank's share), explains at least "
        f"{OFF_CPU_EXPLAINS:.0%} of the shift (log scale)"
    )
    figures = {
        "off_cpu_fraction": off,
        "peers_off_cpu_fraction": peers,
        "explained_rel": float(np.expm1(explained)),
    }
    return consequence(a, OFF_CPU, a.rank, text, test, figures)


@dataclass(frozen=True)
class OffCpuInClass:
    """A rank's time off the CPU inside its segments of one class against its peers'
    (ns per segment: medians over the reads those segments closed)."""

    rank_ns: float
    peers_ns: float
    p_value: float  # one-sided Mann-Whitney U, the rank's reads greater
    reads: int
    peers_reads: int
    switches: Optional[float] = None  # median context switches per read, if counted
    peers_switches: Optional[float] = None

    @property
    def beyond_ns(self) -> float:
        """Time off the CPU per segment beyond the peers' (ns, at least 0)."""
        return max(self.rank_ns - self.peers_ns, 0.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "beyond_ns": self.beyond_ns,
            "rank_ns": self.rank_ns,
            "peers_ns": self.peers_ns,
            "p_value": self.p_value,
            "reads": self.reads,
            "peers_reads": self.peers_reads,
            "context_switches": self.switches,
            "peers_context_switches": self.peers_switches,
            "test": CLASS_TEST,
        }


class ClassOffCpu:
    """Time off the CPU inside each read's segments, by rank and by the class (display
    id) of the segment that closed the read. Built once per analysis; read-only."""

    def __init__(self, trace: TraceSamples, segment_ids: list[str]):
        metrics = cpu_time.after_start(trace.metrics)
        names = trace.metric_names
        ticks_per_ns = trace.timer_resolution_hz / 1e9
        off = None
        if metrics.size and trace.samples.size:
            off = cpu_time.off_cpu_in_segments(
                metrics, names, trace.samples, ticks_per_ns
            )
        self.known = off is not None
        if off is None:
            return
        ok = np.isfinite(off)
        closing = trace.samples["segment"][np.where(ok, metrics["sample"], 0)]
        ids = np.asarray(segment_ids, dtype=object)
        self.off_ns = off[ok]
        self.rank = metrics["rank"][ok]
        self.segment = ids[closing[ok]] if ids.size else closing[ok].astype(object)
        col = cpu_time.column(names, cpu_time.SWITCHES)
        self.switches = metrics["values"][ok, col] if col is not None else None

    def _switches(self, at: np.ndarray) -> Optional[float]:
        if self.switches is None:
            return None
        v = self.switches[at]
        v = v[np.isfinite(v)]
        return float(np.median(v)) if v.size else None

    def of(self, rank: int, segment: str, min_samples: int) -> Optional[OffCpuInClass]:
        """Rank ``rank``'s class ``segment`` against its peers, None without a task
        clock or with fewer than ``min_samples`` reads on a side."""
        if not self.known:
            return None
        of_class = self.segment == segment
        mine, peers = of_class & (self.rank == rank), of_class & (self.rank != rank)
        a, b = self.off_ns[mine], self.off_ns[peers]
        if a.size < min_samples or b.size < min_samples:
            return None
        p = 1.0
        if np.ptp(np.concatenate([a, b])) > 0:
            p = mann_whitney_greater(a, b)
        return OffCpuInClass(
            float(np.median(a)),
            float(np.median(b)),
            p,
            int(a.size),
            int(b.size),
            self._switches(mine),
            self._switches(peers),
        )


def in_class(
    a: Anomaly, table: ClassOffCpu, alpha: float, min_samples: int
) -> Optional[OffCpuInClass]:
    """The part of slow_segment ``a`` that its rank spent off the CPU inside the
    class's segments beyond its peers, where that is measured and significant
    (p < alpha); None otherwise."""
    if not class_kind(a.kind) or a.segment is None:
        return None
    part = table.of(a.rank, a.segment, min_samples)
    if part is None or part.p_value >= alpha or part.beyond_ns <= 0:
        return None
    return part


def class_symptom(a: Anomaly, part: OffCpuInClass) -> Optional[dict[str, Any]]:
    """The slow_segment ``a`` as a consequence of its time off the CPU inside its
    class (a JSON-ready dict) when ``part`` explains at least OFF_CPU_EXPLAINS of its
    excess per segment; None otherwise."""
    excess = max(a.excess_ns or 0.0, 0.0)
    if excess <= 0 or part.beyond_ns < OFF_CPU_EXPLAINS * excess:
        return None
    ev = a.evidence or {}
    rel = ev.get("excess_rel", ev.get("shift_rel"))
    switches = ""
    if part.switches is not None and part.peers_switches is not None:
        switches = (
            f", {part.switches:g} context switches a segment against "
            f"{part.peers_switches:g}"
        )
    text = (
        f"rank {a.rank}'s {a.segment}{signed_pct(rel)} is time off its CPU inside "
        f"those segments ({fmt_ms(part.rank_ns)} a segment against its peers' "
        f"{fmt_ms(part.peers_ns)}{switches})"
    )
    test = (
        f"{CLASS_TEST}; the difference explains at least "
        f"{OFF_CPU_EXPLAINS:.0%} of the excess per segment"
    )
    figures = {"off_cpu": part.to_json()}
    return consequence(a, OFF_CPU, a.rank, text, test, figures)
