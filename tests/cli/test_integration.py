"""Integration detection in `list`/`status`, and what it lets `rm` and `prune --merged` do
(SPEC §8), on real repositories."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import squash_merge_on_the_forge, tree_files

LANDING_KEYS = {"target", "behind", "integrated", "safe_to_remove"}


def worktree_with_commits(repo, vwt, name, files):
    path = vwt.new(name)["path"]
    for i, (rel, text) in enumerate(files.items()):
        repo.commit(f"{name} {i}", {rel: text}, cwd=path)
    return path


def squash_into_main(repo, branch, message="squashed"):
    repo.git("merge", "-q", "--squash", branch)
    repo.git("commit", "-q", "-m", message)


def landing(vwt, name):
    entry = vwt.entry(name)
    return {k: entry[k] for k in LANDING_KEYS}


def test_fast_forwarded_work_is_the_same_commit(repo, vwt):
    worktree_with_commits(repo, vwt, "ff", {"a.txt": "a\n"})
    repo.git("merge", "-q", "--ff-only", "ff")
    assert landing(vwt, "ff") == {"target": "main", "behind": 0, "integrated": "same_commit",
                                  "safe_to_remove": True}


def test_merged_then_built_on_is_an_ancestor(repo, vwt):
    worktree_with_commits(repo, vwt, "anc", {"a.txt": "a\n"})
    repo.git("merge", "-q", "--ff-only", "anc")
    repo.commit("later", {"later.txt": "later\n"})
    assert landing(vwt, "anc")["integrated"] == "ancestor"
    assert landing(vwt, "anc")["behind"] == 1


def test_squash_merge_alone_gives_the_same_tree(repo, vwt):
    worktree_with_commits(repo, vwt, "sq", {"a.txt": "a\n", "b.txt": "b\n"})
    squash_into_main(repo, "sq")
    assert landing(vwt, "sq") == {"target": "main", "behind": 1, "integrated": "same_tree",
                                  "safe_to_remove": True}


def test_squash_merge_followed_by_other_work_adds_no_changes(repo, vwt):
    worktree_with_commits(repo, vwt, "sq", {"a.txt": "a\n", "b.txt": "b\n"})
    squash_into_main(repo, "sq")
    repo.commit("other work", {"other.txt": "other\n"})
    assert landing(vwt, "sq")["integrated"] == "no_added_changes"


def test_cherry_pick_later_reverted_is_still_patch_equivalent(repo, vwt):
    worktree_with_commits(repo, vwt, "cp", {"a.txt": "a\n"})
    repo.commit("main moves", {"m.txt": "m\n"})
    repo.git("cherry-pick", "cp")
    repo.git("revert", "--no-edit", "HEAD")
    assert landing(vwt, "cp")["integrated"] == "patch_equivalent"


LINES = "".join(f"line {n}\n" for n in range(30))


def edit_lines(text, edits):
    lines = text.splitlines()
    for n, word in edits.items():
        lines[n] = f"line {n} {word}"
    return "".join(f"{line}\n" for line in lines)


def pull_request(repo, vwt, name, commits):
    """A worktree whose commits each rewrite lines of `code.txt`, a file main already has."""
    repo.commit("code", {"code.txt": LINES})
    path = vwt.new(name)["path"]
    text = LINES
    for i, edits in enumerate(commits):
        text = edit_lines(text, edits)
        repo.commit(f"{name} {i}", {"code.txt": text}, cwd=path)
    return Path(path)


def main_edits(repo, edits):
    repo.git("checkout", "-q", "main")
    repo.commit("main edits", {"code.txt": edit_lines((repo.path / "code.txt").read_text(),
                                                      edits)})


def test_squash_merge_whose_lines_main_edited_again_is_squashed(repo, vwt):
    pull_request(repo, vwt, "pr", [{5: "a"}, {6: "b"}, {5: "a2"}])
    squash_into_main(repo, "pr")
    main_edits(repo, {5: "later", 6: "later"})  # merging pr now conflicts
    assert landing(vwt, "pr") == {"target": "main", "behind": 2, "integrated": "squashed",
                                  "safe_to_remove": True}
    assert "squashed" in vwt.ok("status", "pr").out
    assert vwt.ok("status", "pr", "--json").json()["integrated"] == "squashed"
    vwt.ok("prune", "--merged")
    assert vwt.entry("pr")["state"] == "snapshot"


def test_landed_squash_plus_one_more_commit_is_not_integrated(repo, vwt):
    path = pull_request(repo, vwt, "pr", [{5: "a"}, {6: "b"}])
    squash_into_main(repo, "pr")
    main_edits(repo, {5: "later"})
    repo.commit("new work", {"code.txt": edit_lines((path / "code.txt").read_text(),
                                                    {20: "new"})}, cwd=path)
    assert landing(vwt, "pr")["integrated"] is None
    assert vwt.entry("pr")["safe_to_remove"] is False


def test_squash_of_commits_that_undo_each_other_is_squashed(repo, vwt):
    pull_request(repo, vwt, "pr", [{5: "tried"}, {5: ""}, {9: "kept"}])
    squash_into_main(repo, "pr")
    main_edits(repo, {9: "later"})
    assert landing(vwt, "pr")["integrated"] == "squashed"


def test_squash_made_after_main_moved_next_to_the_change_is_squashed(repo, vwt):
    """The squash's patch differs from the branch's (main changed the lines around it
    before the squash): merging the branch into the squash's parent gives the squash."""
    pull_request(repo, vwt, "pr", [{10: "a"}, {11: "b"}])
    main_edits(repo, {13: "nearby"})
    squash_into_main(repo, "pr")
    main_edits(repo, {10: "later", 11: "later"})
    assert landing(vwt, "pr")["integrated"] == "squashed"


