"""Handing out a warm pool entry to `vwt new`: the ready entry claimed, moved into the
reserved folder, made to work at its new path (`relocate.py`, `include_again.py`) and switched
to the new branch, and which of its post_create hooks run again (`pool.py` keeps the entries;
`pool_fill.py` makes them)."""

from __future__ import annotations

import os
from collections.abc import Callable

from ..core import git as g
from ..core.errors import VwtError
from ..core.files import write_atomically
from ..core.layout import Root, ensure_dir, unlink_if_exists
from ..core.light import NamedTuple
from ..core.patterns import any_matches
from .pool import CHANGED, Claimed, Warn, claim, contents

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .hooks import Hook, HookResult


# -- taking an entry (by `new`) ---------------------------------------------------------------
class Taken(NamedTuple):
    """An entry moved into place: what `new` needs to decide which hooks run again."""

    base: str  # the commit the entry's hooks ran at
    hooks: tuple[dict[str, object], ...]
    changed: tuple[str, ...] = ()  # paths that differ between `base` and the start point
    include: dict[str, object] | None = None  # the fill's fingerprints of its copies
    path: str = ""  # where the entry was made (what its hooks wrote names this folder)
    recopied: tuple[str, ...] = ()  # `.worktreeinclude` files copied again at the take


def take(root: Root, bucket: str, sparse: tuple[str, ...], start: str, checkout: str,
         warn: Warn) -> Taken | None:
    """Move a ready entry into `checkout` (an empty folder) and check out nothing else yet.
    None when there is none to take (the caller then makes the worktree the slow way)."""
    found = contents(root, bucket).ready
    if not found:
        return None
    # the newest first, and one already at the start point before all others
    found.sort(key=lambda e: (e.base == start, e.created_at), reverse=True)
    for entry in found:
        if entry.sparse != sparse:
            continue
        claimed = claim(entry)
        if claimed is None:
            continue
        placed = _place(claimed, checkout, warn)
        if placed:
            return Taken(entry.base, entry.hooks, include=entry.include, path=entry.path)
    return None


def relocate_moved(taken: Taken, checkout: str, warn: Warn) -> None:
    """What the entry's hooks wrote that names its old folder names `checkout` now (called
    before the branch is checked out, so that a post-checkout hook finds a working venv).
    OSError when the disk is full: the take is then undone."""
    from .relocate import patterns_of, relocate

    patterns = patterns_of(taken.hooks)
    if patterns and taken.path:
        relocate(checkout, taken.path, patterns, warn)


def copy_included_again(taken: Taken, repo_root: str, checkout: str, home: str, warn: Warn
                        ) -> Taken:
    """The `.worktreeinclude` files that changed in the main checkout since the fill (a
    `.env` edited since), copied again; the paths copied count as changed for `inputs`."""
    from .include_again import copy_again

    copied = copy_again(repo_root, checkout, home, taken.include, warn)
    return taken._replace(recopied=tuple(copied)) if copied else taken


def _place(claimed: Claimed, checkout: str, warn: Warn) -> bool:
    entry = claimed.entry
    git = g.Git(entry.path)
    try:
        status = git.out("status", "--porcelain=v2", "-z", "--branch",
                         "--untracked-files=all", env={"GIT_OPTIONAL_LOCKS": "0"})
    except VwtError:
        status = "?"
    if f"# branch.oid {entry.base}\0# branch.head (detached)\0" != status:
        warn(f"pool entry {entry.id} has changes (or moved); set aside, not used")
        os.rename(claimed.taken_path, f"{entry.path}{CHANGED}")
        claimed.give_up()
        return False
    admin = _admin_dir(entry.path)
    if admin is None:
        warn(f"pool entry {entry.id} is not a whole worktree; set aside, not used")
        os.rename(claimed.taken_path, f"{entry.path}{CHANGED}")
        claimed.give_up()
        return False
    os.rename(entry.path, checkout)  # onto the reserved, empty folder: atomic
    try:
        _relink(admin, checkout)
    except BaseException:
        os.rename(checkout, entry.path)
        os.mkdir(checkout)
        claimed.give_up()
        raise
    claimed.done()
    return True


