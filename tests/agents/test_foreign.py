"""`vwt foreign`: the git worktrees other tools made, with the cleanup inspection (SPEC §14)."""

from __future__ import annotations

from pathlib import Path

from .others_worktrees import (
    claude_code_worktree,
    codex_worktree,
    cursor_worktree,
    fingerprint,
    plain_worktree,
    process_inside,
    worktree_list,
)


def foreign(vwt, *args, **kw):
    document = vwt.ok("foreign", *args, "--json", **kw).json()
    return {Path(w["path"]): w for w in document["worktrees"]}


def test_foreign_names_the_tool_that_made_each_worktree(repo, vwt, sandbox):
    claude = claude_code_worktree(repo, "feat-auth")
    codex = codex_worktree(repo, sandbox.home / ".codex")
    cursor = cursor_worktree(repo, sandbox.home, "fix")
    plain = plain_worktree(repo, sandbox.tmp / "plain", "plain")
    managed = Path(vwt.new("ours")["path"])

    found = foreign(vwt)

    assert set(found) == {claude, codex, cursor, plain}, "no main checkout, no managed one"
    assert managed not in found and repo.path not in found
    assert {p: w["made_by"] for p, w in found.items()} == {
        claude: "claude-code", codex: "codex", cursor: "cursor", plain: "git"}
    assert found[claude]["branch"] == "worktree-feat-auth"
    assert found[codex]["branch"] is None, "Codex's worktrees are detached"
    assert found[claude]["head"] == repo.head()
    assert found[claude]["repo_root"] == str(repo.path)


def test_foreign_knows_codex_worktrees_under_codex_home(repo, vwt, sandbox):
    elsewhere = sandbox.tmp / "codex-home"
    made = codex_worktree(repo, elsewhere)
    assert foreign(vwt)[made]["made_by"] == "git"
    assert foreign(vwt, env_extra={"CODEX_HOME": str(elsewhere)})[made]["made_by"] == "codex"


def test_foreign_inspects_changes_commits_not_in_the_target_and_integration(repo, vwt, sandbox):
    working = claude_code_worktree(repo, "working")
    repo.commit("own work", {"feature.py": "x = 1\n"}, cwd=working)
    repo.write("scratch.txt", base=working)
    repo.write("README.md", "# edited\n", base=working)
    landed = plain_worktree(repo, sandbox.tmp / "landed", "landed")
    picked = repo.commit("landed work", {"landed.py": "y = 2\n"}, cwd=landed)
    repo.commit("main moves on", {"other.py": "z = 3\n"})
    repo.git("cherry-pick", picked)  # onto main as a new commit: integrated
    idle = plain_worktree(repo, sandbox.tmp / "idle", "idle")

    found = foreign(vwt)

    assert (found[working]["changes"], found[working]["untracked"]) == (2, 1)
    assert (found[working]["ahead"], found[working]["integrated"]) == (1, None)
    assert (found[landed]["ahead"], found[landed]["integrated"]) == (1, "no_added_changes")
    assert (found[idle]["changes"], found[idle]["ahead"]) == (0, 0)
    assert found[idle]["integrated"] == "same_commit"


def test_foreign_sees_locked_worktrees_and_those_a_process_works_in(repo, vwt, sandbox):
    locked = plain_worktree(repo, sandbox.tmp / "locked", "locked")
    repo.git("worktree", "lock", "--reason", "on a USB disk", str(locked))
    busy = claude_code_worktree(repo, "busy")
    process = process_inside(busy)
    try:
        found = foreign(vwt)
        assert found[locked]["locked"] is True and found[locked]["in_use"] is False
        assert found[busy]["in_use"] is True and found[busy]["locked"] is False
    finally:
        process.kill()
        process.wait()
    assert foreign(vwt)[busy]["in_use"] is False


def test_foreign_changes_nothing(repo, vwt, sandbox):
    path = claude_code_worktree(repo, "untouched")
    repo.write("new.txt", base=path)
    repo.write("README.md", "# edited\n", base=path)
    before, listed = fingerprint(repo, path), worktree_list(repo)

    vwt.ok("foreign")
    vwt.ok("foreign", "--json")

    assert fingerprint(repo, path) == before
    assert worktree_list(repo) == listed
    assert not (sandbox.vibe_home / "worktrees").exists()


def test_foreign_runs_no_filter_or_fsmonitor_command_of_the_repository(repo, vwt, sandbox):
    path = claude_code_worktree(repo, "hostile")
    repo.write(".gitattributes", "* filter=evil\n", base=path)
    repo.write("data.txt", "changed\n", base=path)
    marker = sandbox.tmp / "ran"
    repo.git("config", "filter.evil.clean", f"touch {marker}; cat")
    repo.git("config", "core.fsmonitor", f"touch {marker}; false")

    assert foreign(vwt)[path]["changes"] == 2
    assert not marker.exists()


def test_foreign_all_lists_every_repository_that_has_a_bucket(make_repo, vwt, sandbox):
    one, two, unknown = make_repo("one"), make_repo("two"), make_repo("unknown")
    for repo in (one, two):
        vwt.ok("new", "managed", cwd=repo.path)
    made = [claude_code_worktree(r, "agent") for r in (one, two, unknown)]

    everywhere = foreign(vwt, "--all")
    assert made[0] in everywhere and made[1] in everywhere
    assert made[2] not in everywhere, "a repository without a bucket is not known"
    assert set(foreign(vwt, cwd=one.path)) == {made[0]}
    assert set(foreign(vwt, cwd=sandbox.tmp / "outside")) == set(everywhere), \
        "outside a repository it lists them all, as list does"


def test_foreign_plain_output_is_a_table_a_person_can_read(repo, vwt):
    path = claude_code_worktree(repo, "feat-auth")
    lines = vwt.ok("foreign").out.splitlines()
    assert lines[0].split() == ["MADE", "BY", "BRANCH", "AHEAD", "CHANGES", "LANDED", "LOCKED",
                                "IN", "USE", "PATH"]
    assert lines[1].split() == ["claude-code", "worktree-feat-auth", "0", "0", "-", "no", "no",
                                str(path)]


def test_foreign_without_any_says_so_on_stderr(repo, vwt):
    result = vwt.ok("foreign")
    assert result.out == "" and "no worktrees made by other tools" in result.err
    assert vwt.ok("foreign", "--json").json() == {"worktrees": []}
