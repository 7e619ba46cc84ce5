#!/usr/bin/env python3
"""`perfvar calibrate` under the real mpiexec: every rank reports its own core, MPI_Wtime is a
timer there, and rank 0 writes one JSON for all ranks.

  calibrate_mpi_check.py --mpiexec MPIEXEC --np N --lib LIBPERFVAR --out JSON
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--np", type=int, required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--out", type=Path, required=True)
    return ap.parse_args()


def calibrate_cmd(a) -> list[str]:
    """`perfvar calibrate` on --np ranks, one per core (Open MPI: oversubscribed, as root too)."""
    cmd = [a.mpiexec, "-n", str(a.np), "--bind-to", "core"]
    if "OpenRTE" in subprocess.run([a.mpiexec, "--version"], capture_output=True, text=True).stdout:
        cmd += ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    cmd += [sys.executable, "-m", "perfvar", "calibrate", "--quick", "--compare", "--states", "0",
            "--budget", "12", "--lib", a.lib, "--json", str(a.out)]
    return cmd


def check_rank(r: dict) -> list[str]:
    """One rank's entry: MPI_Wtime available, a barrier overhead, its CPU."""
    errors = []
    timers = {t["name"]: t for t in r["timers"]}
    if not timers.get("mpi_wtime", {}).get("available"):
        errors.append(f"rank {r['rank']}: MPI_Wtime not available under mpiexec")
    if not timers.get("barrier", {}).get("overhead_ns", -1) >= 0:
        errors.append(f"rank {r['rank']}: no barrier overhead")
    if r.get("cpu") is None:
        errors.append(f"rank {r['rank']}: CPU unknown")
    return errors


def check_doc(a, doc: dict) -> list[str]:
    """The JSON rank 0 wrote: every rank once, in order, the top-level timers rank 0's."""
    errors = []
    ranks = doc.get("ranks", [])
    if doc.get("nranks") != a.np or [r.get("rank") for r in ranks] != list(range(a.np)):
        errors.append(f"expected ranks 0..{a.np - 1}, got {[r.get('rank') for r in ranks]}")
    if doc.get("timers") != (ranks[0]["timers"] if ranks else None):
        errors.append("top-level timers are not rank 0's")
    for r in ranks:
        errors += check_rank(r)
    return errors


def main() -> int:
    a = parse_args()
    a.out.parent.mkdir(parents=True, exist_ok=True)  # ctest -R runs this test alone
    cmd = calibrate_cmd(a)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "postproc"))
    print("$", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    print(p.stdout)
    print(p.stderr, file=sys.stderr)
    errors = []
    if p.returncode:
        errors.append(f"exit {p.returncode}")
    doc = json.loads(a.out.read_text()) if a.out.exists() else {}
    errors += check_doc(a, doc)
    if p.stdout.count("=== rank ") != a.np:
        errors.append("the report does not have one table per rank")
    for e in errors:
        print(f"calibrate_mpi_check: FAILED: {e}")
    if not errors:
        ranks = doc.get("ranks", [])
        print(f"calibrate_mpi_check: ok ({a.np} ranks, CPUs {[r['cpu'] for r in ranks]})")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
