"""`vwt conflicts` (SPEC §13): where parallel sessions will conflict, before they do."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from conftest import assert_error, make_racily_clean
from vibe_worktree.core import index_cache

LINES = "".join(f"line {i}\n" for i in range(1, 21))


@pytest.fixture
def story(repo):
    """The repository with a 20-line file that sessions edit in different places."""
    repo.commit("story", {"story.txt": LINES, ".gitignore": "*.log\nbuild/\n"})
    return repo


def worktree(vwt, name: str) -> Path:
    return Path(vwt.new(name)["path"])


def edit_line(path: Path, number: int, text: str) -> None:
    lines = path.read_text().splitlines(keepends=True)
    lines[number - 1] = f"{text}\n"
    path.write_text("".join(lines))


def commit_all(repo, where: Path, message: str = "work") -> str:
    repo.git("add", "-A", cwd=where)
    repo.git("commit", "-qm", message, cwd=where)
    return repo.head(cwd=where)


def conflicts(vwt, *args: str, **kw: Any) -> dict[str, Any]:
    return vwt.ok("conflicts", *args, "--json", **kw).json()


def rows(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {w["name"]: w for w in doc["worktrees"]}


def pairs(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(p["a"], p["b"]): p for p in doc["pairs"]}


# -- between sessions ---------------------------------------------------------------------------

def test_same_line_changed_differently_is_a_conflicting_pair(story, vwt):
    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    edit_line(a / "story.txt", 3, "alpha's line 3")
    edit_line(b / "story.txt", 3, "beta's line 3")
    commit_all(story, b)  # one committed, one not: both count as work
    doc = conflicts(vwt)
    assert doc["pairs"] == [{"bucket": story.bucket, "a": "alpha", "b": "beta",
                             "overlap": ["story.txt"], "conflicts": ["story.txt"]}]
    assert rows(doc)["alpha"]["changed"] == 1 and rows(doc)["beta"]["changed"] == 1


def test_same_file_in_different_regions_overlaps_without_conflict(story, vwt):
    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    edit_line(a / "story.txt", 2, "alpha at the top")
    edit_line(b / "story.txt", 19, "beta at the bottom")
    pair = pairs(conflicts(vwt))[("alpha", "beta")]
    assert pair["overlap"] == ["story.txt"] and pair["conflicts"] == []


def test_identical_change_overlaps_without_conflict(story, vwt):
    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    for where in (a, b):
        edit_line(where / "story.txt", 7, "the same fix")
    commit_all(story, a)
    pair = pairs(conflicts(vwt))[("alpha", "beta")]
    assert pair["overlap"] == ["story.txt"] and pair["conflicts"] == []


def test_disjoint_files_make_no_pair(story, vwt):
    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    story.write("src/app.py", "print('alpha')\n", base=a)
    story.write("README.md", "# beta\n", base=b)
    doc = conflicts(vwt)
    assert doc["pairs"] == []
    assert {n: r["changed"] for n, r in rows(doc).items()} == {"alpha": 1, "beta": 1}
    assert vwt.ok("conflicts").out == "no collisions\n"


def test_untracked_and_uncommitted_changes_are_part_of_the_work(story, vwt):
    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    story.write("docs/new.md", "alpha's new page\n", base=a)  # untracked
    (a / "README.md").unlink()  # an uncommitted deletion
    story.write("staged.txt", "staged\n", base=a)
    story.git("add", "staged.txt", cwd=a)
    story.write("docs/new.md", "beta's new page\n", base=b)
    commit_all(story, b)
    doc = conflicts(vwt)
    assert rows(doc)["alpha"]["changed"] == 3  # docs/new.md, README.md, staged.txt
    assert pairs(doc)[("alpha", "beta")]["conflicts"] == ["docs/new.md"]  # add/add
    assert story.porcelain(a).count("\n") == 3, "the worktree's own state is untouched"


def test_same_size_rewrite_in_the_index_clock_tick_is_read_as_changed(story, vwt):
    """Git tells such a racily clean file by the index file's own mtime: the copy of the
    index that conflicts and snapshot stage into must keep it, or the old content is used."""
    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    make_racily_clean(story, b, "README.md", "# beta\n")  # the same size as "# demo\n"
    story.write("README.md", "# alpha\n", base=a)
    story.write("other.txt", "so that alpha's index is copied too\n", base=a)
    doc = conflicts(vwt)
    assert rows(doc)["beta"]["changed"] == 1
    assert pairs(doc)[("alpha", "beta")]["conflicts"] == ["README.md"]
    snap = vwt.ok("snapshot", "beta", "--json").json()
    assert story.git("show", f"{snap['commit']}:README.md") == "# beta"


def test_ignored_files_are_left_out(story, vwt):
    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    for where, who in ((a, "alpha"), (b, "beta")):
        story.write("debug.log", f"{who}\n", base=where)
        story.write("build/out.bin", f"{who}\n", base=where)
    doc = conflicts(vwt)
    assert doc["pairs"] == []
    assert {r["changed"] for r in doc["worktrees"]} == {0}


def test_rename_counts_as_both_paths_and_merges_with_an_edit(story, vwt):
    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    story.git("mv", "story.txt", "tale.txt", cwd=a)
    commit_all(story, a)
    edit_line(b / "story.txt", 5, "beta edits the old name")
    doc = conflicts(vwt)
    assert rows(doc)["alpha"]["changed"] == 2
    assert pairs(doc)[("alpha", "beta")] == {
        "bucket": story.bucket, "a": "alpha", "b": "beta", "overlap": ["story.txt"],
        "conflicts": []}


def test_pairs_are_found_among_many_worktrees_and_ordered(story, vwt):
    names = [f"w{i}" for i in range(6)]
    paths = {n: worktree(vwt, n) for n in reversed(names)}
    for n in names:
        story.write(f"own/{n}.txt", f"{n}\n", base=paths[n])
    edit_line(paths["w4"] / "story.txt", 1, "w4")
    edit_line(paths["w1"] / "story.txt", 1, "w1")
    edit_line(paths["w5"] / "story.txt", 20, "w5")
    doc = conflicts(vwt)
    assert [w["name"] for w in doc["worktrees"]] == names
    assert [(p["a"], p["b"], p["conflicts"]) for p in doc["pairs"]] == [
        ("w1", "w4", ["story.txt"]), ("w1", "w5", []), ("w4", "w5", [])]


# -- against the target --------------------------------------------------------------------------

def test_target_conflicts_appear_once_a_commit_lands_on_the_target(story, vwt):
    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    edit_line(a / "story.txt", 10, "alpha's 10")
    commit_all(story, a)
    edit_line(b / "story.txt", 10, "beta's 10")  # uncommitted
    before = conflicts(vwt)
    assert [r["target_conflicts"] for r in before["worktrees"]] == [[], []]
    edit_line(story.path / "story.txt", 10, "main's 10")
    commit_all(story, story.path, "lands on main")
    doc = conflicts(vwt)
    assert rows(doc)["alpha"]["target"] == "main"
    assert rows(doc)["alpha"]["target_conflicts"] == ["story.txt"]
    assert rows(doc)["beta"]["target_conflicts"] == ["story.txt"]
    plain = vwt.ok("conflicts").out.splitlines()
    assert plain[0] == "conflict  alpha with main: story.txt"
    assert "conflict  alpha and beta: story.txt" in plain


def test_target_changes_elsewhere_are_not_merged_against(story, vwt, monkeypatch):
    """Paths that miss everything the target changed need no merge, and none is made."""
    from vibe_worktree import Worktrees
    from vibe_worktree.core import git as g

    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    edit_line(a / "story.txt", 1, "alpha")
    story.write("README.md", "# beta\n", base=b)
    story.commit("main moves", {"notes/elsewhere.txt": "x\n", "story.txt": LINES + "more\n"})
    merged: list[tuple[str, str]] = []
    real = g.merge_many

    def recording(git: g.Git, merges: list[tuple[str, str]]) -> list[Any]:
        merged.extend(merges)
        return real(git, merges)

    monkeypatch.setattr(g, "merge_many", recording)
    monkeypatch.setenv("VIBE_HOME", str(story.sandbox.vibe_home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(story.sandbox.gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    result = Worktrees(cwd=str(story.path)).conflicts()
    assert [(w.name, w.target_conflicts) for w in result.worktrees] == [
        ("alpha", ()), ("beta", ())]
    main = story.rev("main")
    assert [m for m in merged if m[1] == main] and len(merged) == 1, \
        "only alpha, whose story.txt main changed too, is merged against main"


def test_no_target_branch_gives_null_target_and_still_pairs(make_repo, vwt, sandbox):
    repo = make_repo("trunkless")
    repo.git("branch", "-m", "main", "trunk")
    sandbox.default_cwd = repo.path
    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    repo.write("README.md", "# alpha\n", base=a)
    repo.write("README.md", "# beta\n", base=b)
    doc = conflicts(vwt)
    assert [(w["target"], w["target_conflicts"]) for w in doc["worktrees"]] == [
        (None, []), (None, [])]
    assert doc["pairs"][0]["conflicts"] == ["README.md"]


# -- scope ---------------------------------------------------------------------------------------

def test_all_repositories_are_read_but_never_paired_with_each_other(make_repo, vwt, sandbox):
    one, two = make_repo("one"), make_repo("two")
    for repo in (one, two):
        for name in ("alpha", "beta"):
            where = Path(vwt.new(name, cwd=repo.path)["path"])
            repo.write("README.md", f"# {name}\n", base=where)
    doc = conflicts(vwt, "--all", cwd=sandbox.tmp / "outside")
    assert [(w["bucket"], w["name"]) for w in doc["worktrees"]] == sorted(
        (r.bucket, n) for r in (one, two) for n in ("alpha", "beta"))
    assert sorted((p["bucket"], p["a"], p["b"]) for p in doc["pairs"]) == sorted(
        (r.bucket, "alpha", "beta") for r in (one, two))
    only_one = conflicts(vwt, cwd=one.path)
    assert {w["bucket"] for w in only_one["worktrees"]} == {one.bucket}
    plain = vwt.ok("conflicts", "--all", cwd=sandbox.tmp / "outside").out
    assert "conflict  one/alpha and one/beta: README.md" in plain


def test_name_shows_its_own_target_conflicts_and_its_pairs(story, vwt):
    a, b, c = worktree(vwt, "alpha"), worktree(vwt, "beta"), worktree(vwt, "gamma")
    for where in (a, b, c):
        edit_line(where / "story.txt", 4, f"{where.name}'s 4")
    doc = conflicts(vwt, "gamma")
    assert [w["name"] for w in doc["worktrees"]] == ["gamma"]
    assert [(p["a"], p["b"]) for p in doc["pairs"]] == [("alpha", "gamma"), ("beta", "gamma")]


def test_path_selects_who_changes_a_file_or_a_folder(story, vwt):
    a, b, c = worktree(vwt, "alpha"), worktree(vwt, "beta"), worktree(vwt, "gamma")
    story.write("src/app.py", "print('alpha')\n", base=a)
    story.write("src/app.py", "print('beta')\n", base=b)
    story.write("src/util.py", "gamma = 1\n", base=c)
    story.write("src/util.py", "beta = 1\n", base=b)
    story.write("README.md", "# gamma\n", base=c)
    by_file = conflicts(vwt, "--path", "src/app.py")
    assert [w["name"] for w in by_file["worktrees"]] == ["alpha", "beta"]
    assert [(p["a"], p["b"]) for p in by_file["pairs"]] == [("alpha", "beta")]
    by_folder = conflicts(vwt, "--path", "src/")
    assert [w["name"] for w in by_folder["worktrees"]] == ["alpha", "beta", "gamma"]
    assert [(p["a"], p["b"]) for p in by_folder["pairs"]] == [("alpha", "beta"),
                                                               ("beta", "gamma")]
    absolute = conflicts(vwt, "--path", str(c / "README.md"), cwd=c)
    assert [w["name"] for w in absolute["worktrees"]] == ["gamma"] and absolute["pairs"] == []
    nobody = conflicts(vwt, "--path", "notes")
    assert nobody == {"worktrees": [], "pairs": []}
    assert_error(vwt("conflicts", "--path", "../elsewhere"), 2)


def test_check_exits_one_on_a_conflict_and_still_prints_the_document(story, vwt):
    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    edit_line(a / "story.txt", 1, "alpha")
    edit_line(b / "story.txt", 20, "beta")
    assert vwt("conflicts", "--check").code == 0, "an overlap alone is not a conflict"
    assert vwt.ok("conflicts").out == "overlap   alpha and beta: story.txt (merges cleanly)\n"
    edit_line(b / "story.txt", 1, "beta too")
    checked = vwt("conflicts", "--check", "--json")
    assert checked.code == 1
    assert checked.json()["pairs"][0]["conflicts"] == ["story.txt"]
    assert vwt("conflicts").code == 0, "without --check a conflict is not a failure"


def test_unknown_name_and_outside_a_repository_are_errors(repo, vwt, sandbox):
    assert_error(vwt("conflicts", "nobody"), 1)
    assert_error(vwt("conflicts", cwd=sandbox.tmp / "outside"), 1)
    assert_error(vwt("conflicts", "x", "--all"), 2)
    assert vwt.ok("conflicts", "--all", "--json", cwd=sandbox.tmp / "outside").json() == {
        "worktrees": [], "pairs": []}


# -- it changes nothing ---------------------------------------------------------------------------

def state_of(*roots: Path) -> dict[str, tuple[int, int, bytes | None]]:
    """Every file and folder under `roots` (objects excluded, and the home's cache of
    refreshed index copies, which is vwt's own): mode, mtime and bytes."""
    seen: dict[str, tuple[int, int, bytes | None]] = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames
                           if not (d == "objects" and dirpath.endswith(".git"))
                           and not (d == index_cache.FOLDER and Path(dirpath) == root)]
            for name in dirnames + filenames:
                p = Path(dirpath) / name
                st = p.lstat()
                data = p.read_bytes() if p.is_file() and not p.is_symlink() else None
                seen[str(p)] = (st.st_mode, st.st_mtime_ns, data)
    return seen


