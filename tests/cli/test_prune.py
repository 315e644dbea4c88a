"""`vwt prune`: retention across repositories (SPEC §4 prune)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import days_ago, minutes_ago, tree_files

PRUNE_KEYS = {"removed", "kept", "reservations_discarded", "stale_holders_removed"}


def prune(vwt, *args, **kw):
    result = vwt("prune", *args, "--json", **kw)
    assert result.code == 0, str(result)
    out = result.json()
    assert out.keys() >= PRUNE_KEYS
    return out


def names(items):
    return sorted(item["name"] for item in items)


def make_aged(repo, vwt, ages: dict[str, float]) -> None:
    """Create worktrees and set their claimed_at to ``age`` days ago."""
    for name in ages:
        vwt.new(name)
    for name, age in ages.items():
        repo.edit_record(name, claimed_at=days_ago(age))


def test_prune_keeps_the_newest_n_and_snapshots_the_oldest(repo, vwt):
    make_aged(repo, vwt, {"a": 3, "b": 1, "c": 4, "d": 2})
    out = prune(vwt, "--keep", "2")
    assert names(out["removed"]) == ["a", "c"]
    assert out["kept"] == []
    for item in out["removed"]:
        assert item["bucket"] == repo.bucket
        assert item["snapshot_ref"] == f"refs/vibe/reaped/{item['name']}"
        assert repo.ref_exists(item["snapshot_ref"])
    for gone in ("a", "c"):
        assert not repo.checkout(gone).exists()
        assert repo.recovery_path(gone).exists(), "removal writes recovery.json"
        assert not repo.record_path(gone).exists()
    for kept in ("b", "d"):
        assert repo.checkout(kept).exists()
    states = {e["name"]: e["state"] for e in vwt.list()}
    assert states == {"a": "snapshot", "c": "snapshot", "b": "ready", "d": "ready"}


def test_pruned_dirty_worktree_can_be_restored(repo, vwt):
    make_aged(repo, vwt, {"old": 5, "new": 1})
    path = repo.checkout("old")
    repo.write("wip.txt", "unsaved\n", base=path)
    out = prune(vwt, "--keep", "1")
    assert names(out["removed"]) == ["old"]
    assert not path.exists()
    vwt.ok("restore", "old", "--json")
    assert (path / "wip.txt").read_text() == "unsaved\n"


def test_held_worktrees_count_but_are_skipped_and_reported(repo, vwt, holder):
    make_aged(repo, vwt, {"oldest": 3, "middle": 2, "newest": 1})
    holder(repo.bucket, "oldest")
    out = prune(vwt, "--keep", "2")
    assert names(out["removed"]) == ["middle"]
    [kept] = out["kept"]
    assert kept["name"] == "oldest"
    assert kept["bucket"] == repo.bucket
    assert "held" in kept["reason"]
    assert repo.checkout("oldest").exists()
    assert repo.checkout("newest").exists()


def test_keep_zero_spares_only_held_worktrees(repo, vwt, holder):
    make_aged(repo, vwt, {"x": 2, "y": 1})
    holder(repo.bucket, "y")
    out = prune(vwt, "--keep", "0")
    assert names(out["removed"]) == ["x"]
    assert names(out["kept"]) == ["y"]


def test_snapshot_failure_keeps_the_worktree_and_says_why(repo, vwt, sandbox):
    repo.commit("attrs", {".gitattributes": "*.dat filter=evil\n", "data.dat": "v1\n"})
    make_aged(repo, vwt, {"filtered": 3, "plain": 2})
    repo.write("data.dat", "v2\n", base=repo.checkout("filtered"))
    marker = sandbox.tmp / "filter.ran"
    repo.git("config", "filter.evil.clean", f"sh -c 'echo ran >> \"{marker}\"; cat'")
    out = prune(vwt, "--keep", "0")
    assert names(out["removed"]) == ["plain"]
    [kept] = out["kept"]
    assert kept["name"] == "filtered"
    assert kept["reason"].startswith("snapshot failed")
    assert (repo.checkout("filtered") / "data.dat").read_text() == "v2\n"
    assert repo.record_path("filtered").exists()
    assert not marker.exists()


def test_dry_run_reports_the_plan_and_changes_nothing(repo, vwt, layout):
    make_aged(repo, vwt, {"a": 3, "b": 2, "c": 1})
    repo.write("wip.txt", base=repo.checkout("a"))
    before = tree_files(layout.root)
    refs = repo.git("for-each-ref")
    dry = prune(vwt, "--keep", "1", "--dry-run")
    assert names(dry["removed"]) == ["a", "b"]
    assert tree_files(layout.root) == before
    assert repo.git("for-each-ref") == refs
    assert len(repo.worktree_paths()) == 4
    real = prune(vwt, "--keep", "1")
    assert names(real["removed"]) == names(dry["removed"])


def test_dry_run_shows_stale_holders_and_trash_that_prune_would_clear(repo, vwt, layout):
    vwt.new("was-held")
    stale = repo.holders_dir("was-held") / "hook-deps-999999"
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text("{}\n")  # nobody holds its lock: stale
    leftover = layout.trash / f"{repo.bucket}-gone-{'0' * 32}"
    leftover.mkdir(parents=True)
    plan = vwt.ok("prune", "--dry-run")
    assert "would remove 1 stale holder file(s)" in plan.out
    assert "would delete 1 leftover(s) of interrupted removals in .trash" in plan.out
    assert "nothing to prune" not in plan.err
    assert stale.exists() and leftover.exists()
    done = vwt.ok("prune")
    assert "removed 1 stale holder file(s)" in done.out and not stale.exists()
    assert not leftover.exists()
    assert "nothing to prune" in vwt.ok("prune", "--dry-run").err


def test_dry_run_marks_worktrees_with_work_of_their_own(repo, vwt):
    make_aged(repo, vwt, {"plain": 3, "busy": 2})
    busy = repo.checkout("busy")
    repo.commit("mine", {"mine.txt": "mine\n"}, cwd=busy)
    repo.write("wip.txt", "wip\n", base=busy)
    plan = vwt.ok("prune", "--keep", "0", "--dry-run").out.splitlines()
    assert f"would remove {repo.bucket}/plain (retention)" in plan
    assert (f"would remove {repo.bucket}/busy (retention; 1 uncommitted change(s), "
            "1 commit(s) of its own, kept in its snapshot)") in plan
    removed = {i["name"]: i for i in prune(vwt, "--keep", "0")["removed"]}
    assert (removed["busy"]["changes"], removed["busy"]["ahead"]) == (1, 1)
    assert (removed["plain"]["changes"], removed["plain"]["ahead"]) == (0, 0)


def test_limit_comes_from_environment_variable(repo, vwt):
    make_aged(repo, vwt, {"a": 3, "b": 2, "c": 1})
    out = prune(vwt, env_extra={"VIBE_WORKTREE_LIMIT": "1"})
    assert names(out["removed"]) == ["a", "b"]


def test_limit_comes_from_config_toml(repo, vwt, sandbox):
    make_aged(repo, vwt, {"a": 3, "b": 2, "c": 1})
    (sandbox.vibe_home / "config.toml").write_text(
        '# Vibe settings\nactive_model = "devstral"\nworktree_limit = 2\n\n'
        '[tools.bash]\npermission = "ask"\n'
    )
    out = prune(vwt)
    assert names(out["removed"]) == ["a"]


def test_limit_precedence_keep_then_environment_then_config(repo, vwt, sandbox):
    make_aged(repo, vwt, {"a": 4, "b": 3, "c": 2, "d": 1})
    (sandbox.vibe_home / "config.toml").write_text("worktree_limit = 1\n")
    env = {"VIBE_WORKTREE_LIMIT": "3"}
    assert names(prune(vwt, "--dry-run", env_extra=env)["removed"]) == ["a"]
    assert names(prune(vwt, "--keep", "2", "--dry-run", env_extra=env)["removed"]) == ["a", "b"]
    assert names(prune(vwt, "--dry-run")["removed"]) == ["a", "b", "c"]


def test_default_limit_is_fifteen(repo, vwt):
    for i in range(16):  # made the way Vibe makes them: plain git and a record (faster)
        repo.add_vibe_worktree(f"w{i:02d}", claimed_at=days_ago(20 - i))
    out = prune(vwt, "--dry-run")
    assert names(out["removed"]) == ["w00"]


def test_prune_works_across_repositories_from_anywhere(make_repo, vwt, sandbox):
    a = make_repo("alpha")
    b = make_repo("beta")
    vwt.new("in-a", cwd=a.path)
    vwt.new("in-b", cwd=b.path)
    out = prune(vwt, "--keep", "0", cwd=sandbox.tmp / "outside")
    assert {(i["name"], i["bucket"]) for i in out["removed"]} == {
        ("in-a", a.bucket),
        ("in-b", b.bucket),
    }
    assert not a.checkout("in-a").exists()
    assert not b.checkout("in-b").exists()


def test_stale_holder_files_are_removed_and_counted(repo, vwt, holder):
    vwt.new("was-held")
    h = holder(repo.bucket, "was-held")
    h.kill()
    assert h.path.exists()
    out = prune(vwt)
    assert out["stale_holders_removed"] == 1
    assert not h.path.exists()
    assert repo.checkout("was-held").exists(), "within the limit, nothing else happens"
    assert out["removed"] == []


def test_live_holder_files_are_not_stale(repo, vwt, holder):
    vwt.new("in-use")
    h = holder(repo.bucket, "in-use")
    out = prune(vwt)
    assert out["stale_holders_removed"] == 0
    assert h.path.exists()


# --- abandoned reservations --------------------------------------------------------------------


def reservation(repo, name, age_minutes, *, folder=None):
    """A record with no base_commit, as left by a creation that died before `git worktree add`."""
    record = repo.vibe_record(name, f"vibe/{name}", base_commit=None,
                              claimed_at=minutes_ago(age_minutes))
    path = repo.write_record(name, record)
    past = time.time() - age_minutes * 60
    if folder == "empty":
        repo.checkout(name).mkdir(parents=True)
    elif folder == "full":
        repo.write("leftover.txt", "something\n", base=repo.checkout(name))
    for p in (path, path.parent, repo.checkout(name)):
        if p.exists():
            os.utime(p, (past, past))
    return path


def test_old_empty_reservations_are_discarded(repo, vwt):
    reservation(repo, "absent", 11)
    reservation(repo, "emptydir", 30, folder="empty")
    out = prune(vwt)
    assert {(r["name"], r["bucket"]) for r in out["reservations_discarded"]} == {
        ("absent", repo.bucket),
        ("emptydir", repo.bucket),
    }
    assert not repo.record_path("absent").exists()
    assert not repo.claim("absent").exists()
    assert not repo.checkout("emptydir").exists()
    assert vwt.list() == []


def test_young_reservation_is_kept(repo, vwt):
    reservation(repo, "young", 1)
    out = prune(vwt)
    assert out["reservations_discarded"] == []
    assert repo.record_path("young").exists()


def test_reservation_with_a_live_starting_holder_is_kept(repo, vwt, holder):
    reservation(repo, "starting", 30)
    holder(repo.bucket, "starting", ".starting")
    out = prune(vwt, "--keep", "0")
    assert out["reservations_discarded"] == []
    assert repo.record_path("starting").exists()


def test_reservation_whose_folder_has_content_is_kept(repo, vwt):
    reservation(repo, "nonempty", 30, folder="full")
    out = prune(vwt, "--keep", "0")
    assert out["reservations_discarded"] == []
    assert (repo.checkout("nonempty") / "leftover.txt").exists()
    assert repo.record_path("nonempty").exists()


def test_dry_run_does_not_discard_reservations(repo, vwt):
    reservation(repo, "abandoned", 20)
    out = prune(vwt, "--dry-run")
    assert names(out["reservations_discarded"]) == ["abandoned"]
    assert repo.record_path("abandoned").exists()


# --- Vibe's finished-session rule ---------------------------------------------------------------


def test_finished_sessions_are_reaped_whatever_the_limit(repo, vwt, sandbox):
    sessions = sandbox.tmp / "sessions"
    archived = sessions / "archived"
    archived.mkdir(parents=True)
    (archived / "meta.json").write_text(json.dumps({"archived_at": "2026-01-01T00:00:00Z"}))
    active = sessions / "active"
    active.mkdir()
    (active / "meta.json").write_text(json.dumps({"started_at": "2026-01-01T00:00:00Z"}))
    gone = sessions / "gone"
    unreadable = sessions / "unreadable"
    unreadable.mkdir()
    (unreadable / "meta.json").write_text("{ archived_at")

    for name in ("folder-gone", "archived", "still-active", "mixed", "no-sessions",
                 "unreadable-meta"):
        vwt.new(name)
    repo.edit_record("folder-gone", session_dirs=[str(gone)])
    repo.edit_record("archived", session_dirs=[str(archived)])
    repo.edit_record("still-active", session_dirs=[str(active)])
    repo.edit_record("mixed", session_dirs=[str(gone), str(active)])
    repo.edit_record("no-sessions", session_dirs=[])
    repo.edit_record("unreadable-meta", session_dirs=[str(unreadable)])

    out = prune(vwt)  # default limit 15: only the finished-session rule applies
    assert names(out["removed"]) == ["archived", "folder-gone"]
    for name in ("archived", "folder-gone"):
        assert repo.recovery_path(name).exists()
        assert repo.ref_exists(f"refs/vibe/reaped/{name}")
    for name in ("still-active", "mixed", "no-sessions", "unreadable-meta"):
        assert repo.checkout(name).exists()


@pytest.mark.slow
def test_finished_session_that_is_held_is_kept(repo, vwt, holder, sandbox):
    vwt.new("held-done")
    repo.edit_record("held-done", session_dirs=[str(sandbox.tmp / "no-such-session")])
    holder(repo.bucket, "held-done")
    out = prune(vwt)
    assert out["removed"] == []
    assert names(out["kept"]) == ["held-done"]
    assert repo.checkout("held-done").exists()


# --- never on the strength of a bad record -------------------------------------------------------


def test_prune_never_deletes_a_broken_record(repo, vwt):
    make_aged(repo, vwt, {"corrupt": 9, "fine": 1})
    repo.record_path("corrupt").write_text("\x00garbage")
    files = tree_files(repo.checkout("corrupt"))
    out = prune(vwt, "--keep", "0")
    assert names(out["removed"]) == ["fine"]
    assert repo.record_path("corrupt").read_text() == "\x00garbage"
    assert tree_files(repo.checkout("corrupt")) == files
    assert repo.branch_exists("corrupt")


@pytest.mark.slow
def test_dry_run_plan_includes_a_snapshot_that_would_fail(repo, vwt):
    repo.commit("attrs", {".gitattributes": "*.dat filter=evil\n", "data.dat": "v1\n"})
    make_aged(repo, vwt, {"filtered": 3, "plain": 2})
    repo.write("data.dat", "v2\n", base=repo.checkout("filtered"))
    repo.git("config", "filter.evil.clean", "cat")
    dry = prune(vwt, "--keep", "0", "--dry-run")
    real = prune(vwt, "--keep", "0")
    assert names(real["kept"]) == ["filtered"]
    assert names(dry["removed"]) == names(real["removed"]) == ["plain"]
    assert names(dry["kept"]) == names(real["kept"])


def test_starting_holder_on_a_complete_worktree_keeps_it(repo, vwt, holder):
    make_aged(repo, vwt, {"being-reused": 3})
    holder(repo.bucket, "being-reused", ".starting")
    out = prune(vwt, "--keep", "0")
    assert out["removed"] == []
    [kept] = out["kept"]
    assert kept["name"] == "being-reused"
    assert "held" in kept["reason"] or "starting" in kept["reason"]
    assert repo.checkout("being-reused").exists()


def test_reservation_left_by_a_killed_creation_is_repaired(repo, vwt, holder):
    reservation(repo, "crashed", 1)  # young: a dead creator is not waited for
    h = holder(repo.bucket, "crashed", ".starting")
    h.kill()  # the creating process died: its .starting holder is stale
    out = prune(vwt)
    assert out["stale_holders_removed"] == 1
    assert names(out["reservations_discarded"]) == ["crashed"]
    assert not repo.record_path("crashed").exists()


def test_prune_reports_removed_worktrees_with_recovery_records(repo, vwt):
    make_aged(repo, vwt, {"r": 2})
    out = prune(vwt, "--keep", "0")
    [item] = out["removed"]
    recovery = repo.recovery("r")
    assert recovery["version"] == 1
    assert recovery["name"] == "r"
    assert recovery["snapshot_ref"] == item["snapshot_ref"]
    assert recovery["repo_root"] == str(repo.path)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", recovery["removed_at"])


def blocked_on_flock(pid: int, within: float) -> None:
    """Return once `pid` waits for a lock (Linux /proc/locks shows it), or after `within` s."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            locks = Path("/proc/locks").read_text()
        except OSError:
            locks = ""
        if any("->" in line and f" {pid} " in line for line in locks.splitlines()):
            return
        time.sleep(0.05)


