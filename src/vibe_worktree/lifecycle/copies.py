"""Fast copies of many files (a whole `node_modules`) from one checkout into another.

Each regular file is a copy-on-write clone (`FICLONE`) where the filesystem offers it
(Btrfs, XFS, bcachefs...), else an in-kernel `copy_file_range`, else a read/write loop;
the files are copied by a pool of threads when the disk makes each copy wait (the system
calls release the GIL), on the calling thread when it does not. Symlinks are recreated as
symlinks, never followed, and no file is read through a symlinked folder of the source, so
nothing outside it is ever read. Modes and modification times are kept. What already
exists in the destination is never overwritten.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Sequence

from ..core.light import NamedTuple

FICLONE = 0x40049409  # _IOW(0x94, 9, int) from linux/fs.h
WORKERS = 8
CHUNK = 128
# Threads pay only while each file waits on the disk. On a fast disk a copy is CPU work the
# GIL serialises, and threads only add handovers: 4,000 files of a `node_modules` took
# 0.12 s on one thread and 0.27 to 0.54 s on eight here, while on a slow day file creation
# alone costs about 0.7 ms a file and eight threads overlap those waits. The first files,
# copied on the calling thread, tell which day it is.
PROBE_FILES = 64
SLOW_FILE = 0.0001  # seconds a file: above it, the rest goes to the threads
_OPEN_SOURCE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_OPEN_DEST = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_NO_CLONE = {errno.EOPNOTSUPP, errno.ENOTTY, errno.EXDEV, errno.EINVAL, errno.ENOSYS,
             errno.EBADF, errno.EPERM}

Warn = Callable[[str], None]


class Method:
    """How this copy moves bytes; the first refusal turns a faster way off for the rest."""

    def __init__(self) -> None:
        self.umask = os.umask(0o022)
        os.umask(self.umask)
        self.clone = hasattr(os, "copy_file_range")  # Linux only, as FICLONE is
        self.copy_range = hasattr(os, "copy_file_range")
        self.used: set[str] = set()


class CopyResult(NamedTuple):
    copied: list[str]  # relative paths, in the order given
    methods: tuple[str, ...]  # "clone", "copy_file_range", "read_write", "symlink"


def _clone(method: Method, src: int, dst: int) -> bool:
    if not method.clone:
        return False
    import fcntl

    try:
        fcntl.ioctl(dst, FICLONE, src)
    except OSError as exc:
        if exc.errno not in _NO_CLONE:
            raise
        method.clone = False
        return False
    method.used.add("clone")
    return True


def _copy_range(method: Method, src: int, dst: int, size: int) -> bool:
    if not method.copy_range:
        return False
    done = 0
    try:
        while done < size:
            n = os.copy_file_range(src, dst, size - done)
            if n == 0:
                break
            done += n
    except OSError as exc:
        if exc.errno not in _NO_CLONE or done:
            raise
        method.copy_range = False
        return False
    method.used.add("copy_file_range")
    return True


def _read_write(method: Method, src: int, dst: int) -> None:
    while chunk := os.read(src, 1 << 20):
        view = memoryview(chunk)
        while view:
            view = view[os.write(dst, view):]
    method.used.add("read_write")


def _copy_symlink(method: Method, name: str, src_dir: int, dst_dir: int) -> bool:
    target = os.readlink(name, dir_fd=src_dir)
    os.symlink(target, name, dir_fd=dst_dir)
    info = os.lstat(name, dir_fd=src_dir)
    if os.utime in os.supports_follow_symlinks:
        os.utime(name, ns=(info.st_atime_ns, info.st_mtime_ns), dir_fd=dst_dir,
                 follow_symlinks=False)
    method.used.add("symlink")
    return True


def copy_one(method: Method, name: str, src_dir: int, dst_dir: int, repair: bool = False) -> bool:
    """Copy one file or symlink between two open folders; False when there is nothing to
    copy or the destination already has something there. (Relative to folder descriptors,
    as cp does: the kernel resolves one name, not the whole path, for each file.)
    `repair`: a destination file whose size or mtime differs from the source's is a copy a
    kill cut short (a copy ends by setting the mtime): it is copied again."""
    try:
        src = os.open(name, _OPEN_SOURCE, dir_fd=src_dir)
    except FileNotFoundError:
        return False
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a symlink: recreate it, never read through it
            try:
                return _copy_symlink(method, name, src_dir, dst_dir)
            except FileExistsError:
                return False
        raise
    try:
        info = os.fstat(src)
        if not stat.S_ISREG(info.st_mode):
            return False  # a FIFO, socket or device: not something to copy
        mode = stat.S_IMODE(info.st_mode)
        try:
            dst = os.open(name, _OPEN_DEST, mode | 0o600, dir_fd=dst_dir)
        except FileExistsError:
            if not (repair and _cut_short(name, dst_dir, info)):
                return False
            os.unlink(name, dir_fd=dst_dir)
            dst = os.open(name, _OPEN_DEST, mode | 0o600, dir_fd=dst_dir)
        try:
            if info.st_size and not _clone(method, src, dst) \
                    and not _copy_range(method, src, dst, info.st_size):
                _read_write(method, src, dst)
            if mode & ~method.umask != mode or mode & 0o600 != 0o600:
                os.fchmod(dst, mode)  # the umask (or our owner bits) changed it
            os.utime(dst, ns=(info.st_atime_ns, info.st_mtime_ns))
        finally:
            os.close(dst)
    finally:
        os.close(src)
    return True


def _cut_short(name: str, dst_dir: int, source: os.stat_result) -> bool:
    try:
        there = os.stat(name, dir_fd=dst_dir, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(there.st_mode) and (there.st_size, there.st_mtime_ns) != (
        source.st_size, source.st_mtime_ns)


_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _copy_folder(method: Method, source_root: str, dest_root: str, rel_dir: str,
                 names: Sequence[str], warn: Warn, repair: bool = False) -> list[str]:
    """Copy `names` of one folder (whose folders on the way were checked)."""
    prefix = f"{rel_dir}/" if rel_dir else ""
    done: list[str] = []
    try:
        src_dir = os.open(f"{source_root}/{rel_dir}" if rel_dir else source_root, _OPEN_DIR)
    except OSError as exc:
        warn(f"could not copy {prefix or './'} into the worktree: {exc.strerror or exc}")
        return done
    try:
        dst_dir = os.open(f"{dest_root}/{rel_dir}" if rel_dir else dest_root, _OPEN_DIR)
    except OSError as exc:
        os.close(src_dir)
        warn(f"could not copy {prefix or './'} into the worktree: {exc.strerror or exc}")
        return done
    try:
        for name in names:
            try:
                if copy_one(method, name, src_dir, dst_dir, repair):
                    done.append(prefix + name)
            except OSError as exc:
                warn(f"could not copy {prefix}{name} into the worktree: {exc.strerror or exc}")
    finally:
        os.close(src_dir)
        os.close(dst_dir)
    return done


class _Folders:
    """Folders along the way: the source's must be real folders (never a symlink), and the
    destination's are made as needed, never through a symlink either."""

    def __init__(self, source_root: str, dest_root: str) -> None:
        self.source_root = source_root
        self.dest_root = dest_root
        self.source_ok: dict[str, bool] = {"": True}
        self.dest_ok: dict[str, bool] = {"": True}
        self.made: list[str] = []

    def _real_source(self, rel_dir: str) -> bool:
        known = self.source_ok.get(rel_dir)
        if known is None:
            parent = rel_dir.rpartition("/")[0]
            try:
                mode = os.lstat(f"{self.source_root}/{rel_dir}").st_mode
                known = self._real_source(parent) and stat.S_ISDIR(mode)
            except OSError:
                known = False
            self.source_ok[rel_dir] = known
        return known

    def _dest(self, rel_dir: str) -> bool:
        known = self.dest_ok.get(rel_dir)
        if known is None:
            known = self._dest(rel_dir.rpartition("/")[0]) and self._make(rel_dir)
            self.dest_ok[rel_dir] = known
        return known

    def _make(self, rel_dir: str) -> bool:
        path = f"{self.dest_root}/{rel_dir}"
        try:
            os.mkdir(path, 0o700)
            self.made.append(rel_dir)
            return True
        except FileExistsError:
            return stat.S_ISDIR(os.lstat(path).st_mode)  # a tracked symlink: never through it

    def ready(self, rel: str) -> bool:
        """The folders leading to `rel` are real in the source and made in the destination."""
        parent = rel.rpartition("/")[0]
        return self._real_source(parent) and self._dest(parent)

    def make(self, rel_dir: str) -> None:
        """Make a folder of the source (an empty one too), if it is a real one."""
        if self._real_source(rel_dir):
            self._dest(rel_dir)

    def finish(self) -> None:
        """Give the folders made their source's mode and times, deepest first (writing a
        file into a folder changes its mtime)."""
        for rel_dir in sorted(self.made, key=lambda d: d.count("/"), reverse=True):
            info = os.lstat(f"{self.source_root}/{rel_dir}")
            path = f"{self.dest_root}/{rel_dir}"
            os.chmod(path, stat.S_IMODE(info.st_mode))
            os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def walk(root: str, rel_dir: str) -> list[str]:
    """Everything below `root/rel_dir`, relative to `root`: files and symlinks as they are,
    folders with a trailing `/` (so empty ones are copied too). Symlinks are not entered."""
    found: list[str] = []
    pending = [rel_dir]
    while pending:
        current = pending.pop()
        found.append(f"{current}/")
        try:
            with os.scandir(f"{root}/{current}") as entries:
                for entry in entries:
                    rel = f"{current}/{entry.name}"
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(rel)
                    else:
                        found.append(rel)
        except OSError:
            continue
    return found


