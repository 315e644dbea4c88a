"""SIGKILL at every crash point of new / rm / prune / restore, then repair.

After each crash: no user file is lost (still in the checkout, or brought back by
`vwt restore`), nothing blocks the name forever, and one `vwt prune` (or a retry of
the command) leaves a consistent state (see `conftest.check_state`).
Abandoned empty reservations are only discarded after 10 minutes, so the tests age
`claimed_at` before the repairing prune.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import GitRepo, check_state

pytestmark = pytest.mark.timeout(120)

NEW_STEPS = ["new.reserved", "new.leased", "new.added", "new.recorded"]
RM_STEPS = ["rm.inspected", "rm.recovery_written", "rm.trashed", "rm.unregistered",
            "rm.branch_deleted", "rm.record_dropped"]
PRUNE_STEPS = ["prune.snapshotted", *RM_STEPS[1:]]
RESTORE_STEPS = ["restore.reserved", "restore.leased", "restore.added", "restore.populated",
                 "restore.recorded"]

DIRTY = {
    "README.md": "# demo\nedited by the user\n",  # tracked, modified, unstaged
    "staged.txt": "staged but never committed\n",  # new file in the index
    "work/untracked.txt": "untracked work\n",  # untracked
}


def make_dirty(checkout: Path, repo: GitRepo) -> None:
    for rel, text in DIRTY.items():
        (checkout / rel).parent.mkdir(parents=True, exist_ok=True)
        (checkout / rel).write_text(text)
    repo.git("add", "staged.txt", cwd=checkout)


def files_present(checkout: Path, expected: dict[str, str]) -> bool:
    return all((checkout / rel).is_file() and (checkout / rel).read_text() == text
               for rel, text in expected.items())


def assert_work_safe(repo: GitRepo, name: str, expected: dict[str, str]) -> None:
    """The user's files are in the checkout, or `vwt restore` brings them back."""
    checkout = repo.checkout(name)
    if repo.record_path(name).exists() and files_present(checkout, expected):
        return
    assert repo.recovery_path(name).exists(), (
        f"{name}: work is not in the checkout and there is no recovery record")
    restored = repo.vwt("restore", name, "--json")
    assert restored.returncode == 0, f"work not restorable:\n{restored}"
    assert files_present(Path(restored.json()["path"]), expected), "restored files differ"


def ref_has_files(repo: GitRepo, ref: str, expected: dict[str, str]) -> bool:
    return all(repo.git("show", f"{ref}:{rel}") == text.rstrip("\n")
               for rel, text in expected.items())


def new_worktree(repo: GitRepo, name: str = "feat") -> Path:
    return Path(repo.ok("new", name, "--json").json()["path"])


# ------------------------------------------------------------------------------------ new
@pytest.mark.parametrize("step", NEW_STEPS)
def test_new_crash_then_retry_succeeds(repo: GitRepo, step: str) -> None:
    repo.snapshot_branches()
    repo.vwt("new", "feat", "--json", crash_at=step)
    retry = repo.ok("new", "feat", "--json")
    data = retry.json()
    assert data["branch"] == "feat" and Path(data["path"]).is_dir()
    # a dead creator's clean checkout is made again (a half-copied include may be in it)
    assert data["created"] is (step != "new.recorded")
    repo.ok("prune")
    check_state(repo)


@pytest.mark.parametrize("step", NEW_STEPS)
def test_new_crash_then_prune_repairs(repo: GitRepo, step: str) -> None:
    repo.snapshot_branches()
    repo.vwt("new", "feat", "--json", crash_at=step)
    repo.ok("prune", "--json")
    check_state(repo)
    assert repo.ok("new", "feat", "--json").json()["branch"] == "feat"
    check_state(repo)


@pytest.mark.parametrize("step", NEW_STEPS)
def test_auto_named_new_crash_then_prune_repairs(repo: GitRepo, step: str) -> None:
    repo.snapshot_branches()
    repo.vwt("new", "-p", "Fix the login bug", "--json", crash_at=step)
    again = repo.ok("new", "-p", "Fix the login bug", "--json").json()
    assert again["branch"].startswith("vibe/fix-the-login-bug")
    repo.ok("prune", "--json")
    check_state(repo)


