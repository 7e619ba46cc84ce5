#!/usr/bin/env python3
"""Open a perfvar trace in ViTE (Debian's `vite`) on a virtual X server and check what it draws.

usage: check_vite.py TRACE_DIR [--out DIR] [--skip-if-missing]

1. ViTE exports the whole trace as SVG (`vite -e out.svg`): it must parse it without errors and
   draw one message arrow per message of the trace, from the sender's rank to the receiver's (the
   arrows' ends are matched to the location containers ViTE draws around the row labels it
   writes); where the trace holds counters (Metric events), ViTE draws them as variables: curves
   in rows of each location's container below its state row, which must be there;
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


def trace_facts(trace: Path) -> tuple[collections.Counter, set[int]]:
    """What ViTE must draw, in one pass over the events: (sender world rank, receiver world rank)
    -> messages sent, from the MpiSend and MpiIsend events (peers are ranks in the event's
    communicator); and the ranks whose locations hold Metric events (counter reads)."""
    import otf2

    def rank_of(location) -> int:
        return int(location.group.name.rsplit(" ", 1)[1])

    def world_ranks(comm) -> list[int]:
        return [m if isinstance(m, int) else rank_of(m) for m in comm.group.members]

    sent: collections.Counter = collections.Counter()
    counted: set[int] = set()
    with otf2.reader.open(str(trace / "traces.otf2")) as reader:
        for loc, ev in reader.events:
            if isinstance(ev, (otf2.events.MpiSend, otf2.events.MpiIsend)):
                sent[(rank_of(loc), world_ranks(ev.communicator)[ev.receiver])] += 1
            elif isinstance(ev, otf2.events.Metric):
                counted.add(rank_of(loc))
    return sent, counted


def location_rows(trace: Path) -> dict[str, int]:
    """ViTE's label of each location row ("<name>_<location id>") -> the location's rank."""
    import otf2

    with otf2.reader.open(str(trace / "traces.otf2")) as reader:
        return {f"{loc.name}_{int(loc._ref)}": int(loc.group.name.rsplit(" ", 1)[1])
                for loc in reader.definitions.locations}


def location_spans(svg: str, rows: dict[str, int]) -> list[tuple[float, float, int]]:
    """(top, bottom, rank) of each location's container: the <rect> ViTE draws around the label
    it writes for the location (in its middle). Without counters the container is the state
    row; with them it also holds one row per counter, below the state row."""
    rects = [tuple(map(float, r)) for r in re.findall(
        r'<rect x="([^"]*)" y="([^"]*)" width="([^"]*)" height="([^"]*)"', svg)]
    spans = []
    for x, y, label in re.findall(r'<text x="([^"]*)" y="([^"]*)"[^>]*>([^<]*)</text>', svg):
        if label not in rows:
            continue
        x, y = float(x), float(y)
        around = [r for r in rects if r[0] <= x <= r[0] + r[2] and r[1] <= y <= r[1] + r[3]]
        if around:
            top = min(around, key=lambda r: r[2] * r[3])  # the innermost: the location's own
            spans.append((top[1], top[1] + top[3], rows[label]))
    return spans


def svg_lines(svg: str) -> tuple[list[tuple[float, ...]], list[tuple[float, ...]]]:
    """ViTE's <line>s split into (message arrows, the rest: counter curves). An arrow's line
    ends where ViTE draws its head, a <polygon> rotated about that point."""
    heads = {(round(float(x), 2), round(float(y), 2)) for x, y in re.findall(
        r'<polygon points="[^"]*" transform = "rotate\([^ ]+ ([^ ]+) ([^ )]+) ?\)"', svg)}
    arrows, others = [], []
    for line in re.findall(r'<line x1="([^"]*)" y1="([^"]*)" x2="([^"]*)" y2="([^"]*)"', svg):
        x1, y1, x2, y2 = map(float, line)
        (arrows if (round(x2, 2), round(y2, 2)) in heads else others).append((x1, y1, x2, y2))
    return arrows, others


def svg_arrows(svg: str, rows: dict[str, int]) -> tuple[collections.Counter, list[str]]:
    """(sender rank, receiver rank) -> arrows ViTE drew. An arrow is a <line> with a head from
    the sender's state row to the receiver's, each inside its location's container."""
    spans = location_spans(svg, rows)
    if not spans:
        return collections.Counter(), ["no location row label in ViTE's SVG"]

    def rank_at(y: float):
        inside = [rank for top, bottom, rank in spans if top <= y <= bottom]
        return inside[0] if len(inside) == 1 else None

    errors = []
    drawn: collections.Counter = collections.Counter()
    for _, y1, _, y2 in svg_lines(svg)[0]:
        a, b = rank_at(y1), rank_at(y2)
        if a is None or b is None:
            errors.append(f"an arrow from y={y1} to y={y2} does not join two location rows")
        else:
            drawn[(a, b)] += 1
    return drawn, errors


