"""Creating worktrees: `new`, with reuse and auto-naming (`restore.py` recreates a removed
one from its snapshot, through the same reservation)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from ..core import git as g
from ..core.errors import DiskFull, GitFailed, ValidationFailed, VwtError, says_disk_full
from ..core.faults import checkpoint
from ..core.layout import Claim, Root, ensure_dir, is_empty_dir, rmdir_if_empty, unlink_if_exists
from ..core.light import NamedTuple
from ..core.locks import (
    REMOVING,
    STARTING,
    Holder,
    acquire_holder,
    being_removed,
    prune_lock,
    wait_for_holder_release,
)
from ..core.names import (
    AUTO_BRANCH_PREFIX,
    candidate_names,
    path_segment_problem,
    random_slug,
    slugify,
    validate_branch,
    validate_name,
)
from ..core.records import CorruptRecord, Record, read_record, utc_now, write_record
from ..core.ref_locks import release_dead_ref_locks
from . import leasing, setup_state
from .unfinished import (
    is_clean,
    left_by_dead_creator,
    tear_down,
    unfinished,
)
from .worktrees import (
    MISSING,
    RESERVED,
    Repo,
    load_entry,
    require_trusted,
    validate_checkout,
    validate_for_reuse,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .carry import Carried
    from .hooks import HookResult
    from .pool_take import Taken

Warn = Callable[[str], None]
Fill = Callable[[str], None]  # puts carried work into a fresh checkout (carry.Plan.fill)


class Output(NamedTuple):
    """Where a creation talks: warnings, and whether git's own progress is shown."""

    warn: Warn
    progress: bool = False
STARTING_WAIT = 120.0
CHECKOUT_WORKERS = 0  # git's parallel checkout, one worker per core (<1 means all cores)


class Created(NamedTuple):
    """The result of `new` or `restore`."""

    name: str
    branch: str
    path: str
    bucket: str
    repo_root: str
    base_commit: str
    branch_created: bool
    created: bool
    hooks: tuple[HookResult, ...] = ()  # the post_create hooks that ran (or were skipped)
    sparse: tuple[str, ...] = ()  # the folders of a sparse checkout; empty: a full one
    carried: Carried | None = None  # what `--carry`/`--move` brought along
    taken: Taken | None = None  # the pool entry it was made from (§15)
    # some post_create hook is still to succeed (failed, cut short, or running in the
    # background); `create` runs again, on reuse, those that did not (`setup_state`)
    setup_pending: bool = False
    ports: tuple[int, ...] = ()  # its lease's (SPEC §17)

    @property
    def pooled(self) -> bool:
        return self.taken is not None

    def to_json(self) -> dict[str, object]:
        return dict(
            name=self.name, branch=self.branch, path=self.path, bucket=self.bucket,
            repo_root=self.repo_root, base_commit=self.base_commit,
            branch_created=self.branch_created, created=self.created,
            hooks=[h.to_json() for h in self.hooks], sparse=list(self.sparse),
            pooled=self.pooled, ports=list(self.ports),
            **({"carried": self.carried.to_json()} if self.carried else {}),
        )


def created_of(repo: Repo, record: Record, created: bool) -> Created:
    assert record.base_commit is not None
    claim = repo.claim(record.name)
    return Created(
        record.name, record.branch, claim.checkout, repo.bucket,
        record.repo_root, record.base_commit, record.branch_created, created,
        sparse=record.sparse, setup_pending=bool(setup_state.pending(record)),
        ports=leasing.ports_of_claim(claim, record).ports,
    )


def _reused(repo: Repo, created: Created, warn: Warn) -> Created:
    """A reused worktree keeps its lease; one without (Vibe made it) is given one."""
    claim = repo.claim(created.name)
    record = leasing.ensure_leased(claim, read_record(claim.record_path, claim.name), warn)
    return created._replace(ports=leasing.ports_of_claim(claim, record).ports)


