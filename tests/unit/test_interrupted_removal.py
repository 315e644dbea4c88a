"""A removal killed after its snapshot must never have that snapshot overwritten."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

VWT = [sys.executable, "-m", "vibe_worktree"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text(
        "[user]\n\tname = T\n\temail = t@example.com\n[init]\n\tdefaultBranch = main\n"
    )
    e = dict(os.environ)
    e.update(HOME=str(tmp_path), VIBE_HOME=str(tmp_path / "vibe"), GIT_CONFIG_NOSYSTEM="1",
             GIT_CONFIG_GLOBAL=str(gitconfig))
    e.pop("VWT_CRASH_AT", None)
    return e


@pytest.fixture
def repo(tmp_path: Path, env: dict[str, str]) -> Path:
    path = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    (path / "a.txt").write_text("a\n")
    subprocess.run(["git", "add", "."], cwd=path, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=path, check=True, env=env)
    return path


def vwt(repo: Path, env: dict[str, str], *args: str, crash: str | None = None
        ) -> subprocess.CompletedProcess[str]:
    run_env = dict(env)
    if crash:
        run_env["VWT_CRASH_AT"] = crash
    return subprocess.run([*VWT, *args], cwd=repo, env=run_env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)


@pytest.mark.parametrize("step", ["rm.trashed", "rm.unregistered", "rm.branch_deleted"])
@pytest.mark.parametrize("repair", [["prune"], ["rm", "wip", "-y"], ["rm", "wip"]])
def test_dirty_work_survives_a_removal_killed_after_its_snapshot(
    repo: Path, env: dict[str, str], step: str, repair: list[str]
) -> None:
    path = Path(json.loads(vwt(repo, env, "new", "wip", "--json").stdout)["path"])
    (path / "notes.txt").write_text("precious\n")
    killed = vwt(repo, env, "rm", "wip", "-y", crash=step)
    assert killed.returncode == -9
    assert not path.exists()

    fixed = vwt(repo, env, *repair)
    assert fixed.returncode == 0, fixed.stderr
    listed = json.loads(vwt(repo, env, "list", "--json").stdout)
    assert [(w["name"], w["state"]) for w in listed] == [("wip", "snapshot")]

    restored = vwt(repo, env, "restore", "wip")
    assert restored.returncode == 0, restored.stderr
    assert (path / "notes.txt").read_text() == "precious\n"
    trash = Path(env["VIBE_HOME"]) / "worktrees" / ".trash"
    assert not trash.exists() or not any(trash.iterdir())


def test_a_creation_killed_after_checkout_never_claims_a_preexisting_branch(
    repo: Path, env: dict[str, str]
) -> None:
    subprocess.run(["git", "branch", "theirs"], cwd=repo, check=True, env=env)
    killed = vwt(repo, env, "new", "theirs", crash="new.added")
    assert killed.returncode == -9

    adopted = vwt(repo, env, "new", "theirs", "--json")
    assert adopted.returncode == 0, adopted.stderr
    assert json.loads(adopted.stdout)["branch_created"] is False

    removed = vwt(repo, env, "rm", "theirs", "--json")
    assert json.loads(removed.stdout)["branch_deleted"] is False
    branches = subprocess.run(["git", "branch", "--list", "theirs"], cwd=repo, env=env,
                              capture_output=True, text=True, check=True).stdout
    assert "theirs" in branches
