"""Is a worktree's committed work already in the target branch? (SPEC §8 Integration)

Reasons are tried cheapest first, each against T and then `<remote>/T`, and the first
that holds is reported, so the expensive ones (a merge in the object store, patch ids)
only run for work that the cheap ones could not place.
"""

from __future__ import annotations

from typing import NamedTuple

from . import git as g
from . import target as _target

SAME_COMMIT = "same_commit"
ANCESTOR = "ancestor"
SAME_TREE = "same_tree"
NO_ADDED_CHANGES = "no_added_changes"
PATCH_EQUIVALENT = "patch_equivalent"
REASONS = (SAME_COMMIT, ANCESTOR, SAME_TREE, NO_ADDED_CHANGES, PATCH_EQUIVALENT)


class Tips(NamedTuple):
    """T and `<remote>/T` of one repository with their trees, read once per listing."""

    target: _target.Target
    commits: tuple[str, ...]  # T's tip, then `<remote>/T`'s when it differs
    trees: tuple[str, ...]  # the tree of each, in the same order
    merge_drivers: tuple[str, ...]  # the repository's own, neutralised in merges

    @property
    def branch(self) -> str:
        return self.target.branch


def read_tips(git: g.Git, into: str | None = None) -> Tips | None:
    """The repository's target tips, or None when it has no target branch."""
    found = _target.resolve(git, into)
    if found is None or found.commit is None:
        return None
    commits = tuple(found.tips())
    trees = tuple(git.out("rev-parse", *(f"{c}^{{tree}}" for c in commits)).split())
    return Tips(found, commits, trees, g.repo_merge_drivers(git))


class Integration(NamedTuple):
    target: str  # T's short name
    behind: int  # commits of T not in HEAD
    integrated: str | None  # the first reason that holds, or None


def check(git: g.Git, head: str, tips: Tips) -> Integration:
    """The §8 integration of `head` against `tips` (git runs in the worktree or repo)."""
    found = cheap_check(git, head, tips)
    if isinstance(found, Integration):
        return found
    return finish_checks(git, [(head, found)], tips)[0]


def cheap_check(git: g.Git, head: str, tips: Tips,
                counts: tuple[int, int] | None = None) -> Integration | int:
    """`same_commit` and `ancestor`, one `rev-list` (plus one per distinct `<remote>/T`):
    the Integration when they decide, else `behind` for `finish_checks`. `counts`:
    (behind, own) against T already known (from `git status`), so no `rev-list` for T."""
    behind, own = counts or g.left_right_counts(git, tips.commits[0], head)
    if head in tips.commits:
        return Integration(tips.branch, behind, SAME_COMMIT)
    if own == 0 or any(g.is_ancestor(git, head, tip) for tip in tips.commits[1:]):
        return Integration(tips.branch, behind, ANCESTOR)
    return behind


def finish_checks(git: g.Git, undecided: list[tuple[str, int]], tips: Tips
                  ) -> list[Integration]:
    """The expensive reasons for many (head, behind) of one repository: one `cat-file` for
    all trees, one `merge-tree --stdin` for all merges, then `git cherry` for what is left."""
    reasons: list[str | None] = [None] * len(undecided)
    heads = [head for head, _behind in undecided]
    for i, tree in enumerate(g.trees_of(git, heads)):
        if tree in tips.trees:
            reasons[i] = SAME_TREE
    left = [i for i, reason in enumerate(reasons) if reason is None]
    merging = git._replace(neutralised_merge_drivers=tips.merge_drivers)
    pairs = [(tip, heads[i]) for i in left for tip in tips.commits]
    merged = iter(g.merge_trees(merging, pairs))
    for i in left:
        for tree in tips.trees:
            if next(merged).tree == tree and reasons[i] is None:
                reasons[i] = NO_ADDED_CHANGES
    left = [i for i, reason in enumerate(reasons) if reason is None]
    found = g.map_parallel(lambda i: _patch_equivalent(git, heads[i], undecided[i][1], tips),
                           left)
    for i, equivalent in zip(left, found, strict=True):
        reasons[i] = PATCH_EQUIVALENT if equivalent else None
    return [Integration(tips.branch, behind, reason)
            for (_head, behind), reason in zip(undecided, reasons, strict=True)]


def _patch_equivalent(git: g.Git, head: str, behind: int, tips: Tips) -> bool:
    for i, tip in enumerate(tips.commits):
        if i == 0 and behind == 0:
            continue  # T has nothing HEAD lacks: no commit of T can be equivalent
        if g.cherry_all_equivalent(git, tip, head):
            return True
    return False


def integrated(git: g.Git, head: str, into: str | None = None) -> str | None:
    """The reason `head` is integrated into the repository's target, or None."""
    tips = read_tips(git, into)
    return None if tips is None else check(git, head, tips).integrated
