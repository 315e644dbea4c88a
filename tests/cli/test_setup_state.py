"""An unfinished setup never reads as done (SPEC §9 "Unfinished setup"): a post_create hook
that failed, timed out or was cut short by a signal leaves the worktree `ready (setup
incomplete)`, `vwt new NAME` runs again the hooks that did not succeed (only those), and an
interrupted `new` stops its hook and says what it left. Real signals, sent to vwt's process
group as a terminal sends them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from test_hooks import by_name, hook_entry, project_hooks, user_hooks
from test_pool import deps_hook, runs_in, setup_pool, wait_for_fillers

from conftest import (
    MCP_INSTALLED,
    VWT_BIN,
    Repo,
    Sandbox,
    Vwt,
    assert_matches_schema,
    mcp_answer,
    mcp_send,
    mcp_session,
    wait_for,
)

PAYLOADS = Path(__file__).parents[1] / "agents" / "payloads"


def alive(pid: int) -> bool:
    """Running (a zombie waiting for whoever reaps orphans does not count)."""
    if not os.path.isdir("/proc/self"):  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def setup_of(vwt: Vwt, name: str) -> str | None:
    row = vwt.entry(name)
    assert row is not None, name
    status = vwt.ok("status", name, "--json").json()
    assert status["setup"] == row["setup"], (status, row)
    return row["setup"]  # type: ignore[no-any-return]


def state_cell(vwt: Vwt, name: str) -> str:
    """The STATE column of plain `vwt list` for `name`."""
    lines = vwt.ok("list").out.splitlines()
    start = lines[0].index("STATE")
    end = lines[0].index("AHEAD")
    [line] = [line for line in lines[1:] if line.split()[0] == name]
    return line[start:end].strip()


class SlowHook:
    """A post_create hook that says when it runs, then waits a minute in a child of its own
    (so a test can see the whole group stopped), unless it is made quick again."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.tmp = sandbox.tmp
        self.started = sandbox.tmp / "slow.started"
        self.pid = sandbox.tmp / "slow.pid"
        self.child = sandbox.tmp / "slow.child"
        self.runs = sandbox.tmp / "slow.runs"

    def entry(self) -> str:
        return hook_entry("slow", f"echo run >> {self.runs}; sleep 60 & echo $! > {self.child}; "
                                  f"echo $$ > {self.pid}; touch {self.started}; wait",
                          timeout=120)

    def quick(self) -> str:
        return hook_entry("slow", f"echo run >> {self.runs}")

    def pids(self) -> list[int]:
        return [int(self.pid.read_text()), int(self.child.read_text())]

    def stop_leftovers(self) -> None:
        for path in (self.pid, self.child):
            if path.exists():
                try:
                    os.kill(int(path.read_text()), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass


def first_hook(sandbox: Sandbox) -> tuple[str, Path]:
    runs = sandbox.tmp / "first.runs"
    return hook_entry("first", f"echo run >> {runs}"), runs


def start_new(vwt: Vwt, repo: Repo, *args: str) -> subprocess.Popen[str]:
    """`vwt new` in a process group of its own, as a shell starts a foreground job."""
    return vwt.spawn("new", *args, cwd=repo.path, new_session=True)


def wait_until_started(proc: subprocess.Popen[str], marker: Path) -> None:
    deadline = time.monotonic() + 60
    while not marker.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"vwt new ended before its hook started:\n{out}\n{err}")
        assert time.monotonic() < deadline, "the hook never started"
        time.sleep(0.01)


