"""`vwt sync NAME`: rebase the worktree's own commits onto the target (SPEC §8 sync).

The rebased commits are computed in the object store first (see `replay`), so a
conflict leaves branch, files and record exactly as they were; only a complete
result moves the branch and the checkout (the checkout being clean, as `merge` moves
its target: a kill part-way is finished by the next `sync`, `merge` or `prune`) and
then the record's `base_commit`.

With `stop_on_conflict` a conflict is instead left to resolve (§8 "Resolving a
conflict"): a real `git rebase` runs in the worktree and stops at the first conflicting
commit; `--continue` and `--abort` then drive that rebase. The record changes only when
the rebase completes, so an abort leaves it exactly as it was.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ..core import git as g
from ..core.errors import (
    EXIT_ERROR,
    EXIT_NEEDS_CONFIRMATION,
    EXIT_OK,
    DiskFull,
    GitFailed,
    HeldError,
    VwtError,
    disk_is_full,
)
from ..core.faults import checkpoint
from ..core.files import SpareRoom
from ..core.git import repair_repo
from ..core.index_files import IndexBusy
from ..core.integration import Tips, read_tips
from ..core.layout import Claim
from ..core.light import NamedTuple
from ..core.locks import acquire_holder, new_holder_id
from ..core.processes import Finished
from ..core.records import write_record
from ..lifecycle.remove import Target, inspect, tidy_claim_folders
from ..lifecycle.worktrees import Checkout, housekeeping_git, rebase_in_progress
from . import replay
from .merge import (
    UNDO_ROOM,
    checked_out_target,
    fetch_target,
    move_branch_and_checkout,
    resolve_hint,
)

SYNCED = "synced"
UP_TO_DATE = "up_to_date"
CONFLICT = "conflict"
CONFLICT_STOPPED = "conflict_stopped"  # a rebase is left stopped in the worktree to resolve
ABORTED = "aborted"  # --abort put everything back as it was before the sync
KEPT_DIRTY = "kept_dirty"
EXIT_CODES = {SYNCED: EXIT_OK, UP_TO_DATE: EXIT_OK, ABORTED: EXIT_OK,
              KEPT_DIRTY: EXIT_NEEDS_CONFIRMATION}

RUN = "run"
CONTINUE = "continue"
ABORT = "abort"

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


def sync(claim: Claim, onto_branch: str | None, fetch: bool, warn: Warn,
         stop_on_conflict: bool = False, action: str = RUN,
         onto_commit: str | None = None) -> SyncResult:
    """`action`: RUN a sync (a conflict aborts it, or with `stop_on_conflict` leaves it
    stopped), or CONTINUE / ABORT the one left stopped. `onto_commit`: rebase onto exactly
    that commit of T (`vwt land`: the tip it read, never `<remote>/T`)."""
    _entry, target = checked_out_target(claim, "synced")
    assert target.checkout is not None
    for line in repair_repo(target.checkout.common_dir):  # what a killed sync or merge left
        warn(line)
    if fetch and action == RUN:
        fetch_target(target, onto_branch, warn)
    tips = read_tips(target.repo_git, onto_branch)
    if tips is None:
        raise VwtError("no target branch (no main or master, no remote default); pass --onto")
    try:  # keeps retention away while the branch moves
        hold = acquire_holder(claim, new_holder_id())
    except HeldError as exc:
        raise VwtError(exc.message) from None
    try:
        if action == RUN:
            if onto_commit is not None:
                tips = tips._replace(target=tips.target._replace(
                    commit=onto_commit, remote=None, remote_commit=None))
            return _sync_held(claim, target, tips, target.record.base_commit, stop_on_conflict,
                              onto_branch)
        return _resume(claim, target, tips, action)
    finally:
        hold.release()
        tidy_claim_folders(claim)


def _sync_held(claim: Claim, target: Target, tips: Tips, base_commit: str | None,
               stop_on_conflict: bool, onto_branch: str | None) -> SyncResult:
    assert target.checkout is not None
    git = housekeeping_git(target.checkout)
    inspection = inspect(target)
    name, onto = _onto(git, tips)
    head = inspection.head
    if head is None:
        raise VwtError(f"{claim.name} has no commit to sync")
    result = SyncResult(claim.name, "", name, head)
    if inspection.rebasing:
        return _still_stopped(claim, target.checkout, git, result)
    if inspection.changes:
        return result._replace(outcome=KEPT_DIRTY, message=(
            f"{claim.name} has {inspection.describe_loss()}; nothing synced (commit or "
            "stash them first)"))
    if g.is_ancestor(git, onto, head):
        if _killed_after_its_move(git, claim.name, target, onto, head):
            write_record(target.claim.record_path, target.record.with_base(onto))
            return result._replace(outcome=SYNCED)  # that sync is finished now
        return result._replace(outcome=UP_TO_DATE)  # changes nothing (SPEC §8)
    merging = git._replace(neutralised_merge_drivers=tips.merge_drivers)
    landed = replay.rebase(merging, onto, base_commit or onto, head)
    if landed.commit is None:
        if stop_on_conflict:
            return _stop(claim, target, merging, result, onto, base_commit or onto)
        return result._replace(outcome=CONFLICT, conflicts=landed.conflicts, message=(
            f"{claim.name} conflicts with {name} in {len(landed.conflicts)} file(s); "
            f"nothing changed; {resolve_hint(claim.name, onto_branch)}"))
    _move(claim, target, git, head, landed.commit)
    checkpoint("sync.moved")
    write_record(target.claim.record_path, target.record.with_base(onto))
    return result._replace(outcome=SYNCED, head=landed.commit)


def _killed_after_its_move(git: g.Git, name: str, target: Target, onto: str,
                           head: str) -> bool:
    """A sync of this worktree was killed after it moved the branch to HEAD, before it wrote
    the record: the branch last moved by `vwt sync NAME`, from a commit of the record's
    base onwards, and that base is behind `onto`. The target brought in any other way (a
    merge or a rebase by hand) leaves the record as it is: `ahead` may then count more,
    never less."""
    base = target.record.base_commit
    if base is None or base == onto or not g.is_ancestor(git, base, onto):
        return False
    moved = g.last_update(git, f"refs/heads/{target.record.branch}")
    return (moved is not None and moved.new == head and moved.reason == f"vwt sync {name}"
            and moved.old is not None and g.is_ancestor(git, base, moved.old))


def _move(claim: Claim, target: Target, git: g.Git, head: str, new: str) -> None:
    """Move the branch and the (clean) checkout from `head` to `new` as `merge` moves its
    target: under the checkout's index lock, taken as a link to an anchor named with our
    pid whose note says `move <head> <new>`. That note is the sync's intent: a kill
    anywhere in between leaves a lock the next `sync`, `merge` or `prune` recognises as a
    dead vwt's, and it finishes the move (`core.git.repair_repo`)."""
    assert target.checkout is not None
    try:  # room to put the branch and the files back if a full disk stops the move
        room = SpareRoom(target.checkout.common_dir, UNDO_ROOM)
    except OSError as exc:
        if disk_is_full(exc):
            raise DiskFull(f"syncing {claim.name}") from None
        raise
    try:
        with room:
            move_branch_and_checkout(git, target.repo_git, f"refs/heads/{target.record.branch}",
                                     head, new, f"vwt sync {claim.name}", room,
                                     target.checkout.path)
    except IndexBusy as busy:
        raise VwtError(f"another git process holds {busy}; nothing synced (run vwt sync "
                       f"{claim.name} again when it is done)") from None
    except g.NotMoved as stop:
        raise VwtError(f"{claim.name} changed while syncing ({stop.problem}); nothing synced "
                       f"(run vwt sync {claim.name} again)") from None


