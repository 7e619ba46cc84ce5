"""Command line: ``perfvar analyze DIR [--json PATH] [--alpha A] [--quiet]``.

Exit status: 0 when the analysis ran, whether or not anomalies were found (read the
verdict line or analysis.json for the outcome); 2 on any error (bad arguments,
unreadable trace, unwritable output), reported as one line
``perfvar: error: <message>`` on stderr, never a traceback (set PERFVAR_DEBUG=1 to
get one for internal errors). Subcommands are dispatched through a table so that
``perfvar calibrate`` can be added next to ``analyze``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Callable, Optional

from perfvar import __version__
from perfvar.errors import TraceError

EXIT_OK = 0
EXIT_ERROR = 2


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


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 2:
        raise argparse.ArgumentTypeError(f"must be >= 2, got {text}")
    return value


def _cmd_analyze(args: argparse.Namespace) -> int:
    from perfvar.analysis import analyze, default_jobs
    from perfvar.report_json import write_json
    from perfvar.report_text import render

    result = analyze(
        args.dir,
        alpha=args.alpha,
        symbolize_sites=not args.no_symbolize,
        peers=args.peers,
        min_samples=args.min_samples,
        jobs=args.jobs if args.jobs > 0 else default_jobs(),
    )
    if not args.quiet:
        sys.stdout.write(render(result))
        sys.stdout.flush()
    try:
        path = write_json(result, args.json)
    except OSError as exc:
        raise TraceError(f"cannot write analysis JSON: {exc}") from None
    if not args.quiet:
        print(f"analysis written to {path}")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (subcommands: analyze)."""
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
        "and write DIR/analysis.json. Exit 0 whether or not anomalies are found, "
        "2 on errors.",
    )
    p.add_argument("dir", metavar="DIR", help="trace directory (PERFVAR_OUTPUT)")
    p.add_argument(
        "--json", metavar="PATH", help="write the JSON here (default DIR/analysis.json)"
    )
    p.add_argument(
        "--alpha",
        type=_alpha,
        default=0.05,
        metavar="A",
        help="overlap threshold for a significant difference (default 0.05)",
    )
    p.add_argument(
        "--quiet", action="store_true", help="print nothing, only write JSON"
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
    p.set_defaults(func=_cmd_analyze)
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