@pytest.mark.slow
def test_prune_waits_for_the_shared_prune_lock(repo, vwt, layout, foreign_lock):
    """Vibe holding `.claims/.prune` (flock) keeps our prune from removing anything meanwhile."""
    make_aged(repo, vwt, {"victim": 2})
    lock = foreign_lock(layout.claims / ".prune")
    pruning = vwt.spawn("prune", "--keep", "0", "--json")
    blocked_on_flock(pruning.pid, within=1.5)
    assert repo.checkout("victim").exists(), "prune went ahead while another tool held .prune"
    assert repo.record_path("victim").exists()
    lock.kill()
    out, err = pruning.communicate(timeout=60)
    assert "Traceback" not in err
    if pruning.returncode == 0:
        assert names(json.loads(out)["removed"]) == ["victim"]


def prune_lock_passes(trace):
    return [line for line in trace.read_text().splitlines() if line.startswith(".prune ")]


@pytest.mark.slow
def test_prune_holds_the_lock_to_decide_and_a_moment_per_batch_not_to_remove(repo, vwt,
                                                                            sandbox):
    """`.prune` is taken once to read and decide, then once per batch of 8 to take the
    removal holds; snapshots and deletions run without it, so creators never wait for them."""
    names = [f"old-{i:02d}" for i in range(20)]
    for name in names:
        vwt.new(name)
    trace = sandbox.tmp / "locks.trace"
    done = vwt.ok("prune", "--keep", "0", "--json",
                  env_extra={"VWT_LOCK_TRACE": str(trace)}).json()
    assert sorted(item["name"] for item in done["removed"]) == names
    assert done["kept"] == [] and done["unfinished"] is False
    assert len(prune_lock_passes(trace)) == 1 + 3  # decide, then 8 + 8 + 4
    assert {row["state"] for row in vwt.list()} == {"snapshot"}


