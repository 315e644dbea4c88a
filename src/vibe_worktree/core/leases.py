"""Port leases: each managed worktree's block of consecutive TCP ports, unique across the home.

The table `<root>/.claims/.ports.json` maps `"<bucket>/<name>"` to the first port of the
worktree's block; every change to it is made while holding the flock on `<root>/.claims/.ports`
and written atomically. How many ports a block has (the `count` it was made with) is the
length of the `ports` list in the worktree's record, which the creator writes while it still
holds the lock, so whoever takes the lock next sees both. A table entry whose record says
nothing of its ports (a creator killed between the two writes) counts as one port.

Both files sit directly in `.claims` and are plain files: Mistral Vibe takes only the folders
there for buckets, and so do we (`Root.buckets`).

A new block starts at the worktree's hash port (`ports.port_for`, the number `vwt port` gave
before leases existed) when that block is free, else at the next free start, wrapping around
inside `port_range`. Free: no other lease overlaps it, and nothing listens on any of its ports.
"""

from __future__ import annotations

import json
import os
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator

from .config import port_range
from .errors import VwtError, disk_is_full
from .files import write_atomically
from .layout import Root
from .light import NamedTuple
from .names import path_segment_problem
from .ports import port_for
from .records import MAX_PORTS, port_block

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .locks import locked

TABLE = ".ports.json"
LOCK = ".ports"
DEFAULT_COUNT = 1
MAX_COUNT = MAX_PORTS


class Lease(NamedTuple):
    """The block of `size` ports from `first` that a worktree holds (`size`: the count it
    was made with)."""

    first: int
    size: int

    @property
    def ports(self) -> tuple[int, ...]:
        return tuple(range(self.first, self.first + self.size))

    @property
    def last(self) -> int:
        return self.first + self.size - 1


class BadTable(VwtError):
    """The table cannot be trusted: no lease is made or dropped on its strength."""


class NoFreeBlock(VwtError):
    """Every block of the range is leased or in use: the command makes nothing."""


def key_of(bucket: str, name: str) -> str:
    return f"{bucket}/{name}"


def split_key(key: str) -> tuple[str, str] | None:
    """(bucket, name) of a table key, None when it is not one."""
    bucket, slash, name = key.partition("/")
    if not slash or path_segment_problem(bucket) or path_segment_problem(name):
        return None
    return bucket, name


def table_path(root: Root) -> str:
    return f"{root.claims}/{TABLE}"


def lock_path(root: Root) -> str:
    return f"{root.claims}/{LOCK}"


def _locked(root: Root, create: bool = True) -> locked:
    """The table's lock (imported here: a reader of the table, `vwt env`, takes none)."""
    from .locks import locked

    return locked(lock_path(root), root.path, create=create)


