"""`vwt prune` right after a kill, as a user runs it: no waiting period when the killed
process is provably dead.

A holder file nobody holds proves its holder died. A creation killed inside git is then
torn down (or finished) by the very next prune, with no `index.lock` left and no
half-made checkout; and the lock of a snapshot ref a killed removal or snapshot was
writing goes, so the next `rm` works. What is still running is never touched: a git that
outlives its killed `vwt` keeps its checkout until it ends.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from .conftest import GitRepo, check_state, is_locked
from .test_kill import (
    DIRTY,
    _has,
    _in_checkout_or_restorable,
    _wait_group_gone,
    _write,
    doctor_healthy,
    git_locks,
    kill_group,
    kill_inside_checkout,
    start,
    stop_in_checkout,
    tracked_files_present,
    vwt_json,
    wait_for,
)

pytestmark = pytest.mark.timeout(180)


# ------------------------------------------------------- a creation killed inside git
def test_the_next_prune_tears_down_a_creation_killed_inside_git(repo: GitRepo) -> None:
    """No aging of the record: its `.starting` holder is unlocked, so its creator is dead
    and prune does not wait the 10 minutes it gives a creation it cannot prove dead."""
    repo.snapshot_branches()
    kill_inside_checkout(repo, "new", "feat")
    admin = repo.common_dir / "worktrees" / "feat"
    assert (admin / "index.lock").exists(), "git was not inside its checkout"
    plan = vwt_json(repo, "prune", "--dry-run")
    assert [r["name"] for r in plan["reservations_discarded"]] == ["feat"]  # type: ignore[index]
    assert (admin / "index.lock").exists()  # --dry-run changes nothing
    pruned = vwt_json(repo, "prune")
    assert [r["name"] for r in pruned["reservations_discarded"]] == ["feat"]  # type: ignore[index]
    assert not admin.exists() and not repo.checkout("feat").exists()
    assert git_locks(repo) == []
    check_state(repo)
    doctor_healthy(repo)
    again = vwt_json(repo, "new", "feat")
    tracked_files_present(repo, Path(again["path"]))  # type: ignore[index]


def test_the_next_prune_undoes_a_restore_killed_inside_git(repo: GitRepo) -> None:
    """Back to a restorable snapshot at once: no half-restored checkout, no lock."""
    marker, gate = stop_in_checkout(repo)
    gate.unlink()
    checkout = Path(vwt_json(repo, "new", "feat")["path"])  # type: ignore[index]
    _write(checkout, DIRTY)
    repo.ok("rm", "feat", "-y")
    marker.unlink()
    gate.write_text("")
    proc = start(repo, "restore", "feat")
    wait_for(marker, proc)
    kill_group(proc)
    gate.unlink()
    repo.ok("prune")
    assert not checkout.exists() and not repo.record_path("feat").exists()
    assert repo.recovery_path("feat").exists()
    assert git_locks(repo) == []
    doctor_healthy(repo)
    repo.ok("restore", "feat")
    assert _has(checkout, DIRTY)


@pytest.mark.slow
def test_a_reservation_without_a_starting_file_still_waits(repo: GitRepo) -> None:
    """Not provably dead: a tool that takes no `.starting` may be creating it. Its
    reservation is left for the 10 minutes, then discarded."""
    kill_inside_checkout(repo, "new", "feat")
    (repo.claim("feat") / "holders" / ".starting").unlink()  # as if never taken
    pruned = vwt_json(repo, "prune")
    assert pruned["reservations_discarded"] == []  # type: ignore[index]
    assert (repo.checkout("feat") / ".git").is_file()
    repo.age_records(30)  # the grace period is what this test is about
    pruned = vwt_json(repo, "prune")
    assert [r["name"] for r in pruned["reservations_discarded"]] == ["feat"]  # type: ignore[index]
    doctor_healthy(repo)


@pytest.mark.slow
def test_a_git_that_outlives_its_killed_vwt_keeps_its_checkout(repo: GitRepo) -> None:
    """`vwt new` alone is killed (not its process group) while its git checks files out:
    the `.starting` holder is dead, but the git still works inside the checkout. Prune
    leaves it, and keeps the dead `.starting` as proof; once that git has ended, the next
    prune repairs at once."""
    repo.snapshot_branches()
    marker, gate = stop_in_checkout(repo)
    proc = start(repo, "new", "feat")
    wait_for(marker, proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    starting = repo.claim("feat") / "holders" / ".starting"
    assert starting.is_file() and not is_locked(starting)
    pruned = vwt_json(repo, "prune")
    assert pruned["reservations_discarded"] == []  # type: ignore[index]
    assert (repo.checkout("feat") / ".git").is_file() and starting.is_file()
    gate.unlink()
    _wait_group_gone(proc.pid)  # the git and its filter end (or die writing to vwt's pipe)
    repo.ok("prune")
    check_state(repo)
    assert git_locks(repo) == []
    doctor_healthy(repo)


# --------------------------------------------- a snapshot ref's lock a killed vwt left
def stop_in_snapshot_ref_update(repo: GitRepo, name: str) -> Path:
    """Real git stopped inside its update of `refs/vibe/reaped/<name>`: with every ref
    update logged (`core.logAllRefUpdates=always`, the repository's own config), git opens
    the ref's reflog after writing the new value into the ref's lock and before renaming it
    into place; a FIFO there keeps it waiting for a reader. Returns the FIFO."""
    repo.git("config", "core.logAllRefUpdates", "always")
    log = repo.common_dir / "logs" / "refs" / "vibe" / "reaped" / name
    log.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(log)
    return log


def kill_writing_the_snapshot_ref(repo: GitRepo, *args: str) -> Path:
    fifo = stop_in_snapshot_ref_update(repo, "feat")
    lock = repo.common_dir / "refs" / "vibe" / "reaped" / "feat.lock"
    proc = start(repo, *args)
    deadline = time.monotonic() + 60
    wait_for(lock, proc)
    while not lock.read_text().strip():  # the commit written: git waits for its reflog
        assert time.monotonic() < deadline, "git never wrote the snapshot ref's lock"
        time.sleep(0.005)
    kill_group(proc)
    fifo.unlink()
    return lock


@pytest.mark.parametrize("args", [("rm", "feat", "-y"), ("snapshot", "feat"),
                                  ("prune", "--keep", "0")], ids=["rm", "snapshot", "prune"])
def test_the_next_prune_removes_a_snapshot_refs_lock_a_killed_vwt_left(
        repo: GitRepo, args: tuple[str, ...]) -> None:
    """Left, every later `rm` of the worktree failed on it (`cannot lock ref`)."""
    checkout = Path(vwt_json(repo, "new", "feat")["path"])  # type: ignore[index]
    _write(checkout, DIRTY)
    lock = kill_writing_the_snapshot_ref(repo, *args)
    assert lock.is_file()
    repo.ok("prune")
    assert not lock.exists()
    assert _has(checkout, DIRTY)  # the kill came before anything was moved
    doctor_healthy(repo)
    removed = vwt_json(repo, "rm", "feat", "-y")
    assert removed["snapshot_ref"] == "refs/vibe/reaped/feat"  # type: ignore[index]
    assert _in_checkout_or_restorable(repo, "feat", DIRTY) is None
    doctor_healthy(repo)


@pytest.mark.slow
def test_a_snapshot_refs_lock_is_kept_while_the_worktree_is_held(repo: GitRepo,
                                                                  holder: object) -> None:
    """A live holder may be a vwt writing that ref right now: its lock is not prune's."""
    checkout = Path(vwt_json(repo, "new", "feat")["path"])  # type: ignore[index]
    _write(checkout, DIRTY)
    lock = kill_writing_the_snapshot_ref(repo, "rm", "feat", "-y")
    session = holder(repo, "feat")  # type: ignore[operator]
    repo.ok("prune")
    assert lock.is_file()
    session.release()
    a_minute_ago = time.time() - 60  # the dead rm's holder file went with that prune:
    os.utime(lock, (a_minute_ago, a_minute_ago))  # now only its age tells
    repo.ok("prune")
    assert not lock.exists()


@pytest.mark.parametrize("content", ["nothing", "a commit", "a symbolic ref"])
def test_a_snapshot_refs_lock_without_a_dead_holder_goes_only_once_old(
        repo: GitRepo, content: str) -> None:
    """No holder of the worktree died: a git of someone else's may be between writing
    that lock and renaming it, for a moment. Once older than that (10 s), a lock holding
    what `update-ref` writes goes; anything else there is never removed. Meanwhile `rm`
    says which lock stops it, and that `vwt prune` removes one a killed vwt left."""
    checkout = Path(vwt_json(repo, "new", "feat")["path"])  # type: ignore[index]
    _write(checkout, DIRTY)
    lock = repo.common_dir / "refs" / "vibe" / "reaped" / "feat.lock"
    lock.parent.mkdir(parents=True)
    text = {"nothing": "", "a commit": repo.git("rev-parse", "HEAD") + "\n",
            "a symbolic ref": "ref: refs/heads/main\n"}[content]
    lock.write_text(text)
    stuck = repo.vwt("rm", "feat", "-y")
    assert stuck.returncode == 1 and len(stuck.stderr.strip().splitlines()) == 1, str(stuck)
    assert "feat.lock" in stuck.stderr and "vwt prune" in stuck.stderr, str(stuck)
    repo.ok("prune")
    assert lock.read_text() == text
    a_minute_ago = time.time() - 60
    os.utime(lock, (a_minute_ago, a_minute_ago))
    repo.ok("prune")
    assert lock.exists() is (content == "a symbolic ref")
    if content != "a symbolic ref":
        repo.ok("rm", "feat", "-y")
        assert _in_checkout_or_restorable(repo, "feat", DIRTY) is None


@pytest.mark.slow
def test_the_next_prune_removes_the_staging_index_of_a_snapshot_killed_inside_git(
        repo: GitRepo) -> None:
    """`rm -y` killed while `git add` stages the work into its throw-away index (a clean
    filter of the user's global config waits): that index and git's lock on it were left
    in the worktree's admin folder for good (a big repository's index is many MB)."""
    sb = repo.sb
    marker, gate = sb.tmp / "inside-staging", sb.tmp / "gate"
    repo.commit("a slow file", {"a.slow": "slow\n", ".gitattributes": "*.slow filter=slow\n"})
    config = ("config", "--file", str(sb.gitconfig))
    repo.git(*config, "filter.slow.smudge", "cat")
    repo.git(*config, "filter.slow.clean",
             f"sh -c 'touch {marker}; while [ -e {gate} ]; do sleep 0.02; done; cat'")
    checkout = Path(vwt_json(repo, "new", "feat")["path"])  # type: ignore[index]
    marker.unlink(missing_ok=True)  # the checkout ran no clean filter, but be sure
    _write(checkout, {**DIRTY, "a.slow": "the user's slow edit\n"})
    gate.write_text("")
    proc = start(repo, "rm", "feat", "-y")
    wait_for(marker, proc)
    kill_group(proc)
    gate.unlink()
    admin = repo.common_dir / "worktrees" / "feat"
    assert [p.name for p in admin.glob("vwt-snapshot-*.index.lock")], "git was not staging"
    repo.ok("prune")
    assert not list(admin.glob("vwt-snapshot-*")) and git_locks(repo) == []
    doctor_healthy(repo)
    repo.ok("rm", "feat", "-y")
    assert _in_checkout_or_restorable(repo, "feat", {**DIRTY, "a.slow": "the user's slow edit\n"}) \
        is None
