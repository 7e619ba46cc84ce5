#!/usr/bin/env python3
"""How well `perfvar analyze` names injected anomalies: runs tests/validation's twin programs
(two identical compute segments per step, A = Barrier -> Allreduce, B = Allreduce -> Barrier) and
unchanged real programs (the demo's stencil, and programs you built: CloverLeaf, TeaLeaf, CoMD,
...) with 2 ranks under
perfvar-run, T trials per case, and prints a markdown table of hit rates per program and case.

  tools/validate.py [--programs twins,stencil,NAME...] [--run NAME=BINARY]
                    [--args NAME=ARGS] [--input NAME=FILE[:AS]] [--build DIR]
                    [--trials T] [--cases LIST] [--steps N] [--work DIR] [--keep]
                    [--json PATH] [--short] [--mpi openmpi|mpich] [--mpiexec PATH]
                    [--rejudge JSON] [--setting PERFVAR_NAME=VALUE ...] [--min-cost PCT]
  tools/validate.py --doc docs/validation.md --from RUNS.json [--from RUNS.json ...]

Cases: clean (no injection: expect no anomalous core where the host witness measured the CPUs
within 5 % of each other, and the core of a rank whose CPU it measured 15 % or more slower named
slower, by a slow core or by a finding whose fixed-work probes measured it: a transient so
measured is a slower core while it lasted), seg10/seg3/seg1/seg03 (+10/3/1/0.3 % of work in A
on one rank: more work, a load_imbalance of that rank in A, never a slower core), core (+5 % of work in A and B: a
load_imbalance of the rank), busy (a spinning process pinned on the rank's CPU: noisy_core), phase (+10 % in A and B during steps 40 %..70 %: slow_phase whose
window overlaps the injected one by half of each). Trials alternate the injected rank, the CPU
placement and the language (C / Fortran) independently.

A trial hits when the expected (rank, kind[, segment A or window]) is among the anomalies. Any
other verdict (slow_segment, slow_core, noisy_core: another rank, kind or segment) is a wrong
name; a load imbalance that hits nothing injected is the code's, listed apart ("the code: ...");
injected work named as a slow segment of its rank and class whose fixed-work probes could not
tell it from a slower core is counted apart ("injected work the probes could not tell from a
slower core"), neither a hit nor a wrong name; "of them naming another rank" counts the trials with a wrong name of a rank nothing was
injected into (the targets' "nobody else", "the other rank in none"). A slow_phase is a
transient (a shift that came and went names no anomalous core): it hits an injected phase of its
rank with its window, and is otherwise listed apart ("trials with other transients": on a shared
host, its hiccups), neither a hit nor a wrong name. Other kinds (migrated, shared_cpu...) are
shown as information. The rules are tests/tools/verdicts.py's. A rank whose start-up calibration
failed, with no other rank on its host to lend it a t_min/t_diff, is not judged: its trial says
"not judged, no calibration" and a line under the table lists those trials (scored as they are:
a miss there is the calibration's, not the verdict's).

Real programs (tools/validation/programs.py) are given built, for the MPI of --mpi: each as
--run NAME=BINARY, with --args NAME="its arguments" and --input NAME=FILE[:AS] for every file its
run directory needs (an input deck, as the name the program reads); the stencil is this build
tree's (for MPICH compiled from examples/stencil). Each is injected from outside, unchanged:
PERFVAR_INJECT (docs/tracing.md) adds work of x % of a segment's own duration on one rank, in one
segment class: the class with the most compute time on both ranks in a clean reference run of
the same binary (tools/validation/classes.py). Cases: clean; seg10 / seg3 (+10 % / +3 % in that
class: a hit when that rank and class are named); busy (a spinning process on the rank's CPU) and
duty (a process busy 5 ms of every 20 ms there): a hit when the rank is named by any verdict;
phase (+10 % in every class from 40 % to 70 % of the part of the reference run where the classes
the verdict can judge ran, its set-up before and report after left out: slow_phase with its
window); slowed (stencil only: its own --slow-rank 1 --slow-factor 3, rank 1 to be named);
long10 (+10 % in the longer kind only, where the analysis splits that class in two kinds of work
(perfvar.read.modes; PERFVAR_INJECT's longer=, the split measured on the reference run): a hit
when that rank and the longer kind are named; not run where the class is one kind).
Each seg trial also measures from the trace how much longer the class ran on the rank
("class x": its median over the other rank's in the same run; "clean x": the same in the
reference run, the ranks' own difference in that class).
Where the run read the counters (PERFVAR_METRICS), each trial of a real program also prints each
rank's measured share of time off its CPU ("off CPU r0 1.2%, r1 48.0%"; analysis.json
ranks[].cpu_time), and for a core it names (noisy or slow, headline or minor) what else ran on
that core's CPU over the run ("beside the named cores: r0 cpu1: others 205 ms, steal 20 ms:
kdamond.0 75 ms"; the finding's evidence on_its_cpu).

The host, measured outside perfvar: beside every trial, tests/validation/cpu_speed runs on each
rank's CPU, timing a fixed chain of additions every 100 ms, and the trial prints each CPU's mean
time over the fastest's ("vCPU speed cpu0 x1.00, cpu1 x1.52"). A shared host can run one vCPU's
chain at half speed for seconds, with no steal counted. A wrong name of a slower core
(slow_core, slow_segment) whose rank's CPU measured x1.15 or more stays a wrong name, and is
also counted in "wrong names on a slower vCPU": the host, not the analysis, may have made that
core slower. A hint, not proof: the chain is one kind of work, a program another. Each rank also
records the kernel's accounting of its CPU (rank-N.json neighbours), and the trial prints the
share of the run other tasks took there ("others on the CPU r0 2.4%, r1 0.3%"); a wrong name of
a noisy core whose CPU other tasks took 1 % of the run (and 4 kernel ticks) or more beyond every
other rank's CPU is counted in "on a CPU other tasks took": time truly lost, to the kernel's own
threads or the launcher. "trials whose wrong names the host explains" counts the trials whose
every wrong name is one of these two. "hits on an even host" gives the hits among the trials
whose CPUs the witness measured within 5 % of each other ("1 of 2"; "-" where it measured none
so): the rate the verdict reaches where the host did not make one core slower; "hits on a
slower CPU" the hits among the trials where it measured a rank's CPU 15 % or more slower (in a
clean case, that rank's core named slower by its probes: the verdict against the host's truth).

The program, measured outside perfvar: the demo's stencil runs with --timing, its own timer
(Fortran's system_clock) around the compute between MPI_Waitall and MPI_Allreduce, 99 % of a
rank's compute; CoMD times its force loop and prints each timer's fastest and slowest rank
(tools/validation/programs.py OWN_CLOCKS); the trial prints how much slower each rank timed it
than the other ("the program's own timer r0 +38.1%, r1 -27.6%"). A wrong name of a slower
core, or of a slow segment in the class timed, whose rank the program timed slower by at least
half of the finding's shift is listed as confirmed: the rank really computed slower, by a
clock perfvar does not read. "trials whose wrong names the program's own timer confirms"
counts the trials whose every wrong name is confirmed (tests/tools/verdicts.py OwnTimer).

--rejudge JSON runs nothing: the trials an earlier run wrote with --json, whose traces it kept
(--work or --keep), are analysed again by this tree's rules and the table is printed (a rule
changed on the analysis side, measured on the same runs). --min-cost PCT: the headline's delay
cost threshold the analyses use (`perfvar analyze --min-cost`; default perfvar's), for the rates
at another threshold, on new runs or with --rejudge on kept ones.

--short (ctest validate.gross): +100 % of work in one class and in both (more work, beyond the
probes' systematic margin), +50 % for a phase, and the busy core, one trial per case with one
retry on a miss (the other rank injected, on the other CPU); exits 1 when a case misses twice.
For a real program (validate.gross.stencil) --short is +200 % in its largest class (3x its
work: a shared host ran one rank's compute up to 1.6x the other's for whole runs), which also
must measure 1.875x..4.8x the other rank's in the trace, as measured or with the CPUs'
difference by the witness or by the program's own timer taken out; where that class holds
most of the rank's compute (the stencil's), a load imbalance of the rank in any class is a
hit too. Otherwise the exit code is 0 unless a trial could not run: the full
benchmark reports rates, it does not assert them.

Needs numpy and taskset; perfvar is imported from postproc/ (its trace and metadata readers).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "postproc"))
sys.path.insert(0, str(ROOT / "tests" / "tools"))
sys.path.insert(0, str(ROOT / "tools"))
from perfvar._spec import TraceName  # noqa: E402
from perfvar.detect import load_imbalance, noisy_core, slow_core, slow_phase  # noqa: E402
from perfvar.detect.slow_core import COMMON_SHARE  # noqa: E402
from perfvar.read.segments import parse_segment_key  # noqa: E402
from perfvar.read.trace import read_trace  # noqa: E402
from perfvar.result import Analysis, ResultFormatError, load  # noqa: E402
from perfvar.stats.cells import NO_CALIBRATION  # noqa: E402
from run_mpi import mpiexec_cmd  # noqa: E402
from validation import disturb, host, programs, runs  # noqa: E402
from validation.classes import (  # noqa: E402
    Pattern, apart_text, compute_share, judged_span, largest_class, median_ratio, range_text,
    selected, split_ns)
from verdicts import SLOWER, Injected, OwnTimer, score  # noqa: E402
BIND = ROOT / "tests" / "tools" / "bind_rank.sh"
KEY_RE = re.compile("^" + re.escape(TraceName.SEGMENT_PREFIX) + r"(?P<a>[^@;]+)@.*?\+0x[0-9a-fA-F]+"
                    + re.escape(TraceName.SITE_SEPARATOR) + r"(?P<b>[^@;]+)@")
# The kinds each case expects: injected work is more work (the code's), a busy CPU a noisy
# core, a stretch of the run a phase.
MORE_WORK, NOISY, PHASE = load_imbalance.KIND, noisy_core.KIND, slow_phase.KIND
CLASS_A = ("MPI_Barrier", "MPI_Allreduce")
CLASS_B = ("MPI_Allreduce", "MPI_Barrier")


@dataclass(frozen=True)
class Case:
    name: str
    injected: str
    kind: str | None  # the verdict expected; None: none at all
    pct: float = 0.0
    segment: str = "A"  # twin's --slow-segment
    phase: tuple[float, float] | None = None
    busy: bool = False
    target: float = 1.0  # hit rate to meet (clean: share of runs naming nothing)
    target_text: str = "100%"
    duty: bool = False  # real programs: a process busy 5 of 20 ms on the rank's CPU
    slowed: bool = False  # real programs: the program's own injection (rank 1)
    longer: bool = False  # real programs: the longer kind of a class of two (read.modes)
    ratio: tuple[float, float] | None = None  # --short: the class's measured slowdown range


FULL = [
    Case("clean", "none", None, target=0.95,
         target_text="runs with any anomaly <= 5%"),
    Case("seg10", "+10% in A", MORE_WORK, 10),
    Case("seg3", "+3% in A", MORE_WORK, 3, target=0.95, target_text=">= 95%"),
    Case("seg1", "+1% in A", MORE_WORK, 1, target=0.90, target_text=">= 90%"),
    Case("seg03", "+0.3% in A", MORE_WORK, 0.3, target=0.50, target_text=">= 50%"),
    Case("core", "+5% in A and B", MORE_WORK, 5, "all", target=0.90, target_text=">= 90%"),
    Case("busy", "busy process on the rank's CPU", NOISY, busy=True),
    Case("phase", "+10% in A and B, steps 40-70%", PHASE, 10, "all", (0.4, 0.7),
         target=0.90, target_text=">= 90%"),
]
SHORT = [
    Case("seg", "+100% in A", MORE_WORK, 100, target_text="hit in 2 attempts"),
    Case("core", "+100% in A and B", MORE_WORK, 100, "all",
         target_text="hit in 2 attempts"),
    Case("busy", "busy process on the rank's CPU", NOISY, busy=True,
         target_text="hit in 2 attempts"),
    Case("phase", "+50% in A and B, steps 40-70%", PHASE, 50, "all", (0.4, 0.7),
         target_text="hit in 2 attempts"),
]

# Real programs: "A" is the largest class of the reference run, "all" every class; phase is a
# fraction of the reference run's duration.
REAL = [
    Case("clean", "none", None, target=0.90, target_text="9 of 10 name nobody"),
    Case("seg10", "+10% in its largest class", MORE_WORK, 10),
    Case("seg3", "+3% in its largest class", MORE_WORK, 3, target=0.8,
         target_text=">= 8 of 10"),
    Case("long10", "+10% in the longer kind of its largest class", MORE_WORK, 10,
         longer=True),
    Case("busy", "busy process on the rank's CPU", "any", busy=True),
    Case("duty", "process busy 5 of 20 ms on the rank's CPU", "any", duty=True, target=0.8,
         target_text=">= 8 of 10"),
    Case("phase", "+10% in every class, 40-70% of its steps", PHASE, 10, "all", (0.4, 0.7),
         target=0.9, target_text=">= 90%"),
    Case("slowed", "its own: rank 1 does 3x the work", "any", slowed=True),
]
# The class's ratio to the other rank's carries the two CPUs' own difference in speed
# in that run besides the injected factor: vCPUs of a shared host measured up to 1.6x
# apart for whole runs (the stencil's fastest step per rank, 1.25 ms against 1.99 ms), and
# the stencil's own timer had one rank's compute +22.8 % and +47.7 % over the other's in
# the two attempts of one CI run, where a +50 % injection read x1.055 and x0.986 and
# nothing was named: +50 % is not gross on such a host, 3x is. The bounds are the
# injected factor over and times that 1.6, and apply to the ratio as measured, with the
# difference the host witness measured taken out (ratio_beside_cpus), or with the one the
# program's own timer measured taken out (ratio_beside_own), any; below, they catch an
# injection that did not happen.
HOST_SPREAD = 1.6
GROSS_PCT = 200
GROSS_FACTOR = 1 + GROSS_PCT / 100
REAL_SHORT = [
    Case("seg", f"+{GROSS_PCT}% in its largest class", MORE_WORK, GROSS_PCT,
         ratio=(round(GROSS_FACTOR / HOST_SPREAD, 3), round(GROSS_FACTOR * HOST_SPREAD, 3)),
         target_text="hit in 2 attempts"),
]


@dataclass
class Reference:
    """A real program's clean reference run: its largest class and how long it ran."""

    key: str
    pattern: Pattern
    run_ns: float
    # (first start, last end), ns: the part of the run with classes the verdict judges
    # (validation.classes.judged_span); a phase is placed within it
    judged_ns: tuple[float, float]
    ratio: dict[int, float]  # rank -> its class median over the other rank's, clean
    split_ns: float | None = None  # where the analysis splits it in two kinds; None: one
    longer_ratio: dict[int, float] = field(default_factory=dict)  # ratio, the longer kind


