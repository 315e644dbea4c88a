"""Writing our own state files so that a full disk or a crash never leaves one half written,
and copying an index so that git still sees which of its entries it cannot trust."""

from __future__ import annotations

import os
from collections.abc import Callable


def write_atomically(path: str, payload: bytes, mode: int = 0o600, durable: bool = True) -> None:
    """Replace `path` with `payload`: a temporary file in the same folder, written in full,
    fsync-ed, renamed over `path`, then the folder fsync-ed. Readers see the old file or the
    new one, never a part; on any failure (a full disk) the temporary file is removed and the
    old file stays as it was. `durable=False` skips the two fsyncs, for a file rewritten
    often whose loss in a crash costs nothing (an agent's activity, a cache): still whole."""
    folder = os.path.dirname(path) or "."
    temp = os.path.join(folder, f".{os.path.basename(path)}.{os.urandom(6).hex()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        try:
            view = memoryview(payload)
            while view:  # a write may take less than it was given
                view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise
    if durable:
        fsync_folder(folder)


def replace_in_folder(fd: int, name: str, write: Callable[[str], None]) -> None:
    """Put a new `name` in the folder `fd` (an open descriptor) atomically: `write(temp)`
    makes the temporary entry beside it, which is then renamed over `name` (and removed again
    when anything fails). For a checkout's own files reached without following a symlink
    (relocate.py): readers see the old entry or the new one; nothing is fsync-ed."""
    temp = f".{name}.vwt-{os.urandom(6).hex()}.tmp"
    try:
        write(temp)
        os.replace(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        try:
            os.unlink(temp, dir_fd=fd)
        except FileNotFoundError:
            pass
        raise


def fsync_folder(folder: str) -> None:
    """Make a rename or a new name in `folder` durable (a crash after it keeps it)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def copy_index(source: str, dest: str) -> bool:
    """Copy a git index keeping its mtime; False when there is no index to copy.

    git trusts an index entry's cached stat data unless the file's mtime is not older than
    the index's own ("racily clean": a file rewritten with the same size within the same
    clock tick). A copy with a fresh mtime would make git trust such a stale entry and miss
    the change, so every copy of an index goes through here.
    """
    import shutil

    try:
        shutil.copy2(source, dest)
    except FileNotFoundError:
        if os.path.exists(source):
            raise
        return False
    return True


SPARE_PREFIX = "vwt-spare-"


class SpareRoom:
    """Room held on a disk for undoing a step a full disk may stop half way (a ref moved
    back, files put back): `SpareRoom(folder, size)` takes `size` bytes in `folder` (OSError,
    ENOSPC, when they are not there: then nothing was changed yet); `give_back()` frees them
    right before the undo, and leaving its `with` block frees them too."""

    def __init__(self, folder: str, size: int) -> None:
        drop_stale_spare_room(folder)
        self.path = os.path.join(folder, f"{SPARE_PREFIX}{os.getpid()}-{os.urandom(6).hex()}")
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            zeros = bytes(min(size, 1 << 16))
            left = size
            while left > 0:  # written, not just sized: the blocks must really be taken
                left -= os.write(fd, zeros[:left])
        except BaseException:
            self.give_back()
            raise
        finally:
            os.close(fd)

    def give_back(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def __enter__(self) -> SpareRoom:
        return self

    def __exit__(self, *exc: object) -> None:
        self.give_back()


def drop_stale_spare_room(folder: str) -> None:
    """Delete the room a killed vwt held in `folder` (its pid is gone): the next one to set
    room aside there cleans up after it."""
    try:
        names = [n for n in os.listdir(folder) if n.startswith(SPARE_PREFIX)]
    except OSError:
        return
    for name in names:
        pid = name[len(SPARE_PREFIX):].partition("-")[0]
        if not pid.isdigit() or pid_alive(int(pid)):
            continue
        try:
            os.unlink(os.path.join(folder, name))
        except FileNotFoundError:
            pass


def pid_alive(pid: int) -> bool:
    """Some process has this pid (ours or another user's)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
