"""`vwt rm`: outcomes, confirmation, snapshots, branch deletion (SPEC §4 rm, §6)."""

from __future__ import annotations

import shutil

from conftest import is_locked, tree_files, wait_for

RM_KEYS = {"name", "outcome", "branch_deleted", "snapshot_ref"}


def rm(vwt, *args, **kw):
    return vwt("rm", *args, "--json", **kw)


def assert_gone(repo, layout, name):
    path = repo.checkout(name)
    assert not path.exists()
    assert path not in repo.worktree_paths()
    assert not repo.record_path(name).exists()
    # empty claim folders are rmdir-ed; nothing left in the trash
    assert not repo.claim(name).exists()
    wait_for(lambda: not [p for p in layout.trash_entries() if f"-{name}-" in p.name], timeout=10)


def test_clean_worktree_is_removed_with_its_branch(repo, vwt, layout):
    vwt.new("done")
    result = rm(vwt, "done")
    assert result.code == 0, str(result)
    out = result.json()
    assert out.keys() >= RM_KEYS
    assert out["name"] == "done"
    assert out["outcome"] == "removed"
    assert out["branch_deleted"] is True
    assert out["snapshot_ref"] is None
    assert not repo.branch_exists("done")
    assert_gone(repo, layout, "done")
    assert not repo.recovery_path("done").exists()
    assert not repo.ref_exists("refs/vibe/reaped/done")


def test_clean_removal_frees_the_name(repo, vwt):
    vwt.new("again")
    assert rm(vwt, "again").json()["outcome"] == "removed"
    again = vwt.new("again")
    assert again["created"] is True
    assert again["branch_created"] is True


def test_dirty_worktree_is_kept_without_confirmation(repo, vwt):
    path = repo.checkout(vwt.new("wip")["name"])
    repo.write("precious.txt", "do not lose me\n", base=path)
    before = tree_files(path)
    record_before = repo.record_path("wip").read_bytes()
    result = rm(vwt, "wip")
    assert result.code == 3, str(result)
    assert result.json()["outcome"] == "kept_dirty"
    assert result.err.strip(), "stderr says what would be lost"
    assert tree_files(path) == before
    assert repo.record_path("wip").read_bytes() == record_before
    assert repo.branch_exists("wip")
    assert not repo.ref_exists("refs/vibe/reaped/wip")
    assert not repo.recovery_path("wip").exists()


def test_unpushed_commits_need_confirmation_too(repo, vwt):
    path = repo.checkout(vwt.new("committed")["name"])
    repo.commit("local work", {"feature.txt": "x\n"}, cwd=path)
    result = rm(vwt, "committed")
    assert result.code == 3, str(result)
    assert result.json()["outcome"] == "kept_dirty"
    assert path.exists()
    assert repo.branch_exists("committed")


def test_yes_snapshots_dirty_work_and_restore_brings_it_back(repo, vwt, layout):
    created = vwt.new("risky")
    path = repo.checkout("risky")
    repo.write("precious.txt", "keep\n", base=path)
    result = rm(vwt, "risky", "-y")
    assert result.code == 0, str(result)
    out = result.json()
    assert out["outcome"] == "removed"
    assert out["snapshot_ref"] == "refs/vibe/reaped/risky"
    assert repo.ref_exists("refs/vibe/reaped/risky")
    assert not path.exists()
    assert not repo.record_path("risky").exists()
    recovery = repo.recovery("risky")
    assert recovery["version"] == 1
    assert recovery["name"] == "risky"
    assert recovery["branch"] == "risky"
    assert recovery["repo_root"] == str(repo.path)
    assert recovery["base_commit"] == created["base_commit"]
    assert recovery["snapshot_ref"] == "refs/vibe/reaped/risky"
    assert recovery["removed_at"].endswith("Z")
    restored = vwt.ok("restore", "risky", "--json").json()
    assert restored["path"] == str(path)
    assert (path / "precious.txt").read_text() == "keep\n"


def test_interactive_yes_removes_dirty_work_with_a_snapshot(repo, vwt, vwt_tty):
    path = repo.checkout(vwt.new("tty-yes")["name"])
    repo.write("draft.txt", "draft\n", base=path)
    run = vwt_tty("rm", "tty-yes", answers=["y", "y"])
    assert run.code == 0, run.output
    assert run.answers_sent >= 1
    assert not path.exists()
    assert repo.ref_exists("refs/vibe/reaped/tty-yes")
    assert repo.recovery_path("tty-yes").exists()


