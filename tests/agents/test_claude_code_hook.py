"""`vwt hook claude-code`: Claude Code's recorded hook inputs, names of every kind, a pipe
left open, malformed input, session holds that end with the agent process."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import VWT_BIN, Repo, Vwt

from .conftest import SESSION, hook, payload, wait_until


def created_path(result) -> Path:
    assert result.code == 0, str(result)
    lines = result.out.splitlines()
    assert len(lines) == 1 and result.out.endswith("\n"), repr(result.out)
    path = Path(lines[0])
    assert path.is_absolute() and (path / ".git").is_file()
    return path


def create(vwt: Vwt, repo: Repo, name: str | None, **fields: object) -> Path:
    data = payload("WorktreeCreate", cwd=repo.path, name=name, session_id=None, **fields)
    return created_path(hook(vwt, data))


# -- names ------------------------------------------------------------------------------------
def test_a_valid_name_is_the_worktree_and_its_branch(vwt, repo):
    path = create(vwt, repo, "agent-a1b2c3")
    assert path == repo.checkout("agent-a1b2c3")
    assert repo.current_branch(path) == "agent-a1b2c3"


def test_a_name_with_a_slash_is_slugified_and_kept_as_the_branch(vwt, repo):
    path = create(vwt, repo, "feat/04-config")
    assert path.name == "feat-04-config"
    assert repo.current_branch(path) == "feat/04-config"
    assert repo.record("feat-04-config")["branch"] == "feat/04-config"


def test_a_name_git_refuses_as_a_branch_becomes_its_slug_for_both(vwt, repo):
    path = create(vwt, repo, "Fix the login: now?")
    assert path.name == "fix-the-login-now"
    assert repo.current_branch(path) == "fix-the-login-now"


def test_no_name_gives_a_random_one(vwt, repo):
    first = create(vwt, repo, None)
    second = create(vwt, repo, "")
    assert first != second
    assert repo.current_branch(first).startswith("vibe/")


def test_the_older_worktree_name_field_is_read_too(vwt, repo):
    data = payload("WorktreeCreate-legacy", cwd=repo.path, session_id=None)
    assert created_path(hook(vwt, data)).name == "agent-a1b2c3"


def test_a_second_create_of_the_same_name_reuses_the_worktree(vwt, repo):
    first = create(vwt, repo, "feat/04-config")
    (first / "work.txt").write_text("keep me\n")
    assert create(vwt, repo, "feat/04-config") == first
    assert (first / "work.txt").read_text() == "keep me\n"


@pytest.mark.parametrize("sent", ["#7", "https://github.com/acme/app/pull/7",
                                  "https://gitlab.com/acme/app/-/merge_requests/7"])
def test_a_pull_request_number_or_url_starts_from_that_pull_request(vwt, origin_repo, sent):
    pusher = origin_repo.upstream.pusher
    pusher.commit("pr work", {"pr.txt": "pr\n"})
    pusher.git("push", "-q", "origin", "HEAD:refs/pull/7/head")
    path = create(vwt, origin_repo, sent)
    assert path.name == "pr-7"
    assert (path / "pr.txt").read_text() == "pr\n"


def test_records_say_which_agent_and_session_made_them(vwt, repo):
    data = payload("WorktreeCreate", cwd=repo.path, name="tagged")
    data["session_id"] = "sess-1"
    path = created_path(hook(vwt, data))
    record = repo.record(path.name)
    assert record["agent"] == "claude-code" and record["session"] == "sess-1"
    row = vwt.entry("tagged")
    assert row is not None and row["agent"] == "claude-code" and row["session"] == "sess-1"
    status = vwt.ok("status", "tagged", "--json", cwd=repo.path).json()
    assert status["agent"] == "claude-code" and status["session"] == "sess-1"
    vwt.ok("new", "plain", cwd=repo.path)
    assert vwt.entry("plain")["agent"] is None


# -- stdout carries the path alone ---------------------------------------------------------------
def test_git_and_hook_output_never_reach_stdout(vwt, repo, sandbox):
    (sandbox.vibe_home).mkdir(exist_ok=True)
    (sandbox.vibe_home / "worktree.toml").write_text(
        '[[hooks]]\nname = "chatty"\ntype = "post_create"\n'
        'command = "echo to-stdout; echo to-stderr >&2"\n')
    hooks = sandbox.tmp / "githooks"
    hooks.mkdir()
    repo.git("config", "core.hooksPath", str(hooks))
    (hooks / "post-checkout").write_text("#!/bin/sh\necho post-checkout-says-hi\n")
    (hooks / "post-checkout").chmod(0o755)
    result = hook(vwt, payload("WorktreeCreate", cwd=repo.path, name="quiet", session_id=None))
    created_path(result)
    assert "to-stdout" in result.err and "to-stderr" in result.err


# -- Claude Code's worktree settings --------------------------------------------------------------
def test_base_ref_head_starts_from_head_instead_of_the_remote_default(vwt, origin_repo, sandbox):
    local = origin_repo.commit("unpushed", {"local.txt": "only here\n"})
    settings = sandbox.home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"worktree": {"baseRef": "head"}}))
    path = create(vwt, origin_repo, "from-head")
    assert origin_repo.head(path) == local
    settings.write_text(json.dumps({"worktree": {"baseRef": "fresh"}}))
    assert origin_repo.head(create(vwt, origin_repo, "fresh-one")) != local


def test_the_local_project_settings_win_over_the_user_settings(vwt, repo, sandbox):
    repo.commit("tree", {"app/a.txt": "a\n", "lib/b.txt": "b\n", "docs/c.txt": "c\n"})
    user = sandbox.home / ".claude" / "settings.json"
    user.parent.mkdir()
    user.write_text(json.dumps({"worktree": {"sparsePaths": ["docs"]}}))
    local = repo.path / ".claude" / "settings.local.json"
    local.parent.mkdir()
    local.write_text(json.dumps({"worktree": {"sparsePaths": ["app"]}, "other": 1}))
    path = create(vwt, repo, "sparse-one")
    assert (path / "app" / "a.txt").exists()
    assert not (path / "lib").exists() and not (path / "docs").exists()
    assert repo.record("sparse-one")["sparse"] == ["app"]


# -- failures ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["", "not json", "[1, 2]", '{"hook_event_name": ', "{]}",
                                  '{"cwd": "/tmp"}'])
def test_missing_or_malformed_input_is_exit_1_with_one_line(vwt, text):
    result = hook(vwt, text)
    assert result.code == 1, str(result)
    assert result.out == ""
    assert len(result.err_lines) == 1 and result.err.startswith("vwt: error: ")


def test_a_create_outside_a_repository_fails_and_makes_nothing(vwt, sandbox, layout):
    result = hook(vwt, payload("WorktreeCreate", cwd=sandbox.default_cwd, session_id=None))
    assert result.code == 1 and result.out == "" and len(result.err_lines) == 1
    assert not layout.root.exists() or not any(layout.root.iterdir())


@pytest.mark.parametrize("name", ["main", "CON"])
def test_a_refused_name_is_exit_1_never_2(vwt, repo, name):
    # main is checked out in the repository itself; CON stays a Windows device name as a slug
    result = hook(vwt, payload("WorktreeCreate", cwd=repo.path, name=name, session_id=None))
    assert result.code == 1 and result.out == "" and len(result.err_lines) == 1, str(result)


def test_a_pipe_left_open_does_not_hang_the_hook(vwt, repo, sandbox):
    data = json.dumps(payload("WorktreeCreate", cwd=repo.path, name="open-pipe",
                              session_id=None))
    proc = subprocess.Popen([VWT_BIN, "hook", "claude-code"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=vwt.env(), cwd=sandbox.default_cwd)
    assert proc.stdin is not None
    proc.stdin.write(data.encode() + b"\n")
    proc.stdin.flush()  # and never closed
    out, err = _wait_output(proc)
    assert proc.returncode == 0, err
    assert out.decode() == f"{repo.checkout('open-pipe')}\n"
    proc.stdin.close()


def _wait_output(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    assert proc.stdout is not None and proc.stderr is not None
    proc.wait(timeout=30)
    return proc.stdout.read(), proc.stderr.read()


def test_an_incomplete_object_on_an_open_pipe_times_out_with_one_line(vwt, sandbox):
    proc = subprocess.Popen([VWT_BIN, "hook", "claude-code"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=vwt.env({"VWT_HOOK_STDIN_TIMEOUT": "0.5"}),
                            cwd=sandbox.default_cwd)
    assert proc.stdin is not None
    proc.stdin.write(b'{"hook_event_name": "Stop", ')
    proc.stdin.flush()
    out, err = _wait_output(proc)
    proc.stdin.close()
    assert proc.returncode == 1 and out == b""
    assert err.decode().count("\n") == 1 and "within 0.5 s" in err.decode()


def test_a_worktree_that_cannot_be_held_is_taken_away_again_keeping_its_work(
        vwt, repo, sandbox, monkeypatch, capfd):
    """Made, then the session's hold refused (as when a removal or retention took it in that
    instant): exit 1 with one line, nothing half made, the post_create hook's work saved."""
    from vibe_worktree import cli
    from vibe_worktree.api import Worktrees
    from vibe_worktree.core.errors import HeldError

    sandbox.vibe_home.mkdir(parents=True, exist_ok=True)
    (sandbox.vibe_home / "worktree.toml").write_text(
        '[[hooks]]\nname = "setup"\ntype = "post_create"\n'
        'command = "echo generated > setup.out"\n')

    def refused(wt, name, session, host):  # type: ignore[no-untyped-def]
        assert (Path(wt.claim(name).checkout) / "setup.out").is_file()  # made, hooks run
        raise HeldError(f"{name} is being removed; try again when that finishes")

    monkeypatch.setattr(Worktrees, "hold_for_session", refused)
    for key in set(os.environ) - set(vwt.env()):
        monkeypatch.delenv(key)
    for key, value in vwt.env().items():
        monkeypatch.setenv(key, value)
    code = _main_with_stdin(cli.main, json.dumps(payload("WorktreeCreate", cwd=repo.path,
                                                         name="unheld")))
    out, err = capfd.readouterr()
    assert code == 1 and out == "", (out, err)
    assert [line for line in err.splitlines() if line.strip()] == [
        "vwt: error: unheld is being removed; try again when that finishes"]
    assert not repo.checkout("unheld").exists() and not repo.record_path("unheld").exists()
    assert [p.name for p in repo.claim("unheld").iterdir()] == ["recovery.json"]  # the snapshot's
    assert not repo.branch_exists("unheld")
    assert repo.checkout("unheld") not in repo.worktree_paths()
    assert repo.ref_exists("refs/vibe/reaped/unheld")
    monkeypatch.undo()
    vwt.ok("restore", "unheld", "--no-hooks", cwd=repo.path)
    assert (repo.checkout("unheld") / "setup.out").read_text() == "generated\n"


