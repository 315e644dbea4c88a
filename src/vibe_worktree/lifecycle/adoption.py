"""Moving a worktree another tool made into the managed root (`vwt adopt`), in steps that a
kill at any moment leaves for `vwt prune` to finish or undo, losing nothing.

1. reserve the name: its empty checkout folder, a reserved record (no base commit yet)
   naming where the worktree comes from, a `.starting` hold (as `new` reserves one);
2. lock git's entry of the worktree (`git worktree lock`, with our own reason), under the
   same `.prune` lock as step 1: of parallel adoptions of one worktree, the one that
   reserves first is the one that locks it, so it moves under its first free name and the
   others find it locked without reserving any;
3. rename the folder onto the reserved one: one rename(2), as `git worktree move` does;
4. `git worktree repair` points git's entry at the new place;
5. unlock, then 6. write the record's base commit: from then on it is managed.

Between 3 and 4 git would see its entry's folder gone and call it prunable: the lock of
step 2 keeps every `git worktree prune` (the one `vwt rm` runs included) from deleting the
entry, and with it the worktree's index and HEAD. Prune settles an adoption whose
`.starting` holder is dead at once (no grace period: the holder lives as long as the
adoption does): a reservation whose folder is still empty is dropped and the source
unlocked, a moved one is repaired, unlocked and recorded.
"""

from __future__ import annotations

import os

from ..core import git as g
from ..core.errors import GitFailed, VwtError
from ..core.faults import checkpoint
from ..core.layout import Claim, unlink_if_exists
from ..core.records import Record, write_record
from .worktrees import Checkout, validate_for_reuse

ADOPTED = "adopted"  # the record's own key: {"from": original path, "made_by": tool}
LOCK_REASON = "vwt adopt: moving it to "


