"""Snapshots and removal: the only code that deletes anything a user may have written.

Removal is a short sequence of idempotent steps (snapshot, move aside,
unregister, delete the branch, drop the record), so that `vwt prune` or a retry
finishes whatever a crash interrupted.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import suppress
from typing import NamedTuple

from . import git as g
from .errors import HeldError, ValidationFailed, VwtError
from .faults import checkpoint
from .layout import Claim, ensure_dir, rmdir_if_empty, unlink_if_exists
from .locks import REMOVING, Holder, acquire_holder
from .records import Record, Recovery, utc_now, write_recovery
from .worktrees import (
    MISSING,
    RESERVED,
    Checkout,
    Entry,
    Inspection,
    ensure_not_inside,
    filter_drivers,
    housekeeping_git,
    inspect_checkout,
    inspect_missing,
    repo_git_for,
    validate_checkout,
)

REMOVED = "removed"
KEPT_DIRTY = "kept_dirty"
KEPT_IN_USE = "kept_in_use"
NOT_FOUND = "not_found"
FORGOTTEN = "forgotten"


class SnapshotFailed(VwtError):
    pass


class Snapshot(NamedTuple):
    name: str
    ref: str
    commit: str

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "ref": self.ref, "commit": self.commit}


class Removal(NamedTuple):
    name: str
    outcome: str
    branch_deleted: bool
    snapshot_ref: str | None
    message: str = ""  # what a person should know (what would be lost, why a branch stayed)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name, "outcome": self.outcome,
            "branch_deleted": self.branch_deleted, "snapshot_ref": self.snapshot_ref,
        }


class Target(NamedTuple):
    """A worktree about to be snapshotted or removed, with everything proven about it."""

    claim: Claim
    record: Record
    checkout: Checkout | None  # None when the checkout is missing
    repo_git: g.Git  # runs in the common git dir

    @property
    def git(self) -> g.Git:
        return self.checkout.git if self.checkout else self.repo_git


def target_for(entry: Entry) -> Target:
    """Validate the entry's checkout (or its absence) before anything is touched."""
    record = entry.record
    if record is None or entry.problem is not None:
        raise ValidationFailed(f"{entry.name}: {entry.problem or 'no record'}; not touching it")
    if entry.state == MISSING:
        return Target(entry.claim, record, None, repo_git_for(entry.claim, record, None))
    checkout = validate_checkout(entry.claim)
    return Target(entry.claim, record, checkout, repo_git_for(entry.claim, record, checkout))


def inspect(target: Target) -> Inspection:
    if target.checkout is None:
        return inspect_missing(target.repo_git, target.record)
    return inspect_checkout(target.checkout, target.record)


def snapshot_problem(target: Target, inspection: Inspection) -> str | None:
    """Why a snapshot of this worktree would fail (checked before anything is written)."""
    name = target.claim.name
    if inspection.nested_repos:
        return (f"{name} holds a repository of its own at {inspection.nested_repos[0]}, "
                "which a snapshot cannot save")
    if inspection.dirty_submodules:
        return f"{name} has uncommitted work inside submodule {inspection.dirty_submodules[0]}"
    if inspection.head is None and (target.checkout is None or inspection.changes == 0):
        return f"{name} has no commit to snapshot"
    if target.checkout is not None and inspection.changes:
        git = target.checkout.git
        filtered = g.files_using_filters(git, filter_drivers(target.checkout))
        if filtered:
            return (f"{filtered[0]} uses a filter driver of the repository's own config; a "
                    "snapshot never runs it nor stages the file raw (commit or remove it yourself)")
    return None


def snapshot_commit(target: Target, inspection: Inspection) -> str:
    """Commit the worktree's full state with HEAD as parent; files, index, HEAD untouched."""
    problem = snapshot_problem(target, inspection)
    if problem:
        raise SnapshotFailed(problem)
    head = inspection.head
    parents = [head] if head else []
    message = f"vibe-worktree snapshot of {target.claim.name} (branch {target.record.branch})"
    if target.checkout is None or inspection.changes == 0:
        assert head is not None
        tree = g.rev_parse(target.git, f"{head}^{{tree}}")
        assert tree is not None
        return g.commit_tree(target.git, tree, parents, message)
    git = housekeeping_git(target.checkout)
    index = os.path.join(target.checkout.admin_dir, f"vwt-snapshot-{os.urandom(6).hex()}.index")
    try:
        import shutil

        with suppress(FileNotFoundError):  # no index yet: stage from scratch
            shutil.copyfile(os.path.join(target.checkout.admin_dir, "index"), index)
        tree = g.snapshot_tree(git, index)
    finally:
        unlink_if_exists(index)
    return g.commit_tree(git, tree, parents, message)


def snapshot(target: Target, inspection: Inspection | None = None) -> Snapshot:
    inspection = inspection or inspect(target)
    commit = snapshot_commit(target, inspection)
    g.set_ref(target.repo_git, target.claim.snapshot_ref, commit)
    return Snapshot(target.claim.name, target.claim.snapshot_ref, commit)


def recovery_for(target: Target, ref: str) -> Recovery:
    record = target.record
    return Recovery(
        name=record.name, branch=record.branch, repo_root=record.repo_root,
        base_commit=record.base_commit, snapshot_ref=ref, removed_at=utc_now(),
        extra={"branch_created": record.branch_created},
    )


def branch_is_safe_to_delete(target: Target, inspection: Inspection) -> bool:
    """The branch holds nothing the removal did not already account for.

    True when its tip is the worktree's HEAD (inspected, and snapshotted if
    dirty) or still the base commit.
    """
    tip = g.branch_tip(target.repo_git, target.record.branch)
    return tip is not None and tip in (inspection.head, target.record.base_commit)