REFUSED = "unheld is being removed; try again when that finishes"


def _create_unheld(vwt, repo, monkeypatch, capfd, also=None):  # type: ignore[no-untyped-def]
    """WorktreeCreate of `unheld` in this process, its session's hold refused once it is
    made (after `also(wt, name)`, if given): (exit status, stdout, stderr's lines)."""
    from vibe_worktree import cli
    from vibe_worktree.api import Worktrees
    from vibe_worktree.core.errors import HeldError

    def refused(wt, name, session, host):  # type: ignore[no-untyped-def]
        if also is not None:
            also(wt, name)
        raise HeldError(REFUSED)

    monkeypatch.setattr(Worktrees, "hold_for_session", refused)
    for key in set(os.environ) - set(vwt.env()):
        monkeypatch.delenv(key)
    for key, value in vwt.env().items():
        monkeypatch.setenv(key, value)
    try:
        code = _main_with_stdin(cli.main, json.dumps(payload("WorktreeCreate", cwd=repo.path,
                                                             name="unheld")))
    finally:
        monkeypatch.undo()
    out, err = capfd.readouterr()
    return code, out, [line for line in err.splitlines() if line.strip()]


def test_a_worktree_that_cannot_be_held_stops_its_background_hook_first(
        vwt, repo, sandbox, monkeypatch, capfd):
    """The creation's own background hook holds the worktree: it is stopped (it belongs to
    the failed creation), then the worktree is taken away as usual."""
    _background_hook(sandbox)
    seen: list[int] = []
    path = repo.checkout("unheld")

    def running(wt, name):  # type: ignore[no-untyped-def]
        wait_until(lambda: _sleeping_in(path), 10)  # the keeper and its sleep 30
        seen.extend(_processes_in(path))
        assert _hook_holders(repo, "unheld")

    code, out, err = _create_unheld(vwt, repo, monkeypatch, capfd, running)
    assert code == 1 and out == "" and err == [f"vwt: error: {REFUSED}"], (out, err)
    assert not path.exists() and not repo.record_path("unheld").exists()
    assert not repo.branch_exists("unheld")
    wait_until(lambda: not any(_running(pid) for pid in seen), 2.0)
    log = sandbox.vibe_home / "logs" / "worktree" / repo.bucket / "unheld" / "slow.log"
    assert "asked to stop; the hook's processes were stopped (SIGTERM)" in log.read_text()