# ------------------------------------------------------------------------------------- rm
@pytest.mark.parametrize("dirty", [False, True], ids=["clean", "dirty"])
@pytest.mark.parametrize("step", RM_STEPS)
def test_rm_crash_then_retry(repo: GitRepo, step: str, dirty: bool) -> None:
    repo.snapshot_branches()
    checkout = new_worktree(repo)
    if dirty:
        make_dirty(checkout, repo)
    repo.vwt("rm", "feat", "-y", "--json", crash_at=step)
    retry = repo.vwt("rm", "feat", "-y", "--json")
    assert retry.returncode in (0, 1), str(retry)
    if retry.returncode == 1:  # the crashed run finished the job: nothing left to remove
        assert not repo.record_path("feat").exists(), str(retry)
    forgotten = retry.returncode == 0 and retry.json()["outcome"] == "forgotten"
    repo.ok("prune")
    check_state(repo)
    if dirty and forgotten:  # spec: rm of a recovery-only entry drops it; the ref stays
        assert ref_has_files(repo, "refs/vibe/reaped/feat", DIRTY)
    elif dirty:
        assert_work_safe(repo, "feat", DIRTY)
        check_state(repo)
    else:
        assert not repo.recovery_path("feat").exists(), "a clean removal left a recovery"
        repo.ok("new", "feat")  # the name is free again


@pytest.mark.parametrize("dirty", [False, True], ids=["clean", "dirty"])
@pytest.mark.parametrize("step", RM_STEPS)
def test_rm_crash_then_prune_repairs(repo: GitRepo, step: str, dirty: bool) -> None:
    repo.snapshot_branches()
    checkout = new_worktree(repo)
    if dirty:
        make_dirty(checkout, repo)
    repo.vwt("rm", "feat", "-y", "--json", crash_at=step)
    repo.ok("prune", "--json")
    check_state(repo, allow_recovery_with_record=step in ("rm.inspected",
                                                          "rm.recovery_written"))
    if dirty:
        assert_work_safe(repo, "feat", DIRTY)
    check_state(repo, allow_recovery_with_record=True)


def test_rm_dirty_with_commits_crash_after_trash_keeps_uncommitted_work(repo: GitRepo) -> None:
    """A dirty worktree that also has a commit of its own: the retry must not replace the
    snapshot of the uncommitted files by a snapshot of the bare branch tip."""
    repo.snapshot_branches()
    checkout = new_worktree(repo)
    repo.commit("work in the worktree", {"committed.txt": "committed\n"}, cwd=checkout)
    make_dirty(checkout, repo)
    repo.vwt("rm", "feat", "-y", "--json", crash_at="rm.trashed")
    repo.vwt("rm", "feat", "-y", "--json")
    repo.ok("prune")
    assert_work_safe(repo, "feat", {**DIRTY, "committed.txt": "committed\n"})


# ---------------------------------------------------------------------------------- prune
@pytest.mark.parametrize("step", PRUNE_STEPS)
def test_prune_crash_then_prune_repairs(repo: GitRepo, step: str) -> None:
    repo.snapshot_branches()
    checkout = new_worktree(repo)
    make_dirty(checkout, repo)
    repo.vwt("prune", "--keep", "0", "--json", crash_at=step)
    repo.ok("prune", "--json")
    check_state(repo, allow_recovery_with_record=step in ("prune.snapshotted",
                                                          "rm.recovery_written"))
    assert_work_safe(repo, "feat", DIRTY)
    check_state(repo, allow_recovery_with_record=True)


@pytest.mark.parametrize("step", PRUNE_STEPS)
def test_prune_crash_then_prune_keep0_again(repo: GitRepo, step: str) -> None:
    repo.snapshot_branches()
    checkout = new_worktree(repo)
    make_dirty(checkout, repo)
    repo.vwt("prune", "--keep", "0", "--json", crash_at=step)
    repo.ok("prune", "--keep", "0", "--json")
    check_state(repo)
    assert_work_safe(repo, "feat", DIRTY)
    check_state(repo)


# -------------------------------------------------------------------------------- restore
@pytest.mark.parametrize("step", RESTORE_STEPS)
def test_restore_crash_then_prune_and_retry(repo: GitRepo, step: str) -> None:
    repo.snapshot_branches()
    checkout = new_worktree(repo)
    make_dirty(checkout, repo)
    repo.ok("rm", "feat", "-y")
    repo.vwt("restore", "feat", "--json", crash_at=step)
    repo.ok("prune", "--json")
    assert_work_safe(repo, "feat", DIRTY)
    repo.ok("prune", "--json")
    check_state(repo, allow_recovery_with_record=True)


@pytest.mark.parametrize("step", RESTORE_STEPS)
def test_restore_crash_then_retry_restore(repo: GitRepo, step: str) -> None:
    """A retry of `vwt restore` finishes (or reports done) without waiting 10 minutes."""
    repo.snapshot_branches()
    checkout = new_worktree(repo)
    make_dirty(checkout, repo)
    repo.ok("rm", "feat", "-y")
    repo.vwt("restore", "feat", "--json", crash_at=step)
    retry = repo.vwt("restore", "feat", "--json")
    assert retry.returncode == 0 or files_present(checkout, DIRTY), str(retry)
    assert files_present(checkout, DIRTY)


