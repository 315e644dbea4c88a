"""Size strings and the du-like count of core/disk.py."""

from __future__ import annotations

import os

import pytest

from vibe_worktree.core.disk import human, parse_size, tree_bytes
from vibe_worktree.core.errors import VwtError


@pytest.mark.parametrize(("text", "size"), [
    ("20G", 20 * 1024**3), ("500M", 500 * 1024**2), ("1.5K", 1536), ("4096", 4096),
    ("2t", 2 * 1024**4), ("10GiB", 10 * 1024**3), ("7 MB", 7 * 1024**2),
])
def test_sizes_use_binary_units(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "G", "-1G", "1X", "big"])
def test_a_size_that_is_not_one_is_a_usage_error(text: str) -> None:
    with pytest.raises(VwtError) as failure:
        parse_size(text)
    assert failure.value.exit_code == 2


def test_human_sizes_are_short() -> None:
    assert [human(n) for n in (512, 2048, 15 * 1024**2, 3 * 1024**3 // 2)] == \
        ["512B", "2.0K", "15M", "1.5G"]


def test_tree_bytes_counts_a_hard_linked_file_once_and_skips_symlink_targets(tmp_path) -> None:
    (tmp_path / "a").write_bytes(b"x" * 100_000)
    before = tree_bytes(str(tmp_path))
    os.link(tmp_path / "a", tmp_path / "b")
    (tmp_path / "link").symlink_to("/usr")
    assert tree_bytes(str(tmp_path)) - before < 4096
    assert tree_bytes(str(tmp_path / "gone")) == 0
