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
import time
from pathlib import Path

import pytest

from conftest import VWT_BIN as VWT

from .conftest import GitRepo, check_state

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


def test_prune_discards_a_creation_killed_inside_git_checkout(repo: GitRepo) -> None:
    repo.snapshot_branches()
    kill_inside_checkout(repo, "new", "-p", "fix the login")
    repo.age_records(30)
    doctor = repo.vwt("doctor", "--json")
    assert doctor.returncode == 1
    kinds = {p["kind"] for p in doctor.json()["problems"]}
    assert kinds == {"abandoned_reservation", "stale_holder"}  # the dead creator's .starting
    pruned = vwt_json(repo, "prune")
    assert isinstance(pruned, dict)
    assert [r["name"] for r in pruned["reservations_discarded"]] == ["fix-the-login"]
    check_state(repo)  # the checkout, git's entry and the branch git made are gone
    doctor_healthy(repo)
    again = vwt_json(repo, "new", "-p", "fix the login")
    assert isinstance(again, dict) and again["name"] == "fix-the-login"
    tracked_files_present(repo, Path(again["path"]))


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
    repo.age_records(30)
    repo.ok("prune", "--json")
    doctor_healthy(repo)
    if not work_in(checkout):  # put back to a restorable snapshot: restore brings it all
        repo.ok("restore", "feat")
    assert work_in(checkout)
    repo.git("add", "-A", cwd=checkout)


# ------------------------------------- a `merge` killed while it moves the main checkout
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
