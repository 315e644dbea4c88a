"""`vwt sync NAME` (SPEC §8): rebase onto the target inside the worktree."""

from __future__ import annotations

import pytest

from conftest import tree_files

SYNC_KEYS = {"name", "outcome", "onto", "head", "conflicts"}


def sync(vwt, *args, code=0):
    result = vwt("sync", *args, "--json")
    assert result.code == code, str(result)
    data = result.json()
    assert set(data) == SYNC_KEYS
    return data


def work(repo, vwt, name, files):
    path = vwt.new(name)["path"]
    for i, (rel, text) in enumerate(files.items()):
        repo.commit(f"{name}: change {i}", {rel: text}, cwd=path)
    return path


def frozen(repo, name):
    out = repo.git("for-each-ref", "--format=%(refname) %(objectname)")
    return (out, tree_files(repo.checkout(name)), repo.porcelain(repo.checkout(name)),
            repo.record(name))


def test_sync_rebases_own_commits_and_moves_the_base(repo, vwt):
    path = work(repo, vwt, "feat", {"a.txt": "a\n", "b.txt": "b\n"})
    repo.commit("main moves", {"m.txt": "m\n"})
    data = sync(vwt, "feat")
    assert data["outcome"] == "synced" and data["onto"] == "main"
    assert data["head"] == repo.head(cwd=path) == repo.rev("feat")
    assert repo.rev("feat~2") == repo.rev("main")
    assert (repo.checkout("feat") / "m.txt").is_file() and repo.porcelain(path) == ""
    assert repo.record("feat")["base_commit"] == repo.rev("main")
    assert vwt.entry("feat")["ahead"] == 2


def test_sync_when_already_on_top_is_up_to_date_and_changes_nothing(repo, vwt):
    work(repo, vwt, "feat", {"a.txt": "a\n"})
    before = frozen(repo, "feat")
    data = sync(vwt, "feat")
    assert data["outcome"] == "up_to_date" and data["conflicts"] == []
    assert frozen(repo, "feat") == before


def untouched(repo, name):
    """Everything an `up_to_date` sync must leave alone, down to the record's bytes and
    mtime: every ref with its reflog, the files, the index and the record."""
    record = repo.record_path(name)
    refs = repo.git("for-each-ref", "--format=%(refname) %(objectname)")
    reflogs = [repo.git("reflog", "show", "--format=%H %gs", ref, check=False)
               for ref in refs.split() if ref.startswith("refs/")]
    return (frozen(repo, name), reflogs, record.read_bytes(), record.stat().st_mtime_ns)


def merge_main_by_hand(repo, path, how):
    if how == "merge commit":
        repo.git("merge", "-q", "--no-edit", "main", cwd=path)
    elif how == "fast-forward":
        repo.git("merge", "-q", "--ff-only", "main", cwd=path)
    else:
        repo.git("rebase", "-q", "main", cwd=path)


@pytest.mark.parametrize("how", ["merge commit", "fast-forward", "rebase"])
def test_up_to_date_after_the_target_came_in_by_hand_changes_nothing(repo, vwt, how):
    path = vwt.new("feat")["path"]
    if how != "fast-forward":
        repo.commit("feat work", {"a.txt": "a\n"}, cwd=path)
    base = repo.record("feat")["base_commit"]
    repo.commit("main moves", {"m.txt": "m\n"})
    merge_main_by_hand(repo, path, how)
    before = untouched(repo, "feat")
    data = sync(vwt, "feat")
    assert data["outcome"] == "up_to_date" and data["head"] == repo.rev("feat")
    assert untouched(repo, "feat") == before
    assert repo.record("feat")["base_commit"] == base


def test_sync_killed_before_its_record_is_finished_by_the_next_sync(repo, vwt):
    """Killed after it moved the branch, before the record: the branch's reflog shows vwt's
    own move from the record's base, so the next sync finishes that sync (`synced`)."""
    path = work(repo, vwt, "feat", {"a.txt": "a\n"})
    repo.commit("main moves", {"m.txt": "m\n"})
    base = repo.record("feat")["base_commit"]
    killed = vwt("sync", "feat", env_extra={"VWT_CRASH_AT": "sync.moved"})
    assert killed.code == -9, str(killed)
    assert repo.rev("feat~1") == repo.rev("main") and repo.record("feat")["base_commit"] == base
    data = sync(vwt, "feat")
    assert data["outcome"] == "synced" and data["head"] == repo.rev("feat")
    assert repo.record("feat")["base_commit"] == repo.rev("main")
    assert repo.porcelain(path) == "" and vwt.entry("feat")["ahead"] == 1
    before = untouched(repo, "feat")
    assert sync(vwt, "feat")["outcome"] == "up_to_date"
    assert untouched(repo, "feat") == before


def test_sync_conflict_is_aborted_and_changes_nothing(repo, vwt):
    work(repo, vwt, "feat", {"README.md": "# worktree\n"})
    repo.commit("main", {"README.md": "# main\n"})
    before = frozen(repo, "feat")
    data = sync(vwt, "feat", code=1)
    assert data["outcome"] == "conflict" and data["conflicts"] == ["README.md"]
    assert frozen(repo, "feat") == before


def test_sync_of_a_dirty_worktree_is_kept_dirty(repo, vwt):
    path = work(repo, vwt, "feat", {"a.txt": "a\n"})
    repo.commit("main moves", {"m.txt": "m\n"})
    repo.write("wip.txt", "unsaved\n", base=path)
    before = frozen(repo, "feat")
    data = sync(vwt, "feat", code=3)
    assert data["outcome"] == "kept_dirty"
    assert frozen(repo, "feat") == before


def test_sync_onto_the_fetched_remote_branch_when_it_is_ahead(origin_repo, vwt):
    work(origin_repo, vwt, "feat", {"a.txt": "a\n"})
    upstream = origin_repo.upstream.advance("upstream work")
    data = sync(vwt, "feat")
    assert data["outcome"] == "synced" and data["onto"] == "origin/main"
    assert origin_repo.rev("feat~1") == upstream
    assert origin_repo.record("feat")["base_commit"] == upstream


def test_sync_onto_names_another_branch(repo, vwt):
    repo.git("branch", "release")
    work(repo, vwt, "feat", {"a.txt": "a\n"})
    repo.commit("release work", {"r.txt": "r\n"})
    repo.git("branch", "-f", "release", "main")
    repo.git("reset", "-q", "--hard", "HEAD~1")
    data = sync(vwt, "feat", "--onto", "release", "--no-fetch")
    assert data["onto"] == "release" and repo.rev("feat~1") == repo.rev("release")


def test_a_file_folder_conflict_lists_the_real_path(repo, vwt):
    repo.commit("a file", {"df": "a file\n"})
    work(repo, vwt, "feat", {"df": "edited in the worktree\n"})
    (repo.path / "df").unlink()
    repo.commit("main turns the file into a folder", {"df/x": "now a folder\n"})
    data = sync(vwt, "feat", code=1)
    assert data["outcome"] == "conflict" and data["conflicts"] == ["df"], data
