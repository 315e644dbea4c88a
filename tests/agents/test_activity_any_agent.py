"""`vwt activity set|clear`: any agent's hook line marks the worktree it works in, as Claude
Code's events do; it never fails the hook (exit 0, nothing on stdout, outside a worktree
too), and activity set this way expires 6 hours after its last mark."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys

import pytest

from conftest import VWT_BIN, utc_z


@pytest.fixture
def made(vwt, repo):
    vwt.new("busy", "--no-fetch", cwd=repo.path)
    return repo.checkout("busy")


def activity_of(vwt, repo):
    return vwt.entry("busy", cwd=repo.path)["activity"]


def activity_file(vwt, repo):
    return vwt.sandbox.vibe_home / "worktree-activity" / repo.bucket / "busy.json"


def quietly(result):
    assert result.code == 0 and result.out == "" and result.err == "", str(result)
    return result


@pytest.mark.parametrize("state", ["working", "waiting", "idle"])
def test_set_marks_the_worktree_containing_the_current_folder(vwt, repo, made, state):
    deeper = made / "deeper"
    deeper.mkdir()
    quietly(vwt("activity", "set", state, "--agent", "codex", "--session", "s-1", cwd=deeper))
    activity = activity_of(vwt, repo)
    assert (activity["state"], activity["agent"], activity["session"]) == (state, "codex", "s-1")
    assert vwt.ok("status", "busy", "--json", cwd=repo.path).json()["activity"] == activity
    table = vwt.ok("list", cwd=repo.path).out.splitlines()
    assert "ACTIVITY" in table[0].split() and state in table[1].split()


def test_without_agent_or_session_the_agent_is_unknown(vwt, repo, made):
    quietly(vwt("activity", "set", "working", cwd=made))
    activity = activity_of(vwt, repo)
    assert (activity["agent"], activity["session"]) == ("unknown", "")


def test_minus_c_names_the_folder(vwt, repo, made):
    quietly(vwt("-C", str(made), "activity", "set", "waiting"))
    assert activity_of(vwt, repo)["state"] == "waiting"


def test_since_stays_while_the_state_does(vwt, repo, made):
    vwt("activity", "set", "working", "--session", "s", cwd=made)
    first = activity_of(vwt, repo)["since"]
    vwt("activity", "set", "working", "--session", "s", cwd=made)
    assert activity_of(vwt, repo)["since"] == first
    vwt("activity", "set", "idle", "--session", "s", cwd=made)
    assert activity_of(vwt, repo)["since"] > first


def test_clear_forgets_it_whoever_set_it(vwt, repo, made):
    vwt("activity", "set", "working", "--agent", "gemini", cwd=made)
    quietly(vwt("activity", "clear", cwd=made))
    assert activity_of(vwt, repo) is None and not activity_file(vwt, repo).exists()
    quietly(vwt("activity", "clear", cwd=made))  # nothing to clear: still fine


def test_outside_a_managed_worktree_it_does_nothing_and_exits_0(vwt, repo, sandbox):
    for folder in (repo.path, sandbox.default_cwd):
        quietly(vwt("activity", "set", "working", cwd=folder))
        quietly(vwt("activity", "clear", cwd=folder))
    assert not (sandbox.vibe_home / "worktree-activity").exists()


def test_a_folder_removed_under_the_agent_is_outside_any_worktree(vwt, sandbox):
    gone = sandbox.tmp / "gone"
    for line in ("activity set working", "activity clear"):
        gone.mkdir()
        proc = subprocess.run(["/bin/sh", "-c", f"cd {gone} && rmdir {gone} && "
                               f"'{VWT_BIN}' {line}"], env=vwt.env(), capture_output=True,
                              timeout=60)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b""), proc.stderr


@pytest.mark.parametrize("args", [["set", "busy"], ["set"], [], ["clear", "working"],
                                  ["set", "working", "--agent", "a\nb"],
                                  ["set", "working", "--session", "x" * 300]])
def test_a_line_that_cannot_be_right_is_exit_1_never_2(vwt, made, args):
    result = vwt("activity", *args, cwd=made)
    assert result.code == 1 and result.out == "" and len(result.err_lines) == 1, str(result)


def test_it_reads_nothing_from_stdin(vwt, repo, made):
    """An agent's hook gets its event on stdin; the line must not wait for it to end."""
    proc = subprocess.Popen([VWT_BIN, "activity", "set", "working"], cwd=made, env=vwt.env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=30)  # stdin stays open until it exits
    finally:
        proc.kill()
    assert proc.returncode == 0 and out == b"", err
    assert activity_of(vwt, repo)["state"] == "working"


