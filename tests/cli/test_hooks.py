"""Lifecycle hooks: when they run, approval of project hooks, failures, background hooks."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from conftest import VWT_BIN, Repo, Sandbox, Vwt, assert_error


def hook_entry(name: str, command: str, kind: str = "post_create", **extra: object) -> str:
    lines = ["[[hooks]]", f"name = {json.dumps(name)}", f"type = {json.dumps(kind)}",
             f"command = {json.dumps(command)}"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in extra.items()]
    return "\n".join(lines) + "\n"


def project_hooks(repo: Repo, *entries: str, message: str = "hooks") -> None:
    repo.commit(message, {".vibe/worktree.toml": "".join(entries)})


def user_hooks(sandbox: Sandbox, *entries: str) -> Path:
    sandbox.vibe_home.mkdir(parents=True, exist_ok=True)
    path = sandbox.vibe_home / "worktree.toml"
    path.write_text("".join(entries))
    return path


def by_name(doc: dict) -> dict[str, dict]:
    return {h["name"]: h for h in doc["hooks"]}


def test_user_post_create_hook_runs_in_the_new_checkout_with_the_vwt_environment(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    user_hooks(sandbox, hook_entry(
        "env", "env | grep ^VWT_ | sort > hook-env.txt; pwd > hook-cwd.txt; "
        "cat > hook-stdin.txt; echo to-stdout"))
    result = vwt.ok("new", "feature", "--json")
    doc = result.json()  # the hook's stdout went to stderr, not into the JSON
    assert doc["hooks"] == [{"name": "env", "type": "post_create", "source": "user",
                             "status": "ok", "exit_code": 0}]
    assert "to-stdout" in result.err
    checkout = Path(doc["path"])
    assert (checkout / "hook-cwd.txt").read_text().strip() == str(checkout)
    assert (checkout / "hook-stdin.txt").read_text() == ""
    env = dict(line.split("=", 1) for line in (checkout / "hook-env.txt").read_text().split("\n")
               if line)
    port = vwt.ok("port", "feature").out.strip()
    assert env["VWT_HOOK"] == "post_create"
    assert env["VWT_NAME"] == "feature"
    assert env["VWT_BRANCH"] == "feature"
    assert env["VWT_PATH"] == str(checkout)
    assert env["VWT_BUCKET"] == doc["bucket"]
    assert env["VWT_REPO_ROOT"] == str(repo.path)
    assert env["VWT_BASE_COMMIT"] == doc["base_commit"]
    assert env["VWT_PORT"] == port


def test_reuse_runs_no_hook_and_no_hooks_flag_runs_none(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    marker = sandbox.tmp / "runs.txt"
    user_hooks(sandbox, hook_entry("count", f"echo run >> {marker}"))
    vwt.new("feature")
    reused = vwt.new("feature")
    assert reused["created"] is False and reused["hooks"] == []
    quiet = vwt.new("other", "--no-hooks")
    assert quiet["hooks"] == []
    assert marker.read_text() == "run\n"


def test_unapproved_project_hook_is_skipped_without_a_terminal(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    marker = sandbox.tmp / "ran"
    project_hooks(repo, hook_entry("deps", f"touch {marker}"))
    result = vwt.ok("new", "feature", "--json")
    assert by_name(result.json())["deps"]["status"] == "skipped_unapproved"
    assert "not approved" in result.err and "vwt hooks approve deps" in result.err
    assert not marker.exists()


def test_approved_project_hook_runs_and_a_changed_command_needs_approval_again(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    marker = sandbox.tmp / "ran"
    project_hooks(repo, hook_entry("deps", f"echo one >> {marker}"))
    listed = vwt.ok("hooks", "--json", cwd=repo.path).json()
    assert listed == {"hooks": [{
        "name": "deps", "type": "post_create", "source": "project",
        "command": f"echo one >> {marker}", "background": False, "timeout": 300.0,
        "description": "", "approved": False}]}
    approved = vwt.ok("hooks", "approve", "deps", "--json", cwd=repo.path).json()
    assert approved["hooks"][0]["approved"] is True
    assert by_name(vwt.new("first"))["deps"]["status"] == "ok"
    assert marker.read_text() == "one\n"

    project_hooks(repo, hook_entry("deps", f"echo two >> {marker}"), message="change it")
    assert vwt.ok("hooks", "--json", cwd=repo.path).json()["hooks"][0]["approved"] is False
    assert by_name(vwt.new("second"))["deps"]["status"] == "skipped_unapproved"
    assert marker.read_text() == "one\n"

    vwt.ok("hooks", "approve", "--all", cwd=repo.path)
    vwt.ok("hooks", "revoke", "deps", cwd=repo.path)
    assert by_name(vwt.new("third"))["deps"]["status"] == "skipped_unapproved"


def test_approvals_file_is_private_and_keyed_by_bucket_and_entry_digest(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    project_hooks(repo, hook_entry("deps", "true"))
    vwt.ok("hooks", "approve", "deps", cwd=repo.path)
    path = sandbox.vibe_home / "worktree-approvals.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    data = json.loads(path.read_text())
    bucket = repo.bucket
    [(key, entry)] = data["buckets"][bucket].items()
    assert len(key) == 64 and entry["command"] == "true" and entry["type"] == "post_create"


def test_hooks_of_a_pull_request_branch_never_run_unapproved(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    """The hook that runs is the new checkout's own: a branch that changes an approved hook
    (or adds one) gets no approval from the main checkout's version."""
    safe, pwned, added = sandbox.tmp / "safe", sandbox.tmp / "pwned", sandbox.tmp / "added"
    project_hooks(repo, hook_entry("deps", f"touch {safe}"))
    vwt.ok("hooks", "approve", "--all", cwd=repo.path)
    repo.git("checkout", "-q", "-b", "evil")
    project_hooks(repo, hook_entry("deps", f"touch {pwned}"),
                  hook_entry("extra", f"touch {added}"), message="innocent-looking change")
    repo.git("checkout", "-q", "main")

    doc = vwt.new("evil")
    assert {h["status"] for h in doc["hooks"]} == {"skipped_unapproved"}
    assert not pwned.exists() and not added.exists() and not safe.exists()
    assert by_name(vwt.new("fine"))["deps"]["status"] == "ok" and safe.exists()


