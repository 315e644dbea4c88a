"""`vwt foreign`: the git worktrees other tools made (Claude Code, Codex, Cursor, plain
`git worktree add`), with the cleanup inspection; it changes nothing.

A repository's worktrees are those `git worktree list` names, less the main working tree,
those inside the managed root (ours, Vibe's, the pool's) and those whose folder is gone
(git calls them prunable; `git worktree prune` is their cleanup). Every git call is
housekeeping: no hook, fsmonitor or filter command of the repository runs.
"""

from __future__ import annotations

import os

from ..core import git as g
from ..core.errors import VwtError
from ..core.integration import Integration, Tips, cheap_check, finish_checks, read_tips
from ..core.layout import Root, bucket_name
from ..core.light import NamedTuple
from ..core.proctable import processes_inside
from .adoption import linked_checkout
from .worktrees import Checkout, Here, housekeeping_git, load_entry

CLAUDE_CODE = "claude-code"
CODEX = "codex"
CURSOR = "cursor"
GIT = "git"


class Foreign(NamedTuple):
    """One worktree another tool made; the inspection fields are None when git failed."""

    path: str
    repo_root: str
    branch: str | None  # None when detached
    head: str | None
    made_by: str
    locked: bool
    in_use: bool
    changes: int | None = None
    untracked: int | None = None
    ahead: int | None = None  # commits not in the target branch; None without one
    integrated: str | None = None
    problem: str | None = None

    def to_json(self) -> dict[str, object]:
        return dict(path=self.path, repo_root=self.repo_root, branch=self.branch,
                    head=self.head, made_by=self.made_by, locked=self.locked,
                    in_use=self.in_use, changes=self.changes, untracked=self.untracked,
                    ahead=self.ahead, integrated=self.integrated)


class Candidate(NamedTuple):
    """A worktree of `git worktree list` that is not managed, before inspection."""

    path: str
    repo: g.RepoInfo
    checkout: Checkout
    locked: bool


def made_by(path: str, home: str | None = None) -> str:
    """Which tool makes worktrees where `path` is: by the folders each one uses."""
    home = home or os.path.expanduser("~")
    if "/.claude/worktrees/" in f"{path}/":
        return CLAUDE_CODE
    codex_homes = [os.environ.get("CODEX_HOME") or "", f"{home}/.codex"]
    for folder, tool in [*((c, CODEX) for c in codex_homes if c), (f"{home}/.cursor", CURSOR)]:
        prefix = os.path.realpath(f"{folder}/worktrees")
        if path.startswith(prefix + "/"):
            return tool
    return GIT


def repos_with_buckets(root: Root) -> list[g.RepoInfo]:
    """Every repository a bucket belongs to, found through a record of the bucket."""
    found: dict[str, g.RepoInfo] = {}
    for bucket in root.buckets():
        for claim in root.claims_in(bucket):
            entry = load_entry(claim)
            source = entry and (entry.record or entry.recovery)
            if source is None or not os.path.isdir(source.repo_root):
                continue
            try:
                info = g.discover(source.repo_root)
            except VwtError:
                continue
            if bucket_name(info.repo_root, info.common_dir) == bucket:
                found.setdefault(info.common_dir, info)
                break
    return list(found.values())


def candidates(root: Root, repo: g.RepoInfo) -> list[Candidate]:
    """The repository's worktrees that are not managed, the main working tree excepted."""
    found = []
    for i, entry in enumerate(g.worktree_list(g.Git(repo.repo_root))):
        path = os.path.realpath(entry.get("worktree", ""))
        if i == 0 or "bare" in entry or "prunable" in entry or not entry.get("worktree"):
            continue
        if path == root.path or path.startswith(root.path + "/"):
            continue  # the managed root: ours, Vibe's, the pool's (doctor looks after them)
        checkout = linked_checkout(path)
        if checkout is None or checkout.common_dir != repo.common_dir:
            continue
        found.append(Candidate(path, repo, checkout, "locked" in entry))
    return found


