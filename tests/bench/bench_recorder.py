#!/usr/bin/env python3
"""What perfvar adds per traced MPI call in this build, as one table (a benchmark: it prints, it
asserts nothing about time; exit 1 only when a run fails or prints nothing to parse).

  bench_recorder.py --build DIR [--mpi openmpi|mpich] [--mpiexec MPIEXEC] [--quick] [--out DIR]

Runs, each under `mpiexec -n 2` with PERFVAR_CALIBRATION=off and PERFVAR_OUTPUT set, the programs
built in DIR/tests and linked with perfvar's MPI layer (as ctest bench.mpi_calls.* does):
  bench_mpi_calls_FL        (bench_mpi_calls.c) the fenced clock-read pair and, traced vs PMPI in
                            alternating blocks, MPI_Test on MPI_REQUEST_NULL / an inactive
                            persistent request, a 0-byte Isend/Irecv/Waitall exchange, an Allreduce
  bench_mpi_calls_f_FL      (bench_mpi_calls_f.f90) the same measures from `use mpi`, but the
                            fenced pair
  bench_mpi_calls_FL        again with PERFVAR_METRICS=none (counters off) and with
                            PERFVAR_METRICS_MIN_US=0 (the counters read at every call's entry:
                            the worst case, every segment just over the threshold); the run above
                            keeps the default (counters on, MPI_Test's segments too short to read)
  bench_mpi_calls_FL only test|allreduce N, and the same with N = 0: trace bytes per traced call.
Every time is a median over rounds of per-call ns from whole blocks (see the programs' headers);
"added ns" = traced - plain; the ratio divides it by the fenced pair of the C run, the floor that a
wrapper's two clock reads cannot go under. The Fortran rows come from their own run, divided by the
C run's pair (Fortran has no fenced read of its own). The median leaves out the rare block that held
a trace-buffer flush (printed: how many there were) and those the host took the vCPU away in.
Each row is checked against the calls perfvar counted (rank-N.json): a row whose plain side went
through perfvar too (MPICH's Fortran PMPI_TEST calls the C MPI_Test) is printed as n/a.

Bytes on disk per traced call: everything the timed runs left in their output directories (file
sizes: the OTF2 archive, the raw records when they were kept, the metadata) over the traced MPI calls
of all ranks (rank-N.json threads[].calls), next to the ns. The count runs below keep their records
(PERFVAR_KEEP_RECORDS=1) to measure them.

Bytes per traced call: (bytes after N calls per rank - bytes after 0) / (2 ranks x N), so the fixed
part (Init/Finalize events, headers) drops out; the totals are printed too. OTF2: the size of
DIR/traces/*.evt. perfvar records (DIR/perfvar/records/*.pvr, when the build writes them): the part in
use, 4096-byte header + 16 bytes per unit up to the end unit, as the files are allocated ahead.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from run_mpi import mpiexec_cmd  # the launcher flags every MPI test uses

ROW = re.compile(r"^bench-row measure=(\S+) (.*)$", re.MULTILINE)
COUNT = re.compile(r"^bench-count kind=(\S+) calls_per_rank=(\d+) ranks=(\d+)", re.MULTILINE)

# Records format (src/recorder/records.h at the time of writing).
REC_HEADER, REC_UNIT = 4096, 16
REC_END, REC_FACT, REC_SKIP, REC_METRIC = 0x0000, 0xFFFA, 0xFFF8, 0xFFF6
REC_CLOSED = 1  # pv_rec_header.state; units (offset 40) is then valid


def cache_value(build: Path, name: str) -> str | None:
    m = re.search(rf"^{name}:[A-Z]+=(.*)$", (build / "CMakeCache.txt").read_text(), re.MULTILINE)
    return m.group(1) if m and m.group(1) and not m.group(1).endswith("NOTFOUND") else None


def run(mpi: list[str], prog: list[str], out: Path, keep_records: bool = False,
        extra: dict[str, str] | None = None) -> str:
    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFVAR_")}
    env.pop("LD_PRELOAD", None)
    env.update(PERFVAR_CALIBRATION="off", PERFVAR_OUTPUT=str(out))
    if keep_records:  # the count runs measure the records too
        env.update(PERFVAR_KEEP_RECORDS="1")
    env.update(extra or {})
    if os.geteuid() == 0:  # Open MPI refuses root without both; MPICH ignores them
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = mpi + prog
    keep = "PERFVAR_KEEP_RECORDS=1 " if keep_records else ""
    keep += "".join(f"{k}={v} " for k, v in (extra or {}).items())
    print(f"$ {keep}PERFVAR_CALIBRATION=off PERFVAR_OUTPUT={out} {' '.join(cmd)}", flush=True)
    p = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        sys.stdout.write(p.stdout + p.stderr)
        sys.exit(f"bench_recorder: FAILED: exit code {p.returncode}")
    for line in p.stderr.splitlines():  # perfvar's own messages matter for the reader
        print(f"[stderr] {line}")
    return p.stdout


def rows(stdout: str) -> dict[str, dict[str, str]]:
    found = {m.group(1): dict(kv.split("=", 1) for kv in m.group(2).split())
             for m in ROW.finditer(stdout)}
    if not found:
        sys.stdout.write(stdout)
        sys.exit("bench_recorder: FAILED: no bench-row line in the output")
    return found


def counted(out: Path, expect: dict[str, int]) -> str | None:
    """None when perfvar counted (rank-N.json) exactly the expected calls on both ranks, else why not:
    a plain PMPI call that still went through perfvar (MPICH's Fortran PMPI_TEST calls the C
    MPI_Test, which perfvar wraps) makes the "plain" side traced too, and its row meaningless."""
    for rank in range(2):
        try:
            calls = json.loads((out / "perfvar" / f"rank-{rank}.json").read_text())["mpi"]["calls"]
        except (OSError, ValueError, KeyError):
            return f"{out}: no perfvar/rank-{rank}.json with mpi.calls, the calls were not checked"
        wrong = {k: calls.get(k, 0) for k, v in expect.items() if calls.get(k, 0) != v}
        if wrong:
            return f"{out}: rank {rank} perfvar counted {wrong}, expected {expect}"
    return None


def records_used(path: Path, notes: list[str]) -> int:
    """Bytes of a records file in use. A unit whose tag is 0 where a unit group may start ends the
    data. Not simply the first all-zero unit: the raw second unit of a FACT (a 0-byte message's),
    the raw units of a METRIC (ceil(x / 2) after it, x its values) and the padding a SKIP jumps
    over (end of a mapped window) may be all zeros, so they are stepped over as the reader
    (src/recorder/replay.c) does. A closed file's header counts its units: compared."""
    data = path.read_bytes()
    n = max(0, (len(data) - REC_HEADER) // REC_UNIT)
    i = 0
    while i < n:
        a, _b, tag, _cpu, x = struct.unpack_from("<IIHHH", data, REC_HEADER + i * REC_UNIT)
        if tag == REC_END:
            break
        i += (2 if tag == REC_FACT else 1 + a if tag == REC_SKIP
              else 1 + (x + 1) // 2 if tag == REC_METRIC else 1)
    i = min(i, n)
    if len(data) >= 48 and data[:8] == b"PVREC01\n":
        state, units = struct.unpack_from("<I", data, 24)[0], struct.unpack_from("<Q", data, 40)[0]
        if state == REC_CLOSED and units != i:
            notes.append(f"{path}: {i} units in use by the scan, the header says {units}")
    return REC_HEADER + i * REC_UNIT


def trace_bytes(out: Path, notes: list[str]) -> dict[str, int | None]:
    rec = sorted((out / "perfvar" / "records").glob("*.pvr"))
    return {"evt": sum(f.stat().st_size for f in (out / "traces").glob("*.evt")),
            "pvr": sum(records_used(f, notes) for f in rec) if rec else None}


def disk_bytes(out: Path) -> dict[str, int]:
    """Bytes the run left in its output directory (file sizes, as `ls -l` and a copy see them), by
    part: the OTF2 archive (traces.otf2, traces.def, traces/, traces.marker), the raw records
    (perfvar/records/, kept only when a rank died or PERFVAR_KEEP_RECORDS=1), and the rest (the
    perfvar/*.json metadata)."""
    parts = {"otf2": 0, "records": 0, "other": 0}
    for f in out.rglob("*"):
        if not f.is_file():
            continue
        rel = f.relative_to(out).parts
        part = ("otf2" if rel[0].startswith("traces") else
                "records" if rel[:2] == ("perfvar", "records") else "other")
        parts[part] += f.stat().st_size
    return parts


def traced_calls(out: Path) -> int:
    """Traced MPI calls (and user timer starts/stops) of every rank: rank-N.json threads[].calls."""
    total = 0
    for meta in sorted((out / "perfvar").glob("rank-*.json")):
        try:
            total += sum(int(t.get("calls", 0)) for t in json.loads(meta.read_text())["threads"])
        except (OSError, ValueError, KeyError):
            pass
    return total


def disk_row(label: str, out: Path, added_ns: str) -> str:
    """One table row: bytes on disk per traced MPI call of the run in out, after the ns that run
    added per MPI_Test (added_ns, formatted)."""
    parts, calls = disk_bytes(out), traced_calls(out)
    if not calls:
        return f"| {label} | {added_ns} | 0 | | | | |"
    per = {k: v / calls for k, v in parts.items()}
    return (f"| {label} | {added_ns} | {calls} | {per['otf2']:.1f} | {per['records']:.1f} "
            f"| {per['other']:.1f} | {sum(per.values()):.1f} |")


def buffer_moves(out: Path) -> str:
    """How often rank 0 stopped to flush its OTF2 buffer or move its records window (the median of
    the blocks leaves those out; they are what a long run pays on top)."""
    said = []
    try:
        meta = json.loads((out / "perfvar" / "rank-0.json").read_text())
        said.append(f"{meta['events']['buffer_flushes']} OTF2 buffer flush(es)")
        for t in meta["threads"]:
            said.append(f"thread {t['thread']}: records window moved {t['buffer_moves']} time(s), "
                        f"{t['buffer_move_ms']:.1f} ms")
    except (OSError, ValueError, KeyError):
        pass
    return "; ".join(said) or "no flush count found"


def metric_events(out: Path) -> list[str]:
    """The counters rank 0 recorded (perfvar/rank-0.json metrics.events); [] when none."""
    try:
        meta = json.loads((out / "perfvar" / "rank-0.json").read_text())
        return list((meta.get("metrics") or {}).get("events") or [])
    except (OSError, ValueError):
        return []


def default_min_us() -> int | None:
    """PV_METRICS_MIN_US_DEFAULT of the source tree (src/config/config.h)."""
    header = Path(__file__).resolve().parents[2] / "src" / "config" / "config.h"
    m = re.search(r"#define PV_METRICS_MIN_US_DEFAULT (\d+)", header.read_text())
    return int(m.group(1)) if m else None


def metrics_table(r: dict, metrics: dict, out: Path, pair: float) -> None:
    """MPI_Test's added cost with the counters off, on (no read: its segments are short) and read
    at every call, and what that read costs a run whose every segment is just over the threshold."""
    print("\n| MPI_Test (MPI_REQUEST_NULL), C, counters (PERFVAR_METRICS) | added ns "
          "| ratio to fenced pair |")
    print("| --- | ---: | ---: |")
    added = {}
    for key, label, rr in (("off", "off (none)", metrics["off"]),
                           ("on", "on, default threshold: no read", r),
                           ("every", "read at every call (PERFVAR_METRICS_MIN_US=0)",
                            metrics["every"])):
        added[key] = float(rr["test_null"]["traced_ns"]) - float(rr["test_null"]["plain_ns"])
        print(f"| {label} | {added[key]:.1f} | {added[key] / pair:.2f} |")
    events = metric_events(out / "c-metrics-every")
    if not events:
        print("counters: none could be opened here (see the [stderr] lines): on = off")
        return
    read_ns = added["every"] - added["on"]
    print(f"counters: {','.join(events)}; one read adds {read_ns:.0f} ns a call")
    min_us = default_min_us()
    if min_us:
        print(f"worst case at the default threshold ({min_us} us): every segment just over it "
              f"pays one read: {100 * read_ns / (min_us * 1e3):.2f} % of the run time")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", type=Path, required=True, help="a configured and built perfvar tree")
    ap.add_argument("--mpi", choices=["openmpi", "mpich"], default="openmpi")
    ap.add_argument("--mpiexec", help="the flavour's mpiexec (default: from the build, else mpiexec.FLAVOUR)")
    ap.add_argument("--quick", action="store_true", help="small counts (ctest)")
    ap.add_argument("--out", type=Path, help="trace directories (default BUILD/tests/traces/bench.recorder)")
    a = ap.parse_args()
    build = a.build.resolve()
    calls, rounds, count = (2000, 9, 2000) if a.quick else (2000, 101, 100000)
    comm = calls // 10 + 1  # exchanges / Allreduce steps per block (bench_mpi_calls.c)
    out = (a.out or build / "tests" / "traces" / "bench.recorder").resolve()
    # The flavour's own launcher: given, else the one the build found, else Debian's name for it.
    mpiexec = (a.mpiexec or cache_value(build, f"PERFVAR_{a.mpi.upper()}_MPIEXEC")
               or shutil.which(f"mpiexec.{a.mpi}"))
    c_prog = build / "tests" / f"bench_mpi_calls_{a.mpi}"
    f_prog = build / "tests" / f"bench_mpi_calls_f_{a.mpi}"
    for need, what in ((mpiexec, f"{a.mpi} mpiexec (give --mpiexec)"), (c_prog.exists(), c_prog),
                       (f_prog.exists(), f_prog)):
        if not need:
            sys.exit(f"bench_recorder: FAILED: no {what} (build the tests first)")
    mpi = mpiexec_cmd(mpiexec, 2)

    # Every row is checked against what perfvar counted: only the traced side may reach perfvar.
    blocks = rounds + 1  # the warm-up round goes through perfvar too
    invalid: dict[str, str] = {}
    r = rows(run(mpi, [str(c_prog), str(calls), str(rounds)], out / "c"))
    # The C program's MPI_Test series: on MPI_REQUEST_NULL, on an inactive request, and from
    # one site reached by two call paths (bench_mpi_calls.c).
    for keys, expect in ((("test_null", "test_inactive"), {"MPI_Test": 3 * blocks * calls}),
                         (("ping",), {"MPI_Isend": blocks * comm, "MPI_Waitall": blocks * comm}),
                         (("allreduce",), {"MPI_Allreduce": blocks * comm})):
        why = counted(out / "c", expect)
        invalid.update({k: why for k in keys if why})
    # Counters (PERFVAR_METRICS): off, and read at every call (threshold 0); the run above has them
    # at their default (on, read only after segments of PERFVAR_METRICS_MIN_US).
    metrics = {"off": rows(run(mpi, [str(c_prog), str(calls), str(rounds)], out / "c-metrics-off",
                               extra={"PERFVAR_METRICS": "none"})),
               "every": rows(run(mpi, [str(c_prog), str(calls), str(rounds)], out / "c-metrics-every",
                                 extra={"PERFVAR_METRICS_MIN_US": "0"}))}
    r.update(rows(run(mpi, [str(f_prog), str(calls), str(rounds)], out / "fortran")))
    for keys, expect in ((("test_null_f", "test_inactive_f"), {"MPI_Test": 2 * blocks * calls}),
                         (("ping_f",), {"MPI_Isend": blocks * comm, "MPI_Waitall": blocks * comm}),
                         (("allreduce_f",), {"MPI_Allreduce": blocks * comm})):
        why = counted(out / "fortran", expect)
        invalid.update({k: why for k in keys if why})

    notes: list[str] = []
    sizes = {}
    for kind, region in (("test", "MPI_Test"), ("allreduce", "MPI_Allreduce")):
        for n in (count, 0):
            d = out / f"only-{kind}-{n}"
            m = COUNT.search(run(mpi, [str(c_prog), "only", kind, str(n)], d, keep_records=True))
            if not m or int(m.group(2)) != n:
                sys.exit(f"bench_recorder: FAILED: {d}: no bench-count line for {n} calls")
            why = counted(d, {"MPI_Test": 0, "MPI_Allreduce": 0, region: n})
            if why:
                notes.append(why)
            sizes[kind, n] = trace_bytes(d, notes)

    pair = float(r["fenced_pair"]["ns"])
    print(f"\nbench_recorder: {a.mpi}, build {build}; {rounds} rounds (+1 warm-up), per block {calls} "
          f"calls (MPI_Test, fenced pair) or {comm} exchanges/steps; medians of rank 0\n")
    print("| measure | added ns | ratio to fenced pair |")
    print("| --- | ---: | ---: |")
    print(f"| fenced pair (2 x {r['fenced_pair']['read']}), C | {pair:.1f} | 1.00 |")
    names = [("test_null", "MPI_Test (MPI_REQUEST_NULL), C"),
             ("test_inactive", "MPI_Test (inactive persistent), C"),
             ("test_null_f", "MPI_Test (MPI_REQUEST_NULL), Fortran use mpi"),
             ("test_inactive_f", "MPI_Test (inactive persistent), Fortran use mpi"),
             ("ping", "0-byte Isend/Irecv/Waitall exchange (per exchange), C"),
             ("ping_f", "0-byte Isend/Irecv/Waitall exchange (per exchange), Fortran use mpi"),
             ("allreduce", "MPI_Allreduce, 1 double (per step), C"),
             ("allreduce_f", "MPI_Allreduce, 1 double (per step), Fortran use mpi")]
    for key, label in names:
        added = float(r[key]["traced_ns"]) - float(r[key]["plain_ns"])
        cells = "n/a | n/a" if key in invalid else f"{added:.1f} | {added / pair:.2f}"
        print(f"| {label} | {cells} |")
    print("\nFortran rows: their own run's added ns over the C run's fenced pair (no fenced read in Fortran).")
    print("traced / plain ns per call (medians):",
          "; ".join(f"{k} {float(r[k]['traced_ns']):.1f} / {float(r[k]['plain_ns']):.1f}" for k, _ in names))
    for key, why in invalid.items():
        print(f"n/a {key}: {why}")
    for what in ("c", "fortran"):
        print(f"{what} run, rank 0: {buffer_moves(out / what)}")
    metrics_table(r, metrics, out, pair)

    def test_ns(key: str) -> str:
        if key in invalid:
            return "n/a"
        return f"{float(r[key]['traced_ns']) - float(r[key]['plain_ns']):.1f}"

    print("\n| bytes on disk per traced MPI call, whole output directory after the run | added ns "
          "per MPI_Test | traced calls (all ranks) | OTF2 | records | other | total |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    print(disk_row("the timed run above, C", out / "c", test_ns("test_null")))
    print(disk_row("the timed run above, Fortran use mpi", out / "fortran", test_ns("test_null_f")))

    print(f"\n| trace bytes per traced call ({count} calls per rank, 2 ranks) | bytes, N run "
          "| bytes, 0-call run | per call (difference / calls) | per call (total / calls) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for what, label in (("evt", "OTF2 events (traces/*.evt)"),
                        ("pvr", "perfvar records (perfvar/records/*.pvr, used)")):
        for kind, call in (("test", "MPI_Test"), ("allreduce", "MPI_Allreduce")):
            full, empty = sizes[kind, count][what], sizes[kind, 0][what]
            if full is None or empty is None:
                print(f"| {label}, {call} only | none written | | | |")
                continue
            traced = 2 * count
            print(f"| {label}, {call} only | {full} | {empty} | {(full - empty) / traced:.2f} "
                  f"| {full / traced:.2f} |")
    for note in notes:
        print(f"note: {note}")


if __name__ == "__main__":
    main()
