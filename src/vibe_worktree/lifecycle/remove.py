"""Snapshots and removal: with `trash.py`, where the checkouts are deleted, the only code
that deletes anything a user may have written. What runs inside a worktree keeps it
(`in_use.py`).

Removal is a short sequence of idempotent steps (snapshot, move aside,
unregister, delete the branch, drop the record), so that `vwt prune` or a retry
finishes whatever a crash interrupted.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from ..core import git as g
from ..core.errors import GitFailed, HeldError, ValidationFailed, VwtError
from ..core.faults import checkpoint
from ..core.files import copy_index
from ..core.layout import Claim, rmdir_if_empty, unlink_if_exists
from ..core.light import NamedTuple
from ..core.locks import REMOVING, Holder, acquire_holder, new_holder_id, prune_lock
from ..core.proctable import Proc
from ..core.records import Record, Recovery, utc_now, write_recovery
from ..core.ref_locks import deleting_refs
from .in_use import Cleared, clear_processes, in_use_message
from .trash import delete_leftover_trash, delete_trash, move_to_trash
from .worktrees import (
    MISSING,
    ORPHANED,
    RESERVED,
    Checkout,
    Entry,
    Inspection,
    filter_drivers,
    housekeeping_git,
    inspect_checkout,
    inspect_missing,
    load_entry,
    not_found,
    repo_git_for,
    validate_checkout,
)

REMOVED = "removed"
KEPT_DIRTY = "kept_dirty"
KEPT_IN_USE = "kept_in_use"
NOT_FOUND = "not_found"
FORGOTTEN = "forgotten"
HOOK_FAILED = "hook_failed"


TYPE_CHECKING = False
if TYPE_CHECKING:
    from .hooks import Ask, HookResult


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
    hooks: tuple[HookResult, ...] = ()  # the pre_remove hooks that ran (or were skipped)
    stopped: tuple[int, ...] = ()  # the processes `--stop` stopped first
    processes: tuple[Proc, ...] = ()  # those running inside that kept it (kept_in_use)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name, "outcome": self.outcome,
            "branch_deleted": self.branch_deleted, "snapshot_ref": self.snapshot_ref,
            "hooks": [h.to_json() for h in self.hooks], "stopped": list(self.stopped),
            "processes": [{"pid": p.pid, "command": p.command} for p in self.processes],
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
    if entry.state == ORPHANED:
        raise ValidationFailed(
            f"{entry.name}: its repository {record.repo_root} is gone; see vwt doctor "
            "(--relocate inside a moved repository, else --archive-orphans)"
        )
    if entry.state == MISSING:
        return Target(entry.claim, record, None, repo_git_for(entry.claim, record, None))
    checkout = validate_checkout(entry.claim)
    return Target(entry.claim, record, checkout, repo_git_for(entry.claim, record, checkout))


def inspect(target: Target, cache: dict[str, tuple[str, ...]] | None = None) -> Inspection:
    if target.checkout is None:
        return inspect_missing(target.repo_git, target.record)
    return inspect_checkout(target.checkout, target.record, cache)


def snapshot_problem(target: Target, inspection: Inspection) -> str | None:
    """Why a snapshot of this worktree would fail (checked before anything is written)."""
    return work_problem(target.claim.name, target.checkout, inspection)


def work_problem(name: str, checkout: Checkout | None, inspection: Inspection) -> str | None:
    """Why the full state of a checkout cannot be saved as a commit (a snapshot, carried
    changes); None when it can."""
    if inspection.nested_repos:
        return (f"{name} holds a repository of its own at {inspection.nested_repos[0]}, "
                "which a snapshot cannot save")
    if inspection.dirty_submodules:
        return f"{name} has uncommitted work inside submodule {inspection.dirty_submodules[0]}"
    if inspection.head is None and (checkout is None or inspection.changes == 0):
        return f"{name} has no commit to snapshot"
    if checkout is not None and inspection.changes:
        git = checkout.git
        filtered = g.files_using_filters(git, filter_drivers(checkout))
        if filtered:
            return (f"{filtered[0]} uses a filter driver of the repository's own config; a "
                    "snapshot never runs it nor stages the file raw (commit or remove it yourself)")
    return None


def holds_only(target: Target, inspection: Inspection, commits: Sequence[str]) -> bool:
    """Every file in the checkout (as a snapshot would stage it) is, path for path, the
    version one of `commits` has: nothing in it is anyone's own work."""
    if snapshot_problem(target, inspection) or target.checkout is None:
        return False
    tree = _stage_tree(target)
    own = g.tree_paths(target.repo_git, tree)
    for commit in commits:
        own &= set(g.changed_paths(target.repo_git, tree, commit))
    return not own or _cut_short(target, sorted(own), commits[0])


