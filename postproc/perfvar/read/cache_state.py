"""Which calibrated cache state a segment is judged against.

The start-up calibration measures t_min and t_diff in the paper's cache states: flush
0, 4xL1, 4xL2 and 4xL3 (that many bytes written before every sample). A segment is
judged with the state closest to its *context*:

- Context = the bytes the MPI call that precedes the segment moved, as the trace
  records them: the sizes of its MpiSend and MpiRecv records plus the sent and received
  sizes of its MpiCollectiveEnd (reader_otf2 ``context_bytes``). For a (segment, rank)
  cell it is the median over the cell's samples that have one. Unknown when the call
  left no such record (MPI_Init, a wait on sends only, a user-timer cut, a call on
  another communicator than MPI_COMM_WORLD).
- Why bytes: data an MPI call streams through the cache (the send buffer read, the
  receive buffer written, shared-memory copies) evicts the application's working set
  the way the calibration's flush does, so a segment after a call that moved at least
  4 x L2 bytes starts with caches like the 4xL2 calibration's samples.
- Rule: the target is the state with the largest flush size <= the context bytes;
  a smaller or unknown context targets flush 0. The sizes are the rank's own (its
  rank-N.json), so ranks on different CPUs are judged by their own caches. If the
  target has no usable calibration (t_min and t_diff known; e.g. 4xL3 skipped for lack
  of budget), the usable state nearest to it in the order 0 < 4xL1 < 4xL2 < 4xL3 is
  used, the larger one on a tie (its larger t_diff claims less).

All sizes in bytes, times in ns. Pure functions; thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

LABELS = ("0", "4xL1", "4xL2", "4xL3")


def label_order(label: str) -> tuple[int, str]:
    """Sort key of a cache state label: 0 < 4xL1 < 4xL2 < 4xL3, then any other label
    by name."""
    return (LABELS.index(label) if label in LABELS else len(LABELS), label)


@dataclass
class CacheState:
    """t_min / t_diff of one rank in one cache state (None when unknown)."""

    label: str  # "0", "4xL1", "4xL2", "4xL3"
    flush_bytes: int  # bytes written before every calibration sample
    t_min_ns: Optional[float] = None
    t_diff_ns: Optional[float] = None
    status: Optional[str] = None  # "complete", "partial", "skipped", "off"
    source: str = "C estimate"  # as Calibration.source
    note: str = ""  # the C side's reason when not complete

    @property
    def usable(self) -> bool:
        """True when both t_min and t_diff are known, so segments can be judged."""
        return self.t_min_ns is not None and self.t_diff_ns is not None

    def to_json(self) -> dict:
        return {
            "label": self.label,
            "flush_bytes": self.flush_bytes,
            "t_min_ns": self.t_min_ns,
            "t_diff_ns": self.t_diff_ns,
            "status": self.status,
            "source": self.source,
            "note": self.note,
        }


@dataclass
class Choice:
    """The state a cell is judged with (None: no usable state) and why."""

    state: Optional[CacheState]
    target: str  # the label the context asks for
    context_bytes: Optional[int]  # None: unknown context

    @property
    def label(self) -> Optional[str]:
        return self.state.label if self.state is not None else None


def _rank_of(label: str) -> int:
    return LABELS.index(label) if label in LABELS else len(LABELS)


def choose(context_bytes: Optional[int], states: list[CacheState]) -> Choice:
    """The calibrated state closest to a context (see the module docstring)."""
    known = sorted(
        (s for s in states if s.label in LABELS and (s.label == "0" or s.flush_bytes)),
        key=lambda s: _rank_of(s.label),
    )
    target = "0"
    if context_bytes is not None:
        for s in known:
            if s.label != "0" and s.flush_bytes <= context_bytes:
                target = s.label
    usable = [s for s in known if s.usable]
    if not usable:
        return Choice(None, target, context_bytes)
    t = _rank_of(target)
    best = min(usable, key=lambda s: (abs(_rank_of(s.label) - t), -_rank_of(s.label)))
    return Choice(best, target, context_bytes)


def cell_context(context_bytes: np.ndarray) -> Optional[int]:
    """Median of the known (>= 0) per-sample context bytes; None if none is known."""
    known = np.asarray(context_bytes)
    known = known[known >= 0]
    return int(np.median(known)) if known.size else None
