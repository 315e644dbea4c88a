"""`python -m vibe_worktree.sessions.watcher HOME BUCKET NAME HOLDER FD PID STARTED`.

Keeps the locked holder file on descriptor FD (inherited from the hook handler) for as
long as the agent process PID (started at STARTED) lives; lets go when it dies, crash
included, or when told to (SIGTERM: the session ended or its worktree is being removed).
On Linux a pidfd wakes it the moment the agent exits; elsewhere it polls.
"""

from __future__ import annotations

import os
import select
import signal
import sys

from ..core.host import Host, alive, open_pidfd
from ..core.layout import Root
from ..core.locks import Holder

POLL_SECONDS = 0.25


class _Stop(Exception):
    pass


def _stop(_signum: int, _frame: object) -> None:
    raise _Stop


def wait_for_exit(host: Host) -> None:
    """Return once the host process is gone."""
    pidfd = open_pidfd(host.pid)
    try:
        while alive(host):
            if pidfd is not None:
                select.select([pidfd], [], [], POLL_SECONDS)
            else:
                select.select([], [], [], POLL_SECONDS)
    finally:
        if pidfd is not None:
            os.close(pidfd)


def main(argv: list[str]) -> int:
    home, bucket, name, holder_id, fd, pid, started = argv
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGHUP, _stop)
    holder = Holder(Root.at(home).claim(bucket, name), holder_id, int(fd))
    try:
        wait_for_exit(Host(int(pid), started))
    except _Stop:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the release itself must finish
        holder.release()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
