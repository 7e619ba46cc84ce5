#!/usr/bin/env python3
"""An MPMD job with perfvar-run on some of its programs: the application must run on as it does
without perfvar, the traced ranks uninstrumented with one message, and no archive be written.
With perfvar-run on every program, the job is traced as usual.

  mpmd_run.py --mpiexec MPIEXEC --launch PERFVAR_RUN --out DIR --traced 0|1|all
              --same-result REGEX -- PROGRAM [ARGS...]

Runs `MPIEXEC -n 1 A : -n 1 B`, where A and B are PROGRAM, under PERFVAR_RUN for the rank(s) given
by --traced. REGEX must find the same text in the output as in a run of PROGRAM on 2 ranks without
perfvar. Exits 0 when every check holds.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_mpi import launcher_flags, mpiexec_cmd  # noqa: E402

TIMEOUT_S = 150  # the roll call waits at most 30 s; a hang must fail, not stall ctest


def run(cmd: list[str]) -> subprocess.CompletedProcess:
    print("+", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    return p


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--launch", required=True)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--traced", required=True, choices=["0", "1", "all"])
    ap.add_argument("--same-result", required=True)
    ap.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    prog = a.program[1:] if a.program[:1] == ["--"] else a.program
    shutil.rmtree(a.out, ignore_errors=True)

    base = mpiexec_cmd(a.mpiexec, 2)
    reference = run(base + prog)
    want = re.search(a.same_result, reference.stdout)
    if reference.returncode != 0 or not want:
        print(f"mpmd_run: the reference run failed (rc {reference.returncode})")
        return 1

    traced = [a.traced in ("0", "all"), a.traced in ("1", "all")]
    contexts = []
    for on in traced:
        launch = [a.launch, "-o", str(a.out)] if on else []
        contexts.append(["-n", "1"] + launch + prog)
    cmd = [a.mpiexec] + launcher_flags(a.mpiexec) + contexts[0] + [":"] + contexts[1]
    p = run(cmd)
    got = re.search(a.same_result, p.stdout)
    archive = (a.out / "traces.otf2").exists()
    says = [ln for ln in p.stderr.splitlines() if "not under perfvar" in ln or "no word from" in ln]
    failures = []
    if p.returncode != 0:
        failures.append(f"rc {p.returncode}")
    if not got or got.group(0) != want.group(0):
        failures.append(f"result {got.group(0) if got else None!r}, expected {want.group(0)!r}")
    if a.traced == "all":
        if not archive:
            failures.append("no archive although every rank was traced")
        if says:
            failures.append("a roll-call message although every rank was traced")
    else:
        if archive:
            failures.append("an archive although a rank was not traced")
        if len(says) != 1:
            failures.append(f"{len(says)} roll-call messages, expected 1")
    for f in failures:
        print("mpmd_run: FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
