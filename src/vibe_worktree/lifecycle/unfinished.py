"""Checkouts that were never finished: a creation killed inside `git worktree add`.

git writes `locked` (reason `initializing`) into a new worktree's admin folder, makes the
`.git` file and HEAD, then checks the files out under `index.lock` and only at the end
deletes `locked`. A kill in between leaves a checkout that looks like a worktree on its
branch but holds none of its files (`git status` shows every tracked file deleted) and
whose `index.lock` makes every `git add` fail. Such a checkout is never recorded as ready,
reused or adopted: a creation's own reservation is torn down (its path was never handed
to anyone, so it holds nothing of the user's), and a record that already calls it ready
(written by an older version) gets git's lock and index back, without touching a file.
"""

from __future__ import annotations

import os

from ..core import git as g
from ..core.errors import VwtError
from ..core.files import write_atomically
from ..core.layout import Claim, unlink_if_exists
from ..core.records import Record
from .trash import delete_trash, move_to_trash
from .worktrees import Checkout

INITIALIZING = "initializing"  # the reason git gives the `locked` file of a worktree being added


def _adding(admin_dir: str) -> bool:
    """git's `worktree add` never got to the end (its `locked` file says initializing)."""
    try:
        with open(os.path.join(admin_dir, "locked"), encoding="utf-8",
                  errors="replace") as handle:
            return handle.read(64).strip() == INITIALIZING
    except OSError:
        return False


def unfinished(checkout: Checkout, creator_gone: bool = False) -> str | None:
    """Why the checkout is not whole, or None. `creator_gone`: the process that was
    writing it is dead, so an `index.lock` left in its admin folder is that process's."""
    admin = checkout.admin_dir
    if _adding(admin):
        return "git worktree add was interrupted before its files were checked out"
    if not os.path.lexists(os.path.join(admin, "index")):
        return "its files were never checked out (it has no index)"
    if creator_gone and os.path.lexists(os.path.join(admin, "index.lock")):
        return "a git command writing it was interrupted (index.lock left behind)"
    return None


def release_dead_locks(checkout: Checkout) -> None:
    """Drop what a killed git left in the admin folder of a checkout whose writer is known
    to be dead (its `.starting` hold is gone): `index.lock`, the `HEAD.lock` and
    `ORIG_HEAD.lock` of a reset, and git's own `locked` file of an add that never finished.
    Never for a checkout a live process may be writing."""
    for lock in ("index.lock", "HEAD.lock", "ORIG_HEAD.lock"):
        unlink_if_exists(os.path.join(checkout.admin_dir, lock))
    if _adding(checkout.admin_dir):
        unlink_if_exists(os.path.join(checkout.admin_dir, "locked"))


def half_made(claim: Claim) -> Checkout | None:
    """The checkout of a `git worktree add` killed before it wrote its admin folder whole
    (so `validate_checkout` refuses it): its `.git` file names an admin folder of a
    repository of this bucket that git still marks `initializing`. None otherwise."""
    from ..core.layout import assert_real_directories, bucket_matches

    try:
        assert_real_directories(claim)
        with open(os.path.join(claim.checkout, ".git"), encoding="utf-8") as handle:
            text = handle.read(4096).strip()
    except (OSError, VwtError):
        return None
    if not text.startswith("gitdir: "):
        return None
    admin = os.path.realpath(os.path.join(claim.checkout, text[len("gitdir: "):]))
    common = os.path.dirname(os.path.dirname(admin))
    if (os.path.basename(os.path.dirname(admin)) != "worktrees" or not _adding(admin)
            or not bucket_matches(claim.bucket, common)):
        return None
    return Checkout(claim.checkout, admin, common, None)


