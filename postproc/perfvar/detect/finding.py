"""What the reports know of a kind of finding, declared by the detector that finds it.

Every detector module under perfvar.detect exports ``KIND`` (the ``kind`` string of
its anomalies in analysis.json), ``detect(prep, params, ...)`` and ``FINDING``, a
FindingKind: whether the kind is a finding of a rank (drawn, marked, costed) or
information, whether it came and went (a transient, which names no anomalous core),
whose it is (the machine's: a core, a CPU; or the code's: more work on a rank), what
it is about (its subject: one segment class of a rank, a rank's core, a window of the
run, its CPU's interruptions, a CPU shared, the rank's placement, a node or socket
of ranks), the key of the
summary that lists its ranks, its short word, how one of
its anomalies is put in a sentence and in a phrase, which evidence key gives its
relative size, and in which segment classes it shows. perfvar.detect registers them
in one table; the text and HTML reports, the plots, the markers and analysis.json
read that table instead of testing the kind themselves. Immutable; thread-safe.

Each callable takes an anomaly as analysis.json holds it (``Anomaly.to_json()``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional

AnomalyJson = dict[str, Any]
MACHINE = "machine"  # FindingKind.owner of the hardware's findings
CODE = "code"  # FindingKind.owner of the program's (load imbalance)

# FindingKind.subject: what a finding is about, which decides how its excess is spread
# over its rank's segments (perfvar.verdict.delay_cost), what may explain it and what
# the plots draw. A class finding without a segment is a shift in all its classes.
CLASS = "class"  # one segment class of its rank: its excess is per segment of it
CORE = "core"  # its rank's core: a shift in all the rank's classes
WINDOW = "window"  # a stretch of the run (start_ns..end_ns): a shift that came and went
NOISE = "noise"  # its CPU's interruptions: time lost in the segments they hit
CPU = "cpu"  # its CPU, shared with other ranks
PLACEMENT = "placement"  # where the rank ran (CPUs it moved between)
# A node or socket: the findings of its ranks folded into one (perfvar.detect.levels),
# costed as the sum of theirs.
GROUP = "group"
SUBJECTS = (CLASS, CORE, WINDOW, NOISE, CPU, PLACEMENT, GROUP)


def everywhere(anomaly: AnomalyJson, segment: str) -> bool:
    """A finding of the whole rank (a core): it shows in every class."""
    return True


@dataclass(frozen=True)
class FindingKind:
    name: str  # the anomaly's "kind"
    verdict: bool  # a finding of its rank (drawn, marked, costed); False: information
    word: str  # a few words for badges, legends and the rank tables
    # One sentence with the evidence: (anomaly, segment id -> class label) -> text.
    describe: Callable[[AnomalyJson, dict[str, str]], str]
    # A short phrase for the verdict line ("S2 +660.8 us"); verdict kinds only.
    phrase: Optional[Callable[[AnomalyJson], str]] = None
    # The evidence key of its size relative to the work (0.05 = 5 %): the markers'
    # severity. None: it has no size (informational kinds).
    size_key: Optional[str] = None
    # Whether it shows in segment class ``segment`` (display id), for the plots.
    in_class: Callable[[AnomalyJson, str], bool] = everywhere
    # A shift that came and went (a phase of the program, or the host taking the
    # CPU): reported with its window and cost, it names no anomalous core.
    transient: bool = False
    # Whose finding it is: "machine" (a core or CPU: it names an anomalous rank) or
    # "code" (more work on a rank by the program's design or data: load imbalance,
    # reported in its own section, naming no anomalous core).
    owner: str = MACHINE
    # What it is about, one of SUBJECTS.
    subject: str = CORE
    # analysis.json's summary key listing the ranks it names ("slow_ranks"), None for
    # none of its own.
    summary_key: Optional[str] = None

    @property
    def of_class(self) -> bool:
        """A finding of one segment class on one rank (a slower cell): its excess is
        per segment of that class (delay cost, off-CPU and waiting causes, plots)."""
        return self.subject == CLASS

    def to_json(self) -> dict[str, Any]:
        """What analysis.json lists of the kind (``kinds``)."""
        return {
            "verdict": self.verdict,
            "transient": self.transient,
            "word": self.word,
            "size_key": self.size_key,
            "owner": self.owner,
        }
