"""SIGKILL at every crash point of `vwt merge`, then repair.

After each crash the worktree's commit is somewhere a user can get it back: in the
worktree, on the target branch, or in the snapshot; a rerun of `vwt merge` (or
`vwt restore`) finishes, and one `vwt prune` leaves a consistent state.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import GitRepo, check_state

pytestmark = pytest.mark.timeout(120)

MERGE_STEPS = ["merge.snapshotted", "merge.computed", "merge.target_updated",
               "merge.checkout_moved", "rm.recovery_written", "rm.trashed", "rm.unregistered",
               "rm.branch_deleted", "rm.record_dropped"]
WORK = {"committed.txt": "the worktree's work\n"}


def has_work(repo: GitRepo, rev: str) -> bool:
    return repo.git("show", f"{rev}:committed.txt", check=False) == WORK["committed.txt"].strip()


def work_is_somewhere(repo: GitRepo) -> bool:
    checkout = repo.checkout("feat")
    in_checkout = (checkout / "committed.txt").is_file() and repo.record_path("feat").exists()
    return in_checkout or has_work(repo, "main") or has_work(repo, "refs/vibe/reaped/feat")


def merge_prepared(repo: GitRepo) -> None:
    repo.snapshot_branches()
    checkout = Path(repo.ok("new", "feat", "--json").json()["path"])
    repo.commit("work in the worktree", WORK, cwd=checkout)


@pytest.mark.parametrize("step", MERGE_STEPS)
def test_merge_crash_then_rerun_and_prune_repair(repo: GitRepo, step: str) -> None:
    merge_prepared(repo)
    repo.vwt("merge", "feat", "--json", crash_at=step)
    assert work_is_somewhere(repo)
    rerun = repo.vwt("merge", "feat", "--json")
    assert rerun.returncode in (0, 1), str(rerun)
    if rerun.returncode == 0:
        assert rerun.json()["outcome"] in ("merged", "up_to_date")
    repo.ok("prune", "--json")
    check_state(repo, allow_recovery_with_record=True)
    assert has_work(repo, "main") or has_work(repo, "refs/vibe/reaped/feat")
    if not has_work(repo, "main"):  # the merge never landed: restore brings the work back
        restored = repo.ok("restore", "feat", "--json").json()
        assert (Path(restored["path"]) / "committed.txt").is_file()


@pytest.mark.parametrize("step", MERGE_STEPS)
def test_merge_crash_then_prune_alone_repairs(repo: GitRepo, step: str) -> None:
    merge_prepared(repo)
    repo.vwt("merge", "feat", "--json", crash_at=step)
    repo.ok("prune", "--json")
    check_state(repo, allow_recovery_with_record=True)
    assert work_is_somewhere(repo)
