"""The Python API: every operation of the CLI, returning typed results.

    from vibe_worktree import Worktrees

    wt = Worktrees(cwd="/path/to/repo")          # home: $VIBE_HOME or ~/.vibe
    created = wt.create(prompt="fix the login bug")
    with wt.hold(created.name):                  # retention keeps away meanwhile
        ...                                      # work in created.path
    wt.remove(created.name, confirm_dirty=True)  # snapshot first if anything would be lost
"""

from __future__ import annotations

import builtins
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from .core.errors import Interrupted, NotFound, ValidationFailed, VwtError
from .core.git import Git, left_right_counts, map_parallel
from .core.layout import Claim, Root, resolve_home
from .core.locks import (
    Holder,
    acquire_holder,
    live_holders,
    new_holder_id,
    prune_lock,
    registry_read_lock,
    running_hooks,
)
from .lifecycle import setup_state
from .lifecycle.worktrees import (
    BROKEN,
    MISSING,
    ORPHANED,
    READY,
    SNAPSHOT,
    Checkout,
    Entry,
    Inspection,
    MissingAdmin,
    Repo,
    entries,
    filter_drivers,
    housekeeping_git,
    inspect_checkout,
    open_repo,
    require_entry,
    require_trusted,
    validate_checkout,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .core.host import Host
    from .core.integration import Integration, Tips
    from .core.records import Record
    from .health.doctor import Report as DoctorReport
    from .health.orphans import Repaired
    from .landing.collisions import ConflictsResult
    from .landing.merge import MergeResult
    from .landing.sync import SyncResult
    from .lifecycle import create as _create
    from .lifecycle import remove as _remove
    from .lifecycle.adopt import AdoptResult
    from .lifecycle.create import Created
    from .lifecycle.foreign import Foreign
    from .lifecycle.hooks import Ask, HookResult
    from .lifecycle.hooks import Listed as ListedHook
    from .lifecycle.pool import PoolStatus
    from .lifecycle.prune import PruneResult
    from .lifecycle.remove import Confirm, Removal, Snapshot
    from .sessions.activity import Activity

Warn = Callable[[str], None]
HOLDER_ENV = "VWT_HOLDER_ID"


def warn_to_stderr(message: str) -> None:
    print(f"vwt: warning: {message}", file=sys.stderr)


class Listed(NamedTuple):
    """One row of `list`; status fields are None when not computed or not applicable."""

    name: str
    branch: str | None
    path: str
    bucket: str
    repo_root: str | None
    base_commit: str | None
    branch_created: bool | None
    claimed_at: str | None
    state: str
    holders: int
    changes: int | None = None
    ahead: int | None = None
    problem: str | None = None
    hooks_running: tuple[str, ...] = ()  # background hooks still holding it
    target: str | None = None  # §8: the target branch, None when not computed
    behind: int | None = None
    integrated: str | None = None  # the integration reason, None when not integrated
    agent: str | None = None  # §14: the agent that made it ("claude-code"), its session
    session: str | None = None
    activity: Activity | None = None  # what that agent's session is doing, if it lives
    size: int | None = None  # §15: bytes of the checkout's own files (`list --size`)
    rebase: str | None = None  # §8: REBASE_STOPPED while a sync is stopped at a conflict
    sized: bool = False  # measured (`list --size`); `size` None then: there is no checkout
    setup: str | None = None  # §9: done, running or incomplete; None unless ready

    @property
    def held(self) -> bool:
        return self.holders > 0

    @property
    def clean(self) -> bool | None:
        if self.changes is None or self.ahead is None:
            return None
        return self.changes == 0 and self.ahead == 0

    @property
    def safe_to_remove(self) -> bool | None:
        return _safe_to_remove(self.changes, self.ahead, self.integrated, self.target,
                               self.rebase is not None)

    def to_json(self) -> dict[str, object]:
        return dict(
            name=self.name, branch=self.branch, path=self.path, bucket=self.bucket,
            repo_root=self.repo_root, base_commit=self.base_commit,
            branch_created=self.branch_created, claimed_at=self.claimed_at, state=self.state,
            held=self.held, holders=self.holders, changes=self.changes, ahead=self.ahead,
            clean=self.clean, hooks_running=list(self.hooks_running), target=self.target,
            behind=self.behind, integrated=self.integrated, safe_to_remove=self.safe_to_remove,
            rebase=self.rebase, agent=self.agent, session=self.session,
            activity=self.activity.to_json() if self.activity else None, setup=self.setup,
            **({"size": self.size} if self.sized else {}),
        )


def _safe_to_remove(changes: int | None, ahead: int | None, integrated: str | None,
                    target: str | None, rebasing: bool) -> bool | None:
    """§8: removing it would lose nothing (None when not computed); never while a rebase
    is stopped there: the work is half-way, and `rm` asks first."""
    if changes is None or ahead is None or target is None:
        return None
    return not rebasing and changes == 0 and (ahead == 0 or integrated is not None)


# `rebase` of list and status: a sync is stopped at a conflict in the checkout (SPEC §8);
# its HEAD is then part-way through the rebase, so it is never taken as landed.
REBASE_STOPPED = "stopped"


class WorktreeStatus(NamedTuple):
    """The cleanup inspection of one worktree (`vwt status`)."""

    name: str
    path: str
    branch: str
    branch_created: bool
    base_commit: str | None
    changes: int
    untracked: int
    ahead: int
    holders: int
    hooks_running: tuple[str, ...] = ()  # background hooks still holding it
    target: str | None = None  # §8 fields: None when not applicable (missing, no target)
    behind: int | None = None
    integrated: str | None = None
    not_in_target: int | None = None  # of HEAD's commits, those the target lacks (`T..HEAD`)
    rebasing: bool = False  # a sync is stopped at a conflict in the checkout
    agent: str | None = None
    session: str | None = None
    activity: Activity | None = None
    setup: str | None = None  # §9: done, running or incomplete; None when missing

    @property
    def clean(self) -> bool:
        return self.changes == 0 and self.ahead == 0

    @property
    def held(self) -> bool:
        return self.holders > 0

    @property
    def safe_to_remove(self) -> bool | None:
        return _safe_to_remove(self.changes, self.ahead, self.integrated, self.target,
                               self.rebasing)

    def to_json(self) -> dict[str, object]:
        return dict(
            name=self.name, path=self.path, branch=self.branch,
            branch_created=self.branch_created, base_commit=self.base_commit,
            changes=self.changes, untracked=self.untracked, ahead=self.ahead, clean=self.clean,
            held=self.held, holders=self.holders, hooks_running=list(self.hooks_running),
            target=self.target, behind=self.behind, integrated=self.integrated,
            safe_to_remove=self.safe_to_remove,
            rebase=REBASE_STOPPED if self.rebasing else None,
            agent=self.agent, session=self.session,
            activity=self.activity.to_json() if self.activity else None, setup=self.setup,
        )


def _listed(entry: Entry, holders: list[str]) -> Listed:
    record, recovery = entry.record, entry.recovery
    source = record or recovery
    return Listed(  # positionally: a listing builds a thousand of these
        entry.name,
        source.branch if source else None,
        entry.claim.checkout,
        entry.claim.bucket,
        source.repo_root if source else None,
        source.base_commit if source else None,
        record.branch_created if record else None,
        record.claimed_at if record else None,
        entry.state,
        len(holders),
        problem=entry.problem,
        hooks_running=running_hooks(holders) if holders else (),
        agent=_made_by(record, "agent"),
        session=_made_by(record, "session"),
        setup=setup_state.state(record, holders)
        if record is not None and entry.state == READY else None,
    )


def _made_by(record: Record | None, key: str) -> str | None:
    """§14: which agent and session made it (string keys the hook writes; else None)."""
    value = record.extra.get(key) if record is not None and record.extra else None
    return value if isinstance(value, str) else None


class _Status(NamedTuple):
    """A listed row with its status, and what the per-repository batches still need."""

    row: Listed
    head: str | None = None  # HEAD, when a batch below still needs it
    uncounted: bool = False  # `ahead` is still to count (`_count_ahead`)
    undecided: bool = False  # the expensive integration checks are still to run


def _with_status(row: Listed, entry: Entry, checkout: Checkout,
                 cache: dict[str, tuple[str, ...]], tips: Tips | None) -> _Status:
    """The row with status and the cheap integration checks. With a target, `ahead` is
    left to `_count_ahead` and the expensive checks to `_finish_integration`: each runs
    once per repository for all its worktrees."""
    record = entry.record
    assert record is not None
    local_target = tips is not None and tips.target.commit == tips.commits[0]
    try:
        inspection = inspect_checkout(checkout, record, cache,
                                      tips.target.ref if tips and local_target else None,
                                      count_ahead=tips is None)
        landed: Integration | int | None = None
        if tips is not None and inspection.head is not None:
            from .core.integration import cheap_check

            landed = cheap_check(housekeeping_git(checkout, cache), inspection.head, tips,
                                 inspection.vs_target)
    except VwtError as exc:
        return _Status(_replace(row, problem=exc.message))
    stopped = inspection.rebasing
    row = _replace(row, changes=inspection.changes, ahead=inspection.ahead,
                   rebase=REBASE_STOPPED if stopped else None)
    head = inspection.head
    uncounted = tips is not None and head is not None and record.base_commit is not None
    if landed is None or tips is None:
        return _Status(row, head, uncounted)
    if isinstance(landed, int):
        return _Status(_replace(row, target=tips.branch, behind=landed), head, uncounted,
                       not stopped)
    return _Status(_replace(row, target=landed.target, behind=landed.behind,
                            integrated=None if stopped else landed.integrated), head, uncounted)


def _count_ahead(rows: list[Listed], heads: dict[str, list[tuple[int, str]]],
                 tips: dict[str, Tips | None], cache: dict[str, tuple[str, ...]]) -> None:
    """`ahead` of the rows `_with_status` left uncounted: one walk per repository."""
    from .core.history import commits_since

    for common_dir, items in heads.items():
        repo_tips = tips[common_dir]
        assert repo_tips is not None
        git = Git(common_dir, neutralised_filters=cache.get(common_dir, ()))
        pairs = [(head, rows[i].base_commit or head) for i, head in items]
        try:
            counts = commits_since(git, pairs, repo_tips.commits[0])
        except VwtError as exc:
            for i, _head in items:
                rows[i] = _replace(rows[i], problem=exc.message)
            continue
        for (i, _head), count in zip(items, counts, strict=True):
            rows[i] = _replace(rows[i], ahead=count)


def _finish_integration(rows: list[Listed], undecided: dict[str, list[tuple[int, str]]],
                        tips: dict[str, Tips | None], cache: dict[str, tuple[str, ...]]) -> None:
    """The expensive integration checks, a few git processes per repository."""
    from .core.integration import finish_checks

    for common_dir, items in undecided.items():
        repo_tips = tips[common_dir]
        assert repo_tips is not None
        git = Git(common_dir, neutralised_filters=cache.get(common_dir, ()))
        pending = [(head, rows[i].behind or 0) for i, head in items]
        try:
            found = finish_checks(git, pending, repo_tips)
        except VwtError as exc:
            for i, _head in items:
                rows[i] = _replace(rows[i], problem=exc.message)
            continue
        for (i, _head), landed in zip(items, found, strict=True):
            rows[i] = _replace(rows[i], integrated=landed.integrated)


def _integration(checkout: Checkout, inspection: Inspection,
                 cache: dict[str, tuple[str, ...]] | None, tips: Tips | None
                 ) -> Integration | None:
    if tips is None or inspection.head is None:
        return None
    from .core.integration import check

    return check(housekeeping_git(checkout, cache), inspection.head, tips)


def _tips_by_repo(common_dirs: Iterable[str]) -> dict[str, Tips | None]:
    """The target tips of each repository, read once per listing."""
    from .core.integration import read_tips

    found: dict[str, Tips | None] = {}
    for common_dir in dict.fromkeys(common_dirs):
        try:
            found[common_dir] = read_tips(Git(common_dir))
        except VwtError:
            found[common_dir] = None
    return found


def _replace(row: Listed, **changes: object) -> Listed:
    return row._replace(**changes)  # type: ignore[arg-type]


class Worktrees:
    """All operations on the managed worktrees under one home."""

    def __init__(self, home: str | None = None, cwd: str | None = None,
                 warn: Warn = warn_to_stderr, progress: bool = False) -> None:
        """`progress`: let git show its own progress (fetch, checkout) on stderr."""
        self.root = Root.at(resolve_home(home))
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self.warn = warn
        self.progress = progress
        self._repo: Repo | None = None

    @property
    def repo(self) -> Repo:
        """The repository containing `cwd` (NotARepository otherwise)."""
        if self._repo is None:
            self._repo = open_repo(self.root, self.cwd)
        return self._repo

    def claim(self, name: str) -> Claim:
        return self.repo.claim(name)

    # -- create ---------------------------------------------------------------------------
    def create(self, name: str | None = None, *, prompt: str | None = None,
               branch: str | None = None, from_ref: str | None = None,
               fetch: bool = True, hooks: bool = True, ask: Ask | None = None,
               sparse: Sequence[str] | None = None, pr: int | None = None,
               carry: bool = False, move: bool = False, host: Host | None = None) -> Created:
        """Create a worktree (or reuse NAME after validating it).

        `hooks`: run the post_create hooks of a new worktree. `ask`: called with an
        unapproved project hook, True runs and approves it; without it such a hook is
        skipped with a warning. `sparse`: folders of a cone-mode sparse checkout (None:
        `sparse` of the start point's `.vibe/worktree.toml`, if any). `pr`: start from pull
        request N of the remote, in branch `pr-N` (NAME defaults to `pr-N`). `carry`: copy
        the uncommitted work of the checkout containing `cwd` into the new worktree (a new
        branch from that checkout's HEAD, or `from_ref` when the work applies to it cleanly);
        `move`: the same, then take that work out of the source (saved first to
        `refs/vibe/carried/NAME`). See `Created.carried`. `host`: the agent process this
        worktree is made for; its post_create hooks are stopped when it dies (a foreground
        one then raises `hooks.AgentGone`, the worktree left as made so far).
        """
        from .lifecycle import create as _create  # only creating pays for it

        if (carry or move) and (pr is not None or sparse):
            raise VwtError("--carry and --move make a full checkout of a new branch; drop "
                           "--pr and --sparse", 2)
        if pr is not None:
            from .lifecycle import pulls

            number = pulls.check_number(pr)
            name = name if name is not None else pulls.branch_for(number)
            if branch is not None or from_ref is not None or prompt is not None:
                raise VwtError("--pr sets the branch and the start point; drop -b, --from "
                               "and -p", 2)
            from_ref = pulls.start_of(self.root, self.cwd, number, name)
            branch = pulls.branch_for(number)

        dirs = None
        if sparse:
            from .lifecycle.sparse import normalise

            dirs = normalise(sparse)

        if hooks and os.path.exists(f"{self.root.home}/worktree.toml"):
            from .lifecycle.hooks import check_user_file

            check_user_file(self.root.home)  # broken: fail before anything is created
        plan = None
        if carry or move:
            from .lifecycle import carry as _carry

            plan = _carry.prepare(self.cwd, name, branch, from_ref, self._made_before(name))
            from_ref, dirs = plan.start, ()
        if name is None and branch is not None:
            raise VwtError("--branch needs a NAME; an automatic name has its own vibe/ branch", 2)
        filling = _carry.Filling(plan, move) if plan else None
        fill = filling.fill if filling else None
        pool = hooks and plan is None  # --no-hooks and carried work never take pool entries
        try:
            if name is not None:
                created = _create.create_named(self.root, self.cwd, name, branch, from_ref,
                                               fetch, self._output, dirs, fill, pool, hooks)
            else:
                created = _create.create_auto(self.root, self.cwd, prompt, from_ref, fetch,
                                              self._output, dirs, fill, pool, hooks)
        except BaseException:
            if filling is not None:
                filling.undo()
            raise
        if plan is not None and filling is not None:
            try:
                made = _carry.Made(created.name, created.path, created.created)
                carried = _carry.finish(plan, made, move, self.warn, filling)
                created = created._replace(carried=carried)
            finally:
                filling.give_room_back()
        if hooks and (created.created or created.setup_pending):
            created = self._post_create(created, ask, host)
        if pool and created.created:
            self._refill(created)
        return created

    def _refill(self, created: Created) -> None:
        """Start the pool's background filler when this repository has (or wants) a pool;
        never delays the creation (a detached process) and never fails it."""
        from .lifecycle.pool import folder

        has_pool = os.path.isdir(folder(self.root, created.bucket))
        if not created.pooled and not (has_pool or _any_hooks_file(self.root.home,
                                                                     created.repo_root)):
            return
        from .lifecycle import pool, pool_fill

        try:
            if not created.pooled:
                size = pool.configured_size(self.root.home, created.repo_root)
                found = pool.contents(self.root, created.bucket)
                if size == 0 or len(found.ready) >= size or pool.filling(self.root,
                                                                         created.bucket):
                    return
            pool_fill.spawn_refill(self.root.home, created.repo_root, created.bucket)
        except VwtError as exc:
            self.warn(f"the pool was not refilled: {exc.message}")

    def _made_before(self, name: str | None) -> bool:
        """NAME is a ready worktree already (a `--move` killed after making it)."""
        from .lifecycle.worktrees import READY, load_entry

        entry = load_entry(self.repo.claim(name)) if name else None
        return entry is not None and entry.state == READY

    def restore(self, name: str, *, hooks: bool = True, ask: Ask | None = None) -> Created:
        from .lifecycle import create as _create

        created = _create.restore(self.repo, name, self._output, hooks)
        return self._post_create(created, ask) if hooks else created

    def _post_create(self, created: Created, ask: Ask | None,
                     host: Host | None = None) -> Created:
        """The post_create hooks of a new worktree, or those of a reused one that did not
        succeed (SPEC §9). Interrupted, it says what it leaves and how to finish it."""
        if not (created.sparse or created.setup_pending
                or setup_state.any_hooks_file(self.root.home, created.path)):
            return created
        try:
            return self._run_post_create(created, ask, host)
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Interrupted)
            raise Interrupted.of(exc, f"{created.name} is left at {created.path} with its "
                                      f"setup unfinished; vwt new {created.name} finishes "
                                      "it") from None

    def _run_post_create(self, created: Created, ask: Ask | None,
                         host: Host | None) -> Created:
        from .lifecycle import hooks as _hooks

        ctx = _hooks.context(self.root.home, created.bucket, created.name, created.branch,
                             created.path, created.repo_root, created.base_commit)
        runner = _hooks.Runner(self.root.home, self.warn, ask, host)
        claim = self.root.claim(created.bucket, created.name)
        reuse = None
        if created.taken is not None:  # the pool ran them: again only where inputs changed
            from .lifecycle.pool_take import rerun_decider

            reuse = rerun_decider(created.taken, created.base_commit)
        results = _hooks.run_setup(runner, claim, ctx, bool(created.sparse), reuse,
                                   rerun=not created.created)
        return created._replace(hooks=tuple(results),
                                setup_pending=setup_state.still_pending(claim))

    # -- hooks -----------------------------------------------------------------------------
    def hooks(self) -> list[ListedHook]:
        """The user's hooks and the project hooks of the checkout containing `cwd`."""
        from .lifecycle.hooks import listing

        return listing(self.root.home, self.repo.bucket, self.repo.info.toplevel)

    def approve_hooks(self, names: Sequence[str] = (), *, all_hooks: bool = False,
                      approve: bool = True) -> list[ListedHook]:
        """Approve (or with `approve=False` revoke) project hooks by name, or all of them."""
        from .lifecycle.hooks import PROJECT, change_approvals

        project = [row.hook for row in self.hooks() if row.hook.source == PROJECT]
        if not all_hooks:
            if not names:
                raise VwtError("name the hooks, or pass --all", 2)
            unknown = [n for n in names if n not in {h.name for h in project}]
            if unknown:
                raise NotFound(f"no project hook named {unknown[0]!r}; see vwt hooks")
            project = [h for h in project if h.name in names]
        if project:
            change_approvals(self.root.home, self.repo.bucket, project, approve)
        return self.hooks()

    @property
    def _output(self) -> _create.Output:
        from .lifecycle.create import Output

        return Output(self.warn, self.progress)

    # -- look ------------------------------------------------------------------------------
    def list(self, *, all_repos: bool = False, with_status: bool = True,
             with_size: bool = False) -> list[Listed]:
        """`with_size`: also the bytes each checkout's own files take (`size`), as `du -s`
        counts them, measured several at a time."""
        rows = self._list(all_repos, with_status)
        if with_size:
            from .core.disk import sizes

            rows = [_replace(row, size=size if os.path.lexists(row.path) else None, sized=True)
                    for row, size in zip(rows, sizes([r.path for r in rows]), strict=True)]
        return rows

    def _list(self, all_repos: bool, with_status: bool) -> builtins.list[Listed]:
        buckets = self.root.buckets() if all_repos else [self.repo.bucket]
        found = entries(self.root, buckets, with_recovery=False)
        with registry_read_lock(self.root):
            rows = [_listed(e, live_holders(e.claim) if e.has_holders else []) for e in found]
        rows = _with_activity(self.root, rows)
        if not with_status:
            return rows
        checkouts: dict[int, Checkout] = {}
        cache: dict[str, tuple[str, ...]] = {}
        for i, entry in enumerate(found):
            if entry.state != READY:
                continue
            try:
                checkouts[i] = validate_checkout(entry.claim)
                filter_drivers(checkouts[i], cache)  # one config read per repository
            except MissingAdmin as exc:  # the repository moved away from under it
                rows[i] = _replace(rows[i], state=ORPHANED, problem=exc.message, setup=None)
            except VwtError as exc:
                rows[i] = _replace(rows[i], problem=exc.message)
        order = list(checkouts)
        tips = _tips_by_repo(c.common_dir for c in checkouts.values())
        done = map_parallel(lambda i: _with_status(rows[i], found[i], checkouts[i], cache,
                                                   tips[checkouts[i].common_dir]), order)
        uncounted: dict[str, list[tuple[int, str]]] = {}
        undecided: dict[str, list[tuple[int, str]]] = {}
        for i, status in zip(order, done, strict=True):
            rows[i] = status.row
            common_dir = checkouts[i].common_dir
            if status.head is not None and status.uncounted:
                uncounted.setdefault(common_dir, []).append((i, status.head))
            if status.head is not None and status.undecided:
                undecided.setdefault(common_dir, []).append((i, status.head))
        _count_ahead(rows, uncounted, tips, cache)
        _finish_integration(rows, undecided, tips, cache)
        return rows

    def path(self, name: str) -> str:
        claim = self.claim(name)
        entry = require_entry(claim)
        require_trusted(entry)
        return claim.checkout

    def status(self, name: str) -> WorktreeStatus:
        claim = self.claim(name)
        entry = require_entry(claim)
        record = require_trusted(entry)
        if entry.state not in (READY, MISSING):
            raise VwtError(f"{name} is {entry.state}; there is no checkout to inspect yet")
        from .lifecycle import remove as _remove

        target = _remove.target_for(entry)
        inspection: Inspection = _remove.inspect(target)
        landed = None
        own = None
        if target.checkout is not None:
            from .core.integration import read_tips

            tips = read_tips(target.repo_git)
            landed = _integration(target.checkout, inspection, None, tips)
            if tips is not None and inspection.head is not None and inspection.ahead:
                own = left_right_counts(target.checkout.git, tips.commits[0], inspection.head)[1]
        with registry_read_lock(self.root):
            holders = live_holders(claim)
        status = WorktreeStatus(
            name, claim.checkout, record.branch, record.branch_created, record.base_commit,
            inspection.changes, inspection.untracked, inspection.ahead, len(holders),
            running_hooks(holders), not_in_target=own, rebasing=inspection.rebasing,
            agent=_made_by(record, "agent"),
            session=_made_by(record, "session"), activity=_activity_of(self.root, claim),
            setup=setup_state.state(record, holders) if entry.state == READY else None,
        )
        if landed is None:
            return status
        return status._replace(target=landed.target, behind=landed.behind,
                               integrated=None if inspection.rebasing else landed.integrated)

    def conflicts(self, name: str | None = None, *, all_repos: bool = False,
                  path: str | None = None) -> ConflictsResult:
        """Where the ready worktrees will conflict (SPEC §13): against their target branch
        and with each other. Changes nothing and holds nothing, so it is safe while their
        sessions work. NAME: its own collisions; `path` (a file or folder relative to the
        top level): only who changes it; `all_repos`: every repository."""
        from .landing import collisions

        if name is not None and all_repos:
            raise VwtError("NAME and --all do not go together; NAME is in this repository", 2)
        buckets = self.root.buckets() if all_repos else [self.repo.bucket]
        if name is not None:
            entry = require_entry(self.claim(name))
            require_trusted(entry)
            if entry.state != READY:
                raise VwtError(f"{name} is {entry.state}; only a ready worktree has work to "
                               "compare")
        where = None
        if path is not None:
            toplevel = self._toplevel_or_none() if os.path.isabs(path) else None
            where = collisions.normalise_path(path, toplevel)
        return collisions.forecast(self.root, buckets, collisions.Scope(name, where))

    def _toplevel_or_none(self) -> str | None:
        repo = self._repo_or_none()
        return repo.info.toplevel if repo else None

    # -- hold ------------------------------------------------------------------------------
    def hold(self, name: str, holder_id: str | None = None) -> Holder:
        """Hold NAME for a live session; use as a context manager or call `.release()`.

        Taken under the prune lock, so retention cannot slip in between the lookup
        and the hold.
        """
        claim = self.claim(name)
        with prune_lock(self.root):
            entry = require_entry(claim)
            require_trusted(entry)
            if entry.state != READY:
                raise VwtError(f"{name} is {entry.state}; it cannot be held")
            validate_checkout(claim, self.repo.info.common_dir)
            holder = acquire_holder(claim, holder_id or new_holder_id())
        try:  # `rm` does not take the prune lock: make sure it did not win meanwhile
            validate_checkout(claim, self.repo.info.common_dir)
            require_trusted(require_entry(claim))
        except BaseException:
            holder.release()
            raise
        return holder

    def run(self, name: str, command: Sequence[str], extra_env: dict[str, str] | None = None
            ) -> int:
        """Run `command` inside NAME while holding it; return its exit status."""
        if not command:
            raise VwtError("no command given; use: vwt run NAME -- CMD [ARG...]", 2)
        import signal
        import subprocess

        with self.hold(name) as holder:
            env = dict(os.environ)
            env.update(VWT_NAME=name, VWT_PATH=holder.claim.checkout, **{HOLDER_ENV: holder.id})
            from .core.ports import PORT_ENV, worktree_port

            env[PORT_ENV] = str(worktree_port(self.root.home, holder.claim.bucket, name))
            env.update(extra_env or {})
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                # The child inherits the locked descriptor: should this process die, the
                # command still holds the worktree for as long as it runs.
                child = subprocess.Popen(list(command), cwd=holder.claim.checkout, env=env,
                                         restore_signals=True, pass_fds=(holder.fileno(),))
            except FileNotFoundError:
                signal.signal(signal.SIGINT, previous)
                raise VwtError(f"command not found: {command[0]}", 127) from None
            except PermissionError:
                signal.signal(signal.SIGINT, previous)
                raise VwtError(f"command cannot be run: {command[0]}", 126) from None
            try:
                code = child.wait()
            finally:
                signal.signal(signal.SIGINT, previous)
        return 128 - code if code < 0 else code

    # -- clean up --------------------------------------------------------------------------
    def remove(self, name: str, *, confirm_dirty: bool | Confirm = False,
               delete_branch: bool | None = None, confirm_branch: Confirm | None = None,
               own_holders: Sequence[str] = (), hooks: bool = True,
               ask_hook: Ask | None = None) -> Removal:
        """Remove NAME safely. Dirty work needs `confirm_dirty` (and is snapshotted first).

        `own_holders`: the caller's own holder ids, which do not count as a live session
        (`VWT_HOLDER_ID`, set by `vwt run`, is always among them). `hooks`: run the
        pre_remove hooks first (a failing one stops the removal: outcome hook_failed).
        """
        from .lifecycle import remove as _remove

        claim = self.claim(name)
        ask = confirm_dirty if callable(confirm_dirty) else (lambda _q, v=confirm_dirty: v)
        own = [*own_holders, *filter(None, [os.environ.get(HOLDER_ENV)])]
        return _remove.remove_worktree(
            _load(claim), claim, confirm_dirty=ask, delete_branch=delete_branch,
            confirm_branch=confirm_branch or _remove.never,
            ignore_holders=frozenset(own),
            pre_remove=self._pre_remove(ask_hook) if hooks else None,
        )

    def _pre_remove(self, ask: Ask | None) -> _remove.PreRemove:
        def run(target: _remove.Target) -> tuple[tuple[HookResult, ...], str | None]:
            record, claim = target.record, target.claim
            if not _any_hooks_file(self.root.home, claim.checkout):
                return (), None
            from .lifecycle import hooks as _hooks

            ctx = _hooks.context(self.root.home, claim.bucket, claim.name, record.branch,
                                 claim.checkout, record.repo_root, record.base_commit or "")
            return _hooks.before_remove(_hooks.Runner(self.root.home, self.warn, ask), ctx)
        return run

    def snapshot(self, name: str) -> Snapshot:
        claim = self.claim(name)
        entry = require_entry(claim)
        require_trusted(entry)
        if entry.state != READY:
            raise VwtError(f"{name} is {entry.state}; there is no checkout to snapshot")
        from .lifecycle import remove as _remove

        return _remove.snapshot_held(entry)

    # -- land ------------------------------------------------------------------------------
    def merge(self, name: str, *, into: str | None = None, mode: str = "squash",
              message: str | None = None, commit: bool = False, keep: bool = False,
              fetch: bool = True, hooks: bool = True,
              own_holders: Sequence[str] = (), ask: Ask | None = None) -> MergeResult:
        """Land NAME's commits on the target branch (SPEC §8), then remove it unless `keep`.

        Refusals and failures that change nothing are outcomes (`result.exit_code`), not
        exceptions. `own_holders` as for `remove`. `hooks`: run the pre_merge, pre_remove
        and post_merge hooks (`ask` as for `create`).
        """
        from .landing.merge import Request
        from .landing.merge import merge as _merge

        own = frozenset([*own_holders, *filter(None, [os.environ.get(HOLDER_ENV)])])
        run_hooks = None
        claim = self.claim(name)
        if hooks and _any_hooks_file(self.root.home, claim.checkout):
            from .lifecycle.hooks import Runner, for_merge

            run_hooks = for_merge(Runner(self.root.home, self.warn, ask), claim.checkout)
        request = Request(name, into, mode, message, commit, keep, fetch, own, run_hooks)
        return _merge(claim, request, self.warn)

    def merge_target(self, into: str | None = None) -> str:
        """The short name of the branch `merge` would land NAME on (SPEC §8)."""
        from .core.target import require

        return require(self.repo.git, into).branch

    def sync(self, name: str, *, onto: str | None = None, fetch: bool = True,
             stop_on_conflict: bool = False) -> SyncResult:
        """Rebase NAME's own commits onto the target branch inside its checkout.

        A conflict changes nothing (outcome `conflict`), or with `stop_on_conflict` leaves
        the rebase stopped in the checkout (`conflict_stopped`) for `sync_continue` or
        `sync_abort`."""
        from .landing.sync import sync as _sync

        return _sync(self.claim(name), onto, fetch, self.warn, stop_on_conflict)

    def sync_continue(self, name: str) -> SyncResult:
        """Go on with NAME's stopped sync once its conflicts are resolved and staged, as
        `git rebase --continue` does: `synced`, or `conflict_stopped` at the next one."""
        from .landing.sync import CONTINUE
        from .landing.sync import sync as _sync

        return _sync(self.claim(name), None, False, self.warn, action=CONTINUE)

    def sync_abort(self, name: str) -> SyncResult:
        """Undo NAME's stopped sync: branch, files and record as they were before it
        (outcome `aborted`)."""
        from .landing.sync import ABORT
        from .landing.sync import sync as _sync

        return _sync(self.claim(name), None, False, self.warn, action=ABORT)

    def prune(self, keep: int | None = None, dry_run: bool = False,
              merged: bool = False, max_size: int | str | None = None) -> PruneResult:
        """Retention; `merged` also removes clean worktrees whose commits have landed;
        `max_size` (bytes, or `"20G"`; default `max_size` of config.toml) then removes pool
        entries and the oldest unheld worktrees until all of them take at most that."""
        from .lifecycle.prune import prune

        if isinstance(max_size, str):
            from .core.disk import parse_size

            max_size = parse_size(max_size)
        return prune(self.root, keep, dry_run, self.warn, merged, max_size)

    # -- agent sessions ----------------------------------------------------------------------
    def hold_for_session(self, name: str, session: str, host: Host) -> str | None:
        """Hold NAME until the agent process `host` dies or `session` ends (a detached
        watcher keeps the hold); the holder id, or None when this session holds it already."""
        from .sessions.holds import hold_for_session

        return hold_for_session(self.claim(name), session, host,
                                lambda holder_id: self.hold(name, holder_id))

    def release_session(self, name: str, session: str) -> builtins.list[str]:
        """Let go of NAME's holds of `session`; the holder ids that went."""
        from .sessions.holds import release_session

        return release_session(self.claim(name), session)

    def end_session(self, session: str) -> int:
        """The session ended: its activity is forgotten and every hold it has, in every
        repository, let go. How many holds went."""
        from .sessions import activity, holds

        activity.clear(self.root.home, session)
        return holds.release_everywhere(self.root, session)

    # -- other tools' worktrees --------------------------------------------------------------
    def foreign(self, *, all_repos: bool = False) -> Sequence[Foreign]:
        """The git worktrees other tools made (Claude Code, Codex, Cursor, `git worktree
        add`): not managed, the main working tree excepted; of every repository that has a
        bucket with `all_repos`. Changes nothing."""
        from .lifecycle.foreign import list_foreign, repos_with_buckets

        if not all_repos:
            return list_foreign(self.root, [self.repo.info])
        repos = {info.common_dir: info for info in repos_with_buckets(self.root)}
        here = self._repo_or_none()
        if here is not None:
            repos.setdefault(here.info.common_dir, here.info)
        return list_foreign(self.root, list(repos.values()))

    def adopt(self, paths: Sequence[str] = (), *, all_foreign: bool = False) -> AdoptResult:
        """Move each worktree at `paths` (relative to `cwd`), or with `all_foreign` each one
        `foreign()` lists, under management; `result.refused` says which were not, and why
        (nothing of those changed)."""
        from .lifecycle.adopt import adopt_paths

        if all_foreign == bool(paths):
            raise VwtError("name the worktrees to adopt (PATH...), or pass --all", 2)
        wanted = [row.path for row in self.foreign()] if all_foreign else \
            [os.path.join(self.cwd, p) for p in paths]
        return adopt_paths(self.root, wanted)

    def _repo_or_none(self) -> Repo | None:
        from .core.errors import NotARepository

        try:
            return self.repo
        except NotARepository:
            return None

    # -- pool ------------------------------------------------------------------------------
    def pool_status(self, *, all_repos: bool = False) -> Sequence[PoolStatus]:
        """The warm pool of this repository (of every repository that has one with
        `all_repos`): configured size, ready and filling entries, their base commit."""
        from .lifecycle import pool

        if not all_repos:
            repo = self.repo
            return [pool.status_of(self.root, repo.bucket, repo.info.repo_root)]
        return [pool.status_of(self.root, bucket, pool.repo_root_of(self.root, bucket))
                for bucket in pool.pool_buckets(self.root)]

    def pool_fill(self, size: int | None = None, *, ask: Ask | None = None,
                  fetch: bool = True, progress: Warn | None = None) -> PoolStatus:
        """Fill this repository's pool now, in the foreground, up to `size` (default: the
        configured size); waits for a background filler first. A VwtError names the hook
        that failed when an entry could not be made ready."""
        from .lifecycle import pool, pool_fill

        repo = self.repo
        outcome = pool_fill.fill(self.root, repo.info.repo_root, size, wait=True, fetch=fetch,
                                 ask=ask, warn=self.warn,
                                 progress=progress or (lambda _m: None))
        if outcome.failure is not None:
            raise VwtError(f"a pool entry could not be made ready: {outcome.failure}")
        return pool.status_of(self.root, repo.bucket, repo.info.repo_root)

    def pool_drain(self, *, all_repos: bool = False) -> Sequence[PoolStatus]:
        """Empty the pool (every repository's with `all_repos`); an entry with changes in it
        is snapshotted to `refs/vibe/pool/<id>` first."""
        from .lifecycle import pool

        if not all_repos:
            targets: builtins.list[tuple[str, str, str | None]] = [
                (self.repo.bucket, self.repo.info.common_dir, self.repo.info.repo_root)]
        else:
            targets = []
            for bucket in pool.pool_buckets(self.root):
                repo_root = pool.repo_root_of(self.root, bucket)
                common = _common_dir_or_none(repo_root)
                if common is None:
                    self.warn(f"pool {bucket}: its repository is gone; left alone")
                    continue
                targets.append((bucket, common, repo_root))
        for bucket, common_dir, _repo_root in targets:
            pool.drain(self.root, bucket, common_dir, self.warn)
        return [pool.status_of(self.root, bucket, repo_root)
                for bucket, _common, repo_root in targets]

    # -- health ----------------------------------------------------------------------------
    def doctor(self) -> DoctorReport:
        """Every problem of the home (changes nothing on disk)."""
        from .health.doctor import check

        return check(self.root, self.cwd)

    def archive_orphans(self) -> Sequence[Repaired]:
        """Archive the checkouts of vanished repositories into `<root>/.orphans`."""
        from .health.orphans import archive_orphans

        return archive_orphans(self.root, self.cwd)

    def relocate(self) -> Sequence[Repaired]:
        """Inside a moved repository: bring its worktrees into its current bucket."""
        from .health.orphans import relocate

        return relocate(self.root, self.cwd)


