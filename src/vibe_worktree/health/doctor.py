"""`vwt doctor`: a health check of the whole home that changes nothing on disk.

It may run while Vibe or other `vwt` processes use the home. Everything is first
read without a lock; each suspected problem is then looked at again under the
same locks creators and removers take (`.prune`, `.registry`), briefly, so a
creation or a removal in progress is never reported: its claim has a live
`.starting` or `.removing` holder, or its files appear and vanish under those
locks. The two repairs (`--archive-orphans`, `--relocate`) live in `orphans.py`.
"""

from __future__ import annotations

import os
import stat
import time

from ..core import git as g
from ..core.errors import VwtError
from ..core.layout import CLAIMS, TRASH, Claim, Root, bucket_name, is_empty_dir
from ..core.light import NamedTuple
from ..core.locks import REMOVING, STARTING, holder_ids, holder_is_live, prune_lock, registry_lock
from ..lifecycle.adoption import source_of as adopted_from
from ..lifecycle.worktrees import (
    BROKEN,
    MISSING,
    ORPHANED,
    READY,
    RESERVED,
    Entry,
    MissingAdmin,
    entries,
    load_entry,
    validate_checkout,
)

RESERVATION_GRACE = 600.0  # as prune: an empty reservation may wait this long for its creator
ORPHANS = ".orphans"

UNSAFE_ROOT = "unsafe_root"
BROKEN_RECORD = "broken_record"
MISSING_CHECKOUT = "missing_checkout"
UNRECORDED_CHECKOUT = "unrecorded_checkout"
UNRECORDED_GIT_WORKTREE = "unrecorded_git_worktree"
TRASH_LEFTOVER = "trash_leftover"
STALE_HOLDER = "stale_holder"
ABANDONED_RESERVATION = "abandoned_reservation"
STRAY_BRANCH = "stray_branch"
STRAY_SNAPSHOT = "stray_snapshot"
ORPHANED_REPOSITORY = "orphaned_repository"
REPOSITORY_MOVED = "repository_moved"
UNFINISHED_CHECKOUT = "unfinished_checkout"  # git never finished writing a recorded checkout
HALF_MADE_CHECKOUT = "half_made_checkout"  # a reservation's checkout a dead creation left
BROKEN_POOL_ENTRY = "broken_pool_entry"
READ_ONLY_HOME = "read_only_home"
POOL_FILL_FAILED = "pool_fill_failed"

ARCHIVE_FIX = ("vwt doctor --archive-orphans (if the repository was moved, run "
               "vwt doctor --relocate inside it instead)")


class Problem(NamedTuple):
    kind: str
    bucket: str | None
    name: str | None
    path: str
    detail: str
    fix: str

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "bucket": self.bucket, "name": self.name, "path": self.path,
                "detail": self.detail, "fix": self.fix}


class Report(NamedTuple):
    problems: tuple[Problem, ...]

    @property
    def healthy(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, object]:
        return {"healthy": self.healthy, "problems": [p.to_json() for p in self.problems]}


class KnownRepo(NamedTuple):
    """A repository some record names, found where the record says it is."""

    info: g.RepoInfo
    bucket: str


def check(root: Root, cwd: str) -> Report:
    """Every problem of the home, sorted by kind, bucket and name."""
    found: list[Problem] = list(_root_problems(root))
    if os.path.islink(root.path) or not os.path.isdir(root.path):
        return _report(found)
    claims = entries(root, root.buckets())
    busy = _busy_claims(root, claims, found)
    here = current_repo(cwd)
    moved = moved_from(root, here) if here else {}
    for entry in claims:
        if (entry.claim.bucket, entry.name) in busy:
            continue
        found.extend(_entry_problems(entry, moved))
    found.extend(_unrecorded_checkouts(root))
    found.extend(_trash_leftovers(root))
    found.extend(_pool_problems(root))
    repos = _known_repos(claims, here)
    for problems in g.map_parallel(lambda r: _repo_problems(root, r), list(repos.values())):
        found.extend(problems)
    # One problem per folder: git's fix for a registered one; relocation's for a checkout
    # that an interrupted relocation had moved ahead of its claim.
    covered = {(p.bucket, p.name) for p in found if p.kind == UNRECORDED_GIT_WORKTREE}
    if here:
        covered |= {(here.bucket, name) for _bucket, name in moved}
    return _report([p for p in found
                    if p.kind != UNRECORDED_CHECKOUT or (p.bucket, p.name) not in covered])


