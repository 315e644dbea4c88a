"""`vwt list`, `vwt path`, `vwt status` (SPEC §4)."""

from __future__ import annotations

import shutil

from conftest import assert_error, days_ago

LIST_KEYS = {"name", "branch", "path", "bucket", "repo_root", "base_commit", "branch_created",
             "claimed_at", "state", "held", "holders", "changes", "ahead", "clean"}
STATUS_KEYS = {"name", "path", "branch", "branch_created", "base_commit", "changes", "untracked",
               "ahead", "clean", "held", "holders"}


def by_name(entries):
    return {e["name"]: e for e in entries}


def test_empty_repository_lists_nothing(repo, vwt):
    assert vwt.list() == []


def test_fresh_worktree_is_ready_and_clean(repo, vwt):
    created = vwt.new("fresh")
    [entry] = vwt.list()
    assert entry.keys() >= LIST_KEYS
    assert entry["name"] == "fresh"
    assert entry["state"] == "ready"
    assert entry["path"] == created["path"]
    assert entry["bucket"] == repo.bucket
    assert entry["repo_root"] == str(repo.path)
    assert entry["base_commit"] == created["base_commit"]
    assert entry["branch"] == "fresh"
    assert entry["branch_created"] is True
    assert entry["claimed_at"] == repo.record("fresh")["claimed_at"]
    assert entry["changes"] == 0
    assert entry["ahead"] == 0
    assert entry["clean"] is True
    assert entry["held"] is False
    assert entry["holders"] == 0


def test_changes_count_every_untracked_file(repo, vwt):
    path = repo.checkout(vwt.new("busy")["name"])
    repo.write("README.md", "changed\n", base=path)
    repo.write("newdir/a.txt", base=path)
    repo.write("newdir/b.txt", base=path)
    entry = vwt.entry("busy")
    assert entry["changes"] == 3
    assert entry["ahead"] == 0
    assert entry["clean"] is False


def test_commits_ahead_of_base_make_it_not_clean(repo, vwt):
    path = repo.checkout(vwt.new("ahead")["name"])
    repo.commit("one", {"a.txt": "1\n"}, cwd=path)
    repo.commit("two", {"b.txt": "2\n"}, cwd=path)
    entry = vwt.entry("ahead")
    assert entry["changes"] == 0
    assert entry["ahead"] == 2
    assert entry["clean"] is False


def test_no_status_leaves_status_fields_null(repo, vwt):
    path = repo.checkout(vwt.new("quick")["name"])
    repo.write("dirty.txt", base=path)
    [entry] = vwt.list("--no-status")
    assert entry["state"] == "ready"
    assert entry["changes"] is None
    assert entry["ahead"] is None
    assert entry["clean"] is None


def test_states_reserved_missing_snapshot_broken(repo, vwt):
    vwt.new("ok")
    # reserved: a record without base_commit
    repo.write_record("pending", repo.vibe_record("pending", "vibe/pending", base_commit=None))
    # missing: record whose checkout vanished
    vwt.new("gone")
    shutil.rmtree(repo.checkout("gone"))
    # snapshot: recovery record only
    dirty = vwt.new("saved")["path"]
    repo.write("wip.txt", "wip\n", base=repo.checkout("saved"))
    assert vwt("rm", "saved", "-y").code == 0
    # broken: unreadable record
    vwt.new("corrupt")
    repo.record_path("corrupt").write_text("{ not json")

    entries = by_name(vwt.list())
    assert entries["ok"]["state"] == "ready"
    assert entries["pending"]["state"] == "reserved"
    assert entries["gone"]["state"] == "missing"
    assert entries["saved"]["state"] == "snapshot"
    assert entries["corrupt"]["state"] == "broken"
    for name in ("pending", "gone", "saved", "corrupt"):
        e = entries[name]
        assert (e["changes"], e["ahead"], e["clean"]) == (None, None, None), name
    assert entries["saved"]["path"] == dirty


def test_held_worktree_reports_live_holders(repo, vwt, holder):
    vwt.new("busy")
    h = holder(repo.bucket, "busy")
    entry = vwt.entry("busy")
    assert entry["held"] is True
    assert entry["holders"] == 1
    h.kill()
    entry = vwt.entry("busy")
    assert entry["held"] is False
    assert entry["holders"] == 0


def test_list_is_per_repository_and_all_covers_every_repository(make_repo, vwt, sandbox):
    a = make_repo("alpha")
    b = make_repo("beta")
    vwt.new("in-a", cwd=a.path)
    vwt.new("in-b", cwd=b.path)
    assert [e["name"] for e in vwt.list(cwd=a.path)] == ["in-a"]
    every = by_name(vwt.list("--all", cwd=a.path))
    assert set(every) == {"in-a", "in-b"}
    assert every["in-a"]["bucket"] == a.bucket
    assert every["in-b"]["bucket"] == b.bucket
    assert every["in-b"]["repo_root"] == str(b.path)
    outside = by_name(vwt.list(cwd=sandbox.tmp / "outside"))
    assert set(outside) == {"in-a", "in-b"}


