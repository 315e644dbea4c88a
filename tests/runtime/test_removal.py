"""Nothing is removed under a running process: rm refuses (or stops them with --stop),
merge lands but keeps, prune keeps, Claude Code's WorktreeRemove keeps; the caller and its
ancestors never count. Real servers, real signals, real nested processes."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from agents.conftest import fake_host, payload  # noqa: F401 - fake_host: a fixture
from conftest import VWT_BIN, Repo, Vwt

from .conftest import Procs, alive, free_port, serving

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc")


@pytest.fixture(autouse=True)
def _in_a_repository(repo: Repo) -> Repo:
    return repo  # vwt runs inside it


def rm(vwt: Vwt, *args: str, code: int) -> dict[str, object]:
    result = vwt("rm", *args, "--json")
    assert result.code == code, str(result)
    data: dict[str, object] = result.json()
    return data


# -- rm -------------------------------------------------------------------------------------
def test_rm_refuses_a_worktree_a_server_runs_in_and_names_it(vwt: Vwt, procs: Procs) -> None:
    path = Path(vwt.new("web")["path"])
    port = free_port()
    pid = procs.server(path, port)
    result = vwt("rm", "web", "-y", "--json")
    assert result.code == 4, str(result)
    data = result.json()
    assert data["outcome"] == "kept_in_use" and data["stopped"] == []
    assert [p["pid"] for p in data["processes"]] == [pid]
    assert "http.server" in data["processes"][0]["command"]
    assert f"pid {pid}" in result.err and len(result.err_lines) == 1
    assert path.is_dir() and serving(port, timeout=1)


def test_rm_refuses_for_a_nested_agent_whose_parent_exited(vwt: Vwt, procs: Procs) -> None:
    path = Path(vwt.new("nested")["path"])
    (path / "deep").mkdir()
    pid = procs.orphan(path / "deep")
    data = rm(vwt, "nested", "-y", code=4)
    assert [p["pid"] for p in data["processes"]] == [pid]
    assert path.is_dir() and alive(pid)


@pytest.mark.slow
def test_rm_stop_terminates_then_kills_after_five_seconds_then_removes(
        vwt: Vwt, procs: Procs) -> None:
    path = Path(vwt.new("web")["path"])
    port = free_port()
    server = procs.server(path, port)
    stubborn = procs.ignoring_term(path)
    started = time.monotonic()
    removal = vwt.spawn("rm", "web", "-y", "--stop", "--json")
    # the server goes at SIGTERM; the process that ignores it is still there a while
    while alive(server) and time.monotonic() - started < 4:
        procs.reap()
        time.sleep(0.05)
    assert not alive(server)
    assert alive(stubborn) and path.is_dir()
    out, err = removal.communicate(timeout=60)
    waited = time.monotonic() - started
    assert removal.returncode == 0, err
    data = json.loads(out)
    assert data["outcome"] == "removed" and sorted(data["stopped"]) == sorted([server, stubborn])
    procs.reap()
    assert not alive(stubborn) and not path.exists()
    assert waited >= 5, "SIGKILL came before the 5 s grace period was over"
    assert "stopped pid" in err


def test_rm_stop_still_refuses_a_worktree_another_session_holds(
        vwt: Vwt, repo: Repo, procs: Procs, holder) -> None:
    path = Path(vwt.new("held")["path"])
    pid = procs.sleeper(path)
    holder(repo.bucket, "held")
    data = rm(vwt, "held", "-y", "--stop", code=4)
    assert data["stopped"] == [] and alive(pid) and path.is_dir()


def test_rm_from_a_shell_inside_the_worktree_does_not_count_that_shell(
        vwt: Vwt, repo: Repo) -> None:
    path = Path(vwt.new("here")["path"])
    script = f"cd '{path}' && '{VWT_BIN}' -C '{repo.path}' rm here -y --json"
    done = subprocess.run(["sh", "-c", script], env=vwt.env(), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["outcome"] == "removed" and not path.exists()


def test_rm_run_inside_its_own_worktree_by_vwt_run_removes_it(vwt: Vwt, repo: Repo) -> None:
    path = Path(vwt.new("self")["path"])
    result = vwt("run", "self", "--", VWT_BIN, "rm", "self", "-y", "--json", cwd=repo.path)
    assert result.code == 0, str(result)
    assert json.loads(result.out)["outcome"] == "removed" and not path.exists()


# -- merge ----------------------------------------------------------------------------------
def test_merge_lands_the_work_but_keeps_a_worktree_a_server_runs_in(
        vwt: Vwt, repo: Repo, procs: Procs) -> None:
    path = Path(vwt.new("feature")["path"])
    landed = repo.commit("the feature", {"feature.txt": "done\n"}, cwd=path)
    head = repo.head(cwd=path)
    port = free_port()
    pid = procs.server(path, port)
    result = vwt("merge", "feature", "--json", "--no-fetch")
    assert result.code == 0, str(result)
    data = result.json()
    assert data["outcome"] == "merged" and data["removed"] is False
    assert data["kept_reason"] == "processes_running" and data["branch_deleted"] is False
    assert f"pid {pid}" in result.err
    assert repo.git("show", "main:feature.txt").strip() == "done"  # landed
    assert path.is_dir() and repo.head(cwd=path) == head == landed  # kept exactly as it was
    assert serving(port, timeout=1)
    # its work is in the target now: once the server is gone, rm asks nothing
    procs.cleanup()
    assert rm(vwt, "feature", code=0)["outcome"] == "removed"


def test_a_merge_that_removes_says_no_kept_reason(vwt: Vwt, repo: Repo) -> None:
    path = Path(vwt.new("plain")["path"])
    repo.commit("plain", {"plain.txt": "x\n"}, cwd=path)
    data = vwt.ok("merge", "plain", "--json", "--no-fetch").json()
    assert data["removed"] is True and data["kept_reason"] is None


@pytest.mark.slow
def test_land_lands_the_work_but_keeps_a_worktree_a_server_runs_in(
        vwt: Vwt, repo: Repo, procs: Procs) -> None:
    path = Path(vwt.new("feature")["path"])
    repo.commit("the feature", {"feature.txt": "done\n"}, cwd=path)
    pid = procs.server(path, free_port())
    result = vwt("land", "feature", "--json")
    assert result.code == 0, str(result)
    [landed] = result.json()["results"]
    assert landed["outcome"] == "merged" and landed["removed"] is False
    assert f"pid {pid}" in landed["message"]
    assert repo.git("show", "main:feature.txt").strip() == "done" and path.is_dir()
    plain = vwt("land", "feature")  # nothing left to land; it stays while the server runs
    assert plain.code == 0 and path.is_dir(), str(plain)


# -- prune and retention --------------------------------------------------------------------
def test_prune_and_retention_keep_a_worktree_processes_run_in(
        vwt: Vwt, repo: Repo, procs: Procs) -> None:
    busy = Path(vwt.new("busy")["path"])
    idle = Path(vwt.new("idle")["path"])
    pid = procs.orphan(busy)
    plan = vwt.ok("prune", "--keep", "0", "--dry-run", "--json").json()
    assert {(k["name"], k["reason"]) for k in plan["kept"]} == {("busy", "processes_running")}
    assert [r["name"] for r in plan["removed"]] == ["idle"]
    done = vwt.ok("prune", "--keep", "0", "--json").json()
    assert {(k["name"], k["reason"]) for k in done["kept"]} == {("busy", "processes_running")}
    assert [r["name"] for r in done["removed"]] == ["idle"]
    assert busy.is_dir() and not idle.exists() and alive(pid)


@pytest.mark.slow
def test_retention_counts_a_shell_of_the_user_standing_in_the_worktree(
        vwt: Vwt, repo: Repo) -> None:
    """An explicit rm spares its caller's shell; retention does not: someone works there."""
    path = Path(vwt.new("mine")["path"])
    script = f"cd '{path}' && '{VWT_BIN}' -C '{repo.path}' prune --keep 0 --json"
    done = subprocess.run(["sh", "-c", script], env=vwt.env(), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["kept"] == [
        {"name": "mine", "bucket": repo.bucket, "reason": "processes_running"}]
    assert path.is_dir()


# -- Claude Code's WorktreeRemove -----------------------------------------------------------
@pytest.mark.slow
def test_worktree_remove_keeps_a_worktree_a_nested_agent_runs_in(
        vwt: Vwt, repo: Repo, procs: Procs, fake_host) -> None:  # noqa: F811
    path = Path(vwt.new("agent-wt")["path"])
    nested = procs.orphan(path)
    host = fake_host(payload("WorktreeRemove", cwd=path, worktree_path=path), cwd=path)
    assert host.code == 1 and host.out == ""
    assert f"pid {nested}" in host.err and len(host.err.strip().splitlines()) == 1
    assert path.is_dir() and alive(nested)


def test_worktree_remove_excepts_the_claude_code_process_that_asked(
        vwt: Vwt, repo: Repo, fake_host) -> None:  # noqa: F811
    """The stand-in Claude Code and the shell it runs the hook through both stand inside
    the worktree: they are the ones asking, so the removal goes ahead."""
    path = Path(vwt.new("agent-wt")["path"])
    host = fake_host(payload("WorktreeRemove", cwd=path, worktree_path=path), cwd=path)
    assert host.code == 0, host.err
    assert not path.exists()