def reserve(claim: Claim, record: Record) -> Holder:
    """Take the name: `mkdir` of the checkout is the atomic step (under the prune lock).

    git cannot tell a path that is taken from a bad ref, so the path is ours
    before `git worktree add` ever runs.
    """
    ensure_dir(os.path.dirname(claim.checkout), claim.root.path)
    os.mkdir(claim.checkout)  # FileExistsError: someone else has the name
    starting = None
    try:
        ensure_dir(claim.folder, claim.root.path)
        starting = acquire_holder(claim, STARTING)
        write_record(claim.record_path, record)
    except BaseException:  # such as a full disk: the name is left free, as it was
        if starting is not None:
            starting.release()  # its file, then the empty claim folder
        rmdir_if_empty(claim.folder)
        rmdir_if_empty(claim.checkout)
        raise
    return starting


def unreserve(claim: Claim, starting: Holder) -> None:
    """Undo a reservation whose creation failed: only empty folders are removed, and its
    port lease is given back."""
    if rmdir_if_empty(claim.checkout) or not os.path.lexists(claim.checkout):
        unlink_if_exists(claim.record_path)
        leasing.release(claim)
    starting.release()
    rmdir_if_empty(claim.folder)
    rmdir_if_empty(os.path.dirname(claim.folder))
    rmdir_if_empty(os.path.dirname(claim.checkout))


def _finish(
    repo: Repo, claim: Claim, record: Record, starting: Holder, start: Start, out: Output,
    fill: Fill | None = None, pool: bool = False,
) -> Created:
    """`pool`: a ready pool entry may be taken instead of checking out anew."""
    with Reserved(claim, starting):
        checkpoint("new.reserved")
        record = _lease(repo, claim, record, start)
        checkpoint("new.leased")
        taken = None
        try:
            if pool and fill is None and start.create_branch:
                taken = _take_from_pool(repo, claim, record, start, out)
            if taken is None:
                _add_worktree(repo, claim, record.branch, start, out, record.sparse)
                checkpoint("new.added")
                if fill is not None:
                    fill(claim.checkout)
                copy_included(repo, claim, out)
            final = with_setup(repo, claim, record.with_base(start.commit))
            write_record(claim.record_path, final)
        except BaseException:
            _roll_back(repo, claim, record.branch, start)
            raise
        checkpoint("new.recorded")
    return created_of(repo, final, True)._replace(taken=taken)


def _lease(repo: Repo, claim: Claim, record: Record, start: Start) -> Record:
    """Its block of ports, of the user's `[ports] count`, else the start point's."""
    from .settings import project_at

    project, where = project_at(repo.git, repo.info.toplevel, start.commit)
    count = leasing.configured_count(repo.root.home, project, where)
    return leasing.lease_reserved(repo.root, claim, record, count)


def with_setup(repo: Repo, claim: Claim, final: Record) -> Record:
    """The ready record keeps the reservation's "setup pending" only when post_create hooks
    may run for it: then a kill before they all succeeded never reads as a finished setup."""
    if setup_state.pending(final) and not setup_state.hooks_due(
            repo.root.home, claim.checkout, final.sparse, repo.info.repo_root):
        return setup_state.unmarked(final)
    return final


def _take_from_pool(repo: Repo, claim: Claim, record: Record, start: Start, out: Output
                    ) -> Taken | None:
    """A ready entry moved into the reserved folder, made to work at its path, switched to
    the new branch; None when the pool has none that fits (one stat when there is no
    pool)."""
    if not os.path.isdir(f"{repo.root.path}/.pool/{repo.bucket}"):
        return None
    from . import pool_take

    taken = pool_take.take(repo.root, repo.bucket, record.sparse, start.commit, claim.checkout,
                      out.warn)
    if taken is None:
        return None
    checkpoint("new.pool_taken")
    try:
        pool_take.relocate_moved(taken, claim.checkout, out.warn)
        taken = pool_take.check_out(taken, claim.checkout, record.branch, start.commit,
                               start.create_branch)
        taken = pool_take.copy_included_again(taken, repo.info.repo_root, claim.checkout,
                                              repo.root.home, out.warn)
    except BaseException:
        pool_take.discard_placed(repo.root, repo.git, claim.checkout)
        raise
    return taken


