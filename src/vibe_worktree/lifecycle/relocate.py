"""A pooled setup at its own path (SPEC §15): after a pool entry's folder was moved to the new
worktree's path, what its hooks wrote that names the entry's folder is made to name the
worktree's, so a virtual environment's scripts and an editable install's `.pth` run and import
from the new worktree, not from a folder that is gone or that another entry now uses.

Which files: those matching the hooks' `relocate` patterns (gitignore-style, relative to the
checkout; by default a `.venv`'s scripts, its `.pth` files and `pyvenv.cfg`), and of them only
files git does not track. How: every occurrence of the old absolute path that stands as a whole
path (`/pool/abc` in `/pool/abc/.venv`, never in `/pool/abcd` or `/x/pool/abc`) is replaced, as
bytes; the file is rewritten whole into a temporary file in its folder and renamed over it, so
a kill leaves the old file or the new one, never a mix, and a file hard-linked elsewhere (a
package manager's cache) is never written through. Its mode is kept; its modification time is
not (a stale `.pyc` of a rewritten module must not pass for fresh). Nothing is ever read or
written through a symlink: folders are opened one at a time with O_NOFOLLOW, a symlinked
folder is not entered, and a matching symlink (a venv's `bin/python`) is only given a new
target when its own target names the old path. A compiled program (ELF, Mach-O) is left alone:
a path of another length would break it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from fnmatch import fnmatchcase

from ..core.errors import VwtError, disk_is_full
from ..core.files import replace_in_folder
from ..core.light import NamedTuple
from ..core.patterns import any_matches

DEFAULT_PATTERNS = (".venv/bin/*", ".venv/lib/python*/site-packages/*.pth", ".venv/pyvenv.cfg")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NAME_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+~@"
                        ) | frozenset(range(0x80, 0x100))  # bytes that continue a file name
_PROGRAMS = (b"\x7fELF", b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf", b"\xce\xfa\xed\xfe",
             b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe")

Warn = Callable[[str], None]


def _quiet(_message: str) -> None:
    pass


class Relocated(NamedTuple):
    """What a relocation changed, as paths relative to the checkout."""

    rewritten: tuple[str, ...] = ()  # files whose content named the old path
    relinked: tuple[str, ...] = ()  # symlinks whose target named it
    skipped: tuple[str, ...] = ()  # tracked files and compiled programs left alone


def _whole_paths(data: bytes, old: bytes) -> Iterator[int]:
    """Where `old` stands in `data` as a whole path: neither continued by a file name's byte
    (`/pool/abcd`, `/pool/abc.bak` are other paths) nor preceded by one (`/x/pool/abc`)."""
    at = data.find(old) if old else -1
    while at != -1:
        end = at + len(old)
        before = data[at - 1] if at else None
        after = data[end] if end < len(data) else None
        if before not in _NAME_BYTES and after not in _NAME_BYTES:
            yield at
            at = data.find(old, end)
        else:
            at = data.find(old, at + 1)


def names_path(data: bytes, old: bytes) -> bool:
    return next(_whole_paths(data, old), None) is not None


def replace_path(data: bytes, old: bytes, new: bytes) -> bytes:
    """`data` with every whole-path occurrence of `old` replaced by `new`."""
    pieces, start = [], 0
    for at in _whole_paths(data, old):
        pieces += [data[start:at], new]
        start = at + len(old)
    return b"".join(pieces) + data[start:] if pieces else data


def relocate(checkout: str, old: str, patterns: Sequence[str] = DEFAULT_PATTERNS,
             warn: Warn = _quiet) -> Relocated:
    """In `checkout` (moved there from `old`), make the untracked files matching `patterns`
    name `checkout` wherever they named `old`. A file that cannot be rewritten is reported
    through `warn` and left as it was; only a full disk fails (OSError)."""
    wanted = [p for p in patterns if p.strip() and not p.startswith("#")]
    if not wanted or old == checkout:
        return Relocated()
    old_b, new_b = os.fsencode(old), os.fsencode(checkout)
    found = list(_naming(checkout, wanted, old_b, warn))
    if not found:
        return Relocated()
    try:
        tracked = _tracked(checkout, [rel for rel, _ in found])
    except VwtError as exc:  # which files git tracks is unknown: none is rewritten
        warn(f"{checkout}: nothing relocated, git could not say which files it tracks "
             f"({exc.message})")
        return Relocated(skipped=tuple(rel for rel, _ in found))
    rewritten: list[str] = []
    relinked: list[str] = []
    skipped: list[str] = []
    for rel, data in found:
        if rel in tracked or (data is not None and data.startswith(_PROGRAMS)):
            skipped.append(rel)
            continue
        try:
            _rewrite(checkout, rel, data, old_b, new_b)
        except OSError as exc:
            if disk_is_full(exc):
                raise  # a worktree left naming another folder is not one `new` would make
            warn(f"{checkout}/{rel} still names {old} ({exc.strerror or exc}); left as it was")
            continue
        (relinked if data is None else rewritten).append(rel)
    return Relocated(tuple(rewritten), tuple(relinked), tuple(skipped))


# -- finding the files ------------------------------------------------------------------------
def _segments(pattern: str) -> tuple[str, ...] | None:
    """A pattern as folder-by-folder globs from the top, or None when it can match at any
    depth (no slash inside it, or a `**`): then every folder is worth entering."""
    body = pattern.removeprefix("!").rstrip("/")
    if "/" not in body or "**" in body:
        return None
    return tuple(body.lstrip("/").split("/"))


def _worth_entering(parts: tuple[str, ...], shapes: list[tuple[str, ...] | None]) -> bool:
    """Some pattern may match a file under the folder `parts`: it matches the folder's path
    so far, or the folder itself (then everything under it, as in gitignore)."""
    for shape in shapes:
        if shape is None:
            return True
        depth = min(len(parts), len(shape))
        if all(fnmatchcase(parts[i], shape[i]) for i in range(depth)):
            return True
    return False


def _naming(checkout: str, patterns: list[str], old: bytes, warn: Warn
            ) -> list[tuple[str, bytes | None]]:
    """(relative path, content) of each matching regular file whose content names `old`,
    and (relative path, None) of each matching symlink whose target does."""
    shapes = [_segments(p) for p in patterns if not p.startswith("!")]
    try:
        top = os.open(checkout, _DIR_FLAGS)
    except OSError as exc:
        warn(f"{checkout} cannot be read ({exc.strerror}); nothing in it was relocated")
        return []
    found: list[tuple[str, bytes | None]] = []
    stack: list[tuple[tuple[str, ...], int]] = [((), top)]
    try:
        while stack:
            parts, fd = stack.pop()
            try:
                found += _look_in(parts, fd, patterns, shapes, old, stack)
            finally:
                os.close(fd)
    finally:
        for _parts, fd in stack:
            os.close(fd)
    return found


def _look_in(parts: tuple[str, ...], fd: int, patterns: list[str],
             shapes: list[tuple[str, ...] | None], old: bytes,
             stack: list[tuple[tuple[str, ...], int]]) -> list[tuple[str, bytes | None]]:
    """One folder: the matching files in it that name `old`; the folders worth entering go on
    `stack`, each opened without following a symlink."""
    try:
        with os.scandir(fd) as entries:
            listed = [(e.name, e.is_dir(follow_symlinks=False), e.is_symlink())
                      for e in entries]
    except OSError:
        return []
    found: list[tuple[str, bytes | None]] = []
    for name, is_dir, is_link in listed:
        here = (*parts, name)
        if not parts and name == ".git":
            continue
        if is_dir:
            if _worth_entering(here, shapes):
                try:
                    stack.append((here, os.open(name, _DIR_FLAGS, dir_fd=fd)))
                except OSError:
                    pass  # replaced by a symlink meanwhile, or unreadable: not entered
            continue
        rel = "/".join(here)
        if not any_matches(patterns, [rel]):
            continue
        if is_link:
            if names_path(_readlink(name, fd), old):
                found.append((rel, None))
            continue
        data = _read_regular(name, fd)
        if data is not None and names_path(data, old):
            found.append((rel, data))
    return found


def _readlink(name: str, fd: int) -> bytes:
    try:
        return os.readlink(os.fsencode(name), dir_fd=fd)
    except OSError:
        return b""


def _read_regular(name: str, fd: int) -> bytes | None:
    try:
        file = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK,
                       dir_fd=fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(file).st_mode):
            return None  # a fifo or a device: never read
        chunks = []
        while chunk := os.read(file, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(file)


def _tracked(checkout: str, paths: list[str]) -> set[str]:
    """Which of `paths` git tracks in `checkout` (one housekeeping git call)."""
    from ..core.git import Git

    listed = Git(checkout).out("ls-files", "-z", "--cached", "--", *paths,
                               env={"GIT_LITERAL_PATHSPECS": "1"})
    return {p for p in listed.split("\0") if p}


# -- rewriting one file -----------------------------------------------------------------------
@contextmanager
def folder_of(checkout: str, rel: str, create: bool = False) -> Iterator[tuple[int, str]]:
    """(descriptor of the folder holding `rel`, its last name), reached one folder at a time
    from `checkout` without following a symlink; `create`: make missing folders (0o755)."""
    *folders, name = rel.split("/")
    fd = os.open(checkout, _DIR_FLAGS)
    try:
        for part in folders:
            if part in ("", ".", ".."):
                raise OSError(errno.EINVAL, f"not a plain relative path: {rel}")
            if create:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
            inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
        yield fd, name
    finally:
        os.close(fd)


def write_file(fd: int, temp: str, data: bytes, mode: int) -> None:
    """A new file `temp` in the folder `fd` holding `data`, with `mode` (umask ignored)."""
    out = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                  0o600, dir_fd=fd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(out, view):]
        os.fchmod(out, mode)
    finally:
        os.close(out)


def _rewrite(checkout: str, rel: str, data: bytes | None, old: bytes, new: bytes) -> None:
    with folder_of(checkout, rel) as (fd, name):
        if data is None:  # a symlink whose target names the old path
            target = replace_path(os.readlink(os.fsencode(name), dir_fd=fd), old, new)
            replace_in_folder(fd, name, lambda temp: os.symlink(target, temp, dir_fd=fd))
            return
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "no longer a regular file")
        changed = replace_path(data, old, new)
        replace_in_folder(fd, name, lambda temp: write_file(fd, temp, changed,
                                                            stat.S_IMODE(info.st_mode)))


def patterns_of(hooks: Sequence[dict[str, object]]) -> tuple[str, ...]:
    """The `relocate` patterns of the hooks that ran in a pool entry (its marker's results):
    each one's own list, or the default for a hook that has none (a marker an older `vwt`
    wrote); nothing when no hook ran there."""
    found: list[str] = []
    for result in hooks:
        if result.get("status") != "ok":
            continue
        own = result.get("relocate")
        listed = own if isinstance(own, list) else DEFAULT_PATTERNS
        found += [p for p in listed if isinstance(p, str) and p not in found]
    return tuple(found)
