"""The real programs of the validation kit, run unchanged: the demo's stencil
(examples/stencil, built in the build tree) and any MPI program the user built, given
by the path of its binary, its arguments and the input files its run directory needs
(``validate.py --run NAME=BINARY --args NAME=ARGS --input NAME=FILE[:AS]``). How to
build another project's code is that project's to say: the kit holds no recipe.
A program known by name here (OWN_CLOCKS) has its own timer read from its output."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from verdicts import slower_by_own_timer

from validation.classes import Pattern


@dataclass(frozen=True)
class OwnClock:
    """A program's own timer of one class of its compute, one output line per rank: the
    arguments that turn it on, the line (groups: rank, time in any one unit) and the class
    it times (its pattern)."""

    args: tuple[str, ...]
    line: str
    timed: Pattern

    def slower(self, stdout: str, nranks: int = 2) -> Optional[dict[str, float]]:
        """rank (as text, the kit's JSON key) -> its time over the median of the other
        ranks' minus 1 (verdicts.slower_by_own_timer); None when the output gives no time
        for every rank."""
        slower = slower_by_own_timer(self.line, stdout, nranks)
        return None if slower is None else {str(r): f for r, f in slower.items()}


# The demo's stencil with --timing: Fortran's system_clock around its compute between
# MPI_Waitall and MPI_Allreduce (99 % of a rank's compute), with no MPI call inside.
STENCIL_CLOCK = OwnClock(
    ("--timing",),
    r"stencil\[timing\] rank (\d+): compute/step mean ([0-9.]+) ms",
    Pattern(to="MPI_Allreduce@", frm="MPI_Waitall@"),
)
# CoMD's timer of its force loop (computeForce, no MPI call inside for Lennard-Jones),
# from the table rank 0 prints at the end, "Timing Statistics Across 2 Ranks" (indented
# under "timestep"): each timer's fastest and slowest rank and their times in s, which on
# 2 ranks are both. The force loop is the longer kind of its class from one MPI_Sendrecv
# line to the other (docs/measurements.md, CoMD), with the velocity and position updates
# of a step.
COMD_CLOCK = OwnClock(
    (),
    r"(?m)^ *force +(\d+):\s*([0-9.]+)\s+(\d+):\s*([0-9.]+)",
    Pattern(to="MPI_Sendrecv@", frm="MPI_Sendrecv@"),
)
# program name -> its own timer, where it has one
OWN_CLOCKS = {"stencil": STENCIL_CLOCK, "comd": COMD_CLOCK}


@dataclass
class Program:
    """An unchanged MPI program: binary, arguments, files its run directory needs."""

    name: str
    binary: Path
    args: list[str] = field(default_factory=list)
    # the run directory's files: name there -> source
    files: dict[str, Path] = field(default_factory=dict)
    # the program's own injection (case "slowed"), None: it has none
    slowed_args: Optional[list[str]] = None

    def prepare(self, rundir: Path) -> None:
        """A fresh run directory holding the program's input files."""
        shutil.rmtree(rundir, ignore_errors=True)
        rundir.mkdir(parents=True)
        for name, src in self.files.items():
            shutil.copyfile(src, rundir / name)


# The stencil's steps in the kit: the demo's 200 steps are 0.13 s of compute, 13
# fixed-work probes a rank at their 10 ms period, whose interval (about +-3 %) cannot
# tell +10 % of work from a slower core; 2000 steps give 130.
STENCIL_STEPS = 2000


def stencil(build: Path, mpi: str = "openmpi", work: Optional[Path] = None) -> Program:
    """The demo's stencil, STENCIL_STEPS steps; its own injection: rank 1 does 3x the
    work in its segment. The build tree's for Open MPI; for another MPI
    built into ``work`` from examples/stencil as its README builds it."""
    if mpi == "openmpi":
        exe = build / "examples" / "stencil" / "stencil"
        if not exe.exists():
            raise FileNotFoundError(f"{exe}: build the tree first (examples are on)")
    else:
        if work is None:
            raise ValueError(f"the stencil for {mpi} needs a work folder to be built in")
        source = Path(__file__).resolve().parents[2] / "examples" / "stencil" / "stencil.f90"
        exe = work / f"stencil-{mpi}"
        compile_ = [f"mpifort.{mpi}", "-O2", "-g", str(source), "-o", str(exe)]
        subprocess.run(compile_, cwd=work, check=True, timeout=600)
    slowed = ["--slow-rank", "1", "--slow-factor", "3"]
    return Program("stencil", exe, ["--steps", str(STENCIL_STEPS)], slowed_args=slowed)


def given(name: str, binary: str, args: str = "", inputs: Optional[list[str]] = None
          ) -> Program:
    """A program the user built: ``binary`` (a path), ``args`` split as a shell would, and
    ``inputs``, each ``FILE`` or ``FILE:AS``, copied into every run directory (as AS, else
    under its own name). Raises FileNotFoundError for a binary or input that is not there."""
    exe = Path(binary).expanduser().resolve()
    if not exe.is_file():
        raise FileNotFoundError(f"{name}: {exe} is not a built program")
    files = {}
    for item in inputs or []:
        src, _, as_name = item.partition(":")
        path = Path(src).expanduser().resolve()
        if not path.is_file():
            raise FileNotFoundError(f"{name}: input {path} not found")
        files[as_name or path.name] = path
    return Program(name, exe, shlex.split(args), files=files)
