"""Ref locks a killed git of vwt's left behind.

To move a branch, git creates `refs/heads/<branch>.lock` (and, when it goes through a
worktree's HEAD, that worktree's `HEAD.lock`; `reset` also `ORIG_HEAD.lock`), writes the
new value into it and renames it over the ref. A git killed in between leaves the lock,
and every later update of that branch fails naming it. vwt removes such a lock only when
the vwt process that ran that git is known to be dead (its reservation's `.starting` hold
is gone, or the anchor of its checkout move names a dead pid; for a snapshot ref, no live
holder of its worktree, every vwt writing it holding one) and the lock holds nothing
or exactly a value that git was writing: a lock with anything else in it is someone
else's, and stays.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from .files import pid_alive, write_atomically
from .layout import unlink_if_exists

_MAX = 4096  # a ref lock holds one line: an object name or `ref: <name>`
# A git updating a ref holds its lock for the moment between writing the new value and
# renaming it into place (housekeeping runs no reference-transaction hook that could wait
# in between): a snapshot ref's lock this old belongs to no git that is still running.
SNAPSHOT_LOCK_AGE = 10.0


def branch_lock(common_dir: str, branch: str) -> str | None:
    """The path of the lock git takes to move `branch` (None for a name that is not a
    plain path below `refs/heads`)."""
    parts = branch.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    return os.path.join(common_dir, "refs", "heads", *parts) + ".lock"


def release_dead_ref_locks(common_dir: str, git_dir: str | None, branch: str,
                           commits: Iterable[str | None]) -> list[str]:
    """Remove `refs/heads/<branch>.lock`, and `HEAD.lock`/`ORIG_HEAD.lock` in `git_dir`
    (a worktree's admin folder, or the repository's own), when each holds nothing, one of
    `commits` or `ref: refs/heads/<branch>`: what a git vwt ran to move that branch to or
    from those commits writes there. Only for a git whose vwt is known to be dead. Returns
    the paths removed."""
    allowed = {"", f"ref: refs/heads/{branch}", *(c for c in commits if c)}
    paths = [branch_lock(common_dir, branch)]
    if git_dir:
        paths += [os.path.join(git_dir, "HEAD.lock"), os.path.join(git_dir, "ORIG_HEAD.lock")]
    removed = []
    for path in paths:
        if path is not None and _holds_one_of(path, allowed):
            unlink_if_exists(path)
            removed.append(path)
    return removed


def _holds_one_of(path: str, allowed: set[str]) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a fifo or device planted there
            return False
        text = os.read(fd, _MAX).decode("utf-8", "replace")
    finally:
        os.close(fd)
    return text.strip() in allowed


def release_dead_creation_lock(common_dir: str, branch: str, tip: str | None,
                               since: float) -> str | None:
    """The lock a dead creation's `git worktree add -b` left on the branch it was making
    (its `git branch`, or the checkout's reset of HEAD): removed when the branch does not
    exist yet (`tip` None) and the lock, taken after the creation began (`since`, epoch
    seconds), holds nothing or an object name; or when the branch exists and the lock
    holds nothing or its tip (an update that changes nothing). Only for a creation whose
    vwt is known to be dead and which made (or was making) that branch. Returns the path
    removed, or None."""
    path = branch_lock(common_dir, branch)
    if path is None:
        return None
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    if tip is not None:
        allowed = {"", tip}
    elif info.st_mtime >= since:
        allowed = {"", _content(path)} if _is_object_name(_content(path)) else {""}
    else:
        return None
    if not _holds_one_of(path, allowed):
        return None
    unlink_if_exists(path)
    return path


def snapshot_lock(common_dir: str, name: str) -> str:
    """The lock git takes to write or delete `refs/vibe/reaped/<name>` (a valid name is
    one path segment)."""
    return os.path.join(common_dir, "refs", "vibe", "reaped", f"{name}.lock")


def release_dead_snapshot_lock(common_dir: str, name: str, writer_died: bool) -> str | None:
    """The lock of `refs/vibe/reaped/<name>` a killed snapshot left (`rm -y`, prune,
    merge or `vwt snapshot` killed inside its `git update-ref`): every later snapshot of
    that worktree fails on it. Call only when no live holder of the claim exists: every
    vwt that writes that ref holds the claim meanwhile, so none is writing it now. Removed
    when it holds nothing or an object name (all `update-ref` writes there) and either
    `writer_died` (the claim has a holder file whose process died holding it) or it is
    older than SNAPSHOT_LOCK_AGE (no git of anyone's is still between its two steps).
    Returns the path removed, or None."""
    path = snapshot_lock(common_dir, name)
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    if not writer_died and time.time() - info.st_mtime < SNAPSHOT_LOCK_AGE:
        return None
    content = _content(path)
    if content and not _is_object_name(content):
        return None
    if not _holds_one_of(path, {"", content}):
        return None
    unlink_if_exists(path)
    return path


def _content(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(_MAX).strip()
    except OSError:
        return ""


def _is_object_name(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


# -- deleting refs ------------------------------------------------------------------------------
# git deletes a ref under two locks, the ref's own (`<ref>.lock`) and `packed-refs.lock` (the
# ref might be packed too). Killed in between, it leaves them, and every later deletion of a
# ref in the repository then fails on `packed-refs.lock`. So before vwt runs such a git, it
# notes in the common git dir which refs it deletes, under its pid; the next prune removes
# the locks a note of a dead vwt names when they hold nothing, which is what git leaves there
# while it deletes a ref that is not packed. A lock with anything in it stays.
DELETING = "vwt-deleting-"


@contextmanager
def deleting_refs(common_dir: str, refs: Sequence[str]) -> Iterator[None]:
    """Note, for as long as the block runs, that this process deletes `refs`."""
    note: str | None = f"{common_dir}/{DELETING}{os.getpid()}-{os.urandom(6).hex()}"
    try:
        write_atomically(note or "", "".join(f"{ref}\n" for ref in refs).encode(),
                         durable=False)
    except OSError:  # a repository this process cannot write: its git fails all the same
        note = None
    try:
        yield
    finally:
        if note:
            unlink_if_exists(note)


def release_dead_deletion_locks(common_dir: str) -> list[str]:
    """Remove the empty ref locks and `packed-refs.lock` a dead vwt's git left while
    deleting refs (see `deleting_refs`), then its note. Returns the locks removed."""
    try:
        names = [n for n in os.listdir(common_dir) if n.startswith(DELETING)]
    except OSError:
        return []
    removed = []
    for name in names:
        pid = name[len(DELETING):].split("-", 1)[0]
        if not pid.isdigit() or pid_alive(int(pid)):
            continue
        note = os.path.join(common_dir, name)
        refs = _content_lines(note)
        locks = [f"{os.path.join(common_dir, *ref.split('/'))}.lock" for ref in refs
                 if ref.startswith("refs/") and all(p not in ("", ".", "..")
                                                   for p in ref.split("/"))]
        for lock in [*locks, os.path.join(common_dir, "packed-refs.lock")]:
            if _holds_one_of(lock, {""}):
                unlink_if_exists(lock)
                removed.append(lock)
        unlink_if_exists(note)
    return removed


def _content_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return [line.strip() for line in handle.read(1 << 16).splitlines() if line.strip()]
    except OSError:
        return []
