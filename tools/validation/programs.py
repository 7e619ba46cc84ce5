"""The real programs of the validation kit, run unchanged: the demo's stencil
(examples/stencil, built in the build tree) and CloverLeaf (UK-MAC/CloverLeaf_ref, built
here from a checkout, or cloned where the network allows). Each says its binary, its
arguments, and what a trial's run directory needs (CloverLeaf: clover.in)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

CLOVERLEAF_MAKE = [
    "make",
    "COMPILER=GNU",
    "MPI_COMPILER=mpif90.openmpi",
    "C_MPI_COMPILER=mpicc.openmpi",
]
CLOVERLEAF_DECK = Path("InputDecks") / "clover_bm_short.in"


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


def stencil(build: Path) -> Program:
    """The demo's stencil, as the demo runs it (200 steps); its own injection: rank 1
    does 3x the work in its segment."""
    exe = build / "examples" / "stencil" / "stencil"
    if not exe.exists():
        raise FileNotFoundError(f"{exe}: build the tree first (examples are on)")
    slowed = ["--slow-rank", "1", "--slow-factor", "3"]
    return Program("stencil", exe, slowed_args=slowed)


def cloverleaf(source: str, work: Path) -> Program:
    """CloverLeaf from a checkout path (built with make when clover_leaf is missing), or
    from a git URL cloned into ``work``; runs clover_bm_short.in."""
    if "://" in source or source.startswith("git@"):
        dest = work / "CloverLeaf_ref"
        if not (dest / "Makefile").exists():
            clone = ["git", "clone", "--depth", "1", source, str(dest)]
            subprocess.run(clone, check=True, timeout=600)
    else:
        dest = Path(source).resolve()
    exe = dest / "clover_leaf"
    if not exe.exists():
        subprocess.run(CLOVERLEAF_MAKE, cwd=dest, check=True, timeout=1800)
    deck = dest / CLOVERLEAF_DECK
    if not exe.exists() or not deck.exists():
        missing = f"no clover_leaf or {CLOVERLEAF_DECK}"
        raise FileNotFoundError(f"{dest}: {missing} after make")
    return Program("cloverleaf", exe, files={"clover.in": deck})