def _roll_back(repo: Repo, claim: Claim, branch: str, start: Start) -> None:
    """Undo a creation that failed (a full disk): the fresh checkout holds nothing anyone
    wrote (carried work is still in its source), so it goes with its admin entry, and so
    does the branch when this creation made it (git leaves it behind when `worktree add`
    fails), so that the same command run again starts from scratch."""
    if has_git_file(claim):
        g.worktree_remove_entry(repo.git, claim.checkout)
    if start.create_branch and g.branch_checked_out_elsewhere(repo.git, branch) is None:
        g.delete_branch(repo.git, branch, expected=start.commit)


class Reserved:
    """The steps after a reservation: when they fail before the checkout has its `.git`
    file, the reservation is undone (only empty folders go); the `.starting` hold is let
    go either way."""

    def __init__(self, claim: Claim, starting: Holder) -> None:
        self.claim = claim
        self.starting = starting

    def __enter__(self) -> None:
        return None

    def __exit__(self, failed: object, *_details: object) -> None:
        if failed is not None and not has_git_file(self.claim):
            unreserve(self.claim, self.starting)
        else:
            self.starting.release()


def _add_worktree(repo: Repo, claim: Claim, branch: str, start: Start, out: Output,
                  sparse: tuple[str, ...] = ()) -> None:
    """`git worktree add`, retried when it tripped over another add in progress
    (`git.met_a_worktree_being_added`); with `sparse`, without a checkout, which the
    sparse set then makes."""
    attempts = 5
    for attempt in range(attempts):
        try:
            g.worktree_add(
                repo.git, claim.checkout, branch=branch, start=start.commit,
                create_branch=start.create_branch, workers=CHECKOUT_WORKERS,
                progress=out.progress, no_checkout=bool(sparse),
            )
            if sparse:
                from .sparse import populate

                populate(claim.checkout, sparse)
            return
        except GitFailed as exc:
            if not start.create_branch:
                _refuse_branch_checked_out(repo, branch)
            if (attempt == attempts - 1 or not g.met_a_worktree_being_added(exc.message)
                    or has_git_file(claim)):
                raise
        if start.create_branch and g.branch_tip(repo.git, branch) == start.commit:
            start = Start(start.commit, False)  # the failed attempt had made the branch
        if not os.path.isdir(claim.checkout):
            os.mkdir(claim.checkout)
        time.sleep((0.03 + os.urandom(1)[0] / 2550) * (attempt + 1))  # jittered back-off


def _refuse_branch_checked_out(repo: Repo, branch: str) -> None:
    """Why an existing branch could not be checked out, in our words: a branch lives in one
    checkout at a time (SPEC §3)."""
    where = g.branch_checked_out_elsewhere(repo.git, branch)
    if where is None:
        return
    which = " (the main checkout)" if where == repo.info.repo_root else ""
    raise VwtError(f"branch {branch} is already checked out at {where}{which}; a worktree "
                   f"needs a branch of its own: give another NAME (or -b NEW_BRANCH), and "
                   f"--from {branch} to start from it")


def has_git_file(claim: Claim) -> bool:
    return os.path.lexists(os.path.join(claim.checkout, ".git"))


def copy_included(repo: Repo, claim: Claim, out: Output) -> None:
    """`.worktreeinclude` files (`.env` and the like) from the main checkout; never fails."""
    from .include import copy_included_files  # only this step needs it

    copy_included_files(repo.info.repo_root, claim.checkout, repo.root.home, out.warn)


class Start(NamedTuple):
    commit: str
    create_branch: bool


def resolve_start(repo: Repo, probe: g.Probe, branch: str, from_ref: str | None, fetch: bool,
                  out: Output) -> Start:
    """Existing branch: check it out. Else `--from`, else the remote default, else HEAD."""
    tip = probe.refs.get(f"refs/heads/{branch}")
    if tip is not None:
        if from_ref:
            out.warn(f"branch {branch} exists; checking it out and ignoring --from {from_ref}")
        return Start(tip, False)
    if probe.from_commit:
        return Start(probe.from_commit, True)
    commit = remote_default_commit(repo.git, probe, fetch, out) or probe.head
    if commit is None:
        raise GitFailed("the repository has no commits yet; commit something first")
    return Start(commit, True)


