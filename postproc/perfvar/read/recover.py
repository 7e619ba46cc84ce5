"""The trace of a job that died: rebuild it from its records, and say how each rank
ended.

A traced job keeps, per rank, a definitions file and per-thread record files in
DIR/perfvar/records (written as it runs, into file-backed mappings that survive the
process). MPI_Finalize turns them into DIR/traces.otf2 and marks DIR/perfvar/rank-N.json
``"complete": true``. A job killed before (a batch system's SIGTERM at the wall-time
limit, kill -9, MPI_Abort, a crash) leaves the records only; ``perfvar-recover`` (C, no
MPI, one forked process per rank) converts them the way MPI_Finalize would and writes
DIR/perfvar/ended-rank-N.json: each thread's end state ("closed", "signal", "running" =
died without a word, "failed" = its file could not grow) and end time.

:func:`ensure_trace` runs it when needed (``perfvar analyze`` does, so a dead job is
analysed like any other) and :func:`read_endings` reads how the ranks ended.
"""

from __future__ import annotations

import glob
import json
import os
import re
import signal
import subprocess
from dataclasses import dataclass
from typing import Optional

from perfvar._spec import EndedJson as E
from perfvar._spec import EndedJsonThread as T
from perfvar._spec import RankJson
from perfvar.errors import TraceError
from perfvar.installation import find_tool

_ENDED = re.compile(r"^ended-rank-(\d+)\.json$")


@dataclass
class RankEnding:
    """How rank ``rank``'s records ended: ``state`` of its first thread that did not
    close ("closed" when all did), the signal if one arrived, ``end_s`` seconds from
    the rank's start, ``end_utc_ns`` the same as a UTC time, and whether it was inside
    an MPI call then."""

    rank: int
    state: str
    signal: int
    end_s: float
    end_utc_ns: float
    in_mpi_call: bool
    lost_records: int
    silence_s: float = 0.0  # its longest gap between records near its end
    # Who sent the signal (state "signal"): "launcher" (its parent process: mpiexec,
    # its proxy, the batch system's step daemon), "other" (a user, a batch system),
    # "fault" (the kernel, for the rank's own fault), "" not known.
    sent_by: str = ""

    @property
    def latest_end_utc_ns(self) -> float:
        """When it ended at the latest: a signal's time is known; a rank that died
        without a word ended after its last record, within about its longest recent
        silence."""
        if self.state == "running":
            return self.end_utc_ns + self.silence_s * 1e9
        return self.end_utc_ns

    @property
    def cause_class(self) -> int:
        """0: its end was a cause (a signal another process sent it, or its own
        fault); 2: a consequence (its launcher ended it, as launchers do with the
        other ranks when one dies); 1: cannot tell (killed without a word, stopped
        recording, or a signal of unknown origin)."""
        if self.state == "signal" and self.sent_by in ("other", "fault"):
            return 0
        if self.state == "signal" and self.sent_by == "launcher":
            return 2
        return 1

    @property
    def ended_early(self) -> bool:
        return self.state != "closed"

    def how(self) -> str:
        """The ending in words."""
        if self.state == "signal":
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = f"signal {self.signal}"
            by = {"launcher": " from its launcher", "other": " from another process"}
            return f"ended by {name}{by.get(self.sent_by, '')}"
        if self.state == "running":
            return "killed without a word (SIGKILL, or its node was lost)"
        if self.state == "failed":
            return "stopped recording (its records file could not grow: disk full?)"
        return "finished normally"


def has_records(directory: str) -> bool:
    return os.path.exists(os.path.join(directory, "perfvar", "records", "rank-0.defs"))


def _complete(directory: str) -> bool:
    """Every rank's rank-N.json says MPI_Finalize wrote its part of the archive."""
    metas = glob.glob(os.path.join(directory, "perfvar", "rank-*.json"))
    if not metas or not os.path.exists(os.path.join(directory, "traces.otf2")):
        return False
    for path in metas:
        try:
            with open(path, encoding="utf-8") as f:
                if json.load(f).get(RankJson.COMPLETE) is False:
                    return False
        except (OSError, ValueError):
            return False
    return True