def test_a_terminal_user_is_asked_and_yes_runs_and_approves_the_hook(
        repo: Repo, sandbox: Sandbox, vwt: Vwt, vwt_tty) -> None:
    marker = sandbox.tmp / "ran"
    project_hooks(repo, hook_entry("deps", f"echo x >> {marker}", description="install"))
    run = vwt_tty("new", "asked", "--json", answers=["y"], cwd=repo.path)
    assert run.code == 0, run.output
    assert run.answers_sent == 1 and "run project hook deps" in run.output
    assert marker.read_text() == "x\n"
    assert vwt.ok("hooks", "--json", cwd=repo.path).json()["hooks"][0]["approved"] is True

    no = vwt_tty("new", "declined", answers=[], cwd=repo.path)  # approved now: no question
    assert no.code == 0 and "run project hook" not in no.output
    assert marker.read_text() == "x\nx\n"


def test_a_terminal_user_who_says_no_skips_the_hook(
        repo: Repo, sandbox: Sandbox, vwt: Vwt, vwt_tty) -> None:
    marker = sandbox.tmp / "ran"
    project_hooks(repo, hook_entry("deps", f"touch {marker}"))
    run = vwt_tty("new", "asked", answers=["n"], cwd=repo.path)
    assert run.code == 0 and run.answers_sent == 1
    assert not marker.exists()
    assert vwt.ok("hooks", "--json", cwd=repo.path).json()["hooks"][0]["approved"] is False


