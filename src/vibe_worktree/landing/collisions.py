"""Collisions (SPEC §13): where parallel sessions will conflict, before they do.

Nothing here changes a checkout, an index, a ref or a record, and no lock is taken:
a worktree's work is read as a snapshot would record it (a copy of its index in a
private temporary folder when it has uncommitted changes, its HEAD otherwise), and
every merge is a `git merge-tree`, which only adds objects to the object store. The
index copies git refreshed are kept in the home for the next forecast (`index_cache`).

The cost follows the work, not the square of the worktrees: paths are bucketed to
find the pairs that share one, only those pairs are merged, a worktree that already
contains its target or whose paths miss everything the target changed is not merged
against it, and all the merges of a repository run in one git process.
"""

from __future__ import annotations

import os

from ..core import git as g
from ..core import history
from ..core import target as _target
from ..core.errors import VwtError
from ..core.layout import Root
from ..core.light import NamedTuple
from ..lifecycle.worktrees import (
    READY,
    Checkout,
    Entry,
    Here,
    entries,
    filter_drivers,
    housekeeping_git,
    require_ready,
)

# Staging into the copied index must write that copy in full: a split index would
# write a shared-index file into the worktree's own admin folder.
_STAGING_CONFIG = (("core.splitIndex", "false"),)


class WorktreeCollisions(NamedTuple):
    """One worktree of `vwt conflicts`: how much it changed and where it meets its target."""

    name: str
    bucket: str
    branch: str
    target: str | None  # the target branch, None when the repository has none
    changed: int | None  # number of changed paths since base_commit; None on error
    target_conflicts: tuple[str, ...] | None  # None on error
    error: str | None = None

    def to_json(self) -> dict[str, object]:
        conflicts = None if self.target_conflicts is None else list(self.target_conflicts)
        return {"name": self.name, "bucket": self.bucket, "branch": self.branch,
                "target": self.target, "changed": self.changed,
                "target_conflicts": conflicts, "error": self.error}


class CollisionPair(NamedTuple):
    """Two worktrees of one repository that changed some of the same paths (a < b)."""

    bucket: str
    a: str
    b: str
    overlap: tuple[str, ...]  # paths both changed
    conflicts: tuple[str, ...]  # paths on which merging the two would conflict

    def to_json(self) -> dict[str, object]:
        return {"bucket": self.bucket, "a": self.a, "b": self.b,
                "overlap": list(self.overlap), "conflicts": list(self.conflicts)}


class ConflictsResult(NamedTuple):
    worktrees: tuple[WorktreeCollisions, ...]
    pairs: tuple[CollisionPair, ...]

    @property
    def conflicted(self) -> bool:
        """Any conflict, against a target or between two worktrees (`--check` exits 1)."""
        return (any(w.target_conflicts for w in self.worktrees)
                or any(p.conflicts for p in self.pairs))

    def colliding(self) -> set[tuple[str, str]]:
        """(bucket, name) of every worktree in a pair or conflicting with its target."""
        found = {(w.bucket, w.name) for w in self.worktrees if w.target_conflicts}
        for pair in self.pairs:
            found |= {(pair.bucket, pair.a), (pair.bucket, pair.b)}
        return found

    def to_json(self) -> dict[str, object]:
        return {"worktrees": [w.to_json() for w in self.worktrees],
                "pairs": [p.to_json() for p in self.pairs]}


class Scope(NamedTuple):
    """What the caller asked about: every worktree, NAME's collisions, or one path's."""

    name: str | None = None
    path: str | None = None  # relative to the top level; "" stands for everything

    def wants_paths(self, paths: frozenset[str] | tuple[str, ...]) -> bool:
        return self.path is None or any(under(p, self.path) for p in paths)


def under(path: str, folder: str) -> bool:
    """`path` is `folder` or lies inside it ("" holds everything)."""
    return not folder or path == folder or path.startswith(f"{folder}/")