def test_work_main_had_before_the_fork_is_not_squashed(repo, vwt):
    """The same change made on main, undone, then made again on a branch: main's first
    commit is older than the branch, so it is not the branch's work landing."""
    repo.commit("code", {"code.txt": LINES})
    main_edits(repo, {7: "x"})
    main_edits(repo, {7: ""})
    path = vwt.new("pr")["path"]
    repo.commit("redo", {"code.txt": edit_lines(LINES.replace("line 7\n", "line 7 \n"),
                                                {7: "x"})}, cwd=path)
    main_edits(repo, {8: "later"})
    assert landing(vwt, "pr")["integrated"] is None


def test_unmerged_work_is_not_integrated_and_not_safe_to_remove(repo, vwt):
    worktree_with_commits(repo, vwt, "wip", {"a.txt": "a\n"})
    repo.commit("main moves", {"m.txt": "m\n"})
    assert landing(vwt, "wip") == {"target": "main", "behind": 1, "integrated": None,
                                   "safe_to_remove": False}


def test_dirty_integrated_worktree_is_not_safe_to_remove(repo, vwt):
    path = worktree_with_commits(repo, vwt, "sq", {"a.txt": "a\n"})
    squash_into_main(repo, "sq")
    repo.write("scratch.txt", "x\n", base=path)
    found = landing(vwt, "sq")
    assert found["integrated"] == "same_tree" and found["safe_to_remove"] is False


def test_forge_squash_merge_on_the_remote_only_is_recognised(origin_repo, vwt):
    path = worktree_with_commits(origin_repo, vwt, "pr", {"feature.txt": "feature\n"})
    squash_merge_on_the_forge(origin_repo, "pr", path)
    origin_repo.upstream.advance("after the merge")
    assert landing(vwt, "pr")["integrated"] is None, "not fetched yet: main lacks it"
    origin_repo.git("fetch", "-q", "origin")
    assert origin_repo.rev("main") != origin_repo.rev("origin/main"), "local main not moved"
    assert landing(vwt, "pr") == {"target": "main", "behind": 0,
                                  "integrated": "no_added_changes", "safe_to_remove": True}