def skipped(case: Case, ref: Reference | None) -> str | None:
    """Why a real program's case cannot run, None when it can."""
    if case.longer and (ref is None or ref.split_ns is None):
        return "its largest class is one kind of work"
    return None


@dataclass
class Trial:
    case: str
    trial: int
    program: str
    rank: int
    cpus: str
    hit: bool = False
    found: bool = False  # a hit when minor findings count too (validate.found)
    wrong: bool = False
    other_rank: bool = False  # a wrong name of a rank nothing was injected into
    named: list[str] = field(default_factory=list)
    info: list[str] = field(default_factory=list)  # informational kinds (migrated, shared_cpu...)
    transients: list[str] = field(default_factory=list)  # shifts that came and went, unmatched
    code: list[str] = field(default_factory=list)  # load imbalance that hit nothing injected
    untold: list[str] = field(default_factory=list)  # injected work named, core or code untold
    window_ns: tuple[float, float] | None = None  # injected, trace time
    run_s: float = 0.0
    analysis_s: float = 0.0
    trace: str = ""
    error: str | None = None
    suite: str = "twins"  # twins, stencil, or the name of a program given with --run
    class_ratio: float | None = None  # real programs, seg and clean: the largest class's ratio
    clean_ratio: float | None = None  # the same in the clean reference run
    longer_ns: float | None = None  # long10: only segments longer than this were slowed
    steal_ms: dict[str, float] | None = None  # CPU -> the host's steal while it ran (ms)
    cpu_slowdown: dict[str, float] | None = None  # CPU -> its addition chain over the fastest's
    slower_cpu: list[str] = field(default_factory=list)  # wrong names of a slower vCPU's rank
    others: dict[str, float] | None = None  # rank -> share of its run other tasks took on its CPU
    others_tick: float = 0.0  # the kernel's tick, as a share of the shortest rank's run
    busier_cpu: list[str] = field(default_factory=list)  # wrong names of a busier CPU's rank
    host_explained: bool = False  # every wrong name is in slower_cpu or busier_cpu
    own_slower: dict[str, float] | None = None  # rank -> slower by the program's own timer
    own_timer: list[str] = field(default_factory=list)  # wrong names that timer confirms
    timer_confirmed: bool = False  # every wrong name is in own_timer
    off_cpu: dict[str, float] | None = None  # rank -> share off its CPU (counters)
    beside: list[str] = field(default_factory=list)  # what else ran on a named core's CPU
    unjudged: list[int] = field(default_factory=list)  # ranks with no t_min/t_diff: not judged