def complete_archive(directory: str) -> bool:
    """DIR holds an archive MPI_Finalize wrote whole (its records may have been removed
    then)."""
    return _complete(directory)


def recover_tool() -> Optional[str]:
    """perfvar-recover, where perfvar.installation.find_tool finds it."""
    return find_tool("perfvar-recover")


def recover(directory: str, force: bool = False) -> str:
    """Run perfvar-recover on DIR; returns what it printed. TraceError on failure."""
    tool = recover_tool()
    if tool is None:
        raise TraceError(
            f"{directory}: the job did not finish and perfvar-recover, which rebuilds "
            "its trace from the records, is not found (put perfvar's bin/ on PATH)"
        )
    cmd = [tool] + (["--force"] if force else []) + [directory]
    run = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        why = (run.stderr or run.stdout).strip().splitlines()
        raise TraceError(
            f"recovering {directory} failed: {why[-1] if why else run.returncode}"
        )
    return run.stdout


def ensure_trace(directory: str) -> bool:
    """Make DIR's trace readable: when the job left records but no complete archive,
    rebuild it (returns True); otherwise do nothing (False)."""
    if not has_records(directory) or _complete(directory):
        return False
    recover(directory)
    return True


def read_endings(directory: str) -> list[RankEnding]:
    """How each recovered rank ended (empty when the job was never recovered)."""
    out = []
    for path in sorted(
        glob.glob(os.path.join(directory, "perfvar", "ended-rank-*.json"))
    ):
        m = _ENDED.match(os.path.basename(path))
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            continue
        threads = [t for t in data.get(E.THREADS, []) if isinstance(t, dict)]
        if not m or not threads:
            continue
        first = next((t for t in threads if t.get(T.STATE) != "closed"), threads[0])
        out.append(
            RankEnding(
                rank=int(m.group(1)),
                state=str(first.get(T.STATE, "running")),
                signal=int(first.get(T.SIGNAL) or 0),
                end_s=float(max(t.get(T.END_S, 0.0) for t in threads)),
                end_utc_ns=float(max(t.get(T.END_UTC_NS, 0.0) for t in threads)),
                in_mpi_call=bool(first.get(T.IN_MPI_CALL)),
                lost_records=int(sum(t.get(T.LOST_RECORDS, 0) for t in threads)),
                silence_s=float(max(t.get(T.SILENCE_S, 0.0) for t in threads)),
                sent_by=str(first.get(T.SENT_BY) or ""),
            )
        )
    return sorted(out, key=lambda e: e.rank)


def endings_json(endings: list[RankEnding]) -> dict:
    """analysis.json's "ended": how the job ended, and which rank ended first.

    The rank that ended first ended early on its own; the others usually followed
    (the launcher kills a job when one of its ranks dies, by SIGTERM or SIGKILL). So
    a rank whose signal another process sent, or that faulted, goes before one that
    died without a word, which goes before one its launcher signalled
    (RankEnding.cause_class): times alone cannot tell a rank the launcher killed
    silently while it computed from one that was killed first. Within a class the
    earliest wins: a rank ended by a signal says when; one killed without a word is
    judged by the latest time it can have ended (its last record plus its longest
    recent silence)."""
    early = [e for e in endings if e.ended_early]
    first = (
        min(early, key=lambda e: (e.cause_class, e.latest_end_utc_ns))
        if early
        else None
    )
    t0 = min((e.end_utc_ns - e.end_s * 1e9 for e in endings), default=0.0)
    return {
        "recovered": bool(endings),
        "ended_early_ranks": [e.rank for e in early],
        "first_to_end": first.rank if first else None,
        "ranks": [
            {
                "rank": e.rank,
                "state": e.state,
                "signal": e.signal or None,
                "sent_by": e.sent_by or None,
                "how": e.how(),
                "end_s": round((e.end_utc_ns - t0) / 1e9, 6),
                "in_mpi_call": e.in_mpi_call,
                "lost_records": e.lost_records,
            }
            for e in endings
        ],
    }