class Refused(VwtError):
    """The worktree is not moved; `reason` is the word the JSON reports."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def linked_checkout(path: str) -> Checkout | None:
    """The linked worktree whose top level is `path`, read from its `.git` file (no git);
    None for anything else (a main checkout, a submodule, a plain folder)."""
    try:
        with open(f"{path}/.git", encoding="utf-8", errors="surrogateescape") as handle:
            text = handle.read(4096).strip()
        if not text.startswith("gitdir: "):
            return None
        admin = os.path.realpath(os.path.join(path, text[len("gitdir: "):]))
        with open(f"{admin}/commondir", encoding="utf-8") as handle:
            common = os.path.realpath(os.path.join(admin, handle.read(4096).strip()))
        with open(f"{admin}/HEAD", encoding="utf-8") as handle:
            head = handle.read(4096).strip()
    except (OSError, UnicodeDecodeError):
        return None
    if os.path.dirname(admin) != f"{common}/worktrees":
        return None
    head_ref = head[len("ref: "):] if head.startswith("ref: ") else None
    return Checkout(path, admin, common, head_ref)


def source_of(record: Record) -> str | None:
    """Where an adopted worktree came from (None: it was not adopted)."""
    adopted = record.extra.get(ADOPTED)
    source = adopted.get("from") if isinstance(adopted, dict) else None
    return source if isinstance(source, str) and os.path.isabs(source) else None


def made_by_of(record: Record) -> str:
    adopted = record.extra.get(ADOPTED)
    tool = adopted.get("made_by") if isinstance(adopted, dict) else None
    return tool if isinstance(tool, str) else "git"


def adoption_record(record: Record, source: str, made_by: str) -> Record:
    return record._replace(extra={**record.extra, ADOPTED: {"from": source, "made_by": made_by}})


def lock_reason(admin_dir: str) -> str | None:
    """The reason of a `git worktree lock` (empty when none was given); None: not locked."""
    try:
        with open(f"{admin_dir}/locked", encoding="utf-8", errors="replace") as handle:
            return handle.read(4096).strip()
    except FileNotFoundError:
        return None
    except OSError:
        return "(unreadable)"


def _lock(admin_dir: str, destination: str) -> bool:
    """`git worktree lock` with our reason, whole or not at all (a link of a complete file);
    False when it is locked already."""
    temp = f"{admin_dir}/.locked.{os.urandom(6).hex()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        try:
            os.write(fd, f"{LOCK_REASON}{destination}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(temp, f"{admin_dir}/locked")
        return True
    except FileExistsError:
        return False
    finally:
        unlink_if_exists(temp)


def _unlock(admin_dir: str, destination: str) -> None:
    """Drop the lock only when it is ours, for this destination."""
    if lock_reason(admin_dir) == f"{LOCK_REASON}{destination}":
        unlink_if_exists(f"{admin_dir}/locked")


def base_commit(git: g.Git, head: str) -> str:
    """The merge base of HEAD and the target branch (SPEC §8); HEAD when there is none."""
    from ..core.target import resolve

    try:
        target = resolve(git)
    except VwtError:
        target = None
    if target is None or target.commit is None:
        return head
    return g.merge_base(git, head, target.commit) or head


def lock_source(claim: Claim, source: Checkout) -> None:
    """Step 2 for a reserved claim, under the `.prune` lock it was reserved under. Refused
    (nothing changed) when the worktree is locked already: by another adoption of it that
    reserved its name first, or by someone else."""
    if not _lock(source.admin_dir, claim.checkout):
        raise Refused("locked", f"{source.path} is locked (git worktree lock); unlock it first")
    checkpoint("adopt.locked")


def move_in(claim: Claim, record: Record, source: Checkout) -> Record:
    """Steps 3 to 6 for a reserved claim whose source is locked (`lock_source`; the caller
    holds `.starting`); returns the final record. Refused (nothing changed, the source
    unlocked) when it cannot be renamed."""
    try:
        os.rename(source.path, claim.checkout)  # onto the reserved empty folder, atomically
    except OSError as exc:
        _unlock(source.admin_dir, claim.checkout)
        if exc.errno == 18:  # EXDEV
            raise Refused("other_filesystem", f"{source.path} is on another filesystem than "
                          f"{claim.root.path}; a move would have to copy it") from None
        raise Refused("move_failed", f"{source.path} cannot be moved: {exc.strerror}") from None
    checkpoint("adopt.moved")
    return _finish(claim, record)


def _finish(claim: Claim, record: Record) -> Record:
    """Steps 4 to 6, also for prune after a kill: idempotent."""
    checkout = validate_for_reuse(claim, record, "")
    repo_git = g.Git(checkout.common_dir)
    repaired = repo_git.run("worktree", "repair", claim.checkout, check=False)
    if _admin_points_at(checkout) is False:
        raise GitFailed(f"git worktree repair failed: {g.first_line(repaired.stderr)}")
    checkpoint("adopt.repaired")
    _unlock(checkout.admin_dir, claim.checkout)
    final = record.with_base(base_commit(repo_git, g.head_commit(checkout.git)))
    write_record(claim.record_path, final)
    checkpoint("adopt.recorded")
    return final


def _admin_points_at(checkout: Checkout) -> bool | None:
    """git's entry names this checkout (None: cannot tell)."""
    try:
        with open(f"{checkout.admin_dir}/gitdir", encoding="utf-8") as handle:
            named = handle.read(4096).strip()
    except OSError:
        return None
    return os.path.realpath(os.path.dirname(named)) == os.path.realpath(checkout.path)


def finish_interrupted(claim: Claim, record: Record) -> Record:
    """A killed adoption whose folder was moved already: repair, unlock, record."""
    return _finish(claim, record)


def release_source(claim: Claim, record: Record) -> None:
    """A killed adoption that never moved the folder: take our lock off the source."""
    source = source_of(record)
    checkout = linked_checkout(source) if source else None
    if checkout is not None:
        _unlock(checkout.admin_dir, claim.checkout)
