"""`vwt new NAME --carry` / `--move`: the current checkout's uncommitted work goes along."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import (
    MCP_INSTALLED,
    assert_error,
    assert_matches_schema,
    make_racily_clean,
    mcp_answer,
    mcp_send,
    mcp_session,
)

BINARY = bytes(range(256)) * 4
ODD_NAME = "dir with space/naïve ünïcode.txt"


def make_work(repo: Any) -> dict[str, bytes | None]:
    """Every kind of uncommitted change; returns path -> expected bytes (None: deleted)."""
    repo.commit("tracked files", {"lib/keep.txt": "keep\n", "lib/gone.txt": "gone\n",
                                  "old name.txt": "renamed\n", ".gitignore": "*.log\nbuild/\n"})
    (repo.path / "bin.dat").write_bytes(b"\0old")
    repo.commit("binary")
    repo.write("src/app.py", "print('staged')\n")
    repo.git("add", "src/app.py")  # staged
    repo.write("README.md", "# unstaged\n")  # unstaged
    repo.git("rm", "-q", "lib/gone.txt")  # staged deletion
    (repo.path / "lib/keep.txt").unlink()  # unstaged deletion
    repo.git("mv", "old name.txt", "new name.txt")  # rename
    repo.write(ODD_NAME, "odd\n")  # untracked, awkward name
    repo.write("fresh/new.txt", "new\n")  # untracked in a new folder
    (repo.path / "bin.dat").write_bytes(BINARY)
    repo.write("notes/1.txt", "staged version\n")
    repo.git("add", "notes/1.txt")
    repo.write("notes/1.txt", "working version\n")  # staged, then changed again
    repo.write("debug.log", "ignored\n")
    repo.write("build/out.o", "ignored\n")
    return {"src/app.py": b"print('staged')\n", "README.md": b"# unstaged\n",
            "lib/gone.txt": None, "lib/keep.txt": None, "old name.txt": None,
            "new name.txt": b"renamed\n", ODD_NAME: b"odd\n", "fresh/new.txt": b"new\n",
            "bin.dat": BINARY, "notes/1.txt": b"working version\n"}


def files_of(where: Path, expected: dict[str, bytes | None]) -> dict[str, bytes | None]:
    return {p: (where / p).read_bytes() if (where / p).is_file() else None for p in expected}


def status(repo: Any, where: Path) -> list[str]:
    out = repo.sandbox.run_git("status", "--porcelain=v1", "-z", "--untracked-files=all",
                               cwd=where).stdout
    return sorted(e for e in out.split("\0") if e)


def test_carry_copies_staged_unstaged_deleted_renamed_and_untracked_work(repo, vwt):
    expected = make_work(repo)
    before = status(repo, repo.path)
    head = repo.head()
    made = vwt.new("wip", "--carry")
    path = Path(made["path"])
    assert files_of(path, expected) == expected
    assert status(repo, path) == before  # staged stays staged, unstaged stays unstaged
    assert repo.head(cwd=path) == head == made["base_commit"]
    assert status(repo, repo.path) == before  # --carry leaves the source as it was
    assert files_of(repo.path, expected) == expected
    carried = made["carried"]
    assert carried["moved"] is False and carried["ref"] is None
    assert set(carried["files"]) == set(expected)
    assert not repo.ref_exists("refs/vibe/carried/wip")


def test_ignored_files_are_never_carried(repo, vwt):
    make_work(repo)
    path = Path(vwt.new("wip", "--move")["path"])
    assert not (path / "debug.log").exists() and not (path / "build").exists()
    assert (repo.path / "debug.log").read_text() == "ignored\n"  # and never taken away
    assert (repo.path / "build/out.o").read_text() == "ignored\n"
    assert "debug.log" not in repo.git("ls-tree", "-r", "--name-only", "refs/vibe/carried/wip")


def test_carry_keeps_the_executable_bit(repo, vwt):
    script = repo.write("run.sh", "#!/bin/sh\n")
    script.chmod(0o755)
    path = Path(vwt.new("wip", "--carry")["path"])
    assert os.stat(path / "run.sh").st_mode & stat.S_IXUSR


def test_carry_copies_symlinks_as_links_and_works_from_a_subfolder(repo, vwt):
    os.symlink("/etc/hostname", repo.path / "outside")
    os.symlink("README.md", repo.path / "src" / "inside")
    path = Path(vwt.new("wip", "--move", cwd=repo.path / "src")["path"])
    assert os.readlink(path / "outside") == "/etc/hostname"
    assert os.readlink(path / "src" / "inside") == "README.md"
    assert not os.path.lexists(repo.path / "outside")
    assert not os.path.lexists(repo.path / "src" / "inside")
    assert (repo.path / "src/app.py").exists()


def test_move_of_a_file_replaced_by_a_folder_restores_the_file(repo, vwt):
    (repo.path / "src/app.py").unlink()
    repo.write("src/app.py/inner.txt", "now a folder\n")
    path = Path(vwt.new("wip", "--move")["path"])
    assert (path / "src/app.py/inner.txt").read_text() == "now a folder\n"
    assert (repo.path / "src/app.py").read_text() == "print('hi')\n"
    assert status(repo, repo.path) == []


def test_carry_from_a_ref_the_changes_apply_to(repo, vwt):
    base = repo.head()
    other = repo.commit("elsewhere", {"other.txt": "other\n"})
    repo.git("checkout", "-q", base)
    repo.write("README.md", "# changed\n")
    repo.write("untracked.txt", "u\n")
    (repo.path / "data.bin").write_bytes(BINARY)
    made = vwt.new("wip", "--carry", "--from", other)
    path = Path(made["path"])
    assert made["base_commit"] == other
    assert (path / "other.txt").read_text() == "other\n"
    assert (path / "README.md").read_text() == "# changed\n"
    assert (path / "untracked.txt").read_text() == "u\n"
    assert (path / "data.bin").read_bytes() == BINARY
    assert status(repo, path) == [" M README.md", "?? data.bin", "?? untracked.txt"]


def test_carry_from_a_ref_it_conflicts_with_creates_nothing(repo, vwt):
    base = repo.head()
    other = repo.commit("conflicting", {"README.md": "# theirs\n"})
    repo.git("checkout", "-q", base)
    repo.write("README.md", "# ours\n")
    result = vwt("new", "wip", "--carry", "--from", other)
    assert_error(result, 1)
    assert "do not apply cleanly" in result.err and "README.md" in result.err
    assert not repo.branch_exists("wip")
    assert not repo.checkout("wip").exists()
    assert not repo.claim("wip").exists()
    assert len(repo.worktree_paths()) == 1
    assert (repo.path / "README.md").read_text() == "# ours\n"


def test_carry_refuses_an_existing_branch(repo, vwt):
    repo.git("branch", "taken")
    repo.write("README.md", "# mine\n")
    result = vwt("new", "taken", "--carry")
    assert_error(result, 1)
    assert "already exists" in result.err
    assert not repo.checkout("taken").exists()


def test_carry_with_sparse_or_pr_is_bad_usage(repo, vwt):
    assert_error(vwt("new", "wip", "--carry", "--sparse", "src"), 2)
    assert_error(vwt("new", "wip", "--move", "--pr", "3"), 2)
    assert not repo.branch_exists("wip")


def test_carry_of_a_clean_checkout_creates_the_worktree_and_says_so(repo, vwt):
    result = vwt.ok("new", "wip", "--move", "--json")
    assert result.json()["carried"] == {"files": [], "moved": True, "ref": None,
                                        "left_in_source": []}
    assert "nothing to carry" in result.err
    assert not repo.ref_exists("refs/vibe/carried/wip")


def test_carry_with_an_automatic_name(repo, vwt):
    repo.write("README.md", "# wip\n")
    made = vwt.new("-p", "spike the parser", "--carry")
    assert made["branch"] == "vibe/spike-the-parser"
    assert (Path(made["path"]) / "README.md").read_text() == "# wip\n"


def test_move_saves_the_work_then_leaves_the_source_clean(repo, vwt):
    expected = make_work(repo)
    before = status(repo, repo.path)
    made = vwt.new("wip", "--move")
    path = Path(made["path"])
    assert made["carried"]["moved"] is True
    assert made["carried"]["ref"] == "refs/vibe/carried/wip"
    assert made["carried"]["left_in_source"] == []
    assert files_of(path, expected) == expected
    assert status(repo, path) == before
    assert status(repo, repo.path) == []  # only the ignored files stay
    assert not (repo.path / "fresh").exists()  # the folder that only held carried files
    assert not (repo.path / "dir with space").exists()
    ref = "refs/vibe/carried/wip"
    assert repo.rev(f"{ref}^1") == repo.head()  # on HEAD, as a snapshot is
    for rel, content in expected.items():
        assert _in_ref(repo, ref, rel) == content, rel
    staged = repo.git("diff", "--name-only", f"{ref}^1", f"{ref}^2")
    assert "src/app.py" in staged and "README.md" not in staged  # the index, kept apart


def test_move_in_a_linked_worktree_moves_its_own_work(repo, vwt):
    first = Path(vwt.new("first")["path"])
    repo.write("notes.txt", "from first\n", base=first)
    second = Path(vwt.new("second", "--move", cwd=first)["path"])
    assert (second / "notes.txt").read_text() == "from first\n"
    assert repo.head(cwd=second) == repo.head(cwd=first)
    assert not (first / "notes.txt").exists()
    assert status(repo, repo.path) == []


def test_move_leaves_alone_a_file_changed_again_and_reports_it(repo, vwt):
    repo.write("README.md", "# carried\n")
    repo.write("other.txt", "carried too\n")
    # git's own post-checkout hook runs inside `git worktree add`, after the work was
    # captured and before the source is touched: it edits the source again
    hook = repo.path / ".git/hooks/post-checkout"
    hook.write_text(f"#!/bin/sh\necho 'edited again' >> '{repo.path}/README.md'\n")
    hook.chmod(0o755)
    result = vwt.ok("new", "wip", "--move", "--json")
    carried = result.json()["carried"]
    assert carried["left_in_source"] == ["README.md"]
    assert "README.md" in result.err and "changed after" in result.err
    assert (repo.path / "README.md").read_text() == "# carried\nedited again\n"
    assert not (repo.path / "other.txt").exists()  # the unchanged one did move
    path = Path(result.json()["path"])
    assert (path / "README.md").read_text() == "# carried\n"
    assert repo.git("show", "refs/vibe/carried/wip:README.md") == "# carried"


def test_move_leaves_the_source_alone_when_its_head_moved(repo, vwt):
    repo.write("README.md", "# carried\n")
    hook = repo.path / ".git/hooks/post-checkout"
    hook.write_text(f"#!/bin/sh\ncd '{repo.path}' && git commit -qam 'meanwhile'\n")
    hook.chmod(0o755)
    carried = vwt.new("wip", "--move")["carried"]
    assert carried["left_in_source"] == ["README.md"]
    assert (repo.path / "README.md").read_text() == "# carried\n"


def test_carried_output_matches_the_new_schema(repo, vwt):
    repo.write("README.md", "# x\n")
    assert_matches_schema("new", vwt.new("wip", "--move"))
    with pytest.raises(AssertionError):
        assert_matches_schema("new", {**vwt.new("wip2", "--carry"), "carried": {"files": []}})


# -- killed at every step: the work is always somewhere --------------------------------------
CARRY_STEPS = ["carry.captured", "new.reserved", "new.added", "carry.filled", "new.recorded"]
MOVE_STEPS = ["move.saved", "move.unstaged", "move.removed"]


def _in_ref(repo: Any, ref: str, rel: str) -> bytes | None:
    shown = subprocess.run(["git", "cat-file", "blob", f"{ref}:{rel}"], cwd=repo.path,
                           env=repo.sandbox.env, capture_output=True)
    return shown.stdout if shown.returncode == 0 else None


@pytest.mark.parametrize("step", CARRY_STEPS + MOVE_STEPS)
def test_a_move_killed_at_any_step_loses_nothing(repo, vwt, step):
    expected = make_work(repo)
    killed = vwt("new", "wip", "--move", "--json", env_extra={"VWT_CRASH_AT": step})
    assert killed.code == -9, str(killed)
    checkout = repo.checkout("wip")
    ref = "refs/vibe/carried/wip"
    for rel, content in expected.items():
        places = {"source": files_of(repo.path, {rel: None})[rel],
                  "worktree": files_of(checkout, {rel: None})[rel] if checkout.is_dir() else "-",
                  "ref": _in_ref(repo, ref, rel) if repo.ref_exists(ref) else "-"}
        assert content in places.values(), f"{rel} lost after a kill at {step}: {places}"
    if step in CARRY_STEPS:  # the source is touched only after the work is saved twice
        assert files_of(repo.path, expected) == expected
        # saved as soon as the new worktree holds it, before the creation is recorded
        assert repo.ref_exists(ref) == (step == "new.recorded")
    else:
        assert repo.ref_exists(ref)
        assert files_of(checkout, expected) == expected
    vwt.ok("prune")  # and prune, repairing what the kill left, never drops the work
    assert all(content in (files_of(repo.path, {rel: None})[rel],
                           files_of(checkout, {rel: None})[rel] if checkout.is_dir() else "-",
                           _in_ref(repo, ref, rel) if repo.ref_exists(ref) else "-")
               for rel, content in expected.items())


@pytest.mark.parametrize("step", [*MOVE_STEPS, "part-way"])
def test_a_move_killed_while_taking_the_work_out_is_finished_by_running_it_again(
        repo, vwt, step):
    """The kill campaign found it (seed 424242's sweep, `new --move` killed at 0.149 s): the
    source held part of the work, and the rerun compared that part with the worktree and
    refused. The rerun finishes the take-out from what the killed run saved instead."""
    expected = make_work(repo)
    killed = vwt("new", "wip", "--move", "--json",
                 env_extra={"VWT_CRASH_AT": "move.saved" if step == "part-way" else step})
    assert killed.code == -9, str(killed)
    if step == "part-way":  # take-out had put back some files as HEAD has them
        repo.git("checkout", "HEAD", "--", "README.md", "lib/keep.txt")
        (repo.path / "fresh/new.txt").unlink()
    again = vwt.new("wip", "--move")
    assert again["created"] is False and again["carried"]["left_in_source"] == []
    assert status(repo, repo.path) == []  # all of it taken out of the source
    assert files_of(repo.checkout("wip"), expected) == expected
    assert repo.ref_exists("refs/vibe/carried/wip")


@pytest.mark.parametrize("filled", ["nothing", "part", "part and the user's file"])
def test_a_move_killed_before_its_fill_then_adopted_by_prune_is_finished_by_running_it_again(
        repo, vwt, filled):
    """The kill campaign found it (seed 12701745, `new --move` killed at 0.104 s): prune
    adopted the checkout git had finished but the carried work never reached (or reached
    in part), and the rerun refused. It fills such a checkout (at the start point, holding
    nothing but some of the work) and moves the work; anything else there is refused."""
    expected = make_work(repo)
    killed = vwt("new", "wip", "--move", env_extra={"VWT_CRASH_AT": "new.added"})
    assert killed.code == -9
    checkout = repo.checkout("wip")
    if filled != "nothing":  # git had written some of the work when it was killed
        (checkout / "README.md").write_text("# unstaged\n")
        (checkout / "fresh").mkdir()
        (checkout / "fresh/new.txt").write_text("new\n")
    if filled == "part and the user's file":
        (checkout / "mine.txt").write_text("the user's own\n")
    vwt.ok("prune")  # adopts the checkout git finished
    again = vwt("new", "wip", "--move", "--json")
    if filled == "part and the user's file":
        assert_error(again, 1)
        assert (checkout / "mine.txt").read_text() == "the user's own\n"
        assert files_of(repo.path, expected) == expected  # the source is untouched
        return
    assert again.code == 0, str(again)
    assert status(repo, repo.path) == []
    assert files_of(checkout, expected) == expected
    assert repo.ref_exists("refs/vibe/carried/wip")


def test_a_move_killed_while_a_source_file_was_set_aside_is_finished(repo, vwt):
    """The kill campaign found it (seed 4484847, 0.126 s, and 0.130 to 0.141 s of later
    tries): the take-out renames each source file aside, drops it when it is the carried
    version, then writes HEAD's version through another hidden name; a kill in between left
    a hidden file, or the path empty. The rerun drops an aside that is the carried version,
    puts HEAD's where it is missing, and puts any other file back."""
    expected = make_work(repo)
    killed = vwt("new", "wip", "--move", env_extra={"VWT_CRASH_AT": "move.saved"})
    assert killed.code == -9
    (repo.path / "fresh/new.txt").rename(repo.path / "fresh/.new.txt.vwt-0123abcd")
    (repo.path / "bin.dat").unlink()  # dropped; HEAD's version not written yet
    (repo.path / "lib").mkdir(exist_ok=True)
    (repo.path / "lib/.keep.txt.vwt-00112233").write_text("keep\n")  # HEAD's, on its way in
    (repo.path / "README.md").rename(repo.path / ".README.md.vwt-89abcdef")
    (repo.path / ".README.md.vwt-89abcdef").write_text("# saved again by the user\n")
    again = vwt.new("wip", "--move")
    assert again["carried"]["left_in_source"] == ["README.md"]
    assert (repo.path / "README.md").read_text() == "# saved again by the user\n"
    assert status(repo, repo.path) == [" M README.md"]
    assert not (repo.path / "fresh").exists()
    assert (repo.path / "bin.dat").read_bytes() == b"\0old"
    assert (repo.path / "lib/keep.txt").read_text() == "keep\n"
    assert files_of(repo.checkout("wip"), expected) == expected


def test_a_carry_killed_before_creation_leaves_a_retry_possible(repo, vwt):
    repo.write("README.md", "# wip\n")
    killed = vwt("new", "wip", "--carry", env_extra={"VWT_CRASH_AT": "carry.captured"})
    assert killed.code == -9
    made = vwt.new("wip", "--carry")
    assert (Path(made["path"]) / "README.md").read_text() == "# wip\n"


@pytest.mark.skipif(not MCP_INSTALLED, reason="needs the optional mcp extra")
def test_mcp_create_carries_and_offers_no_move(repo, vwt):
    repo.write("README.md", "# from the agent's checkout\n")
    with mcp_session(vwt, repo.path) as proc:
        mcp_send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        listed = mcp_answer(proc, 2)
        assert listed is not None
        [create] = [t for t in listed["result"]["tools"] if t["name"] == "create"]
        assert "carry" in create["inputSchema"]["properties"]
        assert "move" not in create["inputSchema"]["properties"]
        mcp_send(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                        "params": {"name": "create",
                                   "arguments": {"name": "wip", "carry": True}}})
        called = mcp_answer(proc, 3)
        assert called is not None and not called["result"].get("isError"), called
        document = called["result"]["structuredContent"]
        assert_matches_schema("mcp-create", document)
        assert document["carried"]["files"] == ["README.md"]
        assert (Path(document["path"]) / "README.md").read_text() == (
            "# from the agent's checkout\n")
        assert (repo.path / "README.md").read_text() == "# from the agent's checkout\n"


