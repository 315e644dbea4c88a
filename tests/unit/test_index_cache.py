"""The home's cache of refreshed index copies (`core/index_cache.py`): what a copy starts
from, when a kept copy is used, and that nothing is written or deleted through a link."""

from __future__ import annotations

import os
from pathlib import Path

from vibe_worktree.core import index_cache

TICK = 1_700_000_000_123_456_789


def own_index(tmp_path: Path, content: bytes = b"DIRC own index") -> Path:
    admin = tmp_path / "repo" / ".git" / "worktrees" / "alpha"
    admin.mkdir(parents=True, exist_ok=True)
    index = admin / "index"
    index.write_bytes(content)
    os.utime(index, ns=(TICK, TICK))
    return index


def git_rewrites(copy: index_cache.PrivateIndex, content: bytes, mtime_ns: int) -> None:
    """What `git status` does to a copy it refreshed: a new file renamed over it."""
    fresh = f"{copy.path}.lock"
    Path(fresh).write_bytes(content)
    os.utime(fresh, ns=(mtime_ns, mtime_ns))
    os.replace(fresh, copy.path)


def kept_after_a_refresh(tmp_path: Path, index: Path, content: bytes, mtime_ns: int) -> Path:
    """The cache file a forecast leaves once git rewrote its copy of `index`."""
    kept = tmp_path / "cache" / "bucket" / "alpha.index"
    first = index_cache.private_copy(str(index), str(kept), str(tmp_path / "first"))
    git_rewrites(first, content, mtime_ns)
    index_cache.keep(first, str(kept))
    assert kept.is_file()
    return kept


def test_a_copy_of_the_own_index_keeps_its_bytes_and_mtime(tmp_path):
    index = own_index(tmp_path)
    copy = index_cache.private_copy(str(index), str(tmp_path / "kept.index"),
                                    str(tmp_path / "copy"))
    assert not copy.from_cache
    assert Path(copy.path).read_bytes() == index.read_bytes()
    assert Path(copy.path).stat().st_mtime_ns == TICK


def test_no_own_index_means_an_empty_start_and_nothing_kept(tmp_path):
    kept = tmp_path / "cache" / "bucket" / "alpha.index"
    copy = index_cache.private_copy(str(tmp_path / "none"), str(kept), str(tmp_path / "copy"))
    assert copy.key is None and not Path(copy.path).exists()
    index_cache.keep(copy, str(kept))
    assert not kept.exists()


def test_a_copy_git_did_not_rewrite_is_not_kept(tmp_path):
    kept = tmp_path / "cache" / "bucket" / "alpha.index"
    copy = index_cache.private_copy(str(own_index(tmp_path)), str(kept), str(tmp_path / "c"))
    index_cache.keep(copy, str(kept))
    assert not kept.exists()


def test_a_rewritten_copy_is_kept_and_used_with_the_mtime_git_gave_it(tmp_path):
    index = own_index(tmp_path)
    kept = kept_after_a_refresh(tmp_path, index, b"DIRC refreshed", TICK + 5_000_000_000)
    second = index_cache.private_copy(str(index), str(kept), str(tmp_path / "second"))
    assert second.from_cache
    assert Path(second.path).read_bytes() == b"DIRC refreshed"
    assert Path(second.path).stat().st_mtime_ns == TICK + 5_000_000_000


def test_a_changed_own_index_or_another_worktree_never_uses_the_kept_copy(tmp_path):
    index = own_index(tmp_path)
    kept = kept_after_a_refresh(tmp_path, index, b"DIRC refreshed", TICK + 1)
    index.write_bytes(b"DIRC own indeX")  # the same size, one byte changed
    os.utime(index, ns=(TICK, TICK))
    changed = index_cache.private_copy(str(index), str(kept), str(tmp_path / "changed"))
    assert not changed.from_cache
    assert Path(changed.path).read_bytes() == b"DIRC own indeX"
    twin = tmp_path / "twin" / ".git" / "worktrees" / "alpha" / "index"
    twin.parent.mkdir(parents=True)
    twin.write_bytes(b"DIRC own index")  # the original bytes, in another admin folder
    other = index_cache.private_copy(str(twin), str(kept), str(tmp_path / "other"))
    assert not other.from_cache


def test_a_kept_copy_not_whole_is_ignored(tmp_path):
    index = own_index(tmp_path)
    kept = kept_after_a_refresh(tmp_path, index, b"DIRC refreshed with a longer body", TICK + 1)
    whole = kept.read_bytes()
    another_version = whole.replace(b"1\n", b"2\n", 1)
    for n, broken in enumerate([whole[:-3], whole[:-3] + b"XYZ", b"", another_version]):
        kept.write_bytes(broken)
        copy = index_cache.private_copy(str(index), str(kept), str(tmp_path / f"copy{n}"))
        assert not copy.from_cache, broken


def test_nothing_is_written_through_a_planted_link(tmp_path):
    index = own_index(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    home = tmp_path / "home"
    (home / index_cache.FOLDER).mkdir(parents=True)
    (home / index_cache.FOLDER / "bucket").symlink_to(elsewhere, target_is_directory=True)
    kept = index_cache.cache_path(str(home), "bucket", "alpha")
    copy = index_cache.private_copy(str(index), kept, str(tmp_path / "copy"))
    git_rewrites(copy, b"DIRC refreshed", TICK + 1)
    index_cache.keep(copy, kept)
    assert list(elsewhere.iterdir()) == []


def test_forgetting_drops_only_our_files_of_gone_worktrees(tmp_path):
    home = tmp_path / "home"
    folder = home / index_cache.FOLDER / "bucket"
    folder.mkdir(parents=True)
    for file in ("alpha.index", "beta.index", ".beta.index.0123abcd.tmp", "notes.txt"):
        (folder / file).write_text("x")
    index_cache.forget_others(str(home), "bucket", {"alpha"})
    assert sorted(p.name for p in folder.iterdir()) == ["alpha.index", "notes.txt"]


def test_forgetting_deletes_nothing_through_a_planted_link(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.index").write_text("keep")
    home = tmp_path / "home"
    (home / index_cache.FOLDER).mkdir(parents=True)
    (home / index_cache.FOLDER / "bucket").symlink_to(elsewhere, target_is_directory=True)
    index_cache.forget_others(str(home), "bucket", set())
    index_cache.forget(str(home), "bucket", "precious")
    assert (elsewhere / "precious.index").read_text() == "keep"


def test_forgetting_one_worktree_drops_its_copy_alone(tmp_path):
    home = tmp_path / "home"
    folder = home / index_cache.FOLDER / "bucket"
    folder.mkdir(parents=True)
    for file in ("alpha.index", "beta.index"):
        (folder / file).write_text("x")
    index_cache.forget(str(home), "bucket", "beta")
    index_cache.forget(str(home), "bucket", "never-kept")
    assert [p.name for p in folder.iterdir()] == ["alpha.index"]
