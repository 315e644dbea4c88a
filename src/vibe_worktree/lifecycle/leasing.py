"""A worktree's lease over its life (SPEC §17): made by every path that makes a managed
worktree, kept while it lives, given back when it goes, repaired by prune. The table itself,
and how a block is chosen, are `core/leases.py`'s.

The count a new lease is made with is `[ports] count` of the user's `<home>/worktree.toml`,
else of the repository's `.vibe/worktree.toml` (a new worktree's start point's, an adopted
checkout's own), else 1. A worktree without a lease (Mistral Vibe made it, or a vwt older
than leases) gets its hash block wherever its ports are asked for, until `vwt prune` or a
`vwt new NAME` that reuses it gives it a lease.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from ..core import leases
from ..core.config import port_range
from ..core.errors import VwtError
from ..core.layout import Claim, Root
from ..core.light import NamedTuple
from ..core.records import CorruptRecord, Record, read_record, write_record
from .settings import project_file, user_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .worktrees import Entry


# -- the count ---------------------------------------------------------------------------------
def count_in(data: dict[str, Any] | None, where: str) -> int | None:
    """`[ports] count` of a parsed settings file, None when it sets none."""
    table = None if data is None else data.get("ports")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise VwtError(f"{where}: 'ports' must be a table ([ports]) holding count = N")
    return None if "count" not in table else leases.check_count(table["count"], where)


def _readable(path: str) -> dict[str, Any] | None:
    """A settings file for its `[ports]`: one that is not TOML sets no count (`new` says
    what is wrong with it where its hooks are read)."""
    from .settings import HooksFileError, read_toml  # only when there is a file to read

    try:
        return read_toml(path)
    except HooksFileError:
        return None


def configured_count(home: str, project: dict[str, Any] | None, project_where: str) -> int:
    """The user's `[ports] count`, else the project's, else 1; an error naming the file when
    the one that counts is not a whole number from 1 to 100."""
    path = user_file(home)
    mine = count_in(_readable(path), path) if os.path.exists(path) else None
    return mine or count_in(project, project_where) or leases.DEFAULT_COUNT


def count_for_checkout(home: str, checkout: str) -> int:
    """The count for a worktree from its own checkout's `.vibe/worktree.toml`."""
    path = project_file(checkout)
    return configured_count(home, _readable(path) if os.path.exists(path) else None, path)


# -- reading -----------------------------------------------------------------------------------
class Ports(NamedTuple):
    """A worktree's ports: its lease's, or (`leased` False) its hash block."""

    ports: tuple[int, ...]
    leased: bool

    @property
    def first(self) -> int:
        return self.ports[0]


def table_of(root: Root) -> dict[str, int] | None:
    """The lease table for a reader; None when it cannot be trusted (prune rebuilds it)."""
    try:
        return leases.read_table(root)
    except leases.BadTable:
        return None


class PortFinder:
    """The ports of worktrees of one home, reading only: the table read once, and for those
    without a lease the range and the user's count read once (a listing asks a thousand)."""

    def __init__(self, root: Root) -> None:
        self.root = root
        self.table = table_of(root)
        self._range: tuple[int, int] | None = None
        self._mine: int | None = None

    def of(self, bucket: str, name: str, recorded: tuple[int, ...] | None,
           checkout: str | None = None) -> Ports:
        """Its lease's ports (a table that cannot be read leaves the record's word), else
        its hash block of the configured count (`checkout`: where its `.vibe/worktree.toml`
        is)."""
        return Ports(*self._ports(bucket, name, recorded, checkout))

    def quietly(self, bucket: str, name: str, recorded: tuple[int, ...] | None,
                checkout: str | None = None) -> tuple[int, ...] | None:
        """`of`'s ports, None when a setting they depend on is wrong (a listing shows the
        rest; `vwt port` and `vwt env` say what is wrong)."""
        try:
            return self._ports(bucket, name, recorded, checkout)[0]
        except VwtError:
            return None

    def leased(self, bucket: str, name: str, recorded: tuple[int, ...] | None
               ) -> tuple[int, ...] | None:
        """Its lease's ports, None when it has no lease (no hash block computed)."""
        if self.table is None:
            return recorded
        lease = leases.lease_in(self.table, bucket, name, recorded)
        return None if lease is None else lease.ports

    def _ports(self, bucket: str, name: str, recorded: tuple[int, ...] | None,
               checkout: str | None) -> tuple[tuple[int, ...], bool]:
        if self.table is None and recorded is not None:
            return recorded, True
        lease = leases.lease_in(self.table or {}, bucket, name, recorded)
        if lease is not None:
            return lease.ports, True
        low, high = self._low_high()
        count = min(self._count(checkout), high - low + 1)
        first = leases.hash_start(bucket, name, count, low, high)
        return tuple(range(first, first + count)), False

    def _low_high(self) -> tuple[int, int]:
        if self._range is None:
            self._range = port_range(self.root.home)
        return self._range

    def _count(self, checkout: str | None) -> int:
        if self._mine is None:
            path = user_file(self.root.home)
            self._mine = (count_in(_readable(path), path) if os.path.exists(path) else
                          None) or 0
        if self._mine:
            return self._mine
        project = project_file(checkout) if checkout else None
        if project is None or not os.path.exists(project):
            return leases.DEFAULT_COUNT
        return count_in(_readable(project), project) or leases.DEFAULT_COUNT


