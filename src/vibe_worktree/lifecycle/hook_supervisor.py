"""`python -m vibe_worktree.lifecycle.hook_supervisor TIMEOUT COMMAND [--host PID STARTED]
[ROOT BUCKET NAME FD]`: a background hook's keeper.

Started detached by `vwt new` with the worktree's holder file open (and locked) on an
inherited descriptor FD, so the worktree stays held exactly as long as this process lives.
It runs COMMAND with `sh -c` in a process group of its own, kills that whole group at
TIMEOUT, and writes how the hook ended into the log (its stdout and stderr). When the hook
ends, it deletes that holder file (under the registry lock) before it lets go of it: a
finished hook leaves no stale holder behind.

With `--host`, the hook runs for an agent (the process PID, started at STARTED: Claude
Code's `WorktreeCreate`), and no process of ours may outlive it: when it dies, the hook's
group gets SIGTERM, then SIGKILL after GRACE seconds. A pidfd wakes this process the moment
the agent exits on Linux; elsewhere it polls.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from vibe_worktree.agents.host import Host

POLL_SECONDS = 0.25
GRACE = 1.0  # from SIGTERM to SIGKILL; within the 2 s an agent's hook may outlive it


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def main(argv: list[str]) -> int:
    timeout, command, rest = float(argv[0]), argv[1], argv[2:]
    host = None
    if rest[:1] == ["--host"]:
        from vibe_worktree.agents.host import Host

        host, rest = Host(int(rest[1]), rest[2]), rest[3:]
    try:
        return _supervise(timeout, command, host)
    finally:
        if len(rest) >= 4:
            _let_go(rest[0], rest[1], rest[2], int(rest[3]))


def _let_go(root: str, bucket: str, name: str, fd: int) -> None:
    from vibe_worktree.core.layout import Claim, Root
    from vibe_worktree.core.locks import let_go_inherited

    try:
        let_go_inherited(Claim(Root(os.path.dirname(root), root), bucket, name), fd)
    except OSError as exc:  # the kernel drops the lock anyway when this process ends
        print(f"[vwt] {_stamp()} could not delete the holder file: {exc}", flush=True)


def _supervise(timeout: float, command: str, host: Host | None) -> int:
    # The hook itself does not inherit the holder descriptor: a daemon it leaves behind
    # must not hold the worktree forever.
    child = subprocess.Popen(["/bin/sh", "-c", command], stdin=subprocess.DEVNULL,
                             start_new_session=True, close_fds=True)
    try:
        code = child.wait(timeout=timeout) if host is None else _wait_tied(child, timeout,
                                                                           host)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        print(f"[vwt] {_stamp()} timed out after {timeout:g} s; its processes were killed",
              flush=True)
        return 124
    if code is None:
        assert host is not None
        how = _stop_group(child)
        print(f"[vwt] {_stamp()} the agent process {host.pid} ended; the hook's processes "
              f"were stopped ({how})", flush=True)
        return 143
    print(f"[vwt] {_stamp()} exited with status {code}", flush=True)
    return code if code >= 0 else 128 - code


def _wait_tied(child: subprocess.Popen[bytes], timeout: float, host: Host) -> int | None:
    """The hook's exit status, or None once the agent process is gone first."""
    from vibe_worktree.agents.host import alive

    deadline = time.monotonic() + timeout
    fds = [fd for fd in (_pidfd(host.pid), _pidfd(child.pid)) if fd is not None]
    try:
        while True:
            code = child.poll()
            if code is not None:
                return code
            if not alive(host):
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(child.args, timeout)
            select.select(fds, [], [], min(left, POLL_SECONDS))
    finally:
        for fd in fds:
            os.close(fd)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _stop_group(child: subprocess.Popen[bytes]) -> str:
    """SIGTERM to the hook's group, SIGKILL to whatever of it is left after GRACE. The
    leader is reaped only afterwards: until then its pid cannot name another group."""
    _signal_group(child.pid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline and _group_runs(child.pid):
        time.sleep(0.02)
    killed = _group_runs(child.pid)
    _signal_group(child.pid, signal.SIGKILL)
    child.wait()
    return f"SIGKILL after {GRACE:g} s" if killed else "SIGTERM"


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _group_runs(pgid: int) -> bool:
    """A process of the group still runs (its exited, unreaped leader does not count).
    Without /proc, assume so: the grace is then waited in full."""
    if not os.path.isdir("/proc/self"):
        return True
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                raw = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
