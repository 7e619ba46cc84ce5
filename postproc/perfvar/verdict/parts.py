"""Where the calls' parts are: the blocks of ranks whose timelines and wait states
are computed where their samples are.

A verdict step over the calls (perfvar.verdict.wait_states, delay_cost, headline)
asks every part the same question and reduces the answers in the reporting process:
``parts.each(fn, arg)`` runs ``fn(part, arg)`` on every part and returns the
answers in part order, which is rank order (each part holds a contiguous block of
the ranks, the blocks ascending). ``per_part`` gives each part its own argument
instead. ``fn`` is a module-level function (under MPI it travels by name), and it
may keep what later steps need in its part (a part is mutable state).

:class:`LocalParts` holds the parts in this process (one part of every rank when
the analysis runs in one process; several in tests). The MPI engine's
implementation lives with the engine (perfvar.partition), so that this stage
imports no entry point. Not thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Optional, Protocol


class Parts(Protocol):
    """Runs one step on every part; see the module docstring."""

    def each(
        self,
        fn: Callable[[Any, Any], Any],
        arg: Any = None,
        per_part: Optional[Sequence[Any]] = None,
    ) -> list[Any]: ...


class LocalParts:
    """Parts held in this process, in rank order."""

    def __init__(self, parts: Sequence[Any]) -> None:
        self.parts = list(parts)

    def each(
        self,
        fn: Callable[[Any, Any], Any],
        arg: Any = None,
        per_part: Optional[Sequence[Any]] = None,
    ) -> list[Any]:
        args = per_part if per_part is not None else [arg] * len(self.parts)
        return [fn(p, a) for p, a in zip(self.parts, args)]