def _report(found: list[Problem]) -> Report:
    unique = {(p.kind, p.bucket or "", p.name or "", p.path): p for p in found}
    return Report(tuple(unique[k] for k in sorted(unique)))


# -- the root itself ---------------------------------------------------------------------------
def _root_problems(root: Root) -> list[Problem]:
    found: list[Problem] = []
    for path in (f"{root.home}/worktrees", root.claims):
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(mode) and _read_only(path):
            if not any(p.kind == READ_ONLY_HOME for p in found):  # one filesystem, one line
                found.append(Problem(
                    READ_ONLY_HOME, None, None, path, "is on a read-only filesystem: vwt can "
                    "list and inspect, but cannot create, hold or remove worktrees",
                    f"remount the filesystem holding {path} read-write, or set VIBE_HOME "
                    "(or --home) to a writable folder"))
        elif stat.S_ISLNK(mode):
            found.append(Problem(UNSAFE_ROOT, None, None, path, "is a symlink",
                                 f"replace the symlink {path} with a real folder holding "
                                 "the same files"))
        elif not stat.S_ISDIR(mode):
            found.append(Problem(UNSAFE_ROOT, None, None, path, "is not a folder",
                                 f"move {path} away; vwt recreates it"))
        elif not os.access(path, os.W_OK | os.X_OK):  # access(2): nothing is created to test
            found.append(Problem(UNSAFE_ROOT, None, None, path, "is not writable",
                                 f"chmod u+rwx {path}"))
    return found


def _read_only(path: str) -> bool:
    """The filesystem (or the mount) holding `path` is read-only: no chmod helps."""
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


# -- claims and holders ------------------------------------------------------------------------
def _busy_claims(root: Root, claims: list[Entry], found: list[Problem]) -> set[tuple[str, str]]:
    """Claims a creation or removal is working on (live `.starting` / `.removing`); stale
    holder files are added to `found`. One pass under the registry lock."""
    busy = set()
    with registry_lock(root, create=False):
        for entry in claims:
            claim = entry.claim
            for holder in holder_ids(claim) if entry.has_holders else []:
                path = f"{claim.holders_dir}/{holder}"
                if holder_is_live(path):
                    if holder in (STARTING, REMOVING):
                        busy.add((claim.bucket, claim.name))
                elif os.path.isfile(path) and not os.path.islink(path):
                    found.append(Problem(STALE_HOLDER, claim.bucket, claim.name, path,
                                         f"holder {holder} is not locked by any process",
                                         "vwt prune"))
    return busy


def orphan_detail(entry: Entry) -> str | None:
    """Why the entry's repository counts as gone, or None when it is there."""
    source = entry.record or entry.recovery
    if source is None or entry.problem is not None:
        return None
    if entry.state == ORPHANED or not os.path.isdir(source.repo_root):
        return f"its repository {source.repo_root} no longer exists"
    if entry.state == READY:
        try:
            validate_checkout(entry.claim)
        except MissingAdmin as exc:
            return exc.message
        except VwtError:
            return None
    return None


