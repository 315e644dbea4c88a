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

from ..core import git as g
from ..core.errors import VwtError, says_disk_full
from ..core.layout import Root, ensure_dir, unlink_if_exists
from ..core.light import NamedTuple
from ..core.records import parse_timestamp, utc_now, write_json_atomically

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .worktrees import Here, Repo

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
    from .settings import PROJECT_FILE, read_toml, user_file

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
    hooks: tuple[dict[str, object], ...]  # {name, type, source, status, exit_code, key,
    #                                         relocate}
    bytes: int | None = None  # what its folder took when it was made (an entry never changes)
    # the fingerprints of its `.worktreeinclude` copies (include_again.py); None: not kept
    include: dict[str, object] | None = None

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
        included = data.get("include")
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return Entry(entry_id, path[: -len(READY)], base, sparse, created, hooks,
                 taken_up if isinstance(taken_up, int) and not isinstance(taken_up, bool)
                 else None, included if isinstance(included, dict) else None)


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
        from .trash import delete_trash

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


def statuses(here: Here, all_repos: bool) -> list[PoolStatus]:
    """The pool of this repository; with `all_repos`, every repository's that has one."""
    if not all_repos:
        repo = here.repo
        return [status_of(here.root, repo.bucket, repo.info.repo_root)]
    return [status_of(here.root, bucket, repo_root_of(here.root, bucket))
            for bucket in pool_buckets(here.root)]


def entry_ages(root: Root, bucket: str) -> list[tuple[str, float]]:
    """(path, created epoch) of each ready entry, oldest first (for prune by size)."""
    return [(e.path, parse_timestamp(e.created_at)) for e in contents(root, bucket).ready]


def drain_pools(root: Root, repo: Repo | None, warn: Warn) -> list[PoolStatus]:
    """Empty `repo`'s pool, or with None every repository's (a pool whose repository is
    gone is left alone); each pool's status after."""
    targets: list[tuple[str, str, str | None]] = []
    if repo is not None:
        targets = [(repo.bucket, repo.info.common_dir, repo.info.repo_root)]
    else:
        for bucket in pool_buckets(root):
            repo_root = repo_root_of(root, bucket)
            common = _common_dir_or_none(repo_root)
            if common is None:
                warn(f"pool {bucket}: its repository is gone; left alone")
                continue
            targets.append((bucket, common, repo_root))
    for bucket, common_dir, _repo_root in targets:
        drain(root, bucket, common_dir, warn)
    return [status_of(root, bucket, repo_root) for bucket, _common, repo_root in targets]


def _common_dir_or_none(repo_root: str | None) -> str | None:
    if repo_root is None or not os.path.isdir(repo_root):
        return None
    try:
        return g.discover(repo_root).common_dir
    except VwtError:
        return None

__all__ = ["Entry", "PoolStatus", "drain"]


LAST_ERROR = ".last-error"


MAX_MESSAGE = 600  # characters: one line a person reads, not the hook's whole output


def fill_log(home: str, bucket: str) -> str:
    """Where the background filler of a repository's pool writes its output."""
    return f"{home}/logs/worktree/{bucket}/pool-fill.log"


class LastError(NamedTuple):
    """Why the pool's last fill failed."""

    message: str  # one line
    at: str  # when (UTC, `Z`)
    log: str | None  # the background filler's log; None for a fill in the foreground


def _path(root: Root, bucket: str) -> str:
    return f"{folder(root, bucket)}/{LAST_ERROR}"


def one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_MESSAGE else line[: MAX_MESSAGE - 1] + "…"


def note_failure(root: Root, bucket: str, message: str, log: str | None) -> None:
    """Keep why this fill failed. Best effort: a home that cannot be written has already
    said so to whoever ran the fill."""
    data = {"version": 1, "message": one_line(message), "at": utc_now(), "log": log}
    try:
        ensure_dir(folder(root, bucket), root.path)
        write_json_atomically(_path(root, bucket), data)
    except (OSError, VwtError):
        pass


def note_success(root: Root, bucket: str) -> None:
    """A fill succeeded: the last failure no longer holds."""
    try:
        unlink_if_exists(_path(root, bucket))
    except OSError:
        pass


def forget_disk_full(root: Root, bucket: str) -> None:
    """`vwt prune`, the repair after a full disk: a fill that failed for want of space is
    no fault of the pool's setup, and the next refill tries again."""
    failed = last_error(root, bucket)
    if failed is not None and says_disk_full(failed.message):
        note_success(root, bucket)


def last_error(root: Root, bucket: str) -> LastError | None:
    """The failure of the pool's last fill; None when it succeeded (or none ran yet). An
    unreadable file still says a fill failed."""
    path = _path(root, bucket)
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.loads(handle.read(1 << 16))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return LastError(f"a fill failed, and {path} cannot be read", "", None)
    if not isinstance(data, dict):
        return LastError(f"a fill failed, and {path} cannot be read", "", None)
    log = data.get("log")
    return LastError(one_line(str(data.get("message") or "a fill failed")),
                     str(data.get("at") or ""), log if isinstance(log, str) else None)
