"""A home or a repository that cannot be written: exit 1, one line naming the path,
nothing changed, no traceback.

`chmod` does not stop root, so the tests make the folder read-only for everyone with a
read-only bind mount of it onto itself (`mount --bind`, then `mount -o remount,ro,bind`);
that needs root (CI runs as root), and they skip, saying why, anywhere else.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from .conftest import GitRepo

pytestmark = pytest.mark.timeout(120)


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, check=False)


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    """`path` read-only for every process, root included, for the block."""
    if os.geteuid() != 0:
        pytest.skip("needs root for a read-only bind mount (chmod does not stop root)")
    bound = _mount("--bind", str(path), str(path))
    if bound.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {bound.stderr.strip()}")
    try:
        remount = _mount("-o", "remount,ro,bind", str(path))
        if remount.returncode != 0:
            pytest.skip(f"cannot remount read-only here: {remount.stderr.strip()}")
        yield
    finally:
        subprocess.run(["umount", str(path)], check=True)


def fingerprint(repo: GitRepo) -> dict[str, str]:
    """Everything a command could change: the home's files, the repository's refs and
    worktree list, and the files of every checkout."""
    found: dict[str, str] = {}
    for top in (repo.sb.vibe_home, repo.path):
        for folder, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if d != "objects"]
            for name in dirs + files:
                path = Path(folder, name)
                if path.is_symlink() or path.is_dir():
                    found[str(path)] = "dir" if path.is_dir() else os.readlink(path)
                else:
                    found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    found["refs"] = repo.git("for-each-ref")
    found["worktrees"] = repo.git("worktree", "list", "--porcelain")
    return found


@pytest.fixture
def prepared(repo: GitRepo) -> GitRepo:
    """`keep` with uncommitted work; `snap` removed with a snapshot (restorable)."""
    for name in ("keep", "snap"):
        checkout = Path(repo.ok("new", name, "--json").json()["path"])
        (checkout / "work.txt").write_text(f"{name}'s work\n")
    repo.ok("rm", "snap", "-y")
    return repo


COMMANDS = {
    "new": ("new", "feat"),
    "rm": ("rm", "keep", "-y"),
    "prune": ("prune", "--keep", "0"),
    "snapshot": ("snapshot", "keep"),
    "restore": ("restore", "snap"),
}
NO_HOME_WRITE = {"snapshot"}  # writes only into the repository


@pytest.mark.parametrize("where", ["home", "repository"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_unwritable_home_or_repository_is_one_line_and_changes_nothing(
        prepared: GitRepo, command: str, where: str) -> None:
    repo = prepared
    path = repo.sb.vibe_home if where == "home" else repo.path
    before = fingerprint(repo)
    with read_only(path):
        run = repo.vwt(*COMMANDS[command])
    if where == "home" and command in NO_HOME_WRITE:
        assert run.returncode == 0, str(run)
        return
    assert run.returncode == 1, str(run)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vwt: error: "), str(run)
    assert str(path) in lines[0], f"the line does not name the unwritable path:\n{run}"
    assert "Read-only file system" in lines[0], str(run)
    assert fingerprint(repo) == before, "something changed"