def _entry_problems(entry: Entry, moved: dict[tuple[str, str], str]) -> list[Problem]:
    claim, record = entry.claim, entry.record
    key = (claim.bucket, claim.name)
    if key in moved:
        return [Problem(REPOSITORY_MOVED, claim.bucket, claim.name, claim.checkout,
                        f"its repository moved to {moved[key]}", "vwt doctor --relocate")]
    if entry.state == BROKEN:
        return [Problem(BROKEN_RECORD, claim.bucket, claim.name, claim.folder,
                        str(entry.problem),
                        f"repair or move away {claim.folder} by hand (vwt never deletes "
                        "anything on the strength of an unreadable record)")]
    orphaned = orphan_detail(entry)
    if orphaned:
        return [Problem(ORPHANED_REPOSITORY, claim.bucket, claim.name, claim.checkout,
                        orphaned, ARCHIVE_FIX)]
    if entry.state == MISSING:
        return [Problem(MISSING_CHECKOUT, claim.bucket, claim.name, claim.checkout,
                        "the record's checkout is gone", "vwt prune")]
    if entry.state == READY:
        why = _unfinished(claim)
        if why:
            return [Problem(UNFINISHED_CHECKOUT, claim.bucket, claim.name, claim.checkout,
                            f"recorded as ready, but {why}", "vwt prune")]
    if entry.state == RESERVED and record is not None:
        source = adopted_from(record)
        if source is not None:  # not busy (see check): prune settles it at once, no grace
            return [Problem(ABANDONED_RESERVATION, claim.bucket, claim.name, claim.checkout,
                            f"an adoption of {source} that stopped half way", "vwt prune")]
        try:
            age = time.time() - record.claimed_epoch()
        except ValueError:
            age = RESERVATION_GRACE
        if _creator_died(claim):  # not busy: its `.starting` file is there, unlocked
            if not is_empty_dir(claim.checkout):
                return [Problem(HALF_MADE_CHECKOUT, claim.bucket, claim.name, claim.checkout,
                                "a creation whose process died before its checkout was "
                                "finished (its .starting holder is not locked)", "vwt prune")]
            return [Problem(ABANDONED_RESERVATION, claim.bucket, claim.name, claim.checkout,
                            "a creation whose process died (its .starting holder is not "
                            "locked)", "vwt prune")]
        if age >= RESERVATION_GRACE:
            return [Problem(ABANDONED_RESERVATION, claim.bucket, claim.name, claim.checkout,
                            f"a creation that stopped {int(age // 60)} minutes ago",
                            "vwt prune")]
        if not is_empty_dir(claim.checkout) and not _busy(claim):
            return [_half_made(entry)]
    return []


def _creator_died(claim: Claim) -> bool:
    """The reservation's `.starting` holder file is there and no process holds it: its
    creator died (prune repairs that at once, without the grace period)."""
    path = f"{claim.holders_dir}/{STARTING}"
    with registry_lock(claim.root, create=False):  # a holder being taken is not yet locked
        return os.path.isfile(path) and not os.path.islink(path) and not holder_is_live(path)


def _half_made(entry: Entry) -> Problem:
    """A young reservation whose checkout has content and whose creator is gone (no live
    `.starting`, looked at again under the registry lock): a creation interrupted before
    the checkout was finished. Prune leaves it the grace period; `new` (or `restore`) run
    again takes it over at once: finishes it, or makes it again."""
    import shlex

    claim, record = entry.claim, entry.record
    assert record is not None
    where = f"vwt -C {shlex.quote(record.repo_root)}"
    if entry.recovery is not None:
        return Problem(HALF_MADE_CHECKOUT, claim.bucket, claim.name, claim.checkout,
                       "a restore stopped before its checkout was finished",
                       f"{where} restore {shlex.quote(claim.name)}")
    fix = f"{where} new {shlex.quote(claim.name)}"
    if record.branch != claim.name:
        fix += f" -b {shlex.quote(record.branch)}"
    fix += "".join(f" --sparse {shlex.quote(folder)}" for folder in record.sparse)
    return Problem(HALF_MADE_CHECKOUT, claim.bucket, claim.name, claim.checkout,
                   "a creation stopped before its checkout was finished (no base commit, "
                   "and no process is making it)", fix)


