"""`python -m vibe_worktree.lifecycle.hook_supervisor TIMEOUT COMMAND [--host PID STARTED]
[--foreground] [ROOT BUCKET NAME FD [SETUP_ID]]`: a hook's keeper.

Started detached by `vwt new` with the worktree's holder file open (and locked) on an
inherited descriptor FD, so the worktree stays held exactly as long as this process lives.
It runs COMMAND with `sh -c` in a process group of its own, kills that whole group at
TIMEOUT, and writes how the hook ended into the log (its stdout and stderr). When the hook
succeeded, it takes SETUP_ID out of the record's pending setup (`setup_state`) while it
still holds the worktree. When the hook ends, it deletes that holder file (under the
registry lock) before it lets go of it: a finished hook leaves no stale holder behind.

With `--host`, the hook runs for an agent (the process PID, started at STARTED: Claude
Code's `WorktreeCreate`), and no process of ours may outlive it: when it dies, the hook's
group gets SIGTERM, then SIGKILL after GRACE seconds. A pidfd wakes this process the moment
the agent exits on Linux; elsewhere it polls.

Sent SIGTERM (vwt does, to take a worktree whose creation failed away again), the keeper
stops the hook's group the same way and lets go, rather than die and leave it running (one
that comes before the hook starts ends the keeper: there is nothing to stop yet).

With `--foreground`, vwt waits for the hook (a foreground hook run for an agent): stdin is
a pipe only that vwt holds, so its end of file says vwt is gone (killed with the agent's
process group, say) and the hook is stopped as at the agent's death; the hook's output goes
to stderr, and stdout carries one line for vwt: `exit STATUS`, `timeout`, or `stopped
WHY` (`agent`, `vwt`, `asked`). No holder: vwt holds the worktree itself meanwhile.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

from ..core.light import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from vibe_worktree.core.host import Host
    from vibe_worktree.core.layout import Claim

POLL_SECONDS = 0.25
GRACE = 1.0  # from SIGTERM to SIGKILL; within the 2 s an agent's hook may outlive it
# why a hook is stopped before its end
TIMED_OUT = "timeout"
AGENT = "agent"  # the agent process died
OWNER = "vwt"  # the vwt waiting for a foreground hook is gone
ASKED = "asked"  # SIGTERM


class Ended(NamedTuple):
    """How the hook ended: by itself (`why` None, its `status`), or stopped for `why`
    (`how`: SIGTERM, or SIGKILL after the grace)."""

    why: str | None
    status: int = 0
    how: str = ""


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def main(argv: list[str]) -> int:
    timeout, command, rest = float(argv[0]), argv[1], argv[2:]
    host = None
    if rest[:1] == ["--host"]:
        from vibe_worktree.core.host import Host

        host, rest = Host(int(rest[1]), rest[2]), rest[3:]
    foreground = rest[:1] == ["--foreground"]
    rest = rest[1:] if foreground else rest
    try:
        ended = _supervise(timeout, command, host, foreground)
        if foreground:
            return _report(ended)
        if len(rest) >= 5 and ended.why is None and ended.status == 0:
            _setup_done(_claim(*rest[:3]), rest[4])
        return _log(ended, timeout, host)
    finally:
        if len(rest) >= 4:
            _let_go(_claim(*rest[:3]), int(rest[3]))


def _claim(root: str, bucket: str, name: str) -> Claim:
    from vibe_worktree.core.layout import Claim, Root

    return Claim(Root(os.path.dirname(root), root), bucket, name)


def _setup_done(claim: Claim, setup_id: str) -> None:
    from vibe_worktree.lifecycle.setup_state import settle

    try:
        settle(claim, [setup_id])
    except OSError as exc:  # the setup then reads incomplete: `vwt new NAME` runs it again
        print(f"[vwt] {_stamp()} could not record the hook's success: {exc}", flush=True)


def _let_go(claim: Claim, fd: int) -> None:
    from vibe_worktree.core.locks import let_go_inherited

    try:
        let_go_inherited(claim, fd)
    except OSError as exc:  # the kernel drops the lock anyway when this process ends
        print(f"[vwt] {_stamp()} could not delete the holder file: {exc}", flush=True)


def _log(ended: Ended, timeout: float, host: Host | None) -> int:
    """A background hook's end, in its log; the status as a shell gives it."""
    if ended.why == TIMED_OUT:
        print(f"[vwt] {_stamp()} timed out after {timeout:g} s; its processes were killed",
              flush=True)
        return 124
    if ended.why == ASKED:
        print(f"[vwt] {_stamp()} asked to stop; the hook's processes were stopped "
              f"({ended.how})", flush=True)
        return 143
    if ended.why is not None:
        assert host is not None
        print(f"[vwt] {_stamp()} the agent process {host.pid} ended; the hook's processes "
              f"were stopped ({ended.how})", flush=True)
        return 143
    print(f"[vwt] {_stamp()} exited with status {ended.status}", flush=True)
    return ended.status if ended.status >= 0 else 128 - ended.status