def foreign_of(here: Here, all_repos: bool) -> list[Foreign]:
    """The foreign worktrees of this repository; with `all_repos`, of every repository that
    has a bucket, and of this one when it has none yet."""
    if not all_repos:
        return list_foreign(here.root, [here.repo.info])
    repos = {info.common_dir: info for info in repos_with_buckets(here.root)}
    current = here.repo_or_none()
    if current is not None:
        repos.setdefault(current.info.common_dir, current.info)
    return list_foreign(here.root, list(repos.values()))


def list_foreign(root: Root, repos: list[g.RepoInfo]) -> list[Foreign]:
    """Every foreign worktree of `repos`, inspected, sorted by path."""
    found = [c for repo in repos for c in candidates(root, repo)]
    in_use = processes_inside([c.path for c in found])
    cache: dict[str, tuple[str, ...]] = {}
    tips = {}
    for repo in repos:
        try:
            tips[repo.common_dir] = read_tips(g.Git(repo.common_dir))
        except VwtError:
            tips[repo.common_dir] = None
    rows = g.map_parallel(
        lambda c: _inspect(c, bool(in_use[c.path]), cache, tips[c.repo.common_dir]), found)
    _finish_integration(rows, found, tips, cache)
    return sorted((row for row, _head in rows), key=lambda r: r.path)


def _inspect(candidate: Candidate, in_use: bool, cache: dict[str, tuple[str, ...]],
             tips: Tips | None) -> tuple[Foreign, Integration | int | None]:
    """The row with `git status` and the cheap integration checks; the second item is the
    check's verdict, or `behind` when the expensive checks are still to run."""
    checkout = candidate.checkout
    row = Foreign(candidate.path, candidate.repo.repo_root, checkout.branch, None,
                  made_by(candidate.path), candidate.locked, in_use)
    try:
        git = housekeeping_git(checkout, cache)
        upstream = (checkout.branch, tips.target.ref) if tips and checkout.branch else None
        st = g.status(git, upstream)
        row = row._replace(head=st.head, branch=st.branch, changes=st.changes,
                           untracked=st.untracked)
        if tips is None or st.head is None:
            return row, None
        counts = st.ahead_behind if tips.target.commit == tips.commits[0] else None
        counts = counts or g.left_right_counts(git, tips.commits[0], st.head)
        landed = cheap_check(git, st.head, tips, counts)
    except VwtError as exc:
        return row._replace(problem=exc.message), None
    row = row._replace(ahead=counts[1])
    if isinstance(landed, Integration):
        return row._replace(integrated=landed.integrated), landed
    return row, landed


def _behind(landed: Integration | int | None) -> int:
    return landed if isinstance(landed, int) else 0


def _finish_integration(rows: list[tuple[Foreign, Integration | int | None]],
                        found: list[Candidate], tips: dict[str, Tips | None],
                        cache: dict[str, tuple[str, ...]]) -> None:
    """The expensive checks (same tree, merge, patch ids), batched per repository."""
    undecided: dict[str, list[int]] = {}
    for i, (_row, landed) in enumerate(rows):
        if isinstance(landed, int):
            undecided.setdefault(found[i].repo.common_dir, []).append(i)
    for common_dir, indexes in undecided.items():
        repo_tips = tips[common_dir]
        assert repo_tips is not None
        git = g.Git(common_dir, neutralised_filters=cache.get(common_dir, ()))
        pending = [(rows[i][0].head or "", _behind(rows[i][1])) for i in indexes]
        try:
            verdicts = finish_checks(git, pending, repo_tips)
        except VwtError as exc:
            for i in indexes:
                rows[i] = (rows[i][0]._replace(problem=exc.message), None)
            continue
        for i, landed in zip(indexes, verdicts, strict=True):
            rows[i] = (rows[i][0]._replace(integrated=landed.integrated), landed)
