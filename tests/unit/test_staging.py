"""Staging only the paths `git status` named (`core/staging.py`) records the very tree that
staging everything does, whatever the worktree holds."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from vibe_worktree.core import git as g
from vibe_worktree.core.staging import staged_tree


def both_trees(repo, tmp_path: Path) -> tuple[str, str]:
    """(staging the paths status names, staging everything), each on its own index copy."""
    index = Path(repo.git("rev-parse", "--path-format=absolute", "--git-path", "index"))
    git = g.Git(str(repo.path))
    copies = [tmp_path / "paths.index", tmp_path / "all.index"]
    for copy in copies:
        shutil.copy2(index, copy)
    status = g.status(git, private_index=str(copies[0]))
    return (staged_tree(git, str(copies[0]), status.paths),
            g.snapshot_tree(git, str(copies[1])))


def edits(root: Path) -> None:
    (root / "README.md").write_text("# changed\n")
    (root / "src" / "app.py").chmod(0o755)
    (root / "notes" / "a b*.txt").write_text("a name with a glob character\n")
    (root / "-dash.txt").write_text("a name like an option\n")
    (root / "link").symlink_to("README.md")
    (root / "ignored.log").write_text("never staged\n")


def test_modified_new_and_odd_names_give_the_snapshot_s_tree(repo, tmp_path):
    repo.commit("more", {".gitignore": "*.log\n", "notes.txt": "a file\n"})
    (repo.path / "notes" / "1.txt").write_text("changed\n")
    edits(repo.path)
    (repo.path / "notes.txt").unlink()
    (repo.path / "notes.txt").mkdir()  # a file turned into a folder
    (repo.path / "notes.txt" / "inside.txt").write_text("inside\n")
    staged, everything = both_trees(repo, tmp_path)
    assert staged == everything
    names = repo.git("ls-tree", "-r", "--name-only", staged).splitlines()
    assert "notes/a b*.txt" in names and "-dash.txt" in names and "ignored.log" not in names


@pytest.mark.parametrize("gone", ["deleted", "renamed"])
def test_a_path_missing_from_disk_stages_everything(repo, tmp_path, gone):
    edits(repo.path)
    if gone == "deleted":
        (repo.path / "src" / "app.py").unlink()
    else:
        repo.git("mv", "src/app.py", "src/main.py")
    staged, everything = both_trees(repo, tmp_path)
    assert staged == everything
    assert "src/app.py" not in repo.git("ls-tree", "-r", "--name-only", staged).splitlines()


def test_nothing_changed_is_head_s_tree(repo, tmp_path):
    staged, everything = both_trees(repo, tmp_path)
    assert staged == everything == repo.git("rev-parse", "HEAD^{tree}")
    assert os.listdir(tmp_path)  # the copies were made
