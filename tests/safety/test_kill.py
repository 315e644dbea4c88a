"""SIGKILL of vwt's whole process group in the middle of things, inside git included.

`test_crash.py` stops vwt between its own steps (`VWT_CRASH_AT`). Here the kill comes
from outside, as an agent host's would: vwt runs in a session of its own and the test
kills the whole group (vwt and every git it started), either at a moment a git command
is proven to be inside (a smudge filter that waits for the test), or at randomised
moments spread over the command's measured duration. After each kill: nothing the user
wrote is lost, one `vwt prune` repairs, `vwt doctor` is healthy, and the command run
again succeeds (or reuses).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import ClassVar

import pytest

from conftest import VWT_BIN as VWT

from .conftest import GitRepo, check_state, is_locked

pytestmark = pytest.mark.timeout(180)


# ------------------------------------------------------------------------------- helpers
def start(repo: GitRepo, *args: str) -> subprocess.Popen[str]:
    """vwt in a session (and process group) of its own, as an agent host starts it."""
    return subprocess.Popen([VWT, *args], cwd=repo.path, env=repo.sb.env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL vwt and every git it started (they share its process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate(timeout=30)
    _wait_group_gone(proc.pid)


def _wait_group_gone(pgid: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)
    raise AssertionError(f"process group {pgid} survived SIGKILL")


def wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"vwt ended before {path.name} appeared:\n{out}\n{err}")
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.005)


def stop_in_checkout(repo: GitRepo, files: int = 20) -> tuple[Path, Path]:
    """A smudge filter (the user's global config, run as by `git worktree add` by hand) that
    says when git is checking files out and then waits while the `gate` file exists:
    a kill at that moment lands inside git's checkout."""
    sb = repo.sb
    marker, gate = sb.tmp / "inside-checkout", sb.tmp / "gate"
    repo.commit("files", {**{f"f{i}.txt": f"{i}\n" for i in range(files)},
                          "a.slow": "slow\n", ".gitattributes": "*.slow filter=slow\n"})
    config = ("config", "--file", str(sb.gitconfig))  # global: a snapshot may run it
    repo.git(*config, "filter.slow.clean", "cat")
    repo.git(*config, "filter.slow.smudge",
             f"sh -c 'touch {marker}; while [ -e {gate} ]; do sleep 0.02; done; cat'")
    gate.write_text("")
    return marker, gate


def vwt_json(repo: GitRepo, *args: str) -> object:
    return repo.ok(*args, "--json").json()


def doctor_healthy(repo: GitRepo) -> None:
    run = repo.vwt("doctor", "--json")
    assert run.returncode == 0 and run.json()["healthy"], str(run)


def state_of(repo: GitRepo, name: str) -> str | None:
    for item in repo.ok("list", "--json").json():
        if item["name"] == name:
            return str(item["state"])
    return None


def tracked_files_present(repo: GitRepo, checkout: Path) -> None:
    assert repo.git("status", "--porcelain", cwd=checkout) == "", "the checkout is not whole"
    for rel in repo.git("ls-files", cwd=checkout).splitlines():
        assert (checkout / rel).is_file(), f"{rel} is missing from {checkout}"
    (checkout / "new.txt").write_text("new\n")
    repo.git("add", "new.txt", cwd=checkout)  # git can write its index there


def kill_inside_checkout(repo: GitRepo, *args: str) -> None:
    marker, gate = stop_in_checkout(repo)
    proc = start(repo, *args)
    wait_for(marker, proc)
    kill_group(proc)
    gate.unlink()


# ----------------------------------------------- a `new` killed inside `git worktree add`
def test_new_killed_inside_git_checkout_is_never_recorded_ready(repo: GitRepo) -> None:
    repo.snapshot_branches()
    kill_inside_checkout(repo, "new", "feat")
    admin = repo.common_dir / "worktrees" / "feat"
    assert (admin / "locked").read_text().strip() == "initializing"  # git was mid-checkout
    assert repo.record("feat")["base_commit"] is None
    assert state_of(repo, "feat") == "reserved"
    again = vwt_json(repo, "new", "feat")
    assert isinstance(again, dict)
    assert again["created"] is True and again["base_commit"] is not None
    assert again["branch_created"] is True  # made by the killed add: still ours to delete
    tracked_files_present(repo, Path(again["path"]))
    assert state_of(repo, "feat") == "ready"
    doctor_healthy(repo)
    repo.git("reset", "-q", cwd=Path(again["path"]))
    (Path(again["path"]) / "new.txt").unlink()
    assert repo.ok("rm", "feat", "--json").json()["branch_deleted"] is True
    check_state(repo)


@pytest.mark.slow
@pytest.mark.parametrize("repair", ["new", "prune"])
@pytest.mark.parametrize("inside", ["git branch", "the checkout's reset"])
def test_new_killed_while_git_held_the_new_branchs_lock_is_made_again(
        repo: GitRepo, repair: str, inside: str) -> None:
    """Killed inside `git worktree add -b feat` while git held `refs/heads/feat.lock` (a
    reference-transaction hook of the repository's, which that git runs as the user's own
    would, waits in `prepared`): in its `git branch` (the branch not made yet), or in the
    `git reset --hard` that checks the files out (HEAD, so the branch, set to its own tip).
    `vwt new feat` again takes the dead creator's reservation over and removes the lock (it
    holds the start commit, what that git was writing); or `vwt prune` removes it (no
    branch yet and a lock newer than the reservation holding a commit, or a lock holding
    the branch's own tip)."""
    marker, gate = repo.sb.tmp / "inside-ref-update", repo.sb.tmp / "gate"
    hook = repo.path / ".git" / "hooks" / "reference-transaction"
    created = "^0\\{40\\} " if inside == "git branch" else "^[0-9a-f]*[1-9a-f][0-9a-f]* "
    hook.write_text(f"#!/bin/sh\n[ \"$1\" = prepared ] || exit 0\n"
                    f"grep -q '{created}.* refs/heads/feat$' || exit 0\n"
                    f"touch {marker}; while [ -e {gate} ]; do sleep 0.02; done\n")
    hook.chmod(0o755)
    gate.write_text("")
    proc = start(repo, "new", "feat")
    wait_for(marker, proc)
    kill_group(proc)
    gate.unlink()
    hook.unlink()
    lock = repo.common_dir / "refs" / "heads" / "feat.lock"
    assert lock.read_text().strip() in ("", repo.git("rev-parse", "HEAD"))  # git's, so far
    if repair == "prune":
        repo.ok("prune")
        assert not lock.exists()
        doctor_healthy(repo)
    again = vwt_json(repo, "new", "feat")
    assert isinstance(again, dict) and again["created"] is True
    assert again["branch_created"] is True and not lock.exists()
    tracked_files_present(repo, Path(again["path"]))


def test_prune_keeps_a_branch_lock_older_than_the_creation(repo: GitRepo) -> None:
    """A lock taken before the reservation began is not the killed creation's git's."""
    repo.vwt("new", "feat", crash_at="new.reserved")
    lock = repo.common_dir / "refs" / "heads" / "feat.lock"
    lock.write_text(repo.git("rev-parse", "HEAD") + "\n")
    hour_ago = time.time() - 3600
    os.utime(lock, (hour_ago, hour_ago))
    repo.ok("prune")
    assert lock.exists()


def test_prune_discards_a_creation_killed_inside_git_checkout(repo: GitRepo) -> None:
    repo.snapshot_branches()
    kill_inside_checkout(repo, "new", "-p", "fix the login")
    doctor = repo.vwt("doctor", "--json")
    assert doctor.returncode == 1
    kinds = {p["kind"] for p in doctor.json()["problems"]}
    assert kinds == {"half_made_checkout", "stale_holder"}  # the dead creator's .starting
    pruned = vwt_json(repo, "prune")
    assert isinstance(pruned, dict)
    assert [r["name"] for r in pruned["reservations_discarded"]] == ["fix-the-login"]
    check_state(repo)  # the checkout, git's entry and the branch git made are gone
    doctor_healthy(repo)
    again = vwt_json(repo, "new", "-p", "fix the login")
    assert isinstance(again, dict) and again["name"] == "fix-the-login"
    tracked_files_present(repo, Path(again["path"]))


@pytest.mark.slow
def test_a_ready_record_of_a_checkout_git_never_finished_is_reported_and_repaired(
        repo: GitRepo) -> None:
    """What an older vwt left: it adopted the killed creation and recorded it ready."""
    kill_inside_checkout(repo, "new", "feat")
    record = repo.record("feat")
    record["base_commit"] = repo.git("rev-parse", "HEAD")
    repo.record_path("feat").write_text(json.dumps(record, indent=2))
    checkout = repo.checkout("feat")
    (checkout / "mine.txt").write_text("the user wrote this\n")
    reuse = repo.vwt("new", "feat", "--json")
    assert reuse.returncode == 1 and "vwt prune" in reuse.stderr, str(reuse)
    assert len(reuse.stderr.strip().splitlines()) == 1
    doctor = repo.vwt("doctor", "--json")
    assert doctor.returncode == 1
    assert ("unfinished_checkout", "vwt prune") in {
        (p["kind"], p["fix"]) for p in doctor.json()["problems"]}
    repo.ok("prune", "--json")
    assert (checkout / "mine.txt").read_text() == "the user wrote this\n"
    repo.git("checkout", "--", ".", cwd=checkout)  # what prune's warning tells the user
    repo.git("add", "mine.txt", cwd=checkout)
    assert repo.git("status", "--porcelain", cwd=checkout) == "A  mine.txt"
    doctor_healthy(repo)
    assert vwt_json(repo, "new", "feat")["created"] is False  # type: ignore[index]



# ---------------------------------------------------- a `restore` killed inside git
def kill_restore_inside_checkout(repo: GitRepo) -> Path:
    """`feat` holds dirty work, is removed with a snapshot, and its restore is killed while
    git writes the snapshot's files back (the smudge filter of a `.slow` file waits)."""
    marker, gate = stop_in_checkout(repo)
    gate.unlink()  # the first creation runs through
    checkout = Path(vwt_json(repo, "new", "feat")["path"])  # type: ignore[index]
    for rel, text in WORK.items():
        (checkout / rel).write_text(text)
    repo.ok("rm", "feat", "-y")
    marker.unlink()
    gate.write_text("")
    proc = start(repo, "restore", "feat")
    wait_for(marker, proc)
    kill_group(proc)
    gate.unlink()
    return checkout


WORK = {"b.slow": "the user's slow file\n", "notes.txt": "the user's notes\n",
        "f1.txt": "edited by the user\n"}


def work_in(checkout: Path) -> bool:
    return all((checkout / rel).is_file() and (checkout / rel).read_text() == text
               for rel, text in WORK.items())


@pytest.mark.slow
def test_restore_killed_inside_git_is_finished_by_a_retry(repo: GitRepo) -> None:
    checkout = kill_restore_inside_checkout(repo)
    retry = repo.vwt("restore", "feat", "--json")
    assert retry.returncode == 0, str(retry)
    assert work_in(checkout)
    assert not (repo.common_dir / "worktrees" / "feat" / "index.lock").exists()
    repo.git("add", "-A", cwd=checkout)  # the user's git works there
    repo.ok("prune")
    doctor_healthy(repo)


def test_restore_killed_inside_git_is_repaired_by_prune(repo: GitRepo) -> None:
    checkout = kill_restore_inside_checkout(repo)
    repo.ok("prune", "--json")
    doctor_healthy(repo)
    if not work_in(checkout):  # put back to a restorable snapshot: restore brings it all
        repo.ok("restore", "feat")
    assert work_in(checkout)
    repo.git("add", "-A", cwd=checkout)


def kill_restore_holding_the_branch_lock(repo: GitRepo) -> Path:
    """`feat` is removed with a snapshot; its restore runs `git worktree add -b feat`, and
    is killed while git holds `refs/heads/feat.lock` (a reference-transaction hook of the
    repository's, which `worktree add` runs as the user's git would, waits in `prepared`:
    git has taken the lock and written the new value into it)."""
    checkout = Path(vwt_json(repo, "new", "feat")["path"])  # type: ignore[index]
    for rel, text in WORK.items():
        (checkout / rel).write_text(text)
    repo.ok("rm", "feat", "-y")
    marker, gate = repo.sb.tmp / "inside-ref-update", repo.sb.tmp / "gate"
    hook = repo.path / ".git" / "hooks" / "reference-transaction"
    hook.write_text(f"#!/bin/sh\n[ \"$1\" = prepared ] || exit 0\n"
                    f"grep -q ' refs/heads/feat$' || exit 0\n"
                    f"touch {marker}; while [ -e {gate} ]; do sleep 0.02; done\n")
    hook.chmod(0o755)
    gate.write_text("")
    proc = start(repo, "restore", "feat")
    wait_for(marker, proc)
    kill_group(proc)
    gate.unlink()
    hook.unlink()
    return checkout


@pytest.mark.slow
@pytest.mark.parametrize("repair", ["restore", "prune"])
def test_a_branch_lock_a_killed_restore_left_is_removed(repo: GitRepo, repair: str) -> None:
    """The campaign's seed 16104976: the lock outlived the kill and every restore failed."""
    checkout = kill_restore_holding_the_branch_lock(repo)
    lock = repo.common_dir / "refs" / "heads" / "feat.lock"
    assert lock.is_file(), "git was not inside its ref update"
    if repair == "prune":
        repo.ok("prune")
        assert not lock.exists()
    retry = repo.vwt("restore", "feat", "--json")
    assert retry.returncode == 0, str(retry)
    assert work_in(checkout) and not lock.exists()
    repo.git("add", "-A", cwd=checkout)
    doctor_healthy(repo)


@pytest.mark.slow
def test_a_branch_lock_holding_something_else_is_never_removed(repo: GitRepo) -> None:
    """A lock with a value the killed restore's git never wrote is not provably its own."""
    kill_restore_holding_the_branch_lock(repo)
    lock = repo.common_dir / "refs" / "heads" / "feat.lock"
    other = repo.git("rev-parse", "HEAD~1")
    lock.write_text(f"{other}\n")
    retry = repo.vwt("restore", "feat", "--json")
    assert retry.returncode == 1 and "feat.lock" in retry.stderr, str(retry)
    assert lock.read_text() == f"{other}\n"
    repo.ok("prune")
    assert lock.read_text() == f"{other}\n"


@pytest.mark.parametrize("branch", ["deleted", "still there"])
def test_restore_after_an_rm_killed_while_deleting_the_branch(repo: GitRepo, branch: str) -> None:
    """A random kill seed (12189236, `rm -y` at 0.129 s) left `refs/heads/feat.lock` of
    rm's branch deletion (git takes it, empty, to delete the ref), and every restore failed.
    With no removal alive, restore removes a lock on that branch holding nothing or the
    snapshot's parent (the branch's tip when it was removed)."""
    checkout = Path(vwt_json(repo, "new", "feat")["path"])  # type: ignore[index]
    tip = repo.git("rev-parse", "feat")
    _write(checkout, DIRTY)
    repo.ok("rm", "feat", "-y")
    if branch == "still there":  # killed before git removed the ref
        repo.git("update-ref", "refs/heads/feat", tip)
    lock = repo.common_dir / "refs" / "heads" / "feat.lock"
    lock.write_text("")
    repo.ok("prune")
    doctor_healthy(repo)
    restored = repo.vwt("restore", "feat", "--json")
    assert restored.returncode == 0, str(restored)
    assert _has(checkout, DIRTY) and not lock.exists()


# ------------------------------------- a `sync` killed while it moves the worktree's files
def kill_sync_inside_checkout(repo: GitRepo) -> Path:
    """`feat` has a commit of its own and main has moved on with new files, one of them a
    `.slow` file whose smudge filter (the user's global config) waits: `vwt sync feat` is
    killed while git writes main's files into the worktree (the campaign's seed 2832237)."""
    marker, gate = stop_in_checkout(repo)
    gate.unlink()
    checkout = Path(vwt_json(repo, "new", "feat")["path"])  # type: ignore[index]
    repo.commit("work", {"feature.txt": "the worktree's commit\n"}, cwd=checkout)
    repo.commit("main moves on", {"upstream.txt": "upstream\n", "u.slow": "slow upstream\n",
                                  "zz-after.txt": "written after the slow file\n"})
    marker.unlink()
    gate.write_text("")
    proc = start(repo, "sync", "feat")
    wait_for(marker, proc)
    kill_group(proc)
    gate.unlink()
    return checkout


def synced_cleanly(repo: GitRepo, checkout: Path) -> None:
    assert repo.git("status", "--porcelain", "--untracked-files=all", cwd=checkout) == ""
    assert repo.git("merge-base", "--is-ancestor", "main", "feat", check=False) == ""
    assert (checkout / "feature.txt").read_text() == "the worktree's commit\n"
    assert (checkout / "u.slow").read_text() == "slow upstream\n"
    assert repo.record("feat")["base_commit"] == repo.git("rev-parse", "main")
    admin = repo.common_dir / "worktrees" / "feat"
    assert not [p.name for p in admin.iterdir() if p.name.endswith(".lock")]
    repo.git("add", "-A", cwd=checkout)  # the user's git works there


@pytest.mark.slow
@pytest.mark.parametrize("repair", ["sync", "prune"])
def test_sync_killed_while_writing_the_worktrees_files_is_finished(
        repo: GitRepo, repair: str) -> None:
    checkout = kill_sync_inside_checkout(repo)
    if repair == "prune":
        repo.ok("prune")
        doctor_healthy(repo)
    again = repo.vwt("sync", "feat", "--json")
    assert again.returncode == 0, str(again)
    synced_cleanly(repo, checkout)
    repo.ok("prune")  # the killed sync's holder file (its flock died with it)
    doctor_healthy(repo)


@pytest.mark.slow
def test_a_file_written_after_a_killed_sync_is_never_taken_for_gits(repo: GitRepo) -> None:
    """The finish puts back only what is provably the move's own writing (the target's
    version, or its start); a file with anything else stays, and the sync refuses."""
    checkout = kill_sync_inside_checkout(repo)
    (checkout / "zz-after.txt").write_text("the user's own\n")
    (checkout / "upstream.txt").write_text("the user's too\n")
    again = repo.vwt("sync", "feat", "--json")
    assert again.returncode == 3, str(again)
    assert "zz-after.txt" in again.stderr, str(again)
    assert (checkout / "zz-after.txt").read_text() == "the user's own\n"
    assert (checkout / "upstream.txt").read_text() == "the user's too\n"
    assert repo.git("show", "feat:feature.txt") == "the worktree's commit"


KILLED_MOVE = """
import os, sys
from vibe_worktree.core.index_files import locked_index
with locked_index(sys.argv[1], sys.argv[2]):
    os.kill(os.getpid(), 9)
"""


@pytest.mark.parametrize("content", ["new", "nothing", "another commit"])
def test_the_branch_lock_of_a_killed_move_goes_only_when_it_holds_the_moves_commits(
        repo: GitRepo, content: str) -> None:
    """A sync (or merge) killed inside its compare-and-swap: vwt's lock on the worktree's
    index (an anchor named with its dead pid, noting `move OLD NEW`), and git's lock on the
    branch holding what git wrote there. prune removes the branch's lock (and HEAD's) only
    when it holds nothing, OLD or NEW."""
    checkout = Path(vwt_json(repo, "new", "feat")["path"])  # type: ignore[index]
    admin = repo.common_dir / "worktrees" / "feat"
    old, new = repo.git("rev-parse", "HEAD", cwd=checkout), repo.git("rev-parse", "HEAD~1")
    killed = subprocess.run([sys.executable, "-c", KILLED_MOVE, str(admin / "index"),
                             f"move {old} {new}"], check=False)
    assert killed.returncode == -signal.SIGKILL and (admin / "index.lock").exists()
    text = {"new": f"{new}\n", "nothing": "", "another commit": f"{'1' * 40}\n"}
    branch_lock = repo.common_dir / "refs" / "heads" / "feat.lock"
    head_lock = admin / "HEAD.lock"
    branch_lock.write_text(text[content])
    head_lock.write_text("")
    repo.ok("prune")
    assert not (admin / "index.lock").exists() and not head_lock.exists()
    assert branch_lock.exists() is (content == "another commit")
    assert repo.git("rev-parse", "feat") == old
    assert repo.git("status", "--porcelain", cwd=checkout) == ""


# ------------------------------------- a `merge` killed while it moves the main checkout
@pytest.mark.slow
@pytest.mark.parametrize("repair", ["prune", "merge"])
def test_merge_killed_while_moving_the_main_checkout_leaves_no_lock_past_prune(
        repo: GitRepo, repair: str) -> None:
    marker, gate = stop_in_checkout(repo)
    gate.unlink()
    checkout = Path(vwt_json(repo, "new", "feat")["path"])  # type: ignore[index]
    repo.commit("work", {"c.slow": "landed slow file\n", "landed.txt": "landed\n"}, cwd=checkout)
    marker.unlink()
    gate.write_text("")
    proc = start(repo, "merge", "feat")  # main is checked out: its files move too
    wait_for(marker, proc)
    kill_group(proc)
    gate.unlink()
    lock = repo.path / ".git" / "index.lock"
    assert lock.exists()  # git's lock, taken by vwt: recognised as the dead vwt's
    repo.vwt(repair, *(["feat"] if repair == "merge" else []), "--json")
    assert not lock.exists(), f"the killed merge's index.lock outlived a {repair}"
    assert not [p for p in (repo.path / ".git").iterdir() if ".vwt-" in p.name]
    # the interrupted move is finished: the main checkout is clean at the landed commit
    assert repo.git("status", "--porcelain") == ""
    assert (repo.path / "landed.txt").read_text() == "landed\n"
    assert (repo.path / "c.slow").read_text() == "landed slow file\n"
    repo.git("add", "-A")  # the user's own git works in the main checkout again
    doctor_healthy(repo)


def test_prune_never_removes_an_index_lock_it_did_not_take(repo: GitRepo) -> None:
    """A lock some git of the user holds (here: made by hand) is not vwt's to remove."""
    vwt_json(repo, "new", "feat")
    lock = repo.path / ".git" / "index.lock"
    lock.write_text("")
    admin_lock = repo.common_dir / "worktrees" / "feat" / "index.lock"
    admin_lock.write_text("")
    repo.ok("prune", "--json")
    assert lock.exists() and admin_lock.exists()


# --------------------------------------- what the campaign found, each proven on its own
@pytest.mark.slow
@pytest.mark.parametrize("repair", ["new", "prune"])
def test_a_creation_killed_before_git_wrote_its_admin_folder_is_made_again(
        repo: GitRepo, repair: str) -> None:
    """`git worktree add` killed after the checkout's `.git` file, before the admin folder's
    HEAD and commondir (the campaign's seed 12040609 met it in a restore): the checkout
    does not validate, yet it is git's half-made one, torn down like any other."""
    repo.snapshot_branches()
    kill_inside_checkout(repo, "new", "feat")
    admin = repo.common_dir / "worktrees" / "feat"
    for name in ("HEAD", "commondir", "index.lock"):
        (admin / name).unlink()  # as git had not written them yet
    if repair == "new":
        again = vwt_json(repo, "new", "feat")
        assert isinstance(again, dict) and again["created"] is True
        tracked_files_present(repo, Path(again["path"]))
    else:
        repo.ok("prune")
        check_state(repo)
    doctor_healthy(repo)


def test_half_copied_included_folder_is_finished_by_prune(repo: GitRepo) -> None:
    """A creation killed while copying the `.worktreeinclude` folder: git finished the
    checkout, so prune adopts it, and finishes the copy (a file cut short is copied again;
    a copy ends by setting the source's mtime, so a size or mtime that differs tells)."""
    _write(repo.path, {".gitignore": "node_modules/\n", ".worktreeinclude": "node_modules/\n"})
    repo.commit("ignore node_modules")
    _write(repo.path, INCLUDED)
    repo.vwt("new", "feat", crash_at="new.added")  # before the copy
    checkout = repo.checkout("feat")
    some = dict(list(INCLUDED.items())[:50])
    _write(checkout, some)  # what the killed copy had done...
    for rel in some:
        source = (repo.path / rel).stat()
        os.utime(checkout / rel, ns=(source.st_atime_ns, source.st_mtime_ns))
    cut = checkout / next(iter(some))
    cut.write_text("mod")  # ...and the file it was writing when killed
    repo.ok("prune")
    assert _has(checkout, INCLUDED), "the included folder is not whole"
    assert repo.record("feat")["base_commit"] is not None
    doctor_healthy(repo)


def test_prune_removes_an_empty_folder_a_killed_creation_left(repo: GitRepo) -> None:
    """Killed between taking the name (its folder) and writing the record: prune `rmdir`s
    the empty folder no claim names; a folder with anything in it is never touched."""
    vwt_json(repo, "new", "feat")
    empty = repo.checkout("left-empty")
    empty.mkdir()
    (repo.claim("left-empty") / "holders").mkdir(parents=True)  # no record was written
    full = repo.checkout("not-ours")
    full.mkdir()
    (full / "file.txt").write_text("someone's\n")
    repo.ok("prune")
    assert not empty.exists() and not repo.claim("left-empty").exists()
    assert (full / "file.txt").read_text() == "someone's\n"


def test_prune_clears_the_name_an_adopt_killed_while_writing_its_record_held(
        repo: GitRepo) -> None:
    """The campaign's `adopt` killed at 0.087 s, inside its reservation's record write: the
    empty folder, the dead `.starting` and the writer's temporary file were left. Prune
    removed the first two but kept the claim folder for the temporary file, so `adopt` run
    again took the next name (`feat-2`)."""
    source = repo.path.parent / "foreign" / "feat"
    repo.git("worktree", "add", "-q", "-b", "adopt-feat", str(source))
    _write(source, DIRTY)
    repo.checkout("feat").mkdir(parents=True)  # what the killed adopt did: the name taken,
    holders = repo.claim("feat") / "holders"  # its hold, and a record half written
    holders.mkdir(parents=True)
    (holders / ".starting").write_text("")
    half = repo.claim("feat") / ".record.json.0123456789ab.tmp"
    half.write_text('{"name": "fe')
    repo.checkout("other").mkdir()
    repo.claim("other").mkdir()
    (repo.claim("other") / "notes.tmp").write_text("not a record's\n")  # never touched
    repo.ok("prune")
    assert not repo.claim("feat").exists() and not repo.checkout("feat").exists()
    assert (repo.claim("other") / "notes.tmp").read_text() == "not a record's\n"
    doctor_healthy(repo)
    adopted = vwt_json(repo, "adopt", str(source))
    assert adopted["adopted"][0]["name"] == "feat"  # type: ignore[index]
    assert _has(repo.checkout("feat"), DIRTY)


@pytest.mark.slow
@pytest.mark.parametrize("repair", ["new", "prune"])
@pytest.mark.parametrize("relinked", [True, False])
def test_a_pooled_take_killed_before_its_branch_was_made_is_made_again(
        repo: GitRepo, repair: str, relinked: bool) -> None:
    """The campaign's `new pooled` killed at 0.094 s to 0.104 s: the pool's entry was moved
    into the reserved folder (its admin folder pointed there and unlocked, or not yet), and
    `git checkout -b` had not made the branch, so the checkout was on a detached HEAD. Prune
    warned and kept the reservation, and `doctor` reported it for good."""
    pooled = NewPooled()
    pooled.prepare(repo)
    repo.vwt("new", "feat", crash_at="new.pool_taken")
    checkout = repo.checkout("feat")
    assert _branch(repo, checkout) == "" and repo.record("feat")["base_commit"] is None
    admin = Path(repo.git("rev-parse", "--absolute-git-dir", cwd=checkout))
    if not relinked:  # killed between the folder's rename and pointing git's entry at it
        entry = repo.sb.root / ".pool" / repo.bucket / admin.name
        (admin / "gitdir").write_text(f"{entry}/.git\n")
        (admin / "locked").write_text("vibe-worktree pool entry")
    if repair == "prune":
        repo.ok("prune")
        doctor_healthy(repo)
        assert not admin.exists() and not (checkout / ".git").exists()
    again = repo.vwt("new", "feat", "--json")
    assert pooled.again_ok(repo, again), str(again)
    assert repo.git("worktree", "prune", "--dry-run", "--verbose") == ""  # no stale entry
    doctor_healthy(repo)


def test_prune_removes_the_empty_folder_of_a_restore_killed_before_its_record(
        repo: GitRepo) -> None:
    """The campaign's seed 11343288 (a `restore` killed at 0.088 s, between taking the name
    and writing its record): the removed worktree's recovery record made prune count the
    empty folder as claimed, and doctor reported it for good."""
    checkout = Path(vwt_json(repo, "new", "feat")["path"])  # type: ignore[index]
    _write(checkout, DIRTY)
    repo.ok("rm", "feat", "-y")
    checkout.mkdir(parents=True)  # what the killed restore did: the name taken, no record
    (repo.claim("feat") / "holders").mkdir(exist_ok=True)
    (repo.claim("feat") / "holders" / ".starting").write_text("")
    repo.ok("prune")
    assert not checkout.exists() and repo.recovery_path("feat").exists()
    doctor_healthy(repo)
    repo.ok("restore", "feat")
    assert _has(checkout, DIRTY)


# ======================================================================= the kill campaign
# Each scenario builds a fresh repository with the user's work in it, runs one command in a
# process group of its own and SIGKILLs the group at a moment drawn (seeded) from 0 to the
# command's measured duration, so kills land in vwt's Python and inside its git commands.
# Then, at once (no record aged): `vwt prune` repairs, leaving no reservation and no lock in
# git's folder, `vwt doctor` is healthy, nothing the user wrote is lost, and the command run
# again succeeds (or says it is done).
# Every run draws a fresh seed, printed with the moments and named in every failure:
# VWT_KILL_SEED=N replays that draw (the moments scale with the measured duration).
_SEED_ASKED = os.environ.get("VWT_KILL_SEED", "random")
SEED = (int.from_bytes(os.urandom(3), "big") if _SEED_ASKED == "random"
        else int(_SEED_ASKED))
QUICK_MOMENTS = 1  # per command in the default run
SWEEP_MOMENTS = 5  # per command in the slow sweep
DIRTY = {"README.md": "# demo\nedited by the user\n", "work/untracked.txt": "untracked work\n",
         "staged.txt": "staged, never committed\n"}
INCLUDED = {f"node_modules/pkg{i // 40}/f{i}.js": f"module {i}\n" * 20 for i in range(400)}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _has(root: Path, files: dict[str, str]) -> bool:
    return all((root / rel).is_file() and (root / rel).read_text() == text
               for rel, text in files.items())


def _dirty(repo: GitRepo, checkout: Path) -> None:
    _write(checkout, DIRTY)
    repo.git("add", "staged.txt", cwd=checkout)


def _in_checkout_or_restorable(repo: GitRepo, name: str, files: dict[str, str]) -> str | None:
    checkout = repo.checkout(name)
    if repo.record_path(name).exists() and _has(checkout, files):
        return None
    if not repo.recovery_path(name).exists():
        return f"{name}: the work is neither in its checkout nor restorable"
    restored = repo.vwt("restore", name, "--json")
    if restored.returncode != 0 or not _has(checkout, files):
        return f"{name}: restore did not bring the work back:\n{restored}"
    return None


def _branch(repo: GitRepo, checkout: Path) -> str:
    return repo.git("symbolic-ref", "--short", "-q", "HEAD", cwd=checkout, check=False)


class Scenario:
    """One command under the kill: `prepare` makes the world, `args` is the command,
    `lost` says what of the user's work is gone (None: nothing), `again_ok` judges the
    command run again."""

    name = ""
    args: tuple[str, ...] = ()

    def prepare(self, repo: GitRepo) -> None:
        pass

    def lost(self, repo: GitRepo) -> str | None:
        return None

    def again_ok(self, repo: GitRepo, run: object) -> bool:
        return getattr(run, "returncode", 1) == 0

    def settle(self, repo: GitRepo) -> None:
        """Wait for what the command left running on purpose (a detached refill)."""


class New(Scenario):
    name, args = "new", ("new", "feat")

    def prepare(self, repo: GitRepo) -> None:
        _write(repo.path, {".gitignore": "node_modules/\n", ".worktreeinclude": "node_modules/\n"})
        repo.commit("ignore node_modules")
        _write(repo.path, INCLUDED)

    def lost(self, repo: GitRepo) -> str | None:
        return None if _has(repo.path, INCLUDED) else "the main checkout's files changed"

    def again_ok(self, repo: GitRepo, run: object) -> bool:
        checkout = repo.checkout("feat")
        return (getattr(run, "returncode", 1) == 0 and _has(checkout, INCLUDED)  # copied whole
                and repo.git("status", "--porcelain", cwd=checkout) == "")


class NewSparse(New):
    name, args = "new --sparse", ("new", "feat", "--sparse", "src")

    def again_ok(self, repo: GitRepo, run: object) -> bool:
        checkout = repo.checkout("feat")
        return (getattr(run, "returncode", 1) == 0 and (checkout / "src" / "app.py").is_file()
                and not (checkout / "notes").exists()
                and repo.git("status", "--porcelain", cwd=checkout) == "")


class NewMove(Scenario):
    name, args = "new --move", ("new", "feat", "--move")
    MOVED: ClassVar[dict[str, str]] = {"README.md": "# demo\nmoved work\n",
                                       "fresh.txt": "a new file\n"}

    def prepare(self, repo: GitRepo) -> None:
        _write(repo.path, self.MOVED)

    def lost(self, repo: GitRepo) -> str | None:
        carried = "refs/vibe/carried/feat"
        if _has(repo.path, self.MOVED) or _has(repo.checkout("feat"), self.MOVED):
            return None
        if repo.ref_exists(carried) and all(
                repo.git("show", f"{carried}:{rel}") == text.rstrip("\n")
                for rel, text in self.MOVED.items()):
            return None
        return "the moved work is in neither checkout nor in refs/vibe/carried/feat"

    def again_ok(self, repo: GitRepo, run: object) -> bool:
        return (getattr(run, "returncode", 1) == 0 and self.lost(repo) is None
                and _has(repo.checkout("feat"), self.MOVED)
                and repo.git("status", "--porcelain") == "")  # moved out of the source


class Restore(Scenario):
    name, args = "restore", ("restore", "feat")

    def prepare(self, repo: GitRepo) -> None:
        checkout = Path(repo.ok("new", "feat", "--json").json()["path"])
        _write(checkout, INCLUDED)  # a bigger snapshot: more time inside git
        _dirty(repo, checkout)
        repo.ok("rm", "feat", "-y")

    def lost(self, repo: GitRepo) -> str | None:
        return _in_checkout_or_restorable(repo, "feat", {**DIRTY, **INCLUDED})

    def again_ok(self, repo: GitRepo, run: object) -> bool:
        return _has(repo.checkout("feat"), DIRTY)  # restored now, or by `lost` already


class Snapshot(Scenario):
    name, args = "snapshot", ("snapshot", "feat")

    def prepare(self, repo: GitRepo) -> None:
        checkout = Path(repo.ok("new", "feat", "--json").json()["path"])
        _write(checkout, INCLUDED)
        _dirty(repo, checkout)

    def lost(self, repo: GitRepo) -> str | None:
        return _in_checkout_or_restorable(repo, "feat", {**DIRTY, **INCLUDED})


class Remove(Snapshot):
    name, args = "rm -y", ("rm", "feat", "-y")

    def again_ok(self, repo: GitRepo, run: object) -> bool:
        return getattr(run, "returncode", 1) in (0, 1)  # 1: nothing left to remove


class Prune(Scenario):
    name, args = "prune", ("prune", "--keep", "0")
    NAMES = ("p0", "p1", "p2")

    def prepare(self, repo: GitRepo) -> None:
        for name in self.NAMES:
            checkout = Path(repo.ok("new", name, "--json").json()["path"])
            _write(checkout, {f"work-{name}.txt": f"{name}'s work\n", **DIRTY})

    def lost(self, repo: GitRepo) -> str | None:
        for name in self.NAMES:
            problem = _in_checkout_or_restorable(
                repo, name, {f"work-{name}.txt": f"{name}'s work\n", **DIRTY})
            if problem:
                return problem
        return None


class Merge(Scenario):
    name, args = "merge", ("merge", "feat")
    LANDED: ClassVar[dict[str, str]] = {"landed.txt": "landed work\n",
                                        "src/app.py": "print('merged')\n"}

    def prepare(self, repo: GitRepo) -> None:
        checkout = Path(repo.ok("new", "feat", "--json").json()["path"])
        repo.commit("work", {**self.LANDED, **INCLUDED}, cwd=checkout)

    def lost(self, repo: GitRepo) -> str | None:
        if repo.git("status", "--porcelain") != "":  # the user's main checkout
            return "the main checkout is not clean: " + repo.git("status", "--porcelain")[:300]
        if repo.git("show", "main:landed.txt", check=False) == "landed work":
            return None if _has(repo.path, self.LANDED) else "main's checkout lags main"
        if repo.record_path("feat").exists() and _has(repo.checkout("feat"), self.LANDED):
            return None
        return _in_checkout_or_restorable(repo, "feat", self.LANDED)

    def again_ok(self, repo: GitRepo, run: object) -> bool:
        return ((getattr(run, "returncode", 1) in (0, 1)
                 and repo.git("show", "main:landed.txt", check=False) == "landed work")
                or repo.recovery_path("feat").exists())


class Sync(Scenario):
    name, args = "sync", ("sync", "feat")
    WORK: ClassVar[dict[str, str]] = {"feature.txt": "the worktree's commit\n"}

    def prepare(self, repo: GitRepo) -> None:
        checkout = Path(repo.ok("new", "feat", "--json").json()["path"])
        repo.commit("work", {**self.WORK, **INCLUDED}, cwd=checkout)
        repo.commit("main moves on", {"upstream.txt": "upstream\n"})

    def lost(self, repo: GitRepo) -> str | None:
        checkout = repo.checkout("feat")
        if repo.git("show", "feat:feature.txt", check=False) != "the worktree's commit":
            return "the worktree's commit is gone from its branch"
        if not (checkout / "feature.txt").is_file():
            return "feature.txt is gone from the checkout"
        return None

    def again_ok(self, repo: GitRepo, run: object) -> bool:
        checkout = repo.checkout("feat")
        return (getattr(run, "returncode", 1) == 0
                and repo.git("status", "--porcelain", cwd=checkout) == ""
                and repo.git("merge-base", "--is-ancestor", "main", "feat", check=False) == "")


class Adopt(Scenario):
    """A worktree made by plain `git worktree add` outside the repository, its work
    uncommitted, staged and untracked, over 400 tracked files, moved in by `adopt`."""

    name, args = "adopt", ("adopt", "../foreign/feat")
    TRACKED: ClassVar[dict[str, str]] = {f"lib/pkg{i // 40}/m{i}.txt": f"line {i}\n" * 20
                                         for i in range(400)}
    STATUS = "M README.md\nA  staged.txt\n?? work/untracked.txt"  # stripped: " M README.md"

    def source(self, repo: GitRepo) -> Path:
        return repo.path.parent / "foreign" / "feat"

    def prepare(self, repo: GitRepo) -> None:
        repo.commit("many files", self.TRACKED)
        repo.git("worktree", "add", "-q", "-b", "adopt-feat", str(self.source(repo)))
        _dirty(repo, self.source(repo))
        assert self._status(repo, self.source(repo)) == self.STATUS

    def _status(self, repo: GitRepo, checkout: Path) -> str:
        return repo.git("status", "--porcelain", "--untracked-files=all", cwd=checkout)

    def _whole(self, repo: GitRepo, checkout: Path) -> bool:
        return (_has(checkout, {**DIRTY, **self.TRACKED})
                and self._status(repo, checkout) == self.STATUS)

    def lost(self, repo: GitRepo) -> str | None:
        if self.source(repo).exists():
            return None if self._whole(repo, self.source(repo)) else \
                "the foreign worktree lost work: " + self._status(repo, self.source(repo))
        checkout = repo.checkout("feat")
        if not checkout.exists():
            return _in_checkout_or_restorable(repo, "feat", DIRTY)
        return None if self._whole(repo, checkout) else \
            "the adopted checkout lost work: " + self._status(repo, checkout)

    def again_ok(self, repo: GitRepo, run: object) -> bool:
        checkout = repo.checkout("feat")
        return (getattr(run, "returncode", 1) == 0 and not self.source(repo).exists()
                and repo.record_path("feat").exists()
                and repo.record("feat")["base_commit"] is not None
                and _branch(repo, checkout) == "adopt-feat"
                and self._whole(repo, checkout))


HOOK_FILE = "built/hook.txt"


class NewPooled(Scenario):
    """`new feat` taking the one ready entry of a pool whose approved post_create hook
    writes a file and whose `.worktreeinclude` copies 400 ignored files, the start point
    300 files ahead of the entry; the take starts a detached refill (its own session,
    which the kill does not reach)."""

    name, args = "new pooled", ("new", "feat")

    def prepare(self, repo: GitRepo) -> None:
        hook = ('[[hooks]]\nname = "build"\ntype = "post_create"\n'
                f'command = "mkdir -p built && echo built > {HOOK_FILE}"\n')
        repo.commit("pool", {".vibe/worktree.toml": f"[pool]\nsize = 1\n\n{hook}",
                             ".gitignore": "node_modules/\nbuilt/\n",
                             ".worktreeinclude": "node_modules/\n"})
        _write(repo.path, INCLUDED)
        repo.ok("hooks", "approve", "--all")
        repo.ok("pool", "fill")
        self.settle(repo)
        # the start point moves on: the take's `git checkout -b` writes these, and the hook
        # (no `inputs`) runs again in the taken checkout
        repo.commit("after the fill", {f"lib/m{i}.txt": f"moved on {i}\n" * 20
                                       for i in range(300)})

    def settle(self, repo: GitRepo) -> None:
        """Until no background filler holds or waits for the pool's lock."""
        folder = repo.sb.root / ".pool" / repo.bucket
        deadline = time.monotonic() + 60
        while any(is_locked(folder / lock) for lock in (".fill", ".fill-queue")):
            assert time.monotonic() < deadline, "the pool's filler did not finish"
            time.sleep(0.05)

    def lost(self, repo: GitRepo) -> str | None:
        return None if _has(repo.path, INCLUDED) else "the main checkout's files changed"

    def again_ok(self, repo: GitRepo, run: object) -> bool:
        self.settle(repo)
        checkout = repo.checkout("feat")
        return (getattr(run, "returncode", 1) == 0 and _has(checkout, INCLUDED)
                and (checkout / HOOK_FILE).read_text() == "built\n"
                and _branch(repo, checkout) == "feat"
                and repo.git("status", "--porcelain", cwd=checkout) == "")


SCENARIOS = [New(), NewSparse(), NewMove(), Restore(), Snapshot(), Remove(), Prune(), Merge(),
             Sync(), Adopt(), NewPooled()]
_DURATIONS: dict[str, float] = {}


def _sandbox_repo(where: Path, scenario: Scenario) -> GitRepo:
    from .conftest import Sandbox

    where.mkdir()
    repo = Sandbox(where).make_repo()
    scenario.prepare(repo)
    return repo


def _measured(scenario: Scenario, tmp: Path) -> float:
    """How long the command takes here (unkilled), measured once per process."""
    if scenario.name not in _DURATIONS:
        repo = _sandbox_repo(tmp / "measure", scenario)
        begin = time.monotonic()
        proc = start(repo, *scenario.args)
        proc.communicate(timeout=120)
        _DURATIONS[scenario.name] = time.monotonic() - begin
        scenario.settle(repo)
    return _DURATIONS[scenario.name]


def kill_at(repo: GitRepo, scenario: Scenario, moment: float) -> bool:
    """Run the command and SIGKILL its group `moment` seconds in; False when it had
    finished before the kill."""
    proc = start(repo, *scenario.args)
    time.sleep(moment)
    finished = proc.poll() is not None
    kill_group(proc)
    return not finished


def git_locks(repo: GitRepo) -> list[str]:
    """Every `*.lock` file git could trip over in the repository's git folder (its refs,
    each worktree's admin folder, the index)."""
    return sorted(str(p.relative_to(repo.common_dir)) for p in repo.common_dir.rglob("*.lock"))


def reservations(repo: GitRepo) -> list[str]:
    return sorted(path.parent.name for path in (repo.sb.claims / repo.bucket).glob("*/record.json")
                  if json.loads(path.read_text())["base_commit"] is None)


def check_after_kill(repo: GitRepo, scenario: Scenario, label: str) -> None:
    """The very next prune repairs, with no waiting: every record is aged by nothing."""
    scenario.settle(repo)
    pruned = repo.vwt("prune", "--json")
    assert pruned.returncode == 0, f"{label}: prune failed\n{pruned}"
    assert reservations(repo) == [], f"{label}: a reservation outlived prune\n{pruned}"
    assert git_locks(repo) == [], f"{label}: git's locks outlived prune\n{pruned}"
    doctor = repo.vwt("doctor", "--json")
    assert doctor.returncode == 0, f"{label}: doctor after prune\n{doctor}\n{pruned}"
    lost = scenario.lost(repo)
    assert lost is None, f"{label}: {lost}"
    again = repo.vwt(*scenario.args, "--json")
    assert scenario.again_ok(repo, again), f"{label}: the command run again\n{again}"
    doctor = repo.vwt("doctor", "--json")
    assert doctor.returncode == 0, f"{label}: doctor after the command ran again\n{doctor}"
    assert scenario.lost(repo) is None, f"{label}: lost after the rerun: {scenario.lost(repo)}"


def _campaign(tmp_path: Path, scenario: Scenario, moments: int) -> None:
    import random

    duration = _measured(scenario, tmp_path)
    rng = random.Random(f"{SEED}-{scenario.name}")
    chosen = sorted(rng.uniform(0, duration * 1.05) for _ in range(moments))
    print(f"\nkill campaign: seed={SEED} command={scenario.name!r} "
          f"duration={duration:.3f}s moments={[round(m, 3) for m in chosen]}")
    for i, moment in enumerate(chosen):
        repo = _sandbox_repo(tmp_path / f"kill-{i}", scenario)
        inside = kill_at(repo, scenario, moment)
        label = (f"seed={SEED} {scenario.name!r} killed at {moment:.3f}s"
                 f"{'' if inside else ' (had finished)'}")
        check_after_kill(repo, scenario, label)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_kill_at_a_random_moment(tmp_path: Path, scenario: Scenario) -> None:
    _campaign(tmp_path, scenario, QUICK_MOMENTS)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_kill_sweep(tmp_path: Path, scenario: Scenario) -> None:
    _campaign(tmp_path, scenario, SWEEP_MOMENTS)
