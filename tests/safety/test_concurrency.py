"""Real processes racing on 2 cores: creates of one name, auto-naming of one prompt,
prune --keep 0 loops against run / new / rm loops and Vibe-style holders."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from .conftest import SPEC_EXIT_CODES, VWT, GitRepo, Sandbox, check_state

pytestmark = pytest.mark.timeout(120)


def spawn(sb: Sandbox, repo: GitRepo, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([VWT, *args], cwd=repo.path, env=sb.env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(procs: list[subprocess.Popen[str]]) -> list[tuple[int, str, str]]:
    results = []
    for p in procs:
        out, err = p.communicate(timeout=90)
        results.append((p.returncode, out, err))
    return results


def error_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.strip() and "warning:" not in ln]


def test_many_creates_of_one_name(sb: Sandbox, repo: GitRepo) -> None:
    repo.snapshot_branches()
    procs = [spawn(sb, repo, "new", "shared", "--json", "--no-fetch") for _ in range(10)]
    results = finish(procs)
    created = 0
    for code, out, err in results:
        assert "Traceback" not in err
        assert code in (0, 1), (code, out, err)
        if code == 0:
            data = json.loads(out)
            assert data["name"] == "shared" and data["branch"] == "shared"
            created += data["created"] is True
        else:
            assert 1 <= len(error_lines(err)) <= 2, err
    assert created == 1, results
    assert sum(code == 0 for code, _o, _e in results) >= 1
    check_state(repo)


@pytest.mark.slow
def test_many_auto_named_creates_of_one_prompt(sb: Sandbox, repo: GitRepo) -> None:
    """Three rounds of 8 parallel `new -p` of one prompt: 24 distinct worktrees.
    (git itself can die reading another `worktree add`'s half-written admin folder:
    `fatal: failed to read .git/worktrees/<id>/commondir: Success`.)"""
    repo.snapshot_branches()
    results = []
    for _round in range(3):
        procs = [spawn(sb, repo, "new", "-p", "Add dark mode to settings", "--json")
                 for _ in range(8)]
        results += finish(procs)
    paths, branches = set(), set()
    for code, out, err in results:
        assert code == 0 and "Traceback" not in err, (code, out, err)
        data = json.loads(out)
        assert data["created"] is True
        paths.add(data["path"])
        branches.add(data["branch"])
    assert len(paths) == len(branches) == 24
    assert all(b.startswith("vibe/add-dark-mode-to-settings") for b in branches)
    check_state(repo)


# A Vibe-style holder loop in a separate process: it obeys the protocol (registry lock,
# refuse while `.removing` is live), holds a worktree for a while, and reports a violation
# if the checkout disappears while it is held.
VIBE_LOOP = r"""
import fcntl, json, os, sys, time
claims, root, bucket, until = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
names = sys.argv[5:]
held = violations = 0
def live(path):
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
i = 0
while time.time() < until:
    name = names[i % len(names)]; i += 1
    folder = os.path.join(claims, bucket, name)
    checkout = os.path.join(root, bucket, name)
    hdir = os.path.join(folder, "holders")
    hid = os.path.join(hdir, f"vibe-{os.getpid()}-{i}")
    reg = os.open(os.path.join(claims, ".registry"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(reg, fcntl.LOCK_EX)
    fd = None
    try:
        rec = os.path.join(folder, "record.json")
        ok = (os.path.isfile(rec) and os.path.isfile(os.path.join(checkout, ".git"))
              and not live(os.path.join(hdir, ".removing"))
              and json.load(open(rec)).get("base_commit"))
        if ok:
            os.makedirs(hdir, exist_ok=True)
            fd = os.open(hid, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
    finally:
        os.close(reg)
    if fd is None:
        time.sleep(0.02)
        continue
    held += 1
    end = time.time() + 0.25
    while time.time() < end:
        if not os.path.isfile(os.path.join(checkout, ".git")):
            violations += 1
            print(f"VIOLATION {name} vanished while held", flush=True)
            break
        time.sleep(0.03)
    reg = os.open(os.path.join(claims, ".registry"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(reg, fcntl.LOCK_EX)
    try:
        os.unlink(hid)
    except FileNotFoundError:
        pass
    os.close(fd)
    os.close(reg)
print(json.dumps({"held": held, "violations": violations}), flush=True)
"""

RUN_SCRIPT = ('P="$1"; echo "$$" > "$P/.run-marker"; i=0; while [ $i -lt 6 ]; do '
              '[ -f "$P/.git" ] || exit 77; sleep 0.05; i=$((i+1)); done; exit 0')


@pytest.mark.slow
def test_prune_races_run_new_rm_and_vibe_holders(sb: Sandbox, repo: GitRepo) -> None:
    duration = 20.0
    repo.snapshot_branches()
    names = ["w0", "w1", "w2"]
    for name in names:
        repo.ok("new", name, "--no-fetch")
    until = time.time() + duration
    calls: list[tuple[str, int, str, str]] = []
    lock = threading.Lock()

    def call(*args: str) -> tuple[int, str, str]:
        proc = subprocess.run([VWT, *args], cwd=repo.path, env=sb.env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=90)
        with lock:
            calls.append((" ".join(args), proc.returncode, proc.stdout, proc.stderr))
        return proc.returncode, proc.stdout, proc.stderr

    def prune_loop() -> None:
        while time.time() < until:
            call("prune", "--keep", "0", "--json")

    def run_loop(name: str) -> None:
        path = str(repo.checkout(name))
        while time.time() < until:
            code, _o, err = call("new", name, "--no-fetch", "--json")
            if code != 0 and "restore" in err:
                call("restore", name, "--json")
            call("run", name, "--", "sh", "-c", RUN_SCRIPT, "sh", path)

    def new_rm_loop() -> None:
        n = 0
        while time.time() < until:
            n += 1
            call("new", "churn", "--no-fetch", "--json")
            call("rm", "churn", "-y", "--json")
            call("rm", "churn", "--json")  # forgets a recovery-only entry
            if n % 3 == 0:
                code, out, _e = call("new", "-p", "race the pruner", "--json")
                if code == 0:
                    call("rm", json.loads(out)["name"], "-y", "--json")

    vibe = subprocess.Popen(
        [sys.executable, "-c", VIBE_LOOP, str(sb.claims), str(sb.root), repo.bucket,
         str(until), *names, "churn"],
        stdout=subprocess.PIPE, text=True, env=sb.env)
    threads = [threading.Thread(target=prune_loop), threading.Thread(target=new_rm_loop),
               *[threading.Thread(target=run_loop, args=(n,)) for n in names[:2]]]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=duration + 60)
    vibe_out, _ = vibe.communicate(timeout=30)
    assert "VIOLATION" not in vibe_out, vibe_out
    vibe_stats = json.loads(vibe_out.strip().splitlines()[-1])

    bad = []
    runs_ok = 0
    for args, code, _out, err in calls:
        if "Traceback" in err:
            bad.append((args, code, err))
        elif args.startswith("run "):
            if code == 0:
                runs_ok += 1
            elif code not in (1, 4):  # 77: the checkout vanished while held
                bad.append((args, code, err))
        elif code not in SPEC_EXIT_CODES or (code != 0 and not 1 <= len(error_lines(err)) <= 2):
            bad.append((args, code, err))
    assert not bad, "\n".join(f"{a} -> {c}: {e}" for a, c, e in bad[:10])
    assert runs_ok > 0 and vibe_stats["held"] > 0, (runs_ok, vibe_stats)
    prunes = [c for c in calls if c[0].startswith("prune")]
    assert prunes and all(c[1] == 0 for c in prunes)

    repo.ok("prune", "--json")
    check_state(repo, allow_recovery_with_record=False)
    for name in names[:2]:
        if repo.record_path(name).exists():  # never removed while held: the marker is there
            assert Path(repo.checkout(name), ".git").is_file()


@pytest.mark.slow
def test_run_racing_rm_of_the_same_name(sb: Sandbox, repo: GitRepo) -> None:
    """`run` must either hold a worktree that exists for the whole command, or refuse with
    a spec exit code (1 not found, 4 held/being removed) - never start the command in a
    checkout that a concurrent `rm` just removed (which surfaces as exit 126/127)."""
    repo.snapshot_branches()
    until = time.time() + 15
    path = str(repo.checkout("hot"))
    results: list[tuple[str, int, str]] = []
    lock = threading.Lock()

    def call(*args: str) -> int:
        proc = subprocess.run([VWT, *args], cwd=repo.path, env=sb.env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=60)
        with lock:
            results.append((" ".join(args[:2]), proc.returncode, proc.stderr))
        return proc.returncode

    def churn() -> None:
        while time.time() < until:
            call("new", "hot", "--no-fetch")
            call("rm", "hot", "-y")
            call("rm", "hot")

    def runner() -> None:
        while time.time() < until:
            call("run", "hot", "--", "sh", "-c", '[ -f "$1/.git" ] || exit 77', "sh", path)

    threads = [threading.Thread(target=churn), threading.Thread(target=runner),
               threading.Thread(target=runner)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    bad = [r for r in results if "Traceback" in r[2]
           or (r[0].startswith("run") and r[1] not in (0, 1, 4))
           or (not r[0].startswith("run") and r[1] not in SPEC_EXIT_CODES)]
    assert not bad, "\n".join(f"{a} -> {c}: {e}" for a, c, e in bad[:10])
    assert any(r[0].startswith("run") and r[1] == 0 for r in results)
    repo.ok("prune", "--json")
    check_state(repo)


@pytest.mark.slow
@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGTERM"])
def test_killed_run_wrapper_keeps_holding_while_its_command_runs(
        sb: Sandbox, repo: GitRepo, signal_name: str) -> None:
    """`vwt run NAME -- CMD` holds NAME "for the lifetime of the command".  If the vwt
    wrapper itself dies (OOM killer, kill -9, SIGTERM to its pid) while CMD goes on,
    prune must still see NAME as held and never pull the checkout from under CMD."""
    import signal as sig

    path = repo.checkout("w")
    repo.ok("new", "w", "--no-fetch")
    done = sb.tmp / "cmd-done"
    script = (f'echo started > "{path}/started.txt"; sleep 4; '
              f'if [ -f "{path}/.git" ]; then echo ok > "{done}"; '
              f'else echo vanished > "{done}"; fi')
    proc = subprocess.Popen([VWT, "run", "w", "--", "sh", "-c", script], cwd=repo.path,
                            env=sb.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 15
    while not (path / "started.txt").exists() and time.time() < deadline:
        time.sleep(0.05)
    assert (path / "started.txt").exists()
    proc.send_signal(getattr(sig, signal_name))  # the wrapper only, not CMD
    proc.wait(timeout=10)
    result = repo.ok("prune", "--keep", "0", "--json").json()
    deadline = time.time() + 15
    while not done.exists() and time.time() < deadline:
        time.sleep(0.1)
    assert done.read_text().strip() == "ok", f"checkout removed under a running command: {result}"
    assert [k["name"] for k in result["kept"]] == ["w"], result


def test_prune_never_touches_a_creation_in_progress(sb: Sandbox, repo: GitRepo) -> None:
    """A slow `new` (post-checkout hook sleeping 2 s) while `prune --keep 0` runs: the
    reservation and its half-made checkout are left alone, and `new` finishes."""
    repo.snapshot_branches()
    hook = repo.common_dir / "hooks" / "post-checkout"
    hook.write_text("#!/bin/sh\nsleep 2\n")
    hook.chmod(0o755)
    proc = spawn(sb, repo, "new", "slow", "--json", "--no-fetch")
    deadline = time.time() + 15
    while not (repo.checkout("slow") / ".git").exists() and time.time() < deadline:
        time.sleep(0.02)
    assert repo.record("slow")["base_commit"] is None
    repo.age_records(30)  # even an old-looking reservation is safe while `.starting` lives
    result = repo.ok("prune", "--keep", "0", "--json").json()
    assert result["removed"] == [] and result["reservations_discarded"] == [], result
    code, out, err = finish([proc])[0]
    assert code == 0, err
    assert json.loads(out)["created"] is True
    check_state(repo)
