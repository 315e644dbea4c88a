"""`vwt statusline`: Claude Code's status JSON in, one line out."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import VWT_BIN

from .conftest import wait_until
from .test_activity import best_of_7


def status_json(directory: Path, *, workspace: bool = True) -> str:
    data: dict = {"hook_event_name": "Status", "session_id": "s", "cwd": "/",
                  "model": {"id": "claude-x", "display_name": "X"}, "version": "2.1.197"}
    if workspace:
        data["workspace"] = {"current_dir": str(directory), "project_dir": str(directory)}
    else:
        data["cwd"] = str(directory)
    return json.dumps(data)


def line(vwt, directory: Path, **kw) -> str:
    result = vwt("statusline", input=status_json(directory, **kw))
    assert result.code == 0 and result.err == "", str(result)
    assert result.out.count("\n") == 1
    return result.out.rstrip("\n")


def test_outside_a_managed_worktree_it_is_the_branch_alone(vwt, repo):
    assert line(vwt, repo.path) == "main"
    assert line(vwt, repo.path, workspace=False) == "main"


def test_a_managed_worktree_shows_name_branch_changes_and_ahead_behind(vwt, repo):
    path = Path(vwt.new("feat", "--no-fetch", cwd=repo.path)["path"])
    assert line(vwt, path).startswith("feat  clean")
    (path / "new.txt").write_text("x\n")
    repo.git("commit", "-q", "--allow-empty", "-m", "own", cwd=path)
    repo.commit("target moves", {"t.txt": "t\n"})
    assert line(vwt, path / "src").startswith("feat  ±1  ↑1 ↓1")
    other = Path(vwt.new("other", "-b", "topic/x", cwd=repo.path)["path"])
    assert line(vwt, other).startswith("other (topic/x)  clean")


def test_a_forecast_collision_is_marked(vwt, repo):
    one = Path(vwt.new("one", cwd=repo.path)["path"])
    two = Path(vwt.new("two", cwd=repo.path)["path"])
    (one / "README.md").write_text("one's version\n")
    (two / "README.md").write_text("two's version\n")
    line(vwt, one)  # starts the refresh of the verdict in the background
    cache = vwt.sandbox.vibe_home / "worktree-statusline" / repo.bucket / "one.json"
    wait_until(cache.exists, 30)
    assert line(vwt, one).endswith("⚠ conflicts with two")


@pytest.mark.slow
def test_with_200_worktrees_it_shows_the_verdict_and_its_latency_is_printed(vwt, repo, capsys):
    """Timing is printed, not asserted: it decides no test."""
    for i in range(200):
        repo.add_vibe_worktree(f"wt-{i:03d}")
    path = repo.checkout("wt-007")
    (path / "README.md").write_text("changed\n")
    data = status_json(path).encode()
    env = vwt.env()
    subprocess.run([VWT_BIN, "statusline"], input=data, env=env, capture_output=True, check=True)
    cache = vwt.sandbox.vibe_home / "worktree-statusline" / repo.bucket / "wt-007.json"
    wait_until(cache.exists, 120)  # the verdict over 200 worktrees, computed in the background
    base_wall, _cpu = best_of_7([VWT_BIN, "--version"], b"", env)
    wall, cpu = best_of_7([VWT_BIN, "statusline"], data, env)
    out = subprocess.run([VWT_BIN, "statusline"], input=data, env=env, capture_output=True,
                         check=True).stdout.decode()
    with capsys.disabled():
        print(f"\nstatusline with 200 worktrees, best of 7: {wall * 1000:.0f} ms wall, "
              f"{cpu * 1000:.0f} ms CPU (vwt --version {base_wall * 1000:.0f} ms): "
              f"{out.strip()}")
    assert out.startswith("wt-007 (vibe/wt-007)  ±1")


def test_without_input_it_is_the_line_of_the_current_directory(vwt, repo):
    """Run by hand (`vwt statusline < /dev/null`, or nothing piped in): the line Claude Code
    would show for the folder it is run in, not an error about hook JSON."""
    for given in ("", "  \n"):
        result = vwt("statusline", input=given, cwd=repo.path)
        assert (result.code, result.out, result.err) == (0, "main\n", ""), str(result)
    path = Path(vwt.new("feat", "--no-fetch", cwd=repo.path)["path"])
    result = vwt("statusline", cwd=path)  # stdin is /dev/null
    assert result.code == 0 and result.out.startswith("feat  clean"), str(result)


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"workspace": '])
def test_input_that_is_not_claude_codes_status_json_is_one_clear_line(vwt, repo, text):
    result = vwt("statusline", input=text, cwd=repo.path)
    assert result.code == 1 and result.out == "", str(result)
    assert len(result.err_lines) == 1 and "Claude Code's status JSON" in result.err
    assert "hook" not in result.err
