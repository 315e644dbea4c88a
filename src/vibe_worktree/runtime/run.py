"""`vwt run` and `vwt shell`: a command inside a worktree, holding it while the command runs,
with the worktree's environment as `vwt env` prints it (SPEC §17)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

from ..core.errors import VwtError
from ..core.locks import HOLDER_ENV
from ..lifecycle.worktrees import Here, hold

Warn = Callable[[str], None]


def run_held(here: Here, name: str, command: Sequence[str],
             extra_env: Mapping[str, str] | None, warn: Warn) -> int:
    """Run `command` inside NAME while holding it; its exit status (128 + N when a signal N
    ended it; 127 when it is not found, 126 when it cannot be run). Ctrl-C goes to the
    command alone: this process waits for it to end."""
    if not command:
        raise VwtError("no command given; use: vwt run NAME -- CMD [ARG...]", 2)
    import signal
    import subprocess

    from .env import env_document

    with hold(here.repo, name) as holder:
        env = dict(os.environ)
        env.update(env_document(holder.claim, warn).variables)  # as vwt env says
        env[HOLDER_ENV] = holder.id
        env.update(extra_env or {})
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            # The child inherits the locked descriptor: should this process die, the
            # command still holds the worktree for as long as it runs.
            child = subprocess.Popen(list(command), cwd=holder.claim.checkout, env=env,
                                     restore_signals=True, pass_fds=(holder.fileno(),))
        except FileNotFoundError:
            signal.signal(signal.SIGINT, previous)
            raise VwtError(f"command not found: {command[0]}", 127) from None
        except PermissionError:
            signal.signal(signal.SIGINT, previous)
            raise VwtError(f"command cannot be run: {command[0]}", 126) from None
        try:
            code = child.wait()
        finally:
            signal.signal(signal.SIGINT, previous)
    return 128 - code if code < 0 else code
