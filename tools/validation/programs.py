"""The real programs of the validation kit, run unchanged: the demo's stencil
(examples/stencil, built in the build tree) and three mini-apps nobody here wrote, each
built here from a checkout, or cloned where the network allows:

- CloverLeaf (UK-MAC/CloverLeaf_ref, Fortran, mpif.h): explicit hydrodynamics, halo
  exchanges from one communication module;
- TeaLeaf (UK-MAC/TeaLeaf_ref, Fortran, mpif.h): implicit heat conduction, a
  conjugate-gradient solver with reductions in every iteration;
- CoMD (ECP-copa/CoMD, C): classical molecular dynamics (Lennard-Jones), a force
  loop between MPI_Sendrecv halo exchanges of atoms, reductions every few steps.

Each says its binary, its arguments, and what a trial's run directory needs (its input
deck). A program is built for the MPI the kit runs (Debian's compiler wrappers,
``mpif90.openmpi`` or ``mpif90.mpich``): Open MPI's in the checkout it is given, any
other MPI's in a clean copy of it in the kit's work folder, so the two builds never mix
their objects."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from verdicts import slower_by_own_timer

from validation.classes import Pattern


@dataclass(frozen=True)
class MiniApp:
    """A mini-app: its binary (a path in the checkout), its arguments, its input deck in
    the checkout (None: it has none) and the name the deck must have in the run
    directory, and how it is built (``make`` run in ``build_dir``, after copying
    ``makefile_from`` to Makefile there where its README asks for that; ``{mpi}`` in an
    argument of ``make`` is the MPI it is built for, openmpi or mpich)."""

    name: str
    repository: str  # owner/name on GitHub
    binary: str
    deck: Optional[Path] = None
    deck_as: str = ""
    args: tuple[str, ...] = ()
    make: tuple[str, ...] = (
        "make",
        "COMPILER=GNU",
        "MPI_COMPILER=mpif90.{mpi}",
        "C_MPI_COMPILER=mpicc.{mpi}",
    )
    build_dir: str = "."
    makefile_from: Optional[str] = None


CLOVERLEAF = MiniApp(
    "cloverleaf", "UK-MAC/CloverLeaf_ref", "clover_leaf",
    Path("InputDecks") / "clover_bm_short.in", "clover.in",
)  # fmt: skip
# Benchmark deck 3: 500 x 500 cells, 10 steps of the CG solver (about 3.6 s on 2 ranks
# of the machine in docs/measurements.md; its own tea.in, 1000 x 1000 with PPCG, 20 s).
# Its MPI calls pass buffers of several types to one mpif.h routine, which gfortran 10 and
# later refuse without -fallow-argument-mismatch; it is built with OpenMP, and the kit
# runs every real program with OMP_NUM_THREADS=1.
TEALEAF = MiniApp(
    "tealeaf", "UK-MAC/TeaLeaf_ref", "tea_leaf",
    Path("Benchmarks") / "tea_bm_3.in", "tea.in",
    make=CLOVERLEAF.make + (
        "FLAGS_GNU=-O3 -march=native -funroll-loops -cpp -ffree-line-length-none "
        "-fallow-argument-mismatch",
    ),
)  # fmt: skip
# Lennard-Jones copper (CoMD's default) on a 20 x 20 x 20 lattice of unit cells (32 000
# atoms), split in x over the 2 ranks, 150 steps: about 5.5 s on 2 ranks of the machine in
# docs/measurements.md (its own default, 20 x 20 x 20 and 100 steps on one rank). Its
# README builds from Makefile.vanilla copied to Makefile; -O5 -g as that file sets them.
COMD = MiniApp(
    "comd", "ECP-copa/CoMD", "bin/CoMD-mpi",
    args=("-i", "2", "-j", "1", "-k", "1", "-x", "20", "-y", "20", "-z", "20",
          "-N", "150", "-n", "10"),
    make=("make", "CC=mpicc.{mpi}"), build_dir="src-mpi",
    makefile_from="Makefile.vanilla",
)  # fmt: skip
MINI_APPS = {app.name: app for app in (CLOVERLEAF, TEALEAF, COMD)}


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


def stencil(build: Path, mpi: str = "openmpi", work: Optional[Path] = None) -> Program:
    """The demo's stencil, as the demo runs it (200 steps); its own injection: rank 1
    does 3x the work in its segment. The build tree's for Open MPI; for another MPI
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
    return Program("stencil", exe, slowed_args=slowed)


def build(app: MiniApp, dest: Path, mpi: str = "openmpi") -> None:
    """Build ``app`` in its checkout ``dest`` as its README says, for ``mpi``."""
    where = dest / app.build_dir
    if app.makefile_from:
        shutil.copyfile(where / app.makefile_from, where / "Makefile")
    make = [arg.replace("{mpi}", mpi) for arg in app.make]
    subprocess.run(make, cwd=where, check=True, timeout=1800)


def clean_copy(checkout: Path, dest: Path, binary: str) -> None:
    """``dest``: the files git tracks in ``checkout`` (a local clone), or where it is no
    git checkout, its files without objects, modules and the ``binary`` a build left
    there; an existing ``dest`` is kept (an earlier copy, maybe built)."""
    if dest.exists():
        return
    if (checkout / ".git").exists():
        clone = ["git", "clone", "--quiet", "--no-local", str(checkout), str(dest)]
        subprocess.run(clone, check=True, timeout=600)
    else:
        leave = shutil.ignore_patterns("*.o", "*.mod", Path(binary).name)
        shutil.copytree(checkout, dest, ignore=leave)


def mini_app(app: MiniApp, source: str, work: Path, mpi: str = "openmpi") -> Program:
    """``app`` from a checkout path (built with make when its binary is missing), or
    from a git URL cloned into ``work``, built for ``mpi`` (Open MPI in the checkout,
    another MPI in a clean copy of it in ``work``); runs with its arguments and deck."""
    if "://" in source or source.startswith("git@"):
        dest = work / app.repository.split("/")[1]
        if not (dest / app.build_dir / (app.makefile_from or "Makefile")).exists():
            clone = ["git", "clone", "--depth", "1", source, str(dest)]
            subprocess.run(clone, check=True, timeout=600)
    else:
        dest = Path(source).resolve()
    if mpi != "openmpi":
        dest, checkout = work / f"{app.repository.split('/')[1]}-{mpi}", dest
        clean_copy(checkout, dest, app.binary)
    exe = dest / app.binary
    if not exe.exists():
        build(app, dest, mpi)
    deck = dest / app.deck if app.deck is not None else None
    if not exe.exists() or (deck is not None and not deck.exists()):
        missing = f"no {app.binary}" + (f" or {app.deck}" if deck is not None else "")
        raise FileNotFoundError(f"{dest}: {missing} after make")
    files = {app.deck_as: deck} if deck is not None else {}
    return Program(app.name, exe, list(app.args), files=files)
