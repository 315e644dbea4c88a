"""What is on disk: repositories, managed entries, checkout validation and inspection."""

from __future__ import annotations

import os
import stat

from ..core.errors import NotARepository, NotFound, ValidationFailed, VwtError
from ..core.layout import (
    Claim,
    Root,
    assert_real_directories,
    bucket_matches,
    bucket_name,
    first_planted,
)
from ..core.light import NamedTuple
from ..core.records import CorruptRecord, Record, Recovery, read_record, read_recovery
from ..core.repo_dirs import discover_without_git

# The git runner is imported by the functions that run git, not here: `vwt list --no-status`
# and `vwt env` read records only, and its import is about a twentieth of them (B6).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..core import git as g
    from ..core.locks import Holder

READY = "ready"
RESERVED = "reserved"
MISSING = "missing"
SNAPSHOT = "snapshot"
BROKEN = "broken"
ORPHANED = "orphaned"  # its repository (or the checkout's git admin folder) is gone


class Repo(NamedTuple):
    """A repository and the bucket it maps to under one root."""

    root: Root
    info: g.RepoInfo

    @property
    def bucket(self) -> str:
        return bucket_name(self.info.repo_root, self.info.common_dir)

    @property
    def git(self) -> g.Git:
        from ..core import git as g
        return g.Git(self.info.repo_root)

    def claim(self, name: str) -> Claim:
        return self.root.claim(self.bucket, name)


def open_repo(root: Root, cwd: str) -> Repo:
    found = discover_without_git(cwd)  # the usual layouts: no git runner to import
    if found is None:
        from ..core import git as g

        found = g.discover(cwd)
    return Repo(root, found)


class Here:
    """Where a caller stands: the repository containing `cwd`, looked up when first asked
    for and kept (NotARepository when `cwd` is in none)."""

    def __init__(self, root: Root, cwd: str) -> None:
        self.root = root
        self.cwd = cwd
        self._repo: Repo | None = None

    @property
    def repo(self) -> Repo:
        if self._repo is None:
            self._repo = open_repo(self.root, self.cwd)
        return self._repo

    def repo_or_none(self) -> Repo | None:
        try:
            return self.repo
        except NotARepository:
            return None

    def buckets(self, all_repos: bool) -> list[str]:
        """Every bucket of the home with `all_repos`, else this repository's."""
        return self.root.buckets() if all_repos else [self.repo.bucket]


class Entry(NamedTuple):
    """Everything known about one claim without asking git."""

    claim: Claim
    record: Record | None
    recovery: Recovery | None
    problem: str | None  # why the record could not be trusted
    has_holders: bool = True  # False: no holders/ folder, so nobody can hold it
    checkout_seen: bool | None = None  # from a listing of the bucket; None: look now
    repo_seen: bool | None = None  # the record's repo_root is a folder; None: look now

    @property
    def name(self) -> str:
        return self.claim.name

    @property
    def state(self) -> str:
        if self.problem is not None:
            return BROKEN
        if self.record is None:
            return SNAPSHOT
        if self.record.reserved:
            return RESERVED
        repo = self.repo_seen
        if not (os.path.isdir(self.record.repo_root) if repo is None else repo):
            return ORPHANED
        seen = self.checkout_seen
        if not (os.path.lexists(self.claim.checkout) if seen is None else seen):
            return MISSING
        return READY


