"""Deleting a removed checkout from `.trash`: side by side across enough folders, never
through a symbolic link."""

from __future__ import annotations

from pathlib import Path

from vibe_worktree.lifecycle.remove import (
    PARALLEL_DELETE_FOLDERS,
    delete_trash,
    folders_to_share,
)


def checkout_under_one_folder(root: Path, folders: int) -> Path:
    """A checkout whose files all sit under `src/<n>/`, beside a top-level file."""
    trash = root / "trash"
    for n in range(folders):
        (trash / "src" / f"m{n}").mkdir(parents=True)
        (trash / "src" / f"m{n}" / "code.py").write_text("x\n")
    (trash / "README.md").write_text("readme\n")
    return trash


def test_a_checkout_under_one_folder_is_shared_by_its_subfolders(tmp_path):
    trash = checkout_under_one_folder(tmp_path, 12)
    shared = folders_to_share(str(trash))
    assert len(shared) >= PARALLEL_DELETE_FOLDERS
    assert sorted(Path(p).name for p in shared) == sorted(f"m{n}" for n in range(12))


def test_folders_without_subfolders_stay_whole_units(tmp_path):
    trash = checkout_under_one_folder(tmp_path, 9)
    (trash / "docs").mkdir()
    (trash / "docs" / "a.md").write_text("a\n")
    shared = {Path(p).relative_to(trash).as_posix() for p in folders_to_share(str(trash))}
    assert "docs" in shared and "src/m0" in shared


def test_deleting_shares_no_symlinked_folder_and_leaves_its_target(tmp_path):
    trash = checkout_under_one_folder(tmp_path, 12)
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "keep.txt").write_text("keep\n")
    (trash / "src" / "m0" / "link").symlink_to(outside, target_is_directory=True)
    (trash / "link").symlink_to(outside, target_is_directory=True)
    assert not any("outside" in p or p.endswith("link") for p in folders_to_share(str(trash)))
    delete_trash(str(trash))
    assert not trash.exists()
    assert (outside / "deep" / "keep.txt").read_text() == "keep\n"