def check_count(value: object, where: str) -> int:
    """`[ports] count` as a number of ports; an error naming `where` when it is not one."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_COUNT:
        raise VwtError(f"{where}: [ports] count must be a whole number from 1 to {MAX_COUNT}, "
                       f"not {value!r}")
    return value


def ports_of_record(data: dict[str, object]) -> tuple[int, ...] | None:
    """The `ports` list of a record (or recovery record) when it is a whole block, else None."""
    return port_block(data.get("ports"))


# -- reading -----------------------------------------------------------------------------------
def read_table(root: Root) -> dict[str, int]:
    """The table ({} when there is none); BadTable when it is not one."""
    path = table_path(root)
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise BadTable(f"{path} cannot be read ({exc.strerror})") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        data = None
    # a light check of every entry (`vwt env` reads a thousand); the names are checked
    # where an entry is acted upon (`split_key`)
    if not isinstance(data, dict) or not all(
        "/" in k and type(v) is int and 1 <= v <= 65535 for k, v in data.items()
    ):
        raise BadTable(f"{path} is not a port lease table; vwt prune rebuilds it from the "
                       "records")
    return data


def recorded_ports(root: Root, bucket: str, name: str) -> tuple[int, ...] | None:
    """The `ports` the worktree's record carries (None: no record, or none there)."""
    try:
        with open(f"{root.claims}/{bucket}/{name}/record.json", "rb") as handle:
            data = json.loads(handle.read().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return ports_of_record(data) if isinstance(data, dict) else None


def lease_in(table: dict[str, int], bucket: str, name: str,
             ports: tuple[int, ...] | None) -> Lease | None:
    """The worktree's lease from a table read, given the `ports` of its record."""
    first = table.get(key_of(bucket, name))
    if first is None:
        return None
    if ports is not None and ports[0] == first:
        return Lease(first, len(ports))
    return Lease(first, DEFAULT_COUNT)


def current(root: Root, bucket: str, name: str, ports: tuple[int, ...] | None) -> Lease | None:
    """The worktree's lease, None when it has none. Reads only: works on a home that cannot
    be written. `ports`: its record's, when the caller has read the record."""
    return lease_in(read_table(root), bucket, name, ports)


def hash_start(bucket: str, name: str, count: int, low: int, high: int) -> int:
    """Where the block a new lease tries first starts: at the worktree's hash port, moved
    down so that the block fits inside the range."""
    return max(min(port_for(bucket, name, low, high), high - count + 1), low)


def hash_block(bucket: str, name: str, count: int, low: int, high: int) -> Lease:
    """The block a new lease tries first. A worktree without a lease (made by Vibe, say) is
    given it too, until it has one."""
    return Lease(hash_start(bucket, name, count, low, high), count)


# -- what listens ------------------------------------------------------------------------------
_PROC_TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
_LISTEN = "0A"


def listening_ports() -> frozenset[int] | None:
    """The TCP ports something listens on, on any local address (127.0.0.1, ::1 and
    0.0.0.0 among them), from the kernel's socket tables; None where there are none to
    read (not Linux): then `bind_probe` asks port by port."""
    found: set[int] = set()
    read_any = False
    for path in _PROC_TABLES:
        try:
            with open(path, "rb") as handle:
                lines = handle.read().splitlines()[1:]
        except OSError:
            continue
        read_any = True
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] == b"0A":
                found.add(int(fields[1].rpartition(b":")[2], 16))
    return frozenset(found) if read_any else None


_PROBES = (("AF_INET", "127.0.0.1"), ("AF_INET", "0.0.0.0"), ("AF_INET6", "::1"))


def bind_probe(port: int) -> bool:
    """Whether something uses `port`: a bind on 127.0.0.1, 0.0.0.0 or ::1 fails for it
    (without SO_REUSEADDR, so a listener on any of them is seen from the others too). An
    address this machine does not have (no IPv6) proves nothing and is skipped."""
    import errno
    import socket

    for family_name, address in _PROBES:
        try:
            probe = socket.socket(getattr(socket, family_name), socket.SOCK_STREAM)
        except OSError:
            continue
        try:
            probe.bind((address, port))
        except OSError as exc:
            if exc.errno not in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
                return True  # EADDRINUSE, or EACCES (a port we may not use either)
        finally:
            probe.close()
    return False


InUse = Callable[[int, int], int | None]  # (first, last) -> the highest port in use there


def in_use_checker() -> InUse:
    """What says which ports of a block are in use: the kernel's table, read once (Linux),
    else a bind per port."""
    listening = listening_ports()
    return listed_checker(listening) if listening is not None else probing_checker()


def listed_checker(listening: frozenset[int]) -> InUse:
    ordered = sorted(listening)

    def highest_listed(first: int, last: int) -> int | None:
        i = bisect_left(ordered, last + 1)
        return ordered[i - 1] if i and ordered[i - 1] >= first else None
    return highest_listed


def probing_checker(probe: Callable[[int], bool] = bind_probe) -> InUse:
    seen: dict[int, bool] = {}

    def highest_bound(first: int, last: int) -> int | None:
        for port in range(last, first - 1, -1):
            if port not in seen:
                seen[port] = probe(port)
            if seen[port]:
                return port
        return None
    return highest_bound


# -- finding a block ---------------------------------------------------------------------------
class _Others:
    """Every other lease, by first port; their sizes read from their records when needed."""

    def __init__(self, root: Root, table: dict[str, int], own: str) -> None:
        self.root = root
        self.by_first = sorted((first, key) for key, first in table.items() if key != own)
        self.firsts = [first for first, _key in self.by_first]
        self._counts: dict[str, int] = {}

    def count(self, key: str, first: int) -> int:
        found = self._counts.get(key)
        if found is None:
            where = split_key(key)
            ports = recorded_ports(self.root, *where) if where else None
            found = len(ports) if ports and ports[0] == first else DEFAULT_COUNT
            self._counts[key] = found
        return found

    def past_overlaps(self, first: int, last: int) -> int | None:
        """The port after the furthest-reaching lease that overlaps [first, last], or None
        when none does. No block starting at or before that port can be free."""
        beyond = None
        i = bisect_left(self.firsts, first - MAX_COUNT + 1)
        while i < len(self.by_first) and self.by_first[i][0] <= last:
            start, key = self.by_first[i]
            end = start + self.count(key, start) - 1
            if end >= first:
                beyond = max(beyond or 0, end + 1)
            i += 1
        return beyond


