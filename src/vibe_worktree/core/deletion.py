"""Deleting folder trees on several threads, whatever their shape.

A removed checkout is deleted from `.trash` before the command exits (SPEC §4), and git's
own `worktree remove` unlinks 20,000 files on one thread. Splitting the work by folders
chosen up front leaves a big folder beside small ones (`src/` beside `docs/`, `tests/`, ...)
to one thread, so the threads share one stack of folders instead: a thread takes a folder,
unlinks everything in it that is not a folder and stacks its subfolders; when the stack is
empty and no thread is busy, the folders themselves go, deepest first.

Nothing is deleted through a symbolic link: a link is unlinked like a file, a folder is
opened with O_NOFOLLOW and used only when it is the very folder that was listed (same device
and inode, the check `shutil.rmtree` makes), and everything inside it is unlinked relative to
that open folder. Errors are ignored as `shutil.rmtree(..., ignore_errors=True)` ignores them:
what cannot be deleted stays, and a last `shutil.rmtree` pass over what is left tries once
more, so the outcome is never worse than that call's.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Sequence

from .light import NamedTuple

_OPEN_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# An unlink waits on the filesystem's journal more than it uses a CPU: on 2 cores, 8
# threads delete a 20,000-file checkout about 3 times as fast as one, and twice as fast as 2.
WORKERS = 8


class _Folder(NamedTuple):
    path: str
    dev: int
    ino: int
    depth: int
    parent: _Folder | None


def delete_trees(paths: Sequence[str], workers: int = WORKERS) -> None:
    """Delete each real folder of `paths` with everything in it, on `workers` threads
    sharing the work; a path that is not a real folder (missing, a file, a link) is left."""
    roots = [folder for path in paths if (folder := _root(path)) is not None]
    if not roots:
        return
    listed = _clear_all(roots, max(1, workers))
    _remove_folders(listed)
    for root in roots:
        try:
            os.rmdir(root.path)
        except OSError:
            if os.path.lexists(root.path) and not os.path.islink(root.path):
                import shutil  # slow to import; only for what the threads could not delete

                shutil.rmtree(root.path, ignore_errors=True)


def _root(path: str) -> _Folder | None:
    try:
        found = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(found.st_mode):
        return None  # a link or a file: not a checkout of ours
    return _Folder(path, found.st_dev, found.st_ino, 0, None)


def _clear_all(roots: list[_Folder], workers: int) -> list[_Folder]:
    """Unlink every non-folder in the trees on `workers` threads; every folder found below
    the roots (not the roots themselves)."""
    stack = list(roots)
    found: list[_Folder] = []
    busy = 0
    changed = threading.Condition()

    def work() -> None:
        nonlocal busy
        while True:
            with changed:
                while not stack and busy:
                    changed.wait()
                if not stack:  # nothing left and nobody who could stack more
                    changed.notify_all()
                    return
                folder = stack.pop()
                busy += 1
            subfolders: list[_Folder] = []
            try:
                subfolders = _clear(folder)
            finally:  # whatever happened, the others must not wait for this thread forever
                with changed:
                    stack.extend(subfolders)
                    found.extend(subfolders)
                    busy -= 1
                    changed.notify_all()

    threads = [threading.Thread(target=work, daemon=True) for _ in range(workers - 1)]
    for thread in threads:
        thread.start()
    work()
    for thread in threads:
        thread.join()
    return found


def _open(folder: _Folder) -> int | None:
    """A descriptor of `folder`, only while it is still the folder that was listed."""
    try:
        fd = os.open(folder.path, _OPEN_FOLDER)
    except OSError:
        return None
    try:
        opened = os.fstat(fd)
    except OSError:
        opened = None
    if opened is None or (opened.st_dev, opened.st_ino) != (folder.dev, folder.ino):
        os.close(fd)  # replaced since it was listed: leave it alone
        return None
    return fd


def _clear(folder: _Folder) -> list[_Folder]:
    """Unlink everything in `folder` that is not a folder; its subfolders."""
    fd = _open(folder)
    if fd is None:
        return []
    subfolders = []
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        found = entry.stat(follow_symlinks=False)
                        subfolders.append(_Folder(f"{folder.path}/{entry.name}", found.st_dev,
                                                  found.st_ino, folder.depth + 1, folder))
                    else:
                        os.unlink(entry.name, dir_fd=fd)
                except OSError:
                    pass
    except OSError:
        pass
    finally:
        os.close(fd)
    return subfolders


def _remove_folders(folders: list[_Folder]) -> None:
    """`rmdir` each folder relative to its open parent, deepest first."""
    by_parent: dict[str, tuple[_Folder, list[str]]] = {}
    for folder in folders:
        assert folder.parent is not None
        by_parent.setdefault(folder.parent.path, (folder.parent, []))[1].append(
            folder.path[len(folder.parent.path) + 1:])
    for parent, names in sorted(by_parent.values(), key=lambda item: -item[0].depth):
        fd = _open(parent)
        if fd is None:
            continue
        try:
            for name in names:
                try:
                    os.rmdir(name, dir_fd=fd)
                except OSError:
                    pass
        finally:
            os.close(fd)