def normalise_path(path: str, toplevel: str | None) -> str:
    """PATH relative to the top level, as git prints paths; an absolute one must lie
    inside the checkout the command runs in."""
    if os.path.isabs(path):
        if toplevel is None:
            raise VwtError(f"--path {path}: an absolute path needs a repository; pass it "
                           "relative to the top level", 2)
        real, top = os.path.realpath(path), os.path.realpath(toplevel)
        if real != top and not real.startswith(f"{top}/"):
            raise VwtError(f"--path {path} is outside the repository at {top}", 2)
        path = os.path.relpath(real, top)
    clean = os.path.normpath(path.replace("\\", "/")) if path else "."
    if clean == ".":
        return ""
    if clean == ".." or clean.startswith("../"):
        raise VwtError(f"--path {path} leaves the repository; give it relative to the top level",
                       2)
    return clean


# -- reading each worktree's work ---------------------------------------------------------------

class _Work(NamedTuple):
    """One worktree's work as a snapshot would record it."""

    entry: Entry
    common_dir: str | None
    head: str | None
    tree: str | None  # the work's tree when it differs from HEAD's (uncommitted changes)
    paths: frozenset[str]  # changed since base_commit (filled in per repository)
    error: str | None = None

    @property
    def work(self) -> str | None:
        """What a snapshot would record: the uncommitted tree, else HEAD."""
        return self.tree or self.head

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def branch(self) -> str:
        assert self.entry.record is not None
        return self.entry.record.branch


def _failed(entry: Entry, common_dir: str | None, error: str) -> _Work:
    return _Work(entry, common_dir, None, None, frozenset(), error)


def _read_work(entry: Entry, checkout: Checkout, cache: dict[str, tuple[str, ...]],
               folder: str) -> _Work:
    """What the worktree changed since its base, as a snapshot would record it. git reads
    the worktree through a private copy of its index: `status` refreshes that copy, so
    staging into it does not re-hash what `status` hashed, and the refreshed copy is kept in
    the home for the next forecast while the worktree's own index stays as it is (a fresh
    checkout whose files share the index's second would otherwise be hashed every time:
    `core/index_cache.py`)."""
    from ..core import index_cache
    from ..core.layout import unlink_if_exists
    from ..core.staging import staged_tree

    record = entry.record
    assert record is not None and record.base_commit is not None
    common = checkout.common_dir
    claim = entry.claim
    kept = index_cache.cache_path(claim.root.home, claim.bucket, claim.name)
    index = os.path.join(folder, f"vwt-conflicts-{os.urandom(6).hex()}.index")
    try:
        git = housekeeping_git(checkout, cache)._replace(extra_config=_STAGING_CONFIG)
        copy = index_cache.private_copy(os.path.join(checkout.admin_dir, "index"), kept, index)
        status = g.status(git, private_index=index)
        index_cache.keep(copy, kept)
        if status.head is None:
            return _failed(entry, common, "it has no commit yet")
        if status.nested_repos:
            return _failed(entry, common, f"it holds a repository of its own at "
                                          f"{status.nested_repos[0]}, which a snapshot cannot read")
        tree = None
        if status.changes:
            filtered = g.files_using_filters(git, git.neutralised_filters, status.paths)
            if filtered:
                return _failed(entry, common, f"{filtered[0]} uses a filter driver of the "
                                              "repository's own config, which vwt never runs")
            tree = staged_tree(git, index, status.paths)
    except VwtError as exc:
        return _failed(entry, common, exc.message)
    finally:
        unlink_if_exists(index)
    return _Work(entry, common, status.head, tree, frozenset())


def _with_paths(git: g.Git, works: list[_Work]) -> list[_Work]:
    """The works with the paths each changed since its base: one diff for them all."""
    changed = [i for i, w in enumerate(works)
               if w.error is None and w.work != _base_of(w)]
    try:
        found = g.changed_paths_many(git, [(_base_of(works[i]), works[i].work or "")
                                           for i in changed])
    except VwtError as exc:
        return [w if w.error else w._replace(error=exc.message) for w in works]
    works = list(works)
    for i, paths in zip(changed, found, strict=True):
        works[i] = works[i]._replace(paths=frozenset(paths))
    return works


def _base_of(work: _Work) -> str:
    record = work.entry.record
    assert record is not None and record.base_commit is not None
    return record.base_commit


# -- one repository ---------------------------------------------------------------------------

class _Repo(NamedTuple):
    git: g.Git  # in the common git dir; the repository's merge drivers never run
    target: _target.Target | None
    error: str | None = None


