"""Which processes run where: one look at this machine's processes.

Linux reads /proc: each process's current directory (the `/proc/PID/cwd` link), and the
TCP ports it listens on (the LISTEN entries of /proc/net/tcp and tcp6, whose socket
inodes are matched to the `socket:[INODE]` links in /proc/PID/fd). Elsewhere (macOS)
`lsof` and `ps` are asked, best effort. A process this user may not inspect (another
user's, or one that made itself undumpable) has no readable current directory: it is
kept apart as unreadable, never guessed to be inside or outside a folder.

"Inside a folder" means its current directory is that folder or below it, both as the
kernel resolves them (real paths, no symlinks). The caller and its ancestors never
count as using a folder: a `vwt rm` typed in a shell inside the worktree, or `vwt run
NAME -- vwt rm NAME`, must not be refused because of itself.

Stopping is the one dangerous thing here: a pid is signalled only right after it was
seen again as the same process (its start time) still inside the folder, and on Linux
the signal goes through a pidfd, so a pid the kernel handed to someone else meanwhile is
never hit.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Iterable, Sequence

from .host import read_stat
from .light import NamedTuple
from .processes import Process, TimedOut, find_program

TERM_GRACE = 5.0  # seconds between SIGTERM and SIGKILL
KILL_WAIT = 2.0  # seconds a SIGKILLed process gets to disappear before it is reported
_POLL = 0.02
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's `st` column
_DELETED = " (deleted)"
_NO_LOGIN = 4294967295  # /proc/PID/loginuid of a process no login session started
_COMMAND_BYTES = 4096

# What `stop` did to each process
TERMINATED = "terminated"  # it exited after SIGTERM
KILLED = "killed"  # it outlived the grace period and got SIGKILL
GONE = "gone"  # it had exited before it was signalled
LEFT = "left"  # not signalled: it is no longer inside the folder, or its pid is another's
REFUSED = "refused"  # not ours to signal (EPERM)


class Proc(NamedTuple):
    """A process seen inside a folder."""

    pid: int
    started: str  # the kernel's start time: a reused pid has another
    command: str
    cwd: str


class Listener(NamedTuple):
    """A listening TCP socket; `pids` are the processes that hold it (empty when none
    this user may inspect does: `uid` then says whose it is)."""

    port: int
    uid: int
    pids: tuple[int, ...]


class Stopped(NamedTuple):
    pid: int
    command: str
    how: str  # TERMINATED, KILLED, GONE, LEFT or REFUSED


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder + "/")


def _real(folder: str) -> str:
    return os.path.realpath(folder)


class Table:
    """The processes of this machine at one moment: their current directories, and (read
    on first use) their commands, start times and listening ports."""

    def __init__(self, cwds: dict[int, str | None], unreadable: Collection[int],
                 listeners: list[Listener] | None = None,
                 commands: dict[int, str] | None = None,
                 started: dict[int, str] | None = None) -> None:
        self.cwds = cwds  # pid -> real current directory; None when it was deleted
        self.unreadable = tuple(sorted(unreadable))
        self._listeners = listeners
        self._commands = commands if commands is not None else {}
        self._started = started if started is not None else {}

    # -- folders ---------------------------------------------------------------------------
    def inside(self, folders: Iterable[str], skip: Collection[int] = ()) -> dict[str, list[int]]:
        """folder -> the pids (but `skip`) whose current directory is inside it. Each
        current directory is looked up by its parents, so many folders cost no more."""
        wanted: dict[str, list[str]] = {}
        for folder in folders:
            wanted.setdefault(_real(folder), []).append(folder)
        found: dict[str, list[int]] = {f: [] for f in folders}
        for pid, cwd in self.cwds.items():
            if cwd is None or pid in skip:
                continue
            path = cwd
            while True:
                named = wanted.get(path)
                if named is not None:
                    for folder in named:
                        found[folder].append(pid)
                    break
                parent = os.path.dirname(path)
                if parent == path:
                    break
                path = parent
        return {folder: sorted(pids) for folder, pids in found.items()}

    def procs(self, pids: Iterable[int]) -> list[Proc]:
        return [Proc(pid, self.started(pid), self.command(pid), self.cwds.get(pid) or "")
                for pid in pids]

    def may_be_inside(self, folder: str) -> list[int]:
        """Unreadable processes that could be inside `folder` (Linux): those a login
        session of this user started (through sudo, say), and those of other users (root
        excepted) when the folder lets others in. System services, which no login
        started, are not named: they are there on every machine."""
        if not self.unreadable or not os.path.isdir("/proc/self"):
            return []
        try:
            open_to_others = bool(os.stat(folder).st_mode & 0o001)
        except OSError:
            return []
        me = os.getuid()
        found = []
        for pid in self.unreadable:
            try:
                with open(f"/proc/{pid}/loginuid", "rb") as f:
                    login = int(f.read().strip() or _NO_LOGIN)
                owner = os.stat(f"/proc/{pid}").st_uid
            except (OSError, ValueError):
                continue
            if (login != _NO_LOGIN and login == me) or (
                    open_to_others and owner not in (0, me)):
                found.append(pid)
        return found

    # -- details, read once and only for the processes asked about -------------------------
    def command(self, pid: int) -> str:
        if pid not in self._commands:
            self._commands[pid] = _read_command(pid)
        return self._commands[pid]

    def started(self, pid: int) -> str:
        if pid not in self._started:
            stat = read_stat(pid)
            self._started[pid] = stat[1][19] if stat else ""
        return self._started[pid]

    # -- ports -----------------------------------------------------------------------------
    def listeners(self) -> list[Listener]:
        """Every listening TCP socket (IPv4 and IPv6) and who holds it."""
        if self._listeners is None:
            self._listeners = _proc_listeners(self.cwds)
        return self._listeners

    def listening(self) -> dict[int, tuple[int, ...]]:
        """pid -> the TCP ports it listens on (sorted, each once)."""
        ports: dict[int, set[int]] = {}
        for listener in self.listeners():
            for pid in listener.pids:
                ports.setdefault(pid, set()).add(listener.port)
        return {pid: tuple(sorted(found)) for pid, found in ports.items()}


def scan() -> Table:
    """One pass over the processes of this machine."""
    if os.path.isdir("/proc/self/fd"):
        return _proc_table()
    return _lsof_table()


def ancestors() -> frozenset[int]:
    """This process and every ancestor of it, up to the first process."""
    parents = _ps_parents() if not os.path.isdir("/proc/self") else None
    found = {os.getpid()}
    pid = os.getppid()
    while pid > 0 and pid not in found:
        found.add(pid)
        if parents is not None:
            pid = parents.get(pid, 0)
        else:
            stat = read_stat(pid)
            pid = int(stat[1][1]) if stat else 0
    return frozenset(found)


def processes_inside(folders: Sequence[str]) -> dict[str, list[int]]:
    """folder -> the ids of the processes (this one excepted) whose current directory is
    that folder or inside it. Other users' processes are seen only where the system lets
    this user read them (as root, nearly always)."""
    return scan().inside(folders, skip={os.getpid()})


def users(folders: Sequence[str], table: Table | None = None,
          spare: Collection[int] | None = None) -> dict[str, list[Proc]]:
    """folder -> the processes using it (their current directory is inside it), those in
    `spare` excepted (default: the caller and its ancestors): what keeps a worktree from
    being removed. A process that started a moment ago gets up to SETTLE seconds to end
    first: the `git status` another vwt (a board, a status line) runs there is not a user."""
    table = table or scan()
    inside = table.inside(folders, skip=ancestors() if spare is None else spare)
    found = {folder: table.procs(pids) for folder, pids in inside.items()}
    ended = _settle([p for procs in found.values() for p in procs])
    return {folder: [p for p in procs if p.pid not in ended] for folder, procs in found.items()}


SETTLE = 1.0  # seconds a process younger than YOUNG gets to end before it counts as a user
YOUNG = 2.0


def _settle(procs: list[Proc], seconds: float = SETTLE) -> set[int]:
    """The pids of the young processes among `procs` that ended within `seconds`."""
    young = [p for p in procs if _age(p.started) < YOUNG]
    ended: set[int] = set()
    deadline = time.monotonic() + seconds
    while young and time.monotonic() < deadline:
        time.sleep(_POLL)
        for proc in young:
            stat = read_stat(proc.pid)
            if stat is None or stat[1][0] == "Z" or stat[1][19] != proc.started:
                ended.add(proc.pid)
        young = [p for p in young if p.pid not in ended]
    return ended


def _age(started: str) -> float:
    """Seconds since a process started, from its start time in clock ticks after boot (Linux);
    infinity where that cannot be told (it then counts at once)."""
    if not started.isdigit():
        return float("inf")
    try:
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return float("inf")
    return uptime - int(started) / os.sysconf("SC_CLK_TCK")


def describe(procs: Sequence[Proc], most: int = 3) -> str:
    """`2 processes run inside it (pid 4812: npm run dev; pid 4830: node server.js)`."""
    shown = "; ".join(f"pid {p.pid}: {_short(p.command)}" for p in procs[:most])
    more = f"; {len(procs) - most} more" if len(procs) > most else ""
    runs = "process runs" if len(procs) == 1 else "processes run"
    return f"{len(procs)} {runs} inside it ({shown}{more})"


def _short(command: str, width: int = 60) -> str:
    return command if len(command) <= width else command[:width - 1] + "…"


# -- Linux: /proc ---------------------------------------------------------------------------
def _proc_table() -> Table:
    cwds: dict[int, str | None] = {}
    unreadable = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cwds[int(entry)] = _cwd(int(entry))
        except FileNotFoundError:  # it exited meanwhile
            continue
        except OSError:  # another user's, or one that made itself undumpable
            if os.path.isdir(f"/proc/{entry}"):
                unreadable.append(int(entry))
    return Table(cwds, unreadable)


def _cwd(pid: int) -> str | None:
    """The real current directory of `pid`; None when that folder was deleted (the link
    then ends in " (deleted)", and the folder it names may be another one now)."""
    link = os.readlink(f"/proc/{pid}/cwd")
    if link.endswith(_DELETED) and os.stat(f"/proc/{pid}/cwd").st_nlink == 0:
        return None
    return link


def _read_command(pid: int) -> str:
    """The command line of `pid`, its arguments joined by spaces (`[name]` for a kernel
    thread or a zombie, which have none)."""
    if not os.path.isdir("/proc/self"):
        return _ps_commands([pid]).get(pid, "")
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read(_COMMAND_BYTES)
    except OSError:
        raw = b""
    words = raw.rstrip(b"\0").split(b"\0")
    command = " ".join(w.decode("utf-8", "replace") for w in words)
    if command:
        return command
    stat = read_stat(pid)
    return f"[{stat[0]}]" if stat else ""


def _listening_sockets() -> dict[int, tuple[int, int]]:
    """socket inode -> (port, uid) of every TCP socket in LISTEN state."""
    found: dict[int, tuple[int, int]] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii", errors="replace") as f:
                lines = f.read().splitlines()[1:]
        except OSError:  # no IPv6 here
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == _LISTEN:
                port = int(fields[1].rpartition(":")[2], 16)
                found[int(fields[9])] = (port, int(fields[7]))
    return found


def _proc_listeners(cwds: Iterable[int]) -> list[Listener]:
    sockets = _listening_sockets()
    holders: dict[int, list[int]] = {inode: [] for inode in sockets}
    if sockets:
        for pid in cwds:
            for inode in _socket_inodes(pid):
                if inode in holders:
                    holders[inode].append(pid)
    return sorted(Listener(port, uid, tuple(sorted(holders[inode])))
                  for inode, (port, uid) in sockets.items())


def _socket_inodes(pid: int) -> list[int]:
    folder = f"/proc/{pid}/fd"
    try:
        fds = os.listdir(folder)
    except OSError:  # gone, or not ours to read
        return []
    found = []
    for fd in fds:
        try:
            link = os.readlink(f"{folder}/{fd}")
        except OSError:  # closed meanwhile
            continue
        if link.startswith("socket:["):
            found.append(int(link[8:-1]))
    return found


# -- macOS and other systems without /proc: lsof and ps (best effort) ----------------------
def _run(argv: list[str]) -> str:
    program = find_program(argv[0], os.environ.get("PATH", "") + ":/usr/sbin:/usr/bin:/bin")
    if program is None:
        return ""
    try:
        child = Process(program, [program, *argv[1:]], dict(os.environ, LC_ALL="C"),
                        new_session=True)
        out, _err = child.communicate(timeout=10.0)
    except (OSError, TimedOut):
        return ""
    return out


def _lsof_fields(out: str) -> list[tuple[int, str]]:
    """(pid, name) pairs of `lsof -F pn` output."""
    found, pid = [], None
    for line in out.splitlines():
        if line.startswith("p") and line[1:].isdigit():
            pid = int(line[1:])
        elif line.startswith("n") and pid is not None:
            found.append((pid, line[1:]))
    return found


def _lsof_table() -> Table:
    cwds: dict[int, str | None] = {
        pid: path for pid, path in _lsof_fields(_run(["lsof", "-w", "-d", "cwd", "-F", "pn"]))}
    by_port: dict[int, set[int]] = {}
    for pid, address in _lsof_fields(
            _run(["lsof", "-nP", "-w", "-iTCP", "-sTCP:LISTEN", "-F", "pn"])):
        port = address.rpartition(":")[2]
        if port.isdigit():
            by_port.setdefault(int(port), set()).add(pid)
    listeners = [Listener(port, -1, tuple(sorted(pids))) for port, pids in sorted(by_port.items())]
    details = _ps_details()
    return Table(cwds, (), listeners, {p: d[2] for p, d in details.items()},
                 {p: d[1] for p, d in details.items()})


def _ps_details() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent, start time, command) of every process, from one `ps`."""
    found = {}
    for line in _run(["ps", "-A", "-o", "pid=,ppid=,lstart=,command="]).splitlines():
        parts = line.split(None, 7)
        if len(parts) == 8 and parts[0].isdigit() and parts[1].isdigit():
            found[int(parts[0])] = (int(parts[1]), " ".join(parts[2:7]), parts[7])
    return found


