"""A vwt killed while its git deleted a branch (SPEC §16): git deletes a ref under the ref's
own lock and `packed-refs.lock`, and a kill in between leaves them, so every later branch
deletion in the repository fails (`vwt rm`, `merge`, `land` could never delete a branch
again). vwt notes which refs it deletes before it runs that git; the next `vwt prune` removes
the empty locks a dead vwt's note names, and nothing else."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .conftest import GitRepo


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def killed_while_deleting(repo: GitRepo, branch: str, pid: int, packed: str = "") -> Path:
    """What a vwt killed inside `git update-ref` deleting `branch` leaves: its note, the
    branch's empty lock and `packed-refs.lock`."""
    note = repo.common_dir / f"vwt-deleting-{pid}-0123456789ab"
    note.write_text(f"refs/heads/{branch}\n")
    (repo.common_dir / "refs" / "heads" / f"{branch}.lock").write_text("")
    (repo.common_dir / "packed-refs.lock").write_text(packed)
    return note


def test_prune_removes_the_locks_of_a_branch_deletion_a_dead_vwt_left(repo: GitRepo) -> None:
    repo.ok("new", "kept")  # a record, so prune looks at this repository
    repo.ok("new", "gone")
    note = killed_while_deleting(repo, "gone", dead_pid())
    blocked = repo.vwt("rm", "kept", "--json").json()
    assert blocked["branch_deleted"] is False  # git cannot delete a branch meanwhile
    repo.ok("new", "later")
    pruned = repo.ok("prune")
    assert "left by a vwt killed while it deleted a branch" in pruned.stderr
    assert not (repo.common_dir / "packed-refs.lock").exists()
    assert not (repo.common_dir / "refs" / "heads" / "gone.lock").exists()
    assert not note.exists()
    removed = repo.ok("rm", "later", "--json").json()
    assert removed["outcome"] == "removed" and removed["branch_deleted"] is True


def test_a_live_vwts_deletion_is_left_alone(repo: GitRepo) -> None:
    import os

    repo.ok("new", "kept")
    note = killed_while_deleting(repo, "other", os.getpid())
    repo.ok("prune")
    assert note.exists() and (repo.common_dir / "packed-refs.lock").exists()


def test_a_packed_refs_lock_with_content_is_never_removed(repo: GitRepo) -> None:
    repo.ok("new", "kept")
    killed_while_deleting(repo, "other", dead_pid(), packed="# pack-refs with: peeled\n")
    repo.ok("prune")
    assert (repo.common_dir / "packed-refs.lock").read_text() == "# pack-refs with: peeled\n"
    assert not (repo.common_dir / "refs" / "heads" / "other.lock").exists()


def test_a_removal_leaves_no_note_behind(repo: GitRepo) -> None:
    path = Path(repo.ok("new", "feat", "--json").json()["path"])
    repo.commit("work", {"w.txt": "w\n"}, cwd=path)
    repo.ok("merge", "feat")
    assert list(repo.common_dir.glob("vwt-deleting-*")) == []
    assert not repo.ref_exists("refs/heads/feat")