def test_failing_post_create_keeps_the_worktree_and_exits_zero(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    user_hooks(sandbox, hook_entry("broken", "exit 7"), hook_entry("after", "true"))
    result = vwt.ok("new", "feature", "--json")
    doc = result.json()
    assert by_name(doc)["broken"] == {"name": "broken", "type": "post_create",
                                      "source": "user", "status": "failed", "exit_code": 7}
    assert by_name(doc)["after"]["status"] == "ok"
    assert "broken" in result.err and Path(doc["path"]).is_dir()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_hook_timeout_kills_its_whole_process_group(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    pids = sandbox.tmp / "pids"
    user_hooks(sandbox, hook_entry(
        "slow", f"sleep 60 & echo $! > {pids}; sleep 60", timeout=1))
    started = time.monotonic()
    doc = vwt.new("feature")
    assert time.monotonic() - started < 20
    assert by_name(doc)["slow"]["status"] == "timed_out"
    child = int(pids.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_broken_user_hooks_file_fails_new_before_anything_is_created(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    path = user_hooks(sandbox, hook_entry("ok", "true"), hook_entry("bad", "true", timeout=-1))
    result = vwt("new", "feature", cwd=repo.path)
    assert_error(result, 1, max_lines=1)
    assert str(path) in result.err and "'bad'" in result.err and "timeout" in result.err
    assert vwt.list(cwd=repo.path) == []


def test_broken_project_hooks_file_runs_none_of_its_hooks(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    marker = sandbox.tmp / "ran"
    project_hooks(repo, hook_entry("first", f"touch {marker}"))
    vwt.ok("hooks", "approve", "--all", cwd=repo.path)  # the first entry is approved
    project_hooks(repo, hook_entry("first", f"touch {marker}"),
                  "[[hooks]]\nname = 'second'\ntype = 'post_craete'\ncommand = 'true'\n",
                  message="a typo")
    result = vwt.ok("new", "feature", "--json")
    assert result.json()["hooks"] == []
    assert "'second'" in result.err and "worktree.toml" in result.err
    assert not marker.exists()
    listing = vwt("hooks", cwd=repo.path)
    assert_error(listing, 1, max_lines=1)


def test_failing_pre_remove_hook_stops_rm_unless_no_hooks(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    user_hooks(sandbox, hook_entry("guard", "exit 5", kind="pre_remove"))
    doc = vwt.new("feature")
    refused = vwt("rm", "feature", "--json")
    assert refused.code == 1, str(refused)
    assert refused.json()["outcome"] == "hook_failed"
    assert refused.json()["hooks"][0]["status"] == "failed"
    assert Path(doc["path"]).is_dir()
    removed = vwt.ok("rm", "feature", "--no-hooks", "--json").json()
    assert removed["outcome"] == "removed" and removed["hooks"] == []
    assert not Path(doc["path"]).exists()


def test_pre_remove_hook_runs_before_the_checkout_goes(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    saved = sandbox.tmp / "saw"
    user_hooks(sandbox, hook_entry("save", f"pwd > {saved}; ls .git >> {saved}",
                                   kind="pre_remove"))
    doc = vwt.new("feature")
    removed = vwt.ok("rm", "feature", "--json").json()
    assert removed["outcome"] == "removed"
    assert removed["hooks"][0]["status"] == "ok"
    assert saved.read_text().split("\n")[:2] == [doc["path"], ".git"]


def test_housekeeping_runs_no_hook(repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    marker = sandbox.tmp / "ran"
    user_hooks(sandbox, *(hook_entry(f"h-{kind}", f"echo {kind} >> {marker}", kind=kind)
                          for kind in ("pre_remove", "pre_merge", "post_merge")))
    vwt.new("feature")
    repo.write("dirt.txt", "x", base=repo.checkout("feature"))
    vwt.ok("list", "--json")
    vwt.ok("status", "feature", "--json")
    vwt.ok("snapshot", "feature", "--json")
    pruned = vwt.ok("prune", "--keep", "0", "--json").json()
    assert [r["name"] for r in pruned["removed"]] == ["feature"]
    assert not marker.exists()


def test_restore_runs_post_create_after_the_files_are_back(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    vwt.new("feature")
    checkout = repo.checkout("feature")
    (checkout / "work.txt").write_text("mine\n")
    vwt.ok("rm", "feature", "-y")
    seen = sandbox.tmp / "seen"
    user_hooks(sandbox, hook_entry("look", f"cat work.txt > {seen}"))
    restored = vwt.ok("restore", "feature", "--json").json()
    assert restored["hooks"][0]["status"] == "ok"
    assert seen.read_text() == "mine\n"


# -- background hooks ---------------------------------------------------------------------
def _background_until(sandbox: Sandbox, release: Path) -> str:
    return hook_entry("deps", f"echo installing; while [ ! -e {release} ]; do sleep 0.05; "
                              "done; echo installed", background=True, timeout=60)


def _wait_for(condition, timeout: float = 15.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_background_hook_returns_at_once_even_through_pipes_and_holds_the_worktree(
        repo: Repo, sandbox: Sandbox, vwt: Vwt, layout) -> None:  # type: ignore[no-untyped-def]
    release = sandbox.tmp / "release"
    user_hooks(sandbox, _background_until(sandbox, release))
    started = time.monotonic()
    proc = subprocess.run([VWT_BIN, "new", "feature", "--json"], cwd=repo.path,
                          env=vwt.env(), stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=30)
    assert time.monotonic() - started < 10, "new waited for the background hook"
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["hooks"] == [{"name": "deps", "type": "post_create", "source": "user",
                             "status": "started", "exit_code": None}]
    try:
        holders = [p.name for p in repo.live_holders("feature")]
        assert len(holders) == 1 and holders[0].startswith("hook-deps-")
        row = vwt.entry("feature")
        assert row is not None and row["held"] and row["hooks_running"] == ["deps"]
        assert vwt.ok("status", "feature", "--json").json()["hooks_running"] == ["deps"]
        assert "hook deps running" in vwt.ok("list").out

        refused = vwt("rm", "feature", "-y", "--json")
        assert refused.code == 4 and refused.json()["outcome"] == "kept_in_use"
        pruned = vwt.ok("prune", "--keep", "0", "--json").json()
        assert pruned["removed"] == [] and pruned["kept"][0]["name"] == "feature"
        assert Path(doc["path"]).is_dir()
    finally:
        release.touch()
    assert _wait_for(lambda: not repo.live_holders("feature"))
    log = sandbox.vibe_home / "logs" / "worktree" / doc["bucket"] / "feature" / "deps.log"
    assert _wait_for(lambda: "exited with status 0" in log.read_text())
    assert "installing" in log.read_text() and "installed" in log.read_text()
    assert vwt.ok("rm", "feature", "--json").json()["outcome"] == "removed"


@pytest.mark.slow
def test_background_hook_timeout_kills_it_and_releases_the_worktree(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    user_hooks(sandbox, hook_entry("stuck", "sleep 60", background=True, timeout=1))
    doc = vwt.new("feature")
    assert doc["hooks"][0]["status"] == "started"
    assert _wait_for(lambda: not repo.live_holders("feature"))
    log = sandbox.vibe_home / "logs" / "worktree" / doc["bucket"] / "feature" / "stuck.log"
    assert "timed out" in log.read_text()


def test_a_background_hooks_keeper_sent_sigterm_stops_the_hook_and_lets_go(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    """SIGTERM (how a failed creation takes its hooks back) ends the hook, not just its
    keeper: the hook's group is stopped, the log says so, the holder file is deleted."""
    hook_pid = sandbox.tmp / "hook.pid"
    user_hooks(sandbox, hook_entry("stuck", f"echo $$ > {hook_pid}; exec sleep 60",
                                   background=True, timeout=60))
    doc = vwt.new("feature")
    assert _wait_for(lambda: hook_pid.is_file() and hook_pid.read_text().strip() != "")
    [holder] = [p.name for p in repo.live_holders("feature")]
    os.kill(int(holder.rpartition("-")[2]), signal.SIGTERM)
    assert _wait_for(lambda: not repo.holders_dir("feature").exists(), 3)
    assert not _alive(int(hook_pid.read_text()))
    log = sandbox.vibe_home / "logs" / "worktree" / doc["bucket"] / "feature" / "stuck.log"
    assert "asked to stop; the hook's processes were stopped (SIGTERM)" in log.read_text()
    assert vwt("doctor").code == 0


def test_a_finished_background_hook_deletes_its_holder_file_and_doctor_stays_healthy(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    for status in (0, 3):  # a failing hook's hold is as finished as a passing one's
        user_hooks(sandbox, hook_entry("quick", f"exit {status}", background=True))
        name = f"done-{status}"
        doc = vwt.new(name)
        assert doc["hooks"][0]["status"] == "started"
        log = sandbox.vibe_home / "logs" / "worktree" / doc["bucket"] / name / "quick.log"
        def finished(log: Path = log, name: str = name, status: int = status) -> bool:
            return (f"exited with status {status}" in log.read_text()
                    and not repo.holders_dir(name).exists())

        assert _wait_for(finished), list(repo.holders_dir(name).iterdir())
    assert vwt("doctor").code == 0, vwt("doctor").out


def test_background_flag_on_other_types_is_a_malformed_entry(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    user_hooks(sandbox, textwrap.dedent("""\
        [[hooks]]
        name = "nope"
        type = "pre_remove"
        command = "true"
        background = true
        """))
    result = vwt("new", "feature", cwd=repo.path)
    assert_error(result, 1, max_lines=1)
    assert "'nope'" in result.err and "background" in result.err


# -- merge --------------------------------------------------------------------------------
def test_merge_runs_pre_merge_pre_remove_and_post_merge_with_the_target_in_vwt_into(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    log = sandbox.tmp / "merge-log"
    user_hooks(sandbox, *(hook_entry(kind, f'echo "{kind} $VWT_INTO $(pwd)" >> {log}',
                                     kind=kind)
                          for kind in ("pre_merge", "pre_remove", "post_merge")))
    path = vwt.new("feature")["path"]
    repo.commit("work", {"work.txt": "done\n"}, cwd=Path(path))
    result = vwt.ok("merge", "feature", "--json").json()
    assert result["outcome"] == "merged" and result["removed"] is True
    assert [(h["type"], h["status"]) for h in result["hooks"]] == [
        ("pre_merge", "ok"), ("pre_remove", "ok"), ("post_merge", "ok")]
    assert log.read_text().splitlines() == [
        f"pre_merge main {path}", f"pre_remove main {path}", f"post_merge main {repo.path}"]


def test_a_failing_pre_merge_hook_changes_nothing(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    user_hooks(sandbox, hook_entry("tests", "exit 1", kind="pre_merge"))
    path = vwt.new("feature")["path"]
    repo.commit("work", {"work.txt": "done\n"}, cwd=Path(path))
    main_before = repo.rev("main")
    refused = vwt("merge", "feature", "--json")
    assert refused.code == 1, str(refused)
    assert refused.json()["outcome"] == "hook_failed"
    assert repo.rev("main") == main_before and Path(path).is_dir()
    landed = vwt.ok("merge", "feature", "--no-hooks", "--json").json()
    assert landed["outcome"] == "merged" and landed["hooks"] == []
