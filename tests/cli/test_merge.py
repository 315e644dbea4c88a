"""`vwt merge NAME` (SPEC §8): every mode and outcome, on real repositories.

"Nothing changed" is proven byte for byte: every ref (snapshot refs aside, which §8
allows to remain), the worktree's files and the target checkout's files.
"""

from __future__ import annotations

import json

import pytest

from conftest import squash_merge_on_the_forge, tree_files

MERGE_KEYS = {"name", "outcome", "into", "mode", "commit", "conflicts", "removed",
              "branch_deleted", "snapshot_ref", "head", "hooks", "kept_reason"}


def merge(vwt, *args, code=0):
    result = vwt("merge", *args, "--json")
    assert result.code == code, str(result)
    data = result.json()
    assert set(data) == MERGE_KEYS
    assert isinstance(data["removed"], bool) and isinstance(data["branch_deleted"], bool)
    assert isinstance(data["conflicts"], list) and isinstance(data["hooks"], list)
    return data


def work(repo, vwt, name, files, **kw):
    path = vwt.new(name, **kw)["path"]
    for i, (rel, text) in enumerate(files.items()):
        repo.commit(f"{name}: change {i}", {rel: text}, cwd=path)
    return path


def refs(repo):
    """Every ref but the snapshot refs, with what it points at."""
    out = repo.git("for-each-ref", "--format=%(refname) %(objectname)")
    return sorted(line for line in out.splitlines() if not line.startswith("refs/vibe/"))


class Frozen:
    """Everything a refused merge must leave as it was."""

    def __init__(self, repo, name):
        self.repo, self.name = repo, name
        self.state = self.read()

    def read(self):
        checkout = self.repo.checkout(self.name)
        return (refs(self.repo), tree_files(checkout), tree_files(self.repo.path),
                self.repo.porcelain(checkout), self.repo.porcelain(self.repo.path),
                self.repo.record(self.name))

    def assert_unchanged(self):
        assert self.read() == self.state


# -- squash -----------------------------------------------------------------------------------
def test_squash_lands_one_commit_and_removes_the_worktree(repo, vwt):
    work(repo, vwt, "feat", {"feat.txt": "feature\n"})
    before = repo.rev("main")
    head = repo.rev("feat")
    data = merge(vwt, "feat")
    assert (data["outcome"], data["into"], data["mode"]) == ("merged", "main", "squash")
    assert data["commit"] == repo.rev("main") and data["head"] == head
    assert repo.rev("main^") == before, "one commit on top of the old tip"
    assert repo.git("log", "-1", "--format=%B", "main") == "feat: change 0"
    assert (repo.path / "feat.txt").read_text() == "feature\n", "main checkout moved"
    assert repo.porcelain(repo.path) == ""
    assert data["removed"] and data["branch_deleted"] and not repo.branch_exists("feat")
    assert data["snapshot_ref"] == "refs/vibe/reaped/feat"
    assert vwt.entry("feat")["state"] == "snapshot"


def test_squash_of_several_commits_summarises_their_subjects(repo, vwt):
    work(repo, vwt, "feat", {"a.txt": "a\n", "b.txt": "b\n"})
    merge(vwt, "feat")
    message = repo.git("log", "-1", "--format=%B", "main")
    assert "feat: change 0" in message and "feat: change 1" in message
    assert repo.git("rev-list", "--count", "main") == "4"


def test_message_option_names_the_squash_commit(repo, vwt):
    work(repo, vwt, "feat", {"a.txt": "a\n", "b.txt": "b\n"})
    merge(vwt, "feat", "-m", "Add the feature")
    assert repo.git("log", "-1", "--format=%s", "main") == "Add the feature"


