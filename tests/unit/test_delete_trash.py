"""Deleting removed checkouts from `.trash`: threads share the work whatever the checkout's
shape, everything goes, nothing is deleted through a symbolic link, and what cannot be
deleted is left as `shutil.rmtree(..., ignore_errors=True)` leaves it."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from vibe_worktree.core import deletion
from vibe_worktree.core.deletion import delete_trees
from vibe_worktree.lifecycle.trash import delete_trash


def write(path: Path, text: str = "x\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def checkout_of_every_shape(root: Path) -> Path:
    """200 folders under one top-level folder, a deep chain, small folders beside them,
    files at the top, empty folders, hidden and read-only files."""
    trash = root / "trash"
    for n in range(200):
        write(trash / "src" / f"pkg{n:03d}" / "mod.py")
    write(trash / "a" / "b" / "c" / "d" / "e" / "f" / "g" / "deep.txt")
    for small in "hijklmnop":
        write(trash / small / "one.txt")
    (trash / "empty" / "inside").mkdir(parents=True)
    write(trash / ".git", "gitdir: elsewhere\n")
    write(trash / ".hidden" / ".file")
    os.chmod(write(trash / "read-only.txt"), 0o444)
    os.mkfifo(trash / "a-fifo")
    return trash


def outside_folder(root: Path) -> Path:
    outside = root / "outside"
    write(outside / "deep" / "keep.txt", "keep\n")
    return outside


def everything_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.mark.parametrize("workers", [1, 2, 8])
def test_a_checkout_of_any_shape_is_deleted_entirely(tmp_path, workers):
    trash = checkout_of_every_shape(tmp_path)
    delete_trees([str(trash)], workers)
    assert not trash.exists()
    assert list(tmp_path.iterdir()) == []


def test_several_checkouts_go_at_once_and_others_are_left(tmp_path):
    first, second = (checkout_of_every_shape(tmp_path / n) for n in ("one", "two"))
    outside = outside_folder(tmp_path)
    planted = tmp_path / "planted"
    planted.symlink_to(outside, target_is_directory=True)
    delete_trash(str(first), None, str(tmp_path / "missing"), str(planted), str(second))
    assert not first.exists() and not second.exists()
    assert planted.is_symlink(), "a trash entry that is a link is not ours to delete"
    assert (outside / "deep" / "keep.txt").read_text() == "keep\n"


def test_symbolic_links_are_deleted_never_followed(tmp_path):
    trash = checkout_of_every_shape(tmp_path)
    outside = outside_folder(tmp_path)
    (trash / "link-to-folder").symlink_to(outside, target_is_directory=True)
    (trash / "src" / "pkg007" / "deep-link").symlink_to(outside / "deep",
                                                        target_is_directory=True)
    (trash / "link-to-file").symlink_to(outside / "deep" / "keep.txt")
    (trash / "a" / "dangling").symlink_to(tmp_path / "nowhere")
    delete_trees([str(trash)], 4)
    assert not trash.exists()
    assert everything_under(outside) == ["deep", "deep/keep.txt"]
    assert (outside / "deep" / "keep.txt").read_text() == "keep\n"


def test_a_folder_swapped_for_a_link_after_it_was_listed_is_left_alone(tmp_path):
    """Between listing a folder and clearing it, a process still running in the old
    checkout replaces it with a link: the link's target keeps every file."""
    trash = tmp_path / "trash"
    write(trash / "node_modules" / "lib.js")
    listed = os.lstat(trash / "node_modules")
    outside = outside_folder(tmp_path)
    shutil.rmtree(trash / "node_modules")
    (trash / "node_modules").symlink_to(outside / "deep", target_is_directory=True)
    folder = deletion._Folder(str(trash / "node_modules"), listed.st_dev, listed.st_ino, 1, None)
    assert deletion._clear(folder) == []
    assert (outside / "deep" / "keep.txt").read_text() == "keep\n"


def read_only_folders(root: Path) -> Path:
    """A checkout holding folders without write permission (a Go module cache does that)."""
    trash = root / "trash"
    for n in range(3):
        write(trash / "src" / f"m{n}" / "code.py")
    write(trash / "locked" / "inner" / "file.txt")
    os.chmod(trash / "locked" / "inner", 0o555)
    os.chmod(trash / "locked", 0o555)
    os.chmod(trash / "src" / "m1", 0o500)
    return trash


def leftovers_of(delete, root: Path) -> list[str]:
    trash = read_only_folders(root)
    delete(trash)
    left = everything_under(trash) if trash.exists() else None
    for folder, _subfolders, _files in os.walk(root):
        os.chmod(folder, stat.S_IRWXU)  # so that pytest can clean up
    return left if left is not None else ["<gone>"]


def test_read_only_folders_end_as_shutil_rmtree_leaves_them(tmp_path):
    ours = leftovers_of(lambda trash: delete_trees([str(trash)], 4), tmp_path / "ours")
    theirs = leftovers_of(lambda trash: shutil.rmtree(trash, ignore_errors=True),
                          tmp_path / "theirs")
    assert ours == theirs
    if os.geteuid() == 0:  # permissions do not stop root: everything went
        assert ours == ["<gone>"]