def _admin_dir(checkout: str) -> str | None:
    """The worktree's admin folder inside the common git dir, from its `.git` file."""
    try:
        with open(f"{checkout}/.git", encoding="utf-8") as handle:
            text = handle.read(4096).strip()
    except OSError:
        return None
    admin = text.removeprefix("gitdir: ")
    if admin == text or not os.path.isfile(f"{admin}/gitdir"):
        return None
    return admin


def _relink(admin: str, checkout: str) -> None:
    """What `git worktree repair` and `git worktree unlock` do after the folder moved,
    without two git processes: point the admin's `gitdir` file at the new `.git` (written
    atomically, while the lock still keeps `git worktree prune` away), then unlock."""
    write_atomically(f"{admin}/gitdir", f"{checkout}/.git\n".encode(), 0o644)
    unlink_if_exists(f"{admin}/locked")


def check_out(taken: Taken, checkout: str, branch: str, start: str, create_branch: bool
              ) -> Taken:
    """The branch at the start point, as `git worktree add` would have made it: a two-tree
    switch from the entry's base, so only the files that differ are touched. The paths that
    differ are listed meanwhile, by a git of their own (for the hooks' `inputs`)."""
    diff = None
    if taken.base != start:
        diff = g.Git(checkout).start("diff-tree", "-r", "-z", "--name-only", "--no-renames",
                                     taken.base, start)
    user_git = g.Git(checkout, housekeeping=False)  # as the user would: hooks run
    if create_branch:
        user_git.run("checkout", "--quiet", "--no-track", "-b", branch, start)
    else:
        user_git.run("checkout", "--quiet", branch)
    if diff is None:
        return taken
    listed = g.finish(diff)
    if listed.returncode != 0:
        raise VwtError(f"git diff-tree failed: {g.first_line(listed.stderr)}")
    return taken._replace(changed=tuple(p for p in listed.stdout.split("\0") if p))


def discard_placed(root: Root, repo_git: g.Git, checkout: str) -> None:
    """Undo a take whose branch could not be checked out: the entry (no one's work) goes,
    and the reserved folder is left empty again, as the slow way would have left it."""
    from .trash import delete_trash

    ensure_dir(root.trash, root.path)
    trash = f"{root.trash}/pool-{os.path.basename(checkout)}-{os.urandom(16).hex()}"
    os.rename(checkout, trash)
    g.worktree_remove_entry(repo_git, checkout)
    os.mkdir(checkout)
    delete_trash(trash)


# -- which hooks run again after a take --------------------------------------------------------
def rerun_decider(taken: Taken, start: str) -> Callable[[Hook], HookResult | None]:
    """For each post_create hook: None to run it (again), or the result it had in the pool
    (status `pooled`). A hook runs again when a path that changed between the entry's base
    and the start point, or a `.worktreeinclude` file copied again, matches its `inputs`;
    without `inputs`, whenever the start point differs from the base; and always when it did
    not run in the pool (new, changed, or unapproved there)."""
    from .hooks import POOLED, HookResult

    changed = taken.changed
    ran = {str(h.get("key")): h for h in taken.hooks if h.get("status") == "ok"}

    def decide(hook: Hook) -> HookResult | None:
        before = ran.get(hook.key)
        if before is None:
            return None
        if taken.base != start and (hook.inputs is None or any_matches(hook.inputs, changed)):
            return None
        if hook.inputs is not None and any_matches(hook.inputs, taken.recopied):
            return None
        code = before.get("exit_code")
        return HookResult(hook.name, hook.type, hook.source, POOLED,
                          code if isinstance(code, int) else 0)
    return decide