def test_restore_after_merge_brings_the_worktree_back(repo, vwt):
    path = work(repo, vwt, "feat", {"feat.txt": "feature\n"})
    head = repo.rev("feat")
    merge(vwt, "feat")
    restored = vwt.ok("restore", "feat", "--json").json()
    assert restored["path"] == path
    assert repo.head(cwd=repo.checkout("feat")) == head
    assert repo.porcelain(repo.checkout("feat")) == ""


def test_squash_merges_over_a_moved_target(repo, vwt):
    work(repo, vwt, "feat", {"feat.txt": "feature\n"})
    repo.commit("main moves", {"other.txt": "other\n"})
    data = merge(vwt, "feat")
    assert repo.git("show", "main:feat.txt") == "feature"
    assert repo.git("show", "main:other.txt") == "other"
    assert data["commit"] == repo.rev("main")


# -- rebase and ff-only -----------------------------------------------------------------------
def test_rebase_replays_each_commit_keeping_authors_and_messages(repo, vwt):
    path = work(repo, vwt, "feat", {"a.txt": "a\n"})
    repo.write("b.txt", "b\n", base=path)
    repo.git("add", "b.txt", cwd=path)
    repo.git("-c", "user.name=Ada", "-c", "user.email=ada@example.com", "commit", "-q", "-m",
             "by ada", cwd=path)
    repo.commit("main moves", {"m.txt": "m\n"})
    old_main = repo.rev("main")
    data = merge(vwt, "feat", "--rebase")
    assert data["mode"] == "rebase" and data["outcome"] == "merged"
    log = repo.git("log", "--format=%s|%an", f"{old_main}..main").splitlines()
    assert log == ["by ada|Ada", "feat: change 0|Test User"]
    assert repo.rev("main~2") == old_main
    assert repo.git("show", "main:a.txt") == "a" and repo.git("show", "main:m.txt") == "m"


def test_ff_only_fast_forwards_the_target_to_head(repo, vwt):
    work(repo, vwt, "feat", {"a.txt": "a\n"})
    head = repo.rev("feat")
    data = merge(vwt, "feat", "--ff-only")
    assert data["outcome"] == "merged" and data["commit"] == head == repo.rev("main")


def test_ff_only_refuses_a_diverged_target_and_changes_nothing(repo, vwt):
    work(repo, vwt, "feat", {"a.txt": "a\n"})
    repo.commit("main moves", {"m.txt": "m\n"})
    frozen = Frozen(repo, "feat")
    data = merge(vwt, "feat", "--ff-only", code=1)
    assert data["outcome"] == "not_fast_forward" and data["commit"] is None
    assert data["removed"] is False
    frozen.assert_unchanged()


# -- refusals ---------------------------------------------------------------------------------
def test_held_worktree_is_kept_in_use(repo, vwt, holder):
    work(repo, vwt, "feat", {"a.txt": "a\n"})
    holder(repo.bucket, "feat")
    frozen = Frozen(repo, "feat")
    data = merge(vwt, "feat", code=4)
    assert data["outcome"] == "kept_in_use"
    frozen.assert_unchanged()
    assert not repo.ref_exists("refs/vibe/reaped/feat")


def test_held_worktree_merges_with_keep_and_stays(repo, vwt, holder):
    work(repo, vwt, "feat", {"a.txt": "a\n"})
    holder(repo.bucket, "feat")
    data = merge(vwt, "feat", "--keep")
    assert data["outcome"] == "merged" and data["removed"] is False
    assert data["head"] == data["commit"] == repo.rev("main")
    assert repo.head(cwd=repo.checkout("feat")) == repo.rev("main")
    assert repo.record("feat")["base_commit"] == repo.rev("main")
    assert vwt.entry("feat")["ahead"] == 0


def test_dirty_worktree_is_kept_and_nothing_changes(repo, vwt):
    path = work(repo, vwt, "feat", {"a.txt": "a\n"})
    repo.write("wip.txt", "unsaved\n", base=path)
    frozen = Frozen(repo, "feat")
    data = merge(vwt, "feat", code=3)
    assert data["outcome"] == "kept_dirty"
    frozen.assert_unchanged()