def _open_repo(common_dir: str) -> _Repo:
    plain = g.Git(common_dir)
    try:
        drivers = g.repo_merge_drivers(plain)
        # A merge driver is a command of the repository's config: a path that needs it
        # is reported as conflicting rather than handed to it.
        git = plain._replace(neutralised_merge_drivers=drivers)
        return _Repo(git, _target.resolve(git))
    except VwtError as exc:
        return _Repo(plain, None, exc.message)


def _folders(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def meet(mine: frozenset[str], theirs: frozenset[str]) -> bool:
    """Whether two sets of changed paths can collide: a path both changed, or a path one
    side changed that is a folder of a path the other changed (a file against a folder)."""
    if not mine or not theirs:
        return False
    their_folders = {folder for path in theirs for folder in _folders(path)}
    return any(path in theirs or path in their_folders
               or any(folder in theirs for folder in _folders(path)) for path in mine)


def _overlaps(paths_of: dict[int, frozenset[str]]) -> dict[tuple[int, int], list[str]]:
    """(i, j) -> paths both changed, for i < j: paths bucketed, never every pair compared.
    A file/folder clash counts as both changing the file's path: one changed `df`, the
    other a path under `df/` (SPEC §13)."""
    by_path: dict[str, list[int]] = {}
    under_folder: dict[str, set[int]] = {}  # folder -> who changed a path inside it
    for i in sorted(paths_of):
        for path in paths_of[i]:
            by_path.setdefault(path, []).append(i)
            for folder in _folders(path):
                under_folder.setdefault(folder, set()).add(i)
    shared: dict[tuple[int, int], set[str]] = {}
    for path, owners in by_path.items():
        for x, i in enumerate(owners):
            for j in owners[x + 1:]:
                shared.setdefault((i, j), set()).add(path)
        for i in owners:
            for j in under_folder.get(path, ()):
                if i != j:
                    shared.setdefault((min(i, j), max(i, j)), set()).add(path)
    return {pair: sorted(paths) for pair, paths in shared.items()}


def pair_conflicts(overlap: list[str], outcome: g.MergedTree | str) -> tuple[str, ...]:
    """The paths of `overlap` on which the pair's merge conflicts, always some when it
    conflicts at all. git names the path where it leaves each conflict: an overlap path, a
    path inside one (a file/folder clash), or after a rename a path only one side changed
    (a rename against a deletion conflicts at the new name): the overlap paths it touches
    are named, and when it touches none the two conflict wherever they meet, as they do
    when git refuses the merge outright."""
    if isinstance(outcome, str):
        return tuple(overlap)
    named = [path for path in overlap
             if any(path == c or under(c, path) or under(path, c) for c in outcome.conflicts)]
    return tuple(named) if named or not outcome.conflicts else tuple(overlap)


class _Plan(NamedTuple):
    target_merges: dict[int, tuple[str, ...] | None]  # i -> conflicts known, or None: merge
    errors: dict[int, str]


def _plan_target(repo: _Repo, works: list[_Work], wanted: list[int]) -> _Plan:
    """Which worktrees need a merge against the target: not those whose HEAD contains it,
    nor those whose paths miss everything it changed since their merge base."""
    known: dict[int, tuple[str, ...] | None] = {}
    errors: dict[int, str] = {}
    target = repo.target
    if target is None or target.commit is None:
        return _Plan(dict.fromkeys(wanted, ()), errors)
    todo = []
    for i in wanted:
        if works[i].paths:
            todo.append(i)
        else:
            known[i] = ()
    tip = target.commit
    containing = g.tips_containing(repo.git, tip, [works[i].branch for i in todo])
    for i in todo:
        if works[i].head in containing:  # T is in its history: merging it is a fast-forward
            known[i] = ()
    todo = [i for i in todo if i not in known]
    heads = sorted({works[i].head or "" for i in todo})
    bases = dict(zip(heads, history.merge_bases(repo.git, heads, tip), strict=True))
    unique_bases = sorted({b for b in bases.values() if b})
    changed = dict(zip(unique_bases, g.map_parallel(
        lambda b: frozenset(g.changed_paths(repo.git, b, tip)), unique_bases), strict=True))
    for i in todo:
        base = bases[works[i].head or ""]
        if base is None:
            errors[i] = f"its history is unrelated to {target.branch}'s"
        elif meet(works[i].paths, changed[base]):
            known[i] = None
        else:
            known[i] = ()
    return _Plan(known, errors)


def _work_commits(repo: _Repo, works: list[_Work], needed: set[int]) -> dict[int, str]:
    """A commit for each needed work (merge-tree merges commits): HEAD when the work has no
    uncommitted changes, else a commit of its staged tree on top of HEAD."""
    commits = {i: works[i].head or "" for i in needed if works[i].tree is None}
    staged = sorted(i for i in needed if works[i].tree is not None)

    def commit(i: int) -> str:
        work = works[i]
        assert work.tree is not None and work.head is not None
        return g.commit_tree(repo.git, work.tree, [work.head],
                             f"vibe-worktree conflicts: work of {work.name}")

    commits.update(zip(staged, g.map_parallel(commit, staged), strict=True))
    return commits


def _forecast_repo(repo: _Repo, works: list[_Work], scope: Scope
                   ) -> tuple[list[WorktreeCollisions], list[CollisionPair]]:
    works = sorted(works, key=lambda w: w.name)
    if repo.error:
        works = [w if w.error else w._replace(error=repo.error) for w in works]
    works = _with_paths(repo.git, works)
    shown = [i for i, w in enumerate(works) if scope.name in (None, w.name)
             and (w.error is not None or scope.wants_paths(w.paths))]
    plan = _plan_target(repo, works, [i for i in shown if works[i].error is None])
    errors = {i: w.error for i, w in enumerate(works) if w.error} | plan.errors
    pairs = {
        pair: overlap
        for pair, overlap in _overlaps({i: w.paths for i, w in enumerate(works)
                                        if i not in errors}).items()
        if scope.name in (None, works[pair[0]].name, works[pair[1]].name)
        and scope.wants_paths(tuple(overlap))
    }
    to_merge = sorted(i for i, known in plan.target_merges.items() if known is None)
    commits = _work_commits(repo, works, {*to_merge, *(k for pair in pairs for k in pair)})
    tip = repo.target.commit if repo.target and repo.target.commit else ""
    merges = [(commits[i], tip) for i in to_merge] + [(commits[i], commits[j]) for i, j in pairs]
    unique = list(dict.fromkeys(merges))
    outcomes = dict(zip(unique, g.merge_many(repo.git, unique), strict=True)) if unique else {}
    target_conflicts = {i: known for i, known in plan.target_merges.items() if known is not None}
    for i in to_merge:
        outcome = outcomes[(commits[i], tip)]
        if isinstance(outcome, str):
            assert repo.target is not None
            errors[i] = f"it cannot be merged into {repo.target.branch}: {outcome}"
        else:
            target_conflicts[i] = tuple(sorted(outcome.conflicts))
    target = repo.target.branch if repo.target else None
    rows = [
        WorktreeCollisions(works[i].name, works[i].entry.claim.bucket, works[i].branch, target,
                           None, None, errors[i]) if i in errors else
        WorktreeCollisions(works[i].name, works[i].entry.claim.bucket, works[i].branch, target,
                           len(works[i].paths), target_conflicts[i])
        for i in shown
    ]
    found = []
    for (i, j), overlap in sorted(pairs.items()):
        if i in errors or j in errors:
            continue  # left out of every pair, like a worktree that could not be read
        conflicts = pair_conflicts(overlap, outcomes[(commits[i], commits[j])])
        found.append(CollisionPair(works[i].entry.claim.bucket, works[i].name, works[j].name,
                                   tuple(overlap), conflicts))
    return rows, found


# -- the whole forecast -------------------------------------------------------------------------

def conflicts(here: Here, name: str | None, all_repos: bool, path: str | None
              ) -> ConflictsResult:
    """`vwt conflicts`: its arguments checked (NAME a ready worktree of this repository;
    an absolute PATH inside the checkout it runs in), then the forecast."""
    if name is not None and all_repos:
        raise VwtError("NAME and --all do not go together; NAME is in this repository", 2)
    buckets = here.buckets(all_repos)
    if name is not None:
        require_ready(here.repo.claim(name), "only a ready worktree has work to compare")
    where = None
    if path is not None:
        repo = here.repo_or_none() if os.path.isabs(path) else None
        where = normalise_path(path, repo.info.toplevel if repo else None)
    return forecast(here.root, buckets, Scope(name, where))


def forecast(root: Root, buckets: list[str], scope: Scope) -> ConflictsResult:
    """Read every ready worktree of `buckets`, then forecast each repository's collisions."""
    import tempfile

    found = [e for e in entries(root, buckets, with_recovery=False) if e.state == READY]
    checkouts: dict[int, Checkout] = {}
    works: dict[int, _Work] = {}
    cache: dict[str, tuple[str, ...]] = {}
    from ..lifecycle.worktrees import validate_checkout

    for i, entry in enumerate(found):
        try:
            checkouts[i] = validate_checkout(entry.claim)
        except VwtError as exc:
            works[i] = _failed(entry, None, exc.message)
    firsts: dict[str, Checkout] = {}
    for checkout in checkouts.values():
        firsts.setdefault(checkout.common_dir, checkout)

    def prepare(checkout: Checkout) -> _Repo:
        filter_drivers(checkout, cache)  # one config read per repository, shared below
        return _open_repo(checkout.common_dir)

    repos = dict(zip(firsts, g.map_parallel(prepare, list(firsts.values())), strict=True))
    with tempfile.TemporaryDirectory(prefix="vwt-conflicts-") as folder:
        order = sorted(checkouts)
        read = g.map_parallel(lambda i: _read_work(found[i], checkouts[i], cache, folder), order)
        works.update(zip(order, read, strict=True))
    _forget_gone(root, buckets, found)
    by_repo: dict[str, list[_Work]] = {}
    rows: list[WorktreeCollisions] = []
    for work in works.values():
        if work.common_dir is None:  # not even a checkout to tell its repository by
            if scope.name in (None, work.name):
                rows.append(WorktreeCollisions(work.name, work.entry.claim.bucket,
                                               work.branch, None, None, None, work.error))
            continue
        by_repo.setdefault(work.common_dir, []).append(work)
    pairs: list[CollisionPair] = []
    for common_dir, repo_works in by_repo.items():
        repo_rows, repo_pairs = _forecast_repo(repos[common_dir], repo_works, scope)
        rows += repo_rows
        pairs += repo_pairs
    rows.sort(key=lambda r: (r.bucket, r.name))
    pairs.sort(key=lambda p: (p.bucket, p.a, p.b))
    return ConflictsResult(tuple(rows), tuple(pairs))


def _forget_gone(root: Root, buckets: list[str], found: list[Entry]) -> None:
    """Drop the kept index copies of the worktrees of `buckets` that are no longer ready."""
    from ..core import index_cache

    for bucket in buckets:
        index_cache.forget_others(root.home, bucket,
                                  {e.name for e in found if e.claim.bucket == bucket})


def describe(result: ConflictsResult, qualify: bool = False) -> list[str]:
    """One readable line per collision, conflicts first; `qualify` names the repository
    too (with --all: names repeat across repositories)."""
    def who(bucket: str, name: str) -> str:
        return f"{bucket.rsplit('-', 1)[0]}/{name}" if qualify else name

    conflicts, overlaps = [], []
    for w in result.worktrees:
        if w.target_conflicts:
            conflicts.append(f"conflict  {who(w.bucket, w.name)} with {w.target}: "
                             f"{_paths(w.target_conflicts)}")
    for p in result.pairs:
        pair = f"{who(p.bucket, p.a)} and {who(p.bucket, p.b)}"
        if p.conflicts:
            rest = [x for x in p.overlap if x not in set(p.conflicts)]
            also = f" (also both change {_paths(tuple(rest))})" if rest else ""
            conflicts.append(f"conflict  {pair}: {_paths(p.conflicts)}{also}")
        else:
            overlaps.append(f"overlap   {pair}: {_paths(p.overlap)} (merges cleanly)")
    return conflicts + overlaps or ["no collisions"]


def _paths(paths: tuple[str, ...], most: int = 3) -> str:
    shown = ", ".join(paths[:most])
    return shown if len(paths) <= most else f"{shown} and {len(paths) - most} more"
