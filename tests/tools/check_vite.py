#!/usr/bin/env python3
"""Open a perfvar trace in ViTE (Debian's `vite`) on a virtual X server and check what it draws.

usage: check_vite.py TRACE_DIR [--out DIR]

1. ViTE exports the whole trace as SVG (`vite -e out.svg`): it must parse it without errors and
   draw one message arrow per message of the trace, from the sender's rank to the receiver's (the
   arrows' ends are matched to the location rows by the row labels ViTE writes next to them);
2. ViTE's own GUI on the same trace, screenshot taken with ImageMagick's `import` (when
   installed) until the arrows show: white runs crossing the grey band between the rank rows.

ViTE 1.2 (Debian 12) keeps only the COMM_LOCATIONS group of the OTF2 definitions: it prints "New
comm group ... Not yet implemented" for every COMM_GROUP and then "Warning: cannot find rank R in
communicator C" for both ends of every message, and takes R as a location id. OTF2 requires a
communicator's group to be a COMM_GROUP (otf2-print rejects a Comm that names the COMM_LOCATIONS
group), so a valid trace cannot avoid these warnings there; perfvar's master thread of world rank
R has location id R, so ViTE's guess lands on the right row for MPI_COMM_WORLD. The warnings are
therefore accepted only when ViTE said it does not implement COMM_GROUP, and only in that form: a
ViTE that reads COMM_GROUP must print none. The same guess draws a message on another communicator
between the wrong ranks, and ViTE draws none for a message another thread sent or received: this
check expects a trace whose messages are on MPI_COMM_WORLD between master threads (the golden
trace of unit.convert; the stencil's).

Exit 0: pass; 1: failure (reasons printed); 77: vite or Xvfb is not installed (ctest SKIP).
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SKIP = 77
TIMEOUT_S = 120  # ViTE's export of a small trace takes well under a second


def expected_arrows(trace: Path) -> collections.Counter:
    """(sender world rank, receiver world rank) -> messages sent, from the trace's MpiSend and
    MpiIsend events (peers are ranks in the event's communicator)."""
    import otf2

    def rank_of(location) -> int:
        return int(location.group.name.rsplit(" ", 1)[1])

    def world_ranks(comm) -> list[int]:
        return [m if isinstance(m, int) else rank_of(m) for m in comm.group.members]

    sent: collections.Counter = collections.Counter()
    with otf2.reader.open(str(trace / "traces.otf2")) as reader:
        for loc, ev in reader.events:
            if isinstance(ev, (otf2.events.MpiSend, otf2.events.MpiIsend)):
                sent[(rank_of(loc), world_ranks(ev.communicator)[ev.receiver])] += 1
    return sent


def location_rows(trace: Path) -> dict[str, int]:
    """ViTE's label of each location row ("<name>_<location id>") -> the location's rank."""
    import otf2

    with otf2.reader.open(str(trace / "traces.otf2")) as reader:
        return {f"{loc.name}_{int(loc._ref)}": int(loc.group.name.rsplit(" ", 1)[1])
                for loc in reader.definitions.locations}


def svg_arrows(svg: str, rows: dict[str, int]) -> tuple[collections.Counter, list[str]]:
    """(sender rank, receiver rank) -> arrows ViTE drew. An arrow is a <line> from the middle of
    the sender's row to the middle of the receiver's, where ViTE writes the row's label."""
    row_y: dict[float, int] = {}
    for y, label in re.findall(r'<text x="[^"]*" y="([^"]*)"[^>]*>([^<]*)</text>', svg):
        if label in rows:
            row_y[float(y)] = rows[label]
    errors = []
    if not row_y:
        return collections.Counter(), ["no location row label in ViTE's SVG"]

    def rank_at(y: float):
        near = min(row_y, key=lambda r: abs(r - y))
        return row_y[near] if abs(near - y) < 0.5 else None

    drawn: collections.Counter = collections.Counter()
    for y1, y2 in re.findall(r'<line x1="[^"]*" y1="([^"]*)" x2="[^"]*" y2="([^"]*)"', svg):
        a, b = rank_at(float(y1)), rank_at(float(y2))
        if a is None or b is None:
            errors.append(f"an arrow from y={y1} to y={y2} does not join two location rows")
        else:
            drawn[(a, b)] += 1
    return drawn, errors


def check_log(log: str) -> list[str]:
    errors = []
    if not re.search(r"\b0 errors and 0 warnings were found during parsing", log):
        errors.append("ViTE did not report a clean parse (no '0 errors and 0 warnings')")
    for bad in ("cannot find communicator", "searching for rank", "not yet handled"):
        if bad in log:
            errors.append(f"ViTE: {bad!r} (a communicator or group it cannot use)")
    rank_warnings = re.findall(r"Warning: cannot find rank \d+ in communicator \d+", log)
    if rank_warnings and "New comm group" not in log:
        errors.append(f"ViTE reads COMM_GROUP groups, yet printed {len(rank_warnings)} "
                      f"'cannot find rank' warnings")
    return errors


def start_xvfb() -> tuple[subprocess.Popen, str]:
    """A private X server on a free display (Xvfb -displayfd picks it: no race with other
    servers); returns the process and its DISPLAY."""
    r, w = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "1024x768x24",
                             "-nolisten", "tcp"], pass_fds=(w,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(w)
    with os.fdopen(r) as f:
        number = f.readline().strip()  # written once the server accepts clients
    if not number.isdigit():
        proc.kill()
        proc.wait()
        raise RuntimeError("Xvfb did not start")
    return proc, f":{number}"


def read_ppm(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and RGB bytes of a binary PPM (P6) with 8-bit samples."""
    fields, pos = [], 2
    while len(fields) < 3:
        m = re.compile(rb"\s*(#[^\n]*\n\s*)*(\d+)").match(data, pos)
        fields.append(int(m.group(2)))
        pos = m.end()
    if fields[2] != 255:
        raise ValueError(f"PPM with maxval {fields[2]}, expected 8-bit samples")
    return fields[0], fields[1], data[pos + 1:]


def arrow_crossings(ppm: bytes) -> int:
    """Most white runs on one row of the grey band ViTE draws between container rows, right of
    the container labels (the left quarter): each is an arrow crossing from one rank to another.
    A band row is one whose most common colour, on at least half of it, is a dark grey (neither
    the black of an empty state row nor the light greys and blues of the window's widgets)."""
    width, height, rgb = read_ppm(ppm)
    best = 0
    for y in range(height):
        row = rgb[3 * (width * y + width // 4): 3 * width * (y + 1)]
        px = [row[i: i + 3] for i in range(0, len(row), 3)]
        colour, n = collections.Counter(px).most_common(1)[0]
        if n < len(px) // 2 or max(colour) >= 200 or min(colour) < 60:
            continue
        runs, inside = 0, False
        for p in px:
            white = min(p) >= 245
            runs += white and not inside
            inside = white
        best = max(best, runs)
    return best


def screenshot(trace: Path, display: str, out: Path, env: dict) -> tuple[int, str]:
    """Runs ViTE's GUI and takes screenshots until the arrows show or TIMEOUT_S passes; keeps the
    last one as out/vite.png. Returns the arrow crossings seen and ViTE's output."""
    log = out / "vite-gui.log"
    with open(log, "w") as f:
        gui = subprocess.Popen(["vite", str(trace / "traces.otf2")], env=env, stdout=f,
                               stderr=subprocess.STDOUT)
    crossings = 0
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline and gui.poll() is None:
            shot = subprocess.run(["import", "-display", display, "-window", "root",
                                   "-depth", "8", "ppm:-"], capture_output=True, env=env,
                                  timeout=60)
            if shot.returncode == 0 and shot.stdout.startswith(b"P6"):
                crossings = arrow_crossings(shot.stdout)
                if crossings:
                    subprocess.run(["convert", "ppm:-", str(out / "vite.png")],
                                   input=shot.stdout, env=env, timeout=60)
                    break
            time.sleep(0.5)
    finally:
        gui.terminate()
        try:
            gui.wait(timeout=10)
        except subprocess.TimeoutExpired:
            gui.kill()
            gui.wait()
    return crossings, log.read_text(errors="replace")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", type=Path, help="trace directory (holding traces.otf2)")
    ap.add_argument("--out", type=Path, help="where to keep vite.svg, vite.png and the logs "
                    "(default: a temporary directory, removed)")
    args = ap.parse_args()
    missing = [tool for tool in ("vite", "Xvfb") if not shutil.which(tool)]
    if missing:
        print(f"SKIP: {', '.join(missing)} not installed (Debian: apt-get install vite xvfb)")
        return SKIP
    if not (args.trace / "traces.otf2").is_file():
        print(f"FAIL: {args.trace}/traces.otf2 does not exist")
        return 1
    tmp = None
    if args.out:
        out = args.out
        out.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="check_vite.")
        out = Path(tmp.name)

    expected = expected_arrows(args.trace)
    errors = []
    if not expected:
        errors.append("the trace holds no message: nothing for ViTE to draw")
    xvfb, display = start_xvfb()
    # ViTE keeps its settings under HOME; a fresh one keeps the test from the user's and theirs
    # from the test.
    runtime = out / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = dict(os.environ, DISPLAY=display, HOME=str(out), XDG_RUNTIME_DIR=str(runtime))
    env.pop("XAUTHORITY", None)
    try:
        svg = out / "vite.svg"
        run = subprocess.run(["vite", "-e", str(svg), str(args.trace / "traces.otf2")],
                             capture_output=True, text=True, env=env, timeout=TIMEOUT_S)
        log = run.stdout + run.stderr
        (out / "vite-export.log").write_text(log)
        if run.returncode != 0 or not svg.is_file():
            errors.append(f"vite -e exited with {run.returncode} and "
                          f"{'an' if svg.is_file() else 'no'} SVG")
        else:
            errors += check_log(log)
            drawn, arrow_errors = svg_arrows(svg.read_text(), location_rows(args.trace))
            errors += arrow_errors
            if drawn != expected:
                errors.append(f"ViTE drew arrows (sender rank, receiver rank): {dict(drawn)}, "
                              f"the trace has messages {dict(expected)}")
        crossings, shot_note = None, "no screenshot (ImageMagick's import is not installed)"
        if shutil.which("import") and shutil.which("convert"):
            crossings, gui_log = screenshot(args.trace, display, out, env)
            shot_note = f"screenshot: {crossings} arrows crossing between rank rows"
            errors += [f"GUI: {e}" for e in check_log(gui_log) if "0 errors" not in e]
            if not crossings:
                errors.append(f"no arrow showed in ViTE's window within {TIMEOUT_S} s")
    finally:
        xvfb.terminate()
        xvfb.wait()
    n_warn = log.count("Warning: cannot find rank")
    if errors:
        print(f"FAIL: {args.trace}")
        for e in errors:
            print(f"  {e}")
        if tmp is None:
            print(f"  (ViTE's output and drawings in {out})")
        return 1
    print(f"OK: ViTE drew all {sum(expected.values())} messages as arrows between the right "
          f"ranks; {shot_note}; {n_warn} 'cannot find rank' warnings from ViTE's unimplemented "
          f"COMM_GROUP (ViTE's fallback, rank = location id, holds for perfvar traces)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
