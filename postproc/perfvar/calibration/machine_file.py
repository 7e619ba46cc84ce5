"""t_min / t_diff from a `perfvar calibrate --json` file, for the ranks that found
none at start-up and had no other rank on their host to borrow from.

The start-up calibration has 0.4 s on a core the application is about to load; on a
shared host it can fail on every rank of a run (the validation kit saw it in 1 and 2
of 50 CloverLeaf runs, in two runs of the kit), and such a run is not judged at all.
A calibration of the machine taken apart, at a quiet moment (`perfvar calibrate
--quick --json FILE`, under mpiexec for one per core), measures the same clock in
the same cache states.
`perfvar analyze --calibration FILE` lends it to those ranks only, as host
borrowing does (perfvar.calibration.borrow): per cache state, the largest t_min and
the largest t_diff the file's runs on the rank's host measured for the barrier
timer (the clock segments are timed with). A file of another host, or whose clock
differs from the rank's (another name, or a rate further apart than ranks of one run
may be: read.meta.HZ_AGREEMENT; another machine, or a changed clock source), lends
nothing, and the run's notes say why. What was lent shows as the state's status
"borrowed", its source naming the file, and the rank's ``problem``.

Times in ns. Pure over a RunMeta (changed in place) and the file's document; not
thread-safe.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from perfvar._spec import RankJsonClock as KClock
from perfvar.calibration.borrow import lend
from perfvar.errors import TraceError
from perfvar.read.cache_state import CacheState
from perfvar.read.meta import HZ_AGREEMENT, RankMeta, RunMeta, clock_rate
from perfvar.units import compact_ranges

TIMER = "barrier"  # the timer the recorder times segments with (perfvar._spec.TIMERS)


def read_file(path: str) -> dict[str, Any]:
    """The calibrate document at ``path``; TraceError when it cannot be read or is
    not one (no ``timers`` at its top or in its ``ranks``)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as exc:
        raise TraceError(f"--calibration {path}: {exc}") from exc
    if not isinstance(doc, dict) or not _runs(doc):
        raise TraceError(
            f"--calibration {path}: not a `perfvar calibrate --json` file "
            "(no timers measured)"
        )
    return doc


def _runs(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The document's calibrate runs: itself (one process), or each rank's (under
    mpiexec: ``ranks``)."""
    runs = doc.get("ranks") if isinstance(doc.get("ranks"), list) else [doc]
    return [
        r for r in runs if isinstance(r, dict) and isinstance(r.get("timers"), list)
    ]


def _states(run: dict[str, Any]) -> list[CacheState]:
    """The barrier timer's states of one calibrate run with both t_min and t_diff."""
    timer = next((t for t in run["timers"] if t.get("name") == TIMER), None)
    out = []
    for st in (timer or {}).get("states", []):
        state = CacheState(
            label=str(st.get("flush_label")),
            flush_bytes=int(st.get("flush") or 0),
            t_min_ns=st.get("t_min_ns"),
            t_diff_ns=st.get("t_diff_ns"),
            status=st.get("status"),
        )
        if state.usable:
            out.append(state)
    return out


def _clock_differs(run: dict[str, Any], rank: RankMeta) -> Optional[str]:
    """Why the file's run and the rank did not read one clock, or None."""
    mine, theirs = rank.clock or {}, run.get("clock") or {}
    if mine.get(KClock.NAME) != theirs.get(KClock.NAME):
        return (
            f"clock {theirs.get(KClock.NAME)} against the run's {mine.get(KClock.NAME)}"
        )
    a, b = clock_rate(mine), clock_rate(theirs)
    if a and b and abs(a - b) > HZ_AGREEMENT * a:
        return f"clock rate {b:.6g} Hz against the run's {a:.6g} Hz"
    return None


def _offer(doc: dict[str, Any], m: RankMeta) -> tuple[list[CacheState], Optional[str]]:
    """The states the calibrate document ``doc`` measured on rank ``m``'s host with its
    clock, and None; or no states and why not."""
    runs = [r for r in _runs(doc) if r.get("host") == m.host]
    if not runs:
        return [], f"no run on host {m.host}"
    why = next((w for r in runs if (w := _clock_differs(r, m))), None)
    if why:
        return [], why
    theirs = [st for r in runs for st in _states(r)]
    return theirs, None if theirs else "no t_min/t_diff in it"


def lend_from_file(meta: RunMeta, doc: dict[str, Any], path: str) -> list[int]:
    """Give every rank of ``meta`` with no usable state (after host borrowing) the
    barrier timer's states the calibrate document ``doc`` (read_file) measured on its
    host with its clock (see the module docstring); adds notes, returns the ranks
    that took them."""
    takers = [
        m for m in meta.ranks.values() if m.source and not m.calibration.in_some_state
    ]
    lent: list[int] = []
    refused: dict[str, list[int]] = {}
    for m in takers:
        theirs, reason = _offer(doc, m)
        if reason:
            refused.setdefault(reason, []).append(m.rank)
            continue
        source = f"borrowed: perfvar calibrate {path} on host {m.host}"
        lend(m, theirs, source, path)
        lent.append(m.rank)
    if lent:
        meta.notes.append(
            f"no usable t_min/t_diff on their host for rank(s) {compact_ranges(lent)}: "
            f"judged with those of {path} (perfvar calibrate)"
        )
    for reason, ranks in sorted(refused.items()):
        meta.notes.append(
            f"{path} lends no t_min/t_diff to rank(s) {compact_ranges(ranks)}: {reason}"
        )
    return sorted(lent)