def _stop(claim: Claim, target: Target, git: g.Git, result: SyncResult, onto: str,
          upstream: str) -> SyncResult:
    """Run the rebase for real in the worktree and leave it stopped at the first conflict."""
    assert target.checkout is not None
    filtered = g.changed_files_using_filters(git, upstream, onto, git.neutralised_filters)
    filtered += g.changed_files_using_filters(git, upstream, result.head or upstream,
                                              git.neutralised_filters)
    if filtered:  # the rebase would write them without their filter: vwt never runs it
        return result._replace(outcome=CONFLICT, message=(
            f"{filtered[0]} uses a filter driver of the repository's own config, which vwt "
            f"never runs; nothing changed (rebase by hand in {target.checkout.path}: "
            f"git rebase {result.onto})"))
    done = g.rebase_onto(git, onto, upstream)
    _keep_label(target.checkout, result.onto)
    return _after_rebase(claim, target, git, result, onto, done)


ONTO_LABEL = "vwt-onto"  # in git's rebase state folder: it lives and goes with the rebase


def _keep_label(checkout: Checkout, label: str) -> None:
    """Note the short name the stop rebased onto (`release` for `--onto release`), so
    `--continue` and `--abort` report the same name even once that branch has moved on."""
    folder = _state_folder(checkout)
    if folder is None:  # the rebase completed: nothing to resume
        return
    try:
        with open(os.path.join(folder, ONTO_LABEL), "w", encoding="utf-8") as note:
            note.write(f"{label}\n")
    except OSError:  # only a label: `_onto_label` falls back to naming the commit
        pass


