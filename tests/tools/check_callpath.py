#!/usr/bin/env python3
"""Run tests/mpi/c_callpath under mpiexec at the given call-path depths
(PERFVAR_CALLPATH) and check how many segment classes run from one MPI_Barrier to
the next: 1 at depth 1 (one call site in the helper), 2 at depth >= 2 (the helper's
site reached from kernel_a and from kernel_b), on every rank; and that rank-N.json says
the depth and what unwound the stack (none at depth 1, libunwind or libgcc beyond).

Usage: check_callpath.py --mpiexec MPIEXEC --out DIR --depth 1 --depth 2 -- PROGRAM
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "postproc"))

from run_mpi import mpiexec_cmd, run  # noqa: E402

from perfvar.read.trace import read_trace  # noqa: E402
from perfvar.read.segments import parse_segment_key  # noqa: E402


def barrier_classes(trace_dir: Path) -> dict[int, set[str]]:
    """Per rank, the segment keys from one MPI_Barrier to the next."""
    t = read_trace(str(trace_dir))
    out: dict[int, set[str]] = {}
    for seg, rank in zip(t.samples["segment"], t.samples["rank"]):
        k = parse_segment_key(t.segments[seg])
        if k.start and k.end and k.start.function == k.end.function == "MPI_Barrier":
            out.setdefault(int(rank), set()).add(k.key)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--depth", type=int, action="append", required=True)
    ap.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    prog = [p for p in a.program if p != "--"]
    failed = False
    for depth in a.depth:
        out = a.out / f"depth{depth}"
        shutil.rmtree(out, ignore_errors=True)  # perfvar does not overwrite a trace
        env = dict(os.environ, PERFVAR_OUTPUT=str(out), PERFVAR_CALIBRATION="off")
        env["PERFVAR_CALLPATH"] = str(depth)
        p = run(mpiexec_cmd(a.mpiexec, a.np) + prog, env, f"depth {depth}")
        if p.returncode != 0:
            print(f"FAIL: depth {depth}: exit {p.returncode}")
            return 1
        for rank in range(a.np):
            mpi = json.loads((out / "perfvar" / f"rank-{rank}.json").read_text())["mpi"]
            unwinders = ("none",) if depth == 1 else ("libunwind", "libgcc")
            ok = mpi.get("callpath_depth") == depth and mpi.get("callpath_unwinder") in unwinders
            failed |= not ok
            print(f"{'ok' if ok else 'FAIL'}: depth {depth}, rank {rank}: rank-{rank}.json says "
                  f"depth {mpi.get('callpath_depth')}, unwinder {mpi.get('callpath_unwinder')}")
        classes = barrier_classes(out)
        want = 1 if depth == 1 else 2
        for rank in range(a.np):
            got = classes.get(rank, set())
            ok = len(got) == want
            failed |= not ok
            print(f"{'ok' if ok else 'FAIL'}: depth {depth}, rank {rank}: {len(got)} "
                  f"Barrier -> Barrier classes (expected {want})")
            for key in sorted(got):
                print(f"    {key}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