def _ps_parents() -> dict[int, int]:
    return {pid: detail[0] for pid, detail in _ps_details().items()}


def _ps_commands(pids: list[int]) -> dict[int, str]:
    details = _ps_details()
    return {pid: details[pid][2] for pid in pids if pid in details}


# -- stopping -------------------------------------------------------------------------------
class _Target:
    """One process to stop, pinned (on Linux) by a pidfd so its pid cannot be reused
    under us."""

    def __init__(self, proc: Proc) -> None:
        self.proc = proc
        self.fd: int | None = None
        try:
            self.fd = os.pidfd_open(proc.pid)
        except ProcessLookupError:
            self.fd = -1  # gone already
        except (AttributeError, OSError):
            self.fd = None  # no pidfds here: os.kill, right after the check

    def close(self) -> None:
        if self.fd is not None and self.fd >= 0:
            os.close(self.fd)
        self.fd = -1

    def exited(self) -> bool:
        if self.fd == -1:
            return True
        if self.fd is not None:
            import select

            return bool(select.select([self.fd], [], [], 0)[0])
        try:
            os.kill(self.proc.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        stat = read_stat(self.proc.pid)
        return stat is not None and stat[1][0] == "Z"

    def still_inside(self, folder: str) -> bool:
        """The same process (start time) still has its current directory in `folder`.
        Read before `exited()` is asked: while the pidfd's process lives, its pid is its."""
        pid = self.proc.pid
        if os.path.isdir("/proc/self"):
            try:
                cwd = _cwd(pid)
            except OSError:
                return False
            stat = read_stat(pid)
            started = stat[1][19] if stat else ""
        else:
            cwd = _lsof_table().cwds.get(pid)
            started = _ps_details().get(pid, (0, "", ""))[1]
        same = started == self.proc.started and cwd is not None and _within(cwd, folder)
        return same and not self.exited()

    def signal(self, signum: int) -> str | None:
        """None once sent; else what became of the process (GONE, REFUSED)."""
        import signal

        try:
            if self.fd is not None and self.fd >= 0:
                signal.pidfd_send_signal(self.fd, signum)
            else:
                os.kill(self.proc.pid, signum)
        except ProcessLookupError:
            return GONE
        except PermissionError:
            return REFUSED
        return None


def stop(procs: Sequence[Proc], folder: str, grace: float = TERM_GRACE) -> list[Stopped]:
    """SIGTERM each process still inside `folder`, wait up to `grace` seconds, SIGKILL
    those left (only while still inside), and say what became of each. The caller and
    its ancestors are never signalled, whatever `procs` holds."""
    import signal

    real = _real(folder)
    spared = ancestors()
    targets = [_Target(p) for p in procs if p.pid > 1 and p.pid not in spared]
    how: dict[int, str] = {p.pid: LEFT for p in procs}
    try:
        waiting = []
        for target in targets:
            if target.exited():
                how[target.proc.pid] = GONE
            elif not target.still_inside(real):
                how[target.proc.pid] = GONE if target.exited() else LEFT
            else:
                how[target.proc.pid] = target.signal(signal.SIGTERM) or TERMINATED
                if how[target.proc.pid] == TERMINATED:
                    waiting.append(target)
        left = _wait(waiting, grace)
        for target in left:
            if not target.still_inside(real):
                how[target.proc.pid] = TERMINATED if target.exited() else LEFT
                continue
            how[target.proc.pid] = target.signal(signal.SIGKILL) or KILLED
        _wait([t for t in left if how[t.proc.pid] == KILLED], KILL_WAIT)
    finally:
        for target in targets:
            target.close()
    return [Stopped(p.pid, p.command, how[p.pid]) for p in procs]


def _wait(targets: list[_Target], seconds: float) -> list[_Target]:
    """Wait until every target exited or `seconds` passed; the ones still running."""
    deadline = time.monotonic() + seconds
    running = [t for t in targets if not t.exited()]
    while running and time.monotonic() < deadline:
        time.sleep(_POLL)
        running = [t for t in running if not t.exited()]
    return running