def test_commit_option_commits_everything_first(repo, vwt):
    path = work(repo, vwt, "feat", {"a.txt": "a\n"})
    repo.write("wip.txt", "unsaved\n", base=path)
    repo.write("ignored.log", "noise\n", base=path)
    repo.write(".gitignore", "*.log\n", base=path)
    data = merge(vwt, "feat", "--commit", "--rebase")
    assert data["outcome"] == "merged"
    assert repo.git("show", "main:wip.txt") == "unsaved"
    assert not repo.git_ok("cat-file", "-e", "main:ignored.log")
    assert repo.git("log", "-1", "--format=%s", "main") == "WIP: feat"


# -- up to date -------------------------------------------------------------------------------
def test_integrated_work_is_up_to_date_and_removed_without_snapshot(repo, vwt):
    work(repo, vwt, "feat", {"a.txt": "a\n"})
    repo.git("merge", "-q", "--squash", "feat")
    repo.git("commit", "-q", "-m", "squashed by hand")
    main = repo.rev("main")
    data = merge(vwt, "feat")
    assert data["outcome"] == "up_to_date" and data["commit"] is None
    assert repo.rev("main") == main
    assert data["removed"] and data["snapshot_ref"] is None
    assert vwt.entry("feat") is None, "a clean removal frees the name"


def test_nothing_ahead_is_up_to_date_and_kept_with_keep(repo, vwt):
    vwt.new("fresh")
    data = merge(vwt, "fresh", "--keep")
    assert data["outcome"] == "up_to_date" and data["removed"] is False
    assert repo.checkout("fresh").is_dir()


def test_work_squash_merged_on_the_remote_is_up_to_date_after_the_fetch(origin_repo, vwt):
    path = work(origin_repo, vwt, "pr", {"feature.txt": "feature\n"})
    squash_merge_on_the_forge(origin_repo, "pr", path)
    main = origin_repo.rev("main")
    data = merge(vwt, "pr")
    assert data["outcome"] == "up_to_date" and data["removed"]
    assert origin_repo.rev("main") == main, "T unchanged"


# -- conflicts and the target's checkout -----------------------------------------------------
def conflicting(repo, vwt):
    work(repo, vwt, "feat", {"README.md": "# from the worktree\n"})
    repo.commit("main edits the same line", {"README.md": "# from main\n"})


@pytest.mark.parametrize("mode", ["--squash", "--rebase"])
def test_conflict_changes_nothing(repo, vwt, mode):
    conflicting(repo, vwt)
    frozen = Frozen(repo, "feat")
    data = merge(vwt, "feat", mode, code=1)
    assert data["outcome"] == "conflict" and data["conflicts"] == ["README.md"]
    assert data["commit"] is None and data["removed"] is False
    frozen.assert_unchanged()


def test_conflict_plain_output_lists_the_paths(repo, vwt):
    conflicting(repo, vwt)
    result = vwt("merge", "feat")
    assert result.code == 1 and result.out.split() == ["README.md"]
    assert "conflict" in result.err


GIT_WORDS = ("error:", "fatal:", "Entry", "uptodate", "Cannot merge", "would be overwritten by")


def target_dirty_line(vwt):
    """The one line a refused merge prints: git's own words never in it."""
    result = vwt("merge", "feat", "--json")
    assert result.code == 1 and result.json()["outcome"] == "target_dirty", str(result)
    [line] = result.err_lines
    assert line.startswith("vwt: error: main is checked out at "), line
    assert not [word for word in GIT_WORDS if word in line.removeprefix("vwt: error:")], line
    assert line.endswith("then run vwt merge feat again)"), line
    return line


