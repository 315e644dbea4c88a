"""Child processes without `subprocess`: `posix_spawn`, pipes and `poll`.

`subprocess` costs about 4 ms to import (threading, selectors, locale) and more to
start each child, while `vwt new` is held to a few times one `git worktree add`
(SPEC section 7). What git calls need is small: argv, environment, optional input,
captured output, a new session and a timeout.
"""

from __future__ import annotations

import fcntl
import os
import time

from .light import NamedTuple

try:  # the C module: `signal` itself builds its enums, about 1 ms of start-up
    from _signal import SIGINT, SIGKILL, SIGPIPE, SIGXFSZ  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - other Pythons
    from signal import SIGINT, SIGKILL, SIGPIPE, SIGXFSZ

_READ_SIZE = 1 << 16
GRACE = 2.0  # an interrupted child's time to tidy up (git removes a half-added worktree)
# Python ignores SIGPIPE; a child must not inherit that (git would report EPIPE errors
# instead of quietly stopping when its reader goes away).
_DEFAULT_SIGNALS = (SIGPIPE, SIGXFSZ)


class TimedOut(Exception):
    """The child ran past its timeout; its process group has been killed."""


class Finished(NamedTuple):
    args: list[str]
    returncode: int
    stdout: str
    stderr: str


def find_program(name: str, path: str | None) -> str | None:
    """The first executable `name` on `path` (the PATH variable's value)."""
    for folder in (path or os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", name)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None


def _pipe() -> tuple[int, int]:
    """A pipe whose ends are not 0, 1 or 2, so that dup2 onto those never clobbers one."""
    ends = []
    for fd in os.pipe():
        if fd < 3:
            moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
            os.close(fd)
            fd = moved
        ends.append(fd)
    return ends[0], ends[1]


class Process:
    """A started child whose output is captured; `communicate` waits for it."""

    def __init__(self, program: str, args: list[str], env: dict[str, str], *,
                 input: bytes | None = None, capture_stderr: bool = True,
                 new_session: bool = False) -> None:
        self.args = args
        self.returncode: int | None = None
        self._own_group = new_session
        self._input = input
        actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = []
        child_ends = []
        self._stdin: int | None = None
        if input is None:
            actions.append((os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0))
        else:
            read_end, self._stdin = _pipe()
            actions.append((os.POSIX_SPAWN_DUP2, read_end, 0))
            child_ends.append(read_end)
        stdout, write_end = _pipe()
        self._stdout: int | None = stdout
        actions.append((os.POSIX_SPAWN_DUP2, write_end, 1))
        child_ends.append(write_end)
        self._stderr: int | None = None
        if capture_stderr:
            self._stderr, write_err = _pipe()
            actions.append((os.POSIX_SPAWN_DUP2, write_err, 2))
            child_ends.append(write_err)
        try:
            self.pid = os.posix_spawn(program, args, env, file_actions=actions,
                                      setsid=new_session, setsigdef=_DEFAULT_SIGNALS)
        except BaseException:
            self._close_all()
            raise
        finally:
            for fd in child_ends:
                os.close(fd)

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """Feed the input, read both outputs to the end, wait; raise TimedOut."""
        deadline = None if timeout is None else time.monotonic() + timeout
        out_fd, err_fd = self._stdout, self._stderr
        assert out_fd is not None, "communicate() runs once"
        chunks: dict[int, list[bytes]] = {fd: [] for fd in (out_fd, err_fd) if fd is not None}
        try:
            self._pump(chunks, deadline)
            self._wait_until(deadline)
        except BaseException as exc:
            self._stop(exc)
            raise
        finally:
            self._close_all()
        out = b"".join(chunks[out_fd])
        err = b"".join(chunks[err_fd]) if err_fd is not None else b""
        return out.decode("utf-8", "surrogateescape"), err.decode("utf-8", "surrogateescape")

    def _pump(self, chunks: dict[int, list[bytes]], deadline: float | None) -> None:
        """Write the input and read the outputs until every pipe is closed."""
        import select  # a C module: cheap, and only where a child runs

        poller = select.poll()
        for fd in chunks:
            poller.register(fd, select.POLLIN)
        pending = memoryview(self._input or b"")
        if self._stdin is not None:
            os.set_blocking(self._stdin, False)
            poller.register(self._stdin, select.POLLOUT)
        open_fds = len(chunks) + (self._stdin is not None)
        while open_fds:
            for fd, _event in poller.poll(_milliseconds_left(deadline)):
                if fd == self._stdin:
                    try:
                        pending = pending[os.write(fd, pending):]
                    except BrokenPipeError:  # it stopped reading: what it read is what it got
                        pending = memoryview(b"")
                    if not pending:
                        poller.unregister(fd)
                        os.close(fd)
                        self._stdin = None
                        open_fds -= 1
                elif data := os.read(fd, _READ_SIZE):
                    chunks[fd].append(data)
                else:
                    poller.unregister(fd)
                    open_fds -= 1
            _check(deadline, self.args)

    def _wait_until(self, deadline: float | None) -> None:
        if deadline is None:
            self.wait()
            return
        while self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
                return
            _check(deadline, self.args)
            time.sleep(0.002)

    def wait(self) -> int:
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def _stop(self, why: BaseException) -> None:
        """Kill the child (its whole group when it has one of its own) and reap it. When
        we were interrupted (Ctrl-C, SIGTERM), it gets that signal first and GRACE seconds
        to act on it, as a terminal's Ctrl-C would have it: git then tidies up what it was
        writing (the folders of a worktree it was adding) rather than leave half of it."""
        if self.returncode is not None:
            return
        try:
            if isinstance(why, KeyboardInterrupt):
                self._signal(getattr(why, "signum", SIGINT))
                deadline = time.monotonic() + GRACE
                while self._still_running() and time.monotonic() < deadline:
                    time.sleep(0.01)
        finally:
            if self.returncode is None:
                self._signal(SIGKILL)
                self.wait()

    def _signal(self, signum: int) -> None:
        try:
            if self._own_group:
                os.killpg(self.pid, signum)
            else:
                os.kill(self.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def _still_running(self) -> bool:
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid:
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode is None

    def _close_all(self) -> None:
        for fd in (self._stdin, self._stdout, self._stderr):
            if fd is not None:
                os.close(fd)
        self._stdin = self._stdout = self._stderr = None


def _milliseconds_left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic()) * 1e3


def _check(deadline: float | None, args: list[str]) -> None:
    if deadline is not None and time.monotonic() >= deadline:
        raise TimedOut(f"{' '.join(args[:3])} ran out of time")