@pytest.mark.parametrize("crash", [("rm", "rm.recovery_written"), ("rm", "rm.inspected"),
                                   ("restore", "restore.recorded")])
def test_interrupted_command_leaves_no_stale_recovery(repo: GitRepo, crash: tuple[str, str]
                                                      ) -> None:
    """After the repair, a later clean removal leaves nothing stale: no recovery.json left
    over next to a live record.  The snapshot the earlier rm took still holds work the
    target branch lacks, so the clean removal keeps it restorable with a fresh recovery
    record (SPEC §11) instead of leaving a ref no record names."""
    command, step = crash
    checkout = new_worktree(repo)
    make_dirty(checkout, repo)
    if command == "restore":
        repo.ok("rm", "feat", "-y")
        repo.vwt("restore", "feat", crash_at=step)
    else:
        repo.vwt("rm", "feat", "-y", crash_at=step)
    repo.vwt("restore", "feat")  # a retry of restore, harmless otherwise
    repo.ok("prune")
    assert files_present(checkout, DIRTY)
    repo.git("reset", "-q", "--hard", cwd=checkout)  # the user throws the changes away
    repo.git("clean", "-qfd", cwd=checkout)
    removed = repo.ok("rm", "feat", "--json")
    assert removed.json()["outcome"] == "removed"
    assert "earlier snapshot refs/vibe/reaped/feat is kept" in removed.stderr
    assert repo.vwt("doctor").returncode == 0
    repo.ok("restore", "feat", "--json")
    assert files_present(checkout, DIRTY)


def test_prune_of_a_missing_checkout_never_deletes_a_branch_checked_out_elsewhere(
        repo: GitRepo) -> None:
    """The user deleted the checkout by hand and carries on with its branch in the main
    checkout: the record is `missing`, and prune reaps it whatever the limit.  It must not
    delete the branch the user is standing on (git's `update-ref -d` does not check)."""
    checkout = new_worktree(repo)
    import shutil

    shutil.rmtree(checkout)
    repo.git("worktree", "prune")
    repo.git("checkout", "-q", "feat")
    repo.commit("carry on in the main checkout", {"more.txt": "more\n"})
    repo.ok("prune", "--json")
    assert repo.git("symbolic-ref", "HEAD") == "refs/heads/feat"
    assert "feat" in repo.branches(), "prune deleted the branch checked out in the main repo"


@pytest.mark.parametrize("repair", ["retry", "prune"])
@pytest.mark.parametrize("step", NEW_STEPS)
def test_new_of_a_pre_existing_branch_crash_never_makes_it_deletable(
        repo: GitRepo, step: str, repair: str) -> None:
    """`vwt new feat` where branch feat already exists with its own commit: whatever the
    crash, the repaired record says branch_created false and `rm` keeps the branch."""
    repo.git("branch", "feat")
    repo.git("checkout", "-q", "feat")
    tip = repo.commit("only on feat", {"feat.txt": "feat\n"})
    repo.git("checkout", "-q", "main")
    repo.vwt("new", "feat", "--json", crash_at=step)
    if repair == "retry":
        data = repo.ok("new", "feat", "--json").json()
        assert data["branch_created"] is False, data
    else:
        repo.ok("prune", "--json")
    repo.vwt("rm", "feat", "-y", "--json")
    repo.ok("prune", "--keep", "0", "--json")
    assert repo.git("rev-parse", "refs/heads/feat") == tip, "a pre-existing branch was deleted"


@pytest.mark.parametrize("step", PRUNE_STEPS)
def test_prune_batch_crash_with_several_worktrees(repo: GitRepo, step: str) -> None:
    """prune removes several worktrees as one batch; a crash in the middle of it loses
    none of them."""
    repo.snapshot_branches()
    expected = {}
    for i in range(3):
        checkout = new_worktree(repo, f"b{i}")
        files = {f"work-{i}.txt": f"work {i}\n", "README.md": f"# demo {i}\n"}
        for rel, text in files.items():
            (checkout / rel).write_text(text)
        expected[f"b{i}"] = files
    new_worktree(repo, "clean")
    repo.vwt("prune", "--keep", "0", "--json", crash_at=step)
    repo.ok("prune", "--keep", "0", "--json")
    check_state(repo)
    for name, files in expected.items():
        assert_work_safe(repo, name, files)
    check_state(repo, allow_recovery_with_record=True)