def remote_default_commit(git: g.Git, probe: g.Probe, fetch: bool, out: Output) -> str | None:
    """The tip of `origin`'s (or the only remote's) default branch, fetched first if asked."""
    if "origin" in probe.remotes:
        remote = "origin"
    elif len(probe.remotes) == 1:
        remote = probe.remotes[0]
    else:
        return None
    known = probe.remote_heads.get(remote)
    branch = known[0] if known else None
    if branch is None and fetch:
        branch = g.ask_remote_head_branch(git, remote, g.FETCH_TIMEOUT)
    if branch is None:
        out.warn(f"cannot tell the default branch of {remote}; starting from HEAD (to fix: "
                 f"git remote set-head {remote} -a)")
        return None
    if not fetch and known:
        _warn_unpushed(git, probe, remote, branch, known[1], out)
        return known[1]
    if fetch:
        problem = g.fetch_branch(g.Git(git.cwd, housekeeping=False), remote, branch,
                                 g.FETCH_TIMEOUT, progress=out.progress)
        if problem and says_disk_full(problem):  # nothing more will fit either
            raise DiskFull(f"fetching {remote}/{branch}")
        if problem:
            out.warn(f"{problem}; using the last known {remote}/{branch}")
    commit = g.commit_of(git, f"refs/remotes/{remote}/{branch}")
    if commit is None:
        out.warn(f"{remote}/{branch} is not known locally; starting from HEAD")
    else:
        _warn_unpushed(git, probe, remote, branch, commit, out)
    return commit


def _warn_unpushed(git: g.Git, probe: g.Probe, remote: str, branch: str, commit: str,
                   out: Output) -> None:
    """The new worktree starts from `<remote>/<branch>`; say so when the local `<branch>`
    has commits the remote lacks (work landed by `vwt merge` and not pushed yet, a committed
    `.vibe/worktree.toml`), which the worktree then does not have."""
    local = probe.refs.get(f"refs/heads/{branch}") or g.branch_tip(git, branch)
    if local is None or local == commit:
        return
    missing = g.count_commits(git, commit, local)
    if missing:
        out.warn(f"{branch} has {missing} commit(s) that {remote}/{branch} lacks (not pushed "
                 f"yet?); the worktree starts from {remote}/{branch} without them (pass "
                 f"--from {branch} to include them)")


def new_record(repo: Repo, name: str, branch: str, branch_created: bool,
                sparse: tuple[str, ...] = (), setup: bool = False) -> Record:
    """`setup`: its post_create hooks will run; until they all succeeded, its setup is
    pending (see `setup_state`)."""
    record = Record(
        name=name, branch=branch, repo_root=repo.info.repo_root, base_commit=None,
        branch_created=branch_created, claimed_at=utc_now(),
        extra={"sparse": list(sparse)} if sparse else {},
    )
    return setup_state.marked(record) if setup else record


