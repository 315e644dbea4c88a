"""`vwt restore` (SPEC §4 restore)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import assert_error, porcelain_paths, tree_files

NEW_KEYS = {"name", "branch", "path", "bucket", "repo_root", "base_commit", "branch_created",
            "created"}


def make_dirty(repo, path: Path) -> None:
    repo.write("README.md", "edited readme\n", base=path)
    (path / "src" / "app.py").unlink()
    repo.write("untracked.txt", "untracked\n", base=path)
    repo.write("deep/er/file.txt", "nested\n", base=path)


def remove_with_snapshot(vwt, name):
    result = vwt("rm", name, "-y", "--json")
    assert result.code == 0, str(result)
    assert result.json()["outcome"] == "removed"
    return result.json()


def test_restore_brings_back_files_exactly_on_the_recorded_branch(repo, vwt):
    created = vwt.new("undo")
    path = Path(created["path"])
    make_dirty(repo, path)
    files = tree_files(path)
    changed = porcelain_paths(repo.porcelain(path))
    head = repo.head(cwd=path)
    remove_with_snapshot(vwt, "undo")
    snapshot = repo.rev("refs/vibe/reaped/undo")

    result = vwt.ok("restore", "undo", "--json").json()
    assert result.keys() >= NEW_KEYS
    assert result["created"] is True
    assert result["name"] == "undo"
    assert result["path"] == str(path)
    assert result["branch"] == "undo"
    assert result["bucket"] == repo.bucket
    assert tree_files(path) == files
    assert not (path / "src" / "app.py").exists()
    assert porcelain_paths(repo.porcelain(path)) == changed
    assert repo.current_branch(cwd=path) == "undo"
    assert repo.head(cwd=path) == head
    assert not repo.recovery_path("undo").exists()
    assert repo.record("undo")["branch"] == "undo"
    assert repo.record("undo")["claimed_at"].endswith("Z")
    assert repo.rev("refs/vibe/reaped/undo") == snapshot, "the snapshot ref stays"
    assert vwt.entry("undo")["state"] == "ready"


def test_restore_recreates_a_deleted_branch_at_the_snapshot_parent(repo, vwt):
    path = Path(vwt.new("lost")["path"])
    committed = repo.commit("work in branch", {"feature.txt": "feature\n"}, cwd=path)
    repo.write("wip.txt", "wip\n", base=path)
    remove_with_snapshot(vwt, "lost")
    assert not repo.branch_exists("lost"), "branch_created: the branch went with the worktree"

    result = vwt.ok("restore", "lost", "--json").json()
    assert result["branch"] == "lost"
    assert repo.rev("refs/heads/lost") == committed
    assert repo.head(cwd=path) == committed
    assert (path / "wip.txt").read_text() == "wip\n"
    assert (path / "feature.txt").read_text() == "feature\n"


def test_restore_uses_the_existing_branch_when_it_did_not_move(repo, vwt):
    repo.git("branch", "keepme")
    tip = repo.rev("keepme")
    path = Path(vwt.new("keepme")["path"])
    repo.write("wip.txt", "wip\n", base=path)
    remove_with_snapshot(vwt, "keepme")
    assert repo.rev("refs/heads/keepme") == tip

    result = vwt.ok("restore", "keepme", "--json").json()
    assert result["branch"] == "keepme"
    assert repo.current_branch(cwd=path) == "keepme"
    assert (path / "wip.txt").read_text() == "wip\n"


def test_restore_onto_branch_restored_when_the_branch_moved(repo, vwt):
    repo.git("branch", "moving")
    path = Path(vwt.new("moving")["path"])
    head = repo.head(cwd=path)
    repo.write("wip.txt", "wip\n", base=path)
    remove_with_snapshot(vwt, "moving")
    repo.git("branch", "-f", "moving", "HEAD~1")  # someone moved the branch meanwhile
    moved_to = repo.rev("refs/heads/moving")

    result = vwt.ok("restore", "moving", "--json").json()
    assert result["branch"] == "moving-restored"
    assert repo.current_branch(cwd=path) == "moving-restored"
    assert repo.head(cwd=path) == head
    assert repo.rev("refs/heads/moving") == moved_to, "the moved branch is left alone"
    assert (path / "wip.txt").read_text() == "wip\n"


def test_restore_picks_the_next_free_restored_suffix(repo, vwt):
    repo.git("branch", "busy")
    path = Path(vwt.new("busy")["path"])
    repo.write("wip.txt", base=path)
    remove_with_snapshot(vwt, "busy")
    repo.git("branch", "-f", "busy", "HEAD~1")
    repo.git("branch", "busy-restored", "HEAD~2")
    result = vwt.ok("restore", "busy", "--json").json()
    assert result["branch"] == "busy-restored-2"
    assert repo.current_branch(cwd=path) == "busy-restored-2"


def test_restore_without_a_recovery_record_fails(repo, vwt):
    assert_error(vwt("restore", "never", "--json"), 1)
    vwt.new("alive")
    result = vwt("restore", "alive", "--json")
    assert result.code != 0, str(result)
    assert repo.checkout("alive").exists()


def test_restored_worktree_can_be_removed_again(repo, vwt):
    path = Path(vwt.new("twice")["path"])
    repo.write("wip.txt", base=path)
    remove_with_snapshot(vwt, "twice")
    vwt.ok("restore", "twice", "--json")
    result = vwt("rm", "twice", "--json")
    assert result.code == 3, "the restored work is dirty again and needs confirmation"
    assert path.exists()


def test_restore_keeps_executable_bits_and_symlinks(repo, vwt):
    path = Path(vwt.new("modes")["path"])
    script = repo.write("run.sh", "#!/bin/sh\necho hi\n", base=path)
    script.chmod(0o755)
    (path / "link-to-readme").symlink_to("README.md")
    (path / "src" / "app.py").chmod(0o755)  # mode change of a tracked file
    remove_with_snapshot(vwt, "modes")
    vwt.ok("restore", "modes", "--json")
    assert (path / "run.sh").stat().st_mode & 0o111
    assert (path / "src" / "app.py").stat().st_mode & 0o111
    assert (path / "link-to-readme").is_symlink()
    assert (path / "link-to-readme").readlink() == Path("README.md")


def test_restore_writes_a_fresh_complete_record(repo, vwt):
    path = Path(vwt.new("fresh-record")["path"])
    repo.edit_record("fresh-record", claimed_at="2001-01-01T00:00:00.000000Z")
    repo.write("wip.txt", base=path)
    remove_with_snapshot(vwt, "fresh-record")
    result = vwt.ok("restore", "fresh-record", "--json").json()
    record = repo.record("fresh-record")
    assert record["version"] == 1
    assert record["name"] == "fresh-record"
    assert record["branch"] == result["branch"]
    assert record["repo_root"] == str(repo.path)
    assert record["base_commit"] == result["base_commit"]
    assert record["claimed_at"] > "2001-01-01T00:00:00.000000Z"
    assert record["claimed_at"].endswith("Z")


def test_restore_never_overwrites_something_at_the_checkout_path(repo, vwt):
    path = Path(vwt.new("occupied")["path"])
    repo.write("wip.txt", "snapshot me\n", base=path)
    remove_with_snapshot(vwt, "occupied")
    repo.write("mine.txt", "written after the removal\n", base=path)
    result = vwt("restore", "occupied", "--json")
    assert result.code != 0, str(result)
    assert (path / "mine.txt").read_text() == "written after the removal\n"
    assert repo.recovery_path("occupied").exists()
    assert repo.ref_exists("refs/vibe/reaped/occupied")


def test_clean_rm_of_a_merged_then_restored_worktree_drops_its_landed_snapshot(repo, vwt):
    path = Path(vwt.new("alpha")["path"])
    repo.commit("alpha work", {"alpha.txt": "alpha\n"}, cwd=path)
    vwt.ok("merge", "alpha", "--no-fetch")
    vwt.ok("restore", "alpha")
    removed = vwt.ok("rm", "alpha", "--json").json()
    assert removed["outcome"] == "removed"
    assert not repo.ref_exists("refs/vibe/reaped/alpha")  # its work is on main: nothing lost
    assert not repo.claim("alpha").exists()
    assert vwt("doctor").code == 0, vwt("doctor").out
    assert vwt.new("alpha")["created"]  # the name is free again


def test_clean_rm_keeps_an_earlier_snapshot_with_work_of_its_own_restorable(repo, vwt):
    path = Path(vwt.new("beta")["path"])
    repo.write("idea.txt", "only in the snapshot\n", base=path)
    vwt.ok("snapshot", "beta")
    (path / "idea.txt").unlink()
    result = vwt.ok("rm", "beta", "--json")
    assert "earlier snapshot refs/vibe/reaped/beta is kept" in result.err
    assert repo.ref_exists("refs/vibe/reaped/beta")
    assert vwt("doctor").code == 0, vwt("doctor").out
    vwt.ok("restore", "beta")
    assert (path / "idea.txt").read_text() == "only in the snapshot\n"


# -- restored work is still work (SPEC §16) ------------------------------------------------------
def test_a_restored_commit_of_its_own_is_still_work(repo, vwt):
    """rm -y of a worktree with a commit, restore, plain rm: the commit is asked about again,
    and a confirmed removal snapshots it again, so restore brings it back once more."""
    path = Path(vwt.new("own")["path"])
    base = repo.head(cwd=path)
    committed = repo.commit("own work", {"own.txt": "own\n"}, cwd=path)
    remove_with_snapshot(vwt, "own")
    assert repo.recovery("own")["base_commit"] == base

    restored = vwt.ok("restore", "own", "--json").json()
    assert restored["base_commit"] == base, "the base it had before the removal"
    assert repo.record("own")["base_commit"] == base
    status = vwt.ok("status", "own", "--json").json()
    assert status["ahead"] == 1
    assert status["clean"] is False
    assert status["safe_to_remove"] is False

    snapshot = repo.rev("refs/vibe/reaped/own")
    kept = vwt("rm", "own", "--json")
    assert kept.code == 3, str(kept)
    assert kept.json()["outcome"] == "kept_dirty"
    assert "1 new commit(s)" in kept.err
    assert (path / "own.txt").read_text() == "own\n"
    assert repo.rev("refs/heads/own") == committed, "nothing deleted: the branch stays"
    assert repo.rev("refs/vibe/reaped/own") == snapshot, "nothing deleted: the snapshot stays"
    assert repo.record("own")["base_commit"] == base

    removed = vwt.ok("rm", "own", "-y", "--json").json()
    assert removed["snapshot_ref"] == "refs/vibe/reaped/own"
    assert repo.recovery("own")["base_commit"] == base
    vwt.ok("restore", "own")
    assert repo.head(cwd=path) == committed
    assert (path / "own.txt").read_text() == "own\n"
    assert vwt.ok("status", "own", "--json").json()["ahead"] == 1


def test_a_commit_restored_onto_a_restored_branch_is_still_work(repo, vwt):
    """The branch moved while the worktree was away: restored onto `<branch>-restored`, its
    commit still counts against the base it had."""
    repo.git("branch", "shared-branch")
    path = Path(vwt.new("shared-branch")["path"])
    base = repo.head(cwd=path)
    committed = repo.commit("own work", {"own.txt": "own\n"}, cwd=path)
    remove_with_snapshot(vwt, "shared-branch")  # a branch that existed before: it stays
    repo.git("branch", "-f", "shared-branch", base)  # and someone moves it meanwhile
    restored = vwt.ok("restore", "shared-branch", "--json").json()
    assert restored["branch"] == "shared-branch-restored"
    assert restored["base_commit"] == base
    assert vwt.ok("status", "shared-branch", "--json").json()["ahead"] == 1
    kept = vwt("rm", "shared-branch", "--json")
    assert kept.code == 3, str(kept)
    assert repo.rev("refs/heads/shared-branch-restored") == committed
    assert repo.ref_exists("refs/vibe/reaped/shared-branch")


def test_a_restore_after_prune_keeps_the_base(repo, vwt):
    """Retention snapshots and removes; the restored worktree's commit is still its own."""
    path = Path(vwt.new("old")["path"])
    base = repo.head(cwd=path)
    repo.commit("own work", {"own.txt": "own\n"}, cwd=path)
    vwt.ok("prune", "--keep", "0")
    assert repo.recovery("old")["base_commit"] == base
    assert vwt.ok("restore", "old", "--json").json()["base_commit"] == base
    assert vwt("rm", "old", "--json").code == 3
    assert repo.ref_exists("refs/vibe/reaped/old")


