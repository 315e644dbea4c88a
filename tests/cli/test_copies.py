"""Fast copies of what `.worktreeinclude` selects: whole ignored folders, links kept as
links, modes and times kept, nothing outside the source read."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from conftest import Repo, Sandbox, Vwt
from vibe_worktree.lifecycle import copies
from vibe_worktree.lifecycle.copies import copy_files, walk


def ignored_node_modules(repo: Repo) -> Path:
    repo.commit("ignore", {".gitignore": "node_modules/\n", ".worktreeinclude": "node_modules/\n"})
    modules = repo.path / "node_modules"
    (modules / "left-pad" / "lib").mkdir(parents=True)
    (modules / "left-pad" / "lib" / "index.js").write_text("module.exports = 1;\n")
    (modules / "left-pad" / "package.json").write_text("{}\n")
    (modules / ".bin").mkdir()
    tool = modules / "left-pad" / "cli.js"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    os.symlink("../left-pad/cli.js", modules / ".bin" / "left-pad")
    (modules / "empty").mkdir()
    return modules


def test_a_whole_ignored_folder_is_copied_with_links_modes_and_times(
        repo: Repo, vwt: Vwt) -> None:
    modules = ignored_node_modules(repo)
    old = 1_600_000_000
    os.utime(modules / "left-pad" / "package.json", (old, old))
    os.utime(modules / "left-pad", (old, old))
    checkout = Path(vwt.new("feature")["path"])
    copied = checkout / "node_modules"
    assert (copied / "left-pad" / "lib" / "index.js").read_text() == "module.exports = 1;\n"
    link = copied / ".bin" / "left-pad"
    assert link.is_symlink() and os.readlink(link) == "../left-pad/cli.js"
    assert os.stat(copied / "left-pad" / "cli.js").st_mode & 0o777 == 0o755
    assert int(os.stat(copied / "left-pad" / "package.json").st_mtime) == old
    assert int(os.stat(copied / "left-pad").st_mtime) == old, "folder times are kept too"
    assert (copied / "empty").is_dir()
    assert not (copied / "left-pad" / "cli.js").samefile(modules / "left-pad" / "cli.js")
    assert repo.porcelain(checkout) == ""


def test_a_symlink_to_outside_the_repository_is_copied_as_a_link_never_followed(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    modules = ignored_node_modules(repo)
    outside = sandbox.tmp / "secrets"
    outside.mkdir()
    (outside / "key.pem").write_text("PRIVATE\n")
    os.symlink(outside, modules / "escape")
    os.symlink(outside / "key.pem", modules / "key.pem")
    checkout = Path(vwt.new("feature")["path"])
    for name in ("escape", "key.pem"):
        copied = checkout / "node_modules" / name
        assert copied.is_symlink(), name
        assert os.readlink(copied) == os.readlink(modules / name)
    # nothing was copied out of the linked folder: the copy holds the link alone
    assert not any(p.name == "key.pem" and not p.is_symlink()
                   for p in (checkout / "node_modules").rglob("*"))


def test_a_folder_the_repository_ignores_only_in_part_copies_only_its_ignored_files(
        repo: Repo, vwt: Vwt) -> None:
    repo.commit("ignore", {".gitignore": "build/*.o\n", ".worktreeinclude": "build/\n"})
    (repo.path / "build").mkdir()
    (repo.path / "build" / "main.o").write_text("object\n")
    (repo.path / "build" / "notes.txt").write_text("untracked, not ignored\n")
    checkout = Path(vwt.new("feature")["path"])
    assert (checkout / "build" / "main.o").read_text() == "object\n"
    assert not (checkout / "build" / "notes.txt").exists()


def test_existing_files_in_the_checkout_are_never_overwritten(tmp_path: Path) -> None:
    source, dest = tmp_path / "src", tmp_path / "dst"
    (source / "dir").mkdir(parents=True)
    (source / "dir" / "file").write_text("source\n")
    (dest / "dir").mkdir(parents=True)
    (dest / "dir" / "file").write_text("checkout's own\n")
    warnings: list[str] = []
    result = copy_files(str(source), str(dest), walk(str(source), "dir"), warnings.append)
    assert result.copied == [] and warnings == []
    assert (dest / "dir" / "file").read_text() == "checkout's own\n"


def test_a_symlinked_folder_in_the_destination_is_never_written_through(tmp_path: Path) -> None:
    source, dest, elsewhere = tmp_path / "src", tmp_path / "dst", tmp_path / "elsewhere"
    (source / "dir").mkdir(parents=True)
    (source / "dir" / "file").write_text("x\n")
    dest.mkdir()
    elsewhere.mkdir()
    os.symlink(elsewhere, dest / "dir")  # a tracked symlink where the folder would go
    result = copy_files(str(source), str(dest), ["dir/file"], lambda _m: None)
    assert result.copied == [] and list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("slow_disk", [False, True], ids=["one thread", "threads"])
def test_many_files_are_copied_by_clone_or_in_kernel_copy_on_a_fast_or_a_slow_disk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slow_disk: bool) -> None:
    """After the first files, a slow disk hands the rest to threads, a fast one keeps them
    on the calling thread: either way every file arrives, once."""
    monkeypatch.setattr(copies, "SLOW_FILE", 0.0 if slow_disk else 60.0)
    threads: set[int] = set()
    copy_one = copies.copy_one

    def counted(*args: object, **kwargs: object) -> bool:
        threads.add(threading.get_ident())
        return copy_one(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(copies, "copy_one", counted)
    source, dest = tmp_path / "src", tmp_path / "dst"
    for i in range(600):
        folder = source / f"pkg{i % 30}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.js").write_text(f"{i}\n" * 50)
    dest.mkdir()
    result = copy_files(str(source), str(dest), walk(str(source), "pkg0")
                        + [p for i in range(1, 30) for p in walk(str(source), f"pkg{i}")],
                        lambda m: None)
    assert len(result.copied) == 600 == len(set(result.copied))
    assert (dest / "pkg7" / "f7.js").read_text() == "7\n" * 50
    assert (len(threads) > 1) == slow_disk, threads
    if hasattr(os, "copy_file_range"):
        assert set(result.methods) & {"clone", "copy_file_range"}
