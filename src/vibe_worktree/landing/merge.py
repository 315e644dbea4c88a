"""`vwt merge NAME`: land the worktree's commits on the target branch, then remove it.

The steps of SPEC §8, in order. Until the compare-and-swap of the target (step 6)
nothing but a snapshot ref has been written, so every refusal before it changes
nothing; the landed commit is computed in the object store (see `replay`), and the
target's checkout is checked for local changes before the target moves.
"""

from __future__ import annotations

from collections.abc import Callable

from ..core import git as g
from ..core.errors import (
    EXIT_ERROR,
    EXIT_HELD,
    EXIT_NEEDS_CONFIRMATION,
    EXIT_OK,
    DiskFull,
    HeldError,
    VwtError,
    disk_is_full,
)
from ..core.faults import checkpoint
from ..core.files import SpareRoom
from ..core.git import repair_repo
from ..core.index_files import IndexBusy
from ..core.integration import Tips, check, read_tips
from ..core.layout import Claim
from ..core.light import NamedTuple
from ..core.locks import acquire_holder, landing_lock, new_holder_id
from ..core.proctable import describe
from ..core.records import write_record
from ..lifecycle.in_use import PROCESSES_RUNNING, processes_using
from ..lifecycle.remove import (
    Doomed,
    Target,
    acquire_removal,
    inspect,
    remove_all,
    snapshot,
    snapshot_problem,
    target_for,
    tidy_claim_folders,
)
from ..lifecycle.trash import delete_leftover_trash, leftover_trash
from ..lifecycle.worktrees import (
    READY,
    Entry,
    Inspection,
    housekeeping_git,
    require_entry,
    require_trusted,
)
from . import replay

SQUASH = "squash"
REBASE = "rebase"
FF_ONLY = "ff-only"
MODES = (SQUASH, REBASE, FF_ONLY)

MERGED = "merged"
UP_TO_DATE = "up_to_date"
KEPT_IN_USE = "kept_in_use"
KEPT_DIRTY = "kept_dirty"
CONFLICT = "conflict"
NOT_FAST_FORWARD = "not_fast_forward"
TARGET_MOVED = "target_moved"
TARGET_DIRTY = "target_dirty"
HOOK_FAILED = "hook_failed"

EXIT_CODES = {
    MERGED: EXIT_OK, UP_TO_DATE: EXIT_OK, KEPT_DIRTY: EXIT_NEEDS_CONFIRMATION,
    KEPT_IN_USE: EXIT_HELD,
}

Warn = Callable[[str], None]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..lifecycle.hooks import Ask, HookResult

# Runs the hooks of one moment (kind, the worktree, the target branch, cwd): their results
# and why the merge must stop (None to go on).
RunHooks = Callable[[str, Target, str, str], tuple[tuple["HookResult", ...], str | None]]
DeleteTrash = Callable[[list[str]], None]


def merge_hooks(home: str, warn: Warn, ask: Ask | None, checkout: str, repo_root: str
                ) -> RunHooks | None:
    """The hooks of a merge (`hook_runner.for_merge`), or None when neither the checkout,
    the main checkout nor the user has a hooks file to read them from."""
    from ..lifecycle.setup_state import any_hooks_file

    if not any_hooks_file(home, checkout, repo_root):
        return None
    from ..lifecycle.hook_runner import Runner, for_merge

    return for_merge(Runner(home, warn, ask), checkout)


class MergeResult(NamedTuple):
    """What `merge` did; `to_json` is the §8 document."""

    name: str
    outcome: str
    into: str
    mode: str
    commit: str | None = None  # T's new tip
    conflicts: tuple[str, ...] = ()
    removed: bool = False
    branch_deleted: bool = False
    snapshot_ref: str | None = None
    head: str | None = None  # the worktree's HEAD when the command finished
    message: str = ""  # what a person should know
    hooks: tuple[HookResult, ...] = ()  # pre_merge, pre_remove, post_merge, as they ran
    kept_reason: str | None = None  # why a worktree to be removed stays (processes_running)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.outcome, EXIT_ERROR)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name, "outcome": self.outcome, "into": self.into, "mode": self.mode,
            "commit": self.commit, "conflicts": list(self.conflicts), "removed": self.removed,
            "branch_deleted": self.branch_deleted, "snapshot_ref": self.snapshot_ref,
            "head": self.head, "hooks": [h.to_json() for h in self.hooks],
            "kept_reason": self.kept_reason,
        }


