"""Resolving a conflict through vwt (SPEC §8): `sync --stop-on-conflict`, `--continue`,
`--abort`, and what `merge`, `rm` and retention do while a rebase is stopped."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from conftest import tree_files

SYNC_KEYS = {"name", "outcome", "onto", "head", "conflicts"}


def sync(vwt, *args, code=0):
    result = vwt("sync", *args, "--json")
    assert result.code == code, str(result)
    data = result.json()
    assert set(data) == SYNC_KEYS
    return data


def conflicting(repo, vwt, name="feat", files=("README.md",)):
    """A worktree whose commits (one per file) each conflict with main."""
    path = Path(vwt.new(name)["path"])
    for rel in files:
        repo.commit(f"{name}: {rel}", {rel: f"{name} version of {rel}\n"}, cwd=path)
    repo.commit("main: " + ", ".join(files), {rel: f"main version of {rel}\n" for rel in files})
    return path


def frozen(repo, name):
    out = repo.git("for-each-ref", "--format=%(refname) %(objectname)")
    return (out, tree_files(repo.checkout(name)), repo.porcelain(repo.checkout(name)),
            repo.record(name))


def printed_commands(message):
    """The `vwt ...` commands a message tells the user to run."""
    found = re.findall(r"(vwt (?:sync|merge) [^(),;]+?)(?=\)| \(|,|;|$)", message)
    return [shlex.split(command)[1:] for command in found]


def rebasing(path):
    return "rebase in progress" in subprocess.run(
        ["git", "-C", str(path), "status"], capture_output=True, text=True).stdout


def resolve(repo, path, rel, text="resolved\n"):
    repo.write(rel, text, base=path)
    repo.git("add", rel, cwd=path)


def test_merge_conflict_names_commands_that_resolve_it_as_printed(repo, vwt):
    path = conflicting(repo, vwt)
    merged = vwt("merge", "feat", "--no-fetch")
    assert merged.code == 1, str(merged)
    [line] = merged.err_lines
    assert line.startswith("vwt: error: feat conflicts with main"), line
    commands = printed_commands(line)
    assert commands[0] == ["sync", "feat", "--stop-on-conflict"], commands
    stopped = vwt(*commands[0], "--json")
    assert stopped.code == 1, str(stopped)
    data = stopped.json()
    assert data["outcome"] == "conflict_stopped" and data["conflicts"] == ["README.md"]
    assert "<<<<<<<" in (path / "README.md").read_text()
    assert rebasing(path)
    resolve(repo, path, "README.md")
    assert commands[1] == ["sync", "feat", "--continue"], commands
    done = vwt(*commands[1], "--json")
    assert done.code == 0, str(done)
    assert done.json()["outcome"] == "synced" and not rebasing(path)
    assert repo.rev("feat~1") == repo.rev("main")
    assert repo.record("feat")["base_commit"] == repo.rev("main")
    assert vwt("merge", "feat", "--no-fetch").code == 0
    assert repo.git("show", "main:README.md") == "resolved"


def test_a_merge_into_another_branch_names_that_branch_in_its_way_out(repo, vwt):
    path = Path(vwt.new("feat")["path"])
    repo.git("branch", "rel", "main")
    repo.commit("feat: README.md", {"README.md": "feat version\n"}, cwd=path)
    repo.git("switch", "-q", "rel")
    repo.commit("rel: README.md", {"README.md": "rel version\n"})
    repo.git("switch", "-q", "main")
    merged = vwt("merge", "feat", "--into", "rel", "--no-fetch")
    assert merged.code == 1, str(merged)
    [line] = merged.err_lines
    commands = printed_commands(line)
    assert commands[0] == ["sync", "feat", "--onto", "rel", "--stop-on-conflict"], commands
    stopped = vwt(*commands[0], "--no-fetch", "--json")
    assert stopped.json()["outcome"] == "conflict_stopped", str(stopped)
    resolve(repo, path, "README.md")
    done = vwt(*commands[1], "--json")
    assert done.code == 0 and done.json()["onto"] == "rel", str(done)
    assert vwt("merge", "feat", "--into", "rel", "--no-fetch").code == 0
    assert repo.git("show", "rel:README.md") == "resolved"


def test_sync_stop_on_conflict_leaves_the_rebase_stopped_with_markers(repo, vwt):
    path = conflicting(repo, vwt)
    record = repo.record("feat")
    result = vwt("sync", "feat", "--stop-on-conflict", "--no-fetch")
    assert result.code == 1, str(result)
    assert result.out.split() == ["README.md"]
    [line] = result.err_lines
    assert line.startswith("vwt: error: sync of feat is stopped with 1 conflicting file(s)")
    assert "<<<<<<<" in (path / "README.md").read_text()
    assert rebasing(path)
    assert repo.record("feat") == record  # changes only when the rebase completes
    again = sync(vwt, "feat", code=1)  # a plain sync says where it stands, changes nothing
    assert again["outcome"] == "conflict_stopped" and again["conflicts"] == ["README.md"]


def test_sync_abort_puts_branch_files_and_record_back(repo, vwt):
    conflicting(repo, vwt, files=("README.md", "other.txt"))
    before = frozen(repo, "feat")
    stopped = vwt("sync", "feat", "--stop-on-conflict")
    assert stopped.code == 1, str(stopped)
    [line] = stopped.err_lines
    commands = printed_commands(line)
    assert commands == [["sync", "feat", "--continue"], ["sync", "feat", "--abort"]], line
    repo.write("scratch.txt", "x\n", base=repo.checkout("feat"))  # made while resolving
    (repo.checkout("feat") / "scratch.txt").unlink()
    data = sync(vwt, *commands[1][1:])  # the abort, as printed
    assert data["outcome"] == "aborted" and data["head"] == repo.rev("feat")
    assert frozen(repo, "feat") == before
    assert not rebasing(repo.checkout("feat"))


def test_sync_continue_stops_again_at_the_next_conflicting_commit(repo, vwt):
    path = conflicting(repo, vwt, files=("README.md", "other.txt"))
    first = sync(vwt, "feat", "--stop-on-conflict", code=1)
    assert first["conflicts"] == ["README.md"]
    resolve(repo, path, "README.md")
    second = sync(vwt, "feat", "--continue", code=1)
    assert second["outcome"] == "conflict_stopped" and second["conflicts"] == ["other.txt"]
    resolve(repo, path, "other.txt")
    done = sync(vwt, "feat", "--continue")
    assert done["outcome"] == "synced" and done["head"] == repo.rev("feat")
    assert repo.rev("feat~2") == repo.rev("main")
    assert vwt.entry("feat")["ahead"] == 2


def test_sync_continue_with_conflicts_unresolved_stays_stopped(repo, vwt):
    path = conflicting(repo, vwt)
    sync(vwt, "feat", "--stop-on-conflict", code=1)
    result = vwt("sync", "feat", "--continue", "--json")
    assert result.code == 1 and result.json()["outcome"] == "conflict_stopped"
    assert "vwt sync feat --continue" in result.err
    assert rebasing(path)


def test_sync_continue_or_abort_without_a_stopped_sync_is_an_error(repo, vwt):
    vwt.new("feat")
    for flag in ("--continue", "--abort"):
        result = vwt("sync", "feat", flag)
        assert result.code == 1
        assert result.err.startswith("vwt: error: no sync of feat is stopped"), result.err


def test_sync_without_stop_still_changes_nothing_and_names_the_way_out(repo, vwt):
    conflicting(repo, vwt)
    before = frozen(repo, "feat")
    result = vwt("sync", "feat", "--no-fetch")
    assert result.code == 1
    [line] = result.err_lines
    assert line.startswith("vwt: error: feat conflicts with main")
    assert printed_commands(line)[0] == ["sync", "feat", "--stop-on-conflict"]
    assert frozen(repo, "feat") == before


def test_merge_refuses_while_a_sync_is_stopped(repo, vwt):
    conflicting(repo, vwt)
    sync(vwt, "feat", "--stop-on-conflict", code=1)
    main = repo.rev("main")
    for extra in ([], ["--commit"], ["--keep"]):
        result = vwt("merge", "feat", "--no-fetch", *extra, "--json")
        assert result.code == 3, str(result)
        assert result.json()["outcome"] == "kept_dirty"
        assert result.err.startswith("vwt: refused: a sync of feat is stopped")
    assert repo.rev("main") == main and rebasing(repo.checkout("feat"))


def test_rm_asks_before_removing_a_stopped_rebase(repo, vwt):
    conflicting(repo, vwt)
    sync(vwt, "feat", "--stop-on-conflict", code=1)
    repo.git("add", "-A", cwd=repo.checkout("feat"))  # no change left to count, still stopped
    refused = vwt("rm", "feat", "--json")
    assert refused.code == 3 and refused.json()["outcome"] == "kept_dirty"
    assert "a rebase stopped at a conflict" in refused.err
    assert rebasing(repo.checkout("feat"))


def test_retention_keeps_a_stopped_rebase(repo, vwt):
    conflicting(repo, vwt)
    sync(vwt, "feat", "--stop-on-conflict", code=1)
    for extra in (["--dry-run"], []):
        data = vwt.ok("prune", "--keep", "0", *extra, "--json").json()
        assert data["removed"] == []
        assert [(k["name"], k["reason"]) for k in data["kept"]] == [("feat",
                                                                      "rebase_in_progress")]
    assert rebasing(repo.checkout("feat"))


def test_squash_summary_lists_only_commits_not_in_the_target(repo, vwt):
    path = vwt.new("feat")["path"]
    repo.commit("mine one", {"a.txt": "a\n"}, cwd=path)
    repo.commit("mine two", {"b.txt": "b\n"}, cwd=path)
    repo.commit("main's own", {"m.txt": "m\n"})
    repo.git("rebase", "-q", "main", cwd=path)  # by hand: base_commit now predates main's
    status = vwt.ok("status", "feat").out
    assert re.search(r"ahead\s+3 commit\(s\) since \w+ \(2 not in main\)", status), status
    vwt.ok("merge", "feat", "--no-fetch")
    message = repo.git("log", "-1", "--format=%B", "main")
    assert "mine one" in message and "mine two" in message
    assert "main's own" not in message and message.startswith("Squash 2 commits")


def test_merge_commit_that_then_conflicts_says_it_committed_the_work(repo, vwt):
    path = conflicting(repo, vwt)
    repo.write("notes.txt", "untracked work\n", base=path)
    result = vwt("merge", "feat", "--commit", "--no-fetch")
    assert result.code == 1, str(result)
    [line] = result.err_lines
    tip = repo.rev("feat")
    assert f"committed on feat as {tip[:12]}" in line, line
    assert "nothing changed" not in line
    assert repo.git("show", "feat:notes.txt") == "untracked work"
    assert repo.porcelain(path) == ""


def test_new_of_a_worktree_whose_sync_is_stopped_names_the_way_out(repo, vwt):
    conflicting(repo, vwt)
    sync(vwt, "feat", "--stop-on-conflict", code=1)
    result = vwt("new", "feat")
    assert result.code == 1
    assert result.err.startswith("vwt: error: a sync of feat is stopped at a conflict"), result.err
    assert "vwt sync feat --continue" in result.err


def release_branch_conflicting_with_feat(repo):
    """A `rel` branch (main plus one commit) whose README.md conflicts with feat's."""
    repo.git("checkout", "-q", "-b", "rel")
    repo.commit("rel: README.md", {"README.md": "rel version\n"})
    repo.git("checkout", "-q", "main")
    assert repo.rev("rel") != repo.rev("main")


