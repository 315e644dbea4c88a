"""`vwt ps`: what runs inside each worktree, and who serves each port of its lease.

Two sessions that start the same dev server collide, and an agent that tests "its"
server may be talking to another worktree's. This report says, per managed worktree,
which processes have their current directory inside its checkout (with the TCP ports
each listens on) and, for each port of its lease, which process listens there. A lease
port served from anywhere else (another worktree, the main checkout) is a mismatch.

All reading, from one look at the process table (`core.proctable`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..core.errors import VwtError
from ..core.layout import Root
from ..core.light import NamedTuple
from ..core.proctable import Listener, Table, scan
from ..lifecycle.leasing import PortFinder
from ..lifecycle.listing import shown_ports
from ..lifecycle.worktrees import SNAPSHOT, Here, entries, require_entry, require_trusted


class Running(NamedTuple):
    """A process whose current directory is inside the worktree."""

    pid: int
    command: str
    listening: tuple[int, ...]

    def to_json(self) -> dict[str, object]:
        return {"pid": self.pid, "command": self.command, "listening": list(self.listening)}


class PortOwner(NamedTuple):
    """Who listens on one port of the lease. `pid` (and `command`, `cwd`) are None when
    the socket belongs to a process this user may not inspect; `uid` then says whose."""

    port: int
    pid: int | None
    command: str | None
    cwd: str | None
    inside: bool
    uid: int | None = None

    def to_json(self) -> dict[str, object]:
        return {"port": self.port, "pid": self.pid, "command": self.command, "cwd": self.cwd,
                "inside": self.inside, "uid": self.uid}


class Unreadable(NamedTuple):
    """A process that may be inside the worktree but cannot be inspected (another user's)."""

    pid: int
    command: str

    def to_json(self) -> dict[str, object]:
        return {"pid": self.pid, "command": self.command}


class Mismatch(NamedTuple):
    """A port of NAME's lease served by a process from elsewhere."""

    name: str
    bucket: str
    port: int
    pid: int | None
    cwd: str | None
    uid: int | None = None

    @property
    def message(self) -> str:
        if self.pid is None:
            return (f"port {self.port} of {self.name} is served by a process of user "
                    f"{self.uid} that vwt may not inspect")
        return f"port {self.port} of {self.name} is served by pid {self.pid} in {self.cwd}"

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "bucket": self.bucket, "port": self.port, "pid": self.pid,
                "cwd": self.cwd, "message": self.message}


class WorktreeProcesses(NamedTuple):
    name: str
    bucket: str
    path: str
    ports: tuple[int, ...]
    processes: tuple[Running, ...]
    port_owners: tuple[PortOwner, ...]
    unreadable: tuple[Unreadable, ...] = ()

    @property
    def mismatches(self) -> list[Mismatch]:
        return [Mismatch(self.name, self.bucket, o.port, o.pid, o.cwd, o.uid)
                for o in self.port_owners if not o.inside]

    @property
    def links(self) -> list[str]:
        """`http://127.0.0.1:PORT/` for each port a process inside listens on."""
        ports = sorted({p for r in self.processes for p in r.listening})
        return [f"http://127.0.0.1:{port}/" for port in ports]

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name, "bucket": self.bucket, "path": self.path,
            "ports": list(self.ports),
            "processes": [p.to_json() for p in self.processes],
            "port_owners": [o.to_json() for o in self.port_owners],
            "unreadable": [u.to_json() for u in self.unreadable],
        }


class PsReport(NamedTuple):
    worktrees: tuple[WorktreeProcesses, ...]

    @property
    def mismatches(self) -> list[Mismatch]:
        return [m for w in self.worktrees for m in w.mismatches]

    def to_json(self) -> dict[str, object]:
        return {"worktrees": [w.to_json() for w in self.worktrees],
                "mismatches": [m.to_json() for m in self.mismatches]}


def ps(here: Here, name: str | None, all_repos: bool) -> PsReport:
    """`vwt ps`: NAME, a trusted worktree of this repository, alone; else every worktree of
    this repository (of every one with `all_repos`)."""
    if name is not None and all_repos:
        raise VwtError("NAME and --all do not go together; NAME is in this repository", 2)
    if name is not None:
        require_trusted(require_entry(here.repo.claim(name)))
    return report(here.root, here.buckets(all_repos), name)


def report(root: Root, buckets: Sequence[str], name: str | None = None,
           table: Table | None = None) -> PsReport:
    """The processes and port owners of every managed worktree of `buckets` (only NAME's
    when given). Snapshot-only entries have no checkout and no lease: they are left out."""
    found = [e for e in entries(root, list(buckets), with_recovery=False)
             if e.state != SNAPSHOT and (name is None or e.name == name)]
    table = table or scan()
    finder = PortFinder(root)
    inside = table.inside([e.claim.checkout for e in found], skip={os.getpid()})
    listening = table.listening() if found else {}
    by_port: dict[int, list[Listener]] = {}
    for listener in table.listeners() if found else []:
        by_port.setdefault(listener.port, []).append(listener)
    worktrees = []
    for entry in found:
        checkout = entry.claim.checkout
        pids = inside[checkout]
        ports = shown_ports(entry, entry.record, finder) or ()
        worktrees.append(WorktreeProcesses(
            entry.name, entry.claim.bucket, checkout, ports,
            tuple(Running(pid, table.command(pid), listening.get(pid, ())) for pid in pids),
            _owners(table, ports, by_port, set(pids)),
            tuple(Unreadable(pid, table.command(pid))
                  for pid in table.may_be_inside(checkout)),
        ))
    return PsReport(tuple(worktrees))


def _owners(table: Table, ports: tuple[int, ...], by_port: dict[int, list[Listener]],
            inside: set[int]) -> tuple[PortOwner, ...]:
    owners: dict[tuple[int, int | None], PortOwner] = {}
    for port in ports:
        for listener in by_port.get(port, []):
            if not listener.pids:
                owners.setdefault((port, None), PortOwner(port, None, None, None, False,
                                                          listener.uid))
            for pid in listener.pids:
                owners.setdefault((port, pid), PortOwner(
                    port, pid, table.command(pid), table.cwds.get(pid), pid in inside))
    return tuple(owners.values())
