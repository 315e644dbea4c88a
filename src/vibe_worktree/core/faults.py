"""Crash points for the fault-injection tests.

`VWT_CRASH_AT=<step>` makes the process SIGKILL itself when it reaches that
step, so a test can prove that every intermediate state is recoverable. Unset,
a checkpoint costs one dictionary lookup.
"""

from __future__ import annotations

import os

_TARGET = os.environ.get("VWT_CRASH_AT")


def checkpoint(step: str) -> None:
    if _TARGET is not None and step == _TARGET:
        import signal  # only here: importing it costs start-up time

        os.kill(os.getpid(), signal.SIGKILL)
