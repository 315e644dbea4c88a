"""Fixtures of the safety suite: real git repositories in a sandbox of their own.

Every test gets an isolated ``HOME``, ``VIBE_HOME``, a git that reads no system config
(``GIT_CONFIG_NOSYSTEM=1``) and a global config file of our making.  ``vwt`` is the real
executable.  ``check_state`` is the consistency oracle used after every crash and stress test:

* every record has a checkout that is a registered linked worktree on the recorded branch,
  and no record is still a bare reservation;
* every linked worktree of the repository under the root has a record, nothing is left in
  ``.trash``, no holder file is left, no checkout folder without a record;
* every branch the tool created is owned by a record or a recovery record;
* every port lease is a worktree's that is there, and no two leases share a port.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import SANDBOX_GITCONFIG, minutes_ago, sandbox_env
from conftest import VWT_BIN as VWT

SPEC_EXIT_CODES = {0, 1, 2, 3, 4}


def is_locked(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


@dataclass
class Run:
    args: Sequence[str]
    returncode: int
    stdout: str
    stderr: str
    elapsed: float

    def json(self) -> Any:
        return json.loads(self.stdout)

    def __str__(self) -> str:
        return (f"vwt {' '.join(self.args)} -> {self.returncode} in {self.elapsed:.1f}s\n"
                f"--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}")


def assert_no_traceback(run: Run) -> None:
    assert "Traceback" not in run.stderr, str(run)
    assert "Traceback" not in run.stdout, str(run)


class Sandbox:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.home = tmp / "home"
        self.home.mkdir()
        self.vibe_home = tmp / "vibe"
        self.root = self.vibe_home / "worktrees"
        self.claims = self.root / ".claims"
        self.trash = self.root / ".trash"
        self.outside = tmp / "outside"
        self.outside.mkdir()
        self.sentinel = self.outside / "SENTINEL.txt"
        self.sentinel.write_text("must survive\n")
        self.markers = tmp / "markers"
        self.markers.mkdir()
        self.gitconfig = tmp / "gitconfig"
        self.gitconfig.write_text(SANDBOX_GITCONFIG)
        # no GIT_TERMINAL_PROMPT here: the suite proves vwt sets it itself
        env = sandbox_env(tmp, self.home, self.vibe_home, self.gitconfig)
        self.env = env

    # ---------------------------------------------------------------- running things
    def git(self, *args: str, cwd: Path, check: bool = True, env_extra: dict | None = None
            ) -> str:
        env = dict(self.env)
        env.update(env_extra or {})
        proc = subprocess.run(["git", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=60)
        if check and proc.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr}")
        return proc.stdout.strip()

    def vwt(self, *args: str, cwd: Path, env_extra: dict | None = None, timeout: float = 60,
            crash_at: str | None = None, stdin: Any = subprocess.DEVNULL) -> Run:
        env = dict(self.env)
        env.update(env_extra or {})
        if crash_at:
            env["VWT_CRASH_AT"] = crash_at
        start = time.monotonic()
        proc = subprocess.run([VWT, *args], cwd=cwd, env=env, stdin=stdin,
                              capture_output=True, text=True, timeout=timeout)
        run = Run(args, proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)
        assert_no_traceback(run)
        if crash_at:
            assert run.returncode == -9, f"expected a SIGKILL at {crash_at}\n{run}"
        else:
            assert run.returncode in SPEC_EXIT_CODES, str(run)
        return run

    def ok(self, *args: str, cwd: Path, **kw: Any) -> Run:
        run = self.vwt(*args, cwd=cwd, **kw)
        assert run.returncode == 0, str(run)
        return run

    # ---------------------------------------------------------------- repositories
    def make_repo(self, name: str = "proj", commits: int = 2) -> GitRepo:
        path = (self.tmp / name).resolve()
        path.mkdir(parents=True)
        repo = GitRepo(self, path)
        repo.git("init", "-q", "-b", "main")
        repo.commit("initial", {"README.md": "# demo\n", "src/app.py": "print('hi')\n"})
        for i in range(1, commits):
            repo.commit(f"commit {i}", {f"notes/{i}.txt": f"note {i}\n"})
        return repo

    def make_origin_clone(self, name: str = "proj") -> GitRepo:
        upstream = self.make_repo(f"{name}-upstream")
        bare = self.tmp / f"{name}.git"
        self.git("clone", "-q", "--bare", str(upstream.path), str(bare), cwd=self.tmp)
        self.git("clone", "-q", str(bare), str(self.tmp / name), cwd=self.tmp)
        return GitRepo(self, (self.tmp / name).resolve())

    def marker(self, name: str) -> Path:
        return self.markers / name

    def fired_markers(self) -> list[str]:
        return sorted(p.name for p in self.markers.iterdir())


class GitRepo:
    def __init__(self, sb: Sandbox, path: Path) -> None:
        self.sb = sb
        self.path = path
        self.initial_branches = None  # set by snapshot_branches()

    def git(self, *args: str, cwd: Path | None = None, check: bool = True, **kw: Any) -> str:
        return self.sb.git(*args, cwd=cwd or self.path, check=check, **kw)

    def vwt(self, *args: str, **kw: Any) -> Run:
        return self.sb.vwt(*args, cwd=kw.pop("cwd", self.path), **kw)

    def ok(self, *args: str, **kw: Any) -> Run:
        return self.sb.ok(*args, cwd=kw.pop("cwd", self.path), **kw)

    def commit(self, message: str, files: dict[str, str] | None = None,
               cwd: Path | None = None) -> str:
        where = cwd or self.path
        for rel, text in (files or {}).items():
            target = where / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        self.git("add", "-A", cwd=where)
        self.git("commit", "-q", "--allow-empty", "-m", message, cwd=where)
        return self.git("rev-parse", "HEAD", cwd=where)

    @property
    def common_dir(self) -> Path:
        return Path(os.path.realpath(self.path / self.git("rev-parse", "--git-common-dir")))

    @property
    def bucket(self) -> str:
        digest = hashlib.sha256(str(self.common_dir).encode()).hexdigest()[:12]
        return f"{self.path.name}-{digest}"

    def checkout(self, name: str) -> Path:
        return self.sb.root / self.bucket / name

    def claim(self, name: str) -> Path:
        return self.sb.claims / self.bucket / name

    def record_path(self, name: str) -> Path:
        return self.claim(name) / "record.json"

    def recovery_path(self, name: str) -> Path:
        return self.claim(name) / "recovery.json"

    def record(self, name: str) -> dict[str, Any]:
        return json.loads(self.record_path(name).read_text())

    def age_records(self, minutes: float = 30) -> None:
        """Make every record of this bucket look `minutes` old (reservations too)."""
        for path in (self.sb.claims / self.bucket).glob("*/record.json"):
            data = json.loads(path.read_text())
            data["claimed_at"] = minutes_ago(minutes)
            path.write_text(json.dumps(data, indent=2))

    def branches(self) -> set[str]:
        out = self.git("for-each-ref", "--format=%(refname:short)", "refs/heads/")
        return {b for b in out.splitlines() if b}

    def ref_exists(self, ref: str) -> bool:
        return bool(self.git("rev-parse", "--verify", "--quiet", ref, check=False))

    def worktrees(self) -> dict[str, dict[str, str]]:
        out = self.git("worktree", "list", "--porcelain")
        found: dict[str, dict[str, str]] = {}
        current: dict[str, str] = {}
        for line in [*out.splitlines(), ""]:
            if not line:
                if current:
                    found[os.path.realpath(current["worktree"])] = current
                current = {}
                continue
            key, _, value = line.partition(" ")
            current[key] = value
        return found

    def snapshot_branches(self) -> None:
        self.initial_branches = self.branches()


def check_state(repo: GitRepo, *, allow_recovery_with_record: bool = False) -> None:
    """The consistency oracle (see the module docstring). Raises AssertionError."""
    sb = repo.sb
    problems: list[str] = []
    worktrees = repo.worktrees()
    bucket_claims = sb.claims / repo.bucket
    owned_branches: set[str] = set()
    recorded_checkouts: set[str] = set()
    if bucket_claims.is_dir():
        for folder in sorted(bucket_claims.iterdir()):
            name = folder.name
            record_path = folder / "record.json"
            recovery_path = folder / "recovery.json"
            holders = folder / "holders"
            if holders.is_dir():
                left = sorted(p.name for p in holders.iterdir())
                if left:
                    problems.append(f"{name}: holder files left behind: {left}")
            if recovery_path.exists():
                rec = json.loads(recovery_path.read_text())
                owned_branches.add(rec["branch"])
                if not repo.ref_exists(rec["snapshot_ref"]):
                    problems.append(f"{name}: recovery points at missing {rec['snapshot_ref']}")
            if not record_path.exists():
                continue
            data = json.loads(record_path.read_text())
            owned_branches.add(data["branch"])
            checkout = repo.checkout(name)
            recorded_checkouts.add(str(checkout))
            if data.get("base_commit") is None:
                problems.append(f"{name}: still only a reservation")
            if recovery_path.exists() and not allow_recovery_with_record:
                problems.append(f"{name}: has both record.json and recovery.json")
            if not checkout.is_dir():
                problems.append(f"{name}: record without checkout")
                continue
            if not (checkout / ".git").is_file():
                problems.append(f"{name}: checkout has no .git file")
            entry = worktrees.get(str(checkout))
            if entry is None:
                problems.append(f"{name}: checkout not in git worktree list")
            elif entry.get("branch") != f"refs/heads/{data['branch']}":
                problems.append(f"{name}: checkout on {entry.get('branch')}, "
                                f"record says {data['branch']}")
            if "prunable" in (entry or {}):
                problems.append(f"{name}: worktree entry is prunable")
    for path, entry in worktrees.items():
        if path == str(repo.path):
            continue
        if "prunable" in entry:
            problems.append(f"git worktree list has a prunable entry {path}")
        if path.startswith(str(sb.root) + os.sep) and path not in recorded_checkouts:
            problems.append(f"registered worktree {path} has no record")
    bucket_dir = sb.root / repo.bucket
    if bucket_dir.is_dir():
        for child in bucket_dir.iterdir():
            if str(child) not in recorded_checkouts:
                problems.append(f"checkout folder {child} has no record")
    if sb.trash.is_dir() and any(sb.trash.iterdir()):
        problems.append(f".trash not empty: {sorted(p.name for p in sb.trash.iterdir())}")
    if repo.initial_branches is not None:
        orphans = repo.branches() - repo.initial_branches - owned_branches
        if orphans:
            problems.append(f"orphaned branches: {sorted(orphans)}")
    problems += lease_problems(sb)
    assert not problems, "inconsistent state:\n  " + "\n  ".join(problems)


def lease_problems(sb: Sandbox) -> list[str]:
    """A lease of a worktree that is gone, or a port two leases share (SPEC §17)."""
    table_file = sb.claims / ".ports.json"
    if not table_file.exists():
        return []
    problems = []
    owner: dict[int, str] = {}
    for key, first in json.loads(table_file.read_text()).items():
        record = sb.claims / key / "record.json"
        if not record.exists():
            problems.append(f"lease {key} ({first}) of a worktree that is gone")
            continue
        ports = json.loads(record.read_text()).get("ports") or [first]
        for port in ports:
            if port in owner:
                problems.append(f"port {port} leased to {key} and to {owner[port]}")
            owner[port] = key
    return problems


HOLDER_SCRIPT = r"""
import fcntl, os, sys
claims, path = sys.argv[1], sys.argv[2]
os.makedirs(claims, exist_ok=True)
reg = os.open(os.path.join(claims, ".registry"), os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(reg, fcntl.LOCK_EX)
os.makedirs(os.path.dirname(path), exist_ok=True)
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.close(reg)
print("ready", flush=True)
sys.stdin.read()
"""


class ForeignHolder:
    def __init__(self, path: Path, proc: subprocess.Popen[str]) -> None:
        self.path = path
        self.proc = proc

    def release(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


@pytest.fixture
def sb(tmp_path: Path) -> Iterator[Sandbox]:
    sandbox = Sandbox(tmp_path.resolve())
    yield sandbox
    assert sandbox.sentinel.read_text() == "must survive\n", "a file outside the root was hit"


@pytest.fixture
def repo(sb: Sandbox) -> GitRepo:
    return sb.make_repo()


@pytest.fixture
def holder(sb: Sandbox) -> Iterator[Any]:
    started: list[ForeignHolder] = []

    def start(repo: GitRepo, name: str, holder_id: str = "vibe-session-1") -> ForeignHolder:
        path = repo.claim(name) / "holders" / holder_id
        proc = subprocess.Popen([sys.executable, "-c", HOLDER_SCRIPT, str(sb.claims), str(path)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        h = ForeignHolder(path, proc)
        started.append(h)
        return h

    yield start
    for h in started:
        h.kill()