def load_entry(claim: Claim, parents_checked: bool = False,
               checkout_seen: bool | None = None, with_recovery: bool = True,
               repos_seen: dict[str, bool] | None = None) -> Entry | None:
    """The claim's entry, or None when it has neither a record nor a recovery record.

    A symlink planted anywhere from the root to the claim folder makes it `broken`:
    its files are not ours, and nothing is ever deleted on their strength.
    `with_recovery=False` skips the rare recovery.json beside a record (listing needs
    only the record).
    """
    planted = None if parents_checked else _planted_link(claim)
    if planted:
        return Entry(claim, None, None, f"{planted} is not a real directory; not touching it",
                     False)
    # Opening each file and failing is cheaper than listing the folder first.
    record = recovery = None
    problem = None
    try:
        record = read_record(claim.record_path, claim.name)
    except (FileNotFoundError, NotADirectoryError):
        pass
    except (CorruptRecord, OSError) as exc:
        problem = f"record.json is unreadable: {exc}"
    try:
        if record is None or (with_recovery and os.path.lexists(claim.recovery_path)):
            recovery = read_recovery(claim.recovery_path, claim.name)
    except (FileNotFoundError, NotADirectoryError):
        pass
    except (CorruptRecord, OSError) as exc:
        if record is None:
            problem = problem or f"recovery.json is unreadable: {exc}"
    if record is None and recovery is None and problem is None:
        return None
    has_holders = os.access(claim.holders_dir, os.F_OK, follow_symlinks=False)
    repo_seen = None
    if repos_seen is not None and record is not None:
        repo_seen = repos_seen.get(record.repo_root)
        if repo_seen is None:  # one stat per repository, not per record
            repo_seen = repos_seen[record.repo_root] = os.path.isdir(record.repo_root)
    return Entry(claim, record, recovery, problem, has_holders, checkout_seen, repo_seen)


def _planted_link(claim: Claim) -> str | None:
    """The first folder from `.claims` down to the claim's folder that is not a real one."""
    return first_planted(
        (claim.root.claims, f"{claim.root.claims}/{claim.bucket}", claim.folder)
    )


def entries(root: Root, buckets: list[str], with_recovery: bool = True) -> list[Entry]:
    """Every entry of these buckets (symlinked buckets and claim folders are skipped)."""
    found = []
    if os.path.islink(root.claims):
        return []
    repos_seen: dict[str, bool] = {}
    for bucket in buckets:
        try:  # one listing of the bucket's checkouts instead of a stat per entry
            checkouts = set(os.listdir(f"{root.path}/{bucket}"))
        except (FileNotFoundError, NotADirectoryError):
            checkouts = set()
        for claim in root.claims_in(bucket):  # only real folders: symlinks are skipped
            entry = load_entry(claim, True, claim.name in checkouts, with_recovery, repos_seen)
            if entry is not None:
                found.append(entry)
    return found


def not_found(name: str) -> str:
    """The one wording of "there is no such worktree", whichever command met it."""
    return f"no managed worktree named {name!r} in this repository; see vwt list"


def require_entry(claim: Claim) -> Entry:
    entry = load_entry(claim)
    if entry is None:
        raise NotFound(not_found(claim.name))
    return entry


def require_trusted(entry: Entry) -> Record:
    """The record of a ready/missing entry, or an error saying why we will not touch it."""
    if entry.problem is not None:
        raise ValidationFailed(
            f"{entry.name}: {entry.problem}; not touching it (fix or delete {entry.claim.folder})"
        )
    if entry.record is None:
        raise NotFound(f"{entry.name} was removed with a snapshot; run: vwt restore {entry.name}")
    return entry.record


def require_ready(claim: Claim, refusal: str) -> Entry:
    """The trusted entry of a ready worktree; else an error: `NAME is STATE; <refusal>`."""
    entry = require_entry(claim)
    require_trusted(entry)
    if entry.state != READY:
        raise VwtError(f"{claim.name} is {entry.state}; {refusal}")
    return entry


class Checkout(NamedTuple):
    """A validated checkout: its admin folder inside the common git dir, and its HEAD."""

    path: str
    admin_dir: str
    common_dir: str
    head_ref: str | None  # refs/heads/<branch>, None when detached

    @property
    def branch(self) -> str | None:
        if self.head_ref and self.head_ref.startswith("refs/heads/"):
            return self.head_ref[len("refs/heads/"):]
        return None

    @property
    def git(self) -> g.Git:
        from ..core import git as g
        return g.Git(self.path)


def _read_small(path: str) -> str:
    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
        return handle.read(65536).strip()