@pytest.mark.parametrize("keeper", ["pre_remove hook", "live holder"])
def test_a_worktree_that_cannot_be_held_nor_taken_away_says_what_is_left(
        vwt, repo, sandbox, monkeypatch, capfd, keeper):
    """The removal is refused (a failing pre_remove hook, another live holder): the one
    error line says what is left and the command that removes it, which then does."""
    from vibe_worktree.core.locks import Holder, acquire_holder

    sandbox.vibe_home.mkdir(parents=True, exist_ok=True)
    if keeper == "pre_remove hook":
        (sandbox.vibe_home / "worktree.toml").write_text(
            '[[hooks]]\nname = "guard"\ntype = "pre_remove"\ncommand = "exit 3"\n')
    held: list[Holder] = []

    def hold(wt, name):  # type: ignore[no-untyped-def]
        if keeper == "live holder":
            held.append(acquire_holder(wt.claim(name), "vwt-run-1"))

    code, out, err = _create_unheld(vwt, repo, monkeypatch, capfd, hold)
    path = repo.checkout("unheld")
    why, command = (("pre_remove hook guard exited 3", "vwt rm unheld -y --no-hooks")
                    if keeper == "pre_remove hook" else
                    ("unheld is held by a live session (vwt-run-1)", "vwt rm unheld -y"))
    assert code == 1 and out == "", (out, err)
    assert err == [f"vwt: error: {REFUSED}; unheld is left at {path}, not taken away again "
                   f"({why}): {command} removes it"]
    assert path.is_dir() and repo.record_path("unheld").exists()
    for holder in held:
        holder.release()
    vwt.ok(*command.split()[1:], cwd=repo.path)
    assert not path.exists() and not repo.record_path("unheld").exists()


