"""flock-ed lock files and holder files, the primitive Mistral Vibe uses as well.

A holder file is live while some process holds its lock; the kernel drops the
lock when the holder dies, so a crashed session leaves a stale file and never
a worktree that is blocked forever.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from collections.abc import Collection, Iterable
from contextlib import suppress

from .errors import HeldError, VwtError, disk_is_full
from .layout import Claim, Root, ensure_dir, first_planted, rmdir_if_empty, unlink_if_exists
from .names import path_segment_problem

STARTING = ".starting"
REMOVING = ".removing"
LOCK_TIMEOUT = 300.0
# `VWT_LOCK_TRACE=<file>`: append `<lock> <seconds waited> <seconds held>` per global lock
# taken, to measure hold times under load (the benchmarks and the load test use it).
_TRACE = os.environ.get("VWT_LOCK_TRACE")


def _open_lock_file(path: str, *, create: bool) -> int:
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_CREAT if create else 0)
    return os.open(path, flags, 0o600)


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise


try_flock = _try_flock  # for other lock files of ours (the pool's), same semantics


def _flock_waiting(fd: int, path: str, timeout: float, create_marker: bool = True) -> None:
    """Take the lock, waiting up to `timeout`. A waiter holds a shared flock on
    `<path>.waiting` meanwhile, so a holder that lets go between passes can tell
    (`someone_waiting`) whether a pause would let anybody in. `create_marker` False (a
    reader that must create nothing): announce only through a marker that exists."""
    if _try_flock(fd):
        return
    marker = _announce_waiting(path, create_marker)
    try:
        deadline = time.monotonic() + timeout
        pause = 0.002
        while not _try_flock(fd):
            if time.monotonic() > deadline:
                raise VwtError(f"timed out waiting for the lock {path}; is another vwt stuck?")
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
    finally:
        if marker is not None:
            os.close(marker)


def _announce_waiting(path: str, create: bool) -> int | None:
    try:
        if create:
            marker = _open_lock_file(f"{path}.waiting", create=True)
        else:  # a shared flock needs no write access
            marker = os.open(f"{path}.waiting", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None  # waiting unannounced only costs the holder's pause
    fcntl.flock(marker, fcntl.LOCK_SH)  # shared: never blocks while others wait too
    return marker


def someone_waiting(path: str) -> bool:
    """Whether some process is waiting for the lock `path` right now."""
    try:
        marker = _open_lock_file(f"{path}.waiting", create=False)
    except OSError:
        return False
    try:
        return not _try_flock(marker)
    finally:
        os.close(marker)


class locked:
    """Hold an exclusive flock on `path` (created if needed) for the block.

    `create=False` (a reader that must change nothing, such as doctor): a lock file
    that does not exist is not created and the block runs without it; nobody can be
    holding a lock that has no file.

    `reading=True` (a reader such as `list`): the lock file is created when it can be;
    when it cannot be written (a read-only home, a file another user owns) the lock is
    taken through a read-only descriptor, as flock needs no write access, so the reader
    still waits for a writer in the middle of a change. When even that cannot be opened,
    the block runs without the lock: a reader changes nothing, so the worst it can see is
    a holder set in the middle of a change, and no writer is ever made wrong by it.
    """

    def __init__(self, path: str, root: str, timeout: float = LOCK_TIMEOUT,
                 create: bool = True, reading: bool = False) -> None:
        self.path = path
        self.root = root
        self.timeout = timeout
        self.create = create
        self.reading = reading
        self._fd: int | None = None
        self._since = self._waited = 0.0

    def __enter__(self) -> None:
        fd, writable = self._open()
        if fd is None:
            return
        asked = time.monotonic()
        try:
            _flock_waiting(fd, self.path, self.timeout, create_marker=writable)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self._since = time.monotonic()
        self._waited = self._since - asked

    def _open(self) -> tuple[int | None, bool]:
        """The lock file's descriptor (None: run without the lock), and whether it was
        opened for writing."""
        if self.create:
            try:
                ensure_dir(os.path.dirname(self.path), self.root)
                return _open_lock_file(self.path, create=True), True
            except OSError as exc:
                if not self.reading or exc.errno not in _CANNOT_WRITE:
                    raise
        try:
            return os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), False
        except OSError:
            return None, False  # no such file (nobody can hold it), or not ours to open

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            if _TRACE:
                _trace(self.path, self._waited, time.monotonic() - self._since)


# why a reader may not be able to create or open a lock file for writing
_CANNOT_WRITE = frozenset({errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC,
                           errno.EDQUOT})


def _trace(path: str, waited: float, held: float) -> None:
    fd = os.open(_TRACE or "", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:  # one short write with O_APPEND: lines of parallel processes never interleave
        os.write(fd, f"{os.path.basename(path)} {waited:.6f} {held:.6f}\n".encode())
    finally:
        os.close(fd)


def prune_lock(root: Root, create: bool = True) -> locked:
    """Serialises create, attach and retention across processes."""
    return locked(root.prune_lock, root.path, create=create)


def registry_lock(root: Root, create: bool = True) -> locked:
    """Taken around every change or read of a holder set."""
    return locked(root.registry_lock, root.path, create=create)


def registry_read_lock(root: Root) -> locked:
    """The registry lock for a reader (`list`, `status`, the board): it works on a home
    this process cannot write, and changes nothing there (see `locked`)."""
    return locked(root.registry_lock, root.path, reading=True)


def landing_lock(claim: Claim) -> locked:
    """Serialises merges from one repository's worktrees, so a second merge reads the
    target after the first one landed instead of losing the race with target_moved."""
    return locked(claim.root.landing_lock(claim.bucket), claim.root.path)


def new_holder_id(prefix: str = "vwt") -> str:
    return f"{prefix}-{os.getpid()}-{os.urandom(4).hex()}"


HOLDER_ENV = "VWT_HOLDER_ID"  # set by `vwt run` for its command: the holder it runs under


def own_holders(given: Iterable[str] = ()) -> frozenset[str]:
    """The caller's own holder ids, which do not count as a live session: `given`, and the
    one `vwt run` set when this process runs under it."""
    return frozenset([*given, *filter(None, [os.environ.get(HOLDER_ENV)])])


def valid_holder_id(holder_id: str) -> bool:
    return path_segment_problem(holder_id) is None and not holder_id.endswith(".tmp")


def running_hooks(holders: list[str]) -> tuple[str, ...]:
    """Names of the hooks among live holder ids: a background hook holds as `hook-<name>-<pid>`."""
    names = set()
    for holder in holders:
        if holder.startswith("hook-"):
            name, _, pid = holder[5:].rpartition("-")
            if name and pid.isdigit():
                names.add(name)
    return tuple(sorted(names))


def holder_is_live(path: str) -> bool:
    """Some process holds this file's lock. An unreadable or odd entry counts as live."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # a symlink or a folder planted here: fail closed, never guess
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return True
        return not _try_flock(fd)
    finally:
        os.close(fd)


