"""The warm pool's failures are visible (SPEC §15): a fill that fails names the hook and
the paths it left changed; `vwt pool` carries the last failure until a fill succeeds, also
one a background refill hit in another repository; `doctor` reports it, naming the log.
And what the pool costs on disk is shown (`bytes`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from test_pool import deps_hook, hook, pool_config, pool_dir, setup_pool, wait_for_fillers

from conftest import Repo, Sandbox, Vwt


def pool_of(vwt: Vwt, bucket: str, *args: str, cwd: Path | None = None) -> dict[str, Any]:
    pools = vwt.ok("pool", *args, "--json", cwd=cwd).json()["pools"]
    [found] = [p for p in pools if p["bucket"] == bucket]
    return found


def doctor_problems(vwt: Vwt, kind: str) -> list[dict[str, Any]]:
    report = vwt("doctor", "--json", cwd=vwt.sandbox.tmp).json()
    return [p for p in report["problems"] if p["kind"] == kind]


def test_a_hook_that_leaves_changes_is_named_with_the_paths_it_left(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 1, deps_hook(sandbox),
               hook("codegen", "echo generated >> README.md && echo x > stray.txt"),
               hook("later", "touch later-ran"))
    result = vwt("pool", "fill")
    assert result.code == 1
    [line] = [x for x in result.err_lines if x.startswith("vwt: error:")]
    assert "post_create hook codegen" in line and "deps" not in line
    assert "M README.md" in line and "?? stray.txt" in line
    assert "must be clean" in line
    assert not list(sandbox.tmp.rglob("later-ran")), "a hook ran after the entry was lost"
    assert repo.git("for-each-ref", "refs/vibe/pool/") != ""  # what it left was kept


def test_a_failing_hook_names_itself_and_what_it_left_changed(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 1, hook("deps", "echo half >> README.md; exit 3"))
    result = vwt("pool", "fill")
    assert result.code == 1
    assert "post_create hook deps exited 3 and left changes git sees (M README.md)" in result.err


def test_a_failed_fill_stays_visible_until_a_fill_succeeds(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 1, hook("deps", "echo npm ERR! broken >&2; exit 3"))
    assert pool_of(vwt, repo.bucket)["last_error"] is None
    assert vwt("pool", "fill").code == 1
    pool = pool_of(vwt, repo.bucket)
    assert pool["last_error"] == "post_create hook deps exited 3"
    assert pool["last_error_at"].endswith("Z")
    assert "\n" not in pool["last_error"]
    plain = vwt.ok("pool").out
    assert "last fill failed" in plain and "post_create hook deps exited 3" in plain
    [problem] = doctor_problems(vwt, "pool_fill_failed")
    assert problem["bucket"] == repo.bucket
    assert "post_create hook deps exited 3" in problem["detail"]
    assert f"vwt -C {repo.path} pool fill" in problem["fix"]
    # the cause fixed, a fill that succeeds clears it
    repo.commit("fixed", {".vibe/worktree.toml": pool_config(1, hook("deps", "true"))})
    vwt.ok("hooks", "approve", "--all")
    vwt.ok("pool", "fill")
    assert pool_of(vwt, repo.bucket)["last_error"] is None
    assert "last fill failed" not in vwt.ok("pool").out
    assert doctor_problems(vwt, "pool_fill_failed") == []
    assert not (pool_dir(vwt, repo) / ".last-error").exists()


def test_a_user_pool_whose_background_refill_fails_in_another_repository_is_visible(
        make_repo: Any, sandbox: Sandbox, vwt: Vwt) -> None:
    """`[pool]` of `<home>/worktree.toml` applies to every repository; its hook needs a
    file this repository lacks, so every refill here fails, in a process nobody watches."""
    (sandbox.vibe_home).mkdir(parents=True, exist_ok=True)
    (sandbox.vibe_home / "worktree.toml").write_text(pool_config(1, hook(
        "deps", "test -f package.json || { echo 'no package.json here' >&2; exit 4; }")))
    fine = make_repo("web")
    fine.commit("package", {"package.json": "{}\n"})
    other = make_repo("scripts")
    assert vwt.new("first", cwd=other.path)["pooled"] is False  # starts the refill
    wait_for_fillers(vwt, other)
    pool = pool_of(vwt, other.bucket, "--all", cwd=fine.path)
    assert (pool["ready"], pool["filling"]) == (0, 0)
    assert pool["last_error"] == "post_create hook deps exited 4"
    log = Path(pool["log"])
    assert log == sandbox.vibe_home / "logs" / "worktree" / other.bucket / "pool-fill.log"
    assert "no package.json here" in log.read_text()
    [problem] = doctor_problems(vwt, "pool_fill_failed")
    assert problem["bucket"] == other.bucket and problem["path"] == str(log)
    assert str(log) in problem["detail"] and str(log) in problem["fix"]
    assert f"vwt -C {other.path} pool fill" in problem["fix"]
    assert vwt("doctor", cwd=fine.path).code == 1


@pytest.mark.slow
def test_pool_status_says_what_its_entries_take_on_disk(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 2, deps_hook(sandbox))
    assert pool_of(vwt, repo.bucket)["bytes"] == 0
    vwt.ok("pool", "fill")
    entries = [p for p in pool_dir(vwt, repo).iterdir() if p.is_dir()]
    du = sum(int(subprocess.run(["du", "-sB1", str(p)], capture_output=True, text=True,
                                check=True).stdout.split()[0]) for p in entries)
    assert pool_of(vwt, repo.bucket)["bytes"] == du
    assert " on disk" in vwt.ok("pool").out


@pytest.mark.slow
def test_pool_outside_a_repository_shows_every_repositorys_pool_as_list_does(
        make_repo: Any, sandbox: Sandbox, vwt: Vwt) -> None:
    for name in ("one", "two"):
        made = make_repo(name)
        made.commit("pool", {".vibe/worktree.toml": pool_config(1)})
        vwt.ok("pool", "fill", cwd=made.path)
    outside = vwt.ok("pool", "--json", cwd=sandbox.tmp).json()["pools"]
    assert sorted(p["repo_root"] for p in outside) == [str(sandbox.tmp / "one"),
                                                       str(sandbox.tmp / "two")]
    assert json.loads(vwt.ok("pool", "--all", "--json", cwd=sandbox.tmp).out)["pools"] == outside


def test_prune_forgets_a_fill_that_failed_for_want_of_space_but_not_a_hook_failure(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    """After a full disk, `vwt prune` is the repair (SPEC §16): a refill that found no space
    is no fault of the pool's setup, and the next refill tries again."""
    setup_pool(repo, vwt, 1, hook("deps", "exit 3"))
    assert vwt("pool", "fill").code == 1
    vwt.ok("prune")
    assert pool_of(vwt, repo.bucket)["last_error"] == "post_create hook deps exited 3"
    (pool_dir(vwt, repo) / ".last-error").write_text(json.dumps({
        "version": 1, "message": "No space left on device: " + str(pool_dir(vwt, repo)),
        "at": "2026-12-05T10:00:00.000000Z", "log": None}))
    assert pool_of(vwt, repo.bucket)["last_error"].startswith("No space left on device")
    vwt.ok("prune", "--dry-run")
    assert pool_of(vwt, repo.bucket)["last_error"] is not None
    vwt.ok("prune")
    assert pool_of(vwt, repo.bucket)["last_error"] is None