HOLDS_REMOVING = """\
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("removing", flush=True)
sys.stdin.read()
"""


@pytest.mark.slow
def test_new_of_a_name_being_removed_waits_for_the_removal_to_finish(repo, vwt):
    """A removal holds `.removing`, not `.prune`: `vwt new` of that name must not hand out
    the checkout being deleted; it waits until the removal is over, then looks again."""
    vwt.new("busy")
    repo.holders_dir("busy").mkdir(parents=True, exist_ok=True)
    remover = subprocess.Popen([sys.executable, "-c", HOLDS_REMOVING,
                                str(repo.holders_dir("busy") / ".removing")],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert remover.stdout is not None and remover.stdout.readline() == "removing\n"
        creating = vwt.spawn("new", "busy", "--json")
        time.sleep(1.0)
        assert creating.poll() is None, "new handed out a worktree that is being removed"
        restoring = vwt("restore", "busy")
        assert restoring.code == 1 and "being removed" in restoring.err
    finally:
        remover.communicate("", timeout=10)
    out, err = creating.communicate(timeout=60)
    assert creating.returncode == 0, err
    assert json.loads(out)["name"] == "busy"


@pytest.mark.slow
def test_prune_stops_after_its_time_budget_and_the_next_run_goes_on(repo, vwt):
    names = [f"old-{i:02d}" for i in range(20)]
    for name in names:
        vwt.new(name)
    first = vwt("prune", "--keep", "0", "--json", env_extra={"VWT_PRUNE_BUDGET": "0.001"})
    assert first.code == 0, str(first)
    done = first.json()
    assert done["unfinished"] is True and len(done["removed"]) == 8  # one batch, then stop
    assert "time budget" in first.err and first.err.count("\n") == 1
    rest = vwt.ok("prune", "--keep", "0", "--json").json()
    assert rest["unfinished"] is False
    assert sorted(i["name"] for i in done["removed"] + rest["removed"]) == names


@pytest.mark.parametrize("value", ["soon", "-1"])
def test_an_unreadable_prune_budget_is_an_error_naming_it(repo, vwt, value):
    vwt.new("a")
    result = vwt("prune", "--keep", "0", env_extra={"VWT_PRUNE_BUDGET": value})
    assert result.code == 1 and "VWT_PRUNE_BUDGET" in result.err
    assert repo.checkout("a").exists()


def test_a_recovery_record_written_by_a_removal_in_progress_is_left_alone(repo, vwt, holder):
    """A removal writes recovery.json before it moves the checkout away: a prune running in
    between sees a complete record beside it and must not call it stale (seen in the load
    proof: the snapshot of a merge was left with no recovery record, so restore lost it)."""
    vwt.new("going")
    (repo.checkout("going") / "work.txt").write_text("unsaved\n")
    snapshot = vwt("snapshot", "going", "--json")
    assert snapshot.code == 0, str(snapshot)
    recovery = {"version": 1, "name": "going", "branch": "going",
                "repo_root": str(repo.path), "base_commit": repo.git("rev-parse", "HEAD"),
                "snapshot_ref": "refs/vibe/reaped/going",
                "removed_at": "2026-12-04T12:00:00.000000Z"}
    repo.recovery_path("going").write_text(json.dumps(recovery))
    holder(repo.bucket, "going", ".removing")
    prune(vwt, "--keep", "10")
    assert repo.recovery_path("going").exists(), "a removal's recovery record was dropped"
