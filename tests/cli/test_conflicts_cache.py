"""`vwt conflicts` keeps the index copy git refreshed for each worktree in the home, and
starts from it next time while the worktree's own index is unchanged: the answer is always
the one a fresh copy of the worktree's own index gives, and nothing in a worktree changes."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from test_conflicts import commit_all, conflicts, edit_line, pairs, rows, state_of, worktree

from vibe_worktree.core import index_cache


@pytest.fixture
def story(repo):
    repo.commit("story", {"story.txt": "".join(f"line {i}\n" for i in range(1, 21))})
    return repo


def own_index(repo, checkout: Path) -> Path:
    return Path(repo.git("rev-parse", "--path-format=absolute", "--git-path", "index",
                         cwd=checkout))


def racily_clean(repo, checkout: Path) -> None:
    """The checkout's index written in the clock tick of its files, as `vwt new` followed at
    once by an agent's first edits leaves it: git must re-read them, and rewrites the copy."""
    tracked = repo.git("ls-files", "-z", cwd=checkout).split("\0")
    oldest = min((checkout / rel).stat().st_mtime_ns for rel in tracked if rel)
    os.utime(own_index(repo, checkout), ns=(oldest, oldest))


def aged(repo, checkout: Path) -> None:
    """Its tracked files dated a while back: the copy git refreshes then trusts every clean
    entry by its stat data alone (none is racily clean there)."""
    back = time.time_ns() - 100 * 1_000_000_000
    for rel in repo.git("ls-files", "-z", cwd=checkout).split("\0"):
        if rel:
            os.utime(checkout / rel, ns=(back, back))


def kept_copy(repo, name: str) -> Path:
    return Path(index_cache.cache_path(str(repo.sandbox.vibe_home), repo.bucket, name))


def forecast_without_kept_copies(repo, vwt) -> dict:
    shutil.rmtree(repo.sandbox.vibe_home / index_cache.FOLDER, ignore_errors=True)
    return conflicts(vwt)


def test_the_refreshed_copy_is_kept_outside_the_worktree_which_stays_byte_for_byte(story, vwt):
    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    edit_line(a / "story.txt", 3, "alpha")
    story.write("notes.txt", "untracked\n", base=a)
    edit_line(b / "story.txt", 3, "beta")
    for where in (a, b):
        racily_clean(story, where)
    before = state_of(story.path, story.sandbox.vibe_home)
    first, second = conflicts(vwt), conflicts(vwt)
    assert kept_copy(story, "alpha").is_file() and kept_copy(story, "beta").is_file()
    assert first == second
    assert pairs(second)[("alpha", "beta")]["conflicts"] == ["story.txt"]
    assert rows(second)["alpha"]["changed"] == 2
    assert state_of(story.path, story.sandbox.vibe_home) == before


def test_a_same_size_edit_in_the_second_of_its_entry_is_read_as_changed(story, vwt):
    """The kept copy keeps the mtime git gave it: an entry whose file is not older than the
    copy stays racily clean there, and git re-reads that file every time."""
    a = worktree(vwt, "alpha")
    story.git("config", "core.trustctime", "false", cwd=a)  # a rewrite keeps nothing else
    readme = a / "README.md"
    ahead = (int(time.time()) + 2) * 1_000_000_000  # newer than any copy written before it
    os.utime(readme, ns=(ahead, ahead))
    assert rows(conflicts(vwt))["alpha"]["changed"] == 0
    assert kept_copy(story, "alpha").is_file()
    while time.time() < ahead / 1e9 + 1.2:  # a copy written from now on would be newer
        time.sleep(0.1)
    readme.write_text("# beta\n")  # the same size as "# demo\n", in the same file
    os.utime(readme, ns=(ahead, ahead))  # and in the second of its entry in the copy
    assert rows(conflicts(vwt))["alpha"]["changed"] == 1


def test_work_committed_or_staged_after_a_forecast_is_read_anew(story, vwt):
    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    for where in (a, b):
        racily_clean(story, where)
    assert conflicts(vwt)["pairs"] == []
    assert kept_copy(story, "alpha").is_file() and kept_copy(story, "beta").is_file()
    edit_line(a / "story.txt", 3, "alpha")
    commit_all(story, a)
    edit_line(b / "story.txt", 3, "beta")
    story.git("add", "story.txt", cwd=b)
    story.write("notes.txt", "beta's notes\n", base=b)
    doc = conflicts(vwt)
    assert pairs(doc)[("alpha", "beta")]["conflicts"] == ["story.txt"]
    assert rows(doc)["beta"]["changed"] == 2
    assert doc == forecast_without_kept_copies(story, vwt)


def test_a_change_only_the_index_holds_makes_the_kept_copy_stale(story, vwt):
    """A skip-worktree bit (as sparse checkouts set) lives in the index alone: a copy kept
    from before it was set must not be used after."""
    a = worktree(vwt, "alpha")
    aged(story, a)
    assert rows(conflicts(vwt))["alpha"]["changed"] == 0
    assert kept_copy(story, "alpha").is_file()
    story.git("update-index", "--skip-worktree", "story.txt", cwd=a)
    (a / "story.txt").unlink()
    doc = conflicts(vwt)
    assert rows(doc)["alpha"]["changed"] == 0
    assert doc == forecast_without_kept_copies(story, vwt)


def damage(kept: Path, how: str, other: Path) -> None:
    raw = kept.read_bytes()
    if how == "garbage":
        kept.write_bytes(b"not an index at all\n")
    elif how == "truncated":
        kept.write_bytes(raw[: len(raw) // 2])
    elif how == "one byte flipped":  # in the first entry's object id, after its stat data:
        at = raw.index(b"DIRC") + 12 + 40 + 5  # git would trust it (it skips the checksum)
        kept.write_bytes(raw[:at] + bytes([raw[at] ^ 0xFF]) + raw[at + 1:])
    elif how == "another worktree's":
        shutil.copyfile(other, kept)
    elif how == "a folder":
        kept.unlink()
        kept.mkdir()


@pytest.mark.parametrize("how", ["garbage", "truncated", "one byte flipped",
                                 "another worktree's", "a folder"])
def test_a_damaged_kept_copy_is_ignored(story, vwt, how):
    a, b = worktree(vwt, "alpha"), worktree(vwt, "beta")
    edit_line(a / "story.txt", 3, "alpha")
    edit_line(b / "story.txt", 3, "beta")
    story.write("notes.txt", "beta's notes\n", base=b)
    for where in (a, b):
        aged(story, where)
    expected = conflicts(vwt)
    damage(kept_copy(story, "beta"), how, kept_copy(story, "alpha"))
    doc = conflicts(vwt)
    assert [r["error"] for r in doc["worktrees"]] == [None, None]
    assert doc == expected


def test_the_kept_copy_of_a_removed_worktree_goes(story, vwt):
    a, b, c = worktree(vwt, "alpha"), worktree(vwt, "beta"), worktree(vwt, "gamma")
    for where in (a, b, c):
        racily_clean(story, where)
    conflicts(vwt)
    assert all(kept_copy(story, n).is_file() for n in ("alpha", "beta", "gamma"))
    vwt.ok("rm", "beta", "-y")
    assert not kept_copy(story, "beta").exists()
    # gone without vwt (another tool's removal): the next forecast drops its copy
    story.layout.record_path(story.bucket, "gamma").unlink()
    conflicts(vwt)
    assert not kept_copy(story, "gamma").exists()
    assert kept_copy(story, "alpha").is_file()