def validate_checkout(claim: Claim, common_dir: str | None = None) -> Checkout:
    """Prove the checkout is a linked worktree of the claim's repository, without git.

    No symlink from the root down, `.git` a regular file naming an admin folder
    of a common git dir that maps to this bucket. Raises ValidationFailed.
    """
    assert_real_directories(claim)
    dotgit = os.path.join(claim.checkout, ".git")
    try:
        mode = os.lstat(dotgit).st_mode
    except FileNotFoundError:
        raise ValidationFailed(f"{claim.checkout} has no .git file; it is not a worktree") from None
    if not stat.S_ISREG(mode):
        raise ValidationFailed(f"{dotgit} is not a regular file; refusing to treat it as ours")
    text = _read_small(dotgit)
    if not text.startswith("gitdir: "):
        raise ValidationFailed(f"{dotgit} does not name a git dir")
    admin = os.path.realpath(os.path.join(claim.checkout, text[len("gitdir: "):]))
    try:
        commondir = _read_small(os.path.join(admin, "commondir"))
        common = os.path.realpath(os.path.join(admin, commondir))
        head = _read_small(os.path.join(admin, "HEAD"))
    except OSError:
        raise MissingAdmin(f"{claim.checkout} points at a missing git admin folder ({admin}); "
                           "its repository was moved or deleted (see vwt doctor)") from None
    if os.path.dirname(admin) != os.path.join(common, "worktrees"):
        raise ValidationFailed(f"{claim.checkout} is not a linked worktree")
    if not bucket_matches(claim.bucket, common) or (common_dir and common != common_dir):
        raise ValidationFailed(f"{claim.checkout} belongs to another repository ({common})")
    head_ref = head[len("ref: "):] if head.startswith("ref: ") else None
    return Checkout(claim.checkout, admin, common, head_ref)



def hold(repo: Repo, name: str, holder_id: str | None = None) -> Holder:
    """Hold NAME, a ready worktree of `repo`, for a live session (`vwt run`, `vwt shell`, an
    agent's session). Taken under the prune lock, so retention cannot slip in between the
    lookup and the hold."""
    from ..core.locks import acquire_holder, new_holder_id, prune_lock

    claim = repo.claim(name)
    with prune_lock(repo.root):
        require_ready(claim, "it cannot be held")
        validate_checkout(claim, repo.info.common_dir)
        holder = acquire_holder(claim, holder_id or new_holder_id())
    try:  # `rm` does not take the prune lock: make sure it did not win meanwhile
        validate_checkout(claim, repo.info.common_dir)
        require_trusted(require_entry(claim))
    except BaseException:
        holder.release()
        raise
    return holder

class MissingAdmin(ValidationFailed):
    """The checkout's `.git` file names a git admin folder that is gone (the repository was
    moved or deleted)."""


def validate_for_reuse(claim: Claim, record: Record, common_dir: str) -> Checkout:
    checkout = validate_checkout(claim, common_dir)
    if checkout.branch != record.branch and rebase_in_progress(checkout):
        raise ValidationFailed(
            f"a sync of {claim.name} is stopped at a conflict in {claim.checkout}; finish it "
            f"(vwt sync {claim.name} --continue) or undo it (vwt sync {claim.name} --abort)"
        )
    if checkout.branch != record.branch:
        raise ValidationFailed(
            f"{claim.checkout} is on {checkout.branch or 'a detached HEAD'}, "
            f"not on its recorded branch {record.branch}; switch back or remove it"
        )
    return checkout


def repo_git_for(claim: Claim, record: Record | Recovery | None,
                 checkout: Checkout | None) -> g.Git:
    """A git runner for the claim's repository (the one its record or recovery record
    names), proven to map to the claim's bucket."""
    from ..core import git as g
    if checkout is not None:
        return g.Git(checkout.common_dir)
    if record is None or not os.path.isdir(record.repo_root):
        raise ValidationFailed(f"{claim.name}: its repository is gone")
    info = g.discover(record.repo_root)
    if not bucket_matches(claim.bucket, info.common_dir):
        raise ValidationFailed(f"{claim.name}: its record points at another repository")
    return g.Git(info.common_dir)