def _main_with_stdin(main, text: str) -> int:  # type: ignore[no-untyped-def]
    """`main(["hook", "claude-code"])` in this process, with `text` on fd 0 (put back after:
    the hook closes its stdin)."""
    import tempfile

    saved = os.dup(0)
    try:
        with tempfile.TemporaryFile() as f:
            f.write(text.encode())
            f.seek(0)
            os.dup2(f.fileno(), 0)
            code: int = main(["hook", "claude-code"])
            return code
    finally:
        os.dup2(saved, 0)
        os.close(saved)


# -- WorktreeRemove -----------------------------------------------------------------------------
def test_remove_snapshots_dirty_work_so_restore_brings_it_back(vwt, repo):
    path = create(vwt, repo, "doomed")
    (path / "unsaved.txt").write_text("precious\n")
    data = payload("WorktreeRemove", cwd=repo.path, worktree_path=path)
    result = hook(vwt, data)
    assert result.code == 0 and result.out == "", str(result)
    assert not path.exists()
    assert repo.ref_exists("refs/vibe/reaped/doomed")
    vwt.ok("restore", "doomed", cwd=repo.path)
    assert (path / "unsaved.txt").read_text() == "precious\n"


def test_a_commit_removed_by_the_hook_and_restored_is_still_work(vwt, repo):
    """WorktreeRemove records the base the worktree had; restore brings it back, so the
    commit counts as ahead and a plain rm asks before removing it (SPEC §16)."""
    path = create(vwt, repo, "committed")
    base = repo.head(cwd=path)
    committed = repo.commit("own work", {"own.txt": "own\n"}, cwd=path)
    result = hook(vwt, payload("WorktreeRemove", cwd=repo.path, worktree_path=path))
    assert result.code == 0, str(result)
    assert repo.recovery("committed")["base_commit"] == base
    vwt.ok("restore", "committed", cwd=repo.path)
    assert vwt.ok("status", "committed", "--json", cwd=repo.path).json()["ahead"] == 1
    assert vwt("rm", "committed", "--json", cwd=repo.path).code == 3
    assert repo.head(cwd=path) == committed


