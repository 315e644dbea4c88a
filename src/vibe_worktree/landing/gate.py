"""The land gate (SPEC §18 step 2): a command that checks exactly what will land.

The gate (`--gate CMD`, else the approved `gate` of the `[land]` table: `land.py` picks
it) runs with `/bin/sh -c` in the worktree, stdin `/dev/null`, in a process group of its
own; its output goes both to our stderr and to `<root>/.land/<bucket>/<name>.log`. At its
timeout (`[land] timeout`, default 1800 s) the whole group is killed.

No process of the gate outlives the land that started it: beside the gate, a one-line
keeper in the same group waits for the end of file of a pipe only this process can write,
then kills the group. That end comes when the gate is over (its leftovers go with it), and
also when this process dies however it dies, a SIGKILL of its whole process group included
(the gate's group is another one, so that signal alone would not reach it).
"""

from __future__ import annotations

import os
import time
from typing import Any

from ..core.light import NamedTuple
from ..core.records import utc_now

LEFTOVER_WAIT = 5.0  # for what the keeper killed to let go of the output pipe

# stdin: the control pipe, $1: the gate. The keeper reads the pipe until its end of file,
# then kills its own process group (the gate's); the gate runs with /dev/null as stdin.
_KEEPER = ('exec 3<&0\n'
           '( read -r x <&3; kill -9 0 ) </dev/null >/dev/null 2>&1 &\n'
           'exec /bin/sh -c "$1" </dev/null 3<&-\n')


class GateRun(NamedTuple):
    """How one run of the gate ended."""

    command: str
    exit: int | None  # its exit status; None when it timed out (or was stopped)
    seconds: float
    log: str
    timed_out: bool = False

    @property
    def passed(self) -> bool:
        return self.exit == 0

    def describe(self) -> str:
        how = (f"timed out after {self.seconds:.0f} s (its processes were killed)"
               if self.timed_out else f"exited {self.exit} after {self.seconds:.1f} s")
        return f"gate `{self.command}` {how}"

    def to_json(self) -> dict[str, object]:
        return {"command": self.command, "exit": self.exit,
                "seconds": round(self.seconds, 3), "log": self.log,
                "timed_out": self.timed_out}


def run_gate(command: str, cwd: str, env: dict[str, str], timeout: float, log: str,
             header: str, fresh_log: bool = True) -> GateRun:
    """Run the gate and wait for it, its output tee'd to stderr and to `log` (truncated
    first when `fresh_log`, else appended to); killed with its group at `timeout`.
    Interrupted (Ctrl-C, SIGTERM), the group gets that signal, then SIGKILL."""
    import subprocess

    os.makedirs(os.path.dirname(log), exist_ok=True)
    started = time.monotonic()
    # a log, written as the gate speaks (not a state file: a part of it is worth keeping)
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | (os.O_TRUNC if fresh_log else os.O_APPEND)
    with os.fdopen(os.open(log, flags, 0o644), "wb") as out:
        out.write(f"[vwt] {utc_now()} {header}: {command}\n".encode())
        out.flush()
        output, output_end = os.pipe()
        control, control_end = os.pipe()
        try:
            child = subprocess.Popen(
                ["/bin/sh", "-c", _KEEPER, "vwt-gate", command], cwd=cwd, env=env,
                stdin=control, stdout=output_end, stderr=output_end, start_new_session=True)
        except OSError:
            for fd in (output, output_end, control, control_end):
                os.close(fd)
            raise
        os.close(output_end)
        os.close(control)
        tee = _Tee(output, out.fileno())
        try:
            timed_out = not _wait(child, tee, started + timeout)
        except BaseException as exc:
            _stop(child, exc)
            raise
        finally:
            os.close(control_end)  # the keeper kills whatever of the group is left
            tee.drain(time.monotonic() + LEFTOVER_WAIT)
            os.close(output)
        seconds = time.monotonic() - started
        code = None if timed_out else child.returncode
        ended = (f"timed out after {timeout:g} s; its processes were killed" if timed_out
                 else f"exited with status {code}")
        out.write(f"[vwt] {utc_now()} {ended} ({seconds:.1f} s)\n".encode())
    return GateRun(command, code, seconds, log, timed_out)


class _Tee:
    """Copies what the gate writes to our stderr and to its log."""

    def __init__(self, source: int, log: int) -> None:
        self.source = source
        self.log = log
        self.open = True

    def pump(self) -> None:
        """Copy what is there now (call when `source` is readable)."""
        data = os.read(self.source, 1 << 16)
        if not data:
            self.open = False
            return
        os.write(self.log, data)
        try:
            os.write(_stderr_fd(), data)
        except OSError:  # nobody reads our stderr any more: the log still has it all
            pass

    def drain(self, deadline: float) -> None:
        """Copy the rest, until the end of file (or `deadline`: a process that left the
        group and holds the pipe is not waited for)."""
        import select

        while self.open and time.monotonic() < deadline:
            ready = select.select([self.source], [], [], max(0.0, deadline - time.monotonic()))
            if ready[0]:
                self.pump()


def _wait(child: Any, tee: _Tee, deadline: float) -> bool:
    """Copy the output until the gate ends (True), or kill its group at `deadline` (False)."""
    import select
    import signal

    from ..core.host import open_pidfd

    pidfd = open_pidfd(child.pid)
    try:
        while child.poll() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                _kill_group(child.pid, signal.SIGKILL)
                child.wait()
                return False
            watched = ([tee.source] if tee.open else []) + ([pidfd] if pidfd is not None else [])
            # without a pidfd to wake on the gate's end, look again often
            pause = left if pidfd is not None else min(left, 0.05)
            ready = select.select(watched, [], [], pause)[0]
            if tee.source in ready:
                tee.pump()
        return True
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _stop(child: Any, why: BaseException) -> None:
    """Interrupted: the gate's group gets the signal (then SIGKILL), as a terminal's
    foreground job would; any other failure kills it at once."""
    import signal

    from ..lifecycle.hook_supervisor import stop_group

    if isinstance(why, KeyboardInterrupt):
        stop_group(child, getattr(why, "signum", signal.SIGINT))
    else:
        _kill_group(child.pid, signal.SIGKILL)
        child.wait()


def _kill_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _stderr_fd() -> int:
    import sys

    try:
        return sys.stderr.fileno()
    except (AttributeError, ValueError, OSError):
        return 2
