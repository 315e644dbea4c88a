"""Ref locks a killed git of vwt's left behind.

To move a branch, git creates `refs/heads/<branch>.lock` (and, when it goes through a
worktree's HEAD, that worktree's `HEAD.lock`; `reset` also `ORIG_HEAD.lock`), writes the
new value into it and renames it over the ref. A git killed in between leaves the lock,
and every later update of that branch fails naming it. vwt removes such a lock only when
the vwt process that ran that git is known to be dead (its reservation's `.starting` hold
is gone, or the anchor of its checkout move names a dead pid) and the lock holds nothing
or exactly a value that git was writing: a lock with anything else in it is someone
else's, and stays.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

from .layout import unlink_if_exists

_MAX = 4096  # a ref lock holds one line: an object name or `ref: <name>`


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
