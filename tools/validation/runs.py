"""The validation kit's runs as JSON files (tools/validate.py --json): the trials of one
run and what ran them, so that a page of results (--doc) can say, for each program and
case, which run it comes from, when, on what machine and by what command.

    {"format": 1,
     "run": {"date": ISO 8601 local time the run started, "ran": when its trials ran (a
             rejudge's: its source's), "machine": CPU model and count the trials ran on,
             "command": the command line, "short": the gross cases (--short),
             "rejudged_from": the JSON whose kept traces were judged again, or null},
     "trials": [one object per trial: tools/validate.py's Trial, field by field]}

Files written before the format was given are a bare list of trials: they load with the
file's modification time as their date and the machine and command "not recorded".
Not thread-safe (plain file writes).
"""

from __future__ import annotations

import datetime
import json
import shlex
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

FORMAT = 1
NOT_RECORDED = "not recorded"


@dataclass
class RunInfo:
    date: str  # ISO 8601, local time, seconds: when this run started
    machine: str  # where its trials ran
    command: str
    short: bool = False
    rejudged_from: Optional[str] = None
    ran: Optional[str] = None  # when its trials ran, if not then (a rejudge's source's)

    @property
    def trials_ran(self) -> str:
        return self.ran or self.date


def now(machine: str, short: bool, source: Optional[tuple[Path, RunInfo]] = None) -> RunInfo:
    """This run: started now, by this process's command line, its trials run here on
    ``machine``; or, for a rejudge, those of ``source`` (its JSON and what ran it)."""
    info = RunInfo(
        date=datetime.datetime.now().isoformat(timespec="seconds"),
        machine=machine,
        command=shlex.join(["tools/validate.py", *sys.argv[1:]]),
        short=short,
    )
    if source is not None:
        path, ran = source
        info.rejudged_from, info.machine, info.ran = str(path), ran.machine, ran.trials_ran
    return info


def dump(path: Path, info: RunInfo, trials: list[dict]) -> None:
    """Write one run (its trials as plain objects) to ``path``."""
    doc = {"format": FORMAT, "run": asdict(info), "trials": trials}
    path.write_text(json.dumps(doc, indent=1) + "\n")


def load(path: Path) -> tuple[RunInfo, list[dict]]:
    """(what ran it, its trials) of a run written by :func:`dump`, or of an older bare list
    of trials (dated by the file). Raises ValueError on a format this code does not know,
    OSError and json.JSONDecodeError as reading does."""
    doc = json.loads(path.read_text())
    if isinstance(doc, list):
        mtime = datetime.datetime.fromtimestamp(path.stat().st_mtime)
        return RunInfo(mtime.isoformat(timespec="seconds"), NOT_RECORDED, NOT_RECORDED), doc
    if doc.get("format") != FORMAT:
        raise ValueError(f"{path}: runs format {doc.get('format')!r}, this kit reads {FORMAT}")
    known = set(RunInfo.__dataclass_fields__)
    return RunInfo(**{k: v for k, v in doc["run"].items() if k in known}), doc["trials"]
