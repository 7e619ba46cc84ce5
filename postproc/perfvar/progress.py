"""A progress bar on the terminal for the long commands (analyze, calibrate).

:class:`Progress` shows one transient line on stderr: the current step, a bar when
the step has a known number of items, the count and the elapsed time. It appears
only when the command has run for ``DELAY_S`` seconds, so quick runs print nothing,
and it is erased when the command ends. It is off (every method a no-op) with
``quiet``, when stderr is not a terminal (a pipe, a file, a CI log, mpiexec's
forwarding), and when the ``rich`` package is missing: progress is a courtesy,
never a reason to fail.

The bar writes to a duplicate of file descriptor 2 taken when it starts, because the
OTF2 reader redirects descriptor 2 while it runs to capture the C library's messages
(perfvar.read.trace): the bar must neither vanish into that capture nor end up in
an error message. Methods may be called from one thread; the display refreshes
itself from rich's own thread unless ``animate`` is False: a measurement (perfvar
calibrate, pinned to one CPU) must not have a thread of its own process wake up on
the CPU it measures, so there the line is redrawn only when a step begins.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import Any, Optional, TextIO, TypeVar

DELAY_S = 1.5  # runs shorter than this show no bar at all
REFRESH_PER_S = 8

T = TypeVar("T")


def wanted(quiet: bool = False, stream: Optional[TextIO] = None) -> bool:
    """True when a bar should be shown: not quiet and ``stream`` (default stderr)
    is a terminal. stdout may be redirected (``perfvar analyze DIR > out.txt``):
    the bar goes to stderr, which the person still watches."""
    if quiet:
        return False
    stream = stream if stream is not None else sys.stderr
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or replaced stream
        return False


def _count_column() -> Any:
    """A rich column "done/total", empty for a step of unknown length (where rich's
    own MofNCompleteColumn prints "0/?")."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class Count(ProgressColumn):
        def render(self, task: Any) -> Text:
            if task.total is None:
                return Text("")
            return Text(f"{int(task.completed)}/{int(task.total)}", style="green")

    return Count()


class Progress:
    """One transient progress line for a command made of steps.

    ``title`` prefixes every step (e.g. "analyze"). ``stream``: where to draw
    (default: a duplicate of stderr); ``delay_s``: how long the command must run
    before the line appears (0: at once); ``animate``: refresh the elapsed time and
    the spinner from a thread (else only on :meth:`step` and :meth:`advance`). Use
    as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        title: str,
        quiet: bool = False,
        stream: Optional[TextIO] = None,
        delay_s: float = DELAY_S,
        animate: bool = True,
    ) -> None:
        self.title = title
        self._bar: Any = None
        self._task: Any = None
        self._timer: Optional[threading.Timer] = None
        self._own_stream: Optional[TextIO] = None
        if not wanted(quiet, stream):
            return
        try:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )
            from rich.progress import Progress as RichProgress
        except ImportError:
            return
        if stream is None:
            try:
                self._own_stream = os.fdopen(os.dup(sys.stderr.fileno()), "w")
            except (AttributeError, OSError, ValueError):
                return
            stream = self._own_stream
        self._bar = RichProgress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            _count_column(),
            TimeElapsedColumn(),
            console=Console(file=stream),
            transient=True,
            auto_refresh=animate,
            refresh_per_second=REFRESH_PER_S,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._animate = animate
        self._task = self._bar.add_task(title, total=None)
        if delay_s <= 0:
            self._bar.start()
            return
        # Started late, from a timer thread: a run that ends before never draws.
        self._timer = threading.Timer(delay_s, self._bar.start)
        self._timer.daemon = True
        self._timer.start()

    @classmethod
    def off(cls) -> Progress:
        """A Progress that shows nothing (for callers that were given none)."""
        return cls("", quiet=True)

    @property
    def enabled(self) -> bool:
        """True when this progress can draw (it may not have appeared yet)."""
        return self._bar is not None

    def step(self, what: str, total: Optional[int] = None) -> None:
        """Begin a step named ``what`` with ``total`` items (None: unknown, the bar
        pulses); the previous step is done."""
        if self._bar is not None:
            # A new task per step: rich cannot set a known total back to unknown.
            self._bar.remove_task(self._task)
            self._task = self._bar.add_task(f"{self.title}: {what}", total=total)
            self._redraw()

    def advance(self, n: int = 1) -> None:
        """``n`` more items of the current step are done."""
        if self._bar is not None:
            self._bar.advance(self._task, n)
            self._redraw()

    def _redraw(self) -> None:
        # rich.Progress.refresh draws only once its display has started.
        if not self._animate:
            self._bar.refresh()

    def track(
        self, items: Iterable[T], what: str, total: Optional[int] = None
    ) -> Iterator[T]:
        """Iterate ``items`` as a step: one item done per item yielded."""
        if total is None and hasattr(items, "__len__"):
            total = len(items)  # type: ignore[arg-type]
        self.step(what, total)
        for item in items:
            yield item
            self.advance()

    def close(self) -> None:
        """Erase the line (if it was drawn) and release the terminal; idempotent."""
        if self._timer is not None:
            self._timer.cancel()
            # A start already running in the timer thread must finish before the
            # stop, or the display would be started after it was stopped.
            if self._timer.is_alive() and self._timer is not threading.current_thread():
                self._timer.join()
            self._timer = None
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        if self._own_stream is not None:
            self._own_stream.close()
            self._own_stream = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
