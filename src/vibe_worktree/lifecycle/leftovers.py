"""What a killed vwt left behind, and the proof that it is dead.

A holder file nobody holds is that proof: a live holder keeps its flock, and one that ends
deletes its file before letting go, so an unlocked file outlived a process killed while
holding it. Prune reads that proof before it sweeps those files away, then repairs at once
what the dead process was doing: its reservation (`creator_dead`), the locks its gits
held on the branch it was making or restoring, and a snapshot ref's lock.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ..core import git as g
from ..core.errors import VwtError
from ..core.git import commit_of
from ..core.layout import Root
from ..core.locks import STARTING, live_holders, registry_lock, remove_stale_holders, stale_holders
from .worktrees import Entry, repo_git_for

Warn = Callable[[str], None]
Stale = dict[tuple[str, str], list[str]]  # (bucket, name) -> ids of its dead holders' files


def key(entry: Entry) -> tuple[str, str]:
    return entry.claim.bucket, entry.name


def live(entry: Entry) -> list[str]:
    """Ids of the entry's live holders, read under the registry lock."""
    with registry_lock(entry.claim.root):
        return live_holders(entry.claim)


def sweep_stale_holders(root: Root, dry_run: bool, reserved: set[tuple[str, str]]) -> Stale:
    """Delete (with `dry_run`, only find) the holder files no process holds; returns them
    by claim: each is proof that its holder died, which settling what it left relies on.

    The dead `.starting` of a reservation (`reserved`) stays while some process still
    works inside its checkout (a git the killed creator started, outliving it): the
    reservation then waits, and the file proves to a later prune that its creator died."""
    with registry_lock(root):
        found = {(claim.bucket, claim.name): ids
                 for bucket in root.buckets() for claim in root.claims_in(bucket)
                 if (ids := stale_holders(claim))}
    outlived = {k for k, ids in found.items()
                if STARTING in ids and k in reserved and _worked_in(root.claim(*k).checkout)}
    if dry_run:
        return {k: [h for h in ids if k not in outlived or h != STARTING]
                for k, ids in found.items()}
    with registry_lock(root):  # each one again: only files still unlocked go
        return {k: removed for k in found
                if (removed := remove_stale_holders(root.claim(*k),
                                                    (STARTING,) if k in outlived else ()))}


def _worked_in(folder: str) -> bool:
    """Some process has its current directory in `folder` (git checking files out there
    runs in it, and so do the filters it starts)."""
    from ..core.proctable import processes_inside

    return bool(processes_inside([folder])[folder])


def creator_dead(entry: Entry, stale: Stale) -> bool:
    """The reservation's creator is provably gone: its `.starting` holder file was there,
    unlocked, and no process works inside its checkout any more (`sweep_stale_holders`).
    A reservation without that file may be a creation by a tool that takes no
    `.starting`: it is given the grace period instead."""
    return STARTING in stale.get(key(entry), ())


def release_dead_repo_locks(found: list[Entry], stale: Stale, warn: Warn) -> None:
    """What killed gits of vwt's left in every repository some record names: the
    `index.lock` of a killed `vwt merge` in a checkout it was moving (recognised exactly:
    see `core.index_files`; the move it interrupted is finished), the locks of a killed
    branch deletion, and the lock of a snapshot ref a killed removal or snapshot was
    writing."""
    from ..core.git import discover, discover_without_git, repair_repo
    from ..core.layout import bucket_matches
    from ..core.ref_locks import release_dead_deletion_locks

    by_repo: dict[str, list[Entry]] = {}
    for entry in found:
        source = entry.record or entry.recovery
        if source is not None and entry.problem is None:
            by_repo.setdefault(source.repo_root, []).append(entry)
    for repo_root in sorted(by_repo):
        if not os.path.isdir(repo_root):
            continue
        try:
            info = discover_without_git(repo_root) or discover(repo_root)
        except VwtError:
            continue
        for line in repair_repo(info.common_dir):
            warn(line)
        for path in release_dead_deletion_locks(info.common_dir):
            warn(f"removed {path}, left by a vwt killed while it deleted a branch")
        for entry in by_repo[repo_root]:
            if bucket_matches(entry.claim.bucket, info.common_dir):
                _release_dead_snapshot_lock(info.common_dir, entry, stale, warn)


def _release_dead_snapshot_lock(common_dir: str, entry: Entry, stale: Stale,
                                warn: Warn) -> None:
    """`refs/vibe/reaped/<name>.lock` of a snapshot killed inside `git update-ref`: left,
    every later `rm` of the worktree fails on it. Gone when no live holder may be writing
    it (see `release_dead_snapshot_lock`)."""
    from ..core.ref_locks import release_dead_snapshot_lock, snapshot_lock

    if not os.path.lexists(snapshot_lock(common_dir, entry.name)) or live(entry):
        return
    path = release_dead_snapshot_lock(common_dir, entry.name, bool(stale.get(key(entry))))
    if path:
        warn(f"{entry.name}: removed {path}, left by an interrupted snapshot")


def release_dead_restorers_branch_lock(entry: Entry, warn: Warn) -> None:
    """A restore killed while its git moved the branch (`worktree add -b` making it at the
    snapshot's parent, or the checkout's reset) left `refs/heads/<branch>.lock`; the
    restorer is dead (no live `.starting`), so a lock holding nothing or that parent goes."""
    from ..core.ref_locks import release_dead_ref_locks

    assert entry.record is not None and entry.recovery is not None
    try:
        git = repo_git_for(entry.claim, entry.record, None)
    except VwtError:
        return
    snapshot = commit_of(git, entry.recovery.snapshot_ref)
    parent = commit_of(git, f"{snapshot}^1") if snapshot else None
    for path in release_dead_ref_locks(git.cwd, None, entry.record.branch, (parent,)):
        warn(f"{entry.name}: removed {path}, left by an interrupted restore")


def release_dead_creators_branch_lock(entry: Entry, warn: Warn) -> None:
    """A creation killed while `git worktree add -b` held the lock of the branch it was
    making (its creator is dead: no live `.starting`): see `release_dead_creation_lock`."""
    from ..core.ref_locks import release_dead_creation_lock

    assert entry.record is not None
    if not entry.record.branch_created:
        return
    try:
        git = repo_git_for(entry.claim, entry.record, None)
        since = entry.record.claimed_epoch()
    except (VwtError, ValueError):
        return
    path = release_dead_creation_lock(git.cwd, entry.record.branch,
                                      g.branch_tip(git, entry.record.branch), since)
    if path:
        warn(f"{entry.name}: removed {path}, left by an interrupted creation")