def _blocked_until(others: _Others, in_use: InUse, first: int, count: int) -> int | None:
    """None when [first, first+count) is free, else the lowest start that might be."""
    last = first + count - 1
    after = others.past_overlaps(first, last)
    busy = in_use(first, last)
    if busy is not None:
        after = max(after or 0, busy + 1)
    return after


def find_block(others: _Others, in_use: InUse, count: int, low: int, high: int,
               start: int) -> int | None:
    """The first free block from `start` up to the end of the range, then from `low`."""
    last_start = high - count + 1
    if last_start < low:
        return None
    start = min(max(start, low), last_start)
    for lo, hi in ((start, last_start), (low, start - 1)):
        candidate = lo
        while candidate <= hi:
            after = _blocked_until(others, in_use, candidate, count)
            if after is None:
                return candidate
            candidate = after
    return None


# -- changing the table ------------------------------------------------------------------------
def _write_table(root: Root, table: dict[str, int]) -> None:
    """Replaced whole (a temporary file renamed over it), never seen half written. Not
    fsync-ed, unlike the records: they carry each lease's ports, so a table a power cut
    took back to an older state is mended from them (prune gives a worktree whose lease
    is missing its recorded block again, or a new one), and a lease costs `new` no flush."""
    payload = json.dumps(dict(sorted(table.items())), indent=2, ensure_ascii=False) + "\n"
    write_atomically(table_path(root), payload.encode("utf-8"), durable=False)


def _no_block(root: Root, count: int, low: int, high: int) -> NoFreeBlock:
    return NoFreeBlock(
        f"no free block of {count} port(s) in port_range [{low}, {high}] of "
        f"{root.config_file}: every one is leased to another worktree or in use; widen "
        "port_range there, or free leases (vwt rm, vwt prune)")


class leasing:
    """Lease a block for the worktree `bucket/name`, as the context of writing its record:

        with leasing(root, bucket, name, count) as lease:
            write_record(..., ports=list(lease.ports))

    The lock stays held for the block, so the record's `ports` are on disk before anyone
    else looks for a block. When the block raises, a lease made here is taken back.

    A worktree that has a lease keeps it (and the count it was made with: its record's).
    Otherwise `prefer` (a restored worktree's old first port) is taken when its block is
    free, else the first free block from the hash port. NoFreeBlock when there is none.
    `in_use` says which ports something listens on (tests pass their own)."""

    def __init__(self, root: Root, bucket: str, name: str, count: int,
                 prefer: int | None = None, in_use: InUse | None = None) -> None:
        self.root = root
        self.bucket = bucket
        self.name = name
        self.count = count
        self.prefer = prefer
        self.in_use = in_use
        self.made = False
        self._lock: locked | None = None

    def __enter__(self) -> Lease:
        if self.in_use is None:  # read before the lock: others wait less for it
            self.in_use = in_use_checker()
        self._lock = _locked(self.root)
        self._lock.__enter__()
        try:
            lease, self.made = self._find(read_table(self.root))
        except BaseException:
            self._lock.__exit__(None, None, None)
            raise
        return lease

    def _find(self, table: dict[str, int]) -> tuple[Lease, bool]:
        key = key_of(self.bucket, self.name)
        first = table.get(key)
        if first is not None:
            ports = recorded_ports(self.root, self.bucket, self.name)
            if ports is not None and ports[0] == first:
                return Lease(first, len(ports)), False  # leased already: kept as it is
        low, high = port_range(self.root.home)
        others = _Others(self.root, table, key)
        taken = self._pick(others, first, low, high)
        table[key] = taken
        _write_table(self.root, table)
        return Lease(taken, self.count), True

    def _pick(self, others: _Others, half_made: int | None, low: int, high: int) -> int:
        count = self.count
        # a block this worktree's killed creator leased: nothing of anyone else listens there
        # that it could know of, so only the other leases are asked
        if half_made is not None and low <= half_made <= high - count + 1 \
                and others.past_overlaps(half_made, half_made + count - 1) is None:
            return half_made
        in_use = self.in_use or in_use_checker()
        if self.prefer is not None and low <= self.prefer <= high - count + 1 \
                and _blocked_until(others, in_use, self.prefer, count) is None:
            return self.prefer
        start = hash_block(self.bucket, self.name, count, low, high).first \
            if high - count + 1 >= low else low
        found = find_block(others, in_use, count, low, high, start)
        if found is None:
            raise _no_block(self.root, count, low, high)
        return found

    def __exit__(self, failed: object, *_details: object) -> None:
        assert self._lock is not None
        try:
            if failed is not None and self.made:
                table = read_table(self.root)
                if table.pop(key_of(self.bucket, self.name), None) is not None:
                    _write_table(self.root, table)
        finally:
            self._lock.__exit__(None, None, None)