def test_merge_then_restore_then_rm_counts_the_landed_commit_as_landed(repo, vwt):
    """After a merge the restored commit is ahead of its base but already on main: a plain rm
    removes it without asking, and drops the snapshot, whose content main has."""
    path = Path(vwt.new("landed")["path"])
    base = repo.head(cwd=path)
    repo.commit("landed work", {"landed.txt": "landed\n"}, cwd=path)
    vwt.ok("merge", "landed", "--no-fetch")
    restored = vwt.ok("restore", "landed", "--json").json()
    assert restored["base_commit"] == base
    status = vwt.ok("status", "landed", "--json").json()
    assert status["ahead"] == 1
    assert status["safe_to_remove"] is True
    assert vwt.ok("rm", "landed", "--json").json()["outcome"] == "removed"
    assert not repo.ref_exists("refs/vibe/reaped/landed")
    assert vwt("doctor").code == 0, vwt("doctor").out


def test_a_recovery_record_without_a_usable_base_restores_against_the_target(repo, vwt):
    """A recovery record with no base (or one naming a commit the repository lost) gets the
    merge base with the target branch, never the snapshot's parent: the commit stays work."""
    base = repo.head()
    for name, recorded in (("nobase", None), ("lostbase", "1" * 40)):
        path = Path(vwt.new(name)["path"])
        repo.commit("own work", {f"{name}.txt": "own\n"}, cwd=path)
        remove_with_snapshot(vwt, name)
        recovery = repo.recovery(name)
        recovery["base_commit"] = recorded
        repo.recovery_path(name).write_text(json.dumps(recovery, indent=2))
        assert vwt.ok("restore", name, "--json").json()["base_commit"] == base
        assert vwt.ok("status", name, "--json").json()["ahead"] == 1
        assert vwt("rm", name, "--json").code == 3


