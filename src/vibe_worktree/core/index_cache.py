"""A refreshed private copy of each worktree's index, kept in the home for `vwt conflicts`.

`vwt conflicts` reads every worktree's work through a private copy of its index: it never
writes the worktree's own index (SPEC §13). git trusts an index entry by its stat data only
when the file is older than the index itself; a checkout whose files were edited and
committed in the second it was made ("racily clean" entries, as an agent's first minute
makes them) has every entry re-read and hashed by every `git status`, and since nothing ever
writes the worktree's own index back, every forecast would hash those files again.

So the copy git refreshed is kept here, `<home>/worktree-index-cache/<bucket>/<name>.index`,
and the next forecast starts from it instead of from the worktree's index:

- It stands for one exact state of the worktree's own index: it is used only while that
  index is byte for byte the one it was made from (a digest of the index and of the
  worktree's admin folder is its key). Whatever the worktree's git writes there (a commit,
  `git add`, a checkout, its own refresh) makes it stale, and it is then ignored.
- It is the same kind of file as the worktree's own index after `git status` has refreshed
  it, and git judges it the same way: it keeps the mtime git gave it (restored on every
  copy), so a file changed after it was written, even with the same size in the same
  second, has a newer mtime than its entry, or one not older than the copy, and git reads
  that file again. A copy written in the second its files were written still holds racily
  clean entries; the next forecast in a later second re-reads them, git rewrites the copy,
  and from then on its entries are trusted by their stat data, as git's own index would be.
- A cache file that is not whole (its digest does not match), from another version, or
  unreadable is ignored. Writing one is best effort: a read-only or full home only costs the
  speed. Files are written whole (temporary file and rename), never through a link.
"""

from __future__ import annotations

import os
import stat

from .light import NamedTuple

try:  # the builtin module avoids loading OpenSSL, which `hashlib` does
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import blake2b

FOLDER = "worktree-index-cache"
SUFFIX = ".index"
_MAGIC = b"vwt-index-cache 1\n"


def _digest(*parts: bytes) -> str:
    hashed = blake2b(digest_size=20)
    for part in parts:
        hashed.update(part)
    return str(hashed.hexdigest())


def cache_path(home: str, bucket: str, name: str) -> str:
    return f"{home}/{FOLDER}/{bucket}/{name}{SUFFIX}"


class PrivateIndex(NamedTuple):
    """The index copy git reads and refreshes, and what it was made from."""

    path: str
    key: str | None  # digest of the worktree's own index; None when it has none
    from_cache: bool
    written: tuple[int, int, int]  # (inode, size, mtime ns) as written here: did git rewrite it?


def private_copy(own: str, cached: str, dest: str) -> PrivateIndex:
    """Write the index git should start from at `dest` (a new file): the cached refreshed
    copy of `own` when it was made from an index byte for byte like `own` is now, else a
    copy of `own`; either way with the mtime git gave it. No `own` index: an empty start."""
    try:
        with open(own, "rb") as handle:
            content = handle.read()
            mtime = os.fstat(handle.fileno()).st_mtime_ns
    except FileNotFoundError:
        return PrivateIndex(dest, None, False, (0, 0, 0))  # git starts from an empty index
    key = _digest(os.path.dirname(own).encode("utf-8", "surrogateescape"), b"\0", content)
    found = _read_cache(cached, key)
    if found is not None:
        content, mtime = found
    _write_new(dest, content, mtime)
    done = os.stat(dest)
    return PrivateIndex(dest, key, found is not None,
                        (done.st_ino, done.st_size, done.st_mtime_ns))


def _write_new(path: str, content: bytes, mtime_ns: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    os.utime(path, ns=(mtime_ns, mtime_ns), follow_symlinks=False)


def _read_cache(path: str, key: str) -> tuple[bytes, int] | None:
    """(index, mtime ns) of the cache file at `path` when it is whole and made for `key`."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    header_end = raw.find(b"\n", len(_MAGIC))
    if not raw.startswith(_MAGIC) or header_end < 0:
        return None
    fields = raw[len(_MAGIC):header_end].split(b" ")
    body = raw[header_end + 1:]
    if len(fields) != 3 or fields[0] != key.encode() or not fields[1].isdigit():
        return None
    if fields[2] != _digest(body).encode():
        return None  # not whole, or not what was written
    return body, int(fields[1])


def keep(copy: PrivateIndex, cached: str) -> None:
    """Once git has refreshed the private copy: keep it as the cache of its key, when git
    rewrote it (else there is nothing new to keep). Best effort: any failure keeps nothing."""
    if copy.key is None:
        return
    try:
        with open(copy.path, "rb") as handle:
            now = os.fstat(handle.fileno())
            if (now.st_ino, now.st_size, now.st_mtime_ns) == copy.written:
                return
            body = handle.read()
        folder = os.path.dirname(cached)
        if not _real_folder(folder, create=True):
            return
        from .files import write_atomically

        header = f"{copy.key} {now.st_mtime_ns} {_digest(body)}\n".encode()
        write_atomically(cached, _MAGIC + header + body, durable=False)
    except OSError:
        return


def _real_folder(folder: str, create: bool) -> bool:
    """`folder` and its parent are real folders (never a link someone planted), made when
    `create` says so and they are missing."""
    for path in (os.path.dirname(folder), folder):
        try:
            if create:
                os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return False
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return False
        except OSError:
            return False
    return True


def forget(home: str, bucket: str, name: str) -> None:
    """Delete the kept copy of a removed worktree's index (never through a planted link)."""
    path = cache_path(home, bucket, name)
    if _real_folder(os.path.dirname(path), create=False):
        try:
            os.unlink(path)
        except OSError:
            pass


def forget_others(home: str, bucket: str, names: set[str]) -> None:
    """Delete the cached copies of a bucket's worktrees that are gone: every file of ours
    in its folder but those of `names` (a killed writer's temporary files included)."""
    folder = f"{home}/{FOLDER}/{bucket}"
    if not _real_folder(folder, create=False):
        return
    try:
        found = os.listdir(folder)
    except OSError:
        return
    keep_files = {f"{name}{SUFFIX}" for name in names}
    for file in found:
        ours = file.endswith(SUFFIX) or (file.startswith(".") and file.endswith(".tmp")
                                          and f"{SUFFIX}." in file)
        if ours and file not in keep_files:
            try:
                os.unlink(f"{folder}/{file}")
            except OSError:
                pass
