"""`vwt sync NAME`: rebase the worktree's own commits onto the target (SPEC §8 sync).

The rebased commits are computed in the object store first (see `replay`), so a
conflict leaves branch, files and record exactly as they were; only a complete
result moves the branch and the checkout (`git reset --keep`, the checkout being
clean) and then the record's `base_commit`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ..core import git as g
from ..core.errors import EXIT_ERROR, EXIT_NEEDS_CONFIRMATION, EXIT_OK, HeldError, VwtError
from ..core.integration import Tips, read_tips
from ..core.layout import Claim
from ..core.locks import acquire_holder, new_holder_id
from ..core.records import write_record
from ..lifecycle.remove import Target, inspect, tidy_claim_folders
from ..lifecycle.worktrees import housekeeping_git
from . import replay
from .merge import checked_out_target, fetch_target

SYNCED = "synced"
UP_TO_DATE = "up_to_date"
CONFLICT = "conflict"
KEPT_DIRTY = "kept_dirty"
EXIT_CODES = {SYNCED: EXIT_OK, UP_TO_DATE: EXIT_OK, KEPT_DIRTY: EXIT_NEEDS_CONFIRMATION}

Warn = Callable[[str], None]


class SyncResult(NamedTuple):
    name: str
    outcome: str
    onto: str  # `main`, or `origin/main` when it rebased onto the remote-tracking branch
    head: str | None
    conflicts: tuple[str, ...] = ()
    message: str = ""

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.outcome, EXIT_ERROR)

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "outcome": self.outcome, "onto": self.onto,
                "head": self.head, "conflicts": list(self.conflicts)}


def _onto(git: g.Git, tips: Tips) -> tuple[str, str]:
    """(short name, commit): `<remote>/T` when it is ahead of T, else T."""
    found = tips.target
    if (found.remote_commit and found.remote_name and found.remote_commit != found.commit
            and found.commit and g.is_ancestor(git, found.commit, found.remote_commit)):
        return found.remote_name, found.remote_commit
    assert found.commit is not None
    return found.branch, found.commit


def sync(claim: Claim, onto_branch: str | None, fetch: bool, warn: Warn) -> SyncResult:
    _entry, target = checked_out_target(claim, "synced")
    if fetch:
        fetch_target(target, onto_branch, warn)
    tips = read_tips(target.repo_git, onto_branch)
    if tips is None:
        raise VwtError("no target branch (no main or master, no remote default); pass --onto")
    try:  # keeps retention away while the branch moves
        hold = acquire_holder(claim, new_holder_id())
    except HeldError as exc:
        raise VwtError(exc.message) from None
    try:
        return _sync_held(claim, target, tips, target.record.base_commit)
    finally:
        hold.release()
        tidy_claim_folders(claim)


def _sync_held(claim: Claim, target: Target, tips: Tips, base_commit: str | None
               ) -> SyncResult:
    assert target.checkout is not None
    git = housekeeping_git(target.checkout)
    inspection = inspect(target)
    name, onto = _onto(git, tips)
    head = inspection.head
    if head is None:
        raise VwtError(f"{claim.name} has no commit to sync")
    result = SyncResult(claim.name, "", name, head)
    if inspection.changes:
        return result._replace(outcome=KEPT_DIRTY, message=(
            f"{claim.name} has {inspection.describe_loss()}; nothing synced (commit or "
            "stash them first)"))
    if g.is_ancestor(git, onto, head):
        return result._replace(outcome=UP_TO_DATE)
    merging = git._replace(neutralised_merge_drivers=tips.merge_drivers)
    landed = replay.rebase(merging, onto, base_commit or onto, head)
    if landed.commit is None:
        return result._replace(outcome=CONFLICT, conflicts=landed.conflicts, message=(
            f"{claim.name} conflicts with {name} in {len(landed.conflicts)} file(s); "
            "nothing changed"))
    g.reset_keep(git, landed.commit)
    write_record(target.claim.record_path, target.record.with_base(onto))
    return result._replace(outcome=SYNCED, head=landed.commit)
