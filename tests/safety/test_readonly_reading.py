"""A home that cannot be written (SPEC §16): the commands that only read still work, and
say the same as on a writable home; `doctor` names a read-only filesystem as such.

The home is made read-only with a read-only bind mount (see test_readonly.py): that needs
root, and the tests skip, saying why, anywhere else.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import VWT, GitRepo
from .test_readonly import _mount, fingerprint, read_only

pytestmark = pytest.mark.timeout(120)

READERS = {
    "list": ("list", "--json"),
    "list --all": ("list", "--all", "--json"),
    "list --size": ("list", "--size", "--json"),
    "status": ("status", "keep", "--json"),
    "conflicts": ("conflicts", "--json"),
    "foreign": ("foreign", "--json"),
    "pool": ("pool", "--json"),
    "path": ("path", "keep"),
    "hooks": ("hooks", "--json"),
    "port": ("port", "keep", "--json"),
    "env": ("env", "keep", "--json"),
}


@pytest.fixture
def worked_in(repo: GitRepo, holder: Any) -> GitRepo:
    """`keep` with uncommitted work and a live holder (as Vibe holds it); `snap` removed
    with a snapshot; `other` clean."""
    for name in ("keep", "snap", "other"):
        checkout = Path(repo.ok("new", name, "--json").json()["path"])
        if name != "other":
            (checkout / "work.txt").write_text(f"{name}'s work\n")
    repo.ok("rm", "snap", "-y")
    holder(repo, "keep")
    return repo


@pytest.mark.parametrize("command", list(READERS))
def test_a_reading_command_says_the_same_on_a_read_only_home(
        worked_in: GitRepo, command: str) -> None:
    repo = worked_in
    writable = repo.ok(*READERS[command])
    before = fingerprint(repo)
    with read_only(repo.sb.vibe_home):
        run = repo.vwt(*READERS[command])
    assert run.returncode == 0, str(run)
    assert run.stdout == writable.stdout, str(run)
    if command in ("list", "status"):
        held = run.stdout if command == "status" else json.dumps(
            [r for r in json.loads(run.stdout) if r["name"] == "keep"])
        assert '"holders": 1' in held, "the live holder was not seen"
    assert fingerprint(repo) == before, "something changed"


def test_a_read_only_home_without_a_registry_lock_file_is_read_without_it(
        worked_in: GitRepo) -> None:
    """No lock file and no way to make one: nobody can hold that lock, so the reader
    reads without it."""
    repo = worked_in
    writable = repo.ok("list", "--json")
    (repo.sb.claims / ".registry").unlink()
    with read_only(repo.sb.vibe_home):
        run = repo.vwt("list", "--json")
    assert run.returncode == 0, str(run)
    assert run.stdout == writable.stdout
    assert not (repo.sb.claims / ".registry").exists()


def test_a_reader_of_a_read_only_view_still_waits_for_a_writer_holding_the_lock(
        worked_in: GitRepo, tmp_path: Path) -> None:
    """The same home seen through a read-only mount while a writer uses it: the reader
    takes the registry lock through a read-only descriptor (flock needs no write access),
    so it never reads a holder set in the middle of a change."""
    repo = worked_in
    if os.geteuid() != 0:
        pytest.skip("needs root for a read-only bind mount (chmod does not stop root)")
    view = tmp_path / "read-only-view"
    view.mkdir()
    if _mount("--bind", str(repo.sb.vibe_home), str(view)).returncode != 0:
        pytest.skip("cannot bind-mount here")
    registry = os.open(repo.sb.claims / ".registry", os.O_RDWR)
    waiting = repo.sb.claims / ".registry.waiting"
    waiting.touch()
    reader = None
    try:
        if _mount("-o", "remount,ro,bind", str(view)).returncode != 0:
            pytest.skip("cannot remount read-only here")
        fcntl.flock(registry, fcntl.LOCK_EX)  # a writer in the middle of a change
        env = dict(repo.sb.env, VIBE_HOME=str(view))
        reader = subprocess.Popen([VWT, "list", "--json"], cwd=repo.path, env=env,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        _wait_until(lambda: _is_locked_shared(waiting), "the reader never waited")
        assert reader.poll() is None, "the reader did not wait for the writer"
        fcntl.flock(registry, fcntl.LOCK_UN)
        out, err = reader.communicate(timeout=60)
        assert reader.returncode == 0, err
        assert [r["name"] for r in json.loads(out)] == ["keep", "other", "snap"]
    finally:
        os.close(registry)
        if reader is not None and reader.poll() is None:
            reader.kill()
            reader.wait()
        subprocess.run(["umount", str(view)], check=True)


def _is_locked_shared(path: Path) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def _wait_until(condition: Any, message: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(message)
        time.sleep(0.02)


def test_doctor_names_a_read_only_home_as_such_and_suggests_no_chmod(
        worked_in: GitRepo) -> None:
    repo = worked_in
    assert repo.ok("doctor", "--json")  # healthy while writable
    before = fingerprint(repo)
    with read_only(repo.sb.vibe_home):
        run = repo.vwt("doctor", "--json")
        plain = repo.vwt("doctor")
    assert run.returncode == 1, str(run)
    problems = json.loads(run.stdout)["problems"]
    assert [p["kind"] for p in problems] == ["read_only_home"], problems
    [problem] = problems
    assert problem["path"] == str(repo.sb.root)
    assert "read-only filesystem" in problem["detail"]
    assert "chmod" not in problem["fix"]
    assert "read-write" in problem["fix"] and "VIBE_HOME" in problem["fix"]
    assert "chmod" not in plain.stdout + plain.stderr
    assert fingerprint(repo) == before, "something changed"
