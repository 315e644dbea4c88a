"""vibe-worktree: one isolated git worktree per coding session.

The API lives in `vibe_worktree.api`; names are re-exported here lazily so
that `vwt --version` does not pay for importing them.
"""

from __future__ import annotations

__version__ = "0.1.0"

TYPE_CHECKING = False  # `typing` is slow to import; mypy treats this as True
if TYPE_CHECKING:
    from typing import Any

    from .api import Worktrees
    from .core.errors import VwtError
    from .landing.collisions import CollisionPair, ConflictsResult, WorktreeCollisions
    from .landing.merge import MergeResult
    from .landing.sync import SyncResult
    from .lifecycle.carry import Carried
    from .lifecycle.create import Created
    from .lifecycle.listing import Listed, WorktreeStatus
    from .lifecycle.prune import PruneResult
    from .lifecycle.remove import Removal, Snapshot
    from .runtime.ps import PsReport

_EXPORTS = {
    "Worktrees": "api", "Listed": "lifecycle.listing", "WorktreeStatus": "lifecycle.listing",
    "Created": "lifecycle.create",
    "Carried": "lifecycle.carry",
    "VwtError": "core.errors", "PruneResult": "lifecycle.prune", "Removal": "lifecycle.remove",
    "Snapshot": "lifecycle.remove",
    "ConflictsResult": "landing.collisions", "CollisionPair": "landing.collisions",
    "WorktreeCollisions": "landing.collisions",
    "MergeResult": "landing.merge", "SyncResult": "landing.sync",
    "PsReport": "runtime.ps",
}

__all__ = [
    "Carried", "CollisionPair", "ConflictsResult", "Created", "Listed", "MergeResult",
    "PruneResult", "PsReport", "Removal", "Snapshot", "SyncResult", "VwtError",
    "WorktreeCollisions", "WorktreeStatus", "Worktrees", "__version__",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'vibe_worktree' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)
