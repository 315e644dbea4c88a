"""What `vwt list` and `vwt status` show: a row per worktree, its status (changes, commits
ahead, the target branch and whether its work landed there), computed in batches: one
parallel inspection per checkout, then one walk of history and a few integration checks
per repository, however many worktrees it has.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from ..core.errors import VwtError
from ..core.host import Activity
from ..core.layout import Claim, Root
from ..core.light import NamedTuple
from ..core.locks import live_holders, registry_read_lock, running_hooks
from . import setup_state
from .leasing import PortFinder
from .worktrees import (
    MISSING,
    ORPHANED,
    READY,
    Checkout,
    Entry,
    Inspection,
    MissingAdmin,
    entries,
    filter_drivers,
    housekeeping_git,
    inspect_checkout,
    require_entry,
    require_trusted,
    validate_checkout,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..core.integration import Integration, Tips
    from ..core.records import Record


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
    ports: tuple[int, ...] | None = None  # §17: its lease's; None without a record

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
            ports=None if self.ports is None else list(self.ports),
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
    ports: tuple[int, ...] | None = None  # §17: its lease's

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
            ports=None if self.ports is None else list(self.ports),
        )


def shown_ports(entry: Entry, record: Record | None, ports: PortFinder,
                state: str | None = None) -> tuple[int, ...] | None:
    """A ready worktree's ports (its hash block while it has no lease, as `vwt port` says);
    for the others, their lease's if they have one: no app runs where there is no checkout.
    What `list`, `status` and `vwt ps` show."""
    if record is None:
        return None
    if (state or entry.state) != READY:
        return ports.leased(entry.claim.bucket, entry.name, record.ports)
    return ports.quietly(entry.claim.bucket, entry.name, record.ports, entry.claim.checkout)


def _listed(entry: Entry, holders: list[str], ports: PortFinder) -> Listed:
    record, recovery = entry.record, entry.recovery
    source = record or recovery
    state = entry.state  # a property that looks at the disk: once per row
    return Listed(  # positionally: a listing builds a thousand of these
        entry.name,
        source.branch if source else None,
        entry.claim.checkout,
        entry.claim.bucket,
        source.repo_root if source else None,
        source.base_commit if source else None,
        record.branch_created if record else None,
        record.claimed_at if record else None,
        state,
        len(holders),
        problem=entry.problem,
        hooks_running=running_hooks(holders) if holders else (),
        agent=_made_by(record, "agent"),
        session=_made_by(record, "session"),
        setup=setup_state.state(record, holders)
        if record is not None and state == READY else None,
        ports=shown_ports(entry, record, ports, state),
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
            from ..core.integration import cheap_check

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
    from ..core.git import Git
    from ..core.history import commits_since

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
    from ..core.git import Git
    from ..core.integration import finish_checks

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
    from ..core.integration import check

    return check(housekeeping_git(checkout, cache), inspection.head, tips)


def _tips_by_repo(common_dirs: Iterable[str]) -> dict[str, Tips | None]:
    """The target tips of each repository, read once per listing."""
    from ..core.git import Git
    from ..core.integration import read_tips

    found: dict[str, Tips | None] = {}
    for common_dir in dict.fromkeys(common_dirs):
        try:
            found[common_dir] = read_tips(Git(common_dir))
        except VwtError:
            found[common_dir] = None
    return found


def _replace(row: Listed, **changes: object) -> Listed:
    return row._replace(**changes)  # type: ignore[arg-type]


# -- the listing ------------------------------------------------------------------------------
def rows(root: Root, buckets: Iterable[str], with_status: bool) -> list[Listed]:
    """A row per worktree of `buckets` (activity aside: `sessions.activity` adds it), with
    its status when `with_status`."""
    found = entries(root, list(buckets), with_recovery=False)
    with registry_read_lock(root):
        holders = [live_holders(e.claim) if e.has_holders else [] for e in found]
    ports = PortFinder(root)
    listed = [_listed(e, h, ports) for e, h in zip(found, holders, strict=True)]
    if not with_status:
        return listed
    checkouts: dict[int, Checkout] = {}
    cache: dict[str, tuple[str, ...]] = {}
    for i, entry in enumerate(found):
        if entry.state != READY:
            continue
        try:
            checkouts[i] = validate_checkout(entry.claim)
            filter_drivers(checkouts[i], cache)  # one config read per repository
        except MissingAdmin as exc:  # the repository moved away from under it
            listed[i] = _replace(listed[i], state=ORPHANED, problem=exc.message, setup=None)
        except VwtError as exc:
            listed[i] = _replace(listed[i], problem=exc.message)
    from ..core.git import map_parallel  # a listing without status starts no git

    order = list(checkouts)
    tips = _tips_by_repo(c.common_dir for c in checkouts.values())
    done = map_parallel(lambda i: _with_status(listed[i], found[i], checkouts[i], cache,
                                               tips[checkouts[i].common_dir]), order)
    uncounted: dict[str, list[tuple[int, str]]] = {}
    undecided: dict[str, list[tuple[int, str]]] = {}
    for i, status in zip(order, done, strict=True):
        listed[i] = status.row
        common_dir = checkouts[i].common_dir
        if status.head is not None and status.uncounted:
            uncounted.setdefault(common_dir, []).append((i, status.head))
        if status.head is not None and status.undecided:
            undecided.setdefault(common_dir, []).append((i, status.head))
    _count_ahead(listed, uncounted, tips, cache)
    _finish_integration(listed, undecided, tips, cache)
    return listed


def with_sizes(listed: list[Listed]) -> list[Listed]:
    """The bytes each checkout's own files take (`size`), as `du -s` counts them, measured
    several at a time."""
    from ..core.disk import sizes

    return [_replace(row, size=size if os.path.lexists(row.path) else None, sized=True)
            for row, size in zip(listed, sizes([r.path for r in listed]), strict=True)]


# -- one worktree's status --------------------------------------------------------------------
def status_of(claim: Claim) -> WorktreeStatus:
    """The cleanup inspection of one worktree (activity aside: `sessions.activity` adds it)."""
    entry = require_entry(claim)
    record = require_trusted(entry)
    if entry.state not in (READY, MISSING):
        raise VwtError(f"{claim.name} is {entry.state}; there is no checkout to inspect yet")
    from . import remove as _remove

    target = _remove.target_for(entry)
    inspection: Inspection = _remove.inspect(target)
    landed = None
    own = None
    if target.checkout is not None:
        from ..core.git import left_right_counts
        from ..core.integration import read_tips

        tips = read_tips(target.repo_git)
        landed = _integration(target.checkout, inspection, None, tips)
        if tips is not None and inspection.head is not None and inspection.ahead:
            own = left_right_counts(target.checkout.git, tips.commits[0], inspection.head)[1]
    with registry_read_lock(claim.root):
        holders = live_holders(claim)
    status = WorktreeStatus(
        claim.name, claim.checkout, record.branch, record.branch_created, record.base_commit,
        inspection.changes, inspection.untracked, inspection.ahead, len(holders),
        running_hooks(holders), not_in_target=own, rebasing=inspection.rebasing,
        agent=_made_by(record, "agent"), session=_made_by(record, "session"),
        setup=setup_state.state(record, holders) if entry.state == READY else None,
        ports=PortFinder(claim.root).quietly(claim.bucket, claim.name, record.ports,
                                             claim.checkout),
    )
    if landed is None:
        return status
    return status._replace(target=landed.target, behind=landed.behind,
                           integrated=None if inspection.rebasing else landed.integrated)
