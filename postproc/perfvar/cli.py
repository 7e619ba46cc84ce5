"""Command line: ``perfvar analyze DIR [--json PATH] [--html PATH] [--quiet] ...``.

Exit status: 0 when the analysis ran, whether or not anomalies were found (read the
verdict line or analysis.json for the outcome); 2 on any error (bad arguments,
unreadable trace, unwritable output), reported as one line
``perfvar: error: <message>`` on stderr, never a traceback (set PERFVAR_DEBUG=1 to
get one for internal errors). Subcommands are dispatched through a table.

``perfvar calibrate [--compare] [--quick] [--json PATH] ...``: exit 0 when the run
finished (states a budget cut short are marked "partial" in it), 130 when Ctrl-C
stopped it (the table and the JSON are still written, with "interrupted": true and
"complete": false), 2 on errors.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Callable, Optional

# numpy asks for transparent huge pages for every large array; where the kernel then
# compacts memory on the fault (its THP "defrag" set to madvise, a common default)
# the first touch of the analysis' large arrays stalls, and a two-rank analysis took
# a tenth longer (docs/measurements.md); the arrays are walked once or twice, so
# huge pages save little. Only where numpy is not imported yet; a user's own setting
# wins.
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")

from perfvar import __version__  # noqa: E402
from perfvar.errors import TraceError  # noqa: E402

EXIT_OK = 0
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it


class _Parser(argparse.ArgumentParser):
    """argparse with every usage error reported as ``perfvar: error: ...``."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"perfvar: error: {message}\n")


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {text}")
    return value


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value < 100.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 100), got {text}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 2:
        raise argparse.ArgumentTypeError(f"must be >= 2, got {text}")
    return value


def _render_html(result: dict, kept: list) -> Optional[str]:
    """The HTML report's page, or None (one warning on stderr) without plotly: the
    analysis itself stands without its plots."""
    try:
        import plotly  # noqa: F401
    except ImportError:
        print(
            "perfvar: warning: report.html not written: the plots need plotly "
            "(pip install plotly)",
            file=sys.stderr,
        )
        return None
    from perfvar.report.html import render_html

    return render_html(result, kept[0] if kept else None)


def _cmd_analyze(args: argparse.Namespace) -> int:
    from perfvar.analysis import analyze
    from perfvar.parallel import default_jobs
    from perfvar.progress import Progress
    from perfvar.report.json import write_json
    from perfvar.report.markers import write_markers
    from perfvar.report.text import render

    kept: list = []  # the filtered cells, which the HTML report plots
    page = None
    with Progress("analyze", quiet=args.quiet) as progress:
        result = analyze(
            args.dir,
            alpha=args.alpha,
            symbolize_sites=not args.no_symbolize,
            peers=args.peers,
            min_samples=args.min_samples,
            jobs=args.jobs if args.jobs > 0 else default_jobs(),
            paper_check=not args.c_estimates,
            floors={
                "segment_floor": args.segment_floor / 100,
                "core_floor": args.core_floor / 100,
                "noise_floor": args.noise_floor / 100,
                "phase_floor": args.phase_floor / 100,
            },
            progress=progress,
            on_prepared=None if args.no_html else kept.append,
            min_cost=args.min_cost / 100,
            calibration_file=args.calibration,
        )
        if result is None:
            return EXIT_OK  # an MPI process that computed its part for rank 0
        if not args.no_html:
            progress.step("plotting the HTML report")
            page = _render_html(result, kept)
    if not args.quiet:
        sys.stdout.write(
            render(result, all_classes=args.all_classes, all_ranks=args.all_ranks)
        )
        sys.stdout.flush()
    try:
        path = write_json(result, args.json)
    except OSError as exc:
        raise TraceError(f"cannot write analysis JSON: {exc}") from None
    write_markers(result)  # the anomalies on the trace's timeline, for Vampir
    if not args.quiet:
        print(f"analysis written to {path}")
    if page is not None:
        from perfvar.report.html import default_path, write_html

        try:
            html = write_html(
                result, path=args.html or default_path(result, args.json), page=page
            )
        except OSError as exc:
            raise TraceError(f"cannot write the HTML report: {exc}") from None
        if not args.quiet:
            print(f"report written to {html}")
    return EXIT_OK


def _cmd_recover(args: argparse.Namespace) -> int:
    from perfvar.read.recover import (
        complete_archive,
        endings_json,
        has_records,
        read_endings,
        recover,
    )

    if not has_records(args.dir) and complete_archive(args.dir):
        # A clean finish removes the records (PERFVAR_KEEP_RECORDS=1 keeps them).
        print(f"{args.dir}: MPI_Finalize wrote every rank's trace; nothing to recover")
        return EXIT_OK
    if not has_records(args.dir):
        raise TraceError(
            f"{args.dir}: no perfvar records (perfvar/records/rank-0.defs)"
        )
    sys.stdout.write(recover(args.dir, force=args.force))
    ended = endings_json(read_endings(args.dir))
    for r in ended["ranks"]:
        first = " (first to end)" if r["rank"] == ended["first_to_end"] else ""
        print(f"rank {r['rank']}: {r['how']} at {r['end_s']:.3f} s{first}")
    return EXIT_OK