class Request(NamedTuple):
    name: str
    into: str | None
    mode: str
    message: str | None
    commit: bool
    keep: bool
    fetch: bool
    own_holders: frozenset[str]
    run_hooks: RunHooks | None = None  # None: --no-hooks
    # `vwt land`: the commit T must still be at (the one the work was gated on), else
    # `target_moved` with nothing changed; None: whatever T's tip is now
    expect_tip: str | None = None
    # where the checkouts a removal moved into `.trash` go to be deleted (`vwt land` deletes
    # them while the next worktree lands); None: deleted before `merge` returns
    delete_trash: DeleteTrash | None = None


def merge(claim: Claim, request: Request, warn: Warn) -> MergeResult:
    if request.mode not in MODES:
        raise VwtError(f"unknown merge mode {request.mode!r}; use squash, rebase or ff-only", 2)
    entry, target = checked_out_target(claim, "merged")
    if request.fetch:
        fetch_target(target, request.into, warn)
    with landing_lock(claim):
        if target.checkout is not None:  # what a killed merge left where it moved a checkout
            for line in repair_repo(target.checkout.common_dir):
                warn(line)
        return _merge_locked(entry, target.record.branch, target, request)


def checked_out_target(claim: Claim, done: str) -> tuple[Entry, Target]:
    """The worktree's trusted entry and what removing it would touch; refused (naming what
    would be `done` to it) unless it has a checkout."""
    entry = require_entry(claim)
    require_trusted(entry)
    if entry.state != READY:
        raise VwtError(f"{claim.name} is {entry.state}; only a worktree with a checkout can "
                       f"be {done}")
    return entry, target_for(entry)


def _merge_locked(entry: Entry, branch: str, target: Target, request: Request) -> MergeResult:
    claim = entry.claim
    tips = read_tips(target.repo_git, request.into)
    if tips is None:
        raise VwtError("no target branch (no main or master, no remote default); pass --into")
    if tips.branch == branch:
        raise VwtError(f"{claim.name} is on {branch}, the target itself; pass --into")
    base = MergeResult(claim.name, "", tips.branch, request.mode)
    if request.expect_tip is not None and tips.commits[0] != request.expect_tip:
        return base._replace(outcome=TARGET_MOVED, message=(
            f"{tips.branch} moved on from the commit {claim.name} was checked on; nothing "
            "changed"))
    try:  # step 1: another live session's hold refuses, unless the worktree is kept
        hold = acquire_removal(claim, request.own_holders)
    except HeldError as exc:
        if not request.keep:
            return base._replace(outcome=KEPT_IN_USE, message=exc.message)
        try:
            hold = acquire_holder(claim, new_holder_id(), ignore=request.own_holders)
        except HeldError as again:
            return base._replace(outcome=KEPT_IN_USE, message=again.message)
    try:
        return _merge_held(entry, target, tips, request, base)
    finally:
        hold.release()
        tidy_claim_folders(claim)
        if request.delete_trash is None:
            delete_leftover_trash(claim)
        else:  # what an interrupted removal left goes with what this one moved aside
            request.delete_trash(leftover_trash(claim))


def fetch_target(target: Target, into: str | None, warn: Warn) -> None:
    from ..core import target as _target

    found = _target.resolve(target.repo_git, into)
    if found is None or found.remote is None:
        return
    problem = g.fetch_branch(target.repo_git, found.remote, found.branch, g.FETCH_TIMEOUT)
    if problem:
        warn(f"{problem}; using the last known {found.remote_name}")


