"""The agent process a hook works for, and whether it still lives.

Claude Code runs a hook command through a shell (`sh -c 'vwt hook claude-code'`), so
the agent is the nearest ancestor of the handler that is not a shell. A process is
known by its pid and its start time: a pid the kernel handed to someone else after the
agent died is not the agent.
"""

from __future__ import annotations

import os

from .light import NamedTuple

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "fish"})
_MAX_DEPTH = 32


class Host(NamedTuple):
    pid: int
    started: str  # the kernel's start time of the process ("" where it cannot be read)


class Activity(NamedTuple):
    """What an agent session is doing in a worktree, as a listing row shows it
    (`sessions.activity` reads and writes it; kept here, light, for the hooks' start-up)."""

    state: str
    agent: str
    session: str
    since: str
    host: Host
    expires: str | None = None  # `vwt activity set`'s: reads as none from then on

    def to_json(self) -> dict[str, str]:
        return {"state": self.state, "agent": self.agent, "session": self.session,
                "since": self.since}


def read_stat(pid: int) -> tuple[str, list[str]] | None:
    """The name of process `pid` and the fields of /proc/PID/stat after it (Linux):
    [0] the state, [1] the parent pid, [2] the process group, [19] the start time;
    None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    return raw[raw.index("(") + 1:raw.rindex(")")], raw[raw.rindex(")") + 2:].split()


def open_pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when process `pid` exits; None where there is
    none (not Linux, or the process is gone)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _proc_stat(pid: int) -> tuple[str, int, str] | None:
    """(name, parent pid, start time) from /proc (Linux), or None."""
    stat = read_stat(pid)
    if stat is None:
        return None
    name, fields = stat
    return name, int(fields[1]), fields[19]


def _ps_stat(pid: int) -> tuple[str, int, str] | None:
    """The same through ps(1), where there is no /proc (macOS)."""
    from .processes import Process, find_program

    program = find_program("ps", "/bin:/usr/bin")
    if program is None:
        return None
    child = Process(program, [program, "-o", "ppid=,lstart=,comm=", "-p", str(pid)],
                    dict(os.environ, LC_ALL="C"))
    out, _ = child.communicate(timeout=5)
    parts = out.split()
    if child.returncode != 0 or len(parts) < 7:
        return None
    return os.path.basename(" ".join(parts[6:])), int(parts[0]), " ".join(parts[1:6])


def _stat(pid: int) -> tuple[str, int, str] | None:
    if os.path.isdir("/proc/self"):
        return _proc_stat(pid)
    return _ps_stat(pid)


def find_host(start: int | None = None) -> Host:
    """The nearest ancestor of this process (from its parent up) that is not a shell."""
    pid = os.getppid() if start is None else start
    for _ in range(_MAX_DEPTH):
        stat = _stat(pid)
        if stat is None:
            return Host(pid, "")
        name, parent, started = stat
        if name.lstrip("-") not in SHELLS or parent <= 1:
            return Host(pid, started)
        pid = parent
    return Host(pid, "")


def alive(host: Host) -> bool:
    """The same process still runs (a zombie counts as gone)."""
    try:
        os.kill(host.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process with that pid: the start time tells
    if not os.path.isdir("/proc/self"):
        return not host.started or (_ps_stat(host.pid) or ("", 0, ""))[2] == host.started
    stat = read_stat(host.pid)
    if stat is None:
        return False
    fields = stat[1]
    return fields[0] != "Z" and (not host.started or fields[19] == host.started)
