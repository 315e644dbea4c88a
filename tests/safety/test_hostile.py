"""Hostile repositories and input.

Housekeeping (`list`, `status`, `rm`, `snapshot`, `prune`) must never run a command the
repository's config names (planted scripts touch a marker file), `new` must not hang on
a bad remote nor prompt, symlinks and forged records must never make vwt act outside the
managed root (the sandbox's sentinel and every planted outside file must survive).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import socket
import subprocess
import termios
import threading
import time
from pathlib import Path

import pytest

from .conftest import VWT, GitRepo, Run, Sandbox, assert_no_traceback

pytestmark = pytest.mark.timeout(90)

HOUSEKEEPING = [
    ("list", "--json"), ("list", "--all", "--json"), ("status", "w", "--json"),
    ("snapshot", "w", "--json"), ("prune", "--keep", "0", "--json"), ("rm", "w", "-y", "--json"),
]


def script(sb: Sandbox, name: str, body: str = "") -> str:
    """An executable that touches markers/<name> and then does `body`."""
    path = sb.tmp / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"#!/bin/sh\ntouch '{sb.marker(name)}'\n{body}\n")
    path.chmod(0o755)
    return str(path)


def tree_digest(folder: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for f in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            p = os.path.join(dirpath, f)
            if os.path.islink(p):
                out[os.path.relpath(p, folder)] = "link:" + os.readlink(p)
            else:
                out[os.path.relpath(p, folder)] = hashlib.sha256(Path(p).read_bytes()).hexdigest()
    return out


def make_dirty(checkout: Path) -> None:
    (checkout / "README.md").write_text("# demo\nuser edit\n")
    (checkout / "new-work.md").write_text("untracked\n")


# ----------------------------------------------------------------------- hostile config
def plant_hooks(sb: Sandbox, hooks_dir: Path) -> None:
    hooks_dir.mkdir(parents=True, exist_ok=True)
    for hook in ("reference-transaction", "post-checkout", "pre-commit", "post-commit",
                 "post-index-change", "pre-auto-gc", "post-rewrite"):
        target = hooks_dir / hook
        target.write_text(f"#!/bin/sh\ntouch '{sb.marker('hook-' + hook)}'\nexit 0\n")
        target.chmod(0o755)


def hostile_config(sb: Sandbox, repo: GitRepo, *, filters: bool) -> None:
    git = repo.git
    git("config", "core.fsmonitor", script(sb, "fsmonitor", "exit 1"))
    git("config", "core.hooksPath", str(sb.tmp / "evil-hooks"))
    plant_hooks(sb, sb.tmp / "evil-hooks")
    plant_hooks(sb, repo.common_dir / "hooks")
    git("config", "diff.external", script(sb, "diff-external"))
    git("config", "core.pager", script(sb, "pager", "cat"))
    git("config", "gpg.program", script(sb, "gpg"))
    git("config", "commit.gpgSign", "true")
    git("config", "core.askPass", script(sb, "askpass"))
    git("config", "core.sshCommand", script(sb, "ssh"))
    included = sb.tmp / "included.gitconfig"
    lines = [f"[core]\n\tfsmonitor = {script(sb, 'fsmonitor-included', 'exit 1')}\n",
             f"\thooksPath = {sb.tmp / 'evil-hooks'}\n"]
    if filters:
        lines.append(f'[filter "inc"]\n\tclean = {script(sb, "inc-clean", "cat")}\n'
                     f'\tsmudge = {script(sb, "inc-smudge", "cat")}\n')
        git("config", "filter.evil.clean", script(sb, "clean", "cat"))
        git("config", "filter.evil.smudge", script(sb, "smudge", "cat"))
        git("config", "filter.proc.process", script(sb, "process", "exit 1"))
        git("config", "diff.evil.textconv", script(sb, "textconv", "cat"))
    included.write_text("".join(lines))
    git("config", "include.path", str(included))


def touch_tracked(checkout: Path) -> None:
    """Same size, new mtime: git status must re-read the content (and would filter it)."""
    for rel in ("a.evil", "b.proc", "c.inc"):
        p = checkout / rel
        if p.exists():
            os.utime(p, (time.time() + 5, time.time() + 5))


@pytest.mark.parametrize("filters", [False, True], ids=["hooks-fsmonitor", "filters"])
def test_housekeeping_never_runs_repository_commands(sb: Sandbox, repo: GitRepo,
                                                     filters: bool) -> None:
    if filters:
        repo.commit("filtered files", {
            ".gitattributes": "*.evil filter=evil diff=evil\n*.proc filter=proc\n"
                              "*.inc filter=inc\n",
            "a.evil": "A\n", "b.proc": "B\n", "c.inc": "C\n"})
    checkout = Path(repo.ok("new", "w", "--json").json()["path"])
    make_dirty(checkout)
    hostile_config(sb, repo, filters=filters)
    touch_tracked(checkout)
    for marker in sb.markers.iterdir():
        marker.unlink()
    for args in HOUSEKEEPING:
        touch_tracked(checkout)
        inside = args[0] in ("list", "status") and checkout.is_dir()
        run = repo.vwt(*args, cwd=checkout if inside else repo.path)
        assert_no_traceback(run)
        assert sb.fired_markers() == [], f"vwt {' '.join(args)} ran {sb.fired_markers()}"
    if filters:  # a snapshot refuses rather than run or bypass the filter: work is kept
        assert (checkout / "new-work.md").read_text() == "untracked\n"
    else:  # rm -y (or prune) removed it with a snapshot, without any hook
        assert not checkout.exists()
        assert repo.ref_exists("refs/vibe/reaped/w")  # prune's snapshot; rm then forgot it


def test_filter_driver_with_equals_sign_in_its_name_is_neutralised(sb: Sandbox,
                                                                    repo: GitRepo) -> None:
    """`-c filter.a=b.clean=` is parsed by git as key `filter.a` = `b.clean=`: a driver
    whose name contains `=` is not neutralised by `-c` and runs during `vwt status`."""
    repo.commit("filtered", {".gitattributes": "*.dat filter=a=b\n", "x.dat": "X\n"})
    checkout = Path(repo.ok("new", "w", "--json").json()["path"])
    repo.git("config", "filter.a=b.clean", script(sb, "eq-clean", "cat"))
    repo.git("config", "filter.a=b.smudge", script(sb, "eq-smudge", "cat"))
    assert repo.git("check-attr", "filter", "x.dat", cwd=checkout).endswith("a=b")
    for args in (("status", "w", "--json"), ("list", "--json"),
                 ("prune", "--keep", "0", "--json")):
        os.utime(checkout / "x.dat", (time.time() + 9, time.time() + 9))
        repo.vwt(*args, cwd=checkout if args[0] != "prune" else repo.path)
        assert sb.fired_markers() == [], f"vwt {' '.join(args)} ran {sb.fired_markers()}"


# ------------------------------------------------------------------------ bad remotes
class Server:
    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.stop = False
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.conns.append(conn)  # "hang": accept, never answer
            if self.mode == "401":
                try:
                    conn.settimeout(2)
                    conn.recv(65536)
                    conn.sendall(b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic "
                                 b'realm="x"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n')
                except OSError:
                    pass
                conn.close()

    def close(self) -> None:
        self.stop = True
        for c in self.conns:
            c.close()
        self.sock.close()


@pytest.fixture
def clone(sb: Sandbox) -> GitRepo:
    return sb.make_origin_clone()


def run_on_tty(sb: Sandbox, args: list[str], cwd: Path, env_extra: dict[str, str],
               timeout: float) -> tuple[Run, str]:
    """Run vwt with a controlling terminal, so a credential prompt would show and block."""
    master, slave = os.openpty()
    env = dict(sb.env)
    env.pop("GIT_TERMINAL_PROMPT", None)
    env.update(env_extra)

    def ctty() -> None:
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

    start = time.monotonic()
    proc = subprocess.Popen([VWT, *args], cwd=cwd, env=env, stdin=slave, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=ctty, pass_fds=(slave,))
    os.close(slave)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    elapsed = time.monotonic() - start
    os.set_blocking(master, False)
    try:
        tty_text = os.read(master, 65536).decode(errors="replace")
    except OSError:
        tty_text = ""
    os.close(master)
    return Run(args, proc.returncode, out, err, elapsed), tty_text


@pytest.mark.parametrize("mode", ["http-hang", "http-401", "ssh-hang",
                                  pytest.param("http-hang-no-head", marks=pytest.mark.slow)])
def test_new_with_a_bad_origin_finishes_with_a_warning(sb: Sandbox, clone: GitRepo,
                                                       mode: str) -> None:
    server = Server("401" if mode == "http-401" else "hang")
    try:
        env_extra: dict[str, str] = {}
        if mode.startswith("ssh"):
            url = "ssh://git@example.invalid/repo.git"
            env_extra["GIT_SSH_COMMAND"] = "sleep 30"
        else:
            url = f"http://127.0.0.1:{server.port}/repo.git"
        clone.git("remote", "set-url", "origin", url)
        if mode.endswith("no-head"):
            clone.git("symbolic-ref", "-d", "refs/remotes/origin/HEAD")
        run, tty_text = run_on_tty(sb, ["new", "w", "--json"], clone.path, env_extra, 30)
    finally:
        server.close()
    assert_no_traceback(run)
    assert run.elapsed < 15, f"took {run.elapsed:.1f}s\n{run}"
    assert run.returncode == 0, str(run)
    assert "warning" in run.stderr.lower(), str(run)
    assert "Username" not in tty_text and "Password" not in tty_text, tty_text
    assert Path(run.json()["path"]).is_dir()


# ------------------------------------------------------------------------------ symlinks
SYMLINK_PLACES = ["bucket", "checkout", "claims-root", "claims-bucket", "claim-folder",
                  "holders-dir", "record-file", "trash"]


def plant_symlink(sb: Sandbox, repo: GitRepo, place: str) -> Path:
    """Move one level of the layout outside the root and link it back; return what moved."""
    away = sb.outside / f"moved-{place}"
    targets = {
        "bucket": sb.root / repo.bucket,
        "checkout": repo.checkout("w"),
        "claims-root": sb.claims,
        "claims-bucket": sb.claims / repo.bucket,
        "claim-folder": repo.claim("w"),
        "holders-dir": repo.claim("w") / "holders",
        "record-file": repo.record_path("w"),
        "trash": sb.trash,
    }
    original = targets[place]
    if place == "trash":
        (away / "someones-project" / "src").mkdir(parents=True)
        (away / "someones-project" / "src" / "main.c").write_text("int main;\n")
        shutil.rmtree(original, ignore_errors=True)
    elif place == "holders-dir":
        away.mkdir()
        (away / "stale-looking-file").write_text("not a holder: an outside file\n")
        (away / "vibe-session-9").write_text("also outside\n")
    else:
        shutil.move(str(original), str(away))
    original.symlink_to(away)
    return away


@pytest.mark.parametrize("place", SYMLINK_PLACES)
def test_symlink_planted_in_the_layout_is_never_followed_to_delete(sb: Sandbox, repo: GitRepo,
                                                                   place: str) -> None:
    checkout = Path(repo.ok("new", "w", "--json").json()["path"])
    make_dirty(checkout)
    repo.ok("new", "other", "--json")
    away = plant_symlink(sb, repo, place)
    before = tree_digest(sb.outside)
    for args in [("list", "--json"), ("status", "w", "--json"), ("new", "w", "--json"),
                 ("snapshot", "w", "--json"), ("rm", "w", "-y", "--json"),
                 ("prune", "--keep", "0", "--json"), ("prune", "--json")]:
        repo.vwt(*args)  # any spec exit code, never a traceback (checked by vwt())
    after = tree_digest(sb.outside)
    lost = sorted(set(before) - set(after))
    assert not lost, f"files outside the root were deleted through {place}: {lost}"
    assert before == after, f"files outside the root were changed through {place}"
    assert away.exists()


# -------------------------------------------------------------------- foreign .git file
def test_checkout_whose_git_file_points_into_another_repository(sb: Sandbox, repo: GitRepo
                                                                ) -> None:
    other = sb.make_repo("other")
    victim = sb.outside / "victim-wt"
    other.git("worktree", "add", "-q", "-b", "victim", str(victim))
    (victim / "precious.txt").write_text("other repo's work\n")
    checkout = Path(repo.ok("new", "w", "--json").json()["path"])
    admin = other.common_dir / "worktrees" / "victim-wt"
    (checkout / ".git").write_text(f"gitdir: {admin}\n")
    for args in [("status", "w", "--json"), ("new", "w", "--json"), ("snapshot", "w"),
                 ("rm", "w", "-y", "--json"), ("prune", "--keep", "0", "--json")]:
        run = repo.vwt(*args)
        if args[0] in ("status", "new", "snapshot"):
            assert run.returncode == 1, str(run)
    assert (victim / "precious.txt").read_text() == "other repo's work\n"
    assert "victim" in other.branches()
    assert str(victim) in other.worktrees()


# ---------------------------------------------------------------------- forged records
def forged(repo: GitRepo, name: str, **changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "version": 1, "name": name, "branch": name, "repo_root": str(repo.path),
        "base_commit": repo.git("rev-parse", "HEAD"), "branch_created": True,
        "claimed_at": "2020-01-01T00:00:00.000000Z", "session_dirs": [],
        "reap_requested": False, "moved_checkout_admin": None,
    }
    data.update(changes)
    return data


RECORD_CASES = {
    "traversal-name": lambda r: json.dumps(forged(r, "../../../outside")),
    "relative-repo-root": lambda r: json.dumps(forged(r, "w", repo_root="proj")),
    "oversized": lambda r: json.dumps(forged(r, "w", pad="x" * (1 << 20))),
    "corrupt": lambda r: '{"version": 1, "name": "w", ',
    "not-an-object": lambda r: "[1, 2, 3]",
    "bad-timestamp": lambda r: json.dumps(forged(r, "w", claimed_at="yesterday")),
    "nul-in-repo-root": lambda r: json.dumps(forged(r, "w", repo_root="/tmp/\u0000x")),
}


@pytest.mark.parametrize("case", sorted(RECORD_CASES))
def test_forged_record_is_broken_and_never_acted_upon(sb: Sandbox, repo: GitRepo, case: str
                                                      ) -> None:
    checkout = Path(repo.ok("new", "w", "--json").json()["path"])
    make_dirty(checkout)
    # a missing-checkout variant as well: a record with nothing on disk
    repo.claim("ghost").mkdir(parents=True)
    text = RECORD_CASES[case](repo)
    repo.record_path("w").write_text(text)
    repo.record_path("ghost").write_text(text.replace('"w"', '"ghost"'))
    rows = repo.ok("list", "--json").json()
    states = {row["name"]: row["state"] for row in rows}
    assert states.get("w") == "broken", rows
    for args in [("status", "w", "--json"), ("rm", "w", "-y", "--json"),
                 ("rm", "ghost", "-y", "--json"), ("snapshot", "w"), ("new", "w", "--json")]:
        run = repo.vwt(*args)
        assert run.returncode == 1, str(run)
        assert run.stderr.strip() and len(run.stderr.strip().splitlines()) <= 2, str(run)
    repo.ok("prune", "--keep", "0", "--json")
    assert (checkout / "new-work.md").read_text() == "untracked\n"
    assert repo.record_path("w").read_text() == text
    assert repo.record_path("ghost").exists()


# ----------------------------------------------------------------------- holder entries
def test_odd_holder_entries_never_reach_outside_and_never_crash(sb: Sandbox, repo: GitRepo
                                                                ) -> None:
    checkout = Path(repo.ok("new", "w", "--json").json()["path"])
    holders = repo.claim("w") / "holders"
    holders.mkdir(exist_ok=True)
    outside_file = sb.outside / "holder-target"
    outside_file.write_text("outside\n")
    (holders / "link-holder").symlink_to(outside_file)
    (holders / "-rf").write_text("")
    (holders / "with space").write_text("")
    (holders / "nl\nname").write_text("")
    (holders / "x..y").write_text("")
    (holders / ".tmp").write_text("")
    rows = repo.ok("list", "--json").json()
    assert rows[0]["name"] == "w"
    result = repo.ok("prune", "--keep", "0", "--json").json()
    # the symlink counts as live (fail closed): the worktree is kept, nothing outside touched
    assert outside_file.read_text() == "outside\n"
    assert checkout.is_dir()
    assert [k["name"] for k in result["kept"]] == ["w"]
    left = sorted(p.name for p in holders.iterdir())
    assert left == ["link-holder"], left  # unlocked regular files were stale and swept


def test_missing_checkout_record_pointing_at_another_repository_is_refused(
        sb: Sandbox, repo: GitRepo) -> None:
    other = sb.make_repo("other")
    other.git("branch", "ghost")
    repo.claim("ghost").mkdir(parents=True)
    repo.record_path("ghost").write_text(json.dumps(forged(repo, "ghost",
                                                           repo_root=str(other.path))))
    run = repo.vwt("rm", "ghost", "-y", "--delete-branch", "--json")
    assert run.returncode == 1, str(run)
    result = repo.ok("prune", "--keep", "0", "--json").json()
    assert [k["name"] for k in result["kept"]] == ["ghost"], result
    assert "ghost" in other.branches()
    assert repo.record_path("ghost").exists()


@pytest.mark.parametrize("holder_id", ["..", ".", "../../outside/x", "a/b", "x.tmp",
                                       "nul", "a\nb"])
def test_api_refuses_odd_holder_ids(sb: Sandbox, repo: GitRepo, holder_id: str) -> None:
    repo.ok("new", "w")
    code = (
        "import sys\n"
        "from vibe_worktree import Worktrees\n"
        "from vibe_worktree.core.errors import VwtError\n"
        f"wt = Worktrees(cwd={str(repo.path)!r})\n"
        "try:\n"
        f"    h = wt.hold('w', holder_id={holder_id!r})\n"
        "except VwtError as exc:\n"
        "    print('refused', exc); sys.exit(0)\n"
        "print('accepted', h.path); sys.exit(3)\n"
    )
    proc = subprocess.run([str(Path(VWT).with_name("python")), "-c", code], env=sb.env,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (sb.outside / "x").exists()


def test_housekeeping_never_runs_a_submodules_own_filter(sb: Sandbox, repo: GitRepo) -> None:
    """`git status` recurses into submodules; a filter driver defined in the submodule's
    own config (`.git/modules/<name>/config`) is the repository's config too."""
    sub = sb.make_repo("sub")
    repo.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub.path), "sub")
    repo.git("commit", "-qm", "add submodule")
    checkout = Path(repo.ok("new", "w", "--json").json()["path"])
    repo.git("-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init",
             cwd=checkout)
    inner = checkout / "sub"
    repo.git("config", "filter.subevil.clean", script(sb, "sub-clean", "cat"), cwd=inner)
    repo.git("config", "core.fsmonitor", script(sb, "sub-fsmonitor", "exit 1"), cwd=inner)
    info = Path(repo.git("rev-parse", "--git-dir", cwd=inner))
    info = info if info.is_absolute() else inner / info
    (info / "info").mkdir(exist_ok=True)
    (info / "info" / "attributes").write_text("* filter=subevil\n")
    for args in (("status", "w", "--json"), ("list", "--json"), ("snapshot", "w", "--json"),
                 ("prune", "--keep", "0", "--json")):
        os.utime(inner / "README.md", (time.time() + 9, time.time() + 9))
        repo.vwt(*args)
        assert sb.fired_markers() == [], f"vwt {' '.join(args)} ran {sb.fired_markers()}"


