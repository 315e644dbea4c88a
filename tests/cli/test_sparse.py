"""Sparse checkouts: `--sparse DIR` or `sparse = [...]`, kept in the record and by restore,
never seen as deletions by status or a snapshot."""

from __future__ import annotations

from pathlib import Path

from conftest import Repo, Sandbox, Vwt, assert_error


def three_folders(repo: Repo) -> None:
    repo.commit("folders", {"app/main.py": "app\n", "docs/guide.md": "docs\n",
                            "lib/util/x.py": "x\n", "lib/other.py": "o\n",
                            "top.txt": "top\n"})


def test_sparse_worktree_holds_only_its_folders_and_the_top_level_files(
        repo: Repo, vwt: Vwt) -> None:
    three_folders(repo)
    doc = vwt.new("slim", "--sparse", "app", "--sparse", "lib/util/")
    checkout = Path(doc["path"])
    assert doc["sparse"] == ["app", "lib/util"]
    assert (checkout / "app" / "main.py").is_file()
    assert (checkout / "lib" / "util" / "x.py").is_file()
    assert (checkout / "top.txt").is_file()
    assert not (checkout / "docs").exists()
    assert (checkout / "lib" / "other.py").is_file(), "cone mode: files of parent folders too"
    assert repo.record("slim")["sparse"] == ["app", "lib/util"]
    status = vwt.ok("status", "slim", "--json").json()
    assert status["changes"] == 0 and status["clean"] is True


def test_a_snapshot_never_records_the_absent_folders_as_deleted_and_restore_keeps_the_set(
        repo: Repo, vwt: Vwt) -> None:
    three_folders(repo)
    doc = vwt.new("slim", "--sparse", "app")
    checkout = Path(doc["path"])
    (checkout / "app" / "new.py").write_text("work\n")
    snap = vwt.ok("snapshot", "slim", "--json").json()
    files = repo.git("ls-tree", "-r", "--name-only", snap["commit"]).split("\n")
    assert {"docs/guide.md", "lib/other.py", "app/new.py", "app/main.py"} <= set(files)

    vwt.ok("rm", "slim", "-y")
    assert repo.recovery("slim")["sparse"] == ["app"]
    restored = vwt.ok("restore", "slim", "--json").json()
    assert restored["sparse"] == ["app"]
    assert (checkout / "app" / "new.py").read_text() == "work\n"
    assert not (checkout / "docs").exists()
    assert repo.porcelain(checkout).strip() == "?? app/new.py"
    assert repo.record("slim")["sparse"] == ["app"]


def test_the_start_points_worktree_toml_gives_the_sparse_set(repo: Repo, vwt: Vwt) -> None:
    three_folders(repo)
    repo.commit("sparse", {".vibe/worktree.toml": 'sparse = ["docs"]\n'})
    doc = vwt.new("from-config")
    checkout = Path(doc["path"])
    assert doc["sparse"] == ["docs"]
    assert (checkout / "docs" / "guide.md").is_file() and not (checkout / "app").exists()
    full = vwt.new("explicit", "--sparse", "app")
    assert full["sparse"] == ["app"]


def test_a_sparse_worktree_runs_the_project_hooks_of_its_start_point(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    three_folders(repo)
    marker = sandbox.tmp / "ran"
    repo.commit("hooks", {".vibe/worktree.toml":
                          f'[[hooks]]\nname = "deps"\ntype = "post_create"\n'
                          f'command = "touch {marker}"\n'})
    vwt.ok("hooks", "approve", "--all", cwd=repo.path)
    doc = vwt.new("slim", "--sparse", "app")
    assert not (Path(doc["path"]) / ".vibe").exists()
    assert doc["hooks"][0]["status"] == "ok" and marker.exists()


def test_a_sparse_folder_outside_the_repository_is_bad_usage(repo: Repo, vwt: Vwt) -> None:
    for bad in ("../elsewhere", "/etc", "a/../b"):
        result = vwt("new", "slim", "--sparse", bad, cwd=repo.path)
        assert_error(result, 2)
    assert vwt.list(cwd=repo.path) == []


def test_a_restored_sparse_worktree_runs_the_project_hooks_of_its_own_head(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    """Its base is the one it had before the removal (SPEC §16); its hooks are still those of
    the commit it is restored at, which may be its own."""
    three_folders(repo)
    doc = vwt.new("slim", "--sparse", "app")
    checkout = Path(doc["path"])
    marker = sandbox.tmp / "ran"
    repo.write(".vibe/worktree.toml", f'[[hooks]]\nname = "deps"\ntype = "post_create"\n'
                                      f'command = "touch {marker}"\n', base=checkout)
    repo.git("add", "--sparse", ".vibe/worktree.toml", cwd=checkout)
    repo.git("commit", "-q", "-m", "hooks of its own", cwd=checkout)
    vwt.ok("hooks", "approve", "--all", cwd=checkout)
    vwt.ok("rm", "slim", "-y")
    restored = vwt.ok("restore", "slim", "--json").json()
    assert restored["base_commit"] == doc["base_commit"]
    assert restored["hooks"][0]["status"] == "ok" and marker.exists()
