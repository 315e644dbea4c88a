"""Disk use: what a checkout's own files take, as `du -s` counts them, and size strings.

A file is counted by the blocks it occupies (`st_blocks` * 512, so sparse files and
filesystem compression count as du counts them), once per checkout however many hard links
it has there; a copy-on-write clone is counted in full by each checkout that holds it (du
cannot see the sharing either). Symlinks are counted themselves, never followed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from .errors import EXIT_USAGE, VwtError

_UNITS = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*", re.IGNORECASE)


def tree_bytes(path: str) -> int:
    """Bytes of everything under `path` (the folder itself included), 0 when it is gone."""
    try:
        top = os.lstat(path)
    except OSError:
        return 0
    total = top.st_blocks * 512
    seen: set[tuple[int, int]] = set()
    folders = [path]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as found:
                for entry in found:
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if info.st_nlink > 1 and not entry.is_dir(follow_symlinks=False):
                        key = (info.st_dev, info.st_ino)
                        if key in seen:
                            continue
                        seen.add(key)
                    total += info.st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
        except OSError:
            continue
    return total


def sizes(paths: Sequence[str]) -> list[int]:
    """`tree_bytes` of each path, several at a time (stat calls let other threads run)."""
    from .git import map_parallel

    return map_parallel(tree_bytes, paths)


def parse_size(text: str, what: str = "--max-size") -> int:
    """`20G`, `500M`, `1.5T`, `4096` (bytes): binary units (K = 1024 bytes)."""
    match = _SIZE.fullmatch(text)
    if match is None:
        raise VwtError(f"{what} {text!r} is not a size; write it as 20G, 500M or a number of "
                       "bytes (K, M, G, T are 1024, 1024², 1024³, 1024⁴ bytes)", EXIT_USAGE)
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def human(size: int) -> str:
    """`1.5G`, `320M`, `12K`, `512B`: what the SIZE column shows."""
    value = float(size)
    for unit in ("B", "K", "M", "G"):
        if value < 1024:
            return f"{value:.0f}{unit}" if unit == "B" or value >= 10 else f"{value:.1f}{unit}"
        value /= 1024
    return f"{value:.1f}T"
