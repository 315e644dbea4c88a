"""Whether a worktree's setup finished: its post_create hooks, as its record keeps them.

A hook that failed, timed out or was cut short (Ctrl-C, a kill) leaves a worktree that
works but lacks what the hook makes (dependencies, a build), so it must never read as done.
The record says which hooks are still to succeed, in `setup_pending` (a key of our own:
Vibe keeps keys it does not know, and a new file in the claim folder would stop its rmdir):

- absent: done (also every record Vibe or an older vwt wrote);
- `true`: the post_create hooks are due and none is known to have succeeded: written with
  the reservation and kept in the record that gets the base commit, so a kill at any moment
  after it still reads as unfinished (the creation drops it when there is no hooks file);
- a list of `user:NAME` / `project:NAME` / `<file>:NAME` (imported from another tool's
  file): the hooks that have not succeeded yet. A hook is in it before it starts and taken
  out once it succeeded (a background hook by its keeper).

`vwt new NAME` that reuses the worktree runs those hooks again, and only those.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection

from ..core.layout import Claim
from ..core.locks import (
    registry_lock,
    running_hooks,
)
from ..core.records import CorruptRecord, Record, read_record, write_record

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass

KEY = "setup_pending"
DONE = "done"
RUNNING = "running"  # a post_create hook still runs (in the background, or for a live `new`)
INCOMPLETE = "incomplete"
HOLDER = ".setup"  # held by the `new` (or `restore`) running the post_create hooks


def any_hooks_file(home: str, checkout: str, repo_root: str | None = None) -> bool:
    """A few stats, so that the hooks module (and TOML) loads only where hooks exist:
    `repo_root`, the main checkout, may hold another tool's setup file."""
    from .setup_files import present

    return (os.path.exists(f"{home}/worktree.toml")
            or os.path.exists(f"{checkout}/.vibe/worktree.toml")
            or (repo_root is not None and present(repo_root) is not None))


def hooks_due(home: str, checkout: str, sparse: Collection[str],
              repo_root: str | None = None) -> bool:
    """post_create hooks may run for this new checkout (a sparse one's project hooks are
    read from its start point, so it may have some without a file in it)."""
    return bool(sparse) or any_hooks_file(home, checkout, repo_root)


# -- the record's key -------------------------------------------------------------------------
def pending(record: Record) -> bool:
    """Some post_create hook is still to succeed."""
    value = record.extra.get(KEY) if record.extra else None
    return value is True or (isinstance(value, list) and bool(pending_ids(record)))


def still_pending(claim: Claim) -> bool:
    """The worktree's record says some post_create hook is still to succeed."""
    try:
        return pending(read_record(claim.record_path, claim.name))
    except (OSError, CorruptRecord):
        return False


def pending_ids(record: Record) -> frozenset[str] | None:
    """The ids of the hooks still to succeed; None: every post_create hook (`true`)."""
    value = record.extra.get(KEY) if record.extra else None
    if value is True:
        return None
    if isinstance(value, list):
        return frozenset(v for v in value if isinstance(v, str))
    return frozenset()  # anything else we did not write: nothing is known to be due


def marked(record: Record) -> Record:
    """The record with every post_create hook due."""
    return record._replace(extra={**record.extra, KEY: True})


def unmarked(record: Record) -> Record:
    """The record with nothing due."""
    if KEY not in record.extra:
        return record
    return record._replace(extra={k: v for k, v in record.extra.items() if k != KEY})


def _with_pending(record: Record, ids: Collection[str]) -> Record:
    if not ids:
        return unmarked(record)
    return record._replace(extra={**record.extra, KEY: sorted(ids)})


def state(record: Record, holders: list[str]) -> str:
    """`running`, `incomplete` or `done` for a ready worktree with these live holders."""
    if HOLDER in holders or running_hooks(holders):
        return RUNNING
    return INCOMPLETE if pending(record) else DONE


def settle(claim: Claim, succeeded: Collection[str]) -> None:
    """Take the hooks that `succeeded` out of the record's pending ones. A read, change and
    write under the registry lock, so a background hook's keeper and the `new` running the
    other hooks never undo each other's step; nothing is written when nothing changes."""
    def without(record: Record) -> Record:
        due = pending_ids(record)
        if due is None or not due & set(succeeded):
            return record
        return _with_pending(record, due - set(succeeded))

    _rewrite(claim, without)


def note_due(claim: Claim, ids: Collection[str]) -> None:
    """The record lists `ids` as the post_create hooks still to succeed (before they run)."""
    _rewrite(claim, lambda record: _with_pending(record, ids))


def _rewrite(claim: Claim, change: Callable[[Record], Record]) -> None:
    with registry_lock(claim.root):
        try:
            record = read_record(claim.record_path, claim.name)
        except (OSError, CorruptRecord):
            return  # gone or not ours to rewrite: list and doctor say so
        changed = change(record)
        if changed != record:
            write_record(claim.record_path, changed)