def test_conflicts_changes_no_file_index_ref_or_record(story, vwt, holder):
    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    edit_line(a / "story.txt", 3, "alpha")
    story.write("new.txt", "untracked\n", base=a)
    story.write("staged.txt", "staged\n", base=b)
    story.git("add", "staged.txt", cwd=b)
    edit_line(b / "story.txt", 3, "beta")
    edit_line(story.path / "story.txt", 3, "main")
    commit_all(story, story.path)
    story.porcelain(a), story.porcelain(b)  # let git settle the indexes before the picture
    hold = holder(story.bucket, "alpha")
    before = state_of(story.path, story.sandbox.vibe_home)
    doc = conflicts(vwt)
    assert doc["pairs"][0]["conflicts"] == ["story.txt"], "it did read both works"
    assert vwt("conflicts", "alpha", "--path", "story.txt", "--check", cwd=b).code == 1
    assert state_of(story.path, story.sandbox.vibe_home) == before
    assert hold.alive and story.live_holders("alpha") == [hold.path]


COMMITTER = textwrap.dedent("""\
    import subprocess, sys
    where, rounds = sys.argv[1], int(sys.argv[2])
    failures = []
    for i in range(rounds):
        with open(f"{where}/story.txt", "a") as fh:
            fh.write(f"round {i}\\n")
        with open(f"{where}/round-{i}.txt", "w") as fh:
            fh.write("x\\n")
        for args in (["add", "-A"], ["commit", "-qm", f"round {i}"]):
            run = subprocess.run(["git", *args], cwd=where, capture_output=True, text=True)
            if run.returncode:
                failures.append(run.stderr.strip())
    print("\\n".join(failures))
    """)


