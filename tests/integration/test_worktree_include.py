"""`.worktreeinclude`: ignored files of the main checkout copied into new worktrees."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from vibe_worktree.lifecycle.include import copy_included_files

from .vwt_support import Box


def prepare(box: Box) -> None:
    (box.repo / ".gitignore").write_text(".env\nconfig/*.local\n*.log\nnode_modules/\n")
    (box.repo / ".worktreeinclude").write_text("# secrets\n.env\nconfig/*.local\n")
    (box.repo / "config").mkdir()
    (box.repo / "config" / "app.toml").write_text("tracked\n")
    box.git("add", ".")
    box.git("commit", "-qm", "ignore rules")
    (box.repo / ".env").write_text("SECRET=1\n")
    os.chmod(box.repo / ".env", 0o600)
    (box.repo / "config" / "db.local").write_text("local db\n")
    (box.repo / "debug.log").write_text("ignored but not included\n")
    (box.repo / "scratch.txt").write_text("untracked, not ignored\n")


def copy_into(box: Box, checkout: str, warn: Callable[[str], None] | None = None) -> list[str]:
    """The library call, with git seeing the sandbox's config as the CLI does."""
    env_before = dict(os.environ)
    os.environ.update(GIT_CONFIG_GLOBAL=box.env["GIT_CONFIG_GLOBAL"], GIT_CONFIG_NOSYSTEM="1")
    try:
        if warn is None:
            return copy_included_files(str(box.repo), checkout, str(box.vibe_home))
        return copy_included_files(str(box.repo), checkout, str(box.vibe_home), warn)
    finally:
        os.environ.clear()
        os.environ.update(env_before)


def test_included_ignored_files_are_copied_not_linked(box: Box) -> None:
    prepare(box)
    checkout = Path(box.new("feature")["path"])
    copied = copy_into(box, str(checkout))
    assert set(copied) <= {".env", "config/db.local"}  # the creation hook may have run already
    env_file = checkout / ".env"
    assert env_file.read_text() == "SECRET=1\n"
    assert not env_file.is_symlink()
    assert (env_file.stat().st_mode & 0o777) == 0o600
    assert (checkout / "config" / "db.local").read_text() == "local db\n"
    assert not (checkout / "debug.log").exists(), "ignored but not included"
    assert not (checkout / "scratch.txt").exists(), "untracked but not ignored"
    env_file.write_text("changed in the worktree\n")
    assert (box.repo / ".env").read_text() == "SECRET=1\n"


def test_copied_files_stay_out_of_status_and_snapshots(box: Box) -> None:
    prepare(box)
    checkout = Path(box.new("feature")["path"])
    copy_into(box, str(checkout))
    (checkout / "work.txt").write_text("real work\n")
    status = box.ok("status", "feature", "--json").json()
    assert status["changes"] == 1 and status["untracked"] == 1
    snap = box.ok("snapshot", "feature", "--json").json()
    files = box.git("ls-tree", "-r", "--name-only", snap["commit"]).split()
    assert "work.txt" in files
    assert ".env" not in files and "config/db.local" not in files


def test_config_patterns_add_to_the_include_file(box: Box) -> None:
    prepare(box)
    box.write_config('worktree_include = ["*.log"]\nworktree_limit = 15\n')
    checkout = Path(box.new("feature")["path"])
    copy_into(box, str(checkout))
    assert (checkout / "debug.log").exists()
    assert (checkout / ".env").exists()


def test_nothing_to_do_without_patterns(box: Box) -> None:
    (box.repo / ".gitignore").write_text(".env\n")
    (box.repo / ".env").write_text("x\n")
    checkout = box.new("plain")["path"]
    assert copy_into(box, checkout) == []
    assert not os.path.exists(os.path.join(checkout, ".env"))


def test_existing_files_and_symlinked_folders_are_never_written_through(box: Box) -> None:
    prepare(box)
    outside = box.tmp / "outside"
    outside.mkdir()
    checkout = Path(box.new("feature")["path"])
    for name in os.listdir(checkout / "config"):
        os.unlink(checkout / "config" / name)
    (checkout / "config").rmdir()
    (checkout / "config").symlink_to(outside)  # as a tracked symlink to a folder would be
    (checkout / ".env").write_text("the worktree's own\n")
    copied = copy_into(box, str(checkout))
    assert copied == []
    assert (checkout / ".env").read_text() == "the worktree's own\n"
    assert list(outside.iterdir()) == []


def test_a_broken_setting_is_a_warning_not_a_failure(box: Box) -> None:
    prepare(box)
    box.write_config("worktree_include = 5\n")
    checkout = box.new("x")["path"]
    warnings: list[str] = []
    copied = copy_into(box, checkout, warnings.append)
    assert copied == [] and "worktree_include" in warnings[0]
