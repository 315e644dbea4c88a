"""`vwt snapshot` (SPEC §4 snapshot, §6 housekeeping never runs repository-defined commands)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from conftest import SNAPSHOT_IDENTITY, assert_error, tree_files

REF = "refs/vibe/reaped/{}"


def age_files(root: Path, seconds: int = 30) -> None:
    """Back-date every file so git's racy-timestamp logic never rewrites the index on its own."""
    past = time.time() - seconds
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for fn in filenames:
            os.utime(Path(dirpath) / fn, (past, past))


@pytest.fixture
def messy(repo, vwt):
    """A worktree with every kind of change: modified, deleted, staged, untracked, ignored."""
    repo.commit("files", {".gitignore": "*.log\n", "a.txt": "a\n", "b.txt": "b\n"})
    path = Path(vwt.new("messy")["path"])
    repo.write("a.txt", "a changed\n", base=path)
    (path / "b.txt").unlink()
    repo.write("new.txt", "brand new\n", base=path)
    repo.write("dir/u.txt", "untracked in dir\n", base=path)
    repo.write("debug.log", "ignored\n", base=path)
    repo.write("staged.txt", "staged\n", base=path)
    repo.git("add", "staged.txt", cwd=path)
    age_files(path)
    repo.porcelain(path)  # let git refresh the index once, before we take its bytes
    return path


def index_file(repo, path: Path) -> Path:
    return (path / repo.git("rev-parse", "--git-path", "index", cwd=path)).resolve()


def test_snapshot_saves_everything_but_ignored_files(repo, vwt, messy):
    head = repo.head(cwd=messy)
    result = vwt.ok("snapshot", "messy", "--json").json()
    assert result["name"] == "messy"
    assert result["ref"] == REF.format("messy")
    commit = result["commit"]
    assert repo.rev(REF.format("messy")) == commit
    assert repo.git("rev-list", "--parents", "-n1", commit).split() == [commit, head]
    files = set(repo.git("ls-tree", "-r", "--name-only", commit).splitlines())
    assert {"a.txt", "new.txt", "dir/u.txt", "staged.txt", ".gitignore", "README.md"} <= files
    assert "b.txt" not in files, "deletions are recorded"
    assert "debug.log" not in files, "ignored files are left out"
    assert repo.git("show", f"{commit}:a.txt") == "a changed"
    assert repo.git("show", f"{commit}:dir/u.txt") == "untracked in dir"


def test_snapshot_leaves_files_index_and_head_untouched(repo, vwt, messy):
    status = repo.porcelain(messy)
    head = repo.head(cwd=messy)
    index = index_file(repo, messy).read_bytes()
    files = tree_files(messy)
    vwt.ok("snapshot", "messy", "--json")
    assert index_file(repo, messy).read_bytes() == index
    assert tree_files(messy) == files
    assert repo.head(cwd=messy) == head
    assert repo.current_branch(cwd=messy) == "messy"
    assert repo.porcelain(messy) == status


def test_snapshot_commit_uses_the_fixed_identity(repo, vwt, messy):
    commit = vwt.ok("snapshot", "messy", "--json").json()["commit"]
    author = repo.git("log", "-1", "--format=%an <%ae>", commit)
    committer = repo.git("log", "-1", "--format=%cn <%ce>", commit)
    assert author == SNAPSHOT_IDENTITY
    assert committer == SNAPSHOT_IDENTITY


def test_snapshot_works_without_a_configured_user(repo, vwt, sandbox):
    path = Path(vwt.new("anon")["path"])
    repo.write("wip.txt", "wip\n", base=path)
    sandbox.gitconfig.write_text("[init]\n\tdefaultBranch = main\n[user]\n\tuseConfigOnly = true\n")
    # sanity: this sandbox really has no identity
    assert not repo.git_ok("commit", "--allow-empty", "-m", "x", cwd=path)
    result = vwt("snapshot", "anon", "--json")
    assert result.code == 0, str(result)
    assert repo.ref_exists(REF.format("anon"))


def test_snapshot_of_a_clean_worktree_has_head_tree(repo, vwt):
    path = Path(vwt.new("clean")["path"])
    commit = vwt.ok("snapshot", "clean", "--json").json()["commit"]
    assert repo.rev(f"{commit}^{{tree}}") == repo.rev("HEAD^{tree}")
    assert repo.rev(f"{commit}^") == repo.head(cwd=path)


def test_snapshot_of_unknown_name_fails(repo, vwt):
    assert_error(vwt("snapshot", "ghost", "--json"), 1)


# --- filter drivers ---------------------------------------------------------------------------


def _filtered_worktree(repo, vwt, sandbox, name="filtered"):
    """A worktree with a modified file to which a filter attribute applies."""
    repo.commit("attrs", {".gitattributes": "*.dat filter=evil\n", "data.dat": "before\n"})
    path = Path(vwt.new(name)["path"])
    # same size, so git cannot tell it changed from the stat data alone and must hash it
    repo.write("data.dat", "after!\n", base=path)
    marker = sandbox.tmp / "filter.ran"
    return path, marker


def _evil_driver(marker: Path) -> str:
    return f"sh -c 'echo ran >> \"{marker}\"; cat'"


def test_snapshot_refuses_a_filter_driver_from_the_repository_config(repo, vwt, sandbox):
    path, marker = _filtered_worktree(repo, vwt, sandbox)
    repo.git("config", "filter.evil.clean", _evil_driver(marker))
    result = vwt("snapshot", "filtered", "--json")
    assert_error(result, 1)
    assert not repo.ref_exists(REF.format("filtered")), "nothing written"
    assert not marker.exists(), "the repository's filter must never run"
    assert (path / "data.dat").read_text() == "after!\n"


def test_snapshot_refuses_a_filter_driver_from_an_included_config(repo, vwt, sandbox):
    _, marker = _filtered_worktree(repo, vwt, sandbox)
    included = sandbox.tmp / "filters.inc"
    included.write_text(f"[filter \"evil\"]\n\tclean = {_evil_driver(marker)}\n")
    repo.git("config", "include.path", str(included))
    result = vwt("snapshot", "filtered", "--json")
    assert_error(result, 1)
    assert not repo.ref_exists(REF.format("filtered"))
    assert not marker.exists()


def test_snapshot_refuses_a_filter_driver_from_worktree_config(repo, vwt, sandbox):
    path, marker = _filtered_worktree(repo, vwt, sandbox)
    repo.git("config", "extensions.worktreeConfig", "true")
    repo.git("config", "--worktree", "filter.evil.clean", _evil_driver(marker), cwd=path)
    result = vwt("snapshot", "filtered", "--json")
    assert_error(result, 1)
    assert not repo.ref_exists(REF.format("filtered"))
    assert not marker.exists()


def test_snapshot_accepts_a_filter_driver_from_global_config(repo, vwt, sandbox):
    _filtered_worktree(repo, vwt, sandbox)
    sandbox.git_global('[filter "evil"]\n\tclean = cat\n')
    result = vwt("snapshot", "filtered", "--json")
    assert result.code == 0, str(result)
    assert repo.ref_exists(REF.format("filtered"))
