"""Repairing what a crash or a kill left, at the start of every prune (under its lock): stale
holder files, reservations a dead creator abandoned (discarded, or the checkout git had
finished adopted), half-written records, interrupted restores, adoptions and checkouts git
never finished, the index and ref locks a killed vwt left, and `.trash`.

What a creator left is settled at once when it is provably dead (`leftovers.creator_dead`);
otherwise only once its reservation is RESERVATION_GRACE old: another tool may still be
making it.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable

from ..core import git as g
from ..core.errors import VwtError
from ..core.git import commit_of, head_commit
from ..core.layout import Claim, Root, is_empty_dir, rmdir_if_empty, unlink_if_exists
from ..core.light import NamedTuple
from ..core.locks import STARTING
from ..core.records import write_record
from . import adoption
from .leftovers import (
    Stale,
    creator_dead,
    release_dead_creators_branch_lock,
    release_dead_repo_locks,
    release_dead_restorers_branch_lock,
    sweep_stale_holders,
)
from .leftovers import live as _live
from .remove import (
    Doomed,
    Target,
    drop_record_and_folders,
    holds_only,
    inspect,
    remove_all,
    tidy_claim_folders,
)
from .trash import empty_trash, trash_leftovers
from .unfinished import (
    drop_created_branch,
    finish_in_place,
    half_made,
    left_by_dead_creator,
    release_dead_locks,
    tear_down,
    unfinished,
)
from .worktrees import (
    BROKEN,
    READY,
    RESERVED,
    Entry,
    entries,
    repo_git_for,
    validate_checkout,
    validate_for_reuse,
)

Warn = Callable[[str], None]
RESERVATION_GRACE = 600.0  # seconds an empty reservation may wait for its creator


class Tidied(NamedTuple):
    """What `tidy` did (or, with dry_run, would do), and the entries as they are after."""

    found: list[Entry]
    stale_holders_removed: int
    reservations_discarded: list[dict[str, object]]
    trash_left: int  # dry run: the leftovers of interrupted removals in `.trash`


def tidy(root: Root, dry_run: bool, warn: Warn) -> Tidied:
    """Stale holders, reservations and `.trash`; under the `.prune` lock."""
    found = entries(root, root.buckets())
    reserved = {(e.claim.bucket, e.name) for e in found if e.state == RESERVED}
    stale = sweep_stale_holders(root, dry_run, reserved)
    for entry in found:
        if entry.state == BROKEN:
            warn(f"{entry.claim.folder}: {entry.problem}; left alone")
    discarded: list[dict[str, object]] = []
    _settle_reservations(found, dry_run, discarded, warn, stale)
    trash_left = 0
    if dry_run:
        trash_left = len(trash_leftovers(root))
    else:
        release_dead_repo_locks(found, stale, warn)
        _drop_empty_unclaimed_folders(root, found)
        found = entries(root, root.buckets())  # settling changed some of them
    return Tidied(found, sum(len(ids) for ids in stale.values()), discarded, trash_left)


def _drop_empty_unclaimed_folders(root: Root, found: list[Entry]) -> None:
    """`rmdir` the empty checkout folders no record names: a creation (or a restore) killed
    between taking the name (`mkdir`) and writing its record, both under the `.prune` lock
    we hold. A removed worktree's recovery record names no checkout: its folder is not
    claimed by it (restore makes the folder anew)."""
    claimed = {(entry.claim.bucket, entry.name) for entry in found
               if entry.record is not None or entry.state == BROKEN}
    try:
        buckets = [b for b in os.listdir(root.path) if not b.startswith(".")]
    except OSError:
        return
    for bucket in buckets:
        try:
            names = os.listdir(os.path.join(root.path, bucket))
        except OSError:
            continue
        for name in names:
            claim = root.claim(bucket, name)
            if (bucket, name) not in claimed and rmdir_if_empty(claim.checkout):
                _drop_half_written_records(claim)
                tidy_claim_folders(claim)  # the folders it had made for its record, if empty


def _drop_half_written_records(claim: Claim) -> None:
    """The temporary files of a record write the killed reservation never renamed into
    place (`write_atomically`'s names): left, they kept its claim folder and so the name."""
    stem = re.escape(os.path.basename(claim.record_path))
    try:
        names = os.listdir(claim.folder)
    except OSError:
        return
    for name in names:
        if re.fullmatch(rf"\.{stem}\.[0-9a-f]{{12}}\.tmp", name):
            unlink_if_exists(os.path.join(claim.folder, name))


def empty_trash_left(root: Root, warn: Warn) -> int:
    """What interrupted removals left in `.trash`, deleted: outside the lock (nobody else
    will ever use those folders), so creators never wait for a big deletion. How many."""
    deleted = empty_trash(root)
    if deleted is None:
        warn(f"{root.trash} is not a real directory; left alone")
    return deleted or 0


def _settle_reservations(found: list[Entry], dry_run: bool, discarded: list[dict[str, object]],
                         warn: Warn, stale: Stale) -> None:
    """Discard empty abandoned reservations; adopt checkouts a crashed creator finished.

    What a creator left is settled at once when it is provably dead (`creator_dead`);
    otherwise only once the reservation is RESERVATION_GRACE old."""
    now = time.time()
    for entry in found:
        claim = entry.claim
        if entry.state == READY and entry.recovery is not None and not dry_run:
            _drop_stale_recovery(entry, warn)
        if entry.state == READY and not dry_run:
            _finish_unfinished(entry, warn)
        if entry.state != RESERVED or entry.record is None:
            continue
        if STARTING in _live(entry):
            continue
        # an adoption holds `.starting` from start to end: dead, it needs no grace period
        adopted = adoption.source_of(entry.record) is not None
        if entry.recovery is not None and not dry_run:
            release_dead_restorers_branch_lock(entry, warn)
        elif not adopted and not dry_run:
            release_dead_creators_branch_lock(entry, warn)
        waiting = (not creator_dead(entry, stale)
                   and now - entry.record.claimed_epoch() < RESERVATION_GRACE)
        if is_empty_dir(claim.checkout):
            if not adopted and waiting:
                continue
            if not dry_run:
                if adopted:
                    adoption.release_source(claim, entry.record)
                if os.path.isdir(claim.checkout) and not os.path.islink(claim.checkout):
                    os.rmdir(claim.checkout)
                if not adopted:
                    _drop_branch_of_killed_add(entry)
                drop_record_and_folders(claim)
                tidy_claim_folders(claim)
            discarded.append(_label(entry))
        elif adopted and not dry_run:
            _finish_adoption(entry, warn)
        elif entry.recovery is not None:
            if not waiting and not dry_run:
                _undo_interrupted_restore(entry, warn)
            else:
                warn(f"{claim.name}: a restore was interrupted; finish it with: vwt restore "
                     f"{claim.name}")
        else:
            _settle_interrupted_creation(entry, waiting, dry_run, discarded, warn)


def _drop_branch_of_killed_add(entry: Entry) -> None:
    """A creation killed inside `git worktree add -b` after git made the branch but before
    the checkout: the branch goes with the reservation when nothing could be lost."""
    assert entry.record is not None
    if not entry.record.branch_created:
        return
    try:
        drop_created_branch(repo_git_for(entry.claim, entry.record, None), entry.record.branch)
    except VwtError:
        pass


def _settle_interrupted_creation(entry: Entry, waiting: bool, dry_run: bool,
                                 discarded: list[dict[str, object]], warn: Warn) -> None:
    """A dead creator's checkout: adopted when git finished it (Vibe's creations have no
    other step); else, unless still `waiting` for a creator not proven dead, removed with
    its reservation (it was never handed out, and git never finished writing it: it holds
    nothing of the user's)."""
    assert entry.record is not None
    claim = entry.claim
    try:
        checkout, finished = left_by_dead_creator(claim, entry.record, "")
        if finished:
            if not dry_run:
                from .include import copy_included_files  # the step a kill may have cut short

                copy_included_files(entry.record.repo_root, claim.checkout, claim.root.home,
                                    warn, repair=True)
                write_record(claim.record_path,
                             entry.record.with_base(head_commit(checkout.git)))
                warn(f"{claim.name}: finished an interrupted creation")
            return
        if waiting:
            return
        if not dry_run:
            tear_down(claim, checkout)
            if entry.record.branch_created:
                drop_created_branch(g.Git(checkout.common_dir), entry.record.branch)
            drop_record_and_folders(claim)
            tidy_claim_folders(claim)
    except VwtError as exc:
        warn(f"{claim.name}: interrupted creation left {claim.checkout}: {exc}")
        return
    discarded.append(_label(entry))


def _finish_unfinished(entry: Entry, warn: Warn) -> None:
    """A record that calls ready a checkout git never finished (an older vwt adopted it):
    its lock goes and its index is read from HEAD; no file in it is touched."""
    try:
        checkout = validate_checkout(entry.claim)
    except VwtError:
        return
    if unfinished(checkout) is None or _live(entry):
        return
    try:
        finish_in_place(checkout)
    except VwtError as exc:
        warn(f"{entry.name}: {checkout.path} was never finished by git and could not be "
             f"repaired: {exc}")
        return
    warn(f"{entry.name}: git never finished checking out {checkout.path}; its index is "
         f"repaired, and `git checkout -- .` there brings back the files git did not write")


def _finish_adoption(entry: Entry, warn: Warn) -> None:
    assert entry.record is not None
    try:
        adoption.finish_interrupted(entry.claim, entry.record)
    except VwtError as exc:
        warn(f"{entry.name}: an interrupted adoption left {entry.claim.checkout}: {exc}")
        return
    warn(f"{entry.name}: finished an interrupted adoption")


def _undo_interrupted_restore(entry: Entry, warn: Warn) -> None:
    """Take back the checkout an abandoned restore left, back to a restorable snapshot.

    Only when the checkout holds nothing but what the snapshot already has: at the
    snapshot's parent, every file there as the snapshot or its parent has it (a restore
    killed while git wrote the files leaves some of each).
    """
    assert entry.record is not None and entry.recovery is not None
    claim = entry.claim
    made = half_made(claim)
    if made is not None:  # killed inside git's add, before any file: nothing to look at
        tear_down(claim, made)
        drop_record_and_folders(claim)  # recovery.json stays: restorable as before
        warn(f"{claim.name}: undid an interrupted restore; run vwt restore {claim.name} again")
        return
    try:
        checkout = validate_for_reuse(claim, entry.record, "")
        release_dead_locks(checkout)  # the restorer is dead: no live `.starting`
        target = Target(claim, entry.record, checkout, repo_git_for(claim, None, checkout))
        inspection = inspect(target)
        snapshot = commit_of(target.repo_git, entry.recovery.snapshot_ref)
        parent = commit_of(target.repo_git, f"{snapshot}^1") if snapshot else None
        if snapshot is None or parent is None or inspection.head != parent:
            raise VwtError("it is not at the snapshot's parent")
        if inspection.changes and not holds_only(target, inspection, (snapshot, parent)):
            raise VwtError("it has files the snapshot does not")
    except VwtError as exc:
        warn(f"{claim.name}: an interrupted restore left {claim.checkout} ({exc}); "
             f"left alone")
        return
    remove_all([Doomed(target, inspection, None, entry.record.branch_created)])
    warn(f"{claim.name}: undid an interrupted restore; run vwt restore {claim.name} again")


def _drop_stale_recovery(entry: Entry, warn: Warn) -> None:
    """A complete record beside recovery.json: the worktree exists, so the recovery record
    is stale (an interrupted rm or restore). Its snapshot ref stays. Not while someone
    holds it: a removal in progress writes recovery.json before it moves the checkout away."""
    if _live(entry):
        return
    try:
        validate_checkout(entry.claim)
    except VwtError:
        return
    unlink_if_exists(entry.claim.recovery_path)
    warn(f"{entry.name}: dropped a stale recovery record (its snapshot ref stays)")


def _label(entry: Entry) -> dict[str, object]:
    return {"name": entry.name, "bucket": entry.claim.bucket}
