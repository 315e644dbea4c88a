"""`vwt run` and `vwt shell`: holding a worktree while a command runs (SPEC §4 run/shell)."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

from conftest import assert_error, wait_for

COUNT_LIVE_HOLDERS = textwrap.dedent(
    """\
    import fcntl, json, os, sys
    d = sys.argv[1]
    live = []
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        fd = os.open(os.path.join(d, name), os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            live.append(name)
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
    print(json.dumps({"cwd": os.getcwd(), "live": live}))
    """
)


def test_run_passes_the_exit_status_through(repo, vwt):
    vwt.new("job")
    assert vwt("run", "job", "--", sys.executable, "-c", "raise SystemExit(7)").code == 7
    assert vwt("run", "job", "--", "true").code == 0
    assert vwt("run", "job", "--", "false").code == 1


def test_run_executes_inside_the_checkout_holding_it(repo, vwt, sandbox):
    vwt.new("job")
    script = sandbox.tmp / "count.py"
    script.write_text(COUNT_LIVE_HOLDERS)
    result = vwt("run", "job", "--", sys.executable, str(script), str(repo.holders_dir("job")))
    assert result.code == 0, str(result)
    seen = json.loads(result.out.strip().splitlines()[-1])
    assert Path(seen["cwd"]).resolve() == repo.checkout("job")
    assert len(seen["live"]) == 1, seen
    assert re.fullmatch(r"vwt-\d+-\S+", seen["live"][0]), seen
    # released afterwards
    assert repo.live_holders("job") == []


def test_running_command_keeps_the_worktree_from_removal_and_prune(repo, vwt, waiter):
    vwt.new("busy")
    repo.edit_record("busy", claimed_at="2000-01-01T00:00:00.000000Z")
    proc = vwt.spawn("run", "busy", "--", *waiter.command())
    wait_for(lambda: waiter.started.exists() and waiter.started.read_text())
    assert Path(waiter.started.read_text()).resolve() == repo.checkout("busy")

    entry = vwt.entry("busy")
    assert entry["held"] is True
    assert entry["holders"] >= 1
    ids = [p.name for p in repo.live_holders("busy")]
    assert any(i.startswith(f"vwt-{proc.pid}-") for i in ids), ids
    rm = vwt("rm", "busy", "-y", "--json")
    assert rm.code == 4, str(rm)
    assert rm.json()["outcome"] == "kept_in_use"
    pruned = vwt("prune", "--keep", "0", "--json")
    assert pruned.code == 0, str(pruned)
    assert [k["name"] for k in pruned.json()["kept"]] == ["busy"]
    assert pruned.json()["removed"] == []
    assert repo.checkout("busy").exists()

    waiter.release.touch()
    assert proc.wait(timeout=30) == 0
    assert vwt.entry("busy")["held"] is False
    assert vwt("rm", "busy", "--json").json()["outcome"] == "removed"


def test_run_of_unknown_name_fails_without_running(repo, vwt, sandbox):
    marker = sandbox.tmp / "ran"
    result = vwt("run", "ghost", "--", "touch", str(marker))
    assert_error(result, 1)
    assert not marker.exists()


def test_run_without_a_command_is_bad_usage(repo, vwt):
    vwt.new("job")
    assert vwt("run", "job").code == 2


def test_run_refuses_while_a_removal_is_in_progress(repo, vwt, holder, sandbox):
    vwt.new("leaving")
    holder(repo.bucket, "leaving", ".removing")
    marker = sandbox.tmp / "ran"
    result = vwt("run", "leaving", "--", "touch", str(marker))
    assert result.code != 0, str(result)
    assert not marker.exists()


def test_shell_runs_the_users_shell_inside_the_checkout(repo, vwt):
    vwt.new("sh")
    result = vwt("shell", "sh", input="pwd\nexit 5\n", env_extra={"SHELL": "/bin/sh"})
    assert result.code == 5, str(result)
    assert Path(result.out.strip().splitlines()[-1]).resolve() == repo.checkout("sh")
