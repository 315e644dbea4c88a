"""`.worktreeinclude` files that changed in the main checkout since a pool entry was filled are
copied again when it is taken (SPEC §15), so a `.env` edited since then reaches the new
worktree as it would have reached one made the slow way.

The fill keeps a fingerprint of each file it copied (size, modification time, SHA-256 of the
content; a symlink's target) in the entry's marker. At the take, each file `.worktreeinclude`
selects now is compared with it: unchanged (same size and time, or else the same content) it
is left as the pool made it, hooks' changes included; changed, or new since the fill, it is
copied again over the entry's copy (atomically, keeping the main checkout's mode and times,
never through a symlink). A file the main checkout no longer has stays: it is not anyone's
work, but deleting in a worktree is not this step's business. A folder `.worktreeinclude`
selects whole (`node_modules/`) is not compared or copied again: it is what a hook usually
rebuilds, and copying it again would cost what the pool saves.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence

from ..core.errors import VwtError, disk_is_full
from ..core.files import replace_in_folder
from .include import included_files, patterns_for
from .relocate import folder_of

try:  # the builtin module avoids loading OpenSSL, which `hashlib` does
    from _sha256 import sha256  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import sha256

Warn = Callable[[str], None]
Fingerprint = list[object]  # [size, mtime_ns, sha256 hex] or ["link", target]
CHUNK = 1 << 20


def _quiet(_message: str) -> None:
    pass


def selected_files(repo_root: str, home: str) -> list[str]:
    """The files `.worktreeinclude` (and the home's `worktree_include`) select one by one in
    the main checkout; folders selected whole are left out."""
    patterns = patterns_for(repo_root, home)
    if not patterns:
        return []
    return [p for p in included_files(repo_root, patterns) if not p.endswith("/")]


def fingerprints(checkout: str, paths: Sequence[str]) -> dict[str, Fingerprint]:
    """The fingerprint of each of `paths` in `checkout` (copies keep the source's times, so
    right after the copy, before any hook ran, this is the main checkout's file as copied)."""
    found = {}
    for rel in paths:
        mark = fingerprint(checkout, rel)
        if mark is not None:
            found[rel] = mark
    return found


def fingerprint(checkout: str, rel: str) -> Fingerprint | None:
    """[size, mtime_ns, sha256] of a regular file, ["link", target] of a symlink; None for
    anything else or nothing."""
    try:
        with folder_of(checkout, rel) as (fd, name):
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                return ["link", os.readlink(name, dir_fd=fd)]
            if not stat.S_ISREG(info.st_mode):
                return None
            return [info.st_size, info.st_mtime_ns, _digest(fd, name)]
    except OSError:
        return None


def _digest(fd: int, name: str) -> str:
    file = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
    try:
        digest = sha256()
        while chunk := os.read(file, CHUNK):
            digest.update(chunk)
        return str(digest.hexdigest())
    finally:
        os.close(file)


def unchanged(repo_root: str, rel: str, recorded: object) -> bool:
    """The main checkout's `rel` is still what `recorded` fingerprints: the same size and
    modification time, or else the same content."""
    if not isinstance(recorded, list) or len(recorded) < 2:
        return False
    try:
        with folder_of(repo_root, rel) as (fd, name):
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if recorded[0] == "link":
                return stat.S_ISLNK(info.st_mode) and os.readlink(name, dir_fd=fd) == recorded[1]
            if not stat.S_ISREG(info.st_mode) or info.st_size != recorded[0]:
                return False
            if info.st_mtime_ns == recorded[1]:
                return True
            return len(recorded) > 2 and _digest(fd, name) == recorded[2]
    except OSError:
        return False


def copy_again(repo_root: str, checkout: str, home: str,
               recorded: dict[str, object] | None, warn: Warn = _quiet) -> list[str]:
    """At a take: copy into `checkout` each selected file of the main checkout that changed
    since the fill, or that is new since; the relative paths copied. `recorded`: the fill's
    fingerprints, None for an entry an older `vwt` made (then a file is copied when it
    differs from the entry's copy). A file that cannot be copied is a warning; only a full
    disk fails (OSError)."""
    try:
        selected = selected_files(repo_root, home)
    except VwtError as exc:
        warn(f"files of .worktreeinclude not compared again: {exc.message}")
        return []
    copied = []
    for rel in selected:
        before = fingerprint(checkout, rel) if recorded is None else recorded.get(rel)
        if unchanged(repo_root, rel, before):
            continue
        try:
            copy_over(repo_root, checkout, rel)
        except OSError as exc:
            if disk_is_full(exc):
                raise  # the take is undone: `new` fails as on any full disk
            warn(f"{rel} changed in {repo_root} since the pool entry was made, and could not "
                 f"be copied again ({exc.strerror or exc}); the worktree has the older copy")
            continue
        copied.append(rel)
    return copied


def copy_over(source: str, dest: str, rel: str) -> None:
    """Put `source`'s `rel` (a file or a symlink) at `dest`'s `rel`, replacing what is there,
    with the source's mode and times; no symlink followed on either side."""
    with folder_of(source, rel) as (sfd, name):
        info = os.stat(name, dir_fd=sfd, follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            target = os.readlink(name, dir_fd=sfd)
            with folder_of(dest, rel, create=True) as (dfd, dname):
                replace_in_folder(dfd, dname, lambda temp: os.symlink(target, temp, dir_fd=dfd))
            return
        if not stat.S_ISREG(info.st_mode):
            raise OSError(0, "not a regular file")
        src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=sfd)
        try:
            with folder_of(dest, rel, create=True) as (dfd, dname):
                replace_in_folder(dfd, dname, lambda temp: _copy_into(src, dfd, temp, info))
        finally:
            os.close(src)


def _copy_into(src: int, fd: int, temp: str, info: os.stat_result) -> None:
    out = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                  0o600, dir_fd=fd)
    try:
        while chunk := os.read(src, CHUNK):
            view = memoryview(chunk)
            while view:
                view = view[os.write(out, view):]
        os.fchmod(out, stat.S_IMODE(info.st_mode))
        os.utime(out, ns=(info.st_atime_ns, info.st_mtime_ns))
    finally:
        os.close(out)
