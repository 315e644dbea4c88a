"""Sparse checkouts: a worktree holding only some folders (cone mode) plus top-level files.

The folders come from `vwt new --sparse DIR` or `sparse = [...]` at the top of the start
point's `.vibe/worktree.toml`, and are kept in the record (`sparse`, a key other readers
ignore) so that `restore` recreates the same set. git marks what is left out
skip-worktree, so status and snapshots never see it as deleted.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core import git as g
from ..core.errors import VwtError


def normalise(dirs: Sequence[str], where: str = "--sparse") -> tuple[str, ...]:
    """Folders relative to the top level, without a trailing `/`; a bad one is an error."""
    found: list[str] = []
    for raw in dirs:
        if not isinstance(raw, str):
            raise VwtError(f"{where}: {raw!r} is not a folder name", 2)
        folder = raw.strip().strip("/")
        parts = folder.split("/")
        if not folder or raw.startswith("/") or ".." in parts or "." in parts or "" in parts \
                or any(ord(c) < 32 for c in folder):
            raise VwtError(f"{where}: {raw!r} is not a folder inside the repository "
                           "(give paths relative to its top level)", 2)
        if folder not in found:
            found.append(folder)
    return tuple(found)


def configured(git: g.Git, toplevel: str, commit: str) -> tuple[str, ...]:
    """`sparse = [...]` of the start point's `.vibe/worktree.toml` (`settings.project_at`)."""
    from .settings import project_at

    data, label = project_at(git, toplevel, commit)
    value = [] if data is None else data.get("sparse", [])
    if not isinstance(value, list):
        raise VwtError(f"{label}: 'sparse' must be a list of folders")
    return normalise(value, f"{label}: sparse")


def populate(checkout: str, dirs: Sequence[str]) -> None:
    """Turn a `--no-checkout` worktree into a cone-mode sparse checkout of `dirs`."""
    user_git = g.Git(checkout, housekeeping=False)  # as the user would: a checkout runs hooks
    g.sparse_checkout_set(user_git, dirs)
    g.checkout_head(user_git)
