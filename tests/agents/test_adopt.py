"""`vwt adopt`: other tools' worktrees moved under management with every file, index entry,
stash and branch as it was; refused, with nothing changed, when a move is not safe (SPEC §14)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import assert_error
from vibe_worktree.core.locks import someone_waiting

from .others_worktrees import (
    busy_worktree,
    claude_code_worktree,
    codex_worktree,
    cursor_worktree,
    fingerprint,
    plain_worktree,
    process_inside,
    worktree_list,
)


def adopt(vwt, *args, code=0, **kw):
    result = vwt("adopt", *args, "--json", **kw)
    assert result.code == code, str(result)
    return result.json()


def test_adopt_moves_a_claude_code_worktree_keeping_files_index_stash_and_branch(repo, vwt):
    source = claude_code_worktree(repo, "feat-auth")
    busy_worktree(repo, source)
    merge_base = repo.head()
    before = fingerprint(repo, source)

    done = adopt(vwt, str(source))

    assert done["refused"] == []
    [adopted] = done["adopted"]
    moved = repo.checkout("feat-auth")
    assert adopted == {"path": str(moved), "name": "feat-auth", "from": str(source),
                       "branch": "worktree-feat-auth", "made_by": "claude-code",
                       "bucket": repo.bucket}
    assert not source.exists()
    assert fingerprint(repo, moved) == before
    record = repo.record("feat-auth")
    assert (record["branch"], record["branch_created"]) == ("worktree-feat-auth", False)
    assert record["base_commit"] == merge_base, "the merge base with the target branch"
    assert record["adopted"] == {"from": str(source), "made_by": "claude-code"}
    assert str(moved) in worktree_list(repo) and "locked" not in worktree_list(repo)
    [row] = vwt.list()
    assert (row["name"], row["state"], row["ahead"], row["changes"]) == ("feat-auth", "ready",
                                                                          2, 3)
    assert vwt.ok("foreign", "--json").json() == {"worktrees": []}
    assert vwt.ok("doctor").out.strip() == "healthy"


def test_an_adopted_worktree_is_removed_with_a_snapshot_and_restored_like_any_other(repo, vwt):
    source = claude_code_worktree(repo, "agent-a1b2c3")
    repo.write("unsaved.txt", "work\n", base=source)
    adopt(vwt, str(source))

    assert vwt("rm", "agent-a1b2c3", "--json").code == 3, "dirty work needs confirmation"
    removed = vwt.ok("rm", "agent-a1b2c3", "-y", "--json").json()
    assert removed["snapshot_ref"] == "refs/vibe/reaped/agent-a1b2c3"
    assert repo.branch_exists("worktree-agent-a1b2c3"), "a branch it did not create is kept"
    restored = vwt.ok("restore", "agent-a1b2c3", "--json").json()
    assert (Path(restored["path"]) / "unsaved.txt").read_text() == "work\n"


def test_an_adopted_worktree_is_merged_and_kept_by_retention_like_any_other(repo, vwt, sandbox):
    landing = claude_code_worktree(repo, "landing")
    repo.commit("the feature", {"feature.py": "x = 1\n"}, cwd=landing)
    older = cursor_worktree(repo, sandbox.home, "older")
    repo.write("draft.txt", "draft\n", base=older)
    adopt(vwt, str(older), str(landing))

    status = vwt.ok("status", "landing", "--json").json()
    assert (status["ahead"], status["integrated"], status["branch_created"]) == (1, None, False)
    assert vwt.ok("snapshot", "landing", "--json").json()["ref"] == "refs/vibe/reaped/landing"
    merged = vwt.ok("merge", "landing", "--json").json()
    assert merged["outcome"] == "merged" and merged["removed"] is True
    assert repo.git("show", "main:feature.py") == "x = 1"
    assert repo.branch_exists("worktree-landing"), "not created by vwt: kept"

    pruned = vwt.ok("prune", "--keep", "0", "--json").json()
    assert [r["name"] for r in pruned["removed"]] == ["older"]
    assert repo.branch_exists("cursor-older")
    restored = vwt.ok("restore", "older", "--json").json()
    assert (Path(restored["path"]) / "draft.txt").read_text() == "draft\n"


def test_adopt_refuses_what_cannot_be_moved_safely_and_changes_nothing(repo, vwt, sandbox):
    locked = plain_worktree(repo, sandbox.tmp / "locked", "locked")
    repo.git("worktree", "lock", "--reason", "on a USB disk", str(locked))
    busy = claude_code_worktree(repo, "busy")
    detached = codex_worktree(repo, sandbox.home / ".codex")
    managed = vwt.new("ours")["path"]
    plain_folder = sandbox.tmp / "not-a-worktree"
    plain_folder.mkdir()
    fine = cursor_worktree(repo, sandbox.home, "fine")
    prints = {p: fingerprint(repo, p) for p in (locked, busy, detached)}
    process = process_inside(busy)
    try:
        listed = worktree_list(repo)
        result = vwt("adopt", str(locked), str(busy), str(detached), str(repo.path), managed,
                     str(plain_folder), str(sandbox.tmp / "nowhere"), str(repo.path / "src"),
                     str(fine), "--json")
    finally:
        process.kill()
        process.wait()

    assert result.code == 1
    done = result.json()
    reasons = {r["path"]: r["reason"] for r in done["refused"]}
    assert reasons == {
        str(locked): "locked", str(busy): "in_use", str(detached): "detached_head",
        str(repo.path): "main_worktree", managed: "managed",
        str(plain_folder): "not_a_worktree", str(sandbox.tmp / "nowhere"): "not_found",
        str(repo.path / "src"): "not_a_worktree"}
    assert [a["from"] for a in done["adopted"]] == [str(fine)], "the others still go ahead"
    assert all(len(r["message"]) > 20 for r in done["refused"])
    assert len([line for line in result.err_lines if line.startswith("vwt: refused: ")]) == 8
    for path, before in prints.items():
        assert fingerprint(repo, path) == before
    assert worktree_list(repo) == worktree_list_moved(listed, fine, repo.checkout("fine"))
    assert [r["name"] for r in vwt.list()] == ["fine", "ours"]


def worktree_list_moved(listed: str, source: Path, moved: Path) -> str:
    return "\n\n".join(sorted(listed.replace(str(source), str(moved)).split("\n\n")))


def test_adopt_refuses_a_worktree_holding_submodules(repo, vwt, sandbox, make_repo):
    library = make_repo("library")
    repo.git("submodule", "add", "-q", str(library.path), "lib")
    repo.commit("add the library")
    source = plain_worktree(repo, sandbox.tmp / "with-sub", "with-sub")
    repo.git("submodule", "update", "-q", "--init", cwd=source)
    before = fingerprint(repo, source)

    done = adopt(vwt, str(source), code=1)

    assert [r["reason"] for r in done["refused"]] == ["submodules"]
    assert fingerprint(repo, source) == before


def test_adopted_names_come_from_the_folder_made_valid_and_unique(repo, vwt, sandbox):
    first = plain_worktree(repo, sandbox.tmp / "a" / "feature", "one")
    second = plain_worktree(repo, sandbox.tmp / "b" / "feature", "two")
    odd = plain_worktree(repo, sandbox.tmp / "Fix: the bug.", "three")
    vwt.new("taken")
    fourth = plain_worktree(repo, sandbox.tmp / "c" / "taken", "four")

    done = adopt(vwt, str(first), str(second), str(odd), str(fourth))

    assert [a["name"] for a in done["adopted"]] == ["feature", "feature-2", "fix-the-bug",
                                                    "taken-2"]
    assert repo.record("feature-2")["branch"] == "two"


def test_adopt_all_takes_every_foreign_worktree_of_the_repository(repo, vwt, sandbox, make_repo):
    made = [claude_code_worktree(repo, "one"), cursor_worktree(repo, sandbox.home, "two")]
    locked = plain_worktree(repo, sandbox.tmp / "locked", "locked")
    repo.git("worktree", "lock", str(locked))
    other = make_repo("other")
    vwt.ok("new", "x", cwd=other.path)
    elsewhere = claude_code_worktree(other, "elsewhere")

    done = adopt(vwt, "--all", code=1)

    assert sorted(a["from"] for a in done["adopted"]) == sorted(map(str, made))
    assert [(r["path"], r["reason"]) for r in done["refused"]] == [(str(locked), "locked")]
    assert elsewhere.exists(), "--all is this repository's, as vwt foreign here lists them"
    assert_error(vwt("adopt"), 2)
    assert_error(vwt("adopt", "--all", str(locked)), 2)


def test_relative_paths_are_taken_from_the_current_directory(repo, vwt):
    claude_code_worktree(repo, "rel")
    done = adopt(vwt, ".claude/worktrees/rel", cwd=repo.path)
    assert done["adopted"][0]["name"] == "rel"


def test_plain_output_says_where_each_went(repo, vwt):
    source = claude_code_worktree(repo, "feat")
    result = vwt.ok("adopt", str(source))
    assert result.out == f"adopted feat: {source} -> {repo.checkout('feat')}\n"


@pytest.fixture
def small_tmpfs(sandbox):
    """A tmpfs of its own (another filesystem than the home); needs root."""
    mount = sandbox.tmp / "other-fs"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_adopt_refuses_a_worktree_on_another_filesystem(repo, vwt, small_tmpfs):
    source = plain_worktree(repo, small_tmpfs / "wt", "elsewhere")
    repo.write("wip.txt", base=source)
    before = fingerprint(repo, source)

    done = adopt(vwt, str(source), code=1)

    assert [r["reason"] for r in done["refused"]] == ["other_filesystem"]
    assert fingerprint(repo, source) == before
    assert vwt.list() == []


# -- a kill at any moment ---------------------------------------------------------------------
@pytest.mark.parametrize("step", ["adopt.locked", "adopt.moved", "adopt.repaired",
                                  "adopt.recorded"])
def test_a_kill_mid_adoption_loses_nothing_and_prune_repairs_it(repo, vwt, step):
    source = claude_code_worktree(repo, "feat")
    busy_worktree(repo, source)
    before = fingerprint(repo, source)

    killed = vwt("adopt", str(source), env_extra={"VWT_CRASH_AT": step})
    assert killed.code == -9, str(killed)
    if step != "adopt.recorded":
        doctor = vwt("doctor", "--json")
        assert doctor.code == 1
        problems = doctor.json()["problems"]
        assert {p["fix"] for p in problems} == {"vwt prune"}
        [stopped] = [p for p in problems if p["kind"] == "abandoned_reservation"]
        assert str(source) in stopped["detail"], "doctor says at once what stopped"
    repo.git("worktree", "prune")  # what another session's `vwt rm` runs meanwhile
    vwt.ok("prune")

    moved = repo.checkout("feat")
    if step == "adopt.locked":  # the folder had not moved yet: the reservation goes
        assert vwt.list() == [] and fingerprint(repo, source) == before
        assert "locked" not in worktree_list(repo)
        adopt(vwt, str(source))
    [row] = vwt.list()
    assert (row["name"], row["state"]) == ("feat", "ready")
    assert fingerprint(repo, moved) == before
    assert repo.record("feat")["base_commit"] is not None
    assert "locked" not in worktree_list(repo)
    assert str(moved) in worktree_list(repo)
    assert vwt.ok("doctor").out.strip() == "healthy"


def test_adopt_run_again_after_a_kill_finishes_the_move_and_reports_it(repo, vwt):
    source = claude_code_worktree(repo, "feat")
    repo.write("wip.txt", base=source)
    vwt("adopt", str(source), env_extra={"VWT_CRASH_AT": "adopt.moved"})
    moved = repo.checkout("feat")
    assert f"locked vwt adopt: moving it to {moved}" in worktree_list(repo), \
        "the lock's reason says who locked it and why"
    assert repo.record("feat")["base_commit"] is None

    again = adopt(vwt, str(source))

    assert again["adopted"] == [{"path": str(moved), "name": "feat", "from": str(source),
                                 "branch": "worktree-feat", "made_by": "claude-code",
                                 "bucket": repo.bucket}]
    assert repo.record("feat")["base_commit"] == repo.head()
    assert "locked" not in worktree_list(repo)
    assert (moved / "wip.txt").exists()
    assert adopt(vwt, str(source)) == again, "adopting it once more changes nothing"


# -- a full disk ------------------------------------------------------------------------------
def _fill(folder: Path, leave: int) -> Path:
    """Fill the filesystem of `folder`, then free `leave` bytes."""
    filler = folder / "filler"
    with open(filler, "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass
    size = filler.stat().st_size
    os.truncate(filler, max(0, size - leave))
    return filler


@pytest.mark.slow
def test_adopt_on_a_full_disk_succeeds_or_says_so_and_loses_nothing(sandbox, small_tmpfs, vwt):
    from conftest import _init_repo

    for leave in (0, 4096, 8192, 12288, 16384, 65536):
        folder = small_tmpfs / f"k{leave}"
        folder.mkdir()
        repo = _init_repo(sandbox, vwt.layout, folder / "repo", commits=1)
        source = claude_code_worktree(repo, "feat")
        repo.write("wip.txt", base=source)
        before = fingerprint(repo, source)
        home = {"VIBE_HOME": str(folder / "vibe")}
        vwt.ok("list", env_extra=home, cwd=repo.path)  # the home's folders exist
        filler = _fill(small_tmpfs, leave)

        first = vwt("adopt", str(source), env_extra=home, cwd=repo.path)

        if first.code != 0:
            assert first.code == 1 and "No space left on device" in first.err, str(first)
            assert len(first.err_lines) == 1, str(first)
        filler.unlink()
        vwt.ok("prune", env_extra=home, cwd=repo.path)
        again = vwt("adopt", str(source), "--json", env_extra=home, cwd=repo.path)
        assert again.code == 0, f"K={leave}: {first}\n{again}"
        moved = Path(again.json()["adopted"][0]["path"])
        assert fingerprint(repo, moved) == before
        assert vwt.ok("doctor", env_extra=home, cwd=repo.path).out.strip() == "healthy"


# -- concurrency ------------------------------------------------------------------------------
def test_parallel_adoptions_of_one_worktree_move_it_once(repo, vwt):
    source = claude_code_worktree(repo, "feat")
    busy_worktree(repo, source)
    before = fingerprint(repo, source)

    runs = [vwt.spawn("adopt", str(source), "--json") for _ in range(4)]
    outputs = [(proc.wait(timeout=60), *proc.communicate()) for proc in runs]
    assert all(out for _code, out, _err in outputs), outputs
    results = [(code, json.loads(out)) for code, out, _err in outputs]

    assert {code for code, _doc in results} <= {0, 1}
    adopted = {a["path"] for _code, doc in results for a in doc["adopted"]}
    assert adopted == {str(repo.checkout("feat"))}, results
    refusals = {r["reason"] for _code, doc in results for r in doc["refused"]}
    assert refusals <= {"locked", "not_found", "move_failed", "in_use"}, results
    assert [r["name"] for r in vwt.list()] == ["feat"]
    assert sorted(p.name for p in repo.claim("feat").parent.iterdir()) == ["feat"], \
        "no reservation left behind"
    assert fingerprint(repo, repo.checkout("feat")) == before
    assert "locked" not in worktree_list(repo)


def test_an_adoption_reserving_after_another_never_takes_the_worktree_under_its_name(
        repo, vwt, sandbox):
    """The race behind a flaky run of the test above (adopted as `feat-2`): the first
    adopter has reserved `feat` and stops there; a second one then comes in. It must not
    reserve `feat-2` and move the worktree there: the first locks the worktree under the
    same `.prune` lock it reserved under, so the second waits for that lock, then finds the
    worktree locked (or moved) and refuses, reserving nothing."""
    source = claude_code_worktree(repo, "feat")
    busy_worktree(repo, source)
    before = fingerprint(repo, source)
    first = vwt.spawn("adopt", str(source), "--json",
                      env_extra={"VWT_PAUSE_AT": "adopt.reserved"})
    _pid, status = os.waitpid(first.pid, os.WUNTRACED)  # stopped right after reserving
    assert os.WIFSTOPPED(status), "the first adopter never reached its reservation"
    second = vwt.spawn("adopt", str(source), "--json")
    prune_lock = sandbox.vibe_home / "worktrees" / ".claims" / ".prune"
    while second.poll() is None and not someone_waiting(str(prune_lock)):
        time.sleep(0.01)  # until it has finished, or waits for the first's lock
    os.kill(first.pid, signal.SIGCONT)
    outputs = [(proc.wait(timeout=60), *proc.communicate()) for proc in (first, second)]
    docs = [json.loads(out) for _code, out, _err in outputs]
    assert [a["name"] for doc in docs for a in doc["adopted"]] == ["feat"], outputs
    assert {r["reason"] for doc in docs for r in doc["refused"]} <= {"locked", "not_found",
                                                                       "in_use"}, outputs
    assert [r["name"] for r in vwt.list()] == ["feat"]
    assert sorted(p.name for p in repo.claim("feat").parent.iterdir()) == ["feat"]
    assert fingerprint(repo, repo.checkout("feat")) == before
    assert "locked" not in worktree_list(repo)


def test_parallel_adoptions_of_same_named_folders_get_distinct_names(repo, vwt, sandbox):
    sources = [plain_worktree(repo, sandbox.tmp / f"tool{i}" / "task", f"task-{i}")
               for i in range(4)]
    runs = [vwt.spawn("adopt", str(s), "--json") for s in sources]
    for proc in runs:
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
    names = sorted(r["name"] for r in vwt.list())
    assert names == ["task", "task-2", "task-3", "task-4"]
    assert sorted(repo.record(n)["branch"] for n in names) == [f"task-{i}" for i in range(4)]
