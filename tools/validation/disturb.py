"""Disturbances run beside a validation trial, pinned to one CPU and killed on any exit:
a process that spins all the time (Busy), or busy BUSY_MS of every PERIOD_MS ms (the
duty program of tests/validation, which keeps its cycle on an absolute schedule)."""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Optional


class Pinned:
    """A command pinned to one CPU with taskset while the trial runs; None: nothing."""

    def __init__(self, cpu: Optional[str], cmd: list[str]):
        self.cpu = cpu
        self.cmd = cmd
        self.proc: Optional[subprocess.Popen] = None

    def __enter__(self) -> "Pinned":
        if self.cpu is not None:
            self.proc = subprocess.Popen(
                ["taskset", "-c", self.cpu] + self.cmd, start_new_session=True
            )
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()


def busy(cpu: Optional[str]) -> Pinned:
    """A process spinning on ``cpu`` all the time."""
    return Pinned(cpu, ["sh", "-c", "while :; do :; done"])


def duty(
    cpu: Optional[str], program: str, busy_ms: float = 5, period_ms: float = 20
) -> Pinned:
    """A process busy ``busy_ms`` of every ``period_ms`` ms on ``cpu``
    (tests/validation/duty)."""
    return Pinned(cpu, [program, str(busy_ms), str(period_ms)])
