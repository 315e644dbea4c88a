"""Crash points for the fault-injection tests.

`VWT_CRASH_AT=<step>` makes the process SIGKILL itself when it reaches that
step, so a test can prove that every intermediate state is recoverable.
`VWT_PAUSE_AT=<step>` makes it SIGSTOP itself there instead, so a test can run
another process in that very moment (a race made certain), then let it go on
(SIGCONT). Unset, a checkpoint costs two comparisons.
"""

from __future__ import annotations

import os

_TARGET = os.environ.get("VWT_CRASH_AT")
_PAUSE = os.environ.get("VWT_PAUSE_AT")


def checkpoint(step: str) -> None:
    if _TARGET is not None and step == _TARGET:
        import signal  # only here: importing it costs start-up time

        os.kill(os.getpid(), signal.SIGKILL)
    if _PAUSE is not None and step == _PAUSE:
        import signal

        os.kill(os.getpid(), signal.SIGSTOP)