UNTRUSTED = "(holders is not a real directory)"  # counts as a live holder: fail closed


def _holders_planted(claim: Claim) -> bool:
    return first_planted((claim.folder, claim.holders_dir)) is not None


def holder_ids(claim: Claim) -> list[str]:
    if _holders_planted(claim):
        return [UNTRUSTED]
    try:
        return sorted(os.listdir(claim.holders_dir))
    except (FileNotFoundError, NotADirectoryError):
        return []


def live_holders(claim: Claim) -> list[str]:
    """Ids of the live holders (call under the registry lock for a consistent answer)."""
    return [
        h for h in holder_ids(claim)
        if h == UNTRUSTED or holder_is_live(os.path.join(claim.holders_dir, h))
    ]


def stale_holders(claim: Claim) -> list[str]:
    """Ids of the holder files no process holds: each one's holder died without letting go
    (call under the registry lock). A planted `holders` folder has none we trust."""
    if _holders_planted(claim):
        return []
    stale = []
    for holder in holder_ids(claim):
        path = os.path.join(claim.holders_dir, holder)
        if os.path.isfile(path) and not os.path.islink(path) and not holder_is_live(path):
            stale.append(holder)
    return stale


def remove_stale_holders(claim: Claim, spare: Collection[str] = ()) -> list[str]:
    """Delete unlocked holder files but those in `spare` (under the registry lock); return
    their ids."""
    removed = []
    for holder in stale_holders(claim):
        if holder in spare:
            continue
        try:
            os.unlink(os.path.join(claim.holders_dir, holder))
            removed.append(holder)
        except FileNotFoundError:
            pass
    return removed


