"""`vwt new`: creation, start point, existing branches, reuse and its validation (SPEC §2, §4)."""

from __future__ import annotations

import os
import re
import shutil
import stat
import time

import pytest

from conftest import Repo, assert_error, tree_files

NEW_KEYS = {"name", "branch", "path", "bucket", "repo_root", "base_commit", "branch_created",
            "created"}
RECORD_KEYS = {"version", "name", "branch", "repo_root", "base_commit", "branch_created",
               "claimed_at", "session_dirs", "reap_requested", "moved_checkout_admin"}
Z_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def test_new_creates_a_worktree_at_root_bucket_name(repo, vwt, layout):
    result = vwt.new("feature")
    assert result.keys() >= NEW_KEYS
    path = layout.root / repo.bucket / "feature"
    assert result["name"] == "feature"
    assert result["branch"] == "feature"
    assert result["path"] == str(path)
    assert result["bucket"] == repo.bucket
    assert result["repo_root"] == str(repo.path)
    assert result["created"] is True
    assert result["branch_created"] is True
    assert (path / ".git").is_file()
    assert path in repo.worktree_paths()
    assert repo.current_branch(cwd=path) == "feature"
    assert result["base_commit"] == repo.head(cwd=path) == repo.head()


def test_plain_new_prints_only_the_path(repo, vwt):
    result = vwt.ok("new", "plain")
    assert result.out.splitlines() == [str(repo.checkout("plain"))]
    assert os.path.isabs(result.out.strip())


def test_record_json_has_the_shared_format(repo, vwt):
    result = vwt.new("rec")
    raw = repo.record_path("rec").read_text(encoding="utf-8")
    record = repo.record("rec")
    assert record.keys() >= RECORD_KEYS
    assert record["version"] == 1
    assert record["name"] == "rec"
    assert record["branch"] == "rec"
    assert record["repo_root"] == str(repo.path)
    assert record["base_commit"] == result["base_commit"]
    assert re.fullmatch(r"[0-9a-f]{40}", record["base_commit"])
    assert record["branch_created"] is True
    assert Z_TIMESTAMP.match(record["claimed_at"]), record["claimed_at"]
    assert isinstance(record["session_dirs"], list)
    assert record["reap_requested"] is False
    assert record["moved_checkout_admin"] is None or isinstance(record["moved_checkout_admin"], str)
    assert re.match(r'^\{\n  "[a-z_]+": ', raw), "2-space indentation"
    mode = stat.S_IMODE(repo.record_path("rec").stat().st_mode)
    assert mode == 0o600
    # written atomically: no temporary file is left next to it
    assert set(os.listdir(repo.claim("rec"))) <= {"record.json", "holders"}


def test_bucket_is_the_same_from_a_subdirectory_and_from_a_worktree(repo, vwt):
    first = vwt.new("one")
    second = vwt.new("two", cwd=repo.path / "src")
    third = vwt.new("three", cwd=first["path"])
    assert first["bucket"] == second["bucket"] == third["bucket"] == repo.bucket
    assert third["repo_root"] == str(repo.path)
    assert third["path"] == str(repo.checkout("three"))


def test_branch_option_names_the_branch(repo, vwt):
    result = vwt.new("task", "--branch", "topic/task-1")
    assert result["name"] == "task"
    assert result["branch"] == "topic/task-1"
    assert result["path"] == str(repo.checkout("task"))
    assert repo.current_branch(cwd=repo.checkout("task")) == "topic/task-1"


def test_name_only_invalid_as_a_branch_is_accepted_with_branch_option(repo, vwt):
    # §3: the git branch rule applies to the name "when used as one".
    result = vwt.new("x..y", "-b", "xy")
    assert result["branch"] == "xy"
    assert result["path"] == str(repo.checkout("x..y"))


def test_invalid_branch_option_is_rejected(repo, vwt):
    result = vwt("new", "task", "-b", "bad..branch")
    assert result.code in (1, 2), str(result)
    assert not repo.checkout("task").exists()
    assert not repo.branch_exists("bad..branch")


# --- start point ---------------------------------------------------------------------------


