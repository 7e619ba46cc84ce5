"""t_min / t_diff for a rank whose own start-up calibration found none.

A quick start-up calibration runs on a time budget; on a busy core (another process,
the host of a shared VM) its searches can run out of budget before t_min or t_diff is
found in any cache state. Such a rank would not be judged at all, however slow its
segments: the core most likely to be disturbed would be the one left out. Instead it
borrows from the other ranks on its host (the same machine: its clock and, mostly, its
cores): in each cache state, the largest t_min and the largest t_diff any of them
measured, so its effect floor and its precision limit are no finer than any of theirs.
What was borrowed, and from whom, is in the state's status ("borrowed") and source, in
the rank's ``problem`` and in the run's notes. A rank alone on its host, or whose host
is unknown, keeps nothing and is not judged (read.meta.usability_notes says so).

Times in ns. Pure over a RunMeta (changed in place); not thread-safe.
"""

from __future__ import annotations

from perfvar.read.cache_state import CacheState, label_order
from perfvar.read.meta import RankMeta, RunMeta
from perfvar.units import compact_ranges

BORROWED = "borrowed"


def lent_states(m: RankMeta, usable: list[CacheState], source: str) -> list[CacheState]:
    """The rank's states with each state some of ``usable`` (lenders' states with
    t_min and t_diff) measured replaced by their largest t_min and t_diff, marked
    BORROWED from ``source``; its other states as they were."""
    own = {st.label: st for st in m.calibration.states}
    out = []
    for label in sorted({st.label for st in usable} | set(own), key=label_order):
        theirs = [st for st in usable if st.label == label]
        mine = own.get(label)
        if not theirs:
            out.append(mine)  # no lender has this state either
            continue
        was = f"own calibration {mine.status}: {mine.note}" if mine else "not measured"
        out.append(
            CacheState(
                label=label,
                flush_bytes=mine.flush_bytes if mine else theirs[0].flush_bytes,
                t_min_ns=max(st.t_min_ns for st in theirs),
                t_diff_ns=max(st.t_diff_ns for st in theirs),
                status=BORROWED,
                source=source,
                note=was.rstrip(": "),
            )
        )
    return out


def lend(m: RankMeta, usable: list[CacheState], source: str, lender: str) -> None:
    """Give rank ``m`` the states ``usable`` (lent_states), its flush-0 values as its
    own, ``source`` as its calibration's, and say in its ``problem`` that it was
    judged with ``lender``'s."""
    c = m.calibration
    c.states = lent_states(m, usable, source)
    flush0 = next((s for s in c.states if s.label == "0" and s.usable), None)
    if flush0 is not None:
        c.t_min_ns, c.t_diff_ns = flush0.t_min_ns, flush0.t_diff_ns
    c.source = source
    why = m.problem or "no usable t_min/t_diff"
    m.problem = f"{why}; judged with those of {lender}"


def borrow_within_hosts(meta: RunMeta) -> list[int]:
    """Give every rank of ``meta`` that has no usable t_min/t_diff of its own the
    largest of its host's other ranks, per cache state (see the module docstring);
    adds one note per host and returns the ranks that borrowed."""
    by_host: dict[str, list[RankMeta]] = {}
    for m in meta.ranks.values():
        if m.host is not None and m.source:
            by_host.setdefault(m.host, []).append(m)
    borrowers: list[int] = []
    for host, members in sorted(by_host.items()):
        lenders = [m for m in members if m.calibration.in_some_state]
        takers = [m for m in members if not m.calibration.in_some_state]
        if not lenders or not takers:
            continue
        lent_by = f"rank(s) {compact_ranges([m.rank for m in lenders])}"
        source = f"borrowed: the largest of {lent_by} on host {host}"
        usable = [st for m in lenders for st in m.calibration.states if st.usable]
        for m in takers:
            lend(m, usable, source, lent_by)
        taken = compact_ranges([m.rank for m in takers])
        meta.notes.append(
            f"no usable t_min/t_diff of their own for rank(s) {taken}: judged with the "
            f"largest of the other ranks' on host {host} ({lent_by})"
        )
        borrowers += [m.rank for m in takers]
    return sorted(borrowers)
