#!/usr/bin/env python3
"""Run an MPI program under perfvar as a test, with real mpiexec, and check what a user would.

  run_mpi.py --mpiexec MPIEXEC --np N --out DIR [options] -- PROGRAM [ARGS...]

PROGRAM is the instrumented command (e.g. `perfvar-run ./app` or a binary linked with perfvar::mpi).
Checks, each optional: the exit code (--expect-exit), a regular expression on stderr
(--expect-stderr: exactly one line from perfvar, matching), that the line matching --same-result equals the one printed by --reference (the
same program without perfvar), that a valid trace was written (check_trace.py with --check-trace
arguments) or that none was (--no-trace), and what `perfvar analyze` names (--analyze-expect:
`none`: no rank named slower in a segment class, the machine's or the code's, by a gross margin,
see below; or `RANK:SEGMENT_REGEX` for exactly that rank named in a segment matching the regex, as
more work (load_imbalance: the injection is work, never a slower core)).

With --busy CPU a process named pv-busy spins on that CPU while the instrumented program runs.

With --bind "C0 C1 ..." rank i runs pinned on CPU Ci. A run without injection may still have a truly
slow core (a shared VM: a vCPU whose host core is busy runs the same code ~45% slower for seconds).
With --own-clock, the program's own timer of a segment (the stencil's --timing: Fortran's
system_clock around its compute, read independently of perfvar) confirms or not a rank named there:
a rank that timer measured slower by at least half of perfvar's shift over the run really computed
slower, which no clean run rules out on a shared host (in one CI run perfvar measured the stencil's
rank 0 computing 9 to 92 % slower in four runs in a row, on either CPU); a false positive of perfvar
has that timer see no difference. When `none` is expected and a rank is named that the program's
timer does not confirm, the run is repeated (up to --confirm-runs times) with the CPU list
alternately reversed: a finding that leaves the rank is the machine's and passes
(reported); one that names the same rank in every run, on alternating CPUs, is a false positive of
perfvar or of the program, and fails. (One swap is not enough: the hypervisor can move a slow phase
from one vCPU to the other between runs.) Only gross findings count (excess >= --gross of the
peers' median): a program is rarely exactly symmetric (the stencil's rank 1 computed ~1% slower
than rank 0 in 21 of 24 clean runs, whichever CPU it had; docs/measurements.md), and a vCPU can
run a few % slow for a whole run, so small findings name the same rank several runs in a row by
chance; how often perfvar names such small effects in clean runs is the validation benchmark's to
measure (tools/validate.py). Symmetrically, when a rank was slowed on purpose (`RANK:...`), host
load can stretch the peers' distribution over it for a whole run; --attempts N repeats such a run
up to N times in all, printing each miss, and fails when the rank is never named.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# The kinds of findings of one segment class: the machine's and the code's.
CELL_KINDS = ("slow_segment", "load_imbalance")
MORE_WORK = "load_imbalance"  # what injected work must be named


def launcher_flags(mpiexec: str) -> list[str]:
    """The flags every test gives this launcher (Open MPI: more ranks than cores, as root)."""
    version = subprocess.run([mpiexec, "--version"], capture_output=True, text=True).stdout
    flags = []
    if "Open MPI" in version or "OpenRTE" in version:
        flags += ["--oversubscribe"]
        if os.geteuid() == 0:
            flags += ["--allow-run-as-root"]
    return flags


def mpiexec_cmd(mpiexec: str, np: int) -> list[str]:
    return [mpiexec, "-n", str(np)] + launcher_flags(mpiexec)


def run(cmd: list[str], env: dict, what: str) -> subprocess.CompletedProcess:
    print(f"$ {' '.join(shlex.quote(c) for c in cmd)}", flush=True)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    sys.stdout.write(p.stdout)
    sys.stdout.write("".join(f"[{what} stderr] {line}\n" for line in p.stderr.splitlines()))
    return p


def fail(msg: str) -> None:
    print(f"run_mpi: FAILED: {msg}", flush=True)
    sys.exit(1)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--np", type=int, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--env", action="append", default=[], help="K=V for the instrumented run")
    ap.add_argument("--expect-exit", type=int, default=0)
    ap.add_argument("--expect-stderr")
    ap.add_argument("--same-result", help="regex of the result line to compare with --reference")
    ap.add_argument("--reference", help="the program without perfvar (shell words)")
    ap.add_argument("--check-trace", default="", help="arguments for check_trace.py")
    ap.add_argument("--no-trace", action="store_true")
    ap.add_argument("--analyze-expect")
    ap.add_argument("--bind", help="CPU per rank, e.g. '0 1' (needs taskset)")
    ap.add_argument("--busy", metavar="CPU",
                    help="a process named pv-busy spinning on CPU beside the instrumented run")
    ap.add_argument("--attempts", type=int, default=1, help="runs allowed to name RANK")
    ap.add_argument("--confirm-runs", type=int, default=3,
                    help="clean runs repeated, CPUs alternating, before a named rank fails")
    ap.add_argument("--gross", type=float, default=0.10,
                    help="clean runs: the least excess (relative to the peers' median) that counts")
    ap.add_argument("--own-clock", nargs=2, metavar=("SEGMENT_REGEX", "LINE_REGEX"),
                    help="clean runs: the program's own timer of the segments matching "
                         "SEGMENT_REGEX, one output line per rank matching LINE_REGEX (groups: "
                         "rank, time); a finding that timer confirms is the machine's")
    ap.add_argument("--skip-unless-metrics",
                    help="a probe (bench_metrics_read EVENTS 1 1): exit 77 (skipped) when it says "
                         "no event of EVENTS can be counted here")
    ap.add_argument("program", nargs=argparse.REMAINDER)
    return ap.parse_args()


def skip_unless_metrics(probe_cmd: str) -> None:
    """Exit 77 (skipped) when the probe says no counter can be opened here."""
    # perf events may be closed to us (perf_event_paranoid, a container)
    probe = subprocess.run(shlex.split(probe_cmd), capture_output=True, text=True, check=False)
    said = re.search(r"^metrics-read (none: .*)$", probe.stdout, re.MULTILINE)
    if probe.returncode != 0 or said or "metrics-read ns=" not in probe.stdout:
        why = said.group(1) if said else f"the probe exited {probe.returncode}"
        print(f"run_mpi: SKIPPED: no counter can be opened here ({why})", flush=True)
        sys.exit(77)


def clean_env() -> dict:
    """This environment without perfvar's variables nor a preload."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return {k: v for k, v in env.items() if not k.startswith("PERFVAR_")}