def create_named(
    root: Root, cwd: str, name: str, branch: str | None, from_ref: str | None, fetch: bool,
    out: Output, sparse: tuple[str, ...] | None = None, fill: Fill | None = None,
    pool: bool = False, setup: bool = False,
) -> Created:
    """`vwt new NAME`: create it, or reuse it after validating the checkout. `fill`: run
    on a created checkout before it is recorded (carried changes). `pool`: a new branch may
    come from a ready pool entry. `setup`: its post_create hooks will run (the record says
    so until they all succeeded)."""
    validate_name(name, as_branch=branch is None)
    branch_given = branch is not None
    branch = validate_branch(branch or name)
    probe = g.probe(cwd, [f"refs/heads/{branch}"], from_ref)
    repo = Repo(root, probe.info)
    claim = repo.claim(name)
    # Known before the reservation is written, so that even a crash right after
    # `git worktree add` never leaves a pre-existing branch recorded as ours.
    branch_created = f"refs/heads/{branch}" not in probe.refs
    for _attempt in range(3):
        outcome = _claim_or_reuse(repo, claim, branch, branch_given, branch_created, setup)
        if isinstance(outcome, Created):
            return _reused(repo, outcome, out.warn)
        if isinstance(outcome, Reservation):
            start, dirs = _start_or_unreserve(repo, probe, claim, outcome.starting, branch,
                                              from_ref, fetch, out, sparse)
            record = new_record(repo, name, branch,
                                 start.create_branch or outcome.branch_ours, dirs, setup)
            if outcome.taken_over and record.branch_created:  # its `worktree add -b` killed?
                # the lock holds the start (git branch making it, or the reset checking it
                # out setting HEAD to it): start.commit either way
                release_dead_ref_locks(repo.info.common_dir, None, branch, (start.commit,))
            return _finish(repo, claim, record, outcome.starting, start, out, fill, pool)
        # another process is creating or removing it right now: wait, then look again
        if not wait_for_holder_release(claim, outcome, STARTING_WAIT):
            doing = "created" if outcome == STARTING else "removed"
            raise VwtError(f"{name} is still being {doing} by another process; try again later")
    raise VwtError(f"{name} keeps changing under us; try again")


def _start_or_unreserve(
    repo: Repo, probe: g.Probe, claim: Claim, starting: Holder, branch: str,
    from_ref: str | None, fetch: bool, out: Output, sparse: tuple[str, ...] | None,
) -> tuple[Start, tuple[str, ...]]:
    """The start point and the sparse folders (`--sparse`, else the start point's
    `.vibe/worktree.toml`); the reservation is undone when either fails."""
    try:
        start = resolve_start(repo, probe, branch, from_ref, fetch, out)
        if sparse is None:
            from .sparse import configured

            sparse = configured(repo.git, repo.info.toplevel, start.commit)
        return start, sparse
    except BaseException:
        unreserve(claim, starting)
        raise


class Reservation(NamedTuple):
    starting: Holder  # the `.starting` hold of the creation
    branch_ours: bool  # a dead creator's `git worktree add -b` made the branch
    taken_over: bool = False  # a dead creator's reservation: its gits died with it


def _claim_or_reuse(
    repo: Repo, claim: Claim, branch: str, branch_given: bool, branch_created: bool,
    setup: bool = False,
) -> Created | Reservation | str:
    """Under the prune lock: reuse (Created), reserve (Reservation), or the holder to wait
    for (`.starting`: another process creates it; `.removing`: prune or rm removes it,
    without holding the lock meanwhile, and the name is free once that is done).

    A managed NAME is reused on its recorded branch; only an explicit `--branch`
    that names another branch is an error.
    """
    with prune_lock(repo.root):
        entry = load_entry(claim)
        if entry is not None and entry.has_holders and being_removed(claim):
            return REMOVING
        if entry is None:
            if os.path.lexists(claim.checkout) and not is_empty_dir(claim.checkout):
                raise ValidationFailed(
                    f"{claim.checkout} exists but is not managed; move it away or pick another name"
                )
            if os.path.isdir(claim.checkout) and not os.path.islink(claim.checkout):
                os.rmdir(claim.checkout)  # an empty leftover of a crashed creation
            record = new_record(repo, claim.name, branch, branch_created, setup=setup)
            return Reservation(reserve(claim, record), False)
        record = require_trusted(entry)
        if entry.state == RESERVED:
            return _resume_reservation(repo, claim, record)
        if entry.state == MISSING:
            raise ValidationFailed(
                f"{claim.checkout} is missing; run vwt rm {claim.name} (or vwt prune) first"
            )
        if branch_given and record.branch != branch:
            raise ValidationFailed(
                f"{claim.name} exists on branch {record.branch}, not {branch}; pick another name"
            )
        problem = unfinished(validate_for_reuse(claim, record, repo.info.common_dir))
        if problem:
            raise ValidationFailed(f"{claim.checkout} is not whole ({problem}); "
                                   "run vwt prune to repair it")
        return created_of(repo, record, False)