def test_interactive_no_keeps_dirty_work(repo, vwt, vwt_tty):
    path = repo.checkout(vwt.new("tty-no")["name"])
    repo.write("draft.txt", "draft\n", base=path)
    before = tree_files(path)
    run = vwt_tty("rm", "tty-no", answers=["n", "n"])
    assert run.code == 3, run.output
    assert tree_files(path) == before
    assert repo.record_path("tty-no").exists()
    assert repo.branch_exists("tty-no")
    assert not repo.ref_exists("refs/vibe/reaped/tty-no")


def test_pre_existing_branch_is_kept_without_a_terminal(repo, vwt):
    repo.git("branch", "long-lived")
    tip = repo.rev("long-lived")
    vwt.new("long-lived")
    result = rm(vwt, "long-lived")
    assert result.code == 0, str(result)
    out = result.json()
    assert out["outcome"] == "removed"
    assert out["branch_deleted"] is False
    assert repo.rev("refs/heads/long-lived") == tip
    assert not repo.checkout("long-lived").exists()


def test_delete_branch_flag_deletes_a_pre_existing_branch(repo, vwt):
    repo.git("branch", "old-topic")
    vwt.new("old-topic")
    out = rm(vwt, "old-topic", "--delete-branch").json()
    assert out["outcome"] == "removed"
    assert out["branch_deleted"] is True
    assert not repo.branch_exists("old-topic")


def test_terminal_user_is_asked_about_a_pre_existing_branch(repo, vwt, vwt_tty):
    repo.git("branch", "ask-me")
    repo.git("branch", "ask-me-too")
    vwt.new("ask-me")
    vwt.new("ask-me-too")
    keep = vwt_tty("rm", "ask-me", answers=["n"])
    assert keep.code == 0, keep.output
    assert keep.answers_sent == 1, keep.output
    assert repo.branch_exists("ask-me")
    assert not repo.checkout("ask-me").exists()
    delete = vwt_tty("rm", "ask-me-too", answers=["y"])
    assert delete.code == 0, delete.output
    assert not repo.branch_exists("ask-me-too")


def test_foreign_holder_keeps_the_worktree_in_use_even_with_yes(repo, vwt, holder, layout):
    path = repo.checkout(vwt.new("held")["name"])
    h = holder(repo.bucket, "held")
    result = rm(vwt, "held", "-y")
    assert result.code == 4, str(result)
    assert result.json()["outcome"] == "kept_in_use"
    assert path.exists()
    assert repo.record_path("held").exists()
    assert repo.branch_exists("held")
    # the holder dies without cleaning up: its file is stale and no longer blocks removal
    h.kill()
    assert h.path.exists()
    result = rm(vwt, "held")
    assert result.code == 0, str(result)
    assert result.json()["outcome"] == "removed"
    path_gone = not path.exists() and path not in repo.worktree_paths()
    assert path_gone
    assert not repo.record_path("held").exists()
    assert not repo.branch_exists("held")
    # a stale holder file may be left behind; it is not live, and prune drops it
    assert not h.path.exists() or not is_locked(h.path)
    assert vwt("prune", "--json").code == 0
    assert not h.path.exists()


def test_live_removing_holder_blocks_another_removal(repo, vwt, holder):
    path = repo.checkout(vwt.new("busy")["name"])
    holder(repo.bucket, "busy", ".removing")
    result = rm(vwt, "busy", "-y")
    assert result.code == 4, str(result)
    assert result.json()["outcome"] == "kept_in_use"
    assert path.exists()


def test_unknown_name_is_not_found(repo, vwt):
    result = rm(vwt, "nobody")
    assert result.code in (0, 1), str(result)
    if result.out.strip():
        assert result.json()["outcome"] == "not_found"
    else:
        assert result.code == 1


def test_recovery_only_entry_is_forgotten_and_its_ref_kept(repo, vwt):
    path = repo.checkout(vwt.new("old")["name"])
    repo.write("wip.txt", base=path)
    assert rm(vwt, "old", "-y").code == 0
    snapshot = repo.rev("refs/vibe/reaped/old")
    result = rm(vwt, "old")
    assert result.code == 0, str(result)
    assert result.json()["outcome"] == "forgotten"
    assert not repo.recovery_path("old").exists()
    assert not repo.claim("old").exists()
    assert repo.rev("refs/vibe/reaped/old") == snapshot
    assert result.json()["snapshot_ref"] == "refs/vibe/reaped/old"
    assert "its snapshot stays at refs/vibe/reaped/old" in result.err
    assert "git update-ref -d refs/vibe/reaped/old" in result.err
    assert vwt.entry("old") is None
    assert vwt.new("old")["created"] is True