def _merge_held(entry: Entry, target: Target, tips: Tips, request: Request,
                base: MergeResult) -> MergeResult:
    assert target.checkout is not None
    git = housekeeping_git(target.checkout)
    inspection = inspect(target)
    base = base._replace(head=inspection.head)
    if inspection.rebasing:  # a sync stopped at a conflict: its work is half-way
        return base._replace(outcome=KEPT_DIRTY, message=(
            f"a sync of {entry.name} is stopped at a conflict; nothing merged (finish it: vwt "
            f"sync {entry.name} --continue, or undo it: vwt sync {entry.name} --abort)"))
    committed = ""
    if inspection.changes:  # step 2
        if not request.commit:
            return base._replace(outcome=KEPT_DIRTY, message=(
                f"{entry.name} has {inspection.describe_loss()}; nothing merged (commit them, "
                "or pass --commit to commit everything first)"))
        problem = snapshot_problem(target, inspection)
        if problem:
            raise VwtError(f"cannot commit {entry.name}'s changes: {problem}")
        g.add_all_and_commit(git, request.message or f"WIP: {entry.name}")
        inspection = inspect(target)
        base = base._replace(head=inspection.head)
        committed = (f"its uncommitted work was committed on {target.record.branch} as "
                     f"{str(inspection.head)[:12]} (--commit); ")
    head = inspection.head
    if head is None:
        raise VwtError(f"{entry.name} has no commit to merge")
    integration = check(git, head, tips)
    if inspection.ahead == 0 or integration.integrated is not None:  # step 3
        return _finish(target, inspection, base._replace(outcome=UP_TO_DATE),
                       _snapshot_of_this_state(target, head), request, None)
    if request.run_hooks is not None:  # before anything lands
        ran, stop = request.run_hooks("pre_merge", target, tips.branch, target.claim.checkout)
        base = base._replace(hooks=ran)
        if stop:
            return base._replace(outcome=HOOK_FAILED, message=stop)
    ref = snapshot(target, inspection).ref  # step 4: before any ref moves
    base = base._replace(snapshot_ref=ref)
    checkpoint("merge.snapshotted")
    onto = tips.commits[0]
    landed = _compute(git, target, tips, request, head, onto)  # step 5
    if landed.commit is None:
        unchanged = f"{committed}nothing else changed" if committed else "nothing changed"
        if request.mode == FF_ONLY:
            return base._replace(outcome=NOT_FAST_FORWARD, message=(
                f"{tips.branch} is not an ancestor of {entry.name}'s HEAD; {unchanged} (run: "
                f"vwt sync {entry.name}{_onto(request)} first, or merge with --squash or "
                "--rebase)"))
        return base._replace(outcome=CONFLICT, conflicts=landed.conflicts, message=(
            f"{entry.name} conflicts with {tips.branch} in {len(landed.conflicts)} file(s); "
            f"{unchanged}; {resolve_hint(entry.name, request.into)}"))
    if landed.commit == onto:  # every commit was already there (patch-equivalent)
        return _finish(target, inspection, base._replace(outcome=UP_TO_DATE), ref,
                       request, None)
    checkpoint("merge.computed")
    moved = _update_target(target, tips, onto, landed.commit, entry.name)  # step 6
    if moved is not None:
        return base._replace(outcome=moved[0], message=moved[1])
    result = base._replace(outcome=MERGED, commit=landed.commit)
    result = _finish(target, inspection, result, ref, request, landed.commit,
                     request.run_hooks, tips.branch)
    if request.run_hooks is not None:
        where = g.branch_checked_out_elsewhere(target.repo_git, tips.branch)
        ran, _problem = request.run_hooks("post_merge", target, tips.branch,
                                          where or target.record.repo_root)
        result = result._replace(hooks=result.hooks + ran)
    return result


def _snapshot_of_this_state(target: Target, head: str) -> str | None:
    """The snapshot ref an interrupted merge took of this very state (its parent is HEAD):
    the removal keeps it restorable with a recovery record, as the merge would have."""
    ref = target.claim.snapshot_ref
    commit = g.commit_of(target.repo_git, ref)
    if commit is None or g.commit_of(target.repo_git, f"{commit}^1") != head:
        return None
    return ref