def continue_onto(repo, vwt, output):
    """`sync feat --continue` to its end: the `onto` it reports, as JSON or in plain output."""
    if output == "json":
        done = sync(vwt, "feat", "--continue")
        assert done["outcome"] == "synced"
        return done["onto"]
    done = vwt("sync", "feat", "--continue")
    assert done.code == 0, str(done)
    printed = re.fullmatch(r"synced feat onto (\S+): (\w+)\n", done.out)
    assert printed and printed[2] == repo.rev("feat"), done.out
    return printed[1]


@pytest.mark.parametrize("output", ["json", "plain"])
def test_continue_of_a_sync_stopped_onto_a_named_branch_reports_that_branch(repo, vwt, output):
    path = Path(vwt.new("feat")["path"])
    repo.commit("feat: README.md", {"README.md": "feat version\n"}, cwd=path)
    release_branch_conflicting_with_feat(repo)
    stopped = sync(vwt, "feat", "--onto", "rel", "--stop-on-conflict", "--no-fetch", code=1)
    assert stopped["onto"] == "rel"
    resolve(repo, path, "README.md")
    assert continue_onto(repo, vwt, output) == "rel"
    assert repo.rev("feat~1") == repo.rev("rel")


@pytest.mark.parametrize("output", ["json", "plain"])
def test_continue_after_the_target_moved_while_resolving_still_names_it(repo, vwt, output):
    path = conflicting(repo, vwt)
    assert sync(vwt, "feat", "--stop-on-conflict", "--no-fetch", code=1)["onto"] == "main"
    stopped_onto = repo.rev("main")
    repo.commit("main moves on", {"later.txt": "later\n"})  # while the user resolves
    resolve(repo, path, "README.md")
    assert continue_onto(repo, vwt, output) == "main"
    assert repo.rev("feat~1") == stopped_onto  # onto the commit the stop used
    assert repo.record("feat")["base_commit"] == stopped_onto