def test_rm_of_a_merged_snapshot_only_entry_deletes_its_snapshot(repo, vwt):
    """Merge, then rm: main has all of it, so the ref goes too and doctor stays healthy."""
    path = repo.checkout(vwt.new("alpha")["name"])
    repo.commit("alpha work", {"alpha.txt": "alpha\n"}, cwd=path)
    vwt.ok("merge", "alpha", "--no-fetch")
    assert vwt.entry("alpha")["state"] == "snapshot"
    result = rm(vwt, "alpha")
    assert result.code == 0, str(result)
    assert (result.json()["outcome"], result.json()["snapshot_ref"]) == ("forgotten", None)
    assert "deleted its snapshot refs/vibe/reaped/alpha: the target branch already has" in (
        result.err)
    assert not repo.ref_exists("refs/vibe/reaped/alpha")
    assert not repo.claim("alpha").exists()
    assert vwt("doctor").code == 0, vwt("doctor").out
    plain = vwt("rm", "alpha")  # nothing left: the name is unknown now
    assert plain.code == 1


def test_rm_of_a_pruned_untouched_entry_deletes_its_snapshot_even_off_the_target(repo, vwt):
    """A snapshot that is exactly its base holds nothing, even when the target lacks that
    base (a worktree started from another branch)."""
    repo.git("branch", "side")
    side = repo.commit("side only", {"side.txt": "side\n"})
    repo.git("reset", "--hard", "HEAD~1")
    repo.git("branch", "-f", "side", side)
    vwt.new("idle", "--from", "side", "--no-fetch")
    vwt.ok("prune", "--keep", "0")
    assert repo.ref_exists("refs/vibe/reaped/idle")
    result = vwt.ok("rm", "idle")
    assert result.out == "forgotten idle\n"
    assert "held nothing beyond the commit it started from" in result.err
    assert not repo.ref_exists("refs/vibe/reaped/idle")
    assert vwt("doctor").code == 0, vwt("doctor").out


def test_clean_rm_drops_an_earlier_snapshot_that_is_exactly_its_base(repo, vwt):
    repo.git("branch", "side")
    side = repo.commit("side only", {"side.txt": "side\n"})
    repo.git("reset", "--hard", "HEAD~1")
    repo.git("branch", "-f", "side", side)
    vwt.new("idle", "--from", "side", "--no-fetch")
    vwt.ok("snapshot", "idle")
    assert rm(vwt, "idle").json()["outcome"] == "removed"
    assert not repo.ref_exists("refs/vibe/reaped/idle")
    assert not repo.claim("idle").exists()


def test_rm_of_a_pruned_entry_with_unlanded_commits_keeps_its_snapshot(repo, vwt):
    path = repo.checkout(vwt.new("busy")["name"])
    repo.commit("busy work", {"busy.txt": "busy\n"}, cwd=path)
    vwt.ok("prune", "--keep", "0")
    snapshot = repo.rev("refs/vibe/reaped/busy")
    result = vwt.ok("rm", "busy")
    assert result.out == "forgotten busy (snapshot refs/vibe/reaped/busy)\n"
    assert "it has work the target branch lacks" in result.err
    assert repo.rev("refs/vibe/reaped/busy") == snapshot
    assert vwt("doctor").code == 1  # SPEC §11: forgetting unlanded work is not ordinary use


def test_removal_works_from_inside_the_checkout(repo, vwt, layout):
    path = repo.checkout(vwt.new("here")["name"])
    assert (path / "src").is_dir()
    result = vwt("rm", "here", "--json", cwd=path / "src")
    assert result.code == 0, str(result)
    assert result.json()["outcome"] == "removed"
    assert_gone(repo, layout, "here")


def test_removal_of_a_corrupt_record_deletes_nothing(repo, vwt):
    path = repo.checkout(vwt.new("weird")["name"])
    repo.record_path("weird").write_text("{ broken")
    files = tree_files(path)
    result = rm(vwt, "weird", "-y")
    assert result.code != 0, str(result)
    assert path.exists()
    assert tree_files(path) == files
    assert repo.record_path("weird").read_text() == "{ broken"
    assert repo.branch_exists("weird")
    assert path in repo.worktree_paths()