def move_to_trash(claim: Claim) -> str | None:
    """Rename the checkout into `.trash` (atomic, instant); None when there is none."""
    if not os.path.lexists(claim.checkout):
        return None
    ensure_not_inside(claim.checkout)
    ensure_dir(claim.root.trash)
    trash = claim.trash_path()
    os.rename(claim.checkout, trash)
    return trash


def delete_trash(trash: str | None) -> None:
    if trash and os.path.isdir(trash) and not os.path.islink(trash):
        import shutil  # slow to import; only removals need it

        shutil.rmtree(trash, ignore_errors=True)


def drop_record_and_folders(claim: Claim) -> None:
    unlink_if_exists(claim.record_path)


def tidy_claim_folders(claim: Claim) -> None:
    """`rmdir` the claim's empty folders; never a recursive delete of a claim folder."""
    rmdir_if_empty(claim.holders_dir)
    rmdir_if_empty(claim.folder)
    rmdir_if_empty(os.path.dirname(claim.folder))
    rmdir_if_empty(os.path.dirname(claim.checkout))


def remove_target(
    target: Target, inspection: Inspection, *, delete_branch: bool, keep_recovery: str | None
) -> tuple[bool, str]:
    """Remove a checkout whose state is already saved or clean. Returns (branch_deleted, note)."""
    claim = target.claim
    if keep_recovery:
        write_recovery(claim.recovery_path, recovery_for(target, keep_recovery))
    checkpoint("rm.recovery_written")
    trash = move_to_trash(claim)
    checkpoint("rm.trashed")
    if not g.worktree_remove_entry(target.repo_git, claim.checkout):
        g.worktree_prune(target.repo_git)
    checkpoint("rm.unregistered")
    branch_deleted, note = False, ""
    if delete_branch:
        if branch_is_safe_to_delete(target, inspection):
            branch_deleted = g.delete_branch(target.repo_git, target.record.branch)
            if not branch_deleted:
                note = f"branch {target.record.branch} could not be deleted; it was kept"
        else:
            note = f"branch {target.record.branch} has commits the worktree did not; it was kept"
    checkpoint("rm.branch_deleted")
    drop_record_and_folders(claim)
    checkpoint("rm.record_dropped")
    delete_trash(trash)
    return branch_deleted, note


def acquire_removal(claim: Claim, ignore: frozenset[str]) -> Holder:
    """`.removing` refuses while any other live holder exists (HeldError)."""
    return acquire_holder(claim, REMOVING, exclusive=True, ignore=ignore)


Confirm = Callable[[str], bool]


def never(_question: str) -> bool:
    return False


def remove_worktree(
    entry: Entry | None,
    claim: Claim,
    *,
    confirm_dirty: Confirm = never,
    delete_branch: bool | None = None,
    confirm_branch: Confirm = never,
    ignore_holders: frozenset[str] = frozenset(),
) -> Removal:
    """`vwt rm`: the rules of the spec, in order; refusals are outcomes, not errors."""
    if entry is None:
        return Removal(claim.name, NOT_FOUND, False, None,
                       f"no managed worktree named {claim.name}")
    if entry.problem is None and entry.record is None:
        os.unlink(claim.recovery_path)
        tidy_claim_folders(claim)
        return Removal(claim.name, FORGOTTEN, False, None,
                       f"forgot {claim.name}; its snapshot stays at {claim.snapshot_ref}")
    try:
        removing = acquire_removal(claim, ignore_holders)
    except HeldError as exc:
        return Removal(claim.name, KEPT_IN_USE, False, None, exc.message)
    try:
        return _remove_held(entry, removing, confirm_dirty, delete_branch, confirm_branch)
    finally:
        removing.release()
        tidy_claim_folders(claim)


def _remove_held(
    entry: Entry, removing: Holder, confirm_dirty: Confirm, delete_branch: bool | None,
    confirm_branch: Confirm,
) -> Removal:
    claim = entry.claim
    if entry.state == RESERVED and entry.problem is None:
        return _drop_abandoned_reservation(claim)
    target = target_for(entry)
    inspection = inspect(target)
    ref = None
    if not inspection.clean:
        loss = inspection.describe_loss()
        if not confirm_dirty(f"{claim.name} has {loss}; remove it anyway (a snapshot is kept)?"):
            return Removal(claim.name, KEPT_DIRTY, False, None,
                           f"{claim.name} has {loss}; nothing removed (pass -y to remove it "
                           f"after saving a snapshot)")
        ref = snapshot(target, inspection).ref
    checkpoint("rm.inspected")
    record = target.record
    if record.branch_created:
        drop_branch = True
    elif delete_branch is not None:
        drop_branch = delete_branch
    else:
        drop_branch = confirm_branch(f"delete branch {record.branch}, which existed before?")
    deleted, note = remove_target(target, inspection, delete_branch=drop_branch,
                                  keep_recovery=ref)
    if not drop_branch and not record.branch_created:
        note = note or f"kept branch {record.branch}, which existed before"
    return Removal(claim.name, REMOVED, deleted, ref, note)


def _drop_abandoned_reservation(claim: Claim) -> Removal:
    """A reservation no live creator holds: only an empty one can simply go."""
    if os.path.lexists(claim.checkout) and not rmdir_if_empty(claim.checkout):
        raise ValidationFailed(
            f"{claim.name} is an interrupted creation with files in it; run vwt new "
            f"{claim.name} to finish it, then remove it"
        )
    drop_record_and_folders(claim)
    return Removal(claim.name, REMOVED, False, None)
