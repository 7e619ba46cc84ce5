"""The calibration judge applied to a run: every rank's t_min / t_diff, decided once.

perfvar.read.meta reads each rank's C estimates; this module replaces them with
what perfvar.calibration.judge decides from the rank's stored start-up samples
(DIR/perfvar/calibration-rank-N.json), per cache state and for the cycle counter,
where the judge confirms both values; elsewhere the estimates stay, labelled, and
the notes say which ranks and states.

Decided once: the decisions are kept in DIR/perfvar/calibration-judged.json, keyed
by the SHA-256 of each rank's sample file and of the judge's own code (the modules
that decide: calibration_judge, filters, isolation, stats), so a later analysis
of the same trace reads them instead of growing the forests again, and a changed
file or rule is judged anew. Ranks still to judge are judged where they are read,
all together (calibration.judge.judge_documents): each part of a split analysis
(perfvar.partition) judges its own ranks. An unwritable directory only costs the
reuse.
Not thread-safe (writes the cache file).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from typing import Any, Optional

from perfvar.calibration import judge as calibration_judge
from perfvar.calibration.borrow import borrow_within_hosts
from perfvar.calibration.judge import SOURCE, Decision
from perfvar.calibration.machine_file import lend_from_file
from perfvar.read.meta import (
    RankMeta,
    RunMeta,
    load_json,
    read_meta,
    usability_notes,
)
from perfvar.stats import filters, isolation
from perfvar.stats import summary as stats
from perfvar.units import compact_ranges

CACHE_NAME = "calibration-judged.json"
# What a flushed state's note says its samples did not confirm (the judge decides a
# flushed state's pair as one; flush 0 names what is missing).
FLUSHED = "t_min/t_diff"


def _judge_code_digest() -> str:
    h = hashlib.sha256()
    for module in (calibration_judge, filters, isolation, stats):
        with open(module.__file__, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def _file_digest(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def judge_files(paths: list[str]) -> list[dict[str, Any]]:
    """The judge's decisions over each calibration-rank-N.json, all decided together,
    or ``{"error"}`` for one that is missing, unreadable or malformed."""
    docs = [load_json(path) for path in paths]
    judged = iter(
        calibration_judge.judge_documents([d for d, _ in docs if d is not None])
    )
    out = []
    for doc, why in docs:
        if doc is None:
            out.append({"error": why})
            continue
        decided = next(judged)
        bad = isinstance(decided, Exception)
        out.append({"error": f"malformed ({decided})"} if bad else decided)
    return out


def _load_cache(path: str, code: str) -> dict[str, Any]:
    doc, _ = load_json(path)
    if not doc or doc.get("judge") != code or not isinstance(doc.get("files"), dict):
        return {}
    return doc["files"]


def _save_cache(path: str, code: str, files: dict[str, Any]) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"judge": code, "files": files}, f)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def decide_ranks(
    directory: str, ranks: Iterable[int]
) -> tuple[dict[int, dict[str, Any]], dict[str, Any]]:
    """(rank -> the judge's decisions, the decisions made now by file digest) for the
    ranks that have a sample file; judged here unless already decided. Only reads
    the cache; :func:`record` writes it."""
    meta_dir = os.path.join(directory, "perfvar")
    cached = _load_cache(os.path.join(meta_dir, CACHE_NAME), _judge_code_digest())
    out: dict[int, dict[str, Any]] = {}
    todo: dict[str, tuple[str, list[int]]] = {}  # digest -> (path, its ranks)
    for rank in sorted(set(ranks)):
        path = os.path.join(meta_dir, f"calibration-rank-{rank}.json")
        digest = _file_digest(path)
        if digest is None:
            continue
        hit = cached.get(digest)
        if hit is not None:
            out[rank] = hit
        else:
            todo.setdefault(digest, (path, []))[1].append(rank)
    made = dict(zip(todo, judge_files([path for path, _ in todo.values()])))
    for digest, (_, owners) in todo.items():
        for rank in owners:
            out[rank] = made[digest]
    return out, made


def record(directory: str, made: dict[str, Any]) -> None:
    """Add decisions (by sample-file digest) to DIR/perfvar/calibration-judged.json."""
    if not made:
        return
    code = _judge_code_digest()
    path = os.path.join(directory, "perfvar", CACHE_NAME)
    _save_cache(path, code, {**_load_cache(path, code), **made})


def _apply_state(target: Any, judged: Optional[dict[str, Any]]) -> Optional[str]:
    """Set a Calibration / CacheState from its decision when both values are
    confirmed (None returned); else label the estimate and return what is missing,
    unless the C search left the state unusable too (None: no estimate judges with
    it, so there is nothing to warn of; the notes on borrowed values and unjudged
    ranks cover a rank left without any)."""
    if judged is None:
        return None
    d = Decision.from_json(judged, "ns")
    if d.confirmed:
        target.t_min_ns, target.t_diff_ns, target.source = d.t_min, d.t_diff, SOURCE
        return None
    target.source = f"C estimate ({d.missing} not confirmed by the paper's filter_os)"
    if target.t_min_ns is None or target.t_diff_ns is None:
        return None
    return d.missing


def _apply_rank(
    m: RankMeta,
    judged: dict[str, Any],
    notes: list[str],
    unconfirmed: dict[tuple[str, str], list[int]],
) -> None:
    """Rank ``m``'s calibration set from its decisions; where it keeps the C
    estimates, its rank is added to ``unconfirmed`` under (the cache state, what its
    samples did not confirm there: t_min/t_diff in a flushed state, what is missing
    in flush 0), for apply's notes."""
    c = m.calibration
    if "error" in judged:
        if judged["error"] != "missing":
            notes.append(
                f"calibration-rank-{m.rank}.json {judged['error']}: "
                f"rank {m.rank} keeps the C estimates"
            )
        return
    if not c.states:  # rank-N.json had no calibration: nothing to confirm
        return
    states = judged.get("states", {})
    missing = _apply_state(c, states.get("0"))
    for state in c.states[1:]:
        if _apply_state(state, states.get(state.label)) is not None:
            unconfirmed.setdefault((state.label, FLUSHED), []).append(m.rank)
    c.states[0].t_min_ns, c.states[0].t_diff_ns = c.t_min_ns, c.t_diff_ns
    c.states[0].source = c.source
    cyc = judged.get("cycles")
    if c.cycles.available and cyc is not None:
        d = Decision.from_json(cyc, "cycles")
        if d.confirmed:
            c.cycles.t_min_cycles, c.cycles.t_diff_cycles = d.t_min, d.t_diff
            c.cycles.source = SOURCE
        else:
            c.cycles.source = (
                f"C estimate ({d.missing} not confirmed by the paper's filter_os)"
            )
    if missing is None:
        if m.problem and m.problem.startswith("calibration status"):
            m.problem = None
        return
    unconfirmed.setdefault((c.states[0].label, missing), []).append(m.rank)


def apply(
    meta: RunMeta,
    judged: dict[int, dict[str, Any]],
) -> None:
    """Put the judge's decisions into ``meta`` (in place) and add its notes."""
    unconfirmed: dict[tuple[str, str], list[int]] = {}
    for rank, decided in sorted(judged.items()):
        m = meta.ranks.get(rank)
        if m is not None and m.source:
            _apply_rank(m, decided, meta.notes, unconfirmed)
    # One note per state and quantity, not per rank: a job of many ranks gets a
    # line, not many (flush 0, labelled "0", first).
    for (label, what), where in sorted(unconfirmed.items()):
        meta.notes.append(
            f"cache state {label}: the start-up samples of rank(s) "
            f"{compact_ranges(where)} do not confirm {what} under the paper's "
            "statistics; the C search's estimates are used there"
        )


def judge_run(directory: str, meta: RunMeta) -> RunMeta:
    """Decide every rank's calibration of ``meta`` (see the module docstring) and
    return ``meta``, updated in place."""
    judged, made = decide_ranks(directory, meta.ranks)
    record(directory, made)
    apply(meta, judged)
    return meta


def judged_meta(
    directory: str,
    ranks: Iterable[int],
    judge: bool = True,
    machine: Optional[tuple[dict, str]] = None,
) -> RunMeta:
    """read_meta with every rank's calibration decided (unless ``judge`` is False:
    the C search's estimates), and a rank with none of its own given its host's or
    the ``machine`` file's (lend_missing)."""
    meta = read_meta(directory, ranks)
    if judge:
        judge_run(directory, meta)
    lend_missing(meta, machine)
    return meta


def lend_missing(
    meta: RunMeta, machine: Optional[tuple[dict, str]] = None
) -> list[int]:
    """After the ranks' own calibrations are decided: a rank with none takes its host's
    (perfvar.calibration.borrow), else the ``machine`` file's ((document, path):
    perfvar.calibration.machine_file); then the notes on which ranks can be judged.
    Needs every rank of the run. Returns the ranks that took values."""
    takers = borrow_within_hosts(meta)
    if machine is not None:
        takers += lend_from_file(meta, *machine)
    meta.notes += usability_notes(meta)
    return sorted(takers)