def _compute(git: g.Git, target: Target, tips: Tips, request: Request, head: str,
             onto: str) -> replay.Landed:
    merging = git._replace(neutralised_merge_drivers=tips.merge_drivers)
    base_commit = target.record.base_commit or onto
    if request.mode == FF_ONLY:
        if g.is_ancestor(git, onto, head):
            return replay.Landed(head)
        return replay.Landed(None)
    if request.mode == REBASE:
        return replay.rebase(merging, onto, base_commit, head)
    # the worktree's own commits are those T lacks (`T..HEAD`): after a rebase made by hand,
    # the commits since base_commit include T's own
    message = replay.squash_message(git, onto, head, target.record.branch, request.message)
    return replay.squash(merging, onto, head, message)


def _onto(request: Request) -> str:
    return f" --onto {request.into}" if request.into else ""


def resolve_hint(name: str, onto_branch: str | None) -> str:
    """How to resolve a conflict through vwt (SPEC §8), as commands that work as printed."""
    onto = f" --onto {onto_branch}" if onto_branch else ""
    return (f"to resolve it in the worktree run: vwt sync {name}{onto} --stop-on-conflict "
            f"(then fix the files, git add them, and run: vwt sync {name} --continue)")


UNDO_ROOM = 1 << 16  # a ref's lock file and a reflog line, on any block size


def _target_moved(branch: str, name: str) -> tuple[str, str]:
    return TARGET_MOVED, (f"{branch} moved while merging; nothing changed (run vwt merge "
                          f"{name} again)")


def _update_target(target: Target, tips: Tips, old: str, new: str,
                   name: str) -> tuple[str, str] | None:
    """Step 6: check the target's checkout, compare-and-swap T, move the checkout.
    Returns (outcome, message) when nothing was changed after all."""
    repo_git = target.repo_git
    branch = tips.branch
    where = g.branch_checked_out_elsewhere(repo_git, branch)
    checkout_git = None
    if where:
        drivers, _per_worktree = g.repo_filter_drivers(repo_git)
        checkout_git = g.Git(where, neutralised_filters=drivers)
        filtered = g.changed_files_using_filters(checkout_git, old, new, drivers)
        if filtered:  # vwt never runs them, and a file written without its filter is wrong
            return TARGET_DIRTY, (f"{filtered[0]} uses a filter driver of the repository's own "
                                  f"config, which vwt never runs; nothing changed (merge it "
                                  f"yourself in {where})")
        if g.move_checkout_check(checkout_git, old, new):
            return TARGET_DIRTY, _in_the_way(checkout_git, branch, where, old, new, name)
    if checkout_git is None:
        if not g.compare_and_swap(repo_git, tips.target.ref, new, old, f"vwt merge {name}"):
            return _target_moved(branch, name)
        checkpoint("merge.target_updated")
        checkpoint("merge.checkout_moved")
        return None
    assert target.checkout is not None
    try:  # room to put T and the files back if a full disk stops the move half way
        room = SpareRoom(target.checkout.common_dir, UNDO_ROOM)
    except OSError as exc:
        if disk_is_full(exc):
            raise DiskFull(f"moving {where}") from None
        raise
    try:
        with room:
            move_branch_and_checkout(checkout_git, repo_git, tips.target.ref, old, new,
                                     f"vwt merge {name}", room, where or "",
                                     "merge.target_updated")
    except IndexBusy as busy:
        return TARGET_DIRTY, (f"another git process holds {busy} (in {where}); nothing "
                              f"changed (run vwt merge {name} again when it is done)")
    except g.NotMoved as stop:
        if stop.problem == TARGET_MOVED:
            return _target_moved(branch, name)
        return TARGET_DIRTY, _in_the_way(checkout_git, branch, where or "", old, new, name)
    checkpoint("merge.checkout_moved")
    return None


