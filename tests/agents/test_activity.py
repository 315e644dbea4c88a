"""Activity from Claude Code's hook events: working, waiting, idle, cleared; gone with the
agent process; never in a claim folder, never touching a checkout; each event quick."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from conftest import VWT_BIN

from .conftest import SESSION, hook, payload

EVENTS = [("UserPromptSubmit", "working"), ("PreToolUse", "working"),
          ("Notification", "waiting"), ("Stop", "idle")]


@pytest.fixture
def made(vwt, repo):
    data = payload("WorktreeCreate", cwd=repo.path, name="busy", session_id=None)
    result = hook(vwt, data)
    assert result.code == 0, str(result)
    return repo.checkout("busy")


@pytest.mark.parametrize(("event", "state"), EVENTS)
def test_each_event_marks_the_worktree_containing_cwd(vwt, repo, made, event, state):
    sub = made / "src"
    sub.mkdir(exist_ok=True)
    result = hook(vwt, payload(event, cwd=sub))
    assert result.code == 0 and result.out == "" and result.err == "", str(result)
    activity = vwt.entry("busy", cwd=repo.path)["activity"]
    assert activity["state"] == state
    assert activity["agent"] == "claude-code" and activity["session"] == SESSION
    status = vwt.ok("status", "busy", "--json", cwd=repo.path).json()
    assert status["activity"] == activity


def test_since_stays_while_the_state_does_and_moves_when_it_changes(vwt, repo, made):
    hook(vwt, payload("UserPromptSubmit", cwd=made))
    first = vwt.entry("busy", cwd=repo.path)["activity"]["since"]
    time.sleep(0.01)
    hook(vwt, payload("PreToolUse", cwd=made))
    assert vwt.entry("busy", cwd=repo.path)["activity"]["since"] == first
    hook(vwt, payload("Stop", cwd=made))
    assert vwt.entry("busy", cwd=repo.path)["activity"]["since"] > first


def test_list_shows_an_activity_column(vwt, repo, made):
    hook(vwt, payload("Notification", cwd=made))
    lines = vwt.ok("list", cwd=repo.path).out.splitlines()
    assert "ACTIVITY" in lines[0].split()
    assert "waiting" in lines[1].split()


def test_session_end_clears_it(vwt, repo, made):
    hook(vwt, payload("UserPromptSubmit", cwd=made))
    assert hook(vwt, payload("SessionEnd", cwd=made)).code == 0
    assert vwt.entry("busy", cwd=repo.path)["activity"] is None


def test_activity_of_a_dead_agent_process_is_null(vwt, repo, made, fake_host):
    host = fake_host(payload("PreToolUse", cwd=made))
    assert host.code == 0, host.err
    assert vwt.entry("busy", cwd=repo.path)["activity"]["state"] == "working"
    host.kill()
    assert vwt.entry("busy", cwd=repo.path)["activity"] is None


def test_outside_a_managed_worktree_an_event_does_nothing(vwt, repo, sandbox):
    result = hook(vwt, payload("PreToolUse", cwd=repo.path))
    assert result.code == 0 and result.out == ""
    assert not (sandbox.vibe_home / "worktree-activity").exists()


def test_events_leave_the_claim_folder_and_the_checkout_as_they_were(vwt, repo, made):
    claim = repo.claim("busy")
    before = sorted(os.listdir(claim))
    status_before = repo.porcelain(made)
    stamp = os.stat(made).st_mtime_ns
    for event, _state in EVENTS:
        hook(vwt, payload(event, cwd=made))
    assert sorted(os.listdir(claim)) == before == ["record.json"]
    assert repo.porcelain(made) == status_before and os.stat(made).st_mtime_ns == stamp
    hook(vwt, payload("SessionEnd", cwd=made))
    vwt.ok("rm", "busy", "-y", cwd=repo.path)
    assert not claim.exists()


def best_of_7(argv: list[str], data: bytes, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its children), each the best of 7 runs:
    on a shared machine the wall time of the others measures the neighbours, and the CPU
    time is what the command itself costs."""
    import resource

    walls, cpus = [], []
    for _ in range(7):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, input=data, env=env, capture_output=True, check=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(walls), min(cpus)


def test_each_event_succeeds_and_its_latency_is_printed(vwt, repo, made, capsys):
    """The whole process, start-up included; `vwt --version` beside it for scale. Printed,
    not asserted: timing decides no test (SPEC's 100 ms is checked by `python -m benchmarks
    B19`)."""
    env = vwt.env()
    base_wall, base_cpu = best_of_7([VWT_BIN, "--version"], b"", env)
    timings = {}
    for event in ("UserPromptSubmit", "PreToolUse", "Notification", "Stop", "SessionEnd"):
        data = json.dumps(payload(event, cwd=made)).encode()
        timings[event] = best_of_7([VWT_BIN, "hook", "claude-code"], data, env)
    with capsys.disabled():
        print(f"\nevent latency, best of 7 (wall / CPU): vwt --version {base_wall * 1000:.0f}"
              f" / {base_cpu * 1000:.0f} ms; " + ", ".join(
                  f"{e} {w * 1000:.0f} / {c * 1000:.0f} ms" for e, (w, c) in timings.items()))
    assert set(timings) == {"UserPromptSubmit", "PreToolUse", "Notification", "Stop",
                            "SessionEnd"}