def test_start_point_is_origin_default_branch_after_fetch(origin_repo, vwt):
    local = origin_repo.commit("local only")  # HEAD is ahead of origin/main
    new_tip = origin_repo.upstream.advance("moved on")
    assert new_tip != local
    result = vwt.new("fresh")
    assert result["base_commit"] == new_tip
    assert origin_repo.head(cwd=origin_repo.checkout("fresh")) == new_tip
    assert origin_repo.rev("refs/remotes/origin/main") == new_tip


def test_no_fetch_uses_last_known_remote_tracking_ref(origin_repo, vwt):
    known = origin_repo.rev("refs/remotes/origin/main")
    origin_repo.commit("local only")
    origin_repo.upstream.advance("moved on")
    result = vwt.new("offline", "--no-fetch")
    assert result["base_commit"] == known
    assert origin_repo.rev("refs/remotes/origin/main") == known, "no fetch happened"


def test_failed_fetch_is_a_warning_and_uses_last_known_ref(origin_repo, vwt):
    known = origin_repo.rev("refs/remotes/origin/main")
    origin_repo.git("remote", "set-url", "origin", str(origin_repo.path.parent / "gone.git"))
    result = vwt("new", "unreachable", "--json")
    assert result.code == 0, str(result)
    assert result.json()["base_commit"] == known
    assert result.err.strip(), "a failed fetch is reported as a warning on stderr"


def test_failed_fetch_keeps_plain_stdout_to_the_path(origin_repo, vwt):
    origin_repo.git("remote", "set-url", "origin", str(origin_repo.path.parent / "gone.git"))
    result = vwt("new", "quiet-path")
    assert result.code == 0, str(result)
    assert result.out.splitlines() == [str(origin_repo.checkout("quiet-path"))]


@pytest.mark.slow
def test_hanging_fetch_gives_up_after_the_timeout(origin_repo, vwt, sandbox):
    known = origin_repo.rev("refs/remotes/origin/main")
    hang = sandbox.tmp / "hang.sh"
    hang.write_text("#!/bin/sh\nexec 2>/dev/null\nsleep 40\n")
    hang.chmod(0o755)
    origin_repo.git("remote", "set-url", "origin", "ssh://git.invalid/repo.git")
    started = time.monotonic()
    result = vwt("new", "slow", "--json", env_extra={"GIT_SSH_COMMAND": str(hang)}, timeout=45)
    elapsed = time.monotonic() - started
    assert result.code == 0, str(result)
    assert result.json()["base_commit"] == known
    assert elapsed < 25, f"fetch was not cut off at 10 s ({elapsed:.1f} s)"
    assert result.err.strip()


def test_only_remote_is_used_when_not_named_origin(sandbox, layout, make_repo, vwt):
    seed = make_repo("seed2")
    sandbox.run_git("clone", "-q", "-o", "upstream", str(seed.path), str(sandbox.tmp / "work"),
                    cwd=sandbox.tmp)
    work = Repo(sandbox.tmp / "work", sandbox, layout)
    work.commit("local only")
    tip = seed.commit("seed moved")
    result = vwt.new("fromupstream", cwd=work.path)
    assert result["base_commit"] == tip


def test_from_ref_sets_the_start_point(origin_repo, vwt):
    older = origin_repo.rev("HEAD~2")
    result = vwt.new("old", "--from", "HEAD~2")
    assert result["base_commit"] == older
    assert origin_repo.head(cwd=origin_repo.checkout("old")) == older


def test_without_remote_the_start_point_is_head(repo, vwt):
    repo.git("switch", "-q", "-c", "work")
    tip = repo.commit("on work branch")
    main = repo.rev("main")
    assert tip != main
    result = vwt.new("child")
    assert result["base_commit"] == tip


def test_new_branch_does_not_track_the_remote(origin_repo, vwt):
    vwt.new("notrack")
    assert not origin_repo.git_ok("config", "--get", "branch.notrack.remote")
    assert not origin_repo.git_ok("config", "--get", "branch.notrack.merge")


def test_post_checkout_hook_runs_as_with_git_worktree_add(repo, vwt, sandbox):
    marker = sandbox.tmp / "post-checkout.ran"
    hook = repo.path / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\necho ran >> '{marker}'\n")
    hook.chmod(0o755)
    vwt.new("hooked")
    assert marker.exists()


# --- existing branches ---------------------------------------------------------------------