def _csv_of(choices: Sequence[str]) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        items = [x for x in text.split(",") if x]
        bad = [x for x in items if x not in choices]
        if bad or not items:
            raise argparse.ArgumentTypeError(
                f"{text!r}: a comma-separated list of {', '.join(choices)}"
            )
        return items

    return parse


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
    return value


def _cmd_calibrate(args: argparse.Namespace) -> int:
    import json

    from perfvar._spec import Timer
    from perfvar.calibrate_run import run, run_mpi
    from perfvar.calibration.kernels import TIMERS
    from perfvar.calibration.search import CalibParams
    from perfvar.parallel import mpi_launched
    from perfvar.report.calibrate import render

    params = CalibParams.quick() if args.quick else CalibParams()
    for name in ("n", "p", "q", "epsilon", "alpha"):
        if getattr(args, name) is not None:
            setattr(params, name, getattr(args, name))
    timers = args.timers or (list(TIMERS) if args.compare else [Timer.BARRIER])
    budget = args.budget if args.budget else (45.0 if args.quick else None)
    how = run_mpi if mpi_launched() else run
    samples: Optional[dict] = {} if args.samples else None
    doc = how(
        samples=samples,
        timers=timers,
        states=args.states,
        params=params,
        total_budget_s=budget,
        lib=args.lib,
        quiet=args.quiet,
    )
    if doc is None:  # an MPI rank other than 0: rank 0 reports
        return 0
    doc["mode"] = "quick" if args.quick else "full"
    if not args.quiet:
        sys.stdout.write(render(doc))
    if args.json:
        try:
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump(doc, fh, indent=1)
                fh.write("\n")
        except OSError as exc:
            raise TraceError(f"cannot write {args.json}: {exc.strerror}") from exc
    if args.samples:
        try:
            with open(args.samples, "w", encoding="utf-8") as fh:
                json.dump({"timers": samples}, fh)
        except OSError as exc:
            raise TraceError(f"cannot write {args.samples}: {exc.strerror}") from exc
    if doc.get("interrupted"):
        print(
            "perfvar: calibrate interrupted: results are partial and marked so",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (subcommands: analyze, recover, calibrate)."""
    parser = _Parser(
        prog="perfvar",
        description="Find MPI ranks and cores that run the same work slower "
        "than their peers, from a perfvar trace directory.",
    )
    parser.add_argument("--version", action="version", version=f"perfvar {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser(
        "analyze",
        help="analyse a trace directory",
        description="Analyse DIR (traces.otf2 + perfvar/*.json): print a report "
        "and write DIR/analysis.json and DIR/report.html (plots). A progress bar "
        "shows on stderr when it is a terminal and the run takes a while. Exit 0 "
        "whether or not anomalies are found, 2 on errors.",
    )
    p.add_argument("dir", metavar="DIR", help="trace directory (PERFVAR_OUTPUT)")
    p.add_argument(
        "--json", metavar="PATH", help="write the JSON here (default DIR/analysis.json)"
    )
    p.add_argument(
        "--html",
        metavar="PATH",
        help="write the HTML report here (default report.html beside the JSON)",
    )
    p.add_argument(
        "--no-html", action="store_true", help="do not write the HTML report"
    )
    p.add_argument(
        "--alpha",
        type=_alpha,
        default=0.05,
        metavar="A",
        help="false discovery rate of each detector's tests (Benjamini-Hochberg; "
        "default 0.05)",
    )
    from perfvar.stats.model import DetectParams

    defaults = DetectParams()
    for name, what in (
        ("segment", "a slow segment: excess over the peers beyond the rank's core"),
        ("core", "a slow core: common excess over the peers in every class"),
        ("noise", "a noisy core: compute time lost to interruptions, above peers"),
        ("phase", "a slow phase: excess over the rank's own baseline"),
    ):
        default = getattr(defaults, f"{name}_floor") * 100
        p.add_argument(
            f"--{name}-floor",
            type=_percent,
            default=default,
            metavar="PCT",
            help=f"effect floor, %%, of {what} (default {default:g}); "
            "every effect must also exceed the rank's t_diff",
        )
    from perfvar.verdict.headline import DEFAULT_MIN_COST

    p.add_argument(
        "--min-cost",
        type=_percent,
        default=DEFAULT_MIN_COST * 100,
        metavar="PCT",
        help="delay cost, %% of wall time x ranks, a finding needs to name its rank "
        f"(default {DEFAULT_MIN_COST * 100:g}); cheaper ones are listed as minor",
    )
    p.add_argument(
        "--quiet",
        action="store_true",
        help="print nothing and show no progress, only write the JSON and HTML",
    )
    from perfvar.report.text import LISTED_RANKS, LISTED_SHARE

    p.add_argument(
        "--all-classes",
        action="store_true",
        help="list every segment class in the report, not only the largest ones "
        f"holding {LISTED_SHARE * 100:g} %% of the compute time and those a finding "
        "names",
    )
    p.add_argument(
        "--all-ranks",
        action="store_true",
        help=f"list every rank in the report; beyond {LISTED_RANKS} ranks it lists "
        "those whose verdict is not ok or that a finding names, and counts the rest",
    )
    p.add_argument(
        "--no-symbolize",
        action="store_true",
        help="do not run addr2line; label call sites as module+0xoffset",
    )
    p.add_argument(
        "--peers",
        choices=("robust", "all"),
        default="robust",
        help="peer pool: 'robust' leaves ranks that are already shifted out "
        "(default); 'all' pools every other rank",
    )
    p.add_argument(
        "--min-samples",
        type=_positive_int,
        default=8,
        metavar="N",
        help="filtered samples a (segment, rank) needs to be judged (default 8)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=0,
        metavar="N",
        help="processes for the OS-noise filter (default 0 = number of CPUs, "
        "at most 8; 1 = serial)",
    )
    p.add_argument(
        "--calibration",
        metavar="FILE",
        help="a `perfvar calibrate --json` file of this machine: its barrier timer's "
        "t_min/t_diff judge the ranks whose start-up calibration found none and that "
        "no rank on their host could lend any (default: such ranks are not judged)",
    )
    p.add_argument(
        "--c-estimates",
        action="store_true",
        help="judge with the start-up search's t_min/t_diff estimates instead of "
        "recomputing them with the paper's statistics (faster, about 1 s per rank)",
    )
    p.set_defaults(func=_cmd_analyze)

    r = sub.add_parser(
        "recover",
        help="rebuild the trace of a job that died from its records",
        description="Rebuild DIR/traces.otf2 from the per-rank records a traced job "
        "left in DIR/perfvar/records when it was killed or crashed before "
        "MPI_Finalize, and say how and when each rank ended. 'perfvar analyze' "
        "does this by itself when it is needed.",
    )
    r.add_argument("dir", metavar="DIR", help="trace directory (PERFVAR_OUTPUT)")
    r.add_argument(
        "--force",
        action="store_true",
        help="rebuild even when every rank wrote its trace at MPI_Finalize",
    )
    r.set_defaults(func=_cmd_recover)

    from perfvar.calibrate_run import STATES
    from perfvar.calibration.kernels import TIMERS

    c = sub.add_parser(
        "calibrate",
        help="measure t_min and t_diff of timers on this core",
        description="Measure, on the CPU it starts on (under mpiexec: every rank on "
        "its own, with MPI_Wtime as a timer), each timer's overhead, "
        "fluctuation, precision t_min and sensitivity t_diff in the cache states "
        "0, 4xL1, 4xL2, 4xL3 (paper Algorithms 1 and 2 with filter_cost and "
        "filter_os). Results a time budget cut short are marked 'partial'; "
        "Ctrl-C stops the run, prints and writes what was measured (marked "
        "'interrupted' / 'not measured') and exits 130.",
    )
    c.add_argument(
        "--compare",
        action="store_true",
        help="all timers side by side, not only perfvar's",
    )
    c.add_argument(
        "--quick",
        action="store_true",
        help="bounded run (N=200, p=3, q=3, 45 s in all unless --budget; time a "
        "state leaves unused rolls over to the next)",
    )
    c.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    c.add_argument(
        "--samples",
        metavar="PATH",
        help="also write every distribution drawn, per timer, in the form of the "
        "start-up samples (the calibration judge decides them as reported)",
    )
    c.add_argument("--timers", type=_csv_of(TIMERS), help="timers to calibrate")
    c.add_argument(
        "--states", type=_csv_of(STATES), default=list(STATES), help="cache states"
    )
    c.add_argument(
        "--budget", type=_positive_float, metavar="S", help="total time budget (s)"
    )
    c.add_argument(
        "-n", type=_positive_int, metavar="N", help="samples per distribution"
    )
    c.add_argument("--p", type=_positive_int, help="confirmations of t_min (paper: 30)")
    c.add_argument("--q", type=_positive_int, help="pairs for t_diff (paper: 80)")
    c.add_argument("--epsilon", type=_positive_float, help="CV threshold (0.01)")
    c.add_argument("--alpha", type=_alpha, help="overlap threshold (0.05)")
    c.add_argument("--lib", metavar="PATH", help="libperfvar.so to use")
    c.add_argument("--quiet", action="store_true", help="no table and no progress")
    c.set_defaults(func=_cmd_calibrate)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 2 error)."""
    parser = build_parser()
    args = parser.parse_args(argv)  # exits 2 with "perfvar: error: ..." on misuse
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except TraceError as exc:
        print(f"perfvar: error: {exc}", file=sys.stderr)
    except KeyboardInterrupt:
        print("perfvar: error: interrupted", file=sys.stderr)
    except (
        BrokenPipeError
    ):  # the reader of our output left (`perfvar analyze DIR | head`)
        # stdout -> /dev/null, so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback
        if os.environ.get("PERFVAR_DEBUG"):
            raise
        print(
            f"perfvar: error: internal error: {type(exc).__name__}: {exc} "
            "(set PERFVAR_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
    return EXIT_ERROR