def test_a_session_commits_in_its_worktree_while_conflicts_runs(story, vwt, holder, sandbox):
    busy, other = worktree(vwt, "busy"), worktree(vwt, "other")
    edit_line(other / "story.txt", 20, "other")
    hold = holder(story.bucket, "busy")
    rounds = 25
    committer = subprocess.Popen([sys.executable, "-c", COMMITTER, str(busy), str(rounds)],
                                 env=vwt.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
    runs = 0
    while committer.poll() is None or runs == 0:
        result = vwt("conflicts", "--json")
        assert result.code == 0, str(result)
        assert {w["name"] for w in result.json()["worktrees"]} == {"busy", "other"}
        runs += 1
    out, err = committer.communicate(timeout=60)
    assert committer.returncode == 0, err
    assert out.strip() == "", f"the session's own git commands failed: {out}"
    assert story.git("rev-list", "--count", "HEAD", cwd=busy) == str(4 + rounds)
    assert story.porcelain(busy) == ""
    assert hold.alive
    final = conflicts(vwt)
    assert rows(final)["busy"]["changed"] == rounds + 1
    assert pairs(final)[("busy", "other")]["conflicts"] == ["story.txt"]


def test_held_worktree_is_read_like_any_other(story, vwt, holder):
    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    edit_line(a / "story.txt", 9, "alpha")
    edit_line(b / "story.txt", 9, "beta")
    holds = [holder(story.bucket, "alpha"), holder(story.bucket, "beta", "vibe-session-2")]
    doc = conflicts(vwt)
    assert pairs(doc)[("alpha", "beta")]["conflicts"] == ["story.txt"]
    assert all(r["error"] is None for r in doc["worktrees"])
    assert all(h.alive for h in holds)


# -- what cannot be read ------------------------------------------------------------------------

def test_a_file_needing_a_repository_filter_is_an_error_and_left_out(story, vwt, sandbox):
    marker = sandbox.tmp / "filter-ran"
    script = sandbox.tmp / "clean.sh"
    script.write_text(f"#!/bin/sh\ntouch '{marker}'\ncat\n")
    script.chmod(0o755)
    story.commit("attributes", {".gitattributes": "*.secret filter=crypt\n"})
    a, b, c = worktree(vwt, "alpha"), worktree(vwt, "beta"), worktree(vwt, "gamma")
    story.git("config", "filter.crypt.clean", str(script))
    story.git("config", "filter.crypt.smudge", str(script))
    story.write("keys.secret", "alpha's\n", base=a)
    story.write("README.md", "# alpha\n", base=a)
    story.write("README.md", "# beta\n", base=b)
    story.write("README.md", "# gamma\n", base=c)
    doc = conflicts(vwt)
    alpha = rows(doc)["alpha"]
    assert alpha["error"] and "keys.secret" in alpha["error"] and "filter" in alpha["error"]
    assert alpha["changed"] is None and alpha["target_conflicts"] is None
    assert [(p["a"], p["b"]) for p in doc["pairs"]] == [("beta", "gamma")]
    assert not marker.exists(), "the repository's filter command never runs"
    plain = vwt.ok("conflicts")
    assert "alpha" in plain.err and "keys.secret" in plain.err


def test_a_repository_merge_driver_is_never_run(story, vwt, sandbox):
    marker = sandbox.tmp / "driver-ran"
    script = sandbox.tmp / "driver.sh"
    script.write_text(f"#!/bin/sh\ntouch '{marker}'\nexit 0\n")
    script.chmod(0o755)
    story.commit("attributes", {".gitattributes": "story.txt merge=smart\n"})
    (story.common_dir / "info").mkdir(exist_ok=True)
    (story.common_dir / "info" / "attributes").write_text("story.txt merge=smart\n")
    story.git("config", "merge.smart.driver", f"{script} %O %A %B")
    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    edit_line(a / "story.txt", 2, "alpha")
    edit_line(b / "story.txt", 19, "beta")
    doc = conflicts(vwt)
    assert pairs(doc)[("alpha", "beta")]["conflicts"] == ["story.txt"], \
        "a path only the driver could merge is reported as conflicting"
    assert not marker.exists()


# -- a file that became a folder: the real path, never git's stand-in `df~<commit>` ------------

def file_becomes_folder(repo, where: Path) -> None:
    (where / "df").unlink()
    repo.write("df/x", "now a folder\n", base=where)


def test_a_file_folder_conflict_names_the_real_path(story, vwt):
    story.commit("a file", {"df": "a file\n"})
    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    file_becomes_folder(story, a)
    (b / "df").write_text("an edited file\n")
    doc = conflicts(vwt)
    [pair] = doc["pairs"]
    assert pair["overlap"] == ["df"] and pair["conflicts"] == ["df"], pair
    file_becomes_folder(story, story.path)  # the target turns it into a folder too
    commit_all(story, story.path)
    assert rows(conflicts(vwt))["beta"]["target_conflicts"] == ["df"]


def test_a_file_against_a_folder_counts_as_both_changing_it(story, vwt):
    """One session adds the file `df`, the other `df/inner.txt`: neither changed a path the
    other did, yet the merge conflicts at `df`, which is then in `overlap` and `conflicts`."""
    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    story.write("df", "a file\n", base=a)
    story.write("df/inner.txt", "in a folder\n", base=b)
    commit_all(story, b)
    doc = conflicts(vwt)
    assert doc["pairs"] == [{"bucket": story.bucket, "a": "alpha", "b": "beta",
                             "overlap": ["df"], "conflicts": ["df"]}]
    assert pairs(conflicts(vwt, "--path", "df/inner.txt")) == {}, "alpha has nothing under df/"
    assert list(pairs(conflicts(vwt, "--path", "df"))) == [("alpha", "beta")]
    edit_line(a / "story.txt", 3, "alpha's line 3")  # and a path both change, merging cleanly
    edit_line(b / "story.txt", 18, "beta's line 18")
    [pair] = conflicts(vwt)["pairs"]
    assert pair["overlap"] == ["df", "story.txt"] and pair["conflicts"] == ["df"], pair
    assert vwt.ok("conflicts").out.startswith("conflict  alpha and beta: df (also both change "
                                              "story.txt)"), "the plain line names the clash"


def test_a_folder_replaced_by_a_file_meets_a_file_added_in_that_folder(story, vwt):
    story.commit("a folder", {"lib/old.py": "old\n"})
    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    (a / "lib" / "old.py").unlink()
    (a / "lib").rmdir()
    story.write("lib", "now a file\n", base=a)
    story.write("lib/new.py", "new\n", base=b)
    [pair] = conflicts(vwt)["pairs"]
    assert pair["overlap"] == ["lib"] and pair["conflicts"] == ["lib"], pair


def test_conflicts_are_always_among_the_overlap(story, vwt):
    """A rename against a deletion conflicts where git puts the renamed file, a path only
    one side changed: the pair still conflicts, on the path both changed."""
    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    story.git("mv", "story.txt", "tale.txt", cwd=a)
    (b / "story.txt").unlink()
    [pair] = conflicts(vwt)["pairs"]
    assert pair["overlap"] == ["story.txt"] and pair["conflicts"] == ["story.txt"], pair
    both = worktree(vwt, "gamma")
    story.git("mv", "story.txt", "saga.txt", cwd=both)  # a rename against another rename
    for pair in conflicts(vwt)["pairs"]:
        assert pair["conflicts"] and set(pair["conflicts"]) <= set(pair["overlap"]), pair