def test_remove_of_a_clean_worktree_frees_the_name(vwt, repo, layout):
    path = create(vwt, repo, "clean-one")
    result = hook(vwt, payload("WorktreeRemove", cwd=repo.path, worktree_path=path))
    assert result.code == 0, str(result)
    assert not path.exists() and not repo.claim("clean-one").exists()


def test_remove_of_a_path_vwt_does_not_manage_removes_nothing(vwt, repo, sandbox):
    other = sandbox.tmp / "plain-worktree"
    repo.git("worktree", "add", "-q", "-b", "plain", str(other))
    result = hook(vwt, payload("WorktreeRemove", cwd=repo.path, worktree_path=other))
    assert result.code == 1 and "not a worktree vwt manages" in result.err
    assert other.is_dir()


def test_remove_refuses_a_worktree_another_session_holds(vwt, repo, fake_host):
    host = fake_host(payload("WorktreeCreate", cwd=repo.path, name="shared",
                             session_id="other-session"))
    path = Path(host.out.strip())
    result = hook(vwt, payload("WorktreeRemove", cwd=repo.path, worktree_path=path))
    assert result.code == 1 and "held" in result.err and len(result.err_lines) == 1
    assert path.is_dir()


def test_remove_releases_the_callers_own_hold_first(vwt, repo, fake_host):
    host = fake_host(payload("WorktreeCreate", cwd=repo.path, name="mine"))
    path = Path(host.out.strip())
    assert len(repo.live_holders("mine")) == 1
    result = hook(vwt, payload("WorktreeRemove", cwd=repo.path, worktree_path=path))
    assert result.code == 0, str(result)
    assert not path.exists() and not repo.claim("mine").exists()


# -- held for the life of the agent ----------------------------------------------------------
@pytest.mark.slow
def test_the_worktree_is_held_while_the_agent_lives_and_released_when_it_is_killed(
        vwt, repo, fake_host):
    host = fake_host(payload("WorktreeCreate", cwd=repo.path, name="held"))
    assert host.code == 0, host.err
    holders = repo.live_holders("held")
    assert [h.name for h in holders] == [f"claude-{SESSION}-{host.pid}"]
    assert vwt("rm", "held", "-y", cwd=repo.path).code == 4
    time.sleep(0.6)
    assert repo.live_holders("held"), "released while the agent still lives"
    host.kill()
    took = wait_until(lambda: not _holder_files(repo, "held"), 2.0)
    print(f"released {took:.2f} s after the agent was killed")
    vwt.ok("rm", "held", "-y", cwd=repo.path)


