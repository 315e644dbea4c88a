"""`<root>/.trash`: where a removal moves a checkout aside (an atomic rename) before deleting
it, and where what an interrupted removal left is found and finished."""

from __future__ import annotations

import os
import re
import stat

from ..core.layout import Claim, Root, ensure_dir
from .worktrees import ensure_not_inside


def move_to_trash(claim: Claim) -> str | None:
    """Rename the checkout into `.trash` (atomic, instant); None when there is none."""
    if not os.path.lexists(claim.checkout):
        return None
    ensure_not_inside(claim.checkout)
    ensure_dir(claim.root.trash, claim.root.path)
    trash = claim.trash_path()
    os.rename(claim.checkout, trash)
    return trash


def delete_trash(*trashes: str | None) -> None:
    """Delete checkouts moved into `.trash`, all at once on threads that share the work
    whatever the checkouts' shape (`core/deletion.py`); never through a symbolic link."""
    from ..core.deletion import delete_trees

    delete_trees([trash for trash in trashes if trash])


_TRASH_NAME = re.compile(r".+-[0-9a-f]{32}")  # `.trash/<bucket>-<name>-<32 hex>`
_HEX32 = re.compile(r"[0-9a-f]{32}")


def trash_leftovers(root: Root, prefix: str = "") -> list[str]:
    """The `.trash` entries named as ours (only those starting with `<bucket>-<name>-` when
    `prefix` says so); none when `.trash` is not a real directory."""
    try:
        if not stat.S_ISDIR(os.lstat(root.trash).st_mode):
            return []
        names = os.listdir(root.trash)
    except FileNotFoundError:
        return []
    if prefix:
        return [n for n in names if n.startswith(prefix) and _HEX32.fullmatch(n, len(prefix))]
    return [n for n in names if _TRASH_NAME.fullmatch(n)]


def empty_trash(root: Root, prefix: str = "") -> int | None:
    """Finish deleting what interrupted removals moved aside: `trash_leftovers`. Returns how
    many, or None when `.trash` is not a real directory (it is then left alone)."""
    try:
        if not stat.S_ISDIR(os.lstat(root.trash).st_mode):
            return None
    except FileNotFoundError:
        return 0
    ours = trash_leftovers(root, prefix)
    delete_trash(*(f"{root.trash}/{name}" for name in ours))
    return len(ours)


def delete_leftover_trash(claim: Claim) -> bool:
    """Finish deleting this claim's checkouts that an interrupted removal left in `.trash`;
    True when there were any."""
    return bool(empty_trash(claim.root, f"{claim.bucket}-{claim.name}-"))


def leftover_trash(claim: Claim) -> list[str]:
    """The folders `delete_leftover_trash` would delete, for a caller that deletes them."""
    return [f"{claim.root.trash}/{name}"
            for name in trash_leftovers(claim.root, f"{claim.bucket}-{claim.name}-")]
