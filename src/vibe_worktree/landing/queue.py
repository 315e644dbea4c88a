"""The land queue (SPEC §18): one `vwt land` at a time per repository and target branch,
first come first served, across processes.

Each land waiting or landing has a ticket: a file `<root>/.land/<bucket>/tickets/<N>.ticket`
(never inside a claim folder, nor in a bucket folder Mistral Vibe walks) saying which
process it is, which target it lands on and which worktrees it still has in hand. Its
process holds an exclusive flock on it for as long as it lives, so a ticket is live exactly
while its land is; the kernel drops the lock of a killed land, and its ticket is then no
one's turn (the next land to look clears it). N is the arrival number, taken from a counter
under the folder's lock (`.lock`), under which every ticket is also made, changed and
cleared: arrival order is the order of the numbers.

The turn of a target belongs to the live ticket with the lowest number among that target's.
A land whose turn it is not waits on that ticket's lock (a shared flock, granted the moment
the land holding it lets go or dies), then looks again.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

from ..core.files import write_atomically
from ..core.layout import Root, ensure_dir, unlink_if_exists
from ..core.light import NamedTuple
from ..core.locks import locked, try_flock
from ..core.records import utc_now

LAND_FOLDER = ".land"
SUFFIX = ".ticket"
Say = Callable[[str], None]


def land_folder(root: Root, bucket: str) -> str:
    """`<root>/.land/<bucket>`: the gate logs and the queue of one repository."""
    return f"{root.path}/{LAND_FOLDER}/{bucket}"


class Ticket(NamedTuple):
    """One land in the queue, as its ticket says."""

    number: int  # arrival order
    pid: int
    target: str  # the target branch's short name ("" when the ticket cannot be read)
    names: tuple[str, ...]  # the worktrees it still has in hand
    path: str

    def describe(self) -> str:
        names = ", ".join(self.names) or "nothing more"
        return f"pid {self.pid} landing {names}"


class Queue(NamedTuple):
    """The tickets of one repository (all its targets share the folder and its lock: a
    worktree is in one land's hand whatever branch that land lands on)."""

    root: Root
    bucket: str

    @property
    def folder(self) -> str:
        return f"{land_folder(self.root, self.bucket)}/tickets"

    @contextmanager
    def locked(self) -> Iterator[None]:
        """The folder's lock: taken for every ticket made, changed, read or cleared."""
        with locked(f"{self.folder}/.lock", self.root.path):
            yield

    def tickets(self) -> list[Ticket]:
        """The live tickets, oldest first; a dead land's ticket is deleted (under the lock)."""
        live = []
        for number, path in self._files():
            ticket = _read_live(number, path)
            if ticket is None:
                with suppress(OSError):  # its land is gone: it never has a turn
                    os.unlink(path)
            else:
                live.append(ticket)
        return live

    def peek(self) -> list[Ticket]:
        """The live tickets, oldest first, read without the lock and changing nothing (a
        dry run, a home this process cannot write)."""
        found = (_read_live(number, path) for number, path in self._files())
        return [t for t in found if t is not None]

    def _files(self) -> list[tuple[int, str]]:
        try:
            names = os.listdir(self.folder)
        except OSError:
            return []
        found = []
        for name in names:
            stem = name.removesuffix(SUFFIX)
            if name.endswith(SUFFIX) and stem.isdigit():
                found.append((int(stem), f"{self.folder}/{name}"))
        return sorted(found)

    def in_hand(self) -> dict[str, Ticket]:
        """Worktree name -> the live land that has it in hand (under the lock)."""
        return {name: t for t in self.tickets() for name in t.names}

    def join(self, target: str, names: tuple[str, ...]) -> Place:
        """A ticket for a land of `names` on `target`, last in the queue (under the lock)."""
        number = self._next_number()
        path = f"{self.folder}/{number:010d}{SUFFIX}"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        try:
            if not try_flock(fd):  # pragma: no cover - O_EXCL made it ours
                raise OSError(errno.EAGAIN, f"could not lock {path}")
            ticket = Ticket(number, os.getpid(), target, names, path)
            _write(fd, ticket)
        except BaseException:
            os.close(fd)
            unlink_if_exists(path)
            raise
        return Place(self, ticket, fd)

    def _next_number(self) -> int:
        """One more than the last number given (a counter file, so numbers never repeat
        while tickets come and go); a lost or unreadable counter starts after the tickets
        there are."""
        ensure_dir(self.folder, self.root.path)
        counter = f"{self.folder}/.counter"
        try:
            with open(counter, encoding="ascii") as handle:
                last = int(handle.read().strip())
        except (OSError, ValueError):
            last = 0
        last = max([last, *(number for number, _path in self._files())]) + 1
        write_atomically(counter, f"{last}\n".encode(), durable=False)
        return last


def _write(fd: int, ticket: Ticket) -> None:
    text = json.dumps({"version": 1, "pid": ticket.pid, "target": ticket.target,
                       "names": list(ticket.names), "since": utc_now()}) + "\n"
    os.ftruncate(fd, 0)
    os.pwrite(fd, text.encode(), 0)


def _read_live(number: int, path: str) -> Ticket | None:
    """The ticket at `path` while its land lives; None when no process holds it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None  # gone meanwhile, or not a file of ours (a planted link)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode) or try_flock(fd):
            return None
        raw = os.read(fd, 1 << 16)
    finally:
        os.close(fd)
    try:
        data = json.loads(raw)
        pid, target, names = data["pid"], data["target"], data["names"]
        if not (isinstance(pid, int) and isinstance(target, str) and isinstance(names, list)
                and all(isinstance(n, str) for n in names)):
            raise ValueError("not a ticket")
    except (ValueError, KeyError, TypeError):
        # a live land we cannot read: its turn counts for every target, with no names
        return Ticket(number, 0, "", (), path)
    return Ticket(number, pid, target, tuple(names), path)


class Place:
    """This process's ticket: its place in the queue until it leaves (or dies)."""

    def __init__(self, queue: Queue, ticket: Ticket, fd: int) -> None:
        self.queue = queue
        self.ticket = ticket
        self._fd: int | None = fd

    def first(self) -> Ticket:
        """Whose turn it is on this ticket's target: the oldest live ticket of it."""
        with self.queue.locked():
            return self._first(self.queue.tickets())

    def _first(self, tickets: list[Ticket]) -> Ticket:
        mine = self.ticket
        for ticket in tickets:
            if ticket.number == mine.number:
                return mine
            if ticket.target in (mine.target, ""):
                return ticket
        return mine  # pragma: no cover - our own ticket is live while we hold it

    def wait_turn(self, say: Say, wait: bool = True) -> bool:
        """Until it is this land's turn (True). `wait` False: False at once when it is not.
        `say` is told whose turn it is each time that changes."""
        told = None
        while True:
            first = self.first()
            if first.number == self.ticket.number:
                return True
            if not wait:
                return False
            if (first.number, first.names) != told:
                say(f"waiting for {first.describe()}")
                told = (first.number, first.names)
            _wait_for_release(first.path)

    def keep_only(self, names: tuple[str, ...]) -> None:
        """Say that this land now has only `names` in hand (the others are done)."""
        if self._fd is None:
            return
        with self.queue.locked():
            self.ticket = self.ticket._replace(names=names)
            _write(self._fd, self.ticket)

    def leave(self) -> None:
        """Delete the ticket, then let go of it: the next land's turn."""
        if self._fd is None:
            return
        with self.queue.locked():
            unlink_if_exists(self.ticket.path)
            os.close(self._fd)
            self._fd = None


def _wait_for_release(path: str) -> None:
    """Block until the land holding `path` lets go of it (or dies): a shared flock is granted
    then, and given back at once."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return  # it left meanwhile
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    finally:
        os.close(fd)