def test_the_hold_survives_an_open_stdin_and_keeps_no_stdio_of_the_hook(vwt, repo, fake_host):
    # fake_host reads the hook's stdout and stderr to their end: a watcher keeping either
    # open would make it time out here.
    host = fake_host(payload("WorktreeCreate", cwd=repo.path, name="stdio"),
                     keep_stdin_open=True, timeout=30)
    assert host.code == 0 and host.out == f"{repo.checkout('stdio')}\n"
    assert repo.live_holders("stdio")


def test_session_end_releases_the_hold_and_clears_activity(vwt, repo, fake_host):
    host = fake_host(payload("WorktreeCreate", cwd=repo.path, name="ending"))
    path = Path(host.out.strip())
    assert hook(vwt, payload("UserPromptSubmit", cwd=path)).code == 0
    assert vwt.entry("ending")["activity"]["state"] == "working"
    result = hook(vwt, payload("SessionEnd", cwd=path))
    assert result.code == 0 and result.out == ""
    assert not repo.live_holders("ending")
    row = vwt.entry("ending")
    assert row["holders"] == 0 and row["activity"] is None


def test_no_watcher_outlives_its_agent(vwt, repo, fake_host):
    host = fake_host(payload("WorktreeCreate", cwd=repo.path, name="watched"))
    holder = repo.live_holders("watched")[0]
    watcher = json.loads(holder.read_text())["pid"]
    os.kill(watcher, 0)
    host.kill()
    wait_until(lambda: not _running(watcher), 2.5)


# -- a background post_create hook lives no longer than its agent ------------------------------
def _background_hook(sandbox, command: str = "sleep 30",  # type: ignore[no-untyped-def]
                     background: bool = True, more: str = "", timeout: float = 60) -> None:
    # a user hook: the user's own file needs no approval
    sandbox.vibe_home.mkdir(parents=True, exist_ok=True)
    (sandbox.vibe_home / "worktree.toml").write_text(
        f'[[hooks]]\nname = "slow"\ntype = "post_create"\ncommand = {json.dumps(command)}\n'
        f'background = {str(background).lower()}\ntimeout = {timeout}\n{more}')


def _processes_in(path: Path) -> list[int]:
    """Live processes whose current folder is `path`: the hook's supervisor and the hook
    (the session's watcher sits in /)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry}/cwd") == str(path) and _running(int(entry)):
                found.append(int(entry))
        except OSError:
            continue
    return found


def _hook_holders(repo: Repo, name: str) -> list[str]:
    return [h for h in _holder_files(repo, name) if h.startswith("hook-")]


@pytest.mark.parametrize(("command", "how"), [
    ("sleep 30", "(SIGTERM)"),
    ("trap '' TERM; sleep 30", "(SIGKILL after 1 s)"),  # sleep inherits the ignored TERM
])
@pytest.mark.slow
def test_a_background_hook_is_stopped_when_its_agent_dies(vwt, repo, sandbox, fake_host,
                                                          command, how):
    _background_hook(sandbox, command)
    host = fake_host(payload("WorktreeCreate", cwd=repo.path, name="busy"))
    path = Path(host.out.strip())
    # the supervisor and `sleep 30`, which the shell starts only once its `trap` is set
    wait_until(lambda: _sleeping_in(path), 10)
    assert len(_hook_holders(repo, "busy")) == 1
    host.kill()
    took = wait_until(lambda: not _processes_in(path) and not _hook_holders(repo, "busy"), 2.5)
    print(f"the hook was stopped {took:.2f} s after the agent was killed")
    log = sandbox.vibe_home / "logs" / "worktree" / repo.bucket / "busy" / "slow.log"
    assert f"the agent process {host.pid} ended" in log.read_text() and how in log.read_text()
    vwt.ok("rm", "busy", "-y", cwd=repo.path)


def test_a_background_hook_runs_on_while_its_agent_lives(vwt, repo, sandbox, fake_host):
    _background_hook(sandbox)
    host = fake_host(payload("WorktreeCreate", cwd=repo.path, name="lively"))
    path = Path(host.out.strip())
    wait_until(lambda: len(_processes_in(path)) >= 2, 10)
    time.sleep(1.5)
    assert len(_processes_in(path)) >= 2, "the hook stopped while its agent lives"
    assert [h for h in _hook_holders(repo, "lively")
            if repo.holders_dir("lively") / h in repo.live_holders("lively")]


# -- a foreground post_create hook lives no longer than its agent ------------------------------
def _sleeping_in(path: Path) -> bool:
    """The hook's `sleep 30` runs in the checkout."""
    for pid in _processes_in(path):
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == "sleep":
                    return True
        except OSError:
            continue
    return False