def release(root: Root, bucket: str, name: str) -> bool:
    """Drop the worktree's lease (its removal is done): True when there was one."""
    return bool(release_all(root, [(bucket, name)]))


def release_all(root: Root, worktrees: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Drop the leases of these (bucket, name) worktrees, gone now, in one change of the
    table; those that had one. Never fails a removal: a table that cannot be read or written
    (a full disk) keeps the entries, and `vwt prune` drops them later, their worktrees gone."""
    wanted = list(worktrees)
    if not wanted or not os.path.exists(table_path(root)):
        return []
    try:
        with _locked(root):
            table = read_table(root)
            dropped = [w for w in wanted if table.pop(key_of(*w), None) is not None]
            if dropped:
                _write_table(root, table)
            return dropped
    except BadTable:
        return []
    except OSError as exc:
        if disk_is_full(exc) or isinstance(exc, PermissionError):
            return []
        raise


def move(root: Root, bucket: str, name: str, new_bucket: str) -> bool:
    """The worktree's lease follows its claim into another bucket (a moved repository)."""
    if not os.path.exists(table_path(root)):
        return False
    with _locked(root):
        table = read_table(root)
        first = table.pop(key_of(bucket, name), None)
        if first is None:
            return False
        table[key_of(new_bucket, name)] = first
        _write_table(root, table)
    return True


# -- repair ------------------------------------------------------------------------------------
class Repaired(NamedTuple):
    """What `repair` did (or would do): leases dropped, and whether the table was rebuilt."""

    dropped: tuple[tuple[str, str], ...]
    rebuilt: bool


def _record_exists(root: Root, bucket: str, name: str) -> bool:
    return os.path.lexists(f"{root.claims}/{bucket}/{name}/record.json")


def repair(root: Root, dry_run: bool = False) -> Repaired:
    """Drop every lease whose worktree is gone (no record.json: removed, or a reservation
    discarded); an unreadable table is rebuilt from the `ports` the records carry. A record
    that cannot be parsed still keeps its lease: nothing is dropped on the strength of it."""
    if not os.path.lexists(table_path(root)):
        return Repaired((), False)
    with _locked(root, create=not dry_run):
        rebuilt = False
        try:
            table = read_table(root)
        except BadTable:
            table, rebuilt = rebuild_from_records(root), True
        dropped = []
        for key in sorted(table):
            where = split_key(key)
            if where is not None and not _record_exists(root, *where):
                dropped.append(where)
                del table[key]
        if (dropped or rebuilt) and not dry_run:
            _write_table(root, table)
    return Repaired(tuple(dropped), rebuilt)


def _claimed_ports(root: Root) -> Iterator[tuple[str, tuple[int, ...]]]:
    for bucket in root.buckets():
        for claim in root.claims_in(bucket):
            ports = recorded_ports(root, bucket, claim.name)
            if ports is not None:
                yield key_of(bucket, claim.name), ports


def rebuild_from_records(root: Root) -> dict[str, int]:
    """A table from the records' `ports`, in bucket and name order; a block that overlaps
    one already taken is left out (its worktree is then without a lease until prune gives it
    one)."""
    table: dict[str, int] = {}
    taken: set[int] = set()
    for key, ports in _claimed_ports(root):
        if taken.isdisjoint(ports):
            table[key] = ports[0]
            taken.update(ports)
    return table
