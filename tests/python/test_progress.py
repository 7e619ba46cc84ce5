"""perfvar.progress: a bar on a terminal only, after a delay, erased at the end.

The terminal is a StringIO that says it is one; with ``animate=False`` the bar is
drawn only on step/advance, so what it writes does not depend on timing.
"""

from __future__ import annotations

import io
import sys

from conftest import run_cli
from perfvar.progress import Progress, wanted


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_when_quiet_or_not_a_terminal():
    assert not wanted(quiet=True, stream=_Terminal())
    assert not wanted(stream=io.StringIO())
    assert wanted(stream=_Terminal())
    for p in (Progress("x", quiet=True), Progress("x", stream=io.StringIO())):
        assert not p.enabled
        p.step("a", 2)
        p.advance()
        assert list(p.track([1, 2, 3], "b")) == [1, 2, 3]
        p.close()
    assert not Progress.off().enabled


def test_draws_steps_and_counts_on_a_terminal():
    term = _Terminal()
    with Progress("analyze", stream=term, delay_s=0, animate=False) as p:
        assert p.enabled
        p.step("reading the trace")
        assert list(p.track(["a", "b", "c"], "OS-noise filter")) == ["a", "b", "c"]
        drawn = term.getvalue()
    assert "analyze: reading the trace" in drawn
    assert "analyze: OS-noise filter" in drawn
    assert "3/3" in drawn


def test_a_short_run_draws_nothing():
    term = _Terminal()
    with Progress("analyze", stream=term, delay_s=60) as p:
        p.step("reading the trace", 2)
        p.advance(2)
    assert "analyze" not in term.getvalue()


def test_off_without_rich(monkeypatch):
    for name in ("rich", "rich.console", "rich.progress"):
        monkeypatch.setitem(sys.modules, name, None)  # import -> ImportError
    p = Progress("analyze", stream=_Terminal(), delay_s=0)
    assert not p.enabled
    p.close()


def test_analyze_prints_no_progress_into_a_pipe(slow_trace):
    """A pipe or a log gets no bar: stderr stays empty (the CLI's contract)."""
    proc = run_cli("analyze", slow_trace, "--no-html")
    assert proc.returncode == 0 and proc.stderr == ""