@pytest.mark.slow
def test_a_foreground_hook_is_stopped_when_the_agents_process_group_is_killed(
        vwt, repo, sandbox, fake_host):
    """Claude Code and its process group, `vwt hook claude-code` included, SIGKILLed while
    WorktreeCreate runs a foreground hook (its own session): the hook goes too. What is left
    is a `vwt new` killed in its hooks: prune drops the dead holder, the next WorktreeCreate
    of that name reuses the worktree."""
    _background_hook(sandbox, background=False)
    host = fake_host(payload("WorktreeCreate", cwd=repo.path, name="npm-ci"), detached=True)
    path = repo.checkout("npm-ci")
    wait_until(lambda: _sleeping_in(path), 20)
    host.kill()
    took = wait_until(lambda: not _processes_in(path), 2.5)
    print(f"the hook was stopped {took:.2f} s after the agent's group was killed")
    assert not repo.live_holders("npm-ci")
    vwt.ok("prune", cwd=repo.path)
    assert vwt.ok("doctor", "--json", cwd=repo.path).json()["healthy"]
    again = fake_host(payload("WorktreeCreate", cwd=repo.path, name="npm-ci"))
    assert again.code == 0 and again.out == f"{path}\n", again.err
    assert not _processes_in(path)  # reused: no hook ran again


@pytest.mark.slow
def test_a_foreground_hook_is_stopped_when_only_the_agent_dies_and_vwt_says_so(
        vwt, repo, sandbox, fake_host):
    """Only the Claude Code process dies: the hook is stopped, and `vwt hook` stops waiting
    for it (exit 1, one line), leaving the worktree as a killed one is left."""
    _background_hook(sandbox, background=False)
    host = fake_host(payload("WorktreeCreate", cwd=repo.path, name="npm-ci"), detached=True)
    path = repo.checkout("npm-ci")
    wait_until(lambda: _sleeping_in(path), 20)
    host.kill_alone()
    took = wait_until(lambda: not _processes_in(path) and host.ended(), 2.5)
    print(f"the hook was stopped and vwt ended {took:.2f} s after the agent was killed")
    assert host.code == 1 and host.out == "", (host.out, host.err)
    assert host.err.splitlines() == [
        f"vwt: error: the agent process {host.pid} ended while post_create hook slow ran; "
        f"the hook was stopped and npm-ci is left at {path}: vwt rm npm-ci -y removes it"]
    assert not _holder_files(repo, "npm-ci")
    assert vwt.ok("doctor", "--json", cwd=repo.path).json()["healthy"]
    again = fake_host(payload("WorktreeCreate", cwd=repo.path, name="npm-ci"))
    assert again.code == 0 and again.out == f"{path}\n", again.err
    again.kill()
    wait_until(lambda: not _holder_files(repo, "npm-ci"), 2.0)
    vwt.ok("rm", "npm-ci", "-y", cwd=repo.path)  # as the line says
    assert not path.exists()