def svg_counter_rows(svg: str, rows: dict[str, int]) -> dict[int, int]:
    """rank -> the segments of counter curves ViTE drew inside its locations' containers (the
    lines that are not arrows)."""
    spans = location_spans(svg, rows)
    out: collections.Counter = collections.Counter()
    for _, y1, _, y2 in svg_lines(svg)[1]:
        for top, bottom, rank in spans:
            if top <= y1 <= bottom and top <= y2 <= bottom:
                out[rank] += 1
    return dict(out)


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


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", type=Path, help="trace directory (holding traces.otf2)")
    ap.add_argument("--out", type=Path, help="where to keep vite.svg, vite.png and the logs "
                    "(default: a temporary directory, removed)")
    ap.add_argument("--skip-if-missing", action="store_true",
                    help="exit 77 (skip) when the trace does not exist: the run that makes it "
                    "was skipped")
    return ap.parse_args()


def cannot_run(args) -> int | None:
    """The exit status (message printed) when ViTE or the trace is missing, else None."""
    missing = [tool for tool in ("vite", "Xvfb") if not shutil.which(tool)]
    if missing:
        print(f"SKIP: {', '.join(missing)} not installed (Debian: apt-get install vite xvfb)")
        return SKIP
    if not (args.trace / "traces.otf2").is_file():
        if args.skip_if_missing:
            print(f"SKIP: {args.trace}/traces.otf2 does not exist (its run was skipped)")
            return SKIP
        print(f"FAIL: {args.trace}/traces.otf2 does not exist")
        return 1
    return None


def output_dir(args) -> tuple[Path, tempfile.TemporaryDirectory | None]:
    """--out (made if needed), else a temporary directory (returned too: removed with it)."""
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        return args.out, None
    tmp = tempfile.TemporaryDirectory(prefix="check_vite.")
    return Path(tmp.name), tmp


def vite_env(out: Path, display: str) -> dict:
    # ViTE keeps its settings under HOME; a fresh one keeps the test from the user's and theirs
    # from the test.
    runtime = out / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = dict(os.environ, DISPLAY=display, HOME=str(out), XDG_RUNTIME_DIR=str(runtime))
    env.pop("XAUTHORITY", None)
    return env


def check_drawing(svg: str, trace: Path, expected: collections.Counter,
                  counted: set[int]) -> tuple[list[str], str]:
    """ViTE's SVG against the trace: an arrow per message, counter curves on the ranks with
    counters. Returns the errors and the note on counters for the summary."""
    errors = []
    rows = location_rows(trace)
    drawn, arrow_errors = svg_arrows(svg, rows)
    errors += arrow_errors
    if drawn != expected:
        errors.append(f"ViTE drew arrows (sender rank, receiver rank): {dict(drawn)}, "
                      f"the trace has messages {dict(expected)}")
    curves = svg_counter_rows(svg, rows)
    if sorted(r for r in curves if r in counted) != sorted(counted):
        errors.append(f"the trace has counters on ranks {sorted(counted)}; ViTE drew "
                      f"counter curves on {sorted(curves)}")
    counters_note = ""
    if counted:
        counters_note = (f"; its counters as curves on ranks {sorted(counted)} "
                         f"({sum(curves.values())} segments)")
    return errors, counters_note


def check_export(trace: Path, out: Path, env: dict, expected: collections.Counter,
                 counted: set[int]) -> tuple[list[str], str, str]:
    """ViTE's SVG export (out/vite.svg, its output in out/vite-export.log): a clean parse and the
    right drawing. Returns the errors, ViTE's output and the note on counters."""
    svg = out / "vite.svg"
    run = subprocess.run(["vite", "-e", str(svg), str(trace / "traces.otf2")],
                         capture_output=True, text=True, env=env, timeout=TIMEOUT_S)
    log = run.stdout + run.stderr
    (out / "vite-export.log").write_text(log)
    if run.returncode != 0 or not svg.is_file():
        return [f"vite -e exited with {run.returncode} and "
                f"{'an' if svg.is_file() else 'no'} SVG"], log, ""
    errors, counters_note = check_drawing(svg.read_text(), trace, expected, counted)
    return check_log(log) + errors, log, counters_note


def check_gui(trace: Path, display: str, out: Path, env: dict) -> tuple[list[str], str]:
    """ViTE's window, where ImageMagick can take screenshots: a clean parse and arrows shown.
    Returns the errors and the note on the screenshot for the summary."""
    if not (shutil.which("import") and shutil.which("convert")):
        return [], "no screenshot (ImageMagick's import is not installed)"
    crossings, gui_log = screenshot(trace, display, out, env)
    errors = [f"GUI: {e}" for e in check_log(gui_log) if "0 errors" not in e]
    if not crossings:
        errors.append(f"no arrow showed in ViTE's window within {TIMEOUT_S} s")
    return errors, f"screenshot: {crossings} arrows crossing between rank rows"


def main() -> int:
    args = parse_args()
    status = cannot_run(args)
    if status is not None:
        return status
    out, tmp = output_dir(args)

    expected, counted = trace_facts(args.trace)
    errors = []
    if not expected:
        errors.append("the trace holds no message: nothing for ViTE to draw")
    xvfb, display = start_xvfb()
    env = vite_env(out, display)
    try:
        export_errors, log, counters_note = check_export(args.trace, out, env, expected, counted)
        gui_errors, shot_note = check_gui(args.trace, display, out, env)
        errors += export_errors + gui_errors
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
          f"ranks{counters_note}; {shot_note}; {n_warn} 'cannot find rank' warnings from ViTE's unimplemented "
          f"COMM_GROUP (ViTE's fallback, rank = location id, holds for perfvar traces)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