def test_target_checkout_with_changes_in_the_way_is_target_dirty(repo, vwt):
    work(repo, vwt, "feat", {"README.md": "# new readme\n"})
    repo.write("README.md", "# my local edit\n")
    frozen = Frozen(repo, "feat")
    line = target_dirty_line(vwt)
    assert f"checked out at {repo.path}, where the merge would overwrite your changes to " \
           "README.md; nothing changed (commit or stash them there," in line, line
    frozen.assert_unchanged()


def test_untracked_file_in_the_way_is_target_dirty(repo, vwt):
    work(repo, vwt, "feat", {"new.txt": "from the worktree\n"})
    repo.write("new.txt", "untracked in main\n")
    frozen = Frozen(repo, "feat")
    line = target_dirty_line(vwt)
    assert "would overwrite the untracked file new.txt; nothing changed (move it away or " \
           "commit it there," in line, line
    frozen.assert_unchanged()


def test_target_dirty_names_every_kind_of_file_in_the_way_and_nothing_else(repo, vwt):
    work(repo, vwt, "feat", {"README.md": "# new readme\n", "src/app.py": "print('new')\n",
                             "lib/x.py": "x\n", "new.txt": "new\n"})
    repo.write("README.md", "# my local edit\n")
    repo.write("src/app.py", "print('mine')\n")
    repo.git("add", "src/app.py")  # staged counts too
    repo.write("lib", "a file where the merge puts a folder\n")
    repo.write("new.txt", "mine\n")
    repo.write("notes/1.txt", "an unrelated local edit\n")
    repo.write("scratch.txt", "an unrelated untracked file\n")
    frozen = Frozen(repo, "feat")
    line = target_dirty_line(vwt)
    assert ("would overwrite your changes to README.md, src/app.py and the untracked files lib, "
            "new.txt; nothing changed (commit or stash the changes and move the untracked "
            "files away there,") in line, line
    frozen.assert_unchanged()


def test_unrelated_local_changes_of_the_target_checkout_are_kept(repo, vwt):
    work(repo, vwt, "feat", {"feat.txt": "feature\n"})
    repo.write("README.md", "# my local edit\n")
    repo.write("scratch.txt", "mine\n")
    merge(vwt, "feat")
    assert (repo.path / "README.md").read_text() == "# my local edit\n"
    assert (repo.path / "scratch.txt").read_text() == "mine\n"
    assert (repo.path / "feat.txt").read_text() == "feature\n"
    assert repo.git("diff", "--cached", "--name-only") == ""


def test_target_checkout_needing_a_repository_filter_is_never_smudged(repo, vwt, sandbox):
    marker = sandbox.tmp / "filter-ran"
    repo.git("config", "filter.evil.smudge", f"sh -c 'touch {marker}; cat'")
    repo.git("config", "filter.evil.clean", "cat")
    repo.commit("attributes", {".gitattributes": "*.dat filter=evil\n"})
    work(repo, vwt, "feat", {"data.dat": "payload\n"})
    marker.unlink(missing_ok=True)
    frozen = Frozen(repo, "feat")
    data = merge(vwt, "feat", code=1)
    assert data["outcome"] == "target_dirty" and not marker.exists()
    frozen.assert_unchanged()
    repo.git("switch", "-q", "--detach")
    assert merge(vwt, "feat")["outcome"] == "merged", "with main not checked out, it lands"
    assert not marker.exists()


def test_target_not_checked_out_is_updated_alone(repo, vwt):
    work(repo, vwt, "feat", {"feat.txt": "feature\n"})
    repo.git("switch", "-q", "-c", "elsewhere")
    before = tree_files(repo.path)
    data = merge(vwt, "feat")
    assert repo.rev("main") == data["commit"]
    assert tree_files(repo.path) == before and repo.current_branch() == "elsewhere"