def copy_files(source_root: str, dest_root: str, rels: Sequence[str], warn: Warn,
               workers: int = WORKERS, repair: bool = False) -> CopyResult:
    """Copy `rels` (relative paths of files and symlinks; of folders when they end in
    `/`) from one tree into another; `repair`: also copies cut short (see `copy_one`)."""
    folders = _Folders(source_root, dest_root)
    wanted = []
    for rel in rels:
        if not _safe_rel(rel.removesuffix("/")):
            continue
        if rel.endswith("/"):
            folders.make(rel[:-1])
        elif folders.ready(rel):
            wanted.append(rel)
    method = Method()
    by_folder: dict[str, list[str]] = {}
    for rel in wanted:
        folder, _, name = rel.rpartition("/")
        by_folder.setdefault(folder, []).append(name)
    # One task per folder: no two threads create files in the same folder (they would
    # queue on its lock), and each opens the folder once.
    tasks = [(folder, names[i:i + CHUNK]) for folder, names in by_folder.items()
             for i in range(0, len(names), CHUNK)]

    def copy_task(task: tuple[str, list[str]]) -> list[str]:
        return _copy_folder(method, source_root, dest_root, task[0], task[1], warn, repair)

    results, rest = _probe(copy_task, tasks)
    if rest and workers > 1 and len(rest) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(workers, len(rest))) as pool:
            results += pool.map(copy_task, rest)
    else:
        results += map(copy_task, rest)
    try:
        folders.finish()
    except OSError as exc:
        warn(f"could not set the times of the copied folders: {exc.strerror or exc}")
    return CopyResult([rel for done in results for rel in done], tuple(sorted(method.used)))


def _probe(copy_task: Callable[[tuple[str, list[str]]], list[str]],
           tasks: list[tuple[str, list[str]]]
           ) -> tuple[list[list[str]], list[tuple[str, list[str]]]]:
    """Copy the first PROBE_FILES or so on this thread: what they copied, and the tasks left
    for threads (none when the disk was quick, and then this thread has copied them all)."""
    import time

    results, files, start = [], 0, time.perf_counter()
    for i, task in enumerate(tasks):
        results.append(copy_task(task))
        files += len(task[1])
        if files >= PROBE_FILES:
            if (time.perf_counter() - start) / files > SLOW_FILE:
                return results, tasks[i + 1:]
            results += map(copy_task, tasks[i + 1:])
            return results, []
    return results, []


def _safe_rel(rel: str) -> bool:
    parts = rel.split("/")
    return bool(rel) and not rel.startswith("/") and ".." not in parts and "" not in parts