def test_carry_refuses_a_nested_repository_and_creates_nothing(repo, vwt):
    nested = repo.path / "vendor/lib"
    nested.mkdir(parents=True)
    repo.sandbox.run_git("init", "-q", cwd=nested)
    (nested / "code.txt").write_text("only here\n")
    result = vwt("new", "wip", "--move")
    assert_error(result, 1)
    assert "repository of its own" in result.err
    assert not repo.branch_exists("wip") and not repo.claim("wip").exists()
    assert (nested / "code.txt").read_text() == "only here\n"


def test_carry_refuses_unresolved_conflicts_and_creates_nothing(repo, vwt):
    base = repo.head()
    repo.git("checkout", "-q", "-b", "theirs")
    repo.commit("theirs", {"README.md": "# theirs\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("ours", {"README.md": "# ours\n"})
    assert not repo.git_ok("merge", "-q", "theirs")
    result = vwt("new", "wip", "--carry")
    assert_error(result, 1)
    assert "conflicts" in result.err
    assert not repo.branch_exists("wip") and not repo.claim("wip").exists()
    assert repo.rev("HEAD") != base


def _blob_id(data: bytes) -> str:
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def test_taking_a_file_out_never_goes_through_a_symlinked_folder(tmp_path):
    from vibe_worktree.lifecycle.carry import _not_a_folder_on_the_way, _take_aside

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep\n")
    top = tmp_path / "checkout"
    (top / "real").mkdir(parents=True)
    (top / "real/added.txt").write_text("carried\n")
    os.symlink(outside, top / "swapped")
    assert _not_a_folder_on_the_way(str(top), "swapped/precious.txt")
    assert not _not_a_folder_on_the_way(str(top), "real/added.txt")
    assert not _not_a_folder_on_the_way(str(top), "gone/folder/file.txt")
    assert _take_aside(str(top), "real/added.txt", ("100644", _blob_id(b"carried\n")))
    assert (outside / "precious.txt").read_text() == "keep\n"
    assert not (top / "real").exists()  # the file and the folder it alone held


def test_a_file_changed_after_the_recheck_is_never_taken_out(repo):
    """The window between move's re-check and its removal: a file saved then is not the
    carried version, so it is put back, never dropped; HEAD's version never overwrites a
    file that appeared meanwhile."""
    from vibe_worktree.lifecycle.carry import _revert, capture, open_source

    repo.write("README.md", "# carried\n")
    repo.write("new.txt", "carried\n")
    (repo.path / "src/app.py").unlink()
    captured = capture(open_source(str(repo.path)))
    repo.write("README.md", "# saved a moment later\n")  # after the re-check
    repo.write("new.txt", "also saved later\n")
    repo.write("src/app.py", "recreated meanwhile\n")
    left = _revert(captured, list(captured.files))
    assert sorted(left) == ["README.md", "new.txt", "src/app.py"]
    assert (repo.path / "README.md").read_text() == "# saved a moment later\n"
    assert (repo.path / "new.txt").read_text() == "also saved later\n"
    assert (repo.path / "src/app.py").read_text() == "recreated meanwhile\n"
    assert not [p for p in repo.path.rglob(".*.vwt-*")]  # nothing left aside


def test_a_file_still_as_carried_is_taken_out_and_head_restored(repo):
    from vibe_worktree.lifecycle.carry import _revert, capture, open_source

    repo.write("README.md", "# carried\n")
    repo.write("new/deep.txt", "carried\n")
    (repo.path / "src/app.py").unlink()
    captured = capture(open_source(str(repo.path)))
    assert _revert(captured, list(captured.files)) == []
    assert status(repo, repo.path) == []
    assert not (repo.path / "new").exists()
    assert (repo.path / "src/app.py").read_text() == "print('hi')\n"


def test_carry_outside_a_checkout_is_a_one_line_error(repo, vwt, tmp_path):
    elsewhere = tmp_path / "not-a-repo"
    elsewhere.mkdir()
    result = vwt("new", "wip", "--carry", cwd=elsewhere)
    assert_error(result, 1, max_lines=1)


def test_post_create_hooks_see_the_carried_work(repo, vwt, sandbox):
    sandbox.vibe_home.mkdir(parents=True, exist_ok=True)
    (sandbox.vibe_home / "worktree.toml").write_text(
        '[[hooks]]\nname = "look"\ntype = "post_create"\n'
        'command = "cp README.md seen-by-hook.txt"\n')
    repo.write("README.md", "# carried before the hook\n")
    made = vwt.new("wip", "--move")
    assert [h["status"] for h in made["hooks"]] == ["ok"]
    seen = Path(made["path"]) / "seen-by-hook.txt"
    assert seen.read_text() == "# carried before the hook\n"


@pytest.mark.parametrize("step", ["new.added", "carry.filled"])
def test_a_carry_killed_mid_creation_can_be_finished_removed_and_retried(repo, vwt, step):
    repo.write("README.md", "# wip\n")
    killed = vwt("new", "wip", "--move", env_extra={"VWT_CRASH_AT": step})
    assert killed.code == -9
    assert (repo.path / "README.md").read_text() == "# wip\n"  # the source is untouched
    refused = vwt("new", "wip", "--move")
    assert_error(refused, 1)
    adopted = Path(vwt.new("wip")["path"])  # finishes it, as for any interrupted `new`
    if step == "carry.filled":  # the work was in place: the worktree is a finished carry
        assert (adopted / "README.md").read_text() == "# wip\n"
        return
    vwt.ok("rm", "wip")  # nothing carried yet: clean, so it simply goes
    made = vwt.new("wip", "--move")
    assert (Path(made["path"]) / "README.md").read_text() == "# wip\n"
    assert status(repo, repo.path) == []


@pytest.mark.parametrize("how", ["--carry", "--move"])
def test_a_same_size_rewrite_in_the_index_clock_tick_is_carried(repo, vwt, how):
    """The work is staged through a copy of the source's index: it keeps the index's mtime,
    so git does not trust the stale stat data of a racily clean file."""
    make_racily_clean(repo, repo.path, "README.md", "# omed\n")  # "# demo\n", same size
    made = vwt.new("racy", how)
    assert (Path(made["path"]) / "README.md").read_text() == "# omed\n"
    assert made["carried"]["files"] == ["README.md"]
