"""A checkout's index written without ever leaving git's lock behind a killed vwt.

git writes `index.lock`, then renames it over `index`; a git killed in between leaves the
lock, and every later git command in that checkout fails until someone deletes it. When
vwt moves a checkout that is not its own (the user's main checkout, under `vwt merge`),
git writes a private copy of the index instead, and the lock vwt takes on the real index
is a hard link to an empty anchor file whose name carries vwt's pid:

    index.vwt-<pid>-<hex>          the copy git writes (GIT_INDEX_FILE)
    index.vwt-<pid>-<hex>.anchor   empty; `index.lock` is another name of this file

so a lock left by a killed vwt is recognised exactly (same inode as an anchor of a dead
pid) and removed by the next `vwt merge`, `vwt sync` or `vwt prune`; a lock any other
git holds is never touched. `vwt sync` moves the worktree's own checkout the same way.
The copy keeps the index's mtime (racy git: a same-size rewrite in the same second would
otherwise look clean).

A snapshot stages into a throw-away index of its own, `vwt-snapshot-<pid>-<hex>.index`
beside the real one; a vwt killed meanwhile leaves it (and git's lock on it), which the
next prune removes once that pid is dead.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

from .files import copy_index, pid_alive
from .layout import unlink_if_exists

_OURS = re.compile(r"index\.vwt-(\d+)-[0-9a-f]{12}(\.anchor|\.lock)?")
_SNAPSHOT_INDEX = re.compile(r"vwt-snapshot-(\d+)-[0-9a-f]{12}\.index(\.lock)?")


def snapshot_index(folder: str) -> str:
    """A fresh name in `folder` for a snapshot's throw-away index, named for this process."""
    return os.path.join(folder, f"vwt-snapshot-{os.getpid()}-{os.urandom(6).hex()}.index")


class IndexBusy(Exception):
    """Another git holds the index's lock right now."""


def private_copy(index: str) -> str:
    """A copy of `index` beside it, named for this process (the mtime kept)."""
    copy = f"{index}.vwt-{os.getpid()}-{os.urandom(6).hex()}"
    copy_index(index, copy)  # no index yet: git starts from an empty one
    return copy


@contextmanager
def locked_index(index: str, note: str = "") -> Iterator[str]:
    """Hold git's lock on `index` and yield a private copy for git to write; on success
    the copy replaces the index (one rename) and the lock goes. IndexBusy when another git
    holds the lock. `note` (what is being done) is kept in the anchor for a repair."""
    copy = private_copy(index)
    anchor = f"{copy}.anchor"
    lock = f"{index}.lock"
    try:
        fd = os.open(anchor, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, note.encode())
        finally:
            os.close(fd)
        try:
            os.link(anchor, lock)  # atomic: fails while any git holds the lock
        except FileExistsError:
            raise IndexBusy(lock) from None
        try:
            yield copy
            os.replace(copy, index)
        finally:
            if _same_file(lock, anchor):
                unlink_if_exists(lock)
    finally:
        for leftover in (copy, f"{copy}.lock", anchor):
            unlink_if_exists(leftover)


def _same_file(a: str, b: str) -> bool:
    try:
        one, two = os.lstat(a), os.lstat(b)
    except OSError:
        return False
    return (one.st_dev, one.st_ino) == (two.st_dev, two.st_ino)


def release_dead_locks(git_dir: str) -> list[str]:
    """Remove what killed vwt processes left in `git_dir`: their private copies, anchors,
    an `index.lock` that is one of their anchors, and their snapshots' staging indexes.
    Returns the notes of the locks that went: work those processes left half done."""
    try:
        names = os.listdir(git_dir)
    except OSError:
        return []
    notes = []
    lock = os.path.join(git_dir, "index.lock")
    for name in sorted(names):
        if (dropped := _SNAPSHOT_INDEX.fullmatch(name)) and not pid_alive(int(dropped[1])):
            unlink_if_exists(os.path.join(git_dir, name))  # a killed snapshot's staging
            continue
        found = _OURS.fullmatch(name)
        if found is None or pid_alive(int(found.group(1))):
            continue
        path = os.path.join(git_dir, name)
        if found.group(2) == ".anchor" and _same_file(lock, path):
            with open(path, encoding="utf-8", errors="replace") as handle:
                notes.append(handle.read(200))
            unlink_if_exists(lock)
        unlink_if_exists(path)
    return notes


def release_dead_locks_of_repo(common_dir: str) -> list[tuple[str, str]]:
    """`release_dead_locks` in the repository's git dir and every worktree's admin folder:
    (git dir, note) of each lock that went."""
    git_dirs = [common_dir]
    try:
        git_dirs += [os.path.join(common_dir, "worktrees", admin)
                     for admin in os.listdir(os.path.join(common_dir, "worktrees"))]
    except OSError:
        pass
    return [(git_dir, note) for git_dir in git_dirs for note in release_dead_locks(git_dir)]


MOVE = "move"  # the note of `git.index.move_checkout`: "move <old> <new>"
