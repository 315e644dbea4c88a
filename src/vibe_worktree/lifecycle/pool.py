"""A warm pool: checkouts whose setup (post_create hooks, `.worktreeinclude` copies) has
already run, handed to `vwt new` in about the time of a rename.

Layout, under `<root>/.pool/<bucket>/` (a dot folder: neither Vibe nor retention looks):

    <id>/            a detached checkout, registered with git and `git worktree lock`-ed
                     (a locked worktree is never pruned by anyone's `git worktree prune`,
                     even while its folder is being renamed)
    <id>.json        the ready marker, written last and atomically: only an entry that has
                     one is ever handed out
    <id>.taken       a marker renamed from `<id>.json` by the process taking the entry,
                     flock-ed while it does; the rename is the atomic claim, so two racing
                     `new`s never get the same entry
    <id>.changed     an entry found with changes in it: never handed out, snapshotted
                     (`refs/vibe/pool/<id>`) and removed by the next fill or prune
    .fill            flock-ed by the one process filling this repository's pool
    .fill-queue      flock-ed by the one filler waiting for it (so refills never pile up)
    .repo_root       the repository's main checkout, for `vwt pool status --all`

A folder without a marker while nobody holds `.fill` is a half-made entry (a filler was
killed): the next fill, drain or prune removes it.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import time
from collections.abc import Callable
from typing import NamedTuple

from ..core import git as g
from ..core.errors import VwtError
from ..core.files import write_atomically
from ..core.layout import Root, ensure_dir, unlink_if_exists
from ..core.patterns import any_matches
from ..core.records import parse_timestamp

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .hooks import Hook, HookResult

POOL = ".pool"
READY = ".json"
TAKEN = ".taken"
CHANGED = ".changed"
FILL_LOCK = ".fill"
QUEUE_LOCK = ".fill-queue"
REPO_FILE = ".repo_root"
SNAPSHOT_PREFIX = "refs/vibe/pool/"
LOCK_REASON = "vibe-worktree pool entry"
DEFAULT_MAX_AGE_DAYS = 7.0
_ID = re.compile(r"[0-9a-f]{16}")

Warn = Callable[[str], None]


def _quiet(_message: str) -> None:
    pass


# -- where ----------------------------------------------------------------------------------
def pool_root(root: Root) -> str:
    return f"{root.path}/{POOL}"


def folder(root: Root, bucket: str) -> str:
    return f"{root.path}/{POOL}/{bucket}"


def is_pool_path(root: Root, path: str) -> bool:
    """A checkout of the pool (for code that walks git's worktree list)."""
    return path.startswith(f"{pool_root(root)}/")


def pool_buckets(root: Root) -> list[str]:
    try:
        with os.scandir(pool_root(root)) as found:
            return sorted(e.name for e in found
                          if not e.name.startswith(".") and e.is_dir(follow_symlinks=False))
    except (FileNotFoundError, NotADirectoryError):
        return []


# -- configuration ----------------------------------------------------------------------------
def configured_size(home: str, repo_root: str) -> int:
    """`[pool] size` of `<home>/worktree.toml`, else of the main checkout's
    `.vibe/worktree.toml`, else 0."""
    from .hooks import PROJECT_FILE, read_toml, user_file

    for path in (user_file(home), f"{repo_root}/{PROJECT_FILE}"):
        if not os.path.exists(path):
            continue
        table = (read_toml(path) or {}).get("pool")
        if table is None:
            continue
        size = table.get("size") if isinstance(table, dict) else None
        if size is None:
            continue
        if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= 1000:
            raise VwtError(f"{path}: [pool] size must be a whole number from 0 to 1000")
        return size
    return 0


def max_age_days(home: str) -> float:
    from ..core.config import config_path, read_config

    value = read_config(home).get("pool_max_age_days", DEFAULT_MAX_AGE_DAYS)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise VwtError(f"pool_max_age_days in {config_path(home)} must be a number of days")
    return float(value)


# -- entries ----------------------------------------------------------------------------------
class Entry(NamedTuple):
    """A ready entry, as its marker describes it."""

    id: str
    path: str
    base: str
    sparse: tuple[str, ...]
    created_at: str
    hooks: tuple[dict[str, object], ...]  # {name, type, source, status, exit_code, key}
    bytes: int | None = None  # what its folder took when it was made (an entry never changes)

    def marker(self) -> str:
        return f"{self.path}{READY}"


def _read_marker(path: str, entry_id: str) -> Entry | None:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        base, created = data["base"], data["created_at"]
        sparse = tuple(str(d) for d in data.get("sparse", []))
        hooks = tuple(h for h in data.get("hooks", []) if isinstance(h, dict))
        if not isinstance(base, str) or not re.fullmatch(r"[0-9a-f]{40,64}", base):
            return None
        parse_timestamp(created)
        taken_up = data.get("bytes")
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return Entry(entry_id, path[: -len(READY)], base, sparse, created, hooks,
                 taken_up if isinstance(taken_up, int) and not isinstance(taken_up, bool)
                 else None)


class Contents(NamedTuple):
    """What one bucket's pool folder holds right now."""

    ready: list[Entry]
    unready: list[str]  # ids of folders without a marker (being made, or half-made)
    taken: list[str]  # ids with a `.taken` marker
    changed: list[str]  # ids set aside as changed
    bad_markers: list[str]  # ids whose ready marker cannot be read


def contents(root: Root, bucket: str) -> Contents:
    where = folder(root, bucket)
    try:
        names = os.listdir(where)
    except (FileNotFoundError, NotADirectoryError):
        return Contents([], [], [], [], [])
    ids = {n for n in names if _ID.fullmatch(n)}
    ready, bad = [], []
    for name in sorted(names):
        if name.endswith(READY) and _ID.fullmatch(name[: -len(READY)]):
            entry_id = name[: -len(READY)]
            entry = _read_marker(f"{where}/{name}", entry_id)
            (ready.append(entry) if entry and entry_id in ids else bad.append(entry_id))
    marked = {n.rsplit(".", 1)[0] for n in names if "." in n and not n.startswith(".")}
    taken = sorted(n[: -len(TAKEN)] for n in names if n.endswith(TAKEN))
    changed = sorted(n[: -len(CHANGED)] for n in names if n.endswith(CHANGED))
    ready.sort(key=lambda e: e.created_at)
    return Contents(ready, sorted(ids - marked), taken, changed, bad)


# -- locks ----------------------------------------------------------------------------------
def _open_lock(path: str) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def _try_lock(fd: int) -> bool:
    from ..core.locks import try_flock

    return try_flock(fd)


def _is_locked(path: str) -> bool:
    """Someone holds a flock on `path` (False when there is no such file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return not _try_lock(fd)
    finally:
        os.close(fd)


class FillLock:
    """The one filler of a repository's pool. `wait`: block until it is free."""

    def __init__(self, root: Root, bucket: str) -> None:
        self.path = f"{folder(root, bucket)}/{FILL_LOCK}"
        self.root = root
        self.bucket = bucket
        self.fd: int | None = None

    def acquire(self, wait: bool) -> bool:
        ensure_dir(folder(self.root, self.bucket), self.root.path)
        fd = _open_lock(self.path)
        if wait:
            fcntl.flock(fd, fcntl.LOCK_EX)
        elif not _try_lock(fd):
            os.close(fd)
            return False
        self.fd = fd
        return True

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def filling(root: Root, bucket: str) -> bool:
    return _is_locked(f"{folder(root, bucket)}/{FILL_LOCK}")


def taken_live(root: Root, bucket: str, entry_id: str) -> bool:
    """A `new` is taking this entry right now."""
    return _is_locked(f"{folder(root, bucket)}/{entry_id}{TAKEN}")


# -- claiming an entry (atomic) --------------------------------------------------------------
class Claimed(NamedTuple):
    entry: Entry
    fd: int  # the flock-ed `.taken` marker: keeps cleaners away while the taker works

    @property
    def taken_path(self) -> str:
        return f"{self.entry.path}{TAKEN}"

    def done(self) -> None:
        """The entry is gone from the pool (moved into place, or removed)."""
        unlink_if_exists(self.taken_path)
        os.close(self.fd)

    def give_up(self) -> None:
        """Leave it for the next cleaner (an unlocked `.taken` marker)."""
        os.close(self.fd)


def claim(entry: Entry) -> Claimed | None:
    """Take `entry` out of the pool: lock its marker, then rename it. The rename decides:
    of racing takers, exactly one succeeds; None for the others."""
    try:
        fd = os.open(entry.marker(), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    if not _try_lock(fd):
        os.close(fd)
        return None
    try:
        os.rename(entry.marker(), f"{entry.path}{TAKEN}")
    except OSError:
        os.close(fd)
        return None
    return Claimed(entry, fd)


# -- the repository a pool is of ------------------------------------------------------------
def repo_root_of(root: Root, bucket: str) -> str | None:
    try:
        with open(f"{folder(root, bucket)}/{REPO_FILE}", encoding="utf-8") as handle:
            return handle.read(4096) or None
    except OSError:
        return None


# -- removing -------------------------------------------------------------------------------
def remove_entry(root: Root, bucket: str, common_dir: str, entry_id: str, warn: Warn) -> bool:
    """Snapshot the entry if it holds any change, then remove it (folder via `.trash`,
    git's admin entry, markers). False when it was kept because its snapshot failed."""
    path = f"{folder(root, bucket)}/{entry_id}"
    repo_git = g.Git(common_dir)
    if os.path.isfile(f"{path}/.git") and not os.path.islink(path):
        try:
            _snapshot_if_changed(path, repo_git, entry_id)
        except VwtError as exc:
            warn(f"pool entry {entry_id} kept: its snapshot failed ({exc.message})")
            return False
    if os.path.lexists(path):
        from .remove import delete_trash

        ensure_dir(root.trash, root.path)
        trash = f"{root.trash}/pool-{bucket}-{entry_id}-{os.urandom(16).hex()}"
        os.rename(path, trash)
        g.worktree_remove_entry(repo_git, path)
        delete_trash(trash)
    else:
        g.worktree_remove_entry(repo_git, path)
    for suffix in (READY, CHANGED):
        unlink_if_exists(f"{path}{suffix}")
    return True


def _snapshot_if_changed(path: str, repo_git: g.Git, entry_id: str) -> None:
    """`refs/vibe/pool/<id>` holds whatever a hook or a person left in the entry."""
    from .worktrees import Checkout, housekeeping_git

    git = g.Git(path)
    if not git.out("status", "--porcelain", "-z", "--untracked-files=all",
                   env={"GIT_OPTIONAL_LOCKS": "0"}):
        return
    from .remove import stage_work

    admin = git.out("rev-parse", "--absolute-git-dir").strip()
    checkout = Checkout(path, admin, repo_git.cwd, None)
    tree = stage_work(housekeeping_git(checkout), admin, admin)
    head = g.head_commit(git)
    commit = g.commit_tree(repo_git, tree, [head], f"vibe-worktree snapshot of pool entry "
                           f"{entry_id}")
    g.set_ref(repo_git, f"{SNAPSHOT_PREFIX}{entry_id}", commit)


def clean_up(root: Root, bucket: str, common_dir: str, warn: Warn) -> int:
    """Remove half-made entries, those a dead taker left, and those set aside as changed.
    Call with the fill lock held (no entry is being made meanwhile)."""
    where = folder(root, bucket)
    found = contents(root, bucket)
    removed = 0
    for entry_id in found.taken:
        marker = f"{where}/{entry_id}{TAKEN}"
        if _is_locked(marker):
            continue  # a live `new` is taking it
        if os.path.lexists(f"{where}/{entry_id}") and not remove_entry(
                root, bucket, common_dir, entry_id, warn):
            continue
        unlink_if_exists(marker)
        removed += 1
    for entry_id in found.changed + found.bad_markers:
        removed += remove_entry(root, bucket, common_dir, entry_id, warn)
    for entry_id in found.unready:
        if entry_id in found.taken:
            continue
        removed += remove_entry(root, bucket, common_dir, entry_id, warn)
    return removed


def drain(root: Root, bucket: str, common_dir: str, warn: Warn) -> int:
    """Empty the pool (waits for a running filler to finish its entry first)."""
    lock = FillLock(root, bucket)
    if filling(root, bucket):
        warn("waiting for the pool's filler to finish the entry it is making…")
    lock.acquire(wait=True)
    try:
        removed = clean_up(root, bucket, common_dir, warn)
        return removed + sum(remove_claimed(root, bucket, common_dir, entry, warn)
                             for entry in contents(root, bucket).ready)
    finally:
        lock.release()


def trim(root: Root, bucket: str, common_dir: str, size: int, max_age: float, now: float,
         warn: Warn, dry_run: bool = False) -> list[str]:
    """prune's share: entries beyond `size` (oldest first) and older than `max_age` days,
    plus half-made ones. Skipped while a filler works on this pool (it cleans up itself)."""
    lock = FillLock(root, bucket)
    if dry_run:
        ready = contents(root, bucket).ready
        return [e.id for e in _doomed(ready, size, max_age, now)]
    if not lock.acquire(wait=False):
        return []
    try:
        clean_up(root, bucket, common_dir, warn)
        return [entry.id for entry in _doomed(contents(root, bucket).ready, size, max_age, now)
                if remove_claimed(root, bucket, common_dir, entry, warn)]
    finally:
        lock.release()


def prune_pools(root: Root, dry_run: bool, warn: Warn) -> list[dict[str, object]]:
    """`vwt prune`'s share: in every repository's pool, the entries beyond its size or older
    than `pool_max_age_days`, and the half-made ones. [{bucket, id}] of the ready entries
    removed (or, with `dry_run`, that would be)."""
    buckets = pool_buckets(root)
    if not buckets:
        return []
    max_age = max_age_days(root.home)
    now = time.time()
    removed: list[dict[str, object]] = []
    from .pool_fill import forget_disk_full

    for bucket in buckets:
        if not dry_run:
            forget_disk_full(root, bucket)
        repo_root = repo_root_of(root, bucket)
        try:
            info = g.discover(repo_root) if repo_root and os.path.isdir(repo_root) else None
            size = configured_size(root.home, repo_root) if info and repo_root else 0
        except VwtError as exc:
            warn(f"pool {bucket}: {exc.message}; left alone")
            continue
        if info is None:
            warn(f"pool {bucket}: its repository {repo_root} is gone; left alone")
            continue
        ids = trim(root, bucket, info.common_dir, size, max_age, now, warn, dry_run)
        removed += [{"bucket": bucket, "id": entry_id} for entry_id in ids]
    return removed


class Placed(NamedTuple):
    """A ready entry and the pool it is in (for prune by size, across repositories)."""

    bucket: str
    id: str
    path: str
    created_at: str
    common_dir: str


def ready_everywhere(root: Root) -> list[Placed]:
    """Every ready entry of every pool whose repository is still there, oldest first."""
    found = []
    for bucket in pool_buckets(root):
        repo_root = repo_root_of(root, bucket)
        try:
            info = g.discover(repo_root) if repo_root and os.path.isdir(repo_root) else None
        except VwtError:
            info = None
        if info is None:
            continue
        found += [Placed(bucket, e.id, e.path, e.created_at, info.common_dir)
                  for e in contents(root, bucket).ready]
    return sorted(found, key=lambda p: p.created_at)


def remove_ready(root: Root, placed: Placed, warn: Warn) -> bool:
    """Claim one ready entry and remove it; False when someone took it first or it was kept
    (its snapshot failed)."""
    return any(remove_claimed(root, placed.bucket, placed.common_dir, entry, warn)
               for entry in contents(root, placed.bucket).ready if entry.id == placed.id)


def remove_claimed(root: Root, bucket: str, common_dir: str, entry: Entry, warn: Warn
                   ) -> bool:
    """Claim a ready entry (as a taker would) and remove it; False when someone else took
    it first, or when it was kept because its snapshot failed (it is then ready again)."""
    claimed = claim(entry)
    if claimed is None:
        return False
    if remove_entry(root, bucket, common_dir, entry.id, warn):
        claimed.done()
        return True
    os.rename(claimed.taken_path, entry.marker())
    claimed.give_up()
    return False


def _doomed(ready: list[Entry], size: int, max_age: float, now: float) -> list[Entry]:
    """Oldest first: what is beyond `size`, and whatever is older than `max_age` days."""
    extra = max(0, len(ready) - size)
    old = [e for e in ready if now - parse_timestamp(e.created_at) > max_age * 86400]
    doomed = {e.id: e for e in ready[:extra] + old}
    return sorted(doomed.values(), key=lambda e: e.created_at)


# -- taking an entry (by `new`) ---------------------------------------------------------------
class Taken(NamedTuple):
    """An entry moved into place: what `new` needs to decide which hooks run again."""

    base: str  # the commit the entry's hooks ran at
    hooks: tuple[dict[str, object], ...]
    changed: tuple[str, ...] = ()  # paths that differ between `base` and the start point


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
            return Taken(entry.base, entry.hooks)
    return None


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
    from .remove import delete_trash

    ensure_dir(root.trash, root.path)
    trash = f"{root.trash}/pool-{os.path.basename(checkout)}-{os.urandom(16).hex()}"
    os.rename(checkout, trash)
    g.worktree_remove_entry(repo_git, checkout)
    os.mkdir(checkout)
    delete_trash(trash)


# -- which hooks run again after a take --------------------------------------------------------
def rerun_decider(taken: Taken, start: str) -> Callable[[Hook], HookResult | None]:
    """For each post_create hook: None to run it (again), or the result it had in the pool.
    A hook runs again when a path that changed between the entry's base and the start point
    matches its `inputs`; without `inputs`, whenever the start point differs from the base;
    and always when it did not run in the pool (new, changed, or unapproved there)."""
    from .hooks import HookResult

    changed = taken.changed
    ran = {str(h.get("key")): h for h in taken.hooks if h.get("status") == "ok"}

    def decide(hook: Hook) -> HookResult | None:
        before = ran.get(hook.key)
        if before is None:
            return None
        if taken.base != start and (hook.inputs is None or any_matches(hook.inputs, changed)):
            return None
        code = before.get("exit_code")
        return HookResult(hook.name, hook.type, hook.source, "ok",
                          code if isinstance(code, int) else 0)
    return decide


# -- status ---------------------------------------------------------------------------------
class PoolStatus(NamedTuple):
    bucket: str
    repo_root: str | None
    size: int
    ready: int
    filling: int
    base: str | None
    broken: int = 0  # half-made entries, dead takers' leftovers, changed ones
    bytes: int = 0  # what every entry's folder takes on disk, as `list --size` counts
    last_error: str | None = None  # why the last fill failed; None once one succeeded
    last_error_at: str | None = None
    log: str | None = None  # the background filler's log, when it has one

    def to_json(self) -> dict[str, object]:
        return dict(self._asdict())


def status_of(root: Root, bucket: str, repo_root: str | None) -> PoolStatus:
    from ..core.disk import sizes
    from .pool_fill import fill_log, last_error

    found = contents(root, bucket)
    busy = filling(root, bucket)
    size = 0
    if repo_root is not None:
        try:
            size = configured_size(root.home, repo_root)
        except VwtError:
            size = 0
    live_taken = [t for t in found.taken if taken_live(root, bucket, t)]
    unready = [u for u in found.unready if u not in found.taken]
    broken = (len(found.changed) + len(found.bad_markers) + len(found.taken) - len(live_taken)
              + (0 if busy else len(unready)))
    base = found.ready[-1].base if found.ready else None
    # a ready entry's size is in its marker (measured when it was made: it never changes);
    # only the others, and entries an older vwt made, are measured now
    known = [e.bytes for e in found.ready if e.bytes is not None]
    ids = {e.id for e in found.ready if e.bytes is None} | {
        *found.unready, *found.taken, *found.changed, *found.bad_markers}
    taken_up = sum(known) + sum(sizes([f"{folder(root, bucket)}/{i}" for i in sorted(ids)]))
    failed = last_error(root, bucket)
    log = fill_log(root.home, bucket)
    return PoolStatus(bucket, repo_root, size, len(found.ready), len(unready) if busy else 0,
                      base, broken, taken_up, failed.message if failed else None,
                      (failed.at or None) if failed else None,
                      log if os.path.isfile(log) else None)


def entry_ages(root: Root, bucket: str) -> list[tuple[str, float]]:
    """(path, created epoch) of each ready entry, oldest first (for prune by size)."""
    return [(e.path, parse_timestamp(e.created_at)) for e in contents(root, bucket).ready]


__all__ = ["Entry", "PoolStatus", "Taken", "drain", "take"]