def reference_result(a, mpi: list[str], env: dict) -> str:
    """The line matching --same-result that the program prints without perfvar."""
    p = run(mpi + shlex.split(a.reference), env, "reference")
    if p.returncode != 0:
        fail(f"reference run exited {p.returncode}")
    m = re.search(a.same_result, p.stdout)
    if not m:
        fail(f"reference output has no line matching {a.same_result!r}")
    return m.group(0)


class Job:
    """The instrumented program under mpiexec, and `perfvar analyze` of its output."""

    def __init__(self, a, mpi: list[str], env: dict) -> None:
        self.a, self.mpi, self.env = a, mpi, env
        self.program = a.program[1:] if a.program[:1] == ["--"] else a.program

    def instrumented(self, out: Path, bind: str | None) -> subprocess.CompletedProcess:
        shutil.rmtree(out, ignore_errors=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        ienv = dict(self.env, PERFVAR_OUTPUT=str(out))
        for kv in self.a.env:
            k, v = kv.split("=", 1)
            ienv[k] = v
        shim = [str(HERE / "bind_rank.sh"), bind] if bind else []
        return run(self.mpi + shim + self.program, ienv, "perfvar")

    def rerun(self, out: Path, bind: str | None, what: str) -> str:
        """Another instrumented run into out, which must exit as the first did; its stdout."""
        p = self.instrumented(out, bind)
        if p.returncode != self.a.expect_exit:
            fail(f"{what} failed")
        return p.stdout

    def analyze(self, out: Path) -> tuple[list, list[int], dict]:
        """The anomalies of one segment class (slow segments, the machine's, and more work
        in a class, the code's), the ranks they name, and the whole analysis.json."""
        aenv = dict(self.env, PYTHONPATH=str(ROOT / "postproc"))
        q = run([sys.executable, "-m", "perfvar", "analyze", str(out)], aenv, "analyze")
        if q.returncode != 0:
            fail(f"perfvar analyze exited {q.returncode}")
        result = json.loads((out / "analysis.json").read_text())
        slow = [x for x in result["anomalies"]
                if x["kind"] in CELL_KINDS and x.get("segment") is not None]
        return slow, sorted({x["rank"] for x in slow}), result

    def gross_only(self, slow: list) -> tuple[list, list[int]]:
        """The findings by at least --gross (the others printed), and the ranks they name."""
        fine = [x for x in slow if x["evidence"]["excess_rel"] < self.a.gross]
        for x in fine:
            print(f"run_mpi: rank {x['rank']} named in {x['segment']} by "
                  f"{100 * x['evidence']['excess_rel']:+.1f}%, under the gross "
                  f"{100 * self.a.gross:.0f}%: not judged here")
        slow = [x for x in slow if x not in fine]
        return slow, sorted({x["rank"] for x in slow})


@contextlib.contextmanager
def busy_process(cpu: str | None):
    """With a CPU: a process that spins on it, named pv-busy (its /proc comm), for the block."""
    if cpu is None:
        yield
        return
    spin = "open('/proc/self/comm', 'w').write('pv-busy')\nwhile True: pass"
    busy = subprocess.Popen(["taskset", "-c", cpu, sys.executable, "-c", spin])
    try:
        yield
    finally:
        busy.kill()
        busy.wait()


def check_run(a, p: subprocess.CompletedProcess, reference: str | None) -> None:
    """The instrumented run's exit code, perfvar's message, and its result against the
    reference's."""
    if p.returncode != a.expect_exit:
        fail(f"exit code {p.returncode}, expected {a.expect_exit}")
    if a.expect_stderr:  # one message from perfvar (or the OTF2 it links), whatever MPI adds
        ours = [line for line in p.stderr.splitlines() if line.startswith(("perfvar", "[OTF2]"))]
        if len(ours) != 1 or not re.search(a.expect_stderr, ours[0]):
            fail(f"expected one perfvar message matching {a.expect_stderr!r}, got {ours}")
    if reference is not None:
        m = re.search(a.same_result, p.stdout)
        if not m or m.group(0) != reference:
            fail(f"result differs with perfvar: {m.group(0) if m else None!r} vs {reference!r}")
        print(f"run_mpi: same result with and without perfvar: {reference}")


def check_trace_output(a) -> None:
    """No trace with --no-trace, else one that check_trace.py accepts."""
    if a.no_trace:
        if (a.out / "traces.otf2").exists():
            fail(f"a trace was written to {a.out} although none was expected")
        print("run_mpi: no trace written, as expected")
        return
    c = subprocess.run([sys.executable, str(HERE / "check_trace.py"), str(a.out)]
                       + shlex.split(a.check_trace))
    if c.returncode != 0:
        fail("trace check")


def unconfirmed(job: Job, slow: list, result: dict, stdout: str) -> list[int]:
    """The ranks of the gross findings in ``slow`` that the program's own timer (--own-clock)
    does not confirm. Confirmed (verdicts.OwnTimer): a finding in the timed segments whose
    rank that timer, read independently of perfvar, measured slower than its peers by at
    least half of perfvar's shift over the run (its median against the peers': the timer
    gives a mean over the run), and here by half the gross margin too. Such a rank really
    computed slower (a shared host's vCPU or memory), which a clean run cannot rule out; a
    false positive of perfvar has the program's timer see no difference."""
    a = job.a
    if not a.own_clock:
        return sorted({x["rank"] for x in slow})
    # verdicts reads perfvar's verdict kinds: the tree's package, as analyze() runs it
    if str(ROOT / "postproc") not in sys.path:
        sys.path.insert(0, str(ROOT / "postproc"))
    from verdicts import OwnTimer, slower_by_own_timer

    from perfvar.result import Finding

    key_of = {s["id"]: s["key"] for s in result["segments"]}
    timed = [s["key"] for s in result["segments"] if re.search(a.own_clock[0], json.dumps(s))]
    slower = slower_by_own_timer(a.own_clock[1], stdout, a.np) or {}
    timer = OwnTimer(slower, timed)
    named = set()
    for x in slow:
        said, ratio = x["evidence"]["shift_rel"], slower.get(x["rank"])
        if timer.confirms(Finding.from_json(x), key_of) and ratio >= a.gross / 2:
            print(f"run_mpi: rank {x['rank']} in {x['segment']} +{100 * said:.1f}%: the "
                  f"program's own timer measured it {100 * ratio:+.1f}% against its peers: "
                  "the machine's, not perfvar's")
            continue
        if ratio is not None:
            print(f"run_mpi: rank {x['rank']} in {x['segment']} +{100 * said:.1f}%: the "
                  f"program's own timer measured it {100 * ratio:+.1f}%: not confirmed")
        named.add(x["rank"])
    return sorted(named)


def expect_clean(job: Job, slow: list, result: dict, stdout: str) -> None:
    """--analyze-expect none: no rank named by a gross margin that the program's own timer
    does not confirm, or one the repeats with the CPUs alternating do not name every time."""
    a = job.a
    slow, _ = job.gross_only(slow)
    named = unconfirmed(job, slow, result, stdout)
    if not named:
        print("run_mpi: analysis names nobody by a gross margin the program's own timer "
              "does not confirm, as expected")
        return
    if not a.bind:
        fail(f"clean run, but analysis names ranks {named}")
    # A false positive of perfvar or of the program names the same rank whatever its
    # CPU; a slow phase of the machine moves (the hypervisor remaps vCPUs). Repeat with
    # the placement alternating until the named rank changes or disappears.
    named_every_time = set(named)
    binds = [" ".join(reversed(a.bind.split())), a.bind] * 2
    for extra, bind in enumerate(binds[: a.confirm_runs], start=1):
        print(f"run_mpi: clean run {extra} names ranks {sorted(named_every_time)} "
              f"({ {x['rank']: x['cpu'] for x in slow} }); repeating with CPUs '{bind}'")
        out = Path(f"{a.out}.repeat{extra}")
        stdout = job.rerun(out, bind, f"repeat {extra}")
        found, _, result = job.analyze(out)
        slow, _ = job.gross_only(found)
        named_every_time &= set(unconfirmed(job, slow, result, stdout))
        if not named_every_time:
            print("run_mpi: the finding did not stay with one rank: it belonged to the "
                  "machine, not to perfvar or the program")
            return
    fail(f"ranks {sorted(named_every_time)} named in {a.confirm_runs + 1} clean runs "
         "with alternating CPUs: the finding follows the rank")


def expect_named(job: Job, slow: list, named: list[int], result: dict) -> None:
    """--analyze-expect RANK:SEGMENT_REGEX: that rank alone named, within --attempts runs, in a
    segment matching the regex."""
    a = job.a
    rank, seg_re = a.analyze_expect.split(":", 1)
    for attempt in range(1, a.attempts + 1):
        if attempt > 1:
            out = Path(f"{a.out}.attempt{attempt}")
            job.rerun(out, a.bind, f"attempt {attempt}")
            slow, named, result = job.analyze(out)
        if named == [int(rank)]:
            break
        cells = [(j["rank"], j["median_ns"], j["overlap"]) for j in result["judgements"]
                 if j["status"] in ("ok", "slow")]
        print(f"run_mpi: attempt {attempt}: analysis names ranks {named}, expected "
              f"[{rank}]; judged (rank, median ns, overlap): {cells}")
    else:
        fail(f"rank {rank} not named in {a.attempts} attempt(s)")
    segs = {s["id"]: s for s in result["segments"]}
    labels = [json.dumps(segs.get(x["segment"], x["segment"])) for x in slow]
    if not any(re.search(seg_re, lab) for lab in labels):
        fail(f"rank {rank} named, but in segments {labels}, not matching {seg_re!r}")
    # The injection is more work: the code's finding, never a slower core.
    kinds = sorted({x["kind"] for x in slow})
    if kinds != [MORE_WORK]:
        fail(f"rank {rank} named as {kinds}, expected {MORE_WORK} (the work injected)")
    print(f"run_mpi: analysis names rank {rank} in {labels[0]}")


def main() -> None:
    a = parse_args()
    if a.skip_unless_metrics:
        skip_unless_metrics(a.skip_unless_metrics)
    mpi = mpiexec_cmd(a.mpiexec, a.np)
    env = clean_env()
    reference = reference_result(a, mpi, env) if a.same_result else None
    if a.bind and "--oversubscribe" in mpi:
        mpi += ["--bind-to", "none"]
    job = Job(a, mpi, env)
    with busy_process(a.busy):
        p = job.instrumented(a.out, a.bind)
    check_run(a, p, reference)
    check_trace_output(a)
    if not a.analyze_expect:
        return
    slow, named, result = job.analyze(a.out)
    if a.analyze_expect == "none":
        expect_clean(job, slow, result, p.stdout)
    else:
        expect_named(job, slow, named, result)


if __name__ == "__main__":
    main()