def _after_rebase(claim: Claim, target: Target, git: g.Git, result: SyncResult, onto: str,
                  done: Finished) -> SyncResult:
    """Where a started or continued rebase ended: complete (the record's base moves to
    `onto`), stopped at a conflict, or refused by git (its reason)."""
    assert target.checkout is not None
    if not rebase_in_progress(target.checkout):
        if done.returncode != 0:
            raise GitFailed(f"git rebase failed: {g.first_line(done.stderr)}")
        write_record(target.claim.record_path, target.record.with_base(onto))
        return result._replace(outcome=SYNCED, head=g.head_commit(git))
    stopped = _still_stopped(claim, target.checkout, git, result)
    if done.returncode != 0 and not stopped.conflicts:  # git said why it cannot go on
        return stopped._replace(message=f"{g.first_line(done.stderr)}; "
                                        f"{_stopped_hint(claim.name, target.checkout)}")
    return stopped


def _still_stopped(claim: Claim, checkout: Checkout, git: g.Git,
                   result: SyncResult) -> SyncResult:
    conflicts = tuple(g.unmerged_paths(git))
    what = (f"{len(conflicts)} conflicting file(s)" if conflicts
            else "the conflicts resolved but not all committed")
    return result._replace(
        outcome=CONFLICT_STOPPED, conflicts=conflicts, head=g.rev_parse(git, "HEAD"),
        message=f"sync of {claim.name} is stopped with {what}; "
                f"{_stopped_hint(claim.name, checkout)}")


def _stopped_hint(name: str, checkout: Checkout) -> str:
    return (f"fix the files in {checkout.path}, stage them (git -C {checkout.path} add FILE), "
            f"then run: vwt sync {name} --continue (or undo the sync: vwt sync {name} --abort)")


def _resume(claim: Claim, target: Target, tips: Tips, action: str) -> SyncResult:
    assert target.checkout is not None
    checkout = target.checkout
    git = housekeeping_git(checkout)._replace(neutralised_merge_drivers=tips.merge_drivers)
    head = g.rev_parse(git, "HEAD")
    state = _rebase_state(checkout)
    if state is None:
        raise VwtError(f"no sync of {claim.name} is stopped; nothing to {action} "
                       f"(run: vwt sync {claim.name})")
    onto, head_name = state
    if head_name != f"refs/heads/{target.record.branch}":
        raise VwtError(f"the rebase stopped in {checkout.path} is not of {claim.name}'s branch "
                       f"{target.record.branch}; finish it with git rebase --{action} there")
    result = SyncResult(claim.name, "", _onto_label(git, tips, onto, checkout), head)
    if action == ABORT:
        g.rebase_abort(git)
        return result._replace(outcome=ABORTED, head=g.rev_parse(git, "HEAD"))
    return _after_rebase(claim, target, git, result, onto, g.rebase_continue(git))


def _state_folder(checkout: Checkout) -> str | None:
    """git's folder of the rebase in progress in the checkout, if any."""
    for state in ("rebase-merge", "rebase-apply"):
        folder = os.path.join(checkout.admin_dir, state)
        if os.path.isdir(folder):
            return folder
    return None


def _rebase_state(checkout: Checkout) -> tuple[str, str] | None:
    """(onto commit, the rebased branch's ref) of the rebase stopped in the checkout."""
    folder = _state_folder(checkout)
    if folder is None:
        return None
    try:
        with open(os.path.join(folder, "onto"), encoding="utf-8") as onto, \
             open(os.path.join(folder, "head-name"), encoding="utf-8") as head_name:
            return onto.read().strip(), head_name.read().strip()
    except OSError:
        return None


def _noted_label(checkout: Checkout) -> str:
    """The label `_keep_label` noted for the rebase in progress; "" when there is none."""
    folder = _state_folder(checkout)
    if folder is None:
        return ""
    try:
        with open(os.path.join(folder, ONTO_LABEL), encoding="utf-8") as note:
            return note.read().strip()
    except OSError:
        return ""


def _onto_label(git: g.Git, tips: Tips, onto: str, checkout: Checkout) -> str:
    """The short name of what a stopped rebase goes onto: the one its stop noted, else
    `<remote>/T` or T when it is one of their tips, else a branch whose tip it is, else
    the commit."""
    label = _noted_label(checkout)
    if label:
        return label
    found = tips.target
    if onto == found.remote_commit and found.remote_name:
        return found.remote_name
    if onto == found.commit:
        return found.branch
    return g.branch_pointing_at(git, onto) or onto