# -- a hook that failed -----------------------------------------------------------------------
def test_a_failed_hook_leaves_the_setup_incomplete_and_new_runs_only_it_again(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    first, first_runs = first_hook(sandbox)
    user_hooks(sandbox, first, hook_entry("deps", "exit 3"))
    created = vwt.new("feature")
    assert by_name(created)["deps"]["status"] == "failed"
    assert setup_of(vwt, "feature") == "incomplete"
    assert state_cell(vwt, "feature") == "ready (setup incomplete)"
    [line] = [line for line in vwt.ok("status", "feature").out.splitlines()
              if line.split()[:1] == ["setup"]]
    assert "incomplete" in line and "vwt new feature" in line

    fixed = sandbox.tmp / "deps.done"
    user_hooks(sandbox, first, hook_entry("deps", f"touch {fixed}"))
    again = vwt.new("feature")
    assert again["created"] is False
    assert again["hooks"] == [{"name": "deps", "type": "post_create", "source": "user",
                               "status": "ok", "exit_code": 0}]
    assert fixed.exists() and first_runs.read_text() == "run\n"  # first did not run again
    assert setup_of(vwt, "feature") == "done"
    assert state_cell(vwt, "feature") == "ready"
    assert vwt.new("feature")["hooks"] == []  # nothing left to finish
    assert "setup_pending" not in repo.record("feature")


@pytest.mark.slow
def test_a_timed_out_project_hook_is_run_again_from_the_fixed_file(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    project_hooks(repo, hook_entry("deps", "sleep 30", timeout=0.5))
    vwt.ok("hooks", "approve", "--all", cwd=repo.path)
    assert vwt.new("feature", cwd=repo.path)["hooks"][0]["status"] == "timed_out"
    assert setup_of(vwt, "feature") == "incomplete"
    checkout = repo.checkout("feature")
    (checkout / ".vibe" / "worktree.toml").write_text(hook_entry("deps", "touch deps.done"))
    vwt.ok("hooks", "approve", "--all", cwd=checkout)
    again = vwt.new("feature", cwd=repo.path)
    assert by_name(again)["deps"]["status"] == "ok" and (checkout / "deps.done").exists()
    assert setup_of(vwt, "feature") == "done"


def test_setup_is_done_without_hooks_or_with_no_hooks_and_null_without_a_checkout(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    vwt.new("plain")
    assert setup_of(vwt, "plain") == "done"
    assert "setup_pending" not in repo.record("plain")
    user_hooks(sandbox, hook_entry("deps", "exit 1"))
    vwt.new("skipped", "--no-hooks")
    assert setup_of(vwt, "skipped") == "done"  # nobody asked for the hooks
    assert vwt.new("skipped")["hooks"] == []
    vwt.new("gone")
    subprocess.run(["rm", "-rf", str(repo.checkout("gone"))], check=True)
    assert vwt.entry("gone")["state"] == "missing"  # type: ignore[index]
    assert setup_of(vwt, "gone") is None
    assert vwt.entry("gone", "--no-status")["setup"] is None  # type: ignore[index]
    assert vwt.entry("plain", "--no-status")["setup"] == "done"  # type: ignore[index]


API_SCRIPT = textwrap.dedent("""
    import json, sys
    from vibe_worktree import Worktrees
    wt = Worktrees(cwd=sys.argv[1])
    created = wt.create("feature")
    row = next(r for r in wt.list() if r.name == "feature")
    print(json.dumps([created.created, created.setup_pending, [h.status for h in created.hooks],
                      row.setup, wt.status("feature").setup]))
""")


def test_the_python_api_says_the_setup_and_finishes_it(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    def create() -> list[Any]:
        proc = subprocess.run([sys.executable, "-c", API_SCRIPT, str(repo.path)],
                              env=sandbox.env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)  # type: ignore[no-any-return]

    user_hooks(sandbox, hook_entry("deps", "exit 2"))
    assert create() == [True, True, ["failed"], "incomplete", "incomplete"]
    user_hooks(sandbox, hook_entry("deps", "true"))
    assert create() == [False, False, ["ok"], "done", "done"]
    assert create() == [False, False, [], "done", "done"]


# -- a signal while a hook runs ---------------------------------------------------------------
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_new_stops_its_hook_says_what_it_left_and_new_finishes_it(
        repo: Repo, sandbox: Sandbox, vwt: Vwt, signum: int, code: int) -> None:
    slow = SlowHook(sandbox)
    first, first_runs = first_hook(sandbox)
    user_hooks(sandbox, first, slow.entry())
    try:
        proc = start_new(vwt, repo, "feature")
        wait_until_started(proc, slow.started)
        os.killpg(proc.pid, signum)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == code, err
        assert "Traceback" not in err and out == ""
        lines = [line for line in err.splitlines() if line.startswith("vwt:")]
        assert len(lines) == 1, err
        assert str(repo.checkout("feature")) in lines[0] and "vwt new feature" in lines[0]
        assert wait_for(lambda: not any(alive(pid) for pid in slow.pids()), timeout=10)
    finally:
        slow.stop_leftovers()
    row = vwt.entry("feature")
    assert row is not None and row["state"] == "ready" and row["holders"] == 0
    assert setup_of(vwt, "feature") == "incomplete"
    assert state_cell(vwt, "feature") == "ready (setup incomplete)"
    assert vwt("doctor").code == 0  # no stale holder is left behind

    user_hooks(sandbox, first, slow.quick())
    again = vwt.new("feature", cwd=repo.path)
    assert again["created"] is False and [h["name"] for h in again["hooks"]] == ["slow"]
    assert first_runs.read_text() == "run\n"
    assert slow.runs.read_text() == "run\nrun\n"
    assert setup_of(vwt, "feature") == "done"


def test_a_new_killed_while_its_hook_runs_reads_incomplete_and_new_finishes_it(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    slow = SlowHook(sandbox)
    first, first_runs = first_hook(sandbox)
    user_hooks(sandbox, first, slow.entry())
    proc = start_new(vwt, repo, "feature")
    try:
        wait_until_started(proc, slow.started)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        slow.stop_leftovers()  # a SIGKILL leaves nobody to stop them: a session of their own
    proc.communicate(timeout=30)  # the hook had vwt's stderr: ended, the pipe closes
    assert setup_of(vwt, "feature") == "incomplete"
    assert state_cell(vwt, "feature") == "ready (setup incomplete)"
    user_hooks(sandbox, first, slow.quick())
    again = vwt.new("feature", cwd=repo.path)
    assert [h["name"] for h in again["hooks"]] == ["slow"]
    assert first_runs.read_text() == "run\n"
    assert setup_of(vwt, "feature") == "done"


# -- background hooks -------------------------------------------------------------------------
@pytest.mark.parametrize("status", [0, 3])
def test_setup_runs_while_a_background_hook_runs_then_reads_as_its_end(
        repo: Repo, sandbox: Sandbox, vwt: Vwt, status: int) -> None:
    release = sandbox.tmp / "release"
    user_hooks(sandbox, hook_entry(
        "deps", f"while [ ! -e {release} ]; do sleep 0.05; done; exit {status}",
        background=True, timeout=60))
    created = vwt.new("feature")
    assert created["hooks"][0]["status"] == "started"
    try:
        assert setup_of(vwt, "feature") == "running"
        assert state_cell(vwt, "feature") == "ready"
    finally:
        release.touch()
    wait_for(lambda: not repo.live_holders("feature"), timeout=30)
    assert setup_of(vwt, "feature") == ("done" if status == 0 else "incomplete")
    assert vwt("doctor").code == 0
    if status:
        release.unlink()
        user_hooks(sandbox, hook_entry("deps", "true", background=True))
        assert vwt.new("feature")["hooks"][0]["status"] == "started"
        wait_for(lambda: not repo.live_holders("feature"), timeout=30)
        assert setup_of(vwt, "feature") == "done"


# -- the warm pool ----------------------------------------------------------------------------
def test_a_worktree_taken_from_the_pool_reads_done_and_a_failed_pool_hook_hands_nothing_out(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 1, deps_hook(sandbox, inputs=["package.json"]))
    vwt.ok("pool", "fill", cwd=repo.path)
    taken = vwt.new("one", cwd=repo.path)
    assert taken["pooled"] is True and runs_in(sandbox, taken["path"]) == []  # ran in the pool
    assert setup_of(vwt, "one") == "done" and "setup_pending" not in repo.record("one")
    wait_for_fillers(vwt, repo)
    vwt.ok("pool", "drain", cwd=repo.path)
    setup_pool(repo, vwt, 1, deps_hook(sandbox, extra=" && exit 5"))
    assert vwt("pool", "fill", cwd=repo.path).code == 1
    made = vwt.new("two", cwd=repo.path)
    assert made["pooled"] is False and made["hooks"][0]["status"] == "failed"
    assert setup_of(vwt, "two") == "incomplete"
    wait_for_fillers(vwt, repo)  # the refill `new` started, which fails the same way


# -- the agents' ways in ----------------------------------------------------------------------
def test_claude_codes_worktree_create_finishes_an_incomplete_setup(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    marker = sandbox.tmp / "deps.done"
    user_hooks(sandbox, hook_entry("deps", "exit 1"))
    payload: dict[str, Any] = json.loads((PAYLOADS / "WorktreeCreate.json").read_text())
    payload.update(cwd=str(repo.path), name="agent-a1")
    del payload["session_id"]
    assert vwt("hook", "claude-code", input=json.dumps(payload)).code == 0
    assert setup_of(vwt, "agent-a1") == "incomplete"
    user_hooks(sandbox, hook_entry("deps", f"touch {marker}"))
    result = vwt("hook", "claude-code", input=json.dumps(payload))
    assert result.code == 0 and Path(result.out.strip()) == repo.checkout("agent-a1")
    assert marker.exists() and setup_of(vwt, "agent-a1") == "done"
    assert repo.record("agent-a1")["agent"] == "claude-code"  # the tag survives the rewrites


@pytest.mark.slow
@pytest.mark.skipif(not MCP_INSTALLED, reason="needs the optional mcp extra")
def test_the_mcp_create_tool_finishes_an_incomplete_setup(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    marker = sandbox.tmp / "deps.done"
    user_hooks(sandbox, hook_entry("deps", "exit 1"))
    vwt.new("feature", cwd=repo.path)
    user_hooks(sandbox, hook_entry("deps", f"touch {marker}"))
    with mcp_session(vwt, repo.path) as proc:
        mcp_send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                        "params": {"name": "create", "arguments": {"name": "feature"}}})
        called = mcp_answer(proc, 2)
        assert called is not None and not called["result"].get("isError"), called
        document = called["result"]["structuredContent"]
        assert_matches_schema("mcp-create", document)
        assert document["created"] is False and document["hooks"][0]["status"] == "ok"
        mcp_send(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                        "params": {"name": "status", "arguments": {"name": "feature"}}})
        status = mcp_answer(proc, 3)
        assert status is not None and status["result"]["structuredContent"]["setup"] == "done"
    assert marker.exists()


# -- a signal before the hooks ----------------------------------------------------------------
def stop_inside_checkout(repo: Repo, sandbox: Sandbox) -> tuple[Path, Path]:
    """A smudge filter of the user's that says when git is checking files out, then waits
    while the `gate` file exists: a signal then lands inside `git worktree add`."""
    inside, gate = sandbox.tmp / "inside-checkout", sandbox.tmp / "gate"
    repo.commit("slow file", {"a.slow": "slow\n", ".gitattributes": "*.slow filter=slow\n"})
    config = ("config", "--file", str(sandbox.gitconfig))
    sandbox.run_git(*config, "filter.slow.clean", "cat")
    sandbox.run_git(*config, "filter.slow.smudge",
                    f"sh -c 'touch {inside}; while [ -e {gate} ]; do sleep 0.02; done; cat'")
    gate.write_text("")
    return inside, gate


@pytest.mark.parametrize(("signum", "code", "said"), [
    (signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "stopped by SIGTERM")])
def test_a_signal_inside_git_checkout_undoes_the_creation(
        repo: Repo, sandbox: Sandbox, vwt: Vwt, signum: int, code: int, said: str) -> None:
    """git gets the signal too (the whole group does) and gets time to tidy the worktree
    it was adding; vwt then drops its reservation: nothing is left, not even half."""
    inside, gate = stop_inside_checkout(repo, sandbox)
    proc = start_new(vwt, repo, "feature")
    try:
        wait_until_started(proc, inside)
        os.killpg(proc.pid, signum)
        out, err = proc.communicate(timeout=30)
    finally:
        gate.unlink()
    assert proc.returncode == code, err
    assert err == f"vwt: error: {said}\n" and out == ""
    assert vwt.list() == []  # git tidied its half-added worktree, vwt its reservation
    assert not repo.claim("feature").exists() and not repo.checkout("feature").exists()
    assert not repo.branch_exists("feature")
    assert vwt("doctor").code == 0
    assert vwt.new("feature", cwd=repo.path)["created"] is True


# -- doctor -----------------------------------------------------------------------------------
def _kill_inside_checkout(repo: Repo, sandbox: Sandbox, vwt: Vwt, args: tuple[str, ...]) -> None:
    """`vwt new` killed inside git's checkout (a smudge filter of the user's waits there)."""
    inside, gate = stop_inside_checkout(repo, sandbox)
    proc = start_new(vwt, repo, *args)
    try:
        wait_until_started(proc, inside)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    finally:
        gate.unlink()


def _run_fix(vwt: Vwt, fix: str) -> None:
    subprocess.run(fix.replace("vwt", VWT_BIN, 1).split(), env=vwt.env(),
                   check=True, capture_output=True, timeout=60)


def test_doctor_reports_the_half_made_checkout_a_killed_new_left_and_prune_repairs_it(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    """Its dead creator's `.starting` file is still there (unlocked): doctor names the
    half-made checkout at once, and its fix, `vwt prune`, repairs it at once (SPEC §16)."""
    _kill_inside_checkout(repo, sandbox, vwt, ("feature",))
    assert repo.record("feature")["base_commit"] is None
    assert any(repo.checkout("feature").iterdir())

    report = vwt("doctor", "--json")
    assert report.code == 1, str(report)
    problems = {p["kind"]: p for p in report.json()["problems"]}
    assert set(problems) == {"half_made_checkout", "stale_holder"}  # the dead creator's
    problem = problems["half_made_checkout"]
    assert problem["name"] == "feature" and problem["fix"] == "vwt prune"
    _run_fix(vwt, problem["fix"])
    assert vwt("doctor").code == 0
    assert vwt.list() == [] and not repo.branch_exists("feature")
    assert vwt.new("feature")["created"] is True


@pytest.mark.parametrize(("args", "name", "branch"), [
    (("feature",), "feature", "feature"),
    (("-p", "fix the login"), "fix-the-login", "vibe/fix-the-login")])
def test_doctor_reports_a_half_made_checkout_of_a_creator_that_left_no_trace_and_its_fix_works(
        repo: Repo, sandbox: Sandbox, vwt: Vwt, args: tuple[str, ...], name: str,
        branch: str) -> None:
    """A killed `vwt new` whose stale `.starting` file was swept since (as any tool sharing
    the home may sweep stale holders): a young reservation whose checkout has content and no
    base commit, which no process is making and whose creator cannot be shown dead. Prune
    leaves it its grace period; doctor must not call it healthy, and its fix, `vwt new NAME`,
    finishes it."""
    _kill_inside_checkout(repo, sandbox, vwt, args)
    (repo.claim(name) / "holders" / ".starting").unlink()
    vwt.ok("prune")  # no proof of death: the young reservation stays
    assert repo.record(name)["base_commit"] is None
    assert any(repo.checkout(name).iterdir())

    report = vwt("doctor", "--json")
    assert report.code == 1, str(report)
    [problem] = report.json()["problems"]
    assert problem["kind"] == "half_made_checkout" and problem["name"] == name
    again = f"new {name}" + (f" -b {branch}" if branch != name else "")
    assert problem["fix"] == f"vwt -C {repo.path} {again}"
    _run_fix(vwt, problem["fix"])
    row = vwt.entry(name)
    assert row is not None and row["state"] == "ready"
    assert repo.current_branch(repo.checkout(name)) == branch
    assert vwt("doctor").code == 0  # no stray branch either: the fix took the branch over