def _cut_short(target: Target, paths: list[str], commit: str) -> bool:
    """Each of `paths` is the start of `commit`'s version: a file git was writing when it
    was killed (it writes a file from its beginning)."""
    entries = g.tree_entries(target.repo_git, commit)
    if any(p not in entries or entries[p][0] == g.GITLINK for p in paths):
        return False
    contents = g.blob_contents(target.repo_git, [entries[p][1] for p in paths])
    for path in paths:
        try:
            fd = os.open(os.path.join(target.claim.checkout, path), os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return False
        with os.fdopen(fd, "rb") as handle:
            current = handle.read()
        if not contents[entries[path][1]].startswith(current):
            return False
    return True


def _stage_tree(target: Target) -> str:
    """Stage everything into a throw-away index; the checkout's own index is untouched."""
    assert target.checkout is not None
    return stage_work(housekeeping_git(target.checkout), target.checkout.admin_dir,
                      target.checkout.admin_dir)


def stage_work(git: g.Git, admin_dir: str, folder: str) -> str:
    """The tree of everything in the checkout (untracked in, ignored out), staged into a
    copy of its index made in `folder`; the checkout's own index is never written."""
    from ..core.index_files import snapshot_index

    index = snapshot_index(folder)
    try:
        copy_index(os.path.join(admin_dir, "index"), index)  # none yet: stage from scratch
        return g.snapshot_tree(git, index)
    finally:
        unlink_if_exists(index)


def snapshot_commit(target: Target, inspection: Inspection) -> str:
    """Commit the worktree's full state with HEAD as parent; files, index, HEAD untouched."""
    problem = snapshot_problem(target, inspection)
    if problem:
        raise SnapshotFailed(problem)
    head = inspection.head
    parents = [head] if head else []
    message = f"vibe-worktree snapshot of {target.claim.name} (branch {target.record.branch})"
    if target.checkout is None or inspection.changes == 0:
        assert head is not None  # nothing to stage: the snapshot is HEAD's own tree
        return g.commit_tree(target.git, f"{head}^{{tree}}", parents, message)
    return g.commit_tree(target.git, _stage_tree(target), parents, message)


def snapshot(target: Target, inspection: Inspection | None = None) -> Snapshot:
    inspection = inspection or inspect(target)
    commit = snapshot_commit(target, inspection)
    try:
        g.set_ref(target.repo_git, target.claim.snapshot_ref, commit)
    except GitFailed as exc:
        from ..core.ref_locks import snapshot_lock

        if not os.path.lexists(snapshot_lock(target.repo_git.cwd, target.claim.name)):
            raise
        raise GitFailed(f"{str(exc).rstrip('.')}; vwt prune removes the lock a killed vwt "
                        "left") from None
    return Snapshot(target.claim.name, target.claim.snapshot_ref, commit)


def snapshot_held(entry: Entry) -> Snapshot:
    """`vwt snapshot`: under a holder of its own, as every vwt writing a snapshot ref holds
    its worktree meanwhile; so a killed one leaves a dead holder file behind, and prune,
    finding no live holder, knows no vwt is writing the ref (`release_dead_snapshot_lock`).
    A home it cannot write (or a full one) does not stop the snapshot, which writes only
    into the repository: prune then goes by the age of a lock it left."""
    try:
        hold = acquire_holder(entry.claim, new_holder_id())
    except OSError:
        return snapshot(target_for(entry))
    with hold:
        return snapshot(target_for(entry))


def recovery_for(target: Target, ref: str) -> Recovery:
    record = target.record
    return Recovery(
        name=record.name, branch=record.branch, repo_root=record.repo_root,
        base_commit=record.base_commit, snapshot_ref=ref, removed_at=utc_now(),
        extra={"branch_created": record.branch_created,
               **({"sparse": list(record.sparse)} if record.sparse else {}),
               **({"ports": list(record.ports)} if record.ports else {})},
    )


def drop_record_and_folders(claim: Claim, lease: bool = True) -> None:
    """The record goes, and with it the worktree's port lease (`lease` False: the caller
    gives back many at once)."""
    from ..core.index_cache import forget

    unlink_if_exists(claim.record_path)
    forget(claim.root.home, claim.bucket, claim.name)  # `vwt conflicts`' copy of its index
    if lease:
        from .leasing import release

        release(claim)


def tidy_claim_folders(claim: Claim) -> None:
    """`rmdir` the claim's empty folders; never a recursive delete of a claim folder."""
    rmdir_if_empty(claim.holders_dir)
    rmdir_if_empty(claim.folder)
    rmdir_if_empty(os.path.dirname(claim.folder))
    rmdir_if_empty(os.path.dirname(claim.checkout))


class Doomed(NamedTuple):
    """A worktree cleared for removal: inspected, and snapshotted when `snapshot_ref` is set."""

    target: Target
    inspection: Inspection
    snapshot_ref: str | None
    delete_branch: bool


def existing_snapshot(entry: Entry, target: Target) -> str | None:
    """The snapshot an interrupted removal had saved before it moved the checkout away.

    Taking a new one would overwrite it with less, the checkout being gone. While the
    checkout is still there, a fresh snapshot is taken: it may have changed since.
    """
    recovery = entry.recovery
    if recovery is None or target.checkout is not None:
        return None
    if g.commit_of(target.repo_git, recovery.snapshot_ref) is None:
        return None
    return recovery.snapshot_ref


def remove_all(doomed: Sequence[Doomed],
               delete: Callable[[list[str]], None] | None = None) -> list[tuple[bool, str]]:
    """Remove checkouts whose state is saved or clean, in idempotent steps, batched per
    repository. Returns (branch_deleted, note) for each. `delete`: what deletes the folders
    moved into `.trash` (a caller that finishes them before it exits); else done here."""
    for item in doomed:
        if item.snapshot_ref:
            write_recovery(item.target.claim.recovery_path,
                           recovery_for(item.target, item.snapshot_ref))
    stale = _earlier_snapshots([item for item in doomed if not item.snapshot_ref])
    checkpoint("rm.recovery_written")
    trashes = [move_to_trash(item.target.claim) for item in doomed]
    checkpoint("rm.trashed")
    by_repo: dict[str, list[int]] = {}
    for i, item in enumerate(doomed):
        by_repo.setdefault(item.target.repo_git.cwd, []).append(i)
    results: list[tuple[bool, str]] = [(False, "")] * len(doomed)
    for indexes in by_repo.values():
        repo_git = doomed[indexes[0]].target.repo_git
        _unregister(repo_git, [doomed[i].target.claim.checkout for i in indexes])
        checkpoint("rm.unregistered")
        for i, outcome in zip(indexes, _delete_branches(repo_git, [doomed[i] for i in indexes]),
                              strict=True):
            results[i] = outcome
    checkpoint("rm.branch_deleted")
    for item in doomed:
        drop_record_and_folders(item.target.claim, lease=False)
    checkpoint("rm.record_dropped")
    if doomed:
        from .leasing import release_all

        release_all(doomed[0].target.claim.root, [item.target.claim for item in doomed])
    checkpoint("rm.lease_released")
    for repo_git, ref, commit in stale:
        with deleting_refs(repo_git.cwd, [ref]):
            g.delete_ref(repo_git, ref, commit)
    for i, item in enumerate(doomed):
        claim = item.target.claim
        if not item.snapshot_ref and os.path.lexists(claim.recovery_path):
            kept = (f"its earlier snapshot {claim.snapshot_ref} is kept (vwt restore "
                    f"{claim.name} brings it back)")
            results[i] = (results[i][0], "; ".join(filter(None, [results[i][1], kept])))
    if delete is not None:
        delete([t for t in trashes if t])
    else:
        delete_trash(*trashes)
    return results


def _earlier_snapshots(unsaved: Sequence[Doomed]) -> list[tuple[g.Git, str, str]]:
    """A removal that saves no snapshot of its own may find one an earlier command left under
    the name (a merge, then a restore, then a clean `rm`), which no record would name once
    the worktree is gone (SPEC §11). Such a snapshot is dropped when it holds nothing the
    target branch lacks; else a recovery record keeps it restorable. Returns the refs to
    delete (repository, ref, the commit it must still point at)."""
    doomed: list[tuple[g.Git, str, str]] = []
    for item in unsaved:
        claim = item.target.claim
        if os.path.lexists(claim.recovery_path):  # it already names the snapshot
            continue
        commit = g.commit_of(item.target.repo_git, claim.snapshot_ref)
        if commit is None:
            continue
        leaving = f"refs/heads/{item.target.record.branch}" if item.delete_branch else ""
        if snapshot_landed(item.target.repo_git, commit, item.target.record.base_commit,
                           leaving):
            doomed.append((item.target.repo_git, claim.snapshot_ref, commit))
        else:
            write_recovery(claim.recovery_path, recovery_for(item.target, claim.snapshot_ref))
    return doomed


BASE_ONLY = "base_only"  # the snapshot is its base commit's tree on that commit


def snapshot_landed(repo_git: g.Git, commit: str, base_commit: str | None,
                    leaving: str = "") -> str | None:
    """Why deleting snapshot `commit` loses nothing, or None when it may hold work (SPEC
    §16: its content is on a branch): it is exactly its base (no commit or change of its
    own) and a branch, tag or remote-tracking branch other than `leaving` (the branch the
    removal deletes) has that base, or the target branch already has all of it,
    uncommitted files included (any §8 integration reason of the snapshot commit itself,
    whose tree is the worktree's full state). A base only the snapshot still holds (a
    record an older vwt wrote at restore named the snapshot's parent as the base) is work."""
    if base_commit and g.commit_of(repo_git, f"{commit}^1") == base_commit:
        trees = g.trees_of(repo_git, [commit, base_commit])
        if (trees[0] is not None and trees[0] == trees[1]
                and g.contained_elsewhere(repo_git, base_commit, leaving)):
            return BASE_ONLY
    from ..core.integration import integrated

    return integrated(repo_git, commit)


def _forget(entry: Entry) -> Removal:
    """`rm` of a snapshot-only entry: drop its recovery record, and its snapshot ref too
    when that loses nothing (SPEC §11: a merged-then-removed worktree leaves doctor
    healthy). A snapshot with work the target lacks stays: vwt deletes no work that has no
    other copy, and doctor names it with the command that drops it."""
    claim = entry.claim
    assert entry.recovery is not None
    ref = entry.recovery.snapshot_ref
    repo_git, commit = _snapshot_of(entry)
    reason = None
    if repo_git is not None and commit is not None:
        reason = snapshot_landed(repo_git, commit, entry.recovery.base_commit)
    with prune_lock(claim.root):  # restore reserves under it: never half a restore
        if load_entry(claim) != entry:
            raise VwtError(f"{claim.name} changed while removing it; try again")
        # the ref first: a run killed in between leaves a recovery record a retry drops
        dropped = (reason is not None and repo_git is not None and commit is not None
                   and g.delete_ref(repo_git, ref, commit))
        os.unlink(claim.recovery_path)
    tidy_claim_folders(claim)
    if dropped:
        assert reason is not None
        return Removal(claim.name, FORGOTTEN, False, None,
                       f"forgot {claim.name} and deleted its snapshot {ref}: "
                       f"{_why_nothing_lost(reason)}")
    if repo_git is not None and commit is None:
        return Removal(claim.name, FORGOTTEN, False, None,
                       f"forgot {claim.name}; its snapshot {ref} was already gone")
    why = "it has work the target branch lacks" if repo_git else "its repository is gone"
    return Removal(claim.name, FORGOTTEN, False, ref,
                   f"forgot {claim.name}; its snapshot stays at {ref}, as {why} (vwt doctor "
                   f"lists it as stray_snapshot until git update-ref -d {ref})")


def _snapshot_of(entry: Entry) -> tuple[g.Git | None, str | None]:
    """The entry's repository (None when it cannot be reached) and snapshot commit (None
    when its ref is gone)."""
    assert entry.recovery is not None
    try:
        repo_git = repo_git_for(entry.claim, entry.recovery, None)
    except VwtError:
        return None, None
    return repo_git, g.commit_of(repo_git, entry.recovery.snapshot_ref)


def _why_nothing_lost(reason: str) -> str:
    if reason == BASE_ONLY:
        return "it held nothing beyond the commit it started from"
    return f"the target branch already has all of it ({reason})"


def _unregister(repo_git: g.Git, checkouts: list[str]) -> None:
    """Drop git's admin entries of checkouts already moved away: one `prune` for many."""
    if len(checkouts) == 1 and g.worktree_remove_entry(repo_git, checkouts[0]):
        return
    g.worktree_prune(repo_git)


def _delete_branches(repo_git: g.Git, doomed: list[Doomed]) -> list[tuple[bool, str]]:
    """Delete the branches allowed to go, each only while its tip is the inspected HEAD or
    still the base commit (nothing the removal did not account for)."""
    wanted = [item.target.record.branch for item in doomed if item.delete_branch]
    tips = g.branch_tips(repo_git, wanted)
    checked_out = g.checked_out_branches(repo_git) if tips else {}
    safe: dict[str, str] = {}
    results: list[tuple[bool, str]] = []
    for item in doomed:
        branch = item.target.record.branch
        tip = tips.get(branch)
        if not item.delete_branch:
            results.append((False, ""))
        elif tip is None:
            results.append((False, f"branch {branch} is already gone"))
        elif branch in checked_out:
            results.append((False, f"branch {branch} is checked out at {checked_out[branch]}; "
                                   "kept"))
        elif tip in (item.inspection.head, item.target.record.base_commit):
            safe[branch] = tip
            results.append((True, ""))
        else:
            results.append((False, f"branch {branch} has commits the worktree did not; kept"))
    deleted: set[str] = set()
    if safe:
        with deleting_refs(repo_git.cwd, [f"refs/heads/{branch}" for branch in safe]):
            deleted = g.delete_branches(repo_git, safe)
    final = []
    for item, (ok, note) in zip(doomed, results, strict=True):
        branch = item.target.record.branch
        if ok and branch not in deleted:
            ok, note = False, f"branch {branch} could not be deleted; kept"
        final.append((ok, note))
    return final


def acquire_removal(claim: Claim, ignore: frozenset[str]) -> Holder:
    """`.removing` refuses while any other live holder exists (HeldError)."""
    return acquire_holder(claim, REMOVING, exclusive=True, ignore=ignore)


Warn = Callable[[str], None]
Confirm = Callable[[str], bool]
# Runs the pre_remove hooks of a worktree about to go: their results, and why the
# removal must stop (None to go on).
PreRemove = Callable[[Target], tuple[tuple["HookResult", ...], str | None]]


def never(_question: str) -> bool:
    return False


def pre_remove_hooks(home: str, warn: Warn, ask: Ask | None) -> PreRemove:
    """`rm`'s pre_remove hooks (`hook_runner.before_remove`), read from the worktree's
    checkout with its environment; none to run, and nothing of the hooks' code loaded, when
    neither the checkout, the main checkout nor the user has a hooks file."""
    def run(target: Target) -> tuple[tuple[HookResult, ...], str | None]:
        from .setup_state import any_hooks_file

        record, claim = target.record, target.claim
        if not any_hooks_file(home, claim.checkout, record.repo_root):
            return (), None
        from .hook_runner import Runner, before_remove, context

        ctx = context(home, claim.bucket, claim.name, record.branch, claim.checkout,
                      record.repo_root, record.base_commit or "", warn=warn,
                      sparse=bool(record.sparse))
        return before_remove(Runner(home, warn, ask), ctx)
    return run


def asking(answer: bool | Confirm) -> Confirm:
    """A question's answer given up front (a bool), or the function that asks it."""
    return answer if callable(answer) else (lambda _question: answer)


def remove_worktree(
    entry: Entry | None,
    claim: Claim,
    *,
    confirm_dirty: Confirm = never,
    delete_branch: bool | None = None,
    confirm_branch: Confirm = never,
    ignore_holders: frozenset[str] = frozenset(),
    pre_remove: PreRemove | None = None,
    stop_processes: bool = False,
    warn: Warn = lambda _message: None,
) -> Removal:
    """`vwt rm`: the rules of the spec, in order; refusals are outcomes, not errors. A live
    holder refuses first; then processes running inside (`stop_processes`: stopped
    first); then dirty work and the pre_remove hooks."""
    if entry is None:
        if delete_leftover_trash(claim):  # a retry of a removal that was interrupted
            return Removal(claim.name, REMOVED, False, None)
        return Removal(claim.name, NOT_FOUND, False, None,
                       not_found(claim.name))
    if entry.problem is None and entry.record is None:
        if delete_leftover_trash(claim):  # a retry of a removal that was interrupted
            assert entry.recovery is not None
            return Removal(claim.name, REMOVED, False, entry.recovery.snapshot_ref)
        return _forget(entry)
    try:
        removing = acquire_removal(claim, ignore_holders)
    except HeldError as exc:
        return Removal(claim.name, KEPT_IN_USE, False, None, exc.message)
    try:
        cleared = Cleared((), ())
        if entry.problem is None:
            cleared = clear_processes(claim, stop_processes, warn)
        if cleared.running:
            return Removal(claim.name, KEPT_IN_USE, False, None,
                           in_use_message(claim.name, cleared.running),
                           stopped=cleared.stopped, processes=cleared.running)
        return _remove_held(entry, removing, confirm_dirty, delete_branch, confirm_branch,
                            pre_remove)._replace(stopped=cleared.stopped)
    finally:
        removing.release()
        tidy_claim_folders(claim)
        delete_leftover_trash(claim)


def _remove_held(
    entry: Entry, removing: Holder, confirm_dirty: Confirm, delete_branch: bool | None,
    confirm_branch: Confirm, pre_remove: PreRemove | None,
) -> Removal:
    claim = entry.claim
    if entry.state == RESERVED and entry.problem is None:
        return _drop_abandoned_reservation(claim)
    target = target_for(entry)
    inspection = inspect(target)
    ref = existing_snapshot(entry, target)
    nothing_lost = landed(target, inspection)
    refusal = _confirm_loss(claim, inspection, ref, confirm_dirty, nothing_lost)
    if refusal:
        return refusal
    hooks: tuple[HookResult, ...] = ()
    if pre_remove is not None and target.checkout is not None:
        confirmed = not inspection.clean
        hooks, stop = pre_remove(target)
        if stop:
            return Removal(claim.name, HOOK_FAILED, False, None, stop, hooks)
        if hooks:  # what the hooks did is part of what is removed
            inspection = inspect(target)
            nothing_lost = landed(target, inspection)
            refusal = None if confirmed else _confirm_loss(claim, inspection, ref, confirm_dirty,
                                                           nothing_lost)
            if refusal:
                return refusal._replace(hooks=hooks)
    if ref is None and not inspection.clean and not nothing_lost:
        ref = snapshot(target, inspection).ref
    checkpoint("rm.inspected")
    record = target.record
    if record.branch_created:
        drop_branch = True
    elif delete_branch is not None:
        drop_branch = delete_branch
    else:
        drop_branch = confirm_branch(f"delete branch {record.branch}, which existed before?")
    [(deleted, note)] = remove_all([Doomed(target, inspection, ref, drop_branch)])
    if not drop_branch and not record.branch_created:
        note = note or f"kept branch {record.branch}, which existed before"
    return Removal(claim.name, REMOVED, deleted, ref, note, hooks)


def _confirm_loss(claim: Claim, inspection: Inspection, ref: str | None,
                  confirm_dirty: Confirm, nothing_lost: bool = False) -> Removal | None:
    """A `kept_dirty` refusal unless the work is saved, clean, landed (`nothing_lost`), or
    the user confirms."""
    if ref is not None or inspection.clean or nothing_lost:
        return None
    loss = inspection.describe_loss()
    if confirm_dirty(f"{claim.name} has {loss}; remove it anyway (a snapshot is kept)?"):
        return None
    return Removal(claim.name, KEPT_DIRTY, False, None,
                   f"{claim.name} has {loss}; nothing removed (pass -y to remove it "
                   f"after saving a snapshot)")


def landed(target: Target, inspection: Inspection) -> bool:
    """§8: no uncommitted changes and HEAD already in the target branch, so removing the
    worktree loses nothing even with commits of its own."""
    if inspection.changes or inspection.head is None or inspection.rebasing:
        return False
    from ..core.integration import integrated

    return integrated(target.repo_git, inspection.head) is not None


def _drop_abandoned_reservation(claim: Claim) -> Removal:
    """A reservation no live creator holds: only an empty one can simply go."""
    if os.path.lexists(claim.checkout) and not rmdir_if_empty(claim.checkout):
        raise ValidationFailed(
            f"{claim.name} is an interrupted creation with files in it; run vwt new "
            f"{claim.name} to finish it, then remove it"
        )
    drop_record_and_folders(claim)
    return Removal(claim.name, REMOVED, False, None)
