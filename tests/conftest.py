"""Shared vocabulary for the black-box tests of the `vwt` command.

Every test gets a sandbox of its own: a temporary ``HOME``, a temporary ``VIBE_HOME``, a git that
reads no system config and a global config file of our making (user identity,
``init.defaultBranch=main``).  The fixtures below let a test read as a short story::

    def test_clean_worktree_is_removed(repo, vwt):
        wt = vwt.new("feature")
        result = vwt("rm", "feature", "--json")
        assert result.json()["outcome"] == "removed"

Fixtures
--------
``sandbox``      the isolated environment (paths, env dict, global git config)
``layout``       the on-disk layout of ``$VIBE_HOME/worktrees`` (buckets, claims, records)
``make_repo``    factory for small real repositories
``repo``         a repository with a few commits; also the default cwd of ``vwt``
``origin_repo``  a clone of a bare "origin" (``refs/remotes/origin/HEAD`` exists); ``.upstream``
                 can advance origin after the clone
``vwt``          runs the real executable: ``vwt(*args, cwd=, input=, env_extra=)`` -> ``Result``
``vwt_tty``      runs it on a pseudo-terminal, answering prompts
``holder``       factory for foreign holder processes (a flock-ed file under ``holders/``)
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import functools
import hashlib
import importlib.util
import json
import os
import select
import shutil
import subprocess
import sys
import termios
import textwrap
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# --------------------------------------------------------------------------------------------
# The executable under test
# --------------------------------------------------------------------------------------------


def _find_vwt() -> str:
    override = os.environ.get("VWT_BIN")
    if override:
        return override
    candidate = Path(sys.executable).with_name("vwt")
    if candidate.exists():
        return str(candidate)
    found = shutil.which("vwt")
    if found:
        return found
    return "/work/main/.venv/bin/vwt"


VWT_BIN = _find_vwt()
VIBE_WORKTREE_BIN = str(Path(VWT_BIN).with_name("vibe-worktree"))
DEFAULT_TIMEOUT = 60

SNAPSHOT_IDENTITY = "vibe-worktree <vwt@localhost>"

# Environment variables from the developer's shell that would leak into the sandbox.
_SCRUBBED = (
    "VIBE_HOME",
    "VIBE_WORKTREE_LIMIT",
    "VWT_CRASH_AT",
    "VWT_HOLDER_ID",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_SSH_COMMAND",
    "GIT_SSH",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "EMAIL",
    "XDG_CONFIG_HOME",
    "PYTHONSTARTUP",
)

# The global git config of every sandbox (this suite's and the safety suite's).
SANDBOX_GITCONFIG = textwrap.dedent(
    """\
    [user]
    \tname = Test User
    \temail = test@example.com
    [init]
    \tdefaultBranch = main
    [advice]
    \tdetachedHead = false
    [protocol "file"]
    \tallow = always
    """
)


def sandbox_env(tmp: Path, home: Path, vibe_home: Path, gitconfig: Path) -> dict[str, str]:
    """The developer's environment without what would leak in, pointed at the sandbox."""
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    env.update(
        HOME=str(home),
        VIBE_HOME=str(vibe_home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=str(gitconfig),
        GIT_CEILING_DIRECTORIES=str(tmp),
        LC_ALL="C.UTF-8",
        LANG="C.UTF-8",
        PYTHONDONTWRITEBYTECODE="1",
        SHELL="/bin/sh",
    )
    return env


def utc_z(moment: dt.datetime | None = None) -> str:
    """A timestamp in the record format: UTC, ISO-8601, microseconds, ``Z`` suffix."""
    moment = moment or dt.datetime.now(dt.UTC)
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def minutes_ago(minutes: float) -> str:
    return utc_z(dt.datetime.now(dt.UTC) - dt.timedelta(minutes=minutes))


def days_ago(days: float) -> str:
    return utc_z(dt.datetime.now(dt.UTC) - dt.timedelta(days=days))


# --------------------------------------------------------------------------------------------
# Sandbox
# --------------------------------------------------------------------------------------------


@dataclass
class Sandbox:
    tmp: Path
    home: Path  # $HOME
    vibe_home: Path  # $VIBE_HOME
    gitconfig: Path  # $GIT_CONFIG_GLOBAL
    env: dict[str, str]
    default_cwd: Path

    def git_global(self, text: str) -> None:
        """Append raw text to the global git config."""
        with self.gitconfig.open("a") as fh:
            fh.write(textwrap.dedent(text))

    def run_git(
        self, *args: str, cwd: Path | None = None, check: bool = True, env_extra: dict | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = dict(self.env)
        env.update(env_extra or {})
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd or self.default_cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=DEFAULT_TIMEOUT,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"git {' '.join(args)} failed ({proc.returncode}) in {cwd}:\n{proc.stderr}"
            )
        return proc


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    tmp = tmp_path.resolve()
    home = tmp / "home"
    home.mkdir()
    vibe_home = tmp / "vibe"
    gitconfig = tmp / "gitconfig"
    gitconfig.write_text(SANDBOX_GITCONFIG)
    env = sandbox_env(tmp, home, vibe_home, gitconfig)
    env["GIT_TERMINAL_PROMPT"] = "0"
    outside = tmp / "outside"
    outside.mkdir()
    return Sandbox(tmp, home, vibe_home, gitconfig, env, default_cwd=outside)


# --------------------------------------------------------------------------------------------
# Layout of $VIBE_HOME/worktrees
# --------------------------------------------------------------------------------------------


@dataclass
class Layout:
    home: Path

    @property
    def root(self) -> Path:
        return self.home / "worktrees"

    @property
    def claims(self) -> Path:
        return self.root / ".claims"

    @property
    def trash(self) -> Path:
        return self.root / ".trash"

    def checkout(self, bucket: str, name: str) -> Path:
        return self.root / bucket / name

    def claim(self, bucket: str, name: str) -> Path:
        return self.claims / bucket / name

    def record_path(self, bucket: str, name: str) -> Path:
        return self.claim(bucket, name) / "record.json"

    def recovery_path(self, bucket: str, name: str) -> Path:
        return self.claim(bucket, name) / "recovery.json"

    def holders_dir(self, bucket: str, name: str) -> Path:
        return self.claim(bucket, name) / "holders"

    def read_record(self, bucket: str, name: str) -> dict[str, Any]:
        return json.loads(self.record_path(bucket, name).read_text(encoding="utf-8"))

    def read_recovery(self, bucket: str, name: str) -> dict[str, Any]:
        return json.loads(self.recovery_path(bucket, name).read_text(encoding="utf-8"))

    def write_record(self, bucket: str, name: str, record: dict[str, Any]) -> Path:
        path = self.record_path(bucket, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        os.chmod(path, 0o600)
        return path

    def edit_record(self, bucket: str, name: str, **changes: Any) -> dict[str, Any]:
        record = self.read_record(bucket, name)
        record.update(changes)
        self.write_record(bucket, name, record)
        return record

    def holder_files(self, bucket: str, name: str) -> list[Path]:
        d = self.holders_dir(bucket, name)
        return sorted(d.iterdir()) if d.is_dir() else []

    def live_holders(self, bucket: str, name: str) -> list[Path]:
        return [p for p in self.holder_files(bucket, name) if is_locked(p)]

    def trash_entries(self) -> list[Path]:
        return sorted(self.trash.iterdir()) if self.trash.is_dir() else []


def is_locked(path: Path) -> bool:
    """True when another open file description holds an flock on ``path``."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


@pytest.fixture
def layout(sandbox: Sandbox) -> Layout:
    return Layout(sandbox.vibe_home)


def bucket_for(repo_root: Path, common_git_dir: Path) -> str:
    digest = hashlib.sha256(str(common_git_dir).encode()).hexdigest()[:12]
    return f"{repo_root.name}-{digest}"


# --------------------------------------------------------------------------------------------
# Repositories
# --------------------------------------------------------------------------------------------


@dataclass
class Repo:
    path: Path
    sandbox: Sandbox
    layout: Layout

    def git(self, *args: str, check: bool = True, cwd: Path | None = None) -> str:
        return self.sandbox.run_git(*args, cwd=cwd or self.path, check=check).stdout.strip()

    def git_ok(self, *args: str, cwd: Path | None = None) -> bool:
        return self.sandbox.run_git(*args, cwd=cwd or self.path, check=False).returncode == 0

    def write(self, rel: str, text: str = "content\n", base: Path | None = None) -> Path:
        target = Path(base or self.path) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        return target

    def commit(self, message: str = "change", files: dict[str, str] | None = None,
               cwd: Path | None = None) -> str:
        where = cwd or self.path
        for rel, text in (files or {}).items():
            self.write(rel, text, base=where)
        self.git("add", "-A", cwd=where)
        self.git("commit", "-q", "--allow-empty", "-m", message, cwd=where)
        return self.git("rev-parse", "HEAD", cwd=where)

    def head(self, cwd: Path | None = None) -> str:
        return self.git("rev-parse", "HEAD", cwd=cwd)

    def rev(self, ref: str) -> str:
        return self.git("rev-parse", "--verify", "--quiet", ref)

    def ref_exists(self, ref: str) -> bool:
        return self.git_ok("rev-parse", "--verify", "--quiet", ref)

    def branch_exists(self, branch: str) -> bool:
        return self.ref_exists(f"refs/heads/{branch}")

    def current_branch(self, cwd: Path | None = None) -> str:
        return self.git("symbolic-ref", "--short", "HEAD", cwd=cwd)

    def worktree_paths(self) -> list[Path]:
        out = self.git("worktree", "list", "--porcelain")
        return [Path(line.split(" ", 1)[1]) for line in out.splitlines()
                if line.startswith("worktree ")]

    def porcelain(self, cwd: Path) -> str:
        return self.sandbox.run_git(
            "status", "--porcelain", "--untracked-files=all", cwd=cwd
        ).stdout

    @property
    def common_dir(self) -> Path:
        raw = self.git("rev-parse", "--git-common-dir")
        return (self.path / raw).resolve()

    @property
    def bucket(self) -> str:
        return bucket_for(self.path.resolve(), self.common_dir)

    # layout shortcuts for this repository's bucket
    def checkout(self, name: str) -> Path:
        return self.layout.checkout(self.bucket, name)

    def claim(self, name: str) -> Path:
        return self.layout.claim(self.bucket, name)

    def record_path(self, name: str) -> Path:
        return self.layout.record_path(self.bucket, name)

    def record(self, name: str) -> dict[str, Any]:
        return self.layout.read_record(self.bucket, name)

    def recovery_path(self, name: str) -> Path:
        return self.layout.recovery_path(self.bucket, name)

    def recovery(self, name: str) -> dict[str, Any]:
        return self.layout.read_recovery(self.bucket, name)

    def edit_record(self, name: str, **changes: Any) -> dict[str, Any]:
        return self.layout.edit_record(self.bucket, name, **changes)

    def write_record(self, name: str, record: dict[str, Any]) -> Path:
        return self.layout.write_record(self.bucket, name, record)

    def holders_dir(self, name: str) -> Path:
        return self.layout.holders_dir(self.bucket, name)

    def live_holders(self, name: str) -> list[Path]:
        return self.layout.live_holders(self.bucket, name)

    def vibe_record(self, name: str, branch: str, **overrides: Any) -> dict[str, Any]:
        """A record as Mistral Vibe writes it, for a checkout at ``self.checkout(name)``."""
        path = self.checkout(name)
        base = self.head(cwd=path) if path.exists() else None
        record: dict[str, Any] = {
            "version": 1,
            "name": name,
            "branch": branch,
            "repo_root": str(self.path),
            "base_commit": base,
            "branch_created": True,
            "claimed_at": utc_z(),
            "session_dirs": [],
            "reap_requested": False,
            "moved_checkout_admin": None,
        }
        record.update(overrides)
        return record

    def add_vibe_worktree(self, name: str, branch: str | None = None, **overrides: Any) -> Path:
        """A worktree created by plain git plus a hand-written record, the way Vibe does it."""
        branch = branch or f"vibe/{name}"
        path = self.checkout(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.git("worktree", "add", "-q", "--no-track", "-b", branch, str(path), "HEAD")
        self.write_record(name, self.vibe_record(name, branch, **overrides))
        return path


def _init_repo(sandbox: Sandbox, layout: Layout, path: Path, commits: int = 3) -> Repo:
    path.mkdir(parents=True, exist_ok=True)
    repo = Repo(path.resolve(), sandbox, layout)
    repo.git("init", "-q", "-b", "main")
    repo.commit("initial", {"README.md": "# demo\n", "src/app.py": "print('hi')\n"})
    for i in range(1, commits):
        repo.commit(f"commit {i}", {f"notes/{i}.txt": f"note {i}\n"})
    return repo


@pytest.fixture
def make_repo(sandbox: Sandbox, layout: Layout) -> Callable[..., Repo]:
    def factory(name: str = "repo", commits: int = 3) -> Repo:
        return _init_repo(sandbox, layout, sandbox.tmp / name, commits)

    return factory


@pytest.fixture
def repo(make_repo: Callable[..., Repo], sandbox: Sandbox) -> Repo:
    r = make_repo("repo")
    sandbox.default_cwd = r.path
    return r


@dataclass
class Upstream:
    """The far side of ``origin_repo``: a bare repository and a second clone that pushes to it."""

    bare: Path
    pusher: Repo

    def advance(self, message: str = "upstream work", files: dict[str, str] | None = None) -> str:
        sha = self.pusher.commit(message, files or {f"upstream/{message.replace(' ', '_')}": "x\n"})
        self.pusher.git("push", "-q", "origin", "HEAD:main")
        return sha


@dataclass
class OriginRepo(Repo):
    upstream: Upstream | None = None


@pytest.fixture
def origin_repo(sandbox: Sandbox, layout: Layout, make_repo: Callable[..., Repo]) -> OriginRepo:
    seed = make_repo("seed")
    bare = sandbox.tmp / "origin.git"
    sandbox.run_git("clone", "-q", "--bare", str(seed.path), str(bare), cwd=sandbox.tmp)
    sandbox.run_git("clone", "-q", str(bare), str(sandbox.tmp / "project"), cwd=sandbox.tmp)
    sandbox.run_git("clone", "-q", str(bare), str(sandbox.tmp / "pusher"), cwd=sandbox.tmp)
    pusher = Repo(sandbox.tmp / "pusher", sandbox, layout)
    clone = OriginRepo(sandbox.tmp / "project", sandbox, layout, Upstream(bare, pusher))
    assert clone.ref_exists("refs/remotes/origin/HEAD")
    sandbox.default_cwd = clone.path
    return clone


# --------------------------------------------------------------------------------------------
# Running vwt
# --------------------------------------------------------------------------------------------


@dataclass
class Result:
    args: Sequence[str]
    code: int
    out: str
    err: str

    def json(self) -> Any:
        try:
            return json.loads(self.out)
        except json.JSONDecodeError as exc:  # pragma: no cover - diagnostic only
            raise AssertionError(
                f"stdout of vwt {' '.join(self.args)} is not one JSON document ({exc}):\n"
                f"{self.out!r}\nstderr:\n{self.err}"
            ) from None

    @property
    def err_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]

    def __str__(self) -> str:
        return (
            f"vwt {' '.join(self.args)} -> exit {self.code}\n"
            f"--- stdout ---\n{self.out}\n--- stderr ---\n{self.err}"
        )


def _json_requested(args: Sequence[str]) -> bool:
    for a in args:
        if a == "--":
            return False
        if a == "--json":
            return True
    return False


def check_universal_contract(result: Result) -> None:
    """What holds for every invocation: no traceback; --json gives one document or nothing,
    and that document matches its command's JSON Schema."""
    assert "Traceback" not in result.err, str(result)
    assert "Traceback" not in result.out, str(result)
    if _json_requested(result.args) and (result.code in (0, 3, 4) or result.out.strip()):
        # exactly one JSON document, nothing else on stdout
        assert_matches_schema(command_of(result.args), result.json())


def command_of(args: Sequence[str]) -> str | None:
    """The subcommand of a vwt command line (global options come first)."""
    words = iter(args)
    for word in words:
        if word in ("--home", "-C"):
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def assert_matches_schema(schema_name: str | None, document: Any) -> None:
    """`document` is valid against the shipped schema `schema_name` (when there is one: a
    separate test requires one for every command that prints JSON)."""
    from jsonschema.exceptions import ValidationError

    if schema_name not in _schema_names():
        return
    try:
        _schema_validator(schema_name).validate(document)
    except ValidationError as exc:
        raise AssertionError(
            f"the JSON of {schema_name} does not match src/vibe_worktree/schemas/"
            f"{schema_name}.json at {exc.json_path}: {exc.message} (a new or changed field "
            f"needs its schema updated too)\n{json.dumps(document, indent=2)}"
        ) from None


@functools.cache
def _schema_names() -> frozenset[str]:
    from vibe_worktree import schema

    return frozenset(schema.names())


@functools.cache
def _schema_validator(schema_name: str) -> Any:
    from jsonschema import Draft202012Validator

    from vibe_worktree import schema

    return Draft202012Validator(schema.load(schema_name))


class Vwt:
    def __init__(self, sandbox: Sandbox, layout: Layout) -> None:
        self.sandbox = sandbox
        self.layout = layout
        self.started: list[subprocess.Popen[str]] = []

    def env(self, env_extra: dict[str, str | None] | None = None) -> dict[str, str]:
        env = dict(self.sandbox.env)
        for k, v in (env_extra or {}).items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        return env

    def __call__(
        self,
        *args: str,
        cwd: Path | str | None = None,
        input: str | None = None,
        env_extra: dict[str, str | None] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        exe: str = VWT_BIN,
    ) -> Result:
        proc = subprocess.run(
            [exe, *args],
            cwd=cwd or self.sandbox.default_cwd,
            env=self.env(env_extra),
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        result = Result(list(args), proc.returncode, proc.stdout, proc.stderr)
        check_universal_contract(result)
        return result

    def ok(self, *args: str, **kw: Any) -> Result:
        result = self(*args, **kw)
        assert result.code == 0, str(result)
        return result

    def new(self, *args: str, **kw: Any) -> dict[str, Any]:
        """``vwt new ARGS --json``, asserting success; returns the JSON result."""
        return self.ok("new", *args, "--json", **kw).json()

    def list(self, *args: str, **kw: Any) -> list[dict[str, Any]]:
        return self.ok("list", *args, "--json", **kw).json()

    def entry(self, name: str, *args: str, **kw: Any) -> dict[str, Any] | None:
        for item in self.list(*args, **kw):
            if item["name"] == name:
                return item
        return None

    def spawn(self, *args: str, cwd: Path | None = None,
              env_extra: dict[str, str | None] | None = None,
              new_session: bool = False) -> subprocess.Popen[str]:
        """Start vwt in the background (``new_session``: in its own process group)."""
        proc = subprocess.Popen(
            [VWT_BIN, *args],
            cwd=cwd or self.sandbox.default_cwd,
            env=self.env(env_extra),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=new_session,
        )
        self.started.append(proc)
        return proc

    def cleanup(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                proc.kill()
            with contextlib.suppress(Exception):
                proc.communicate(timeout=10)


@pytest.fixture
def vwt(sandbox: Sandbox, layout: Layout) -> Iterator[Vwt]:
    runner = Vwt(sandbox, layout)
    yield runner
    runner.cleanup()


def assert_error(result: Result, code: int, *, max_lines: int = 2) -> None:
    """An error: the expected exit status and a short message on stderr, never a traceback."""
    assert result.code == code, str(result)
    lines = result.err_lines
    assert lines, f"expected a message on stderr\n{result}"
    assert len(lines) <= max_lines, f"error message longer than {max_lines} lines\n{result}"


# --------------------------------------------------------------------------------------------
# Pseudo-terminal runs
# --------------------------------------------------------------------------------------------


@dataclass
class TtyResult:
    code: int
    output: str
    answers_sent: int


def _make_controlling_tty() -> None:  # runs in the child after setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@pytest.fixture
def vwt_tty(sandbox: Sandbox) -> Callable[..., TtyResult]:
    """Run vwt with a terminal on stdin/stdout/stderr; answer each prompt in turn.

    An answer is sent once output has appeared and then paused (a prompt waiting for input).
    Echo is off, so only the program's own output is collected.
    """

    def run(*args: str, answers: Sequence[str] = (), cwd: Path | None = None,
            env_extra: dict[str, str] | None = None, timeout: float = 30,
            exe: Sequence[str] = (VWT_BIN,)) -> TtyResult:
        master, slave = os.openpty()
        attrs = termios.tcgetattr(slave)
        attrs[3] &= ~termios.ECHO
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
        env = dict(sandbox.env)
        env.update(env_extra or {})
        env.setdefault("TERM", "xterm")
        proc = subprocess.Popen(
            [*exe, *args],
            cwd=cwd or sandbox.default_cwd,
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            preexec_fn=_make_controlling_tty,
        )
        os.close(slave)
        pending = list(answers)
        sent = 0
        buf = b""
        answered_at = 0
        last_change = time.monotonic()
        deadline = time.monotonic() + timeout
        try:
            while True:
                ready, _, _ = select.select([master], [], [], 0.05)
                now = time.monotonic()
                if ready:
                    try:
                        data = os.read(master, 65536)
                    except OSError:
                        break
                    if not data:
                        break
                    buf += data
                    last_change = now
                    continue
                if proc.poll() is not None:
                    # drain whatever is left
                    while select.select([master], [], [], 0.05)[0]:
                        try:
                            data = os.read(master, 65536)
                        except OSError:
                            data = b""
                        if not data:
                            break
                        buf += data
                    break
                if pending and len(buf) > answered_at and now - last_change > 0.2:
                    os.write(master, (pending.pop(0) + "\n").encode())
                    sent += 1
                    answered_at = len(buf)
                if now > deadline:
                    proc.kill()
                    raise AssertionError(f"vwt {' '.join(args)} hung on a terminal:\n{buf!r}")
            code = proc.wait(timeout=timeout)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            os.close(master)
        output = buf.decode(errors="replace").replace("\r\n", "\n")
        assert "Traceback" not in output, output
        return TtyResult(code, output, sent)

    return run


# --------------------------------------------------------------------------------------------
# Foreign holders (another tool, e.g. Mistral Vibe, holding a worktree)
# --------------------------------------------------------------------------------------------

_HOLDER_SCRIPT = r"""
import fcntl, os, sys
claims, holder = sys.argv[1], sys.argv[2]
os.makedirs(claims, exist_ok=True)
reg = os.open(os.path.join(claims, ".registry"), os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(reg, fcntl.LOCK_EX)
os.makedirs(os.path.dirname(holder), exist_ok=True)
fd = os.open(holder, os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
fcntl.flock(reg, fcntl.LOCK_UN)
os.close(reg)
sys.stdout.write("ready\n")
sys.stdout.flush()
sys.stdin.read()
"""


@dataclass
class ForeignHolder:
    path: Path
    proc: subprocess.Popen[str]

    def kill(self) -> None:
        """Die without cleaning up: the holder file stays behind, unlocked (stale)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream:
                stream.close()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None


_LOCK_SCRIPT = r"""
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
sys.stdout.write("ready\n")
sys.stdout.flush()
sys.stdin.read()
"""


@pytest.fixture
def foreign_lock() -> Iterator[Callable[[Path], ForeignHolder]]:
    """Another process holding an exclusive flock on any file (e.g. ``.claims/.prune``)."""
    started: list[ForeignHolder] = []

    def take(path: Path) -> ForeignHolder:
        path.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.Popen([sys.executable, "-c", _LOCK_SCRIPT, str(path)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert proc.stdout and proc.stdout.readline().strip() == "ready"
        lock = ForeignHolder(path, proc)
        started.append(lock)
        return lock

    yield take
    for lock in started:
        lock.kill()


@pytest.fixture
def holder(layout: Layout) -> Iterator[Callable[..., ForeignHolder]]:
    started: list[ForeignHolder] = []

    def start(bucket: str, name: str, holder_id: str = "vibe-session-1") -> ForeignHolder:
        path = layout.holders_dir(bucket, name) / holder_id
        proc = subprocess.Popen(
            [sys.executable, "-c", _HOLDER_SCRIPT, str(layout.claims), str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.strip() == "ready", "foreign holder failed to start"
        h = ForeignHolder(path, proc)
        started.append(h)
        assert is_locked(path)
        return h

    yield start
    for h in started:
        h.kill()


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def wait_for(predicate: Callable[[], Any], timeout: float = 15.0, interval: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(interval)


MCP_INSTALLED = importlib.util.find_spec("mcp") is not None


def mcp_send(proc: Any, message: dict[str, Any]) -> None:
    """One JSON-RPC message to a `vwt mcp` process on stdio."""
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()


def mcp_answer(proc: Any, want_id: int) -> dict[str, Any] | None:
    """The answer to request `want_id` (other messages skipped); None if the server ended."""
    while True:
        line = proc.stdout.readline()
        if not line:
            return None
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == want_id:
            return message


@contextlib.contextmanager
def mcp_session(vwt: Any, cwd: Path) -> Iterator[Any]:
    """A `vwt mcp` process on stdio, initialised; closed (or killed) afterwards."""
    proc = subprocess.Popen([VWT_BIN, "mcp"], cwd=cwd, env=vwt.env(), text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        mcp_send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                        "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                                   "clientInfo": {"name": "test", "version": "0"}}})
        assert mcp_answer(proc, 1) is not None
        mcp_send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield proc
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=15)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def squash_merge_on_the_forge(origin_repo: Any, branch: str, worktree: str | Path) -> None:
    """What a forge's "squash and merge" does: `branch` pushed from `worktree`, squashed
    into origin's main by someone else; the local repository has not fetched it."""
    origin_repo.git("push", "-q", "origin", branch, cwd=worktree)
    pusher = origin_repo.upstream.pusher
    pusher.git("fetch", "-q", "origin", branch)
    pusher.git("merge", "-q", "--squash", "FETCH_HEAD")
    pusher.git("commit", "-q", "-m", "Feature (#1)")
    pusher.git("push", "-q", "origin", "HEAD:main")


def tree_files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative path -> bytes), ``.git`` excluded."""
    files: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for fn in filenames:
            if fn == ".git":
                continue
            p = Path(dirpath) / fn
            files[str(p.relative_to(root))] = p.read_bytes()
    return files


def porcelain_paths(text: str) -> set[str]:
    return {line[3:] for line in text.splitlines() if line.strip()}


@dataclass
class Waiter:
    """A script for ``vwt run NAME -- python waiter.py``: signals start, waits to be released."""

    script: Path
    started: Path
    release: Path

    def command(self) -> list[str]:
        return [sys.executable, str(self.script), str(self.started), str(self.release)]


@pytest.fixture
def waiter(sandbox: Sandbox) -> Waiter:
    script = sandbox.tmp / "waiter.py"
    script.write_text(
        textwrap.dedent(
            """\
            import os, sys, time
            started, release = sys.argv[1], sys.argv[2]
            with open(started, "w") as fh:
                fh.write(os.getcwd())
            deadline = time.time() + 60
            while not os.path.exists(release) and time.time() < deadline:
                time.sleep(0.02)
            sys.exit(0)
            """
        )
    )
    return Waiter(script, sandbox.tmp / "waiter.started", sandbox.tmp / "waiter.release")


def make_racily_clean(repo: Repo, checkout: Path, rel: str, text: str) -> None:
    """Rewrite `rel` in `checkout` with `text` of the same size inside the clock tick of its
    index: git can then tell the change only by the index file's own mtime (a "racily
    clean" entry), which every copy of the index must keep. The file's ctime cannot be set
    back; git is told not to trust it, as when the rewrite falls in the tick of the write."""
    repo.git("config", "core.trustctime", "false", cwd=checkout)
    path = checkout / rel
    assert len(text.encode()) == path.stat().st_size, "the point is an unchanged size"
    tick = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(tick, tick))
    index = Path(repo.git("rev-parse", "--path-format=absolute", "--git-path", "index",
                          cwd=checkout))
    os.utime(index, ns=(tick, tick))