def test_removal_does_not_follow_a_symlinked_checkout(repo, vwt, sandbox):
    path = repo.checkout(vwt.new("trap")["name"])
    target = sandbox.tmp / "real-files"
    target.mkdir()
    (target / "important.txt").write_text("not yours\n")
    shutil.rmtree(path)
    repo.git("worktree", "prune")
    path.symlink_to(target, target_is_directory=True)
    vwt("rm", "trap", "-y", "--json")
    assert (target / "important.txt").read_text() == "not yours\n"


def test_live_starting_holder_blocks_removal(repo, vwt, holder):
    path = repo.checkout(vwt.new("creating")["name"])
    holder(repo.bucket, "creating", ".starting")
    result = rm(vwt, "creating")
    assert result.code == 4, str(result)
    assert result.json()["outcome"] == "kept_in_use"
    assert path.exists()


def test_delete_branch_does_not_bypass_confirmation(repo, vwt):
    repo.git("branch", "topic")
    path = repo.checkout(vwt.new("topic")["name"])
    repo.write("wip.txt", base=path)
    result = rm(vwt, "topic", "--delete-branch")
    assert result.code == 3, str(result)
    assert result.json()["outcome"] == "kept_dirty"
    assert repo.branch_exists("topic")
    assert (path / "wip.txt").exists()


def test_removal_does_not_follow_a_symlinked_bucket(repo, vwt, sandbox, layout):
    path = repo.checkout(vwt.new("inbucket")["name"])
    real_bucket = sandbox.tmp / "real-bucket"
    shutil.move(str(path.parent), str(real_bucket))
    path.parent.symlink_to(real_bucket, target_is_directory=True)
    files = tree_files(real_bucket / "inbucket")
    result = rm(vwt, "inbucket", "-y")
    assert result.code != 0 or result.json()["outcome"] != "removed", str(result)
    assert tree_files(real_bucket / "inbucket") == files


def test_names_that_escape_the_bucket_touch_nothing(repo, vwt, layout):
    path = repo.checkout(vwt.new("victim")["name"])
    files = tree_files(path)
    for name in ("..", ".", f"../{repo.bucket}/victim", "victim/", "../../..", str(path)):
        for cmd in (["rm", name, "-y", "--json"], ["snapshot", name, "--json"]):
            result = vwt(*cmd)
            assert result.code in (1, 2), str(result)
    assert tree_files(path) == files
    assert repo.record_path("victim").exists()
    assert path in repo.worktree_paths()
    assert not repo.ref_exists("refs/vibe/reaped/victim")
    assert layout.root.is_dir() and layout.claims.is_dir()


def test_claim_folder_is_never_deleted_recursively(repo, vwt):
    vwt.new("annotated")
    foreign = repo.claim("annotated") / "vibe-notes.txt"
    foreign.write_text("another tool's file\n")
    result = rm(vwt, "annotated")
    assert result.code == 0, str(result)
    assert result.json()["outcome"] == "removed"
    assert not repo.record_path("annotated").exists()
    assert foreign.read_text() == "another tool's file\n"


def test_a_live_holder_is_checked_before_dirty_work(repo, vwt, holder):
    path = repo.checkout(vwt.new("both")["name"])
    repo.write("wip.txt", base=path)
    holder(repo.bucket, "both")
    result = rm(vwt, "both")
    assert result.code == 4, str(result)
    assert result.json()["outcome"] == "kept_in_use"
    assert (path / "wip.txt").exists()


def test_rm_waits_out_a_worktree_another_session_is_adding(repo, vwt):
    """`git worktree add` in another session writes its admin files one by one; a listing
    that meets a half-written one fails. rm retries it instead of failing (B11 saw this)."""
    import threading
    import time

    vwt.new("done")
    half = repo.common_dir / "worktrees" / "being-added"
    half.mkdir(parents=True)
    checkout = repo.path.parent / "being-added"
    checkout.mkdir()
    (checkout / ".git").write_text(f"gitdir: {half}\n")
    (half / "HEAD").write_text("ref: refs/heads/main\n")
    (half / "gitdir").write_text(f"{checkout}/.git\n")
    (half / "commondir").write_text("")  # what git has written so far

    def finish_writing() -> None:
        time.sleep(0.15)
        (half / "commondir").write_text("../..\n")

    writer = threading.Thread(target=finish_writing)
    writer.start()
    try:
        removed = vwt.ok("rm", "done", "--json").json()
    finally:
        writer.join()
    assert removed["outcome"] == "removed"
    assert not repo.checkout("done").exists()