def test_checkout_replaced_by_a_repository_of_its_own_is_never_removed(
        sb: Sandbox, repo: GitRepo) -> None:
    checkout = Path(repo.ok("new", "w", "--json").json()["path"])
    shutil.rmtree(checkout)
    repo.git("worktree", "prune")
    checkout.mkdir()
    repo.git("init", "-q", cwd=checkout)
    (checkout / "precious.txt").write_text("a standalone repository's work\n")
    for args in [("status", "w", "--json"), ("new", "w", "--json"), ("snapshot", "w"),
                 ("rm", "w", "-y", "--json"), ("prune", "--keep", "0", "--json")]:
        repo.vwt(*args)
    assert (checkout / "precious.txt").read_text() == "a standalone repository's work\n"
    assert (checkout / ".git").is_dir()


def test_new_with_an_ext_origin_runs_nothing(sb: Sandbox, clone: GitRepo) -> None:
    marker = sb.marker("ext")
    clone.git("remote", "set-url", "origin", f"ext::sh -c touch% {marker}")
    run = clone.vwt("new", "w", "--json", timeout=30)
    assert run.returncode == 0 and run.elapsed < 15, str(run)
    assert not marker.exists()


@pytest.mark.parametrize("what", ["record", "recovery", "holder", "meta"])
def test_a_fifo_planted_in_the_layout_never_hangs_housekeeping(sb: Sandbox, repo: GitRepo,
                                                               what: str) -> None:
    """A named pipe where a record, a recovery record, a holder or a session's meta.json
    should be: opening it for reading would block forever."""
    repo.ok("new", "w", "--json")
    if what == "record":
        repo.record_path("w").unlink()
        os.mkfifo(repo.record_path("w"))
    elif what == "recovery":
        os.mkfifo(repo.recovery_path("w"))
    elif what == "holder":
        (repo.claim("w") / "holders").mkdir(exist_ok=True)
        os.mkfifo(repo.claim("w") / "holders" / "vibe-fifo")
    else:
        session = sb.outside / "session"
        session.mkdir()
        os.mkfifo(session / "meta.json")
        data = repo.record("w")
        data["session_dirs"] = [str(session)]
        repo.record_path("w").write_text(json.dumps(data))
    for args in [("list", "--json"), ("status", "w", "--json"), ("prune", "--json"),
                 ("rm", "w", "-y", "--json")]:
        run = repo.vwt(*args, timeout=20)  # a hang fails here with TimeoutExpired
        assert run.elapsed < 15, str(run)