def _token_starts(line):
    return {i for i, ch in enumerate(line) if ch != " " and (i == 0 or line[i - 1] == " ")}


def test_plain_list_is_an_aligned_table(repo, vwt):
    vwt.new("a")
    vwt.new("much-longer-name", "-b", "topic/much-longer-branch")
    result = vwt.ok("list")
    assert not result.out.lstrip().startswith(("[", "{"))
    lines = result.out.splitlines()
    short = [ln for ln in lines if "a" in ln.split() or any(t.endswith("/a") for t in ln.split())]
    long = [ln for ln in lines if "much-longer-name" in ln]
    assert len(short) == 1 and len(long) == 1, result.out
    # an aligned table: besides the first, some column starts at the same offset in both rows
    shared = (_token_starts(short[0]) & _token_starts(long[0])) - {0}
    assert shared, f"rows are not aligned:\n{short[0]}\n{long[0]}"


def test_list_paths_are_absolute(repo, vwt):
    for name in ("b", "a", "c"):
        vwt.new(name)
    entries = vwt.list()
    assert {e["name"] for e in entries} == {"a", "b", "c"}
    assert all(e["path"].startswith("/") for e in entries)


def test_old_claimed_at_is_reported_as_recorded(repo, vwt):
    vwt.new("old")
    stamp = days_ago(3)
    repo.edit_record("old", claimed_at=stamp)
    assert vwt.entry("old")["claimed_at"] == stamp


# --- path -------------------------------------------------------------------------------------


def test_path_prints_the_checkout_path(repo, vwt):
    vwt.new("where")
    result = vwt.ok("path", "where")
    assert result.out.strip() == str(repo.checkout("where"))


def test_path_of_unknown_name_fails(repo, vwt):
    assert_error(vwt("path", "nothing"), 1)


def test_path_looks_only_in_the_current_repository(make_repo, vwt):
    a = make_repo("alpha")
    b = make_repo("beta")
    vwt.new("only-a", cwd=a.path)
    assert vwt("path", "only-a", cwd=b.path).code == 1
    assert vwt.ok("path", "only-a", cwd=a.path).out.strip() == str(a.checkout("only-a"))


# --- status -----------------------------------------------------------------------------------


def test_status_of_a_clean_worktree(repo, vwt):
    created = vwt.new("st")
    status = vwt.ok("status", "st", "--json").json()
    assert status.keys() >= STATUS_KEYS
    assert status["name"] == "st"
    assert status["path"] == created["path"]
    assert status["branch"] == "st"
    assert status["branch_created"] is True
    assert status["base_commit"] == created["base_commit"]
    assert (status["changes"], status["untracked"], status["ahead"]) == (0, 0, 0)
    assert status["clean"] is True
    assert status["held"] is False
    assert status["holders"] == 0


def test_status_counts_changes_untracked_and_ahead(repo, vwt):
    path = repo.checkout(vwt.new("st")["name"])
    repo.commit("ahead", {"c.txt": "c\n"}, cwd=path)
    repo.write("README.md", "modified\n", base=path)
    (path / "src" / "app.py").unlink()
    repo.write("new1.txt", base=path)
    repo.write("deep/new2.txt", base=path)
    status = vwt.ok("status", "st", "--json").json()
    assert status["changes"] == 4
    assert status["untracked"] == 2
    assert status["ahead"] == 1
    assert status["clean"] is False


def test_status_reports_a_foreign_holder(repo, vwt, holder):
    vwt.new("st")
    holder(repo.bucket, "st")
    status = vwt.ok("status", "st", "--json").json()
    assert status["held"] is True
    assert status["holders"] == 1


def test_status_of_unknown_name_fails(repo, vwt):
    assert_error(vwt("status", "ghost", "--json"), 1)


def test_holders_counts_each_live_holder(repo, vwt, holder):
    vwt.new("shared")
    holder(repo.bucket, "shared", "vibe-a")
    dead = holder(repo.bucket, "shared", "vibe-b")
    holder(repo.bucket, "shared", "vibe-c")
    dead.kill()
    entry = vwt.entry("shared")
    assert entry["holders"] == 2
    assert entry["held"] is True


def test_repositories_with_the_same_folder_name_get_distinct_buckets(make_repo, vwt):
    first = make_repo("one/app")
    second = make_repo("two/app")
    a = vwt.new("same", cwd=first.path)
    b = vwt.new("same", cwd=second.path)
    assert a["bucket"] != b["bucket"]
    assert a["bucket"].startswith("app-") and b["bucket"].startswith("app-")
    assert {(e["bucket"], e["name"]) for e in vwt.list("--all")} == {
        (a["bucket"], "same"),
        (b["bucket"], "same"),
    }