class Inspection(NamedTuple):
    """The cleanup inspection: what removing the worktree would lose."""

    changes: int
    untracked: int
    ahead: int
    head: str | None
    branch: str | None
    nested_repos: tuple[str, ...] = ()
    dirty_submodules: tuple[str, ...] = ()
    vs_target: tuple[int, int] | None = None  # (behind, own) against a target ref, if asked
    rebasing: bool = False  # a rebase is stopped in the checkout (`vwt sync --stop-on-conflict`)

    @property
    def clean(self) -> bool:
        return self.changes == 0 and self.ahead == 0 and not self.rebasing

    def describe_loss(self) -> str:
        parts = ["a rebase stopped at a conflict"] if self.rebasing else []
        if self.changes - self.untracked:
            parts.append(f"{self.changes - self.untracked} uncommitted change(s)")
        if self.untracked:
            parts.append(f"{self.untracked} untracked file(s)")
        if self.ahead:
            parts.append(f"{self.ahead} new commit(s)")
        return ", ".join(parts) or "nothing"


def filter_drivers(checkout: Checkout, cache: dict[str, tuple[str, ...]] | None = None
                   ) -> tuple[str, ...]:
    """The repository-defined filter drivers to neutralise in this checkout.

    One git call per repository when `cache` is shared, unless worktrees may
    carry config of their own; then each checkout is asked.
    """
    from ..core import git as g
    if cache is not None and checkout.common_dir in cache:
        drivers = cache[checkout.common_dir]
    else:
        drivers, per_worktree = g.repo_filter_drivers(checkout.git)
        if cache is not None and not per_worktree:
            cache[checkout.common_dir] = drivers
    return tuple(sorted({*drivers, *_submodule_filter_drivers(checkout)}))


def _submodule_filter_drivers(checkout: Checkout) -> set[str]:
    """Filter drivers defined in the configs of submodules, which `git status` visits."""
    from ..core import git as g
    found: set[str] = set()
    for modules in (f"{checkout.common_dir}/modules", f"{checkout.admin_dir}/modules"):
        if not os.path.isdir(modules):
            continue
        for folder, subfolders, files in os.walk(modules):
            subfolders[:] = [d for d in subfolders if d != "objects"]
            if "config" in files and "HEAD" in files:
                found.update(g.config_file_filter_drivers(checkout.git, f"{folder}/config"))
    return found


def housekeeping_git(checkout: Checkout, cache: dict[str, tuple[str, ...]] | None = None
                     ) -> g.Git:
    """A git runner for the checkout that never runs the repository's filter commands."""
    from ..core import git as g
    return g.Git(checkout.path, neutralised_filters=filter_drivers(checkout, cache))


def inspect_checkout(checkout: Checkout, record: Record,
                     cache: dict[str, tuple[str, ...]] | None = None,
                     target_ref: str | None = None, count_ahead: bool = True) -> Inspection:
    """`target_ref`: also count (behind, own) against that local branch, in the same
    `git status` (a listing's integration check then needs no `rev-list` of its own).
    `count_ahead=False`: leave `ahead` 0 for the caller, who counts many at once."""
    from ..core import git as g
    git = housekeeping_git(checkout, cache)
    st = g.status(git, (record.branch, target_ref) if target_ref else None)
    ahead = 0
    if count_ahead and record.base_commit and st.head:
        ahead = g.count_commits(git, record.base_commit, st.head)
    return Inspection(
        st.changes, st.untracked, ahead, st.head, st.branch, st.nested_repos,
        st.dirty_submodules, st.ahead_behind, rebase_in_progress(checkout),
    )


REBASE_STATE_DIRS = ("rebase-merge", "rebase-apply")


def rebase_in_progress(checkout: Checkout) -> bool:
    """A rebase is stopped in the checkout (git keeps its state in the admin folder)."""
    return any(os.path.isdir(os.path.join(checkout.admin_dir, state))
               for state in REBASE_STATE_DIRS)


def inspect_missing(repo_git: g.Git, record: Record) -> Inspection:
    """A record whose checkout is gone: only commits on its branch can still be lost."""
    from ..core import git as g
    tip = g.branch_tip(repo_git, record.branch)
    ahead = g.count_commits(repo_git, record.base_commit, tip) if tip and record.base_commit else 0
    return Inspection(0, 0, ahead, tip, record.branch)




def ensure_not_inside(path: str) -> None:
    """Leave `path` if the process stands inside it (Windows cannot delete it otherwise)."""
    try:
        cwd = os.path.realpath(os.getcwd())
    except FileNotFoundError:
        return
    if cwd == path or cwd.startswith(path + os.sep):
        os.chdir(os.path.dirname(path))

