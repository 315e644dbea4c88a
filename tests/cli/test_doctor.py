"""`vwt doctor`: every problem kind of the home, reported without changing anything."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import Layout, Repo, Sandbox, Vwt, minutes_ago


def home_state(home: Path) -> dict[str, Any]:
    """Every path under the home with its type, mode, size, mtime and content."""
    state: dict[str, Any] = {}
    for folder, subfolders, files in os.walk(home):
        for name in subfolders + files:
            path = Path(folder) / name
            st = path.lstat()
            content = path.read_bytes() if path.is_file() and not path.is_symlink() else None
            link = os.readlink(path) if path.is_symlink() else None
            state[str(path)] = (st.st_mode, st.st_size, st.st_mtime_ns, content, link)
    return state


def all_refs(repo: Repo) -> str:
    return repo.git("for-each-ref", "--format=%(refname) %(objectname)")


def doctor(vwt: Vwt, *args: str, **kw: Any) -> dict[str, Any]:
    result = vwt("doctor", "--json", *args, **kw)
    data = result.json()
    assert result.code == (0 if data.get("healthy", True) else 1), str(result)
    return data


def kinds(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for problem in report["problems"]:
        assert problem["fix"], problem
        assert set(problem) == {"kind", "bucket", "name", "path", "detail", "fix"}
        found.setdefault(problem["kind"], []).append(problem)
    return found


def test_a_fresh_home_is_healthy_and_doctor_creates_nothing(vwt: Vwt, sandbox: Sandbox,
                                                              repo: Repo) -> None:
    result = vwt("doctor")
    assert result.code == 0 and result.out.strip() == "healthy"
    assert not sandbox.vibe_home.exists()  # not even the lock files
    vwt.new("one")
    assert doctor(vwt) == {"healthy": True, "problems": []}


def test_every_problem_kind_is_reported_and_nothing_changes(
        vwt: Vwt, repo: Repo, layout: Layout, sandbox: Sandbox, make_repo: Any,
        holder: Any) -> None:
    bucket = repo.bucket
    vwt.new("fine")
    missing = Path(vwt.new("missing")["path"])
    shutil.rmtree(missing)
    repo.git("worktree", "prune")
    # a checkout folder no record claims
    (layout.root / bucket / "stray").mkdir()
    # a git worktree inside the root without a record (its record vanished)
    vwt.new("unrecorded")
    repo.record_path("unrecorded").unlink()
    # a .trash leftover of an interrupted removal
    (layout.trash / f"{bucket}-gone-{'a' * 32}").mkdir(parents=True)
    # a stale holder file
    vwt.new("stale")
    stale = holder(bucket, "stale", "vibe-dead")
    stale.kill()
    # an abandoned reservation
    record = repo.vibe_record("reserved", "vibe/reserved", base_commit=None,
                              claimed_at=minutes_ago(30))
    repo.write_record("reserved", record)
    (layout.root / bucket / "reserved").mkdir()
    # a vibe/* branch nobody names, and a snapshot ref without a record
    lone = repo.git("commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "lone work")
    repo.git("branch", "vibe/leftover", lone)
    repo.git("update-ref", "refs/vibe/reaped/forgotten", "HEAD")
    # a broken record
    vwt.new("broken")
    repo.record_path("broken").write_text("{not json")
    # a repository that is gone
    other = make_repo("other")
    vwt.new("lost", cwd=other.path)
    shutil.rmtree(other.path)

    before, refs = home_state(sandbox.vibe_home), all_refs(repo)
    report = doctor(vwt)
    assert home_state(sandbox.vibe_home) == before and all_refs(repo) == refs

    found = kinds(report)
    assert report["healthy"] is False
    named = {k: sorted(str(p["name"]) for p in v) for k, v in found.items()}
    assert named == {
        "missing_checkout": ["missing"],
        "unrecorded_checkout": ["stray"],
        "unrecorded_git_worktree": ["unrecorded"],
        "trash_leftover": ["None"],
        "stale_holder": ["stale"],
        "abandoned_reservation": ["reserved"],
        "stray_branch": ["None"],
        "stray_snapshot": ["forgotten"],
        "broken_record": ["broken"],
        "orphaned_repository": ["lost"],
    }, json.dumps(report, indent=1)
    assert found["missing_checkout"][0]["fix"] == "vwt prune"
    assert "--archive-orphans" in found["orphaned_repository"][0]["fix"]
    assert "vibe/leftover" in found["stray_branch"][0]["detail"]
    assert all(os.path.isabs(p["path"]) for p in report["problems"])
    plain = vwt("doctor")
    assert plain.code == 1 and "fix: vwt prune" in plain.out


def test_a_snapshotted_branch_and_a_restorable_entry_are_not_problems(vwt: Vwt,
                                                                      repo: Repo) -> None:
    created = vwt.new("-p", "snapshot this")
    name = created["name"]
    (Path(created["path"]) / "work.txt").write_text("work\n")
    vwt.ok("rm", name, "-y")
    # its branch, recreated at a commit inside the snapshot: nothing in it can be lost
    repo.git("branch", f"vibe/{name}-old", f"refs/vibe/reaped/{name}")
    assert doctor(vwt)["healthy"] is True


def test_a_symlinked_or_read_only_root_is_reported(vwt: Vwt, repo: Repo, layout: Layout,
                                                   sandbox: Sandbox) -> None:
    vwt.new("one")
    os.chmod(layout.claims, 0o500)
    try:
        report = kinds(doctor(vwt))
        if os.geteuid() != 0:
            assert [p["path"] for p in report["unsafe_root"]] == [str(layout.claims)]
    finally:
        os.chmod(layout.claims, 0o700)
    real = sandbox.tmp / "elsewhere"
    layout.root.rename(real)
    layout.root.symlink_to(real)
    report = kinds(doctor(vwt))
    assert report["unsafe_root"][0]["detail"] == "is a symlink"


@pytest.mark.slow
def test_a_creation_in_progress_is_not_a_problem(vwt: Vwt, repo: Repo, layout: Layout) -> None:
    """A `vwt new` paused by a slow post-checkout hook, mid-creation: reserved record, live
    `.starting`, checkout and git worktree entry half made, branch already there."""
    hook = repo.path / ".git" / "hooks" / "post-checkout"
    flag = repo.path.parent / "hook.started"
    hook.write_text(f"#!/bin/sh\ntouch {flag}\nsleep 4\n")
    hook.chmod(0o755)
    proc = vwt.spawn("new", "-p", "slow creation", "--json")
    deadline = time.time() + 30
    while not flag.exists() and time.time() < deadline:
        time.sleep(0.02)
    assert flag.exists() and proc.poll() is None
    report = doctor(vwt)
    assert report == {"healthy": True, "problems": []}
    assert proc.wait(timeout=30) == 0
    assert doctor(vwt)["healthy"] is True


def test_a_removal_in_progress_is_not_a_problem(vwt: Vwt, repo: Repo, layout: Layout) -> None:
    """A removal stopped between moving the checkout to .trash and dropping the record,
    still holding `.removing`: a held reservation lock stands in for the paused process."""
    wt = Path(vwt.new("going")["path"])
    (wt / "dirty.txt").write_text("x\n")
    vwt("rm", "going", "-y", env_extra={"VWT_CRASH_AT": "rm.unregistered"})
    # the crashed removal left .trash and a record without checkout: problems ...
    assert {"trash_leftover", "missing_checkout"} <= set(kinds(doctor(vwt)))
    # ... unless a live `.removing` says the removal is still going on
    script = ("import fcntl, os, sys\n"
              "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)\n"
              "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('ready', flush=True)\nsys.stdin.read()\n")
    removing = repo.holders_dir("going") / ".removing"
    removing.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", script, str(removing)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        assert doctor(vwt) == {"healthy": True, "problems": []}
    finally:
        proc.kill()
        proc.wait()
    vwt.ok("prune")
    assert doctor(vwt)["healthy"] is True


@pytest.mark.timeout(120)
def test_doctor_waits_for_the_prune_lock_briefly_and_never_blocks_creation(
        vwt: Vwt, repo: Repo, layout: Layout, foreign_lock: Any) -> None:
    (layout.root / repo.bucket / "stray").mkdir(parents=True)
    lock = foreign_lock(layout.claims / ".prune")
    proc = vwt.spawn("doctor", "--json")
    time.sleep(0.5)
    assert proc.poll() is None  # it confirms the suspect under the prune lock
    lock.kill()
    out, _err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert [p["kind"] for p in json.loads(out)["problems"]] == ["unrecorded_checkout"]


# -- orphaned and moved repositories -----------------------------------------------------------
def make_worktrees(vwt: Vwt, repo: Repo) -> dict[str, Path]:
    """A clean, a dirty (uncommitted, staged, untracked, a commit) and a to-be-held worktree."""
    paths = {name: Path(vwt.new(name)["path"]) for name in ("clean", "dirty", "held")}
    dirty = paths["dirty"]
    repo.commit("own work", {"committed.txt": "committed\n"}, cwd=dirty)
    (dirty / "README.md").write_text("edited\n")
    (dirty / "staged.txt").write_text("staged\n")
    repo.git("add", "staged.txt", cwd=dirty)
    (dirty / "new" / "untracked.txt").parent.mkdir()
    (dirty / "new" / "untracked.txt").write_text("untracked\n")
    return paths


def dirty_files_intact(checkout: Path) -> bool:
    return ((checkout / "README.md").read_text() == "edited\n"
            and (checkout / "staged.txt").read_text() == "staged\n"
            and (checkout / "new" / "untracked.txt").read_text() == "untracked\n"
            and (checkout / "committed.txt").read_text() == "committed\n")


def states(vwt: Vwt, *args: str, **kw: Any) -> dict[str, str]:
    return {e["name"]: e["state"] for e in vwt.list(*args, **kw)}


def test_worktrees_of_a_deleted_repository_are_orphaned_and_archived(
        vwt: Vwt, repo: Repo, layout: Layout, holder: Any, sandbox: Sandbox) -> None:
    import tarfile

    old_bucket = repo.bucket
    paths = make_worktrees(vwt, repo)
    shutil.rmtree(repo.path)
    assert states(vwt, "--all", cwd=sandbox.tmp) == dict.fromkeys(paths, "orphaned")
    assert states(vwt, "--all", "--no-status", cwd=sandbox.tmp) == dict.fromkeys(
        paths, "orphaned")
    kept = vwt.ok("prune", "--keep", "0", "--json", cwd=sandbox.tmp).json()["kept"]
    assert sorted(k["name"] for k in kept) == sorted(paths)
    assert all(k["reason"].startswith("orphaned") for k in kept)
    assert all(p.is_dir() for p in paths.values())
    report = kinds(doctor(vwt, cwd=sandbox.tmp))
    assert sorted(p["name"] for p in report["orphaned_repository"]) == sorted(paths)

    live = holder(old_bucket, "held")
    result = vwt("doctor", "--archive-orphans", "--json", cwd=sandbox.tmp)
    assert result.code == 0, str(result)
    outcomes = {r["name"]: r for r in result.json()["archived"]}
    assert outcomes["held"]["outcome"] == "kept_in_use" and paths["held"].is_dir()
    for name in ("clean", "dirty"):
        archive = Path(outcomes[name]["path"])
        assert outcomes[name]["outcome"] == "archived"
        assert archive == layout.root / ".orphans" / f"{old_bucket}-{name}.tar.gz"
        assert not paths[name].exists() and not layout.claim(old_bucket, name).exists()
    with tarfile.open(layout.root / ".orphans" / f"{old_bucket}-dirty.tar.gz") as tar:
        untracked = tar.extractfile("dirty/new/untracked.txt")
        assert untracked is not None and untracked.read() == b"untracked\n"
        assert {"dirty/README.md", "dirty/staged.txt", "dirty/committed.txt", "dirty/.git"} <= \
            set(tar.getnames())
    live.kill()
    assert vwt.ok("doctor", "--archive-orphans", "--json", cwd=sandbox.tmp).json()[
        "archived"][0]["outcome"] == "archived"
    assert doctor(vwt, cwd=sandbox.tmp)["healthy"] is True


def test_archiving_keeps_a_checkout_it_cannot_verify_file_by_file(
        vwt: Vwt, repo: Repo, sandbox: Sandbox, layout: Layout) -> None:
    path = Path(vwt.new("odd")["path"])
    shutil.rmtree(repo.path)
    os.mkfifo(path / "pipe")  # no content to compare: the check fails closed
    result = vwt("doctor", "--archive-orphans", "--json", cwd=sandbox.tmp)
    assert result.code == 1
    assert result.json()["archived"][0]["outcome"] == "failed"
    assert (path / ".git").is_file() and (path / "README.md").is_file()
    assert not list((layout.root / ".orphans").glob("*"))  # no half-made archive either


def move_repo(repo: Repo, sandbox: Sandbox) -> Repo:
    moved = sandbox.tmp / "moved" / "renamed"
    moved.parent.mkdir()
    repo.path.rename(moved)
    return Repo(moved, sandbox, repo.layout)


def test_a_moved_repository_gets_its_worktrees_back_with_relocate(
        vwt: Vwt, repo: Repo, layout: Layout, holder: Any, sandbox: Sandbox) -> None:
    old_bucket = repo.bucket
    paths = make_worktrees(vwt, repo)
    live = holder(old_bucket, "held")
    moved = move_repo(repo, sandbox)
    assert states(vwt, "--all", cwd=sandbox.tmp) == dict.fromkeys(paths, "orphaned")

    report = kinds(doctor(vwt, cwd=moved.path))
    assert sorted(p["name"] for p in report["repository_moved"]) == sorted(paths)
    assert {p["fix"] for p in report["repository_moved"]} == {"vwt doctor --relocate"}
    assert "orphaned_repository" not in report

    result = vwt("doctor", "--relocate", "--json", cwd=moved.path)
    assert result.code == 0, str(result)
    outcomes = {r["name"]: r["outcome"] for r in result.json()["relocated"]}
    assert outcomes == {"clean": "moved", "dirty": "moved", "held": "kept_in_use"}
    assert paths["held"].is_dir()  # skipped: still where the session holds it
    now = {e["name"]: e for e in vwt.list(cwd=moved.path)}
    assert {n: e["state"] for n, e in now.items()} == {"clean": "ready", "dirty": "ready"}
    assert now["dirty"]["changes"] == 3 and now["dirty"]["ahead"] == 1
    assert now["clean"]["clean"] is True
    assert dirty_files_intact(Path(now["dirty"]["path"]))
    assert moved.record("dirty")["repo_root"] == str(moved.path)
    assert moved.git("status", "--porcelain", cwd=Path(now["dirty"]["path"]))

    live.kill()
    again = vwt.ok("doctor", "--relocate", "--json", cwd=moved.path).json()["relocated"]
    assert [(r["name"], r["outcome"]) for r in again] == [("held", "moved")]
    assert states(vwt, cwd=moved.path) == dict.fromkeys(paths, "ready")
    assert not (layout.root / old_bucket).exists()
    vwt.ok("prune", cwd=moved.path)  # the stale holder file the killed session left
    assert doctor(vwt, cwd=moved.path) == {"healthy": True, "problems": []}


@pytest.mark.parametrize("step", ["relocate.checkout_moved", "relocate.claim_moved",
                                  "relocate.repaired", "relocate.recorded"])
def test_a_relocation_killed_at_any_step_finishes_when_run_again(
        vwt: Vwt, repo: Repo, sandbox: Sandbox, step: str) -> None:
    paths = make_worktrees(vwt, repo)
    moved = move_repo(repo, sandbox)
    crashed = vwt("doctor", "--relocate", cwd=moved.path, env_extra={"VWT_CRASH_AT": step})
    assert crashed.code == -9
    report = kinds(doctor(vwt, cwd=moved.path))
    assert set(report) <= {"repository_moved"}, report  # relocate is the fix
    assert bool(report) is (step != "relocate.recorded")  # only empty folders left then
    vwt.ok("doctor", "--relocate", cwd=moved.path)
    now = {e["name"]: e for e in vwt.list(cwd=moved.path)}
    assert {n: e["state"] for n, e in now.items()} == dict.fromkeys(paths, "ready")
    assert dirty_files_intact(Path(now["dirty"]["path"]))
    assert doctor(vwt, cwd=moved.path) == {"healthy": True, "problems": []}


def test_an_archive_that_cannot_be_written_is_said_on_stderr(
        vwt: Vwt, repo: Repo, sandbox: Sandbox, layout: Layout) -> None:
    path = Path(vwt.new("kept")["path"])
    shutil.rmtree(repo.path)
    (layout.root / ".orphans").write_text("a file where the archive folder goes\n")
    for args in (("--json",), ()):
        result = vwt("doctor", "--archive-orphans", *args, cwd=sandbox.tmp)
        assert result.code == 1, str(result)
        [line] = result.err_lines
        assert line.startswith("vwt: error: could not archive") and "kept" in line, str(result)
        assert ".orphans" in line and "nothing was deleted" in line
        assert "failed" not in result.out or args == ("--json",)
    assert (path / "README.md").is_file()