def test_a_foreground_hook_that_ignores_sigterm_is_killed_a_second_later(
        vwt, repo, sandbox, fake_host):
    _background_hook(sandbox, "trap '' TERM; sleep 30", background=False)
    host = fake_host(payload("WorktreeCreate", cwd=repo.path, name="stubborn"), detached=True)
    path = repo.checkout("stubborn")
    wait_until(lambda: _sleeping_in(path), 20)
    host.kill_alone()
    took = wait_until(lambda: not _processes_in(path) and host.ended(), 2.5)
    assert took > 0.9, "stopped before the second of grace"
    assert host.code == 1 and len(host.err.splitlines()) == 1, host.err


def test_a_foreground_hook_runs_to_its_end_while_the_agent_lives(vwt, repo, sandbox,
                                                                 fake_host):
    _background_hook(sandbox, "sleep 0.5; echo done > hook.out; echo said; exit 3",
                     background=False)
    host = fake_host(payload("WorktreeCreate", cwd=repo.path, name="calm"))
    assert host.code == 0 and host.out == f"{repo.checkout('calm')}\n", host.err
    assert (repo.checkout("calm") / "hook.out").read_text() == "done\n"
    assert "said" in host.err and "hook slow (post_create) exited 3" in host.err


def test_a_foreground_hook_for_an_agent_still_times_out(vwt, repo, sandbox, fake_host):
    _background_hook(sandbox, background=False, timeout=0.5)
    host = fake_host(payload("WorktreeCreate", cwd=repo.path, name="late"))
    assert host.code == 0 and "hook slow (post_create) timed out" in host.err, host.err
    assert not _processes_in(repo.checkout("late"))


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _holder_files(repo: Repo, name: str) -> list[str]:
    """Names in the worktree's holders folder; the folder may vanish while we look."""
    try:
        return [entry.name for entry in repo.holders_dir(name).iterdir()]
    except FileNotFoundError:
        return []


def test_a_slug_taken_on_another_branch_gets_the_next_free_name(vwt, repo):
    """Claude Code cannot pick another name: `feat/04-config` while `feat-04-config` is a
    worktree on another branch (or only a snapshot) becomes `feat-04-config-2`, as §3's
    auto-naming counts; sent again, it reuses that one."""
    theirs = Path(vwt.new("feat-04-config")["path"])
    (theirs / "work.txt").write_text("theirs\n")
    path = create(vwt, repo, "feat/04-config")
    assert path == repo.checkout("feat-04-config-2")
    assert repo.current_branch(path) == "feat/04-config"
    assert repo.current_branch(theirs) == "feat-04-config"
    assert (theirs / "work.txt").read_text() == "theirs\n"
    assert create(vwt, repo, "feat/04-config") == path  # the same request: reused
    vwt.ok("rm", "feat-04-config", "-y")  # now a snapshot: restorable, so not taken over
    (path / "x.txt").write_text("x\n")
    vwt.ok("rm", "feat-04-config-2", "-y")
    again = create(vwt, repo, "feat/04-config")
    assert again == repo.checkout("feat-04-config-3")
    assert vwt.ok("restore", "feat-04-config", "--json").json()["created"] is True


# -- ports (SPEC §17) ----------------------------------------------------------------------------
def test_worktree_create_leases_ports_and_worktree_remove_gives_them_back(vwt, repo, layout):
    path = create(vwt, repo, "leased")
    ports = repo.record("leased")["ports"]
    table = layout.claims / ".ports.json"
    assert json.loads(table.read_text()) == {f"{repo.bucket}/leased": ports[0]}
    assert vwt.ok("port", "leased", cwd=repo.path).out == f"{ports[0]}\n"
    result = hook(vwt, payload("WorktreeRemove", cwd=repo.path, worktree_path=path))
    assert result.code == 0, str(result)
    assert json.loads(table.read_text()) == {}
