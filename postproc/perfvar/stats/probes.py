"""The fixed-work probes (PERFVAR_PROBE) as one more class of cells.

Every probe of a rank runs the same K ADDs (rank-N.json ``probe.adds``), whatever
the application does, so the probes compare cores and phases even when the ranks'
segments do different work. Ranks may have calibrated different K, so each probe
is scaled to the median K over the ranks (ns for that many ADDs) before ranks are
compared. The probes join the cells as a pseudo-class with id ``probe``
(``Prepared.probe_segment``), which the core and phase detectors read and the
segment and noise detectors leave out. filter_os is applied as to any cell. Pure
functions; thread-safe.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

import numpy as np

from perfvar._spec import RankJsonProbe
from perfvar.read.meta import RunMeta
from perfvar.read.samples import TraceSamples
from perfvar.stats.filters import filter_os
from perfvar.stats.model import Cell, Prepared

PROBE_ID = "probe"


def _adds(meta: RunMeta, rank: int) -> Optional[int]:
    m = meta.ranks.get(rank)
    k = (m.probe or {}).get(RankJsonProbe.ADDS) if m is not None else None
    return int(k) if isinstance(k, (int, float)) and k > 0 else None


def with_probes(prep: Prepared, trace: TraceSamples, meta: RunMeta) -> Prepared:
    """``prep`` with one probe cell per rank that has probes and a known K."""
    p = trace.probes
    ranks = sorted(int(r) for r in np.unique(p["rank"])) if p.size else []
    adds = {r: _adds(meta, r) for r in ranks}
    adds = {r: k for r, k in adds.items() if k is not None}
    if not adds:
        return prep
    k_ref = float(np.median(list(adds.values())))
    index = len(prep.segment_ids)
    cells = dict(prep.cells)
    for rank, k in adds.items():
        mine = p[p["rank"] == rank]
        mine = mine[np.argsort(mine["start_ticks"], kind="stable")]
        values = mine["duration_ns"] * (k_ref / k)
        mask, info = filter_os(values)
        known = mine["cpu"][mine["cpu"] >= 0]
        cells[(index, rank)] = Cell.of_filtered(
            index,
            rank,
            values,
            trace.trace_ns(mine["start_ticks"]),
            mine["cpu"],
            mask,
            info,
            cpu=int(np.bincount(known).argmax()) if known.size else None,
        )
    return replace(
        prep,
        cells=cells,
        segment_ids=prep.segment_ids + [PROBE_ID],
        probe_segment=index,
    )