def test_a_snapshot_holding_the_only_copy_of_its_base_is_never_dropped(repo, vwt):
    """A record an older vwt wrote at restore named the snapshot's parent (the worktree's own
    commit) as its base: a clean rm then finds the snapshot "exactly its base", but that base
    is on no other branch, so the snapshot is kept with a recovery record, not deleted."""
    path = Path(vwt.new("legacy")["path"])
    committed = repo.commit("own work", {"own.txt": "own\n"}, cwd=path)
    remove_with_snapshot(vwt, "legacy")
    vwt.ok("restore", "legacy")
    repo.edit_record("legacy", base_commit=committed)  # what restore used to write

    removed = vwt.ok("rm", "legacy", "--json")
    assert removed.json()["outcome"] == "removed"
    assert "earlier snapshot refs/vibe/reaped/legacy is kept" in removed.err
    assert repo.ref_exists("refs/vibe/reaped/legacy")
    assert vwt("doctor").code == 0, vwt("doctor").out
    vwt.ok("restore", "legacy")
    assert repo.head(cwd=path) == committed


def test_forgetting_a_snapshot_keeps_it_when_its_base_is_on_no_branch(repo, vwt):
    """The same for `rm` of a snapshot-only entry whose recovery record names the snapshot's
    parent as its base (retention of a worktree restored by an older vwt)."""
    path = Path(vwt.new("forgot")["path"])
    committed = repo.commit("own work", {"own.txt": "own\n"}, cwd=path)
    vwt.ok("prune", "--keep", "0")
    recovery = repo.recovery("forgot")
    recovery["base_commit"] = committed
    repo.recovery_path("forgot").write_text(json.dumps(recovery, indent=2))

    forgotten = vwt.ok("rm", "forgot", "--json").json()
    assert forgotten["outcome"] == "forgotten"
    assert forgotten["snapshot_ref"] == "refs/vibe/reaped/forgot"
    assert repo.git("rev-parse", "refs/vibe/reaped/forgot^1").strip() == committed


@pytest.mark.parametrize("land", [("merge",), ("merge", "--rebase"), ("sync",)],
                         ids=["merge", "merge_rebase", "sync"])
def test_a_restored_commit_is_landed_not_taken_for_already_there(repo, vwt, land):
    """The commits a merge or a sync replays are those since the base the worktree had, so a
    restored worktree's own commit lands (it used to be called "already in main", and the
    worktree removed with the commit only in its snapshot)."""
    path = Path(vwt.new("again")["path"])
    repo.commit("own work", {"own.txt": "own\n"}, cwd=path)
    remove_with_snapshot(vwt, "again")
    vwt.ok("restore", "again")
    repo.commit("main moves", {"main.txt": "main\n"})
    result = vwt.ok(land[0], "again", *land[1:], "--no-fetch", "--json").json()
    assert result["outcome"] == ("merged" if land[0] == "merge" else "synced")
    landed_in = repo.path if land[0] == "merge" else path
    assert (landed_in / "own.txt").read_text() == "own\n"
    assert (landed_in / "main.txt").read_text() == "main\n"