def test_abort_of_a_sync_stopped_onto_a_named_branch_reports_that_branch(repo, vwt):
    path = Path(vwt.new("feat")["path"])
    repo.commit("feat: README.md", {"README.md": "feat version\n"}, cwd=path)
    release_branch_conflicting_with_feat(repo)
    sync(vwt, "feat", "--onto", "rel", "--stop-on-conflict", "--no-fetch", code=1)
    assert sync(vwt, "feat", "--abort")["onto"] == "rel"


def test_continue_of_a_stop_without_its_note_names_a_branch_at_its_commit(repo, vwt):
    """A stop whose note is missing (made by an older vwt, or a failed write) is named after
    a branch whose tip it rebases onto, not shown as a commit."""
    path = Path(vwt.new("feat")["path"])
    repo.commit("feat: README.md", {"README.md": "feat version\n"}, cwd=path)
    release_branch_conflicting_with_feat(repo)
    sync(vwt, "feat", "--onto", "rel", "--stop-on-conflict", "--no-fetch", code=1)
    admin = Path(repo.git("rev-parse", "--absolute-git-dir", cwd=path))
    (admin / "rebase-merge" / "vwt-onto").unlink()
    resolve(repo, path, "README.md")
    assert sync(vwt, "feat", "--continue")["onto"] == "rel"