def placed_pool_entry(claim: Claim, common_dir: str | None = None) -> Checkout | None:
    """A ready pool entry a killed take had moved into the reserved folder before
    `git checkout -b` gave it its branch: a linked worktree of this bucket on a detached
    HEAD. Only asked of a dead creator's reservation, so never handed out: it holds nothing
    of the user's, and is torn down like a half-made checkout. None otherwise."""
    from .worktrees import validate_checkout

    try:
        checkout = validate_checkout(claim, common_dir or None)
    except VwtError:
        return None
    if checkout.branch is not None or _adding(checkout.admin_dir):
        return None
    return checkout


def left_by_dead_creator(claim: Claim, record: Record, common_dir: str
                         ) -> tuple[Checkout, bool]:
    """The checkout a dead creator left in its reserved folder, and whether git finished it
    on the record's branch (then the creation can be finished; else it is torn down): one
    git never finished, a pool entry a take moved in before its branch, or a whole one."""
    from .worktrees import validate_for_reuse

    checkout = (half_made(claim) or placed_pool_entry(claim, common_dir)
                or validate_for_reuse(claim, record, common_dir))
    finished = (checkout.branch == record.branch
                and unfinished(checkout, creator_gone=True) is None)
    return checkout, finished


def is_clean(checkout: Checkout) -> bool:
    """Nothing but what its HEAD has (ignored files aside): nothing to lose."""
    from .worktrees import housekeeping_git

    return g.status(housekeeping_git(checkout)).changes == 0


def tear_down(claim: Claim, checkout: Checkout) -> None:
    """Remove a creation's checkout and git's entry for it; the record stays (the caller
    decides about the reservation). Only for a checkout never handed to anyone."""
    if _adding(checkout.admin_dir):  # git keeps a locked entry through `worktree prune`
        unlink_if_exists(os.path.join(checkout.admin_dir, "locked"))
    _finish_relink(claim, checkout)
    trash = move_to_trash(claim)
    repo_git = g.Git(checkout.common_dir)
    if not g.worktree_remove_entry(repo_git, claim.checkout):
        g.worktree_prune(repo_git)
    delete_trash(trash)


def _finish_relink(claim: Claim, checkout: Checkout) -> None:
    """A pool entry taken by a creation killed right after moving it: git's entry may still
    name the pool folder and be locked by the pool. Point it here and unlock it, as the take
    would have next, so git finds the entry by this path to remove it."""
    from .pool import LOCK_REASON

    locked = os.path.join(checkout.admin_dir, "locked")
    try:
        with open(locked, encoding="utf-8", errors="replace") as handle:
            reason = handle.read(64).strip()
    except OSError:
        return
    if reason == LOCK_REASON:
        write_atomically(os.path.join(checkout.admin_dir, "gitdir"),
                         f"{claim.checkout}/.git\n".encode(), 0o644)
        unlink_if_exists(locked)


def drop_created_branch(repo_git: g.Git, branch: str) -> bool:
    """Delete the branch a killed `git worktree add -b` made, only while nothing could be
    lost: no worktree has it checked out and its tip is in some other branch, tag or
    remote-tracking branch. True when deleted."""
    tip = g.branch_tip(repo_git, branch)
    if tip is None or g.branch_checked_out_elsewhere(repo_git, branch) is not None:
        return False
    if not g.contained_elsewhere(repo_git, tip, f"refs/heads/{branch}"):
        return False
    return g.delete_branch(repo_git, branch, tip)


def finish_in_place(checkout: Checkout) -> None:
    """Make a recorded checkout that git never finished usable again without touching a
    file in it: git's stale lock goes and the index is read from HEAD, so the files git
    never wrote show as deleted (`git checkout -- .` brings them back) and `git add` works."""
    admin = checkout.admin_dir
    if not _adding(admin):
        raise VwtError(f"{checkout.path} is not a checkout git left unfinished")
    unlink_if_exists(os.path.join(admin, "index.lock"))  # the interrupted checkout's
    g.Git(checkout.path).run("read-tree", "HEAD")
    unlink_if_exists(os.path.join(admin, "locked"))
