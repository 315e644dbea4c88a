"""SIGKILL of `vwt land` and its git children at randomised moments (SPEC §16, §18).

The §16 kill harness of `test_kill.py`, for a land of three worktrees whose target moved on
(so each is synced, gated and landed, and main's checkout is moved each time). After each
kill: the target is unchanged or at a commit whose tree passed its gate; one `vwt prune`
repairs, `vwt doctor` is healthy, nothing the worktrees held is lost, the queue is free,
and the land run again lands every worktree exactly once. A kill while the gate runs
takes the gate's processes with it.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from conftest import VWT_BIN as VWT

from .conftest import GitRepo, Sandbox
from .test_kill import SEED, git_locks, kill_group, reservations

pytestmark = pytest.mark.timeout(300)

NAMES = ("w0", "w1", "w2")
QUICK_MOMENTS = 3
SWEEP_MOMENTS = 12


def land_command(*args: str) -> list[str]:
    return [VWT, "land", *args]


def work(name: str) -> dict[str, str]:
    return {f"{name}/f{i}.txt": f"{name} {i}\n" * 20 for i in range(60)}


def prepared(where: Path) -> tuple[GitRepo, Path]:
    """Three worktrees with a commit of their own each; main moved on since."""
    where.mkdir()
    repo = Sandbox(where).make_repo()
    repo.snapshot_branches()
    for name in NAMES:
        checkout = Path(repo.ok("new", name, "--json").json()["path"])
        repo.commit(f"{name}: work", work(name), cwd=checkout)
    repo.commit("main moves on", {f"main/f{i}.txt": f"main {i}\n" for i in range(60)})
    gated = where / "gated.txt"
    return repo, gated


def gate_of(gated: Path) -> str:
    """A gate that notes the tree it passed (before it says so)."""
    return f"git rev-parse 'HEAD^{{tree}}' >> {gated}; sleep 0.05"


def start_land(repo: GitRepo, gated: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(land_command(*NAMES, "--gate", gate_of(gated), "--json"),
                            cwd=repo.path, env=repo.sb.env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def main_is_gated_or_unchanged(repo: GitRepo, start: str, gated: Path) -> str | None:
    """Every commit the land put on main has a tree some gate passed."""
    passed = set(gated.read_text().split()) if gated.exists() else set()
    landed = repo.git("rev-list", f"{start}..main", "--").split()
    for commit in landed:
        tree = repo.git("rev-parse", f"{commit}^{{tree}}")
        if tree not in passed:
            return f"main has {commit}, whose tree no gate passed"
    return None


def lost(repo: GitRepo) -> str | None:
    """A worktree's work that is neither on main, nor in its checkout, nor restorable."""
    for name in NAMES:
        rel = f"{name}/f0.txt"
        if repo.git("show", f"main:{rel}", check=False).startswith(f"{name} 0"):
            continue
        if repo.record_path(name).exists() and (repo.checkout(name) / rel).is_file():
            continue
        if repo.recovery_path(name).exists():
            ref = json.loads(repo.recovery_path(name).read_text())["snapshot_ref"]
            if repo.git("show", f"{ref}:{rel}", check=False).startswith(f"{name} 0"):
                continue
        return f"{name}'s work is neither on main, in its checkout, nor restorable"
    return None


def land_again(repo: GitRepo, gated: Path) -> dict[str, str]:
    proc = subprocess.run(land_command(*NAMES, "--gate", gate_of(gated), "--json"),
                          cwd=repo.path, env=repo.sb.env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    return {r["name"]: r["outcome"] for r in report["results"]}


def check_after_kill(repo: GitRepo, start: str, gated: Path, label: str) -> None:
    moved = main_is_gated_or_unchanged(repo, start, gated)
    assert moved is None, f"{label}: {moved}"
    pruned = repo.vwt("prune", "--json")
    assert pruned.returncode == 0, f"{label}: prune failed\n{pruned}"
    assert reservations(repo) == [], f"{label}: a reservation outlived prune"
    locks = git_locks(repo)
    assert locks == [], f"{label}: git's locks outlived prune: {locks}\n{pruned}"
    doctor = repo.vwt("doctor", "--json")
    assert doctor.returncode == 0, f"{label}: doctor after prune\n{doctor}"
    problem = lost(repo)
    assert problem is None, f"{label}: {problem}"
    outcomes = land_again(repo, gated)
    # a worktree the killed land had landed and removed is not found (it is in main)
    assert all(o in ("merged", "up_to_date", "not_found") for o in outcomes.values()), \
        f"{label}: the land run again: {outcomes}"
    for name in NAMES:
        subjects = repo.git("log", "--format=%s", "main", "--").splitlines()
        assert subjects.count(f"{name}: work") == 1, f"{label}: {name} landed " \
            f"{subjects.count(f'{name}: work')} times"
    assert main_is_gated_or_unchanged(repo, start, gated) is None, label
    doctor = repo.vwt("doctor", "--json")
    assert doctor.returncode == 0, f"{label}: doctor after the land ran again\n{doctor}"
    tickets = list((repo.sb.root / ".land" / repo.bucket / "tickets").glob("*.ticket"))
    assert tickets == [], f"{label}: tickets left: {tickets}"


_DURATION: list[float] = []


def measured(tmp: Path) -> float:
    if not _DURATION:
        repo, gated = prepared(tmp / "measure")
        begin = time.monotonic()
        proc = start_land(repo, gated)
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        _DURATION.append(time.monotonic() - begin)
    return _DURATION[0]


def campaign(tmp: Path, moments: int) -> None:
    import random

    duration = measured(tmp)
    rng = random.Random(f"{SEED}-land")
    chosen = sorted(rng.uniform(0, duration * 1.05) for _ in range(moments))
    print(f"\nkill campaign: seed={SEED} command='land' duration={duration:.3f}s "
          f"moments={[round(m, 3) for m in chosen]}")
    for i, moment in enumerate(chosen):
        repo, gated = prepared(tmp / f"kill-{i}")
        start = repo.git("rev-parse", "main")
        proc = start_land(repo, gated)
        time.sleep(moment)
        finished = proc.poll() is not None
        kill_group(proc)
        label = f"seed={SEED} 'land' killed at {moment:.3f}s{' (had finished)' if finished else ''}"
        check_after_kill(repo, start, gated, label)


@pytest.mark.slow
def test_land_killed_at_random_moments(tmp_path: Path) -> None:
    campaign(tmp_path, QUICK_MOMENTS)


@pytest.mark.slow
def test_land_kill_sweep(tmp_path: Path) -> None:
    campaign(tmp_path, SWEEP_MOMENTS)


@pytest.mark.slow
def test_a_land_killed_during_its_gate_takes_the_gate_with_it(tmp_path: Path) -> None:
    repo, gated = prepared(tmp_path / "gate")
    start = repo.git("rev-parse", "main")
    pid_file = tmp_path / "gate.pid"
    proc = subprocess.Popen(land_command("w0", "--gate", f"echo $$ > {pid_file}; sleep 60"),
                            cwd=repo.path, env=repo.sb.env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    gate_pid = int(pid_file.read_text())
    kill_group(proc)
    deadline = time.monotonic() + 10
    while _runs(gate_pid):
        assert time.monotonic() < deadline, "the gate outlived the land that started it"
        time.sleep(0.05)
    assert repo.git("rev-parse", "main") == start
    check_after_kill(repo, start, gated, "killed during its gate")


def _runs(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except OSError:
        return False
