"""`vwt land` (SPEC §18): each worktree synced onto the target's tip, gated on exactly that,
landed by compare-and-swap; every outcome, one worktree never stopping the others."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from conftest import VWT_BIN
from land_support import Lander, on_main, outcomes, tickets, with_work


@pytest.fixture
def land(vwt, sandbox):
    return Lander(vwt)


def main_tip(repo):
    return repo.git("rev-parse", "main")


def test_each_worktree_is_rebased_gated_on_the_tip_and_landed(repo, vwt, land, sandbox):
    for name in ("one", "two", "three"):
        with_work(repo, vwt, name)
    repo.commit("main moves on", {"main.txt": "main\n"})
    seen = sandbox.tmp / "gates.txt"
    gate = (f'echo "$VWT_NAME $VWT_INTO $VWT_TARGET_COMMIT $(git rev-parse HEAD^) '
            f'$(git -C "$VWT_REPO_ROOT" rev-parse main) $VWT_PORT" >> {seen}')
    report = land.json("one", "two", "three", "--gate", gate, code=0)
    assert outcomes(report) == {"one": "merged", "two": "merged", "three": "merged"}
    assert report["into"] == "main"
    lines = [line.split() for line in seen.read_text().splitlines()]
    assert [line[0] for line in lines] == ["one", "two", "three"]
    for _name, into, target_commit, parent, tip, port in lines:
        assert into == "main" and port.isdigit()
        assert target_commit == parent == tip  # rebased onto the very tip it is gated on
    commits = repo.git("log", "--format=%H", "-3", "main").split()
    assert [r["commit"] for r in report["results"]] == commits[::-1]
    assert lines[1][2] == commits[2] and lines[2][2] == commits[1]  # each on the last landed
    for name in ("one", "two", "three"):
        assert on_main(repo, f"{name}.txt") == f"{name}'s work\n"
        assert not repo.checkout(name).exists()
        assert repo.recovery_path(name).exists()  # restorable, as after a merge
    result = report["results"][0]
    assert result["attempts"] == 1 and result["removed"] is True
    assert result["gate"]["exit"] == 0 and result["gate"]["command"] == gate
    assert Path(result["gate"]["log"]).read_text().startswith("[vwt] ")
    assert tickets(repo) == []
    assert vwt("doctor").code == 0


def test_plain_output_is_one_line_per_worktree_as_it_finishes(repo, vwt, land):
    with_work(repo, vwt, "one")
    with_work(repo, vwt, "two")
    with_work(repo, vwt, "dirty")
    (repo.checkout("dirty") / "wip.txt").write_text("wip\n")
    run = land("one", "two", "dirty", "--gate", "true", code=1)
    lines = run.out.splitlines()
    assert len(lines) == 4, run.out
    assert lines[0].startswith("merged          one: into main at ")
    assert lines[0].endswith("(gate 0.0 s, worktree removed)")
    assert lines[1].startswith("merged          two: into main at ")
    assert lines[2].startswith("kept_dirty      dirty: dirty has 1 untracked file(s)")
    assert lines[3] == "landed 2 of 3 on main; not landed: dirty (kept_dirty)"


def test_a_failed_gate_keeps_the_branch_rebased_and_the_others_land(repo, vwt, land):
    for name in ("one", "two", "three"):
        with_work(repo, vwt, name)
    repo.commit("main moves on", {"main.txt": "main\n"})
    gate = 'echo "checking $VWT_NAME"; test "$VWT_NAME" != two'
    report = land.json("one", "two", "three", "--gate", gate, code=1)
    assert outcomes(report) == {"one": "merged", "two": "gate_failed", "three": "merged"}
    failed = report["results"][1]
    assert failed["gate"]["exit"] == 1 and failed["commit"] is None
    assert failed["removed"] is False
    log = Path(failed["gate"]["log"])
    assert log.name == "two.log" and "checking two" in log.read_text()
    assert str(repo.layout.root / ".land" / repo.bucket) == str(log.parent)
    assert str(log) in failed["message"]
    checkout = repo.checkout("two")
    # rebased onto the tip it was gated on: one's landing, not three's
    assert repo.git("rev-parse", "HEAD^", cwd=checkout) == report["results"][0]["commit"]
    assert repo.record("two")["base_commit"] == report["results"][0]["commit"]
    assert on_main(repo, "two.txt") is None


def test_a_gate_that_times_out_is_killed_with_its_children(repo, vwt, land, sandbox):
    repo.commit("land settings", {".vibe/worktree.toml": "[land]\ntimeout = 1\n"})
    with_work(repo, vwt, "slow")
    child = sandbox.tmp / "child.pid"
    gate = f"sleep 60 & echo $! > {child}; echo waiting; sleep 60"
    report = land.json("slow", "--gate", gate, code=1)
    [result] = report["results"]
    assert result["outcome"] == "gate_failed"
    assert result["gate"]["timed_out"] is True and result["gate"]["exit"] is None
    assert 1 <= result["gate"]["seconds"] < 30
    pid = int(child.read_text())
    deadline = time.monotonic() + 10
    while _runs(pid):
        assert time.monotonic() < deadline, f"the gate's child {pid} outlived the timeout"
        time.sleep(0.05)
    assert "timed out after 1 s" in Path(result["gate"]["log"]).read_text()


def _runs(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_a_gate_that_moves_the_target_sends_the_worktree_round_again(repo, vwt, land, sandbox):
    with_work(repo, vwt, "feat")
    once = sandbox.tmp / "moved-once"
    gate = (f'if [ ! -e {once} ]; then touch {once}; git -C "$VWT_REPO_ROOT" commit -q '
            '--allow-empty -m "someone lands meanwhile"; fi')
    report = land.json("feat", "--gate", gate, code=0)
    [result] = report["results"]
    assert result["outcome"] == "merged" and result["attempts"] == 2
    log = repo.git("log", "--format=%s", "-3", "main").splitlines()
    assert log[:2] == ["feat: work", "someone lands meanwhile"]
    assert "(attempt 2)" in Path(result["gate"]["log"]).read_text()


def test_a_target_that_keeps_moving_is_target_moved_after_three_attempts(repo, vwt, land):
    with_work(repo, vwt, "feat")
    before = main_tip(repo)
    gate = 'git -C "$VWT_REPO_ROOT" commit -q --allow-empty -m "main moves again"'
    report = land.json("feat", "--gate", gate, code=1)
    [result] = report["results"]
    assert result["outcome"] == "target_moved" and result["attempts"] == 3
    assert result["commit"] is None and result["removed"] is False
    assert repo.git("rev-list", "--count", f"{before}..main") == "3"
    assert on_main(repo, "feat.txt") is None
    assert repo.checkout("feat").exists()


def test_a_project_gate_runs_only_once_approved(repo, vwt, land, sandbox):
    ran = sandbox.tmp / "ran"
    repo.commit("gate", {".vibe/worktree.toml": f'[land]\ngate = "touch {ran}"\n'})
    path = with_work(repo, vwt, "feat")
    repo.commit("main moves on", {"main.txt": "main\n"})
    head = repo.head(cwd=path)
    report = land.json("feat", code=1)
    assert outcomes(report) == {"feat": "gate_unapproved"}
    assert "vwt hooks approve" in report["results"][0]["message"]
    assert not ran.exists() and repo.head(cwd=path) == head  # nothing changed, not even a sync
    listed = vwt("hooks", "--json").json()["hooks"]
    assert listed == [{"name": "gate", "type": "land", "source": "project",
                       "command": f"touch {ran}", "background": False, "timeout": 1800.0,
                       "description": "the check vwt land runs on each worktree",
                       "approved": False}]
    vwt.ok("hooks", "approve", "gate")
    report = land.json("feat", code=0)
    assert outcomes(report) == {"feat": "merged"} and ran.exists()
    assert report["results"][0]["gate"]["command"] == f"touch {ran}"
    # a changed gate is not approved any more; a changed timeout keeps the approval
    repo.commit("gate changes", {".vibe/worktree.toml": f'[land]\ngate = "touch {ran}; true"\n'})
    with_work(repo, vwt, "next")
    assert outcomes(land.json("next", code=1)) == {"next": "gate_unapproved"}
    repo.commit("timeout", {".vibe/worktree.toml": f'[land]\ngate = "touch {ran}"\ntimeout = 60\n'})
    assert outcomes(land.json("next", code=0)) == {"next": "merged"}


def test_a_broken_land_table_lands_nothing(repo, vwt, land):
    repo.commit("broken", {".vibe/worktree.toml": '[land]\ngate = 3\n'})
    path = with_work(repo, vwt, "feat")
    head = repo.head(cwd=path)
    report = land.json("feat", code=1)
    [result] = report["results"]
    assert result["outcome"] == "error" and "gate must be a non-empty string" in result["message"]
    assert repo.head(cwd=path) == head
    assert outcomes(land.json("feat", "--gate", "true", code=0)) == {"feat": "merged"}


def test_a_given_gate_stands_in_for_the_projects(repo, vwt, land, sandbox):
    repo.commit("gate", {".vibe/worktree.toml": '[land]\ngate = "false"\n'})
    with_work(repo, vwt, "feat")
    report = land.json("feat", "--gate", "true", code=0)
    assert report["results"][0]["gate"]["command"] == "true"


def test_refusals_are_each_worktrees_own(repo, vwt, land, holder):
    with_work(repo, vwt, "clean")
    dirty = with_work(repo, vwt, "dirty")
    (dirty / "wip.txt").write_text("not committed\n")
    with_work(repo, vwt, "held")
    held = holder(repo.bucket, "held")
    clash = with_work(repo, vwt, "clash", {"README.md": "the worktree's readme\n"})
    repo.commit("main edits the readme", {"README.md": "main's readme\n"})
    clash_head = repo.head(cwd=clash)
    report = land.json("dirty", "held", "clash", "clean", "--gate", "true", code=1)
    assert outcomes(report) == {"dirty": "kept_dirty", "held": "kept_in_use",
                                "clash": "conflict", "clean": "merged"}
    by_name = {r["name"]: r for r in report["results"]}
    assert by_name["clash"]["conflicts"] == ["README.md"]
    assert repo.head(cwd=clash) == clash_head  # the sync was aborted: branch as before
    assert (dirty / "wip.txt").exists() and repo.checkout("held").exists()
    assert held.alive and "vibe-session-1" in by_name["held"]["message"]
    assert on_main(repo, "clean.txt") == "clean's work\n"


def test_work_already_on_the_target_is_up_to_date_without_a_gate(repo, vwt, land, sandbox):
    path = with_work(repo, vwt, "feat")
    repo.git("merge", "-q", "--squash", "feat")
    repo.git("commit", "-q", "-m", "landed by hand")
    ran = sandbox.tmp / "ran"
    report = land.json("feat", "--gate", f"touch {ran}", code=0)
    [result] = report["results"]
    assert result["outcome"] == "up_to_date" and result["gate"] is None
    assert result["removed"] is True and not path.exists() and not ran.exists()


def test_keep_leaves_the_worktree_on_the_new_tip(repo, vwt, land):
    path = with_work(repo, vwt, "feat")
    report = land.json("feat", "--keep", code=0)
    [result] = report["results"]
    assert result["outcome"] == "merged" and result["removed"] is False
    assert repo.head(cwd=path) == main_tip(repo) == result["commit"]
    assert land.json("feat", code=0)["results"][0]["outcome"] == "up_to_date"


def test_a_gate_that_changes_the_work_lands_nothing(repo, vwt, land):
    path = with_work(repo, vwt, "feat")
    report = land.json("feat", "--gate", "echo generated > generated.txt", code=1)
    [result] = report["results"]
    assert result["outcome"] == "kept_dirty" and "the gate left" in result["message"]
    assert on_main(repo, "feat.txt") is None and (path / "generated.txt").exists()


def test_unknown_and_missing_names_are_not_found(repo, vwt, land):
    with_work(repo, vwt, "feat")
    report = land.json("nobody", "feat", code=1)
    assert outcomes(report) == {"nobody": "not_found", "feat": "merged"}


def test_ready_lands_every_worktree_with_work_of_its_own_and_nothing_else(repo, vwt, land,
                                                                         holder):
    for name in ("a", "b"):
        with_work(repo, vwt, name)
    vwt.new("empty", "--no-fetch")
    dirty = with_work(repo, vwt, "dirty")
    (dirty / "wip.txt").write_text("wip\n")
    with_work(repo, vwt, "held")
    holder(repo.bucket, "held")
    report = land.json("--ready", code=0)
    assert outcomes(report) == {"a": "merged", "b": "merged"}
    assert {p["name"] for p in report["order"]} == {"a", "b"}


def test_a_land_from_inside_a_worktree_lands_it_despite_its_own_hold(repo, vwt, land):
    path = with_work(repo, vwt, "feat")
    # `vwt run feat -- LAND` holds feat for the command; its own holder does not count
    run = vwt("run", "feat", "--", VWT_BIN, "land", "--json", cwd=path)
    assert run.code == 0, str(run)
    assert outcomes(json.loads(run.out)) == {"feat": "merged"}
    assert "you were inside feat, which is now removed" in run.err


def test_colliding_worktrees_land_after_the_others(repo, vwt, land):
    with_work(repo, vwt, "first", {"shared.txt": "first\n"})
    with_work(repo, vwt, "second", {"shared.txt": "second\n"})
    with_work(repo, vwt, "free", {"free.txt": "free\n"})
    before = main_tip(repo)
    plan = land.json("second", "first", "free", "--dry-run", code=0)
    assert [p["name"] for p in plan["order"]] == ["free", "first", "second"]  # claim order
    assert plan["results"] == [] and plan["dry_run"] is True
    by_name = {p["name"]: p for p in plan["order"]}
    assert by_name["first"]["collides"] and not by_name["free"]["collides"]
    assert by_name["first"]["pairs"] == [{"with": "second", "overlap": ["shared.txt"],
                                          "conflicts": ["shared.txt"]}]
    assert main_tip(repo) == before and tickets(repo) == []
    report = land.json("second", "first", "free", code=1)
    assert [r["name"] for r in report["results"]] == ["free", "first", "second"]
    assert outcomes(report) == {"free": "merged", "first": "merged", "second": "conflict"}


def test_no_wait_answers_busy_while_another_land_has_the_turn(repo, vwt, land, sandbox):
    with_work(repo, vwt, "slow")
    with_work(repo, vwt, "other")
    inside, release = sandbox.tmp / "inside", sandbox.tmp / "release"
    first = land.spawn("slow", "--gate", f"touch {inside}; while [ ! -e {release} ]; do "
                                         "sleep 0.02; done")
    _wait_for(inside, first)
    again = land.json("slow", code=1)
    assert outcomes(again) == {"slow": "busy"}  # in another land's hand: at once
    assert f"pid {first.pid} landing slow" in again["results"][0]["message"]
    busy = land.json("other", "--no-wait", code=1)
    assert outcomes(busy) == {"other": "busy"}
    release.write_text("")
    assert first.wait(timeout=30) == 0
    assert repo.checkout("other").exists() and on_main(repo, "other.txt") is None
    assert outcomes(land.json("other", code=0)) == {"other": "merged"}


@pytest.mark.slow
def test_a_killed_waiting_land_leaves_no_turn_behind(repo, vwt, land, sandbox):
    for name in ("slow", "killed", "later"):
        with_work(repo, vwt, name)
    inside, release = sandbox.tmp / "inside", sandbox.tmp / "release"
    first = land.spawn("slow", "--gate", f"touch {inside}; while [ ! -e {release} ]; do "
                                         "sleep 0.02; done")
    _wait_for(inside, first)
    waiting = land.spawn("killed")
    _wait_until(lambda: len(tickets(repo)) == 2, waiting)
    waiting.kill()
    waiting.communicate(timeout=10)
    release.write_text("")
    assert first.wait(timeout=30) == 0
    report = land.json("later", code=0)  # no turn is waited for: the dead ticket is cleared
    assert outcomes(report) == {"later": "merged"}
    assert tickets(repo) == []
    assert outcomes(land.json("killed", code=0)) == {"killed": "merged"}


def test_a_waiting_land_says_whose_turn_it_waits_for(repo, vwt, land, sandbox):
    with_work(repo, vwt, "slow")
    with_work(repo, vwt, "next")
    inside, release = sandbox.tmp / "inside", sandbox.tmp / "release"
    first = land.spawn("slow", "--gate", f"touch {inside}; while [ ! -e {release} ]; do "
                                         "sleep 0.02; done")
    _wait_for(inside, first)
    second = land.spawn("next", "--json")
    _wait_until(lambda: len(tickets(repo)) == 2, second)
    release.write_text("")
    out, err = second.communicate(timeout=30)
    assert second.returncode == 0, err
    assert f"waiting for pid {first.pid} landing slow" in err
    assert outcomes(json.loads(out)) == {"next": "merged"}


def _wait_for(path: Path, proc) -> None:
    _wait_until(path.exists, proc)


def _wait_until(predicate, proc, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"the land ended first:\n{out}\n{err}")
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_an_invalid_name_is_a_usage_error(repo, vwt, land):
    run = land("../etc", code=2)
    assert run.out == ""


def test_no_target_branch_is_an_error(repo, vwt, land):
    with_work(repo, vwt, "feat")
    repo.git("branch", "-m", "main", "trunk")
    run = land("feat")
    assert run.code == 1 and "--into" in run.err


@pytest.mark.parametrize("into", ["release"])
def test_into_lands_on_another_branch(repo, vwt, land, into):
    repo.git("branch", into)
    with_work(repo, vwt, "feat")
    report = land.json("feat", "--into", into, code=0)
    assert report["into"] == into
    assert repo.git("show", f"{into}:feat.txt") == "feat's work"
    assert on_main(repo, "feat.txt") is None
    assert os.path.isdir(repo.path)


def test_an_agents_own_session_hold_does_not_count_but_anothers_does(repo, vwt, land, holder):
    """Claude Code holds its worktree for the session (`claude-<session>-<host pid>`, the
    file naming the agent's process as `host_pid`); the agent's own `vwt land` is that
    process's descendant, so the hold is its caller's own."""
    mine = with_work(repo, vwt, "mine")
    with_work(repo, vwt, "theirs")
    own = holder(repo.bucket, "mine", f"claude-s1-{os.getpid()}")
    own.path.write_text(json.dumps({"pid": own.proc.pid, "tool": "vwt", "agent": "claude-code",
                                    "session": "s1", "host_pid": os.getpid()}))
    other = holder(repo.bucket, "theirs", "claude-s2-1")
    other.path.write_text(json.dumps({"pid": other.proc.pid, "tool": "vwt",
                                      "agent": "claude-code", "session": "s2",
                                      "host_pid": other.proc.pid}))
    report = land.json("mine", "theirs", code=1)
    assert outcomes(report) == {"mine": "merged", "theirs": "kept_in_use"}
    assert not mine.exists() and own.alive
    assert outcomes(land.json("--ready", "--dry-run", code=0)) == {}
    assert [p["name"] for p in land.json("--ready", "--dry-run")["order"]] == []


def test_sigterm_during_the_gate_stops_it_and_leaves_the_queue_free(repo, vwt, land, sandbox):
    path = with_work(repo, vwt, "feat")
    repo.commit("main moves on", {"main.txt": "main\n"})
    pid_file = sandbox.tmp / "gate.pid"
    proc = land.spawn("feat", "--gate", f"echo $$ > {pid_file}; sleep 60")
    _wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), proc)
    proc.send_signal(15)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    assert "stopped by SIGTERM; not landed: feat (feat may stay rebased onto main); " \
           "vwt land feat lands them" in err
    gate = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _runs(gate):
        assert time.monotonic() < deadline, "the gate outlived the land"
        time.sleep(0.05)
    assert tickets(repo) == [] and repo.live_holders("feat") == []
    assert on_main(repo, "feat.txt") is None
    assert repo.git("rev-parse", "HEAD^", cwd=path) == main_tip(repo)  # it stays synced
    assert vwt("doctor").code == 0  # nothing for prune to repair
    assert outcomes(land.json("feat", code=0)) == {"feat": "merged"}


def test_sigterm_while_waiting_leaves_the_queue(repo, vwt, land, sandbox):
    with_work(repo, vwt, "slow")
    with_work(repo, vwt, "waiting")
    inside, release = sandbox.tmp / "inside", sandbox.tmp / "release"
    first = land.spawn("slow", "--gate", f"touch {inside}; while [ ! -e {release} ]; do "
                                         "sleep 0.02; done")
    _wait_for(inside, first)
    second = land.spawn("waiting")
    _wait_until(lambda: len(tickets(repo)) == 2, second)
    second.send_signal(15)
    _out, err = second.communicate(timeout=30)
    assert second.returncode == 143, err
    assert len(tickets(repo)) == 1 and repo.live_holders("waiting") == []
    release.write_text("")
    assert first.wait(timeout=30) == 0
    assert vwt("doctor").code == 0


def test_work_a_forge_merged_is_up_to_date_without_a_sync_or_gate(origin_repo, vwt, land,
                                                                   sandbox):
    from conftest import squash_merge_on_the_forge

    path = with_work(origin_repo, vwt, "feat")
    squash_merge_on_the_forge(origin_repo, "feat", path)
    origin_repo.git("fetch", "-q", "origin")  # origin/main is ahead of main, with the work
    before, head = main_tip(origin_repo), origin_repo.head(cwd=path)
    ran = sandbox.tmp / "ran"
    [result] = land.json("feat", "--gate", f"touch {ran}", code=0)["results"]
    assert result["outcome"] == "up_to_date" and result["gate"] is None and not ran.exists()
    assert main_tip(origin_repo) == before  # not landed a second time on the local main
    assert result["removed"] is True and head


def test_work_squashed_into_main_and_changed_there_since_is_up_to_date(repo, vwt, land):
    path = with_work(repo, vwt, "feat", {"README.md": "# the worktree's title\n"})
    repo.git("merge", "-q", "--squash", "feat")
    repo.git("commit", "-q", "-m", "landed by hand")
    repo.commit("and edited since", {"README.md": "# main's title\n"})
    [result] = land.json("feat", "--gate", "true", code=0)["results"]
    assert result["outcome"] == "up_to_date" and result["gate"] is None
    assert not path.exists()