def test_target_moved_between_compute_and_update_changes_nothing(repo, vwt):
    from vibe_worktree.core import git as g
    from vibe_worktree.core.integration import read_tips
    from vibe_worktree.core.layout import Root
    from vibe_worktree.landing import merge as landing_merge
    from vibe_worktree.lifecycle.remove import target_for
    from vibe_worktree.lifecycle.worktrees import load_entry

    work(repo, vwt, "feat", {"feat.txt": "feature\n"})
    root = Root.at(str(repo.sandbox.vibe_home))
    claim = root.claim(repo.bucket, "feat")
    target = target_for(load_entry(claim))
    tips = read_tips(g.Git(str(repo.path)))
    stale = tips.commits[0]
    landed = repo.rev("feat")
    repo.commit("someone else lands first", {"first.txt": "first\n"})
    frozen = Frozen(repo, "feat")
    outcome = landing_merge._update_target(target, tips, stale, landed, "feat")
    assert outcome is not None and outcome[0] == "target_moved"
    frozen.assert_unchanged()


# -- options ----------------------------------------------------------------------------------
def test_into_names_another_target(repo, vwt):
    repo.git("branch", "release")
    work(repo, vwt, "feat", {"feat.txt": "feature\n"})
    main = repo.rev("main")
    data = merge(vwt, "feat", "--into", "release", "--no-hooks", "--no-fetch")
    assert data["into"] == "release" and repo.rev("release") == data["commit"]
    assert repo.rev("main") == main


def test_keep_moves_a_squashed_worktree_onto_the_landed_commit(repo, vwt):
    work(repo, vwt, "feat", {"a.txt": "a\n", "b.txt": "b\n"})
    old_head = repo.rev("feat")
    data = merge(vwt, "feat", "--keep")
    assert data["removed"] is False and data["snapshot_ref"] == "refs/vibe/reaped/feat"
    assert repo.rev("feat") == repo.rev("main") == data["head"]
    assert repo.rev("refs/vibe/reaped/feat^") == old_head, "pre-merge commits in the snapshot"
    entry = vwt.entry("feat")
    assert entry["ahead"] == 0 and entry["changes"] == 0


def test_unknown_name_is_an_error_with_empty_stdout(repo, vwt):
    result = vwt("merge", "nope", "--json")
    assert result.code == 1 and result.out == "" and "nope" in result.err


def test_no_target_branch_is_an_error(make_repo, vwt, sandbox):
    odd = make_repo("odd")
    odd.git("branch", "-m", "main", "trunk")
    sandbox.default_cwd = odd.path
    work(odd, vwt, "feat", {"a.txt": "a\n"})
    result = vwt("merge", "feat", "--json")
    assert result.code == 1 and "--into" in result.err


# -- concurrency ------------------------------------------------------------------------------
def test_two_merges_into_one_target_at_once_both_land(repo, vwt):
    """Merges from one repository take turns (a landing lock), so the second reads the
    target after the first landed: no target_moved, no commit lost."""
    work(repo, vwt, "one", {"one.txt": "1\n"})
    work(repo, vwt, "two", {"two.txt": "2\n"})
    procs = [vwt.spawn("merge", name, "--json") for name in ("one", "two")]
    outcomes = []
    for proc in procs:
        out, _err = proc.communicate(timeout=60)
        outcomes.append((proc.returncode, json.loads(out)["outcome"]))
    assert outcomes == [(0, "merged"), (0, "merged")], outcomes
    assert repo.git("show", "main:one.txt") == "1" and repo.git("show", "main:two.txt") == "2"
    assert not repo.checkout("one").exists() and not repo.checkout("two").exists()


def test_a_file_folder_conflict_lists_the_real_path(repo, vwt):
    repo.commit("a file", {"df": "a file\n"})
    work(repo, vwt, "feat", {"df": "edited in the worktree\n"})
    (repo.path / "df").unlink()
    repo.commit("main turns the file into a folder", {"df/x": "now a folder\n"})
    data = merge(vwt, "feat", code=1)
    assert data["outcome"] == "conflict" and data["conflicts"] == ["df"], data