def test_existing_branch_is_checked_out_not_created(repo, vwt):
    repo.git("branch", "existing", "HEAD~1")
    tip = repo.rev("existing")
    result = vwt.new("existing")
    assert result["branch"] == "existing"
    assert result["branch_created"] is False
    assert result["created"] is True
    assert result["base_commit"] == tip
    assert repo.record("existing")["branch_created"] is False


def test_branch_checked_out_elsewhere_fails_cleanly(repo, vwt):
    before = repo.worktree_paths()
    result = vwt("new", "main")
    assert_error(result, 1)
    assert repo.worktree_paths() == before
    assert not repo.checkout("main").exists()
    assert all(e["name"] != "main" for e in vwt.list())


# --- reuse -----------------------------------------------------------------------------------


def test_second_new_with_same_name_reuses_the_worktree(repo, vwt):
    first = vwt.new("again")
    repo.write("work.txt", "in progress\n", base=repo.checkout("again"))
    second = vwt.new("again")
    assert second["created"] is False
    for key in ("name", "branch", "path", "bucket", "repo_root", "base_commit", "branch_created"):
        assert second[key] == first[key], key
    assert (repo.checkout("again") / "work.txt").read_text() == "in progress\n"
    assert len(repo.worktree_paths()) == 2


def test_reuse_reports_branch_created_from_the_record(repo, vwt):
    repo.git("branch", "pre")
    vwt.new("pre")
    again = vwt.new("pre")
    assert again["created"] is False
    assert again["branch_created"] is False


def test_reuse_refuses_a_symlink_in_the_path(repo, vwt, sandbox):
    vwt.new("linked")
    path = repo.checkout("linked")
    elsewhere = sandbox.tmp / "elsewhere"
    shutil.move(str(path), str(elsewhere))
    path.symlink_to(elsewhere, target_is_directory=True)
    record_before = repo.record_path("linked").read_bytes()
    files_before = tree_files(elsewhere)
    result = vwt("new", "linked", "--json")
    assert_error(result, 1)
    assert path.is_symlink()
    assert tree_files(elsewhere) == files_before
    assert repo.record_path("linked").read_bytes() == record_before


def test_reuse_refuses_when_dot_git_is_a_directory(repo, vwt):
    vwt.new("gitdir")
    path = repo.checkout("gitdir")
    (path / ".git").unlink()
    (path / ".git").mkdir()
    (path / ".git" / "marker").write_text("mine\n")
    record_before = repo.record_path("gitdir").read_bytes()
    result = vwt("new", "gitdir", "--json")
    assert_error(result, 1)
    assert (path / ".git" / "marker").read_text() == "mine\n"
    assert repo.record_path("gitdir").read_bytes() == record_before


def test_reuse_refuses_a_worktree_switched_to_another_branch(repo, vwt):
    vwt.new("switched")
    path = repo.checkout("switched")
    repo.git("switch", "-q", "-c", "elsewhere", cwd=path)
    record_before = repo.record_path("switched").read_bytes()
    result = vwt("new", "switched", "--json")
    assert_error(result, 1)
    assert repo.current_branch(cwd=path) == "elsewhere"
    assert repo.record_path("switched").read_bytes() == record_before


def test_reuse_refuses_a_checkout_of_another_repository(repo, vwt, make_repo):
    vwt.new("foreign")
    path = repo.checkout("foreign")
    repo.git("worktree", "remove", "--force", str(path))
    other = make_repo("other")
    other.git("worktree", "add", "-q", "-b", "foreign", str(path))
    record_before = repo.record_path("foreign").read_bytes()
    result = vwt("new", "foreign", "--json")
    assert_error(result, 1)
    assert path in other.worktree_paths()
    assert other.current_branch(cwd=path) == "foreign"
    assert repo.record_path("foreign").read_bytes() == record_before


def test_name_with_only_a_recovery_record_points_to_restore(repo, vwt):
    vwt.new("saved")
    repo.write("unsaved.txt", "precious\n", base=repo.checkout("saved"))
    assert vwt("rm", "saved", "-y", "--json").code == 0
    assert repo.recovery_path("saved").exists()
    result = vwt("new", "saved", "--json")
    assert_error(result, 1)
    assert "restore" in result.err
    assert repo.recovery_path("saved").exists()
    assert not repo.checkout("saved").exists()