def _report(ended: Ended) -> int:
    """A foreground hook's end, as one line for the vwt waiting on it (gone, maybe)."""
    line = (f"exit {ended.status}" if ended.why is None else
            ended.why if ended.why == TIMED_OUT else f"stopped {ended.why}")
    try:
        os.write(1, f"{line}\n".encode())
    except OSError:
        pass  # vwt is gone: nobody to tell
    return 0


def _supervise(timeout: float, command: str, host: Host | None, foreground: bool) -> Ended:
    # The hook itself does not inherit the holder descriptor: a daemon it leaves behind
    # must not hold the worktree forever. A foreground hook's output is vwt's stderr.
    asked = _on_sigterm()  # before the hook starts: a SIGTERM from now on stops it
    child = subprocess.Popen(["/bin/sh", "-c", command], stdin=subprocess.DEVNULL,
                             stdout=2 if foreground else None, start_new_session=True,
                             close_fds=True)
    why = _wait(child, timeout, host, 0 if foreground else None, asked)
    if why is None:
        return Ended(None, child.returncode)
    if why == TIMED_OUT:
        return _kill_at_timeout(child)
    return Ended(why, how=stop_group(child))


def _kill_at_timeout(child: subprocess.Popen[bytes]) -> Ended:
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    return Ended(TIMED_OUT)


def _on_sigterm() -> int:
    """A pipe SIGTERM makes readable (its number is written to it): select wakes at once,
    and no exception from a handler can cut the start of the hook in two."""
    read, write = os.pipe()
    os.set_blocking(write, False)
    signal.set_wakeup_fd(write)
    signal.signal(signal.SIGTERM, lambda _signum, _frame: None)
    return read


def _wait(child: subprocess.Popen[bytes], timeout: float, host: Host | None,
          owner: int | None, asked: int) -> str | None:
    """None once the hook ended by itself; else why it must stop first: the agent process
    died, the owner's pipe reached end of file, SIGTERM came, or the timeout did."""
    from vibe_worktree.core.host import alive, open_pidfd

    deadline = time.monotonic() + timeout
    pids = [] if host is None else [host.pid]
    fds = [fd for fd in (open_pidfd(pid) for pid in (*pids, child.pid)) if fd is not None]
    watched = [*fds, asked, *([] if owner is None else [owner])]
    # without a pidfd to wake on the hook's end, poll for it often
    poll = POLL_SECONDS if len(fds) > len(pids) else 0.05
    try:
        ready: list[int] = []
        while child.poll() is None:
            if host is not None and not alive(host):
                return AGENT
            if owner is not None and owner in ready and not os.read(owner, 512):
                return OWNER
            if asked in ready and signal.SIGTERM in os.read(asked, 512):
                return ASKED
            left = deadline - time.monotonic()
            if left <= 0:
                return TIMED_OUT
            ready = select.select(watched, [], [], min(left, poll))[0]
        return None
    finally:
        for fd in fds:
            os.close(fd)


def stop_group(child: subprocess.Popen[bytes], first: int = signal.SIGTERM) -> str:
    """`first` (SIGTERM) to the hook's group, SIGKILL to whatever of it is left after GRACE
    (also when this wait is itself interrupted). The leader is reaped only afterwards:
    until then its pid cannot name another group."""
    killed = True
    try:
        _signal_group(child.pid, first)
        deadline = time.monotonic() + GRACE
        while time.monotonic() < deadline and _group_runs(child.pid):
            time.sleep(0.02)
        killed = _group_runs(child.pid)
    finally:
        _signal_group(child.pid, signal.SIGKILL)
        child.wait()
    return f"SIGKILL after {GRACE:g} s" if killed else signal.Signals(first).name


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _group_runs(pgid: int) -> bool:
    """A process of the group still runs (its exited, unreaped leader does not count).
    Without /proc, assume so: the grace is then waited in full."""
    from vibe_worktree.core.host import read_stat

    if not os.path.isdir("/proc/self"):
        return True
    for entry in os.listdir("/proc"):
        stat = read_stat(int(entry)) if entry.isdigit() else None
        if stat is not None and int(stat[1][2]) == pgid and stat[1][0] not in ("Z", "X"):
            return True
    return False


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
