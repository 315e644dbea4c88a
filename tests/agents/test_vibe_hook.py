"""`vwt hook vibe`: Mistral Vibe's hook events as the activity of the worktree its session
works in; and, whatever happens, exit 0 with nothing on stdout, since Vibe counts anything
else as a failed hook."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from .vibe_support import SESSION, hook_command, run_hook, vibe_input


@pytest.fixture
def made(vwt, repo):
    vwt.new("busy", "--no-fetch", cwd=repo.path)
    return repo.checkout("busy")


def activity_of(vwt, repo, name="busy"):
    return vwt.entry(name, cwd=repo.path)["activity"]


def assert_quiet_success(result):
    assert result.code == 0 and result.out == "", str(result)


@pytest.mark.parametrize(("event", "state"), [("pre_tool", "working"), ("post_tool", "working"),
                                              ("post_agent", "idle")])
def test_each_event_marks_the_worktree_containing_cwd(vwt, repo, made, event, state):
    sub = made / "deeper"
    sub.mkdir()
    result = run_hook(vwt, vibe_input(event, sub))
    assert_quiet_success(result)
    assert result.err == ""
    activity = activity_of(vwt, repo)
    assert activity["state"] == state
    assert activity["agent"] == "vibe" and activity["session"] == SESSION


def test_a_turn_goes_working_then_idle_and_since_follows_the_state(vwt, repo, made):
    run_hook(vwt, vibe_input("pre_tool", made))
    first = activity_of(vwt, repo)["since"]
    time.sleep(0.01)
    run_hook(vwt, vibe_input("post_tool", made))
    assert activity_of(vwt, repo) == {"state": "working", "agent": "vibe", "session": SESSION,
                                      "since": first}
    run_hook(vwt, vibe_input("post_agent", made))
    idle = activity_of(vwt, repo)
    assert idle["state"] == "idle" and idle["since"] > first


def test_without_cwd_in_the_input_the_hooks_own_folder_counts(vwt, repo, made):
    data = vibe_input("pre_tool", made)
    del data["cwd"]
    assert_quiet_success(run_hook(vwt, data, cwd=made))
    assert activity_of(vwt, repo)["state"] == "working"


def test_a_subagent_works_for_its_parent_session_and_its_turn_end_is_not_the_sessions(
        vwt, repo, made):
    run_hook(vwt, vibe_input("pre_tool", made, session="sub-1", parent=SESSION))
    activity = activity_of(vwt, repo)
    assert activity["state"] == "working" and activity["session"] == SESSION
    assert_quiet_success(run_hook(vwt, vibe_input("post_agent", made, session="sub-1",
                                                  parent=SESSION)))
    assert activity_of(vwt, repo)["state"] == "working"
    run_hook(vwt, vibe_input("post_agent", made))
    assert activity_of(vwt, repo)["state"] == "idle"


def test_outside_a_managed_worktree_it_does_nothing(vwt, repo, sandbox):
    for cwd in (repo.path, sandbox.default_cwd):
        result = run_hook(vwt, vibe_input("pre_tool", cwd))
        assert_quiet_success(result)
        assert result.err == ""
    assert not (sandbox.vibe_home / "worktree-activity").exists()


def test_an_event_it_does_not_know_does_nothing(vwt, repo, made, sandbox):
    assert_quiet_success(run_hook(vwt, vibe_input("session_start", made)))
    assert activity_of(vwt, repo) is None
    assert not (sandbox.vibe_home / "logs").exists()


BAD_INPUTS = {
    "not JSON": b"hello",
    "broken JSON": b'{"hook_event_name": "pre_tool", ',
    "an array": b'["pre_tool"]',
    "nothing": b"",
    "no event": json.dumps({"session_id": SESSION}).encode(),
    "a number for the event": json.dumps({"hook_event_name": 3}).encode(),
    "a number for the session": None,  # filled in below: needs the worktree
    "not UTF-8": b'{"hook_event_name": "pre_tool", "cwd": "\xff"}',
}


@pytest.mark.parametrize("what", list(BAD_INPUTS))
def test_malformed_input_never_fails_the_hook_and_is_logged(vwt, repo, made, sandbox, what):
    data = BAD_INPUTS[what]
    if data is None:
        data = json.dumps(vibe_input("pre_tool", made, session=42)).encode()
    result = run_hook(vwt, data, cwd=made)
    assert_quiet_success(result)
    log = sandbox.vibe_home / "logs" / "worktree" / "hook-vibe.log"
    assert len(result.err_lines) == 1, str(result)
    said = result.err_lines[0]
    assert said.startswith("vwt: hook vibe: ") and said.endswith(f" (logged in {log})")
    message = said.removeprefix("vwt: hook vibe: ").removesuffix(f" (logged in {log})")
    logged = log.read_text().splitlines()
    assert len(logged) == 1 and logged[0].endswith(f": {message}")
    assert activity_of(vwt, repo) is None


def test_a_home_it_cannot_write_never_fails_the_hook(vwt, repo, made, sandbox):
    (sandbox.vibe_home / "worktree-activity").write_text("a file where a folder should be")
    (sandbox.vibe_home / "logs").write_text("and another")
    result = run_hook(vwt, vibe_input("pre_tool", made))
    assert_quiet_success(result)
    assert len(result.err_lines) == 1 and "hook vibe:" in result.err


def test_a_folder_removed_under_the_session_never_fails_the_hook(vwt, repo, sandbox):
    gone = sandbox.tmp / "gone"
    gone.mkdir()
    proc = subprocess.run(["/bin/sh", "-c", f"cd {gone} && rmdir {gone} && {hook_command()}"],
                          input=b'{"hook_event_name": "pre_tool"}', env=vwt.env(),
                          capture_output=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == b"", proc.stderr


def test_it_reads_the_one_object_and_never_waits_for_the_pipe_to_close(vwt, made, repo):
    proc = subprocess.Popen(["/bin/sh", "-c", hook_command()], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=vwt.env(),
                            cwd=made)
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(vibe_input("pre_tool", made)).encode())
    proc.stdin.flush()  # and kept open
    try:
        out, err = proc.communicate(timeout=30)
    finally:
        proc.stdin.close()
    assert proc.returncode == 0 and out == b"", err
    assert activity_of(vwt, repo)["state"] == "working"


HOST = """
import subprocess, sys, signal
hook = subprocess.run(["/bin/sh", "-c", sys.argv[1]], input=sys.stdin.buffer.read())
print(hook.returncode, flush=True)
signal.pause()
"""


def test_the_activity_belongs_to_the_vibe_process_and_ends_with_it(vwt, repo, made):
    """Vibe starts the hook with `sh -c`: the process that started it is the session's."""
    host = subprocess.Popen([sys.executable, "-c", HOST, hook_command()], env=vwt.env(),
                            cwd=made, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert host.stdin is not None and host.stdout is not None
        host.stdin.write(json.dumps(vibe_input("pre_tool", made)))
        host.stdin.close()
        assert host.stdout.readline().strip() == "0"
        files = list(vwt.sandbox.vibe_home.joinpath("worktree-activity").rglob("busy.json"))
        assert json.loads(files[0].read_text())["pid"] == host.pid
        assert activity_of(vwt, repo)["state"] == "working"
    finally:
        os.kill(host.pid, signal.SIGKILL)
        host.wait()
    assert activity_of(vwt, repo) is None


def test_the_log_starts_again_once_it_is_large(vwt, made, sandbox):
    log = sandbox.vibe_home / "logs" / "worktree" / "hook-vibe.log"
    log.parent.mkdir(parents=True)
    log.write_text("an old failure\n" * 20_000)
    assert_quiet_success(run_hook(vwt, b"not json", cwd=made))
    assert len(log.read_text().splitlines()) == 1
    assert_quiet_success(run_hook(vwt, b"not json either", cwd=made))
    assert len(log.read_text().splitlines()) == 2