def test_fields_are_null_without_status_and_for_snapshots(repo, vwt):
    worktree_with_commits(repo, vwt, "sq", {"a.txt": "a\n"})
    vwt.new("gone")
    vwt.ok("rm", "gone", "-y")
    repo.write("dirty.txt", "x\n", base=repo.checkout("sq"))
    vwt.ok("snapshot", "sq")
    for entry in vwt.list("--no-status"):
        assert {entry[k] for k in LANDING_KEYS} == {None}
    vwt.new("tmp")
    repo.write("x.txt", "x\n", base=repo.checkout("tmp"))
    vwt.ok("rm", "tmp", "-y")
    snap = vwt.entry("tmp")
    assert snap["state"] == "snapshot" and {snap[k] for k in LANDING_KEYS} == {None}


def test_no_target_branch_gives_null_fields(make_repo, vwt, sandbox):
    odd = make_repo("odd")
    odd.git("branch", "-m", "main", "trunk")
    sandbox.default_cwd = odd.path
    vwt.new("x")
    entry = vwt.entry("x")
    assert entry["changes"] == 0 and {entry[k] for k in LANDING_KEYS} == {None}


def test_status_reports_the_landing_fields(repo, vwt):
    worktree_with_commits(repo, vwt, "sq", {"a.txt": "a\n"})
    squash_into_main(repo, "sq")
    status = vwt.ok("status", "sq", "--json").json()
    assert {k: status[k] for k in LANDING_KEYS} == {
        "target": "main", "behind": 1, "integrated": "same_tree", "safe_to_remove": True}
    plain = vwt.ok("status", "sq").out
    assert "landed     same tree" in plain and "main" in plain  # worded as `list` words it


def test_table_shows_how_each_worktree_landed(repo, vwt):
    worktree_with_commits(repo, vwt, "sq", {"a.txt": "a\n"})
    worktree_with_commits(repo, vwt, "wip", {"b.txt": "b\n"})
    squash_into_main(repo, "sq")
    lines = vwt.ok("list").out.splitlines()
    assert "LANDED" in lines[0] and "BEHIND" in lines[0]
    row = {line.split()[0]: line.split() for line in lines[1:]}
    assert "squashed" not in row["wip"] and "no" in row["wip"]
    assert "same" in row["sq"]


def test_repository_merge_driver_is_never_run(repo, vwt, sandbox):
    marker = sandbox.tmp / "driver-ran"
    repo.git("config", "merge.evil.driver", f"touch {marker}; false")
    repo.commit("attributes", {".gitattributes": "*.txt merge=evil\n", "c.txt": "base\n"})
    path = worktree_with_commits(repo, vwt, "wt", {"c.txt": "theirs\n"})
    repo.commit("ours", {"c.txt": "ours\n"})
    assert landing(vwt, "wt")["integrated"] is None
    assert repo.checkout("wt") and path
    assert not marker.exists()


# -- rm ---------------------------------------------------------------------------------------
def test_rm_removes_integrated_clean_worktree_without_asking(repo, vwt):
    worktree_with_commits(repo, vwt, "sq", {"a.txt": "a\n"})
    squash_into_main(repo, "sq")
    result = vwt("rm", "sq", "--json")
    assert result.code == 0, str(result)
    assert result.json()["outcome"] == "removed" and result.json()["branch_deleted"] is True
    assert not repo.checkout("sq").exists() and not repo.recovery_path("sq").exists()


def test_rm_keeps_unintegrated_commits_without_confirmation(repo, vwt):
    worktree_with_commits(repo, vwt, "wip", {"a.txt": "a\n"})
    result = vwt("rm", "wip", "--json")
    assert result.code == 3 and result.json()["outcome"] == "kept_dirty"
    assert repo.checkout("wip").exists()


def test_rm_keeps_integrated_worktree_with_uncommitted_changes(repo, vwt):
    path = worktree_with_commits(repo, vwt, "sq", {"a.txt": "a\n"})
    squash_into_main(repo, "sq")
    repo.write("a.txt", "edited\n", base=path)
    before = tree_files(repo.checkout("sq"))
    result = vwt("rm", "sq", "--json")
    assert result.code == 3 and result.json()["outcome"] == "kept_dirty"
    assert tree_files(repo.checkout("sq")) == before