def test_an_activity_it_cannot_write_is_a_warning_and_exit_0(vwt, repo, made, sandbox):
    (sandbox.vibe_home / "worktree-activity").write_text("a file where a folder should be")
    result = vwt("activity", "set", "working", cwd=made)
    assert result.code == 0 and result.out == "" and len(result.err_lines) == 1
    assert result.err.startswith("vwt: warning: cannot note the activity of busy")


def test_it_expires_six_hours_after_the_last_mark(vwt, repo, made):
    vwt("activity", "set", "working", cwd=made)
    marked = json.loads(activity_file(vwt, repo).read_text())
    expires = dt.datetime.strptime(marked["expires"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=dt.UTC)
    in_six_hours = dt.datetime.now(dt.UTC) + dt.timedelta(hours=6)
    assert abs((expires - in_six_hours).total_seconds()) < 60
    marked["expires"] = utc_z(dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1))
    activity_file(vwt, repo).write_text(json.dumps(marked))
    assert activity_of(vwt, repo) is None
    assert vwt.ok("status", "busy", "--json", cwd=repo.path).json()["activity"] is None
    vwt("activity", "set", "working", cwd=made)  # a new mark: six hours more
    assert activity_of(vwt, repo)["state"] == "working"


def test_claude_codes_and_vibes_activity_does_not_expire(vwt, repo, made):
    from .conftest import hook, payload
    from .vibe_support import run_hook, vibe_input

    hook(vwt, payload("PreToolUse", cwd=made))
    assert "expires" not in json.loads(activity_file(vwt, repo).read_text())
    run_hook(vwt, vibe_input("pre_tool", made))
    assert "expires" not in json.loads(activity_file(vwt, repo).read_text())


HOST = """
import subprocess, sys, signal
hook = subprocess.run(["/bin/sh", "-c", sys.argv[1]])
print(hook.returncode, flush=True)
signal.pause()
"""


def test_it_belongs_to_the_agent_process_and_ends_with_it(vwt, repo, made):
    """An agent runs its hook through a shell: the process above the shell is the agent."""
    host = subprocess.Popen([sys.executable, "-c", HOST,
                             f"'{VWT_BIN}' activity set working --agent codex"],
                            cwd=made, env=vwt.env(), stdout=subprocess.PIPE, text=True)
    try:
        assert host.stdout is not None and host.stdout.readline().strip() == "0"
        assert json.loads(activity_file(vwt, repo).read_text())["pid"] == host.pid
        assert activity_of(vwt, repo)["agent"] == "codex"
    finally:
        os.kill(host.pid, signal.SIGKILL)
        host.wait()
    assert activity_of(vwt, repo) is None


def test_the_api_marks_a_worktree_by_name_for_the_calling_process(vwt, repo, made, sandbox):
    from vibe_worktree import Worktrees
    from vibe_worktree.core.errors import NotFound, VwtError

    wt = Worktrees(home=str(sandbox.vibe_home), cwd=str(repo.path))
    wt.set_activity("busy", "waiting", agent="my-host", session="s-9")
    marked = json.loads(activity_file(vwt, repo).read_text())
    assert (marked["state"], marked["agent"], marked["session"], marked["pid"]) == (
        "waiting", "my-host", "s-9", os.getpid())
    assert "expires" in marked
    assert activity_of(vwt, repo)["state"] == "waiting"
    with pytest.raises(VwtError):
        wt.set_activity("busy", "sleeping")
    with pytest.raises(NotFound):
        wt.set_activity("nothing-here", "idle")
    wt.clear_activity("busy")
    assert activity_of(vwt, repo) is None