def _resume_reservation(repo: Repo, claim: Claim, record: Record
                        ) -> Created | Reservation | str:
    """A reservation without a base commit: in progress, or left by a crash.

    The dead creator's checkout was never handed out, so it holds only copies: what
    git checked out, carried changes still in their source, included files. It is made
    again from scratch, unless git finished it and it has changes (carried ones): those
    are adopted as they are, so nothing is ever lost.
    """
    try:
        starting = acquire_holder(claim, STARTING)
    except VwtError:
        return STARTING  # a live creator holds it
    if _reservation_changed(claim, record):  # its creator finished after we read it
        starting.release()
        return STARTING  # look again: reuse what it made
    branch_ours = False
    try:
        if not is_empty_dir(claim.checkout):
            checkout, finished = left_by_dead_creator(claim, record, repo.info.common_dir)
            if finished and not is_clean(checkout):
                from .include import copy_included_files  # the step a kill may have cut short

                copy_included_files(repo.info.repo_root, claim.checkout, repo.root.home,
                                    repair=True)
                final = with_setup(repo, claim, record.with_base(g.head_commit(checkout.git)))
                write_record(claim.record_path, final)
                starting.release()
                return created_of(repo, final, False)  # its hooks never ran: reuse runs them
            tear_down(claim, checkout)
            branch_ours = record.branch_created  # git made it: it did not exist when reserved
        elif record.branch_created:  # a killed `git worktree add -b` may have made it
            branch_ours = g.branch_tip(repo.git, record.branch) is not None
        if not os.path.isdir(claim.checkout):
            os.mkdir(claim.checkout)
    except BaseException:
        starting.release()
        raise
    return Reservation(starting, branch_ours, taken_over=True)


def _reservation_changed(claim: Claim, seen: Record) -> bool:
    """The record on disk is no longer the reservation `seen` (finished or made anew)."""
    try:
        return read_record(claim.record_path, claim.name) != seen
    except (OSError, CorruptRecord):
        return True


def create_auto(
    root: Root, cwd: str, prompt: str | None, from_ref: str | None, fetch: bool, out: Output,
    sparse: tuple[str, ...] | None = None, fill: Fill | None = None, pool: bool = False,
    setup: bool = False,
) -> Created:
    """`vwt new -p PROMPT`: a fresh worktree named from the prompt, never a reuse."""
    slug = slugify(prompt or "")
    random_name = not slug
    for _attempt in range(20):
        if random_name:
            slug = random_slug()
        prefix = f"refs/heads/{AUTO_BRANCH_PREFIX}{slug}"
        probe = g.probe(cwd, [prefix, f"{prefix}-*"], from_ref)
        repo = Repo(root, probe.info)
        taken = {ref.removeprefix("refs/heads/") for ref in probe.refs}
        reserved = _reserve_first_free(repo, slug, taken, setup)
        if reserved is not None:
            claim, starting, branch = reserved
            start, dirs = _start_or_unreserve(repo, probe, claim, starting, branch, from_ref,
                                              fetch, out, sparse)
            record = new_record(repo, claim.name, branch, start.create_branch, dirs, setup)
            return _finish(repo, claim, record, starting, start, out, fill, pool)
        if not random_name:
            raise VwtError(f"all names from {slug} to {slug}-100 are taken; pass a NAME")
    raise VwtError("could not find a free random name; pass a NAME")


def _reserve_first_free(
    repo: Repo, slug: str, taken_branches: set[str], setup: bool
) -> tuple[Claim, Holder, str] | None:
    with prune_lock(repo.root):
        for name in candidate_names(slug):
            branch = f"{AUTO_BRANCH_PREFIX}{name}"
            claim = repo.claim(name)
            if path_segment_problem(name) or branch in taken_branches:
                continue
            if os.path.lexists(claim.folder) or os.path.lexists(claim.checkout):
                continue
            record = new_record(repo, name, branch, True, setup=setup)
            return claim, reserve(claim, record), branch
    return None


__all__ = ["Created", "create_auto", "create_named", "validate_checkout"]