def test_new_outside_a_repository_fails(vwt, sandbox):
    result = vwt("new", "nowhere", cwd=sandbox.tmp / "outside")
    assert_error(result, 1)
    root = sandbox.vibe_home / "worktrees"
    buckets = [p for p in root.iterdir() if not p.name.startswith(".")] if root.exists() else []
    assert buckets == []


def test_unknown_from_ref_fails_and_leaves_nothing(repo, vwt):
    result = vwt("new", "badref", "--from", "no-such-ref", "--json")
    assert_error(result, 1)
    assert not repo.checkout("badref").exists()
    assert not repo.branch_exists("badref")
    assert len(repo.worktree_paths()) == 1
    assert vwt.entry("badref") is None


def test_reuse_refuses_a_symlinked_bucket(repo, vwt, sandbox):
    path = repo.checkout(vwt.new("viabucket")["name"])
    real_bucket = sandbox.tmp / "real-bucket"
    shutil.move(str(path.parent), str(real_bucket))
    path.parent.symlink_to(real_bucket, target_is_directory=True)
    record_before = repo.record_path("viabucket").read_bytes()
    result = vwt("new", "viabucket", "--json")
    assert_error(result, 1)
    assert path.parent.is_symlink()
    assert repo.record_path("viabucket").read_bytes() == record_before


def test_new_refuses_a_name_whose_record_is_unreadable(repo, vwt):
    path = repo.checkout(vwt.new("garbled")["name"])
    repo.record_path("garbled").write_text("not json at all")
    files = tree_files(path)
    result = vwt("new", "garbled", "--json")
    assert_error(result, 1)
    assert repo.record_path("garbled").read_text() == "not json at all"
    assert tree_files(path) == files


def test_relative_home_gives_absolute_paths(repo, vwt):
    result = vwt.ok("--home", "relhome", "new", "rel", "--json").json()
    assert result["path"] == str(repo.path / "relhome" / "worktrees" / repo.bucket / "rel")


def test_repository_reached_through_a_symlink_maps_to_the_same_bucket(repo, vwt, sandbox):
    link = sandbox.tmp / "repo-link"
    link.symlink_to(repo.path, target_is_directory=True)
    direct = vwt.new("direct")
    via_link = vwt.new("via-link", cwd=link)
    assert via_link["bucket"] == direct["bucket"] == repo.bucket
    assert via_link["repo_root"] == str(repo.path)


def test_plain_git_worktree_of_the_repository_shares_its_bucket(repo, vwt, sandbox):
    side = sandbox.tmp / "side"
    repo.git("worktree", "add", "-q", "-b", "side", str(side))
    result = vwt.new("from-side", cwd=side)
    assert result["bucket"] == repo.bucket
    assert result["repo_root"] == str(repo.path)


# -- the start point, read from the files in the plain layouts, asked of git otherwise --------
def test_detached_head_is_the_start_point(repo, vwt):
    first = repo.git("rev-list", "--max-parents=0", "HEAD").strip()
    repo.git("checkout", "-q", "--detach", first)
    assert vwt.new("from-detached", "--no-fetch")["base_commit"] == first


def test_inside_a_worktree_its_own_head_is_the_start_point(repo, vwt):
    inner_path = vwt.new("outer", "--no-fetch")["path"]
    repo.git("commit", "-q", "--allow-empty", "-m", "only on outer", cwd=inner_path)
    outer_tip = repo.head(cwd=inner_path)
    assert outer_tip != repo.head()
    made = vwt.new("nested-start", "--no-fetch", cwd=inner_path)
    assert made["base_commit"] == outer_tip
    assert made["repo_root"] == str(repo.path)


def test_head_on_an_unborn_branch_is_refused_with_a_clear_error(repo, vwt):
    repo.git("checkout", "-q", "--orphan", "fresh")
    repo.git("rm", "-rq", "--cached", ".")
    result = vwt("new", "from-unborn", "--no-fetch", cwd=repo.path)
    assert_error(result, 1)
    assert "no commits" in result.err


def test_a_leaked_git_dir_does_not_redirect_discovery(repo, vwt, make_repo):
    # a hook's GIT_DIR or a stray export must not make vwt act on another repository
    other = make_repo("other")
    made = vwt.new("stays-here", "--no-fetch", cwd=repo.path,
                   env_extra={"GIT_DIR": str(other.path / ".git")})
    assert made["repo_root"] == str(repo.path)
    assert made["base_commit"] == repo.head()
