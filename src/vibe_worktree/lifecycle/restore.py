"""`vwt restore`: recreate a worktree removed with a snapshot, its files as uncommitted
changes, on its branch (or a `-restored` one when that branch has moved on)."""

from __future__ import annotations

import os

from ..core import git as g
from ..core.errors import GitFailed, NotFound, ValidationFailed, VwtError
from ..core.faults import checkpoint
from ..core.layout import Claim, is_empty_dir, unlink_if_exists
from ..core.locks import STARTING, Holder, acquire_holder, being_removed, prune_lock
from ..core.records import Record, Recovery, write_record
from ..core.ref_locks import release_dead_ref_locks
from . import leasing
from .create import (
    Created,
    Output,
    Reserved,
    copy_included,
    created_of,
    has_git_file,
    new_record,
    reserve,
    with_setup,
)
from .unfinished import half_made, release_dead_locks, tear_down
from .worktrees import Entry, Repo, load_entry, require_trusted, validate_for_reuse


def restore(repo: Repo, name: str, out: Output, setup: bool = False) -> Created:
    """Recreate a snapshotted-and-removed worktree with its files as uncommitted changes.

    A restore that was interrupted is finished rather than refused: its reservation
    is taken over and the snapshot's files put in place again (idempotent). `setup`: its
    post_create hooks will run.
    """
    claim = repo.claim(name)
    entry = load_entry(claim)
    if entry is None:
        raise NotFound(f"no snapshot of {name!r} in this repository; see vwt list")
    if entry.problem is not None:
        require_trusted(entry)
    if entry.has_holders and being_removed(claim):  # its snapshot is not complete yet
        raise VwtError(f"{name} is being removed right now; restore it once that finishes")
    if entry.recovery is None:
        raise VwtError(f"{name} is not removed; nothing to restore (it is at {claim.checkout})")
    git = repo.git
    snapshot, parent = _snapshot_and_parent(git, entry.recovery.snapshot_ref)
    if entry.record is not None and not entry.record.reserved:
        # restored already; only dropping recovery.json was left undone
        validate_for_reuse(claim, entry.record, repo.info.common_dir)
        unlink_if_exists(claim.recovery_path)
        return created_of(repo, entry.record, True)
    if not entry.has_holders:  # no removal alive: the lock a killed rm's branch deletion left
        release_dead_ref_locks(repo.info.common_dir, None, entry.recovery.branch, (parent,))
    with prune_lock(repo.root):
        if load_entry(claim) != entry:
            raise VwtError(f"{name} changed while restoring; try again")
        record, starting = _reserve_restore(repo, claim, entry, parent, setup)
    branch = record.branch
    create_branch = g.branch_tip(git, branch) is None
    with Reserved(claim, starting):
        checkpoint("restore.reserved")
        record = _lease_restored(repo, claim, record, entry.recovery)
        checkpoint("restore.leased")
        if entry.record is not None:  # a killed restore's reservation: its gits died with it
            release_dead_ref_locks(repo.info.common_dir, None, branch, (parent,))
        if has_git_file(claim) and (made := half_made(claim)):  # git never got to the files
            tear_down(claim, made)
            os.mkdir(claim.checkout)
        if has_git_file(claim):  # a killed restore's checkout: its gits died with it
            release_dead_locks(validate_for_reuse(claim, record, repo.info.common_dir))
        else:
            g.worktree_add(git, claim.checkout, branch=branch, start=parent,
                           create_branch=create_branch, progress=out.progress,
                           no_checkout=bool(record.sparse))
            if record.sparse:
                from .sparse import populate

                populate(claim.checkout, record.sparse)
        checkpoint("restore.added")
        checkout = validate_for_reuse(claim, record, repo.info.common_dir)
        if g.head_commit(checkout.git) != parent:
            raise ValidationFailed(f"{claim.checkout} is not at the snapshot's parent {parent}")
        user_git = g.Git(claim.checkout, housekeeping=False)
        user_git.run("read-tree", "--reset", "-u", snapshot)
        user_git.run("reset", "--quiet", "--no-refresh")
        checkpoint("restore.populated")
        copy_included(repo, claim, out)
        base = _base_before_removal(git, entry.recovery, parent)
        final = with_setup(repo, claim, record.with_base(base))
        write_record(claim.record_path, final)
        checkpoint("restore.recorded")
        os.unlink(claim.recovery_path)
    if branch != entry.recovery.branch:
        out.warn(f"branch {entry.recovery.branch} has moved on; restored onto {branch}")
    return created_of(repo, final, True)


def _lease_restored(repo: Repo, claim: Claim, record: Record, recovery: Recovery) -> Record:
    """The block it had before its removal when that is still free, else one of that size."""
    old = recovery.ports
    count = len(old) if old else leasing.count_for_checkout(repo.root.home, repo.info.toplevel)
    return leasing.lease_reserved(repo.root, claim, record, count, old[0] if old else None)


def _snapshot_and_parent(git: g.Git, ref: str) -> tuple[str, str]:
    snapshot = g.commit_of(git, ref)
    if snapshot is None:
        raise GitFailed(f"{ref} is gone; the worktree cannot be restored")
    parent = g.commit_of(git, f"{snapshot}^1")
    if parent is None:
        raise GitFailed(f"{ref} has no parent commit to restore onto")
    return snapshot, parent


def _base_before_removal(git: g.Git, recovery: Recovery, parent: str) -> str:
    """The base the worktree had before its removal (SPEC §16): its own commits stay
    `ahead`, so `rm` asks again before they go. A recovery record without one (or naming a
    commit the repository no longer has) gets the merge base with the target branch, as an
    adopted worktree does, never the snapshot's parent, which would call them no work."""
    base = recovery.base_commit
    if base is not None and g.commit_of(git, base) == base:
        return base
    from .adoption import base_commit

    return base_commit(git, parent)


def _reserve_restore(repo: Repo, claim: Claim, entry: Entry, parent: str, setup: bool
                     ) -> tuple[Record, Holder]:
    """Under the prune lock: a fresh reservation, or the one a crashed restore left."""
    assert entry.recovery is not None
    if entry.record is not None:  # reserved by an earlier restore that did not finish
        try:
            starting = acquire_holder(claim, STARTING)
        except VwtError:
            raise VwtError(f"{claim.name} is being restored by another process") from None
        if not os.path.isdir(claim.checkout):
            os.mkdir(claim.checkout)
        return entry.record, starting
    branch, create_branch = _restore_branch(repo.git, entry.recovery.branch, parent)
    if os.path.isdir(claim.checkout) and is_empty_dir(claim.checkout):
        os.rmdir(claim.checkout)
    elif os.path.lexists(claim.checkout):
        raise ValidationFailed(f"{claim.checkout} exists; move it away before restoring")
    record = new_record(repo, claim.name, branch, create_branch or entry.recovery.branch_created,
                         entry.recovery.sparse, setup)
    return record, reserve(claim, record)


def _restore_branch(git: g.Git, branch: str, parent: str) -> tuple[str, bool]:
    """The branch to restore onto, and whether it must be created at `parent`."""
    tip = g.branch_tip(git, branch)
    if tip is None:
        return branch, True
    if tip == parent and g.branch_checked_out_elsewhere(git, branch) is None:
        return branch, False
    for n in range(1, 101):
        candidate = f"{branch}-restored" if n == 1 else f"{branch}-restored-{n}"
        if g.branch_tip(git, candidate) is None:
            return candidate, True
    raise VwtError(f"too many {branch}-restored branches; delete some")