class TrialError(Exception):
    """A trial that could not run or be analysed (not a miss)."""


def placement(t: int) -> tuple[int, str, str]:
    """Trial t's injected rank, CPU list and language. Over 8 trials every (rank, placement,
    language) combination occurs once, and any 2 consecutive trials use both languages."""
    rank = t % 2
    cpus = "0 1" if (t // 2) % 2 == 0 else "1 0"
    program = "c" if (t + t // 4) % 2 == 0 else "f"
    return rank, cpus, program


def twin_args(case: Case, rank: int, steps: int) -> list[str]:
    args = ["--steps", str(steps)]
    if case.pct > 0:
        args += ["--slow-rank", str(rank), "--slow-pct", str(case.pct),
                 "--slow-segment", case.segment]
    if case.phase:
        args += ["--phase", str(case.phase[0]), str(case.phase[1])]
    return args


def class_ids(trace) -> tuple[int, int]:
    """Indices of classes A and B in trace.segments (each exactly one)."""
    found = {CLASS_A: [], CLASS_B: []}
    for i, key in enumerate(trace.segments):
        m = KEY_RE.match(key)
        if m and (m["a"], m["b"]) in found:
            found[(m["a"], m["b"])].append(i)
    if len(found[CLASS_A]) != 1 or len(found[CLASS_B]) != 1:
        raise TrialError(f"expected one class A and one class B, found {found}")
    return found[CLASS_A][0], found[CLASS_B][0]


def step_samples(trace, cls: int, rank: int, steps: int):
    """The rank's samples of one class in start order; sample k is step k, since twin opens step 0
    with the Barrier call site that closes every step. Raises TrialError if that does not hold."""
    s = trace.samples
    mine = s[(s["segment"] == cls) & (s["rank"] == rank) & (s["thread"] == 0)]
    if len(mine) != steps:
        raise TrialError(f"rank {rank} has {len(mine)} samples of {trace.segments[cls]}, "
                         f"expected one per step ({steps})")
    return mine[mine["start_ticks"].argsort(kind="stable")]


def injected_window(trace, a: list, b: list, case: Case, stdout: str) -> tuple[float, float]:
    """[start, end] in trace ns of the slowed segments: from the start of the first slowed step's
    A to the end of the last slowed segment (A and B samples of the injected rank, by step). The
    steps are those twin says it slowed, [lo, hi)."""
    m = re.search(r"in segment \w+, steps (\d+)\.\.(\d+)", stdout)
    if not m or not 0 <= int(m[1]) < int(m[2]) <= len(a):
        raise TrialError(f"twin did not state a slowed step range within the run: {stdout!r}")
    lo, hi = int(m[1]), int(m[2])
    last = (b if case.segment == "all" else a)[hi - 1]
    start = float(trace.trace_ns(a[lo]["start_ticks"]))
    end = float(trace.trace_ns(last["start_ticks"])) + float(last["duration_ns"])
    return start, end


# A CPU whose additions took this much longer than the fastest's over the run ran slower. The
# chain's mean moves by up to 1.2x between two CPUs of a shared host in a quiet run, so below
# this a wrong name's CPU being the slower one is as likely a coincidence.
SLOWER_CPU = 1.15


# Every CPU of a trial within this of the fastest, by the witness: the host left it even.
EVEN_HOST = 1.05


def even_host(tr: Trial) -> bool:
    """Whether the witness measured the trial's CPUs, all of them, within EVEN_HOST."""
    return bool(tr.cpu_slowdown) and max(tr.cpu_slowdown.values()) <= EVEN_HOST


def slower_cpu_ranks(tr: Trial) -> set[int]:
    """The ranks whose CPU the host witness measured slower while the trial ran."""
    cpus = tr.cpus.split()
    return {r for r, cpu in enumerate(cpus)
            if (tr.cpu_slowdown or {}).get(cpu, 1.0) >= SLOWER_CPU}


def busier_cpu_ranks(tr: Trial) -> set[int]:
    """The ranks whose CPU other tasks took more of than every other rank's CPU (tr.others,
    from each rank's record of the kernel's accounting; host.busier)."""
    return host.busier({int(r): f for r, f in (tr.others or {}).items()}, tr.others_tick)


def hit_of(s, injected: list) -> bool:
    """A score's hit: an injected anomaly named (a slower core the witness measured: every
    one, and nothing else), or with nothing injected nothing named."""
    if not injected:
        return not s.named
    if all(x.kind == SLOWER for x in injected):
        return len(s.hits) == len(injected) and not s.wrong
    return bool(s.hits)


def witnessed(tr: Trial) -> list[Injected]:
    """A clean trial's truth by the host witness: the core of every rank whose CPU it
    measured SLOWER_CPU or more slower, to be named slower."""
    return [Injected(SLOWER, r) for r in sorted(slower_cpu_ranks(tr))]


def found(injected: list, analysis: Analysis, labels: dict, slower: set[int]) -> bool:
    """Whether the trial hits when the minor findings (below the headline's cost
    threshold) count too: what the detectors found, whatever its cost (a clean run:
    nothing found at all)."""
    return hit_of(score(injected, analysis, labels, with_minor=True, slower_cpu_ranks=slower),
                  injected)


def own_timer(tr: Trial, analysis: Analysis) -> OwnTimer | None:
    """What the program's own timer measured in the trial (programs.OWN_CLOCKS), with the
    keys of the classes it times; None for a program without one or a run that did not
    print it."""
    clock = programs.OWN_CLOCKS.get(tr.suite)
    if clock is None or not tr.own_slower:
        return None
    keys = selected([x.key for x in analysis.segments], clock.timed)
    return OwnTimer({int(r): f for r, f in tr.own_slower.items()}, keys)


def take_score(tr: Trial, case: Case, injected: list, analysis: Analysis, labels: dict,
               timer: OwnTimer | None = None) -> None:
    """Sets tr's verdict fields from analysis.json scored against ``injected``; ``timer``:
    what the program's own timer measured (own_timer), None for the twins."""
    slower = slower_cpu_ranks(tr)
    if tr.trace and tr.others is None:
        share, tr.others_tick = host.others_share(Path(tr.trace), [0, 1])
        tr.others = {str(r): f for r, f in share.items()}
    s = score(injected, analysis, labels, slower_cpu_ranks=slower,
              busier_cpu_ranks=busier_cpu_ranks(tr), own_timer=timer)
    tr.named, tr.info, tr.wrong, tr.transients = s.named, s.info, s.wrong, s.transients
    tr.code, tr.untold = s.code, s.untold
    tr.other_rank = bool(s.other_ranks)
    tr.slower_cpu, tr.busier_cpu, tr.host_explained = s.slower_cpu, s.busier_cpu, s.host_explained
    tr.own_timer, tr.timer_confirmed = s.own_timer, s.timer_confirmed
    tr.hit = hit_of(s, injected)
    tr.found = found(injected, analysis, labels, slower)
    tr.unjudged = unjudged_ranks(analysis)


def unjudged_ranks(analysis: Analysis) -> list[int]:
    """The ranks whose segments the analysis could not judge for want of a t_min/t_diff:
    their start-up calibration failed and no other rank on their host had one to lend. A
    miss there is the calibration's, not the verdict's."""
    return [r.rank for r in analysis.ranks if r.judgements.get(NO_CALIBRATION)]


def judge(tr: Trial, case: Case, analysis: Analysis, a_key: str, b_key: str) -> None:
    """Sets tr.hit, tr.wrong, tr.named and tr.info from analysis.json's anomalies, by the
    rules of tests/tools/verdicts.py."""
    injected = witnessed(tr)
    if case.kind is not None:
        one = case.kind == MORE_WORK and case.segment == "A"
        injected = [Injected(case.kind, tr.rank, a_key if one else None, tr.window_ns)]
    take_score(tr, case, injected, analysis, {a_key: "A", b_key: "B"})


@dataclass
class Setup:
    build: Path
    mpi: str
    mpiexec: list[str]
    steps: int
    work: Path
    run_env: dict
    analyze_env: dict
    keep_runs: bool = False  # keep real programs' run directories
    min_cost_pct: float | None = None  # perfvar analyze --min-cost (None: its default)
    cpu_speed: str | None = None  # the host witness (tests/validation/cpu_speed), if built


def analyze(st: Setup, out: Path, dest: Path | None = None) -> tuple[Analysis, float]:
    """`perfvar analyze` of the trace in out with the analysis under judgement (st.analyze_env),
    its JSON into dest (default out/analysis.json): (analysis.json, seconds it took). The verdict
    is read from the JSON; a 5 MB HTML report per trial would be of no use."""
    dest = dest or out / "analysis.json"
    t0 = time.monotonic()
    threshold = [] if st.min_cost_pct is None else ["--min-cost", f"{st.min_cost_pct:g}"]
    q = subprocess.run([sys.executable, "-m", "perfvar", "analyze", "--no-html", "--json",
                        str(dest), *threshold, str(out)],
                       env=st.analyze_env, capture_output=True, text=True, timeout=1800)
    if q.returncode != 0:
        raise TrialError(f"perfvar analyze exited {q.returncode}: {q.stderr[-400:]}")
    return load(str(dest)), time.monotonic() - t0


def run_trial(st: Setup, case: Case, t: int, number: int, label: str) -> Trial:
    """Runs and judges one trial with trial t's placement; number is what the report shows."""
    rank, cpus, lang = placement(t)
    program = st.build / "tests" / "validation" / f"twin_{lang}_{st.mpi}"
    tr = Trial(case.name, number, {"c": "C", "f": "Fortran"}[lang], rank, cpus)
    out = st.work / label
    tr.trace = str(out)
    shutil.rmtree(out, ignore_errors=True)
    cmd = st.mpiexec + [str(BIND), cpus, str(st.build / "bin" / "perfvar-run"), "-o", str(out),
                        str(program)] + twin_args(case, rank, st.steps)
    try:
        t0 = time.monotonic()
        with (disturb.busy(cpus.split()[rank] if case.busy else None), host.Steal() as steal,
              host.Speed(st.cpu_speed, cpus.split()) as speed):
            p = subprocess.run(cmd, env=st.run_env, capture_output=True, text=True, timeout=600)
        tr.run_s = time.monotonic() - t0
        tr.steal_ms, tr.cpu_slowdown = steal.ms, speed.slowdown()
        if p.returncode != 0 or "twin: steps=" not in p.stdout:
            raise TrialError(f"mpiexec exited {p.returncode}: {(p.stderr or p.stdout)[-400:]}")
        analysis, tr.analysis_s = analyze(st, out)
        trace = read_trace(str(out))
        a, b = class_ids(trace)
        by_step = {r: [step_samples(trace, c, r, st.steps) for c in (a, b)] for r in (0, 1)}
        if case.phase:
            tr.window_ns = injected_window(trace, *by_step[rank], case, p.stdout)
        judge(tr, case, analysis, trace.segments[a], trace.segments[b])
    except (TrialError, subprocess.TimeoutExpired, OSError, ValueError, KeyError,
            ResultFormatError) as e:
        tr.error = f"{type(e).__name__}: {e}"
    return tr


def run_real(st: Setup, prog: programs.Program, out: Path, cpus: str, args: list[str],
             env: dict, disturbance) -> tuple[dict, float, float, dict[str, float],
                                             dict[str, float], str]:
    """Runs prog with 2 ranks on cpus under perfvar-run (trace in out, its files in out's run
    directory) beside disturbance, then analyses it: (analysis.json, run s, analysis s, the
    host's steal per CPU while it ran in ms, each CPU's slowdown by the host witness, the
    program's standard output)."""
    rundir = out.with_name(out.name + "-run")
    prog.prepare(rundir)
    shutil.rmtree(out, ignore_errors=True)
    cmd = st.mpiexec + [str(BIND), cpus, str(st.build / "bin" / "perfvar-run"), "-o", str(out),
                        str(prog.binary)] + prog.args + args
    t0 = time.monotonic()
    with disturbance, host.Steal() as steal, host.Speed(st.cpu_speed, cpus.split()) as speed:
        p = subprocess.run(cmd, env=env, cwd=rundir, capture_output=True, text=True,
                           timeout=1200)
    run_s = time.monotonic() - t0
    if p.returncode != 0:
        raise TrialError(f"mpiexec exited {p.returncode}: {(p.stderr or p.stdout)[-400:]}")
    analysis, analysis_s = analyze(st, out)
    if not st.keep_runs:
        shutil.rmtree(rundir, ignore_errors=True)
    return analysis, run_s, analysis_s, steal.ms, speed.slowdown(), p.stdout


def real_env(st: Setup) -> dict:
    return dict(st.run_env, OMP_NUM_THREADS="1")


def reference(st: Setup, prog: programs.Program) -> Reference:
    """A clean run of prog: its largest class (the most compute time on both ranks) and its
    duration (ns, the last segment's end)."""
    out = st.work / f"{prog.name}-reference"
    run_real(st, prog, out, "0 1", [], real_env(st), disturb.busy(None))
    trace = read_trace(str(out))
    key, pattern = largest_class(trace, (0, 1))
    s = trace.samples
    end = max(float(trace.trace_ns(t)) + float(d) for t, d in
              zip(s["start_ticks"][-64:], s["duration_ns"][-64:]))
    end = max(end, float(trace.trace_ns(s["start_ticks"].max())))
    ratio = {r: median_ratio(trace, pattern, r) or 1.0 for r in (0, 1)}
    split = split_ns(trace, pattern)
    longer = ({r: median_ratio(trace, pattern, r, split) or 1.0 for r in (0, 1)}
              if split is not None else {})
    return Reference(key, pattern, end, judged_span(trace, (0, 1)), ratio, split, longer)


def program_args(prog: programs.Program, case: Case) -> list[str]:
    """The program's arguments in a case: its own injection (slowed), its own timer."""
    args = list(prog.slowed_args if case.slowed and prog.slowed_args else [])
    clock = programs.OWN_CLOCKS.get(prog.name)
    return args + (list(clock.args) if clock else [])


def own_slower(prog: programs.Program, stdout: str) -> dict[str, float] | None:
    """rank -> how much slower than the other its own timer measured it (OwnClock.slower),
    None for a program without one."""
    clock = programs.OWN_CLOCKS.get(prog.name)
    return clock.slower(stdout) if clock else None


def run_real_trial(st: Setup, prog: programs.Program, ref: Reference, case: Case, t: int,
                   number: int, label: str) -> Trial:
    """One trial of a real program with trial t's placement (the slowed case: rank 1)."""
    rank, cpus, _ = placement(t)
    if case.slowed:
        rank = 1
    tr = Trial(case.name, number, prog.name, rank, cpus, suite=prog.name)
    out = st.work / label
    tr.trace = str(out)
    env = real_env(st)
    pattern = ref.pattern if case.segment == "A" else Pattern()
    if case.pct > 0:
        spec = f"rank={rank},pct={case.pct:g}" + (pattern.env() if case.segment == "A" else "")
        if case.longer and ref.split_ns is not None:
            tr.longer_ns = ref.split_ns
            spec += f",longer={ref.split_ns / 1e6:.3f}"
        if case.phase:  # the share of the judged part of the run, in trace seconds
            first, last = ref.judged_ns
            lo, hi = ((first + f * (last - first)) / 1e9 for f in case.phase)
            spec += f",after={lo:.3f},until={hi:.3f}"
            tr.window_ns = (lo * 1e9, hi * 1e9)
        env["PERFVAR_INJECT"] = spec
    cpu = cpus.split()[rank]
    noise = (disturb.busy(cpu) if case.busy else
             disturb.duty(cpu, str(st.build / "tests" / "validation" / "duty")) if case.duty
             else disturb.busy(None))
    try:
        analysis, tr.run_s, tr.analysis_s, tr.steal_ms, tr.cpu_slowdown, stdout = run_real(
            st, prog, out, cpus, program_args(prog, case), env, noise)
        tr.own_slower = own_slower(prog, stdout)
        judge_real(tr, case, analysis, pattern)
        if tr.class_ratio is not None and case.pct > 0:
            tr.clean_ratio = (ref.longer_ratio if case.longer else ref.ratio)[rank]
    except (TrialError, subprocess.TimeoutExpired, OSError, ValueError, KeyError,
            ResultFormatError) as e:
        tr.error = f"{type(e).__name__}: {e}"
    return tr


def off_cpu(analysis: Analysis) -> dict[str, float] | None:
    """rank -> the share of its time the counters measured off its CPU (analysis.json
    ranks[].cpu_time), None when the run read no counters."""
    out = {str(r.rank): r.cpu_time["off_cpu_fraction"] for r in analysis.ranks if r.cpu_time}
    return out or None


def beside_cores(analysis: Analysis) -> list[str]:
    """For each core named in the headline or as minor (noisy_core, slow_core) whose evidence
    says what else ran on its CPU (on_its_cpu, perfvar.verdict.neighbours): the other tasks'
    time there and the most of them ("r0 cpu1: others 205 ms, steal 20 ms: kdamond.0 75 ms")."""
    out = []
    for an in analysis.anomalies + analysis.minor:
        n = (an.evidence or {}).get("on_its_cpu")
        if an.kind not in (NOISY, slow_core.KIND) or not n:
            continue
        others = f"others {n['others_ns'] / 1e6:.0f} ms, " if n["others_ns"] is not None else ""
        tasks = ", ".join(f"{t['comm']} {t['ns'] / 1e6:.0f} ms" for t in n["tasks"])
        out.append(f"r{an.rank} cpu{n['cpu']}: {others}steal {n['steal_ns'] / 1e6:.0f} ms"
                   + (f": {tasks}" if tasks else ""))
    return list(dict.fromkeys(out))


def longer_kind(key: str) -> bool:
    """Whether ``key`` is the longer side of a class split by duration (read.modes)."""
    mode = parse_segment_key(key).mode
    return mode is not None and mode[0] == "above"


def judge_real(tr: Trial, case: Case, analysis: Analysis, pattern: Pattern) -> None:
    """Sets tr.hit, tr.found, tr.wrong, tr.named, tr.info (and for a seg case the class's
    measured ratio) from a real program's analysis.json and trace (tr.trace); ``pattern``
    selects the injected class."""
    rank = tr.rank
    keys = [x.key for x in analysis.segments]
    injected: list[Injected] = []
    labels: dict[str, str] = {}
    if case.kind == MORE_WORK:
        targets = selected(keys, pattern)
        if not targets:
            raise TrialError(f"no class of the trace matches {pattern}")
        if case.longer:  # the class's longer kind, where the analysis split it off
            targets = [k for k in targets if longer_kind(k)] or targets
        injected = [Injected(MORE_WORK, rank, k) for k in targets]
        labels = {k: "C" for k in targets}
        trace = read_trace(tr.trace)
        if compute_share(trace, pattern, rank) >= COMMON_SHARE:
            # the class is most of the rank's compute (the stencil's): more work there
            # is more work on the rank, which may be told over all its classes
            injected.append(Injected(MORE_WORK, rank))
        # in the same run: the host's load shifts both ranks, not one (the reference's
        # ratio, from another run, is shown beside it)
        tr.class_ratio = median_ratio(trace, pattern, rank, tr.longer_ns or 0.0)
    elif case.kind is not None:
        injected = [Injected(case.kind, rank, None,
                             tuple(tr.window_ns) if tr.window_ns else None)]
    else:  # clean: the slower cores the host witness measured, and how far apart the
        # host alone ran the ranks' largest class
        injected = witnessed(tr)
        if pattern.to:
            tr.class_ratio = median_ratio(read_trace(tr.trace), pattern, rank)
    timer = own_timer(tr, analysis)
    take_score(tr, case, injected, analysis, labels, timer)
    tr.off_cpu = off_cpu(analysis)
    tr.beside = beside_cores(analysis)
    require_injection_shown(tr, case, injected, timer)


def require_injection_shown(tr: Trial, case: Case, injected: list[Injected],
                            timer: OwnTimer | None) -> None:
    """A --short case's trial whose class did not measure within the case's bounds is a miss,
    whatever was named: the injection itself did not show. ``timer``: the program's own, or
    None."""
    shown = ratio_beside_cpus(tr)
    # Any figure within the bounds shows the injection: the witness's addition chain can
    # miss a slowdown of the class as well as see one the class did not have.
    figures = (tr.class_ratio, shown, ratio_beside_own(tr, timer, injected_keys(injected)))
    if case.ratio and not any(x is not None and case.ratio[0] <= x <= case.ratio[1]
                              for x in figures):
        tr.hit = False  # the injection itself did not show: a miss
        beside = f" (x{shown:.3f} with the CPUs' speeds)" if shown != tr.class_ratio else ""
        if figures[2] is not None:
            beside += f" (x{figures[2]:.3f} with the program's own timer)"
        tr.info.append(f"class measured x{tr.class_ratio:.3f}{beside}, expected "
                       f"{case.ratio[0]}..{case.ratio[1]}")


def ratio_beside_cpus(tr: Trial) -> float | None:
    """The class's ratio to the other rank's with the two CPUs' own difference taken out,
    as the host witness measured it beside the run (the injected rank's CPU x1.10 slower
    divides the ratio by 1.10); the ratio as measured where the witness has no figure."""
    if tr.class_ratio is None or not tr.cpu_slowdown:
        return tr.class_ratio
    cpus = tr.cpus.split()
    mine, other = tr.cpu_slowdown.get(cpus[tr.rank]), tr.cpu_slowdown.get(cpus[1 - tr.rank])
    if not mine or not other:
        return tr.class_ratio
    return tr.class_ratio * other / mine


def injected_keys(injected: list[Injected]) -> list[str]:
    """The keys of the injected segment classes."""
    return [x.segment for x in injected if x.segment]


def ratio_beside_own(tr: Trial, timer: OwnTimer | None, keys: list[str]) -> float | None:
    """The class's ratio to the other rank's over the ratio of the two ranks' times by the
    program's own timer (own_timer), where that timer times one of the injected classes
    ``keys``: it brackets the class's compute and not the injected work, which runs inside
    the MPI call after it, so what is left is the injection. None without such a timer."""
    if tr.class_ratio is None or timer is None or not set(keys) & set(timer.keys):
        return None
    return tr.class_ratio / (1 + timer.slower[tr.rank])


def rejudge_trial(st: Setup, record: dict, case: Case) -> Trial:
    """A trial of an earlier run (a record of its --json) judged again: its kept trace analysed
    by this tree's analysis (into analysis.rejudged.json beside it), scored as when it ran."""
    known = {k: v for k, v in record.items() if k in Trial.__dataclass_fields__}
    tr = Trial(**dict(known, hit=False, found=False, wrong=False, other_rank=False, named=[],
                      info=[], slower_cpu=[], busier_cpu=[], host_explained=False, others=None,
                      own_timer=[], timer_confirmed=False,
                      transients=[], code=[], untold=[], beside=[], error=None))
    out = Path(tr.trace)
    try:
        if record.get("error") or not (out / "traces.otf2").exists():
            raise TrialError(record.get("error") or f"{out}: no trace kept")
        analysis, tr.analysis_s = analyze(st, out, out / "analysis.rejudged.json")
        if tr.suite == "twins":
            trace = read_trace(str(out))
            a, b = class_ids(trace)
            judge(tr, case, analysis, trace.segments[a], trace.segments[b])
        else:
            pattern = Pattern()
            if case.segment == "A":  # the reference run kept beside the trials
                _, pattern = largest_class(read_trace(str(out.parent / f"{tr.suite}-reference")),
                                           (0, 1))
            judge_real(tr, case, analysis, pattern)
    except (TrialError, subprocess.TimeoutExpired, OSError, ValueError, KeyError,
            ResultFormatError) as e:
        tr.error = f"{type(e).__name__}: {e}"
    return tr


def class_text(tr: Trial) -> str:
    """A real program's trial's class ratio, with the reference run's beside an injected
    one (run_real_trial sets clean_ratio for those only); empty without."""
    if tr.class_ratio is None:
        return ""
    clean = f" (clean x{tr.clean_ratio:.3f})" if tr.clean_ratio is not None else ""
    return f"; class x{tr.class_ratio:.3f}{clean}"


def host_text(tr: Trial) -> str:
    """What the trial measured of the host beside the verdict: time off the CPUs, which
    wrong names fell on a slower or busier CPU, what ran beside the named cores, the
    other tasks' share, the witness's speeds and the steal; "" where nothing was."""
    def shares(label: str, by_rank: dict[str, float] | None) -> str:
        if not by_rank:
            return ""
        return f"; {label} " + ", ".join(f"r{r} {100 * f:.1f}%" for r, f in by_rank.items())

    text = shares("off CPU", tr.off_cpu)
    if tr.slower_cpu:
        text += f" (on a slower vCPU: {', '.join(tr.slower_cpu)})"
    if tr.busier_cpu:
        text += f" (on a CPU other tasks took: {', '.join(tr.busier_cpu)})"
    if tr.own_timer:
        text += f" (the program's own timer confirms: {', '.join(tr.own_timer)})"
    if tr.beside:
        text += f"; beside the named cores: {'; '.join(tr.beside)}"
    text += shares("others on the CPU", tr.others)
    if tr.own_slower:
        text += "; the program's own timer " + ", ".join(
            f"r{r} {100 * f:+.1f}%" for r, f in tr.own_slower.items())
    if tr.cpu_slowdown:
        text += "; vCPU speed " + ", ".join(f"cpu{c} x{f:.2f}"
                                            for c, f in tr.cpu_slowdown.items())
    if tr.steal_ms and any(ms > 0 for ms in tr.steal_ms.values()):
        text += "; host steal " + ", ".join(f"cpu{c} {ms:.0f} ms"
                                            for c, ms in tr.steal_ms.items())
    return text


def trial_line(tr: Trial) -> str:
    status = "ERROR" if tr.error else "hit" if tr.hit else "miss"
    named = ", ".join(tr.named) or "nothing"
    if tr.info:
        named += f" (info: {', '.join(tr.info)})"
    if tr.transients:
        named += f" (transient: {', '.join(tr.transients)})"
    if tr.code:
        named += f" (the code: {', '.join(tr.code)})"
    if tr.untold:
        named += f" (core or code not told: {', '.join(tr.untold)})"
    if tr.wrong:
        named += " [wrong]"
    if tr.unjudged:
        named += " (not judged, no calibration: " + ", ".join(f"r{r}" for r in tr.unjudged) + ")"
    if tr.window_ns:
        named += f"; injected {tr.window_ns[0] / 1e6:.0f}-{tr.window_ns[1] / 1e6:.0f}ms"
    named += class_text(tr) + host_text(tr)
    text = (f"{tr.suite:10} {tr.case:6} trial {tr.trial:2}  {tr.program:7}  rank {tr.rank}  "
            f"cpus {tr.cpus}  "
            f"{status:5}  named: {named}  run {tr.run_s:.1f} s  analysis {tr.analysis_s:.1f} s")
    return text + (f"\n    {tr.error}" if tr.error else "")


# The table's columns after the target: each counts the trials of a case it holds for.
COUNTED = [
    ("hits with minor", lambda t: t.found),
    ("trials with other transients", lambda t: bool(t.transients)),
    ("injected work the probes could not tell from a slower core", lambda t: bool(t.untold)),
    ("wrong names on a slower vCPU", lambda t: bool(t.slower_cpu)),
    ("on a CPU other tasks took", lambda t: bool(t.busier_cpu)),
    ("trials whose wrong names the host explains", lambda t: t.host_explained),
    ("trials whose wrong names the program's own timer confirms", lambda t: t.timer_confirmed),
]


def case_cells(suite: str, case: Case, done: list[Trial], short: bool) -> list:
    """One row of the table: the judged trials `done` of one case of a suite."""
    hits = sum(t.hit for t in done)
    rate = hits / len(done)
    met = hits >= 1 if short else rate >= case.target - 1e-9
    cells = [suite, case.name, case.injected, len(done), hits, f"{100 * rate:.0f}%",
             sum(t.wrong for t in done), sum(t.other_rank for t in done),
             case.target_text, "yes" if met else "no"]
    for host in (even_host, lambda t: bool(slower_cpu_ranks(t))):
        these = [t for t in done if host(t)]
        cells.append(f"{sum(t.hit for t in these)} of {len(these)}" if these else "-")
    return cells + [sum(1 for t in done if holds(t)) for _, holds in COUNTED]


def table(suites: list[tuple[str, list[Case]]], trials: list[Trial], short: bool) -> list[str]:
    head = ["program", "case", "injected", "trials", "hits", "hit rate",
            "trials with wrong names", "of them naming another rank", "target", "met",
            "hits on an even host", "hits on a slower CPU"]
    head += [name for name, _ in COUNTED]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for suite, case in ((su, c) for su, cases in suites for c in cases):
        done = [t for t in trials if t.suite == suite and t.case == case.name and not t.error]
        if done:
            rows.append("| " + " | ".join(map(str, case_cells(suite, case, done, short))) + " |")
    return rows


def apart_lines(trials: list[Trial]) -> list[str]:
    """Per real program and case with class ratios: with nothing injected, how far apart
    its ranks ran the largest class (validation.classes.apart_text), the floor the host
    puts under the +x % cases; with extra work injected, how much longer the class ran
    on that rank than on the other, i.e. what the verdict was given to find."""
    out = [""]
    for suite, case in dict.fromkeys((t.suite, t.case) for t in trials):
        ratios = [t.class_ratio for t in trials if (t.suite, t.case) == (suite, case)
                  and not t.error and t.class_ratio is not None]
        if not ratios:
            continue
        if case == "clean":
            out.append(f"{suite} clean: its largest class, one rank's median over the "
                       f"other's: {apart_text(ratios)}")
        else:
            out.append(f"{suite} {case}: the class on the injected rank over the other's: "
                       f"{range_text(ratios)}, median x{statistics.median(ratios):.3f}")
    return out if len(out) > 1 else []


def unjudged_lines(trials: list[Trial]) -> list[str]:
    """Per program and case, the trials with ranks the analysis could not judge (no
    calibration; Trial.unjudged), counted in the table as they scored."""
    out = [""]
    for suite, case in dict.fromkeys((t.suite, t.case) for t in trials):
        left = [t for t in trials if (t.suite, t.case) == (suite, case) and t.unjudged]
        if left:
            out.append(f"{suite} {case}: ranks not judged (their calibration failed, none to "
                       "borrow on their host) in trial(s) "
                       + ", ".join(f"{t.trial} (r{', r'.join(map(str, t.unjudged))})"
                                   for t in left))
    return out if len(out) > 1 else []


def summary_lines(suites: list[tuple[str, list[Case]]], trials: list[Trial],
                  short: bool) -> list[str]:
    """What a run and a --rejudge print under the trials: the table, how far apart the
    classes ran, the trials not judged."""
    return table(suites, trials, short) + apart_lines(trials) + unjudged_lines(trials)


def machine() -> str:
    model = "?"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return f"{model}, nproc {os.cpu_count()}"


def witness(build: Path) -> str | None:
    """The host witness program of the build, None (no witness) where it was not built."""
    program = build / "tests" / "validation" / "cpu_speed"
    return str(program) if program.exists() else None


def default_mpiexec(build: Path, mpi: str) -> str:
    if mpi == "mpich":
        cache = build / "CMakeCache.txt"
        if cache.exists():
            m = re.search(r"^PERFVAR_MPICH_MPIEXEC:\w+=(.+)$", cache.read_text(), re.M)
            if m:
                return m.group(1)
    return shutil.which(f"mpiexec.{mpi}") or "mpiexec"


def interrupt(signum, frame) -> None:
    """SIGTERM (ctest's timeout) unwinds like Ctrl-C, so a busy process is killed."""
    raise KeyboardInterrupt


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", "--program", default="twins",
                    help="comma-separated of twins, stencil and the names of --run "
                    "(default twins)")
    ap.add_argument("--run", action="append", default=[], metavar="NAME=BINARY",
                    help="a real program you built, run unchanged; repeatable")
    ap.add_argument("--args", action="append", default=[], metavar="NAME=ARGS",
                    help="its arguments (split as a shell would)")
    ap.add_argument("--input", action="append", default=[], metavar="NAME=FILE[:AS]",
                    help="a file its run directory needs (as AS); repeatable")
    ap.add_argument("--build", type=Path, default=Path("build"))
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--cases", help="comma-separated, default all (of each program)")
    ap.add_argument("--steps", type=int, help="twins: steps per run (default 3000, --short 1500)")
    ap.add_argument("--work", type=Path, help="trace directories (default a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir of traces")
    ap.add_argument("--json", type=Path, help="write per-trial details here")
    ap.add_argument("--short", action="store_true", help="gross cases, 1 trial + 1 retry (ctest)")
    ap.add_argument("--mpi", choices=("openmpi", "mpich"), default="openmpi")
    ap.add_argument("--mpiexec", help="the launcher (default that of --mpi)")
    ap.add_argument("--postproc", type=Path, default=ROOT / "postproc",
                    help="the analysis package's folder to judge (default this tree's)")
    ap.add_argument("--rejudge", type=Path, metavar="JSON",
                    help="run nothing: analyse again the traces an earlier --json run kept "
                    "(--work or --keep) and print its table with today's rules")
    ap.add_argument("--min-cost", type=float, metavar="PCT",
                    help="the headline's delay cost threshold, %% of wall time x ranks "
                    "(perfvar analyze --min-cost; default perfvar's)")
    ap.add_argument("--setting", action="append", default=[], metavar="PERFVAR_NAME=VALUE",
                    help="a perfvar setting for every run (docs/tracing.md), e.g. "
                    "PERFVAR_PROBE=on; repeatable")
    ap.add_argument("--doc", type=Path, metavar="MD",
                    help="run nothing: write the results page (docs/validation.md) from the "
                    "runs of --from, for each program and case the latest run that had it")
    ap.add_argument("--from", dest="runs", action="append", default=[], type=Path,
                    metavar="JSON", help="a run's --json, for --doc; repeatable")
    return ap.parse_args()


def suite_cases(name: str, short: bool, only: list[str] | None) -> list[Case]:
    """The cases of one program, filtered by --cases (names a program lacks are skipped)."""
    if name == "twins":
        pool = SHORT if short else FULL
    else:
        pool = [c for c in (REAL_SHORT if short else REAL)
                if not c.slowed or name == "stencil"]
    return [c for c in pool if only is None or c.name in only]


def asked_suites(a: argparse.Namespace) -> list[tuple[str, list[Case]]] | None:
    """(program, its cases) as --programs and --cases ask; None (after saying why) when
    they name something unknown."""
    suites_asked = a.programs.split(",")
    given = set(named_pairs(a.run)) if not a.rejudge else set(suites_asked)
    bad = set(suites_asked) - {"twins", "stencil", *given}
    if bad:
        print(f"validate: unknown program(s) {sorted(bad)}: give each one's binary "
              "with --run NAME=BINARY", file=sys.stderr)
        return None
    only = a.cases.split(",") if a.cases else None
    suites = [(name, suite_cases(name, a.short, only)) for name in suites_asked]
    known = {c.name for _, cases in suites for c in cases}
    if only and set(only) - known:
        print(f"validate: unknown case(s) {sorted(set(only) - known)}", file=sys.stderr)
        return None
    return suites


def named_pairs(pairs: list[str]) -> dict[str, list[str]]:
    """NAME=VALUE options (--run, --args, --input) as name -> its values, in order."""
    out: dict[str, list[str]] = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        out.setdefault(name, []).append(value)
    return out


def given_program(a: argparse.Namespace, name: str) -> programs.Program:
    """The program ``name`` of --run, with its --args and --input."""
    args = named_pairs(a.args).get(name, [""])
    return programs.given(name, named_pairs(a.run)[name][-1], args[-1],
                          named_pairs(a.input).get(name, []))


def settings(pairs: list[str]) -> dict[str, str] | None:
    """--setting NAME=VALUE pairs as a dict; None (after saying why) for one that is not a
    PERFVAR_ variable."""
    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.startswith("PERFVAR_"):
            print(f"validate: --setting {pair!r} is not PERFVAR_NAME=VALUE", file=sys.stderr)
            return None
        out[name] = value
    return out


def make_setup(a: argparse.Namespace, extra: dict[str, str]) -> Setup:
    """The runs' setup from the command line; ``extra``: perfvar settings for every run."""
    build = a.build.resolve()
    mpiexec = mpiexec_cmd(a.mpiexec or default_mpiexec(build, a.mpi), 2)
    if "--oversubscribe" in mpiexec:  # Open MPI: bind_rank.sh pins, the launcher must not
        mpiexec += ["--bind-to", "none"]
    # perfvar's layer refuses unknown PERFVAR_* variables (PERFVAR_LIB is the analysis's).
    run_env = {k: v for k, v in os.environ.items()
               if not k.startswith("PERFVAR_") and k != "LD_PRELOAD"}
    run_env.update(extra)
    pypath = os.pathsep.join(filter(None, [str(a.postproc.resolve()),
                                           os.environ.get("PYTHONPATH")]))
    analyze_env = dict(os.environ, PYTHONPATH=pypath)
    analyze_env.pop("LD_PRELOAD", None)
    work = (a.work.resolve() if a.work else a.rejudge.resolve().parent if a.rejudge
            else Path(tempfile.mkdtemp(prefix="perfvar-validate-")))
    work.mkdir(parents=True, exist_ok=True)
    return Setup(build, a.mpi, mpiexec, a.steps or (1500 if a.short else 3000), work, run_env,
                 analyze_env, keep_runs=bool(a.work or a.keep), cpu_speed=witness(build),
                 min_cost_pct=a.min_cost)


TrialRunner = Callable[[Case, int, int, str], Trial]  # (case, placement, number, label)


def trial_runner(st: Setup, suite: str,
                 given: Callable[[str], programs.Program]) -> tuple[TrialRunner, Reference | None]:
    """How one trial of ``suite`` runs, and a real program's reference run: the program is
    prepared (``given``: the one of --run by that name) and that run made first."""
    if suite == "twins":
        return lambda case, t, number, label: run_trial(st, case, t, number, label), None
    prog = programs.stencil(st.build, st.mpi, st.work) if suite == "stencil" else given(suite)
    ref = reference(st, prog)
    split = f"; two kinds of work, split at {ref.split_ns / 1e6:.3f} ms" if ref.split_ns else ""
    print(f"{suite}: largest class {ref.key} (to '{ref.pattern.to}', from "
          f"'{ref.pattern.frm}'){split}; reference run {ref.run_ns / 1e9:.2f} s", flush=True)
    return (lambda case, t, number, label: run_real_trial(st, prog, ref, case, t, number, label),
            ref)


def gross_case(trial: TrialRunner, suite: str, case: Case, i: int, prefix: str,
               trials: list[Trial]) -> bool:
    """--short: one trial of ``case`` (the i-th), retried once after a miss with the other
    rank injected, on the other CPU (placement: trial i ^ 1); whether it hit (or could not
    run) in one of the two. Why both: a shared host slows one vCPU for a run, and it also
    slowed one rank's compute whichever its CPU for several runs in a row (the stencil's
    own timer: rank 1 +46 % in both attempts of one CI run, the injected rank 0's +50 %
    hidden under it in its time), so a retry on swapped CPUs alone can miss again."""
    for attempt, t in enumerate((i, i ^ 1), start=1):
        tr = trial(case, t, attempt, f"{prefix}{case.name}-attempt{attempt}")
        trials.append(tr)
        print(trial_line(tr), flush=True)
        if tr.hit or tr.error:
            return True
        print(f"validate: {suite} {case.name}: miss in attempt {attempt}"
              + ("; retrying with the other rank on the other CPU" if attempt == 1 else ""),
              flush=True)
    return False


def run_suites(st: Setup, a: argparse.Namespace, suites: list[tuple[str, list[Case]]],
               trials: list[Trial]) -> list[str]:
    """Every trial of every case into ``trials`` (printed as they end); the gross cases
    that missed twice (--short)."""
    failed_gross = []
    for suite, cases in suites:
        trial, ref = trial_runner(st, suite, lambda name: given_program(a, name))
        prefix = "" if suite == "twins" else f"{suite}-"
        for i, case in enumerate(cases):
            why = skipped(case, ref) if suite != "twins" else None
            if why:
                print(f"{suite} {case.name}: not run: {why}", flush=True)
                continue
            if a.short:
                if not gross_case(trial, suite, case, i, prefix, trials):
                    failed_gross.append(f"{suite} {case.name}")
                continue
            for t in range(a.trials):
                trials.append(trial(case, t, t, f"{prefix}{case.name}-{t}"))
                print(trial_line(trials[-1]), flush=True)
    return failed_gross


def main() -> int:
    a = parse_args()
    if a.doc:
        return write_doc(a.doc, a.runs)
    suites = asked_suites(a)
    extra = settings(a.setting)
    if suites is None or extra is None:
        return 2
    st = make_setup(a, extra)
    signal.signal(signal.SIGTERM, interrupt)
    t_start = time.monotonic()
    if a.rejudge:
        return rejudge(st, a.rejudge, suites, a.short, a.json, t_start)
    print(f"# perfvar validation, {datetime.datetime.now().isoformat(timespec='seconds')}")
    print(f"machine: {machine()}; MPI {a.mpi} ({' '.join(st.mpiexec)}); twins {st.steps} steps "
          f"per run; traces in {st.work}"
          + "".join(f"; {k}={v}" for k, v in extra.items()))
    trials: list[Trial] = []
    failed_gross: list[str] = []
    interrupted = False
    try:
        failed_gross = run_suites(st, a, suites, trials)
    except KeyboardInterrupt:
        interrupted = True
        print("validate: interrupted; the table holds the trials done", flush=True)
    except (TrialError, subprocess.SubprocessError, OSError, ValueError) as e:
        print(f"validate: a program could not be prepared: {type(e).__name__}: {e}",
              file=sys.stderr)
        return 1
    report(a, trials, suites, t_start)
    if not a.work and not a.keep:
        shutil.rmtree(st.work, ignore_errors=True)
    if interrupted:
        return 130
    if failed_gross:
        print(f"validate: FAILED: {', '.join(failed_gross)} missed in both attempts")
        return 1
    return 1 if any(t.error for t in trials) else 0


def report(a: argparse.Namespace, trials: list[Trial], suites: list[tuple[str, list[Case]]],
           t_start: float) -> None:
    """The table, the time a trial took, and the trials into --json."""
    print()
    print("\n".join(summary_lines(suites, trials, a.short)))
    errors = [t for t in trials if t.error]
    run_s = [t.run_s + t.analysis_s for t in trials if not t.error]
    if run_s:
        print(f"\none trial (run + analysis): median {sorted(run_s)[len(run_s) // 2]:.1f} s")
    print(f"total wall time {time.monotonic() - t_start:.0f} s; "
          f"{len(errors)} trial(s) could not run")
    if a.json:
        runs.dump(a.json, runs.now(machine(), a.short), [vars(t) for t in trials])


def rejudge(st: Setup, path: Path, suites: list[tuple[str, list[Case]]], short: bool,
            out_json: Path | None, t_start: float) -> int:
    """--rejudge: the trials of ``path`` of the asked programs and cases (``suites``, of the
    short cases when ``short``, as the earlier run), judged again."""
    print(f"# perfvar validation, {datetime.datetime.now().isoformat(timespec='seconds')}: "
          f"the traces of {path} judged again")
    asked = {(suite, c.name): c for suite, cases in suites for c in cases}
    trials = []
    source, records = runs.load(path)
    for record in records:
        case = asked.get((record.get("suite", "twins"), record.get("case")))
        if case is not None:
            trials.append(rejudge_trial(st, record, case))
            print(trial_line(trials[-1]), flush=True)
    print()
    print("\n".join(summary_lines(suites, trials, short)))
    errors = [t for t in trials if t.error]
    print(f"total wall time {time.monotonic() - t_start:.0f} s; "
          f"{len(errors)} trial(s) could not be judged")
    if out_json:
        runs.dump(out_json, runs.now(machine(), short, (path, source)),
                  [vars(t) for t in trials])
    return 1 if errors else 0


DOC_HEAD = """# Validation results

Written by `tools/validate.py --doc docs/validation.md --from RUNS.json ...` from the runs of
the validation kit (`tools/validate.py`, [docs/testing.md](testing.md)): for each program and
case, the latest run that had it, with its date, machine and command. Edit the runs, not this
page. Each trial runs the program with 2 ranks under `perfvar-run`, injects one anomaly from
outside the unchanged binary, and scores `perfvar analyze`'s verdict against it by the rules of
`tests/tools/verdicts.py`; "hits on an even host" counts the trials where the host witness
measured both CPUs within 5 % of each other, "hits on a slower CPU" those where it measured a
rank's CPU 15 % or more slower. Real programs are named with the version the run
used; how to build them is theirs to publish.
"""


def doc_lines(loaded: list[tuple[runs.RunInfo, list[Trial]]]) -> list[str]:
    """The results page: per run, newest first (by when its trials ran, then when they
    were judged), the rows of the (program, case) pairs whose latest run it is (a trial
    that could not run counts for nothing)."""
    latest: dict[tuple[str, str], int] = {}
    order = sorted(range(len(loaded)), key=lambda i: (loaded[i][0].trials_ran, loaded[i][0].date))
    for i in order:
        for t in loaded[i][1]:
            if not t.error:
                latest[(t.suite, t.case)] = i
    lines = [DOC_HEAD]
    for i in reversed(order):
        info, trials = loaded[i]
        mine = [t for t in trials if latest.get((t.suite, t.case)) == i]
        if not mine:
            continue
        names = {(t.suite, t.case) for t in mine}
        suites = [(su, [c for c in suite_cases(su, info.short, None) if (su, c.name) in names])
                  for su in dict.fromkeys(t.suite for t in mine)]
        again = (f"; judged again on {info.date} from the traces {info.rejudged_from} kept"
                 if info.rejudged_from else "")
        lines += [f"## {info.trials_ran}", "", f"Machine: {info.machine}{again}. Command: "
                  f"`{info.command}`", ""]
        lines += summary_lines(suites, mine, info.short) + [""]
    return lines


def write_doc(md: Path, paths: list[Path]) -> int:
    """--doc: the results page from the runs ``paths``."""
    if not paths:
        print("validate: --doc needs at least one --from JSON", file=sys.stderr)
        return 2
    fields = Trial.__dataclass_fields__
    loaded = []
    for path in paths:
        info, records = runs.load(path)
        loaded.append((info, [Trial(**{k: v for k, v in r.items() if k in fields})
                              for r in records]))
    md.write_text("\n".join(doc_lines(loaded)).rstrip() + "\n")
    print(f"validate: {md} written from {len(paths)} run(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