def ports_of(root: Root, bucket: str, name: str, recorded: tuple[int, ...] | None,
             checkout: str | None = None) -> Ports:
    """The ports of worktree `bucket/name` whose record names `recorded` (`PortFinder`)."""
    return PortFinder(root).of(bucket, name, recorded, checkout)


def ports_of_claim(claim: Claim, record: Record | None) -> Ports:
    return ports_of(claim.root, claim.bucket, claim.name,
                    None if record is None else record.ports, claim.checkout)


# -- leasing -----------------------------------------------------------------------------------
def lease_reserved(root: Root, claim: Claim, record: Record, count: int,
                   prefer: int | None = None) -> Record:
    """Lease a block for a worktree being made, whose reservation record is on disk; returns
    `record` with the block's ports, for the ready record to carry. A block of more than
    one port is also written into the record on disk before the lock is let go, so whoever
    leases next knows how far it reaches (an entry whose record names no ports counts as
    one). NoFreeBlock when no block is free: then nothing was leased."""
    with leases.leasing(root, claim.bucket, claim.name, count, prefer) as lease:
        if lease.size > 1:
            on_disk = read_record(claim.record_path, claim.name)
            if on_disk.ports != lease.ports:
                write_record(claim.record_path, on_disk.with_ports(lease.ports))
    return record.with_ports(lease.ports)


def lease_ready(root: Root, claim: Claim, record: Record,
                known: leases.Lease | None = None) -> Record:
    """Give a ready worktree that has no lease one (a worktree Vibe made, reused or seen by
    prune), of the count its record names, else the configured one; or write into its
    record the lease `known` it has. Under the registry lock, and only while no removal
    is under way and its record is there: a worktree `vwt rm` removes meanwhile is neither
    leased nor given its record back. The record as it is after."""
    from ..core.locks import REMOVING, live_holders, registry_lock

    with registry_lock(root):
        if REMOVING in live_holders(claim):
            return record
        try:
            record = read_record(claim.record_path, claim.name)
        except FileNotFoundError:
            return record
        ports = record.ports
        if known is not None:
            count, prefer = known.size, known.first
        elif ports:
            count, prefer = len(ports), ports[0]
        else:
            count, prefer = count_for_checkout(root.home, claim.checkout), None
        with leases.leasing(root, claim.bucket, claim.name, count, prefer) as lease:
            if ports != lease.ports:
                record = record.with_ports(lease.ports)
                write_record(claim.record_path, record)
    return record


def ensure_leased(claim: Claim, record: Record, warn: Callable[[str], None]) -> Record:
    """`record` with its lease written in: the one it has, else a new one (`lease_ready`).
    A table that cannot be read, or no free block, is a warning here: the worktree is there
    already, and keeps its hash port meanwhile."""
    table = table_of(claim.root)
    known = None if table is None else leases.lease_in(table, claim.bucket, claim.name,
                                                       record.ports)
    if known is not None and record.ports == known.ports:
        return record
    try:
        if table is None:
            raise leases.BadTable(f"{leases.table_path(claim.root)} is not a port lease "
                                  "table; vwt prune rebuilds it")
        return lease_ready(claim.root, claim, record, known)
    except (VwtError, OSError, CorruptRecord) as exc:
        warn(f"{claim.name} has no port lease ({getattr(exc, 'message', exc)}); vwt port "
             "gives its hash port meanwhile")
        return record


def release(claim: Claim) -> None:
    """The worktree is gone: its ports are free again."""
    leases.release(claim.root, claim.bucket, claim.name)


def release_all(root: Root, claims: Iterable[Claim]) -> None:
    leases.release_all(root, [(c.bucket, c.name) for c in claims])


# -- repair ------------------------------------------------------------------------------------
def repair(root: Root, dry_run: bool) -> list[dict[str, object]]:
    """prune: drop the leases of worktrees that are gone (rebuilding a table that cannot be
    read); what was (or would be) dropped."""
    try:
        done = leases.repair(root, dry_run)
    except OSError as exc:
        raise VwtError(f"cannot repair the port leases in {leases.table_path(root)}: "
                       f"{exc.strerror}") from None
    return [{"name": name, "bucket": bucket} for bucket, name in done.dropped]


def lease_unleased(root: Root, found: Iterable[Entry], warn: Callable[[str], None]) -> int:
    """prune: give each ready worktree of `found` that has no lease one (and write into its
    record a lease it has but does not name); how many were changed."""
    from .worktrees import READY

    table = table_of(root)
    if table is None:
        return 0
    changed = 0
    for entry in found:
        record = entry.record
        if entry.state != READY or record is None:
            continue
        known = leases.lease_in(table, entry.claim.bucket, entry.name, record.ports)
        if known is not None and known.ports == record.ports:
            continue
        try:
            lease_ready(root, entry.claim, record, known)
            changed += 1
        except (VwtError, OSError, CorruptRecord) as exc:
            warn(f"{entry.name} ({entry.claim.bucket}) was given no port lease: "
                 f"{getattr(exc, 'message', exc)}")
    return changed
