"""A disk that runs out of space on purpose: a size-limited tmpfs and a filler file.

``small_disk`` (a fixture of ``test_full_disk.py``) mounts a tmpfs of a few MiB under the
test's temporary folder; ``SmallDisk.fill(leave=K)`` takes all but K bytes of it with one
preallocated file, ``drain()`` gives them back. tmpfs counts space in pages, so K is
rounded down to a multiple of the page size.

Mounting needs root (CI runs as root); elsewhere the tests skip and say why.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

PAGE = os.sysconf("SC_PAGE_SIZE")
DISK_FULL_WORDS = "No space left on device"
# what vwt writes and must never leave empty, truncated or half written
STATE_FILES = ("record.json", "recovery.json", "worktree-approvals.json")


class SmallDisk:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.filler = path / ".filler"

    def free(self) -> int:
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize

    def fill(self, leave: int) -> None:
        """Leave `leave` bytes free (rounded down to a page): the rest goes to the filler."""
        self.drain()
        take = self.free() - (leave // PAGE) * PAGE
        if take <= 0:
            return
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.posix_fallocate(fd, 0, take)
        finally:
            os.close(fd)
        assert self.free() == (leave // PAGE) * PAGE, (self.free(), leave)

    def drain(self) -> None:
        self.filler.unlink(missing_ok=True)


def _mount_error(path: Path, size: str) -> str | None:
    if os.geteuid() != 0:
        return "mounting a size-limited tmpfs needs root (CI runs these tests as root)"
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs",
                           str(path)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return f"cannot mount a tmpfs here: {proc.stderr.strip() or proc.returncode}"
    return None


def mounted_small_disk(path: Path, size: str = "8m") -> Iterator[SmallDisk]:
    """Mount a tmpfs of `size` at `path` for the test's lifetime (skips without root)."""
    path.mkdir(parents=True, exist_ok=True)
    problem = _mount_error(path, size)
    if problem:
        pytest.skip(problem)
    try:
        yield SmallDisk(path)
    finally:
        subprocess.run(["umount", "--lazy", str(path)], capture_output=True, check=False)


def assert_disk_full_message(stderr: str, context: str) -> None:
    """Exactly one line, saying the disk is full and what to do about it."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line on stderr\n{context}"
    line = lines[0]
    assert DISK_FULL_WORDS in line, f"the message does not say the disk is full\n{context}"
    assert "vwt prune" in line, f"the message does not say what to do\n{context}"


def assert_state_files_whole(home: Path) -> None:
    """Every record, recovery and approvals file parses as a JSON object; no temporary file
    of an atomic write is left behind."""
    problems = []
    for folder, _dirs, files in os.walk(home):
        for name in files:
            path = Path(folder) / name
            if name in STATE_FILES:
                try:
                    data = json.loads(path.read_bytes())
                except ValueError as exc:
                    problems.append(f"{path}: {exc}")
                    continue
                if not isinstance(data, dict):
                    problems.append(f"{path}: not a JSON object")
            elif name.startswith(tuple(f".{s}." for s in STATE_FILES)) and name.endswith(".tmp"):
                problems.append(f"{path}: a temporary file left behind")
    assert not problems, "\n".join(problems)