class Holder:
    """A live hold on a claim: an open, flock-ed file under `holders/`."""

    def __init__(self, claim: Claim, holder_id: str, fd: int) -> None:
        self.claim = claim
        self.id = holder_id
        self._fd: int | None = fd

    @property
    def path(self) -> str:
        return os.path.join(self.claim.holders_dir, self.id)

    @property
    def active(self) -> bool:
        return self._fd is not None

    def fileno(self) -> int:
        """The locked descriptor: a child given it keeps the hold alive on its own."""
        if self._fd is None:
            raise VwtError(f"the hold on {self.claim.name} was released")
        return self._fd

    def release(self) -> None:
        """Delete the file, then drop the lock; both under the registry lock."""
        if self._fd is None:
            return
        with registry_lock(self.claim.root):
            unlink_if_exists(self.path)
            os.close(self._fd)
            self._fd = None
            if rmdir_if_empty(self.claim.holders_dir):
                rmdir_if_empty(self.claim.folder)  # the last hold of a removed worktree

    def hand_over(self, new_id: str) -> None:
        """Rename the holder file to `new_id` and close our descriptor without unlocking
        the file: a child that inherited the descriptor now holds it alone, until it ends."""
        if self._fd is None:
            return
        with registry_lock(self.claim.root):
            if valid_holder_id(new_id) and new_id != self.id:
                with suppress(FileNotFoundError):  # the child already ended and let go
                    os.rename(self.path, os.path.join(self.claim.holders_dir, new_id))
                self.id = new_id
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Holder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _create_holder_file(claim: Claim, holder_id: str) -> Holder:
    ensure_dir(claim.holders_dir, claim.root.path)
    path = os.path.join(claim.holders_dir, holder_id)
    if os.path.lexists(path) and holder_is_live(path):
        raise HeldError(f"holder {holder_id} of {claim.name} is already live")
    if os.path.lexists(path):
        os.unlink(path)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    if not _try_flock(fd):  # pragma: no cover - O_EXCL made it ours
        os.close(fd)
        raise HeldError(f"could not lock holder {holder_id} of {claim.name}")
    try:
        os.write(fd, f'{{"pid": {os.getpid()}, "tool": "vwt"}}\n'.encode())
    except OSError as exc:  # the words are for a person; the lock alone makes the holder
        if not disk_is_full(exc):  # live, and a full disk must not stop a removal freeing it
            os.close(fd)
            os.unlink(path)
            raise
    return Holder(claim, holder_id, fd)


def acquire_holder(
    claim: Claim, holder_id: str, *, exclusive: bool = False, ignore: frozenset[str] = frozenset()
) -> Holder:
    """Register a live holder under the registry lock.

    Refuses while a removal is in progress; with `exclusive` (a removal) it also
    refuses while any other live holder exists, except those in `ignore`.
    """
    if not valid_holder_id(holder_id):
        raise VwtError(f"invalid holder id {holder_id!r}")
    with registry_lock(claim.root):
        others = [h for h in live_holders(claim) if h != holder_id and h not in ignore]
        if REMOVING in others:
            raise HeldError(f"{claim.name} is being removed; try again when that finishes")
        if exclusive and others:
            raise HeldError(f"{claim.name} is held by a live session ({', '.join(others)})")
        return _create_holder_file(claim, holder_id)


def being_removed(claim: Claim) -> bool:
    """A live `.removing` holder: prune or rm is taking this worktree away right now."""
    with registry_lock(claim.root):
        return REMOVING in live_holders(claim)


def wait_for_holder_release(claim: Claim, holder_id: str, timeout: float) -> bool:
    """Block until `holder_id` is no longer live; False on timeout."""
    path = os.path.join(claim.holders_dir, holder_id)
    deadline = time.monotonic() + timeout
    while holder_is_live(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def let_go_inherited(claim: Claim, fd: int) -> None:
    """End a hold handed over to this process (`Holder.hand_over`): delete the holder file
    locked through `fd`, found by its identity whatever name it has by now, then unlock.

    A finished background hook thus leaves no stale holder file behind (SPEC §11)."""
    with registry_lock(claim.root):
        mine = os.fstat(fd)
        try:
            names = os.listdir(claim.holders_dir)
        except OSError:
            names = []
        for name in names:
            path = os.path.join(claim.holders_dir, name)
            try:
                found = os.lstat(path)
            except OSError:
                continue
            if (found.st_dev, found.st_ino) == (mine.st_dev, mine.st_ino):
                unlink_if_exists(path)
        os.close(fd)
        if rmdir_if_empty(claim.holders_dir):
            rmdir_if_empty(claim.folder)