def _unfinished(claim: Claim) -> str | None:
    from ..lifecycle.unfinished import unfinished

    try:
        return unfinished(validate_checkout(claim))
    except VwtError:
        return None


# -- folders without records -------------------------------------------------------------------
def _checkout_folders(root: Root) -> list[tuple[str, str]]:
    """(bucket, name) of everything under the bucket folders of the root."""
    found = []
    try:
        buckets = [e.name for e in os.scandir(root.path)
                   if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    for bucket in sorted(buckets):
        try:
            found += [(bucket, n) for n in sorted(os.listdir(f"{root.path}/{bucket}"))]
        except OSError:
            continue
    return found


def _unrecorded(root: Root, bucket: str, name: str) -> bool:
    claim = root.claim(bucket, name)
    if not os.path.lexists(claim.checkout):
        return False
    entry = load_entry(claim)
    return entry is None or (entry.record is None and entry.problem is None)


def _unrecorded_checkouts(root: Root) -> list[Problem]:
    suspects = [(b, n) for b, n in _checkout_folders(root) if _unrecorded(root, b, n)]
    if not suspects:
        return []
    # A creation makes the folder and its record under the prune lock: look again there.
    with prune_lock(root, create=False):
        confirmed = [(b, n) for b, n in suspects if _unrecorded(root, b, n)]
    return [Problem(UNRECORDED_CHECKOUT, b, n, root.claim(b, n).checkout,
                    "a folder in a bucket that no record claims",
                    f"not managed by vwt: move {root.claim(b, n).checkout} out of "
                    f"{root.path} (or delete it if nothing in it is needed)")
            for b, n in confirmed]


def _pool_problems(root: Root) -> list[Problem]:
    """Warm pool entries that are not whole (a killed filler or taker, a changed entry, a
    ready one whose checkout is gone): never handed out, and `vwt pool drain` clears them."""
    if not os.path.isdir(f"{root.path}/.pool"):
        return []
    from ..lifecycle import pool

    found = []
    for bucket in pool.pool_buckets(root):
        repo_root = pool.repo_root_of(root, bucket)
        fix = f"vwt -C {repo_root} pool drain" if repo_root else "vwt pool drain"
        state = pool.contents(root, bucket)
        busy = pool.filling(root, bucket)
        folder = pool.folder(root, bucket)
        bad = {i: "its ready marker cannot be read" for i in state.bad_markers}
        bad |= {i: "it was found with changes in it (kept until snapshotted)"
                for i in state.changed}
        bad |= {i: "a vwt new taking it was interrupted" for i in state.taken
                if not pool.taken_live(root, bucket, i)}
        if not busy:
            bad |= {i: "a fill was interrupted before it was ready" for i in state.unready
                    if i not in state.taken}
        bad |= {e.id: "its checkout is not a whole git worktree" for e in state.ready
                if not os.path.isfile(f"{e.path}/.git")}
        found += [Problem(BROKEN_POOL_ENTRY, bucket, None, f"{folder}/{entry_id}",
                          f"pool entry {entry_id}: {why}; it is never handed out", fix)
                  for entry_id, why in sorted(bad.items())]
        found += _failed_fill(root, bucket, repo_root)
    return found


def _failed_fill(root: Root, bucket: str, repo_root: str | None) -> list[Problem]:
    """The pool's last fill failed (a background refill nobody watched, most often): no
    entry is ready until the cause is fixed, and the log says what the hook printed."""
    from ..lifecycle.pool import fill_log, folder, last_error

    failed = last_error(root, bucket)
    if failed is None:
        return []
    log = failed.log or fill_log(root.home, bucket)
    logged = failed.log is not None and os.path.isfile(log)
    when = f" at {failed.at}" if failed.at else ""
    detail = (f"its last fill failed{when}: {failed.message}"
              + (f" (the filler's output is in {log})" if logged else ""))
    fill = f"vwt -C {repo_root} pool fill" if repo_root else "vwt pool fill"
    fix = (f"read {log}, fix the cause, then {fill} (a fill that succeeds clears this)"
           if logged else f"fix the cause, then {fill} (a fill that succeeds clears this)")
    return [Problem(POOL_FILL_FAILED, bucket, None, log if logged else folder(root, bucket),
                    detail, fix)]


def _trash_leftovers(root: Root) -> list[Problem]:
    try:
        if not stat.S_ISDIR(os.lstat(root.trash).st_mode):
            return [Problem(TRASH_LEFTOVER, None, None, root.trash, "is not a real folder",
                            f"move {root.trash} away")]
        names = sorted(os.listdir(root.trash))
    except FileNotFoundError:
        return []
    if not names:
        return []
    with registry_lock(root, create=False):  # a removal in progress holds `.removing`
        removing = _removing_prefixes(root)
    found = []
    for name in names:
        path = f"{root.trash}/{name}"
        if any(name.startswith(p) for p in removing) or not os.path.lexists(path):
            continue
        found.append(Problem(TRASH_LEFTOVER, None, None, path,
                             "a checkout an interrupted removal moved aside", "vwt prune"))
    return found


def _removing_prefixes(root: Root) -> list[str]:
    prefixes = []
    for bucket in root.buckets():
        for claim in root.claims_in(bucket):
            if holder_is_live(f"{claim.holders_dir}/{REMOVING}"):
                prefixes.append(f"{bucket}-{claim.name}-")
    return prefixes


# -- repositories ------------------------------------------------------------------------------
def current_repo(cwd: str) -> KnownRepo | None:
    try:
        info = g.discover(cwd)
    except VwtError:
        return None
    return KnownRepo(info, bucket_name(info.repo_root, info.common_dir))


def _known_repos(claims: list[Entry], here: KnownRepo | None) -> dict[str, KnownRepo]:
    """common git dir -> repository, for every repository a record names that is where the
    record says (and maps to the record's bucket), plus the current one."""
    repos: dict[str, KnownRepo] = {}
    if here:
        repos[here.info.common_dir] = here
    tried: set[str] = set()
    for entry in claims:
        source = entry.record or entry.recovery
        if source is None or source.repo_root in tried or not os.path.isdir(source.repo_root):
            continue
        tried.add(source.repo_root)
        try:
            info = g.discover(source.repo_root)
        except VwtError:
            continue
        bucket = bucket_name(info.repo_root, info.common_dir)
        if bucket == entry.claim.bucket:
            repos.setdefault(info.common_dir, KnownRepo(info, bucket))
    return repos


def _bucket_names(root: Root, bucket: str) -> tuple[set[str], set[str]]:
    """The names (records or recovery records) and the branches they name, in a bucket."""
    names, branches = set(), set()
    for claim in root.claims_in(bucket):
        entry = load_entry(claim)
        if entry is None:
            continue
        names.add(claim.name)
        for source in (entry.record, entry.recovery):
            if source is not None:
                branches.add(source.branch)
        if entry.problem is not None:
            names.add(claim.name)  # an unreadable record may name anything: claim it all
    return names, branches


def _repo_problems(root: Root, repo: KnownRepo) -> list[Problem]:
    """Git's view of one repository: worktree entries, `vibe/*` branches, snapshot refs."""
    git = g.Git(repo.info.common_dir)
    before = _bucket_names(root, repo.bucket)
    try:
        worktrees = g.worktree_list(git)
        branches = g.ref_names(git, "refs/heads/vibe/")
        snapshots = g.ref_names(git, "refs/vibe/reaped/")
        kept = g.refs_merged_into_any(git, "refs/heads/vibe/", snapshots) if branches else set()
    except VwtError:
        return []
    # Read the records again: one made (or dropped) while git answered still counts.
    after = _bucket_names(root, repo.bucket)
    names, named_branches = before[0] | after[0], before[1] | after[1]
    where = repo.info.repo_root
    found = []
    checked_out = set()
    for wt in worktrees:
        checked_out.add(wt.get("branch", "").removeprefix("refs/heads/"))
        path = wt.get("worktree", "")
        if not path.startswith(f"{root.path}/"):
            continue
        parts = path[len(root.path) + 1:].split("/")
        if len(parts) != 2 or parts[0].startswith("."):
            continue
        bucket, name = parts
        if bucket != repo.bucket:
            continue  # a moved repository's worktree: reported as repository_moved
        if name in names or _busy(root.claim(bucket, name)):
            continue
        gone = "prunable" in wt or not os.path.lexists(path)
        found.append(Problem(
            UNRECORDED_GIT_WORKTREE, bucket, name, path,
            "git lists this worktree inside the root but no record claims it"
            + (" (its checkout is gone)" if gone else ""),
            f"git -C {where} worktree prune" if gone
            else f"git -C {where} worktree remove {path} (refuses while it has changes)"))
    for ref in snapshots:
        name = ref.removeprefix("refs/vibe/reaped/")
        if name in names or _busy(root.claim(repo.bucket, name)):
            continue
        found.append(Problem(
            STRAY_SNAPSHOT, repo.bucket, name, where,
            f"{ref} has neither a record nor a recovery record",
            f"git -C {where} update-ref -d {ref} once nothing in it is needed "
            f"(look first: git -C {where} show --stat {ref})"))
    for ref in branches:
        branch = ref.removeprefix("refs/heads/")
        if branch in named_branches or branch in checked_out or ref in kept:
            continue
        found.append(Problem(
            STRAY_BRANCH, repo.bucket, None, where,
            f"branch {branch} is named by no record, checked out nowhere and in no snapshot",
            f"git -C {where} branch -D {branch} if its commits are not needed"))
    return found


def _busy(claim: Claim) -> bool:
    with registry_lock(claim.root, create=False):
        return any(holder_is_live(f"{claim.holders_dir}/{h}") for h in (STARTING, REMOVING))


# -- moved repositories ------------------------------------------------------------------------
def moved_from(root: Root, repo: KnownRepo) -> dict[tuple[str, str], str]:
    """(old bucket, name) -> new repo root, for the managed checkouts the repository's
    worktree entries name in another bucket (it was moved), and for records in its own
    bucket that still name another repo_root (a relocation that stopped half way)."""
    moved = {}
    for bucket, name in linked_checkouts(root, repo.info.common_dir):
        claim = root.claim(bucket, name)
        entry = load_entry(claim)
        if entry is None or entry.record is None:
            continue
        if bucket != repo.bucket or entry.record.repo_root != repo.info.repo_root:
            moved[(bucket, name)] = repo.info.repo_root
    for claim in root.claims_in(repo.bucket):
        entry = load_entry(claim)
        if entry is not None and entry.record is not None \
                and entry.record.repo_root != repo.info.repo_root:
            moved[(claim.bucket, claim.name)] = repo.info.repo_root
    return moved


def linked_checkouts(root: Root, common_dir: str) -> list[tuple[str, str]]:
    """(bucket, name) of every checkout inside the root that the repository's
    `worktrees/*/gitdir` files name, read from the files (git may not be able to)."""
    found = []
    admin_root = f"{common_dir}/worktrees"
    try:
        admins = sorted(os.listdir(admin_root))
    except OSError:
        return []
    prefix = f"{root.path}/"
    for admin in admins:
        try:
            with open(f"{admin_root}/{admin}/gitdir", encoding="utf-8") as handle:
                dotgit = handle.read(4096).strip()
        except OSError:
            continue
        if not dotgit.startswith(prefix) or not dotgit.endswith("/.git"):
            continue
        parts = dotgit[len(prefix):-len("/.git")].split("/")
        if len(parts) == 2 and not parts[0].startswith(".") and parts[0] not in (CLAIMS, TRASH):
            found.append((parts[0], parts[1]))
    return found
