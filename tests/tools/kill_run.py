#!/usr/bin/env python3
"""Kill one rank of a running traced job, then check that its trace is rebuilt and read.

  kill_run.py --mpiexec MPIEXEC --out DIR --signal KILL|TERM|SEGV --victim RANK [--after S]
              --build BUILD -- PROGRAM [ARGS...]

Runs PROGRAM on 2 ranks with PERFVAR_OUTPUT=DIR, waits until both ranks have started tracing
(their rank-N.json, written at the start, names their pid), lets them run --after seconds, and
sends the signal to the victim's process. The job must end (the launcher takes the other rank
down). Then `perfvar analyze DIR` must rebuild the trace from the records by itself, read every
rank's segments up to the kill, and name the victim as the rank that ended first, the way it
ended ("killed without a word" for SIGKILL, the signal's name otherwise); `otf2-print` must read
the rebuilt archive.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
from run_mpi import mpiexec_cmd  # noqa: E402


def fail(msg: str) -> None:
    print(f"kill_run: FAILED: {msg}", flush=True)
    sys.exit(1)


def wait_for_pids(meta: Path, n: int, job: subprocess.Popen, timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = []
        for r in range(n):
            try:
                pids.append(int(json.loads((meta / f"rank-{r}.json").read_text())["pid"]))
            except (OSError, ValueError, KeyError):
                break
        if len(pids) == n:
            return pids
        if job.poll() is not None:
            fail(f"the job ended (rc {job.returncode}) before both ranks started tracing")
        time.sleep(0.1)
    fail(f"no rank-N.json with a pid for every rank after {timeout:.0f} s")
    return []


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--signal", required=True, choices=("KILL", "TERM", "SEGV", "INT"))
    ap.add_argument("--victim", type=int, default=1)
    ap.add_argument("--after", type=float, default=1.5)
    ap.add_argument("--build", required=True, help="build tree (its bin/ has perfvar-recover)")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    args.cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    return args


def job_env(args, out: Path) -> dict:
    """The job's and perfvar's environment: tracing into out, perfvar-recover and the postproc
    package of this tree found first."""
    env = dict(os.environ, PERFVAR_OUTPUT=str(out), PERFVAR_CALIBRATION="off")
    env["PATH"] = f"{Path(args.build) / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = f"{ROOT / 'postproc'}{os.pathsep}{env.get('PYTHONPATH', '')}"
    return env


def wait_for_end(job: subprocess.Popen) -> None:
    """The job must end after the kill, with an error, before MPI_Finalize wrote the trace."""
    try:
        output, _ = job.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        output, _ = job.communicate()
        print(output)
        fail("the job did not end within 120 s of the kill")
    print(f"kill_run: the job ended with rc {job.returncode}")
    if job.returncode == 0:
        fail("the job ended with rc 0 after one of its ranks was killed")


def run_and_kill(args, out: Path, env: dict) -> None:
    """Run the job on 2 ranks, send the signal to the victim once both trace, wait for its end."""
    job = subprocess.Popen(mpiexec_cmd(args.mpiexec, 2) + args.cmd, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    pids = wait_for_pids(out / "perfvar", 2, job, 120)
    time.sleep(args.after)
    if job.poll() is not None:
        fail(f"the job ended by itself before the kill (rc {job.returncode}); give it more work")
    sig = getattr(signal, f"SIG{args.signal}")
    print(f"kill_run: rank pids {pids}; sending SIG{args.signal} to rank {args.victim}", flush=True)
    os.kill(pids[args.victim], sig)
    wait_for_end(job)
    if (out / "traces.otf2").exists():
        fail("traces.otf2 exists before recovery: the job was not killed before MPI_Finalize")


def analyze(out: Path, env: dict) -> tuple[dict, str]:
    """`perfvar analyze` on the killed job's output (its output echoed); returns analysis.json
    and its stdout."""
    p = subprocess.run([sys.executable, "-m", "perfvar", "analyze", "--no-symbolize", str(out)],
                       env=env, capture_output=True, text=True, timeout=600)
    sys.stdout.write(p.stdout + p.stderr)
    if p.returncode != 0:
        fail(f"perfvar analyze exited {p.returncode}")
    return json.loads((out / "analysis.json").read_text()), p.stdout


def check_victim(args, result: dict, stdout: str) -> dict:
    """The analysis names the victim as the rank that ended first, the way it ended; returns
    the victim's entry of analysis.json's "ended"."""
    ended = result.get("ended") or {}
    if ended.get("first_to_end") != args.victim:
        fail(f"first rank to end is {ended.get('first_to_end')}, expected {args.victim}: {ended}")
    victim = next(r for r in ended["ranks"] if r["rank"] == args.victim)
    want = "without a word" if args.signal == "KILL" else f"SIG{args.signal}"
    if want not in victim["how"]:
        fail(f"rank {args.victim} ended '{victim['how']}', expected '{want}'")
    if args.signal != "KILL" and victim.get("sent_by") != "other":
        fail(f"rank {args.victim}'s signal was sent by '{victim.get('sent_by')}', expected 'other' "
             "(this script, not its launcher)")
    verdict = [line for line in stdout.splitlines() if line.startswith("verdict:")]
    if not verdict or f"rank {args.victim} ended early" not in verdict[-1]:
        fail(f"the verdict does not name rank {args.victim} as ended early: {verdict}")
    return victim


def check_segments(result: dict) -> dict:
    """Every rank's segments up to the kill were read; returns rank -> segments."""
    per_rank = {r["rank"]: r["n_segments"] for r in result["ranks"]}
    if sorted(per_rank) != [0, 1] or min(per_rank.values()) < 50:
        fail(f"segments per rank read from the rebuilt trace: {per_rank} (expected >= 50 each)")
    return per_rank


def check_rebuilt_trace(out: Path) -> None:
    # The full validation (otf2-print -Werror, a complete read in Python), but for what a kill cuts.
    ct = subprocess.run([sys.executable, str(HERE / "check_trace.py"), str(out), "--ranks", "2",
                         "--messages", "--cut"], capture_output=True, text=True)
    sys.stdout.write(ct.stdout + ct.stderr)
    if ct.returncode != 0:
        fail("the rebuilt trace does not pass check_trace")


def main() -> None:
    args = parse_args()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    env = job_env(args, out)
    run_and_kill(args, out, env)
    result, stdout = analyze(out, env)
    victim = check_victim(args, result, stdout)
    per_rank = check_segments(result)
    check_rebuilt_trace(out)
    print(f"kill_run: ok: rank {args.victim} {victim['how']} at {victim['end_s']:.3f} s; "
          f"segments read per rank {per_rank}")


if __name__ == "__main__":
    main()