# -- a worktree in the middle of a rebase is never called landed (list, status) --------------

def landing_keys(doc):
    return {key: doc[key] for key in ("rebase", "integrated", "safe_to_remove")}


@pytest.mark.slow
def test_list_and_status_say_a_stopped_rebase_is_not_landed(repo, vwt):
    path = conflicting(repo, vwt)
    sync(vwt, "feat", "--stop-on-conflict", code=1)  # HEAD is main's tip, mid-rebase
    stopped = {"rebase": "stopped", "integrated": None, "safe_to_remove": False}
    assert landing_keys(vwt.entry("feat")) == stopped
    assert landing_keys(vwt.ok("status", "feat", "--json").json()) == stopped
    # resolved to main's version and staged: nothing left to count, the work still in the rebase
    resolve(repo, path, "README.md", "main version of README.md\n")
    assert repo.porcelain(path) == "" and rebasing(path)
    assert landing_keys(vwt.entry("feat")) == stopped
    assert landing_keys(vwt.ok("status", "feat", "--json").json()) == stopped
    listed = vwt.ok("list").out.splitlines()
    assert listed[0].split()[6] == "LANDED" and "rebase stopped" in listed[1], listed
    assert re.search(r"^  landed\s+rebase stopped$", vwt.ok("status", "feat").out, re.M)
    sync(vwt, "feat", "--abort")
    after = vwt.entry("feat")
    assert after["rebase"] is None and after["integrated"] is None
    assert after["safe_to_remove"] is False  # its commit is not in main
    assert vwt.ok("status", "feat", "--json").json()["rebase"] is None


def test_list_and_status_word_integration_alike(repo, vwt):
    path = Path(vwt.new("feat")["path"])
    repo.commit("feat work", {"a.txt": "a\n"}, cwd=path)
    repo.git("merge", "-q", "--ff-only", "feat")  # main is now feat's tip
    assert vwt.entry("feat")["integrated"] == "same_commit"
    row = next(line for line in vwt.ok("list").out.splitlines() if line.startswith("feat "))
    assert "same commit" in row, row
    landed = re.search(r"^  landed\s+(.+)$", vwt.ok("status", "feat").out, re.M)
    assert landed and landed[1] == "same commit", landed


@pytest.mark.parametrize("worktree_has", ["file", "folder"])
def test_a_stopped_file_folder_conflict_names_the_real_path(repo, vwt, worktree_has):
    """git leaves the file as `df~<label>` in the worktree; vwt names `df` (SPEC §16)."""
    if worktree_has == "file":
        repo.commit("a file", {"df": "a file\n"})
    path = Path(vwt.new("feat")["path"])
    if worktree_has == "file":
        repo.commit("feat edits the file", {"df": "edited\n"}, cwd=path)
        repo.git("rm", "-q", "df")
        repo.commit("main turns it into a folder", {"df/x": "a folder\n"})
    else:
        repo.commit("feat adds a folder", {"df/inner.txt": "in a folder\n"}, cwd=path)
        repo.commit("main adds a file", {"df": "a file\n"})
    stopped = sync(vwt, "feat", "--stop-on-conflict", "--no-fetch", code=1)
    assert stopped["outcome"] == "conflict_stopped" and stopped["conflicts"] == ["df"], stopped
    again = sync(vwt, "feat", code=1)
    assert again["conflicts"] == ["df"], again
    assert sync(vwt, "feat", "--abort")["outcome"] == "aborted"