def _in_the_way(git: g.Git, branch: str, where: str, old: str, new: str, name: str) -> str:
    """`target_dirty` in one line a person can act on: which files of T's checkout the
    merge would overwrite, and what to do with them (git's own words say neither)."""
    found = g.in_the_way(git, old, new)
    again = f"then run vwt merge {name} again"
    changes = f"your changes to {_few(found.changed)}"
    untracked = (f"the untracked file{'s' if len(found.untracked) > 1 else ''} "
                 f"{_few(found.untracked)}")
    if found.changed and found.untracked:
        files = "files" if len(found.untracked) > 1 else "file"
        what, advice = (f"{changes} and {untracked}",
                        f"commit or stash the changes and move the untracked {files} away there")
    elif found.changed:
        what, advice = changes, "commit or stash them there"
    elif found.untracked:
        it = "them" if len(found.untracked) > 1 else "it"
        what, advice = untracked, f"move {it} away or commit {it} there"
    else:  # git refused for a reason no file explains
        return (f"{branch} is checked out at {where}, where git would not move the files to "
                f"the merged commit; nothing changed (see git -C {where} status, {again})")
    return (f"{branch} is checked out at {where}, where the merge would overwrite {what}; "
            f"nothing changed ({advice}, {again})")


def _few(paths: tuple[str, ...], most: int = 3) -> str:
    shown = ", ".join(paths[:most])
    return shown if len(paths) <= most else f"{shown} and {len(paths) - most} more"


def move_branch_and_checkout(checkout_git: g.Git, repo_git: g.Git, ref: str, old: str,
                             new: str, reason: str, room: SpareRoom, where: str,
                             step: str | None = None) -> None:
    """Compare-and-swap `ref` (the branch checked out at `where`), then move its checkout,
    all under the checkout's index lock (so a kill anywhere in between is finished by the
    next merge, sync or prune: `core.git.repair_repo`). NotMoved (the branch put back
    when it had moved): nothing changed. A full disk part-way: files back first, then the
    branch (`room` gives the undo its space), then DiskFull."""
    with g.checkout_move(checkout_git, old, new) as move:
        if not g.compare_and_swap(repo_git, ref, new, old, reason):
            raise g.NotMoved(TARGET_MOVED)
        if step:
            checkpoint(step)
        try:
            problem = move.run()
        except (VwtError, OSError) as exc:
            room.give_back()
            g.undo_checkout_move(checkout_git, old, new)
            g.compare_and_swap(repo_git, ref, old, new, f"{reason}: undo")
            if disk_is_full(exc):
                raise DiskFull(f"moving {where}") from None
            raise
        if problem:  # its files changed since the check: put the branch back, never moved
            g.compare_and_swap(repo_git, ref, old, new, f"{reason}: undo")
            raise g.NotMoved(problem)


def _finish(target: Target, inspection: Inspection, result: MergeResult, ref: str | None,
            request: Request, new_tip: str | None, run_hooks: RunHooks | None = None,
            into: str = "") -> MergeResult:
    """Step 7: remove the worktree as `rm` would (a recovery record keeps the snapshot
    restorable), or with `keep`, move it onto the landed commit. A failing pre_remove
    hook keeps the worktree (what landed stays landed), and so do processes running
    inside it: it then stays exactly as it was, its commits now in the target."""
    if request.keep:
        if new_tip is None:
            return result
        if inspection.head != new_tip:
            assert target.checkout is not None
            g.reset_keep(housekeeping_git(target.checkout), new_tip)
        write_record(target.claim.record_path, target.record.with_base(new_tip))
        return result._replace(head=new_tip)
    running = processes_using([target.claim])[target.claim]
    if running:
        name = target.claim.name
        return result._replace(kept_reason=PROCESSES_RUNNING, message=(
            f"{name} is kept: {describe(running)}; stop them, then vwt rm {name}"))
    if run_hooks is not None:
        ran, stop = run_hooks("pre_remove", target, into, target.claim.checkout)
        result = result._replace(hooks=result.hooks + ran)
        if stop:
            return result._replace(message=f"{stop}; the worktree is kept")
    [(deleted, note)] = remove_all([Doomed(target, inspection, ref,
                                           target.record.branch_created)],
                                   request.delete_trash)
    return result._replace(removed=True, branch_deleted=deleted,
                           message=result.message or note)