def test_rm_of_integrated_worktree_held_elsewhere_is_refused(repo, vwt, holder):
    worktree_with_commits(repo, vwt, "sq", {"a.txt": "a\n"})
    squash_into_main(repo, "sq")
    holder(repo.bucket, "sq")
    result = vwt("rm", "sq", "--json")
    assert result.code == 4 and result.json()["outcome"] == "kept_in_use"


# -- prune --merged ---------------------------------------------------------------------------
def prune_json(vwt, *args):
    result = vwt("prune", *args, "--json")
    assert result.code == 0, str(result)
    return result.json()


def test_prune_merged_removes_landed_worktrees_whatever_the_limit(repo, vwt, holder):
    worktree_with_commits(repo, vwt, "landed", {"a.txt": "a\n"})
    worktree_with_commits(repo, vwt, "held", {"h.txt": "h\n"})
    worktree_with_commits(repo, vwt, "wip", {"b.txt": "b\n"})
    vwt.new("fresh")
    squash_into_main(repo, "landed")
    squash_into_main(repo, "held")
    holder(repo.bucket, "held")
    out = prune_json(vwt, "--merged")
    assert [(i["name"], i["reason"]) for i in out["removed"]] == [("landed", "merged")]
    assert [(i["name"], i["reason"]) for i in out["kept"]] == [("held", "held")]
    snapshot_ref = out["removed"][0]["snapshot_ref"]
    assert repo.ref_exists(snapshot_ref), "an automatic removal snapshots first"
    assert not repo.branch_exists("landed")
    states = {e["name"]: e["state"] for e in vwt.list()}
    assert states == {"landed": "snapshot", "held": "ready", "wip": "ready", "fresh": "ready"}


def test_prune_without_merged_leaves_landed_worktrees(repo, vwt):
    worktree_with_commits(repo, vwt, "landed", {"a.txt": "a\n"})
    squash_into_main(repo, "landed")
    assert prune_json(vwt)["removed"] == []


def test_prune_merged_dry_run_changes_nothing(repo, vwt):
    worktree_with_commits(repo, vwt, "landed", {"a.txt": "a\n"})
    squash_into_main(repo, "landed")
    out = prune_json(vwt, "--merged", "--dry-run")
    assert [(i["name"], i["reason"]) for i in out["removed"]] == [("landed", "merged")]
    assert repo.checkout("landed").exists()


@pytest.mark.parametrize("why", ["retention", "missing"])
def test_every_pruned_item_says_why(repo, vwt, why):
    import shutil

    vwt.new("old")
    if why == "missing":
        shutil.rmtree(repo.checkout("old"))
        out = prune_json(vwt)
    else:
        out = prune_json(vwt, "--keep", "0")
    assert [(i["name"], i["reason"]) for i in out["removed"]] == [("old", why)]


@pytest.mark.parametrize("name", ["plain", "with=equals", "dotted.name"])
def test_behind_in_a_listing_counts_what_rev_list_counts(repo, vwt, name):
    """`list` counts behind in the worktree's own `git status` (the target named its
    upstream for that one command): the same figure as rev-list, the repository's config
    untouched, whatever the branch is called."""
    path = worktree_with_commits(repo, vwt, name, {"mine.txt": "mine\n", "more.txt": "more\n"})
    for i in range(3):
        repo.commit(f"main {i}", {f"main{i}.txt": f"{i}\n"})
    config_before = repo.git("config", "--list", "--local")
    listed = vwt.entry(name)
    expected = repo.git("rev-list", "--left-right", "--count", f"main...{name}").split()
    assert (listed["behind"], listed["ahead"]) == (int(expected[0]), int(expected[1])) == (3, 2)
    assert repo.git("config", "--list", "--local") == config_before
    assert vwt.ok("status", name, "--json").json()["behind"] == 3
    assert (Path(path) / "mine.txt").is_file()


def test_uncountable_ahead_behind_falls_back_to_rev_list():
    from vibe_worktree.core.git.index import _ahead_behind

    assert _ahead_behind("+2 -3") == (3, 2)
    assert _ahead_behind("+? -?") is None and _ahead_behind("") is None