def _with_activity(root: Root, rows: list[Listed]) -> list[Listed]:
    """§14: the live agent activity of each row (one folder listing per bucket)."""
    from .sessions.activity import FOLDER, of_bucket

    if not os.path.isdir(f"{root.home}/{FOLDER}"):
        return rows
    by_bucket = {b: of_bucket(root.home, b) for b in {r.bucket for r in rows}}
    return [_replace(r, activity=found) if (found := by_bucket[r.bucket].get(r.name)) else r
            for r in rows]


def _activity_of(root: Root, claim: Claim) -> Activity | None:
    from .sessions.activity import current

    return current(root.home, claim)


_any_hooks_file = setup_state.any_hooks_file


def _common_dir_or_none(repo_root: str | None) -> str | None:
    if repo_root is None or not os.path.isdir(repo_root):
        return None
    from .core.git import discover

    try:
        return discover(repo_root).common_dir
    except VwtError:
        return None


def _load(claim: Claim) -> Entry | None:
    from .lifecycle.worktrees import load_entry

    return load_entry(claim)


__all__ = [
    "BROKEN", "MISSING", "ORPHANED", "READY", "SNAPSHOT", "Created", "Listed", "NotFound",
    "ValidationFailed", "WorktreeStatus", "Worktrees",
]
